//! Citations link to the live docs (`[site]`): for every heading of a docs folder written here,
//! the URL docs-agent gives is a page the real generator built, and the fragment an id on it.
//! mdBook and MkDocs build the site in the test (`.ci/run` installs both; elsewhere a missing
//! one skips its test and says how to install it). Docusaurus needs a Node project of its own:
//! its page paths are the unit tests' (`site::page`), its anchors are the index's.

mod common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use docs_agent::config::{Config, Sources};
use docs_agent::index::chunk::site_outline;
use docs_agent::site::Site;
use docs_agent::workspace::Workspace;

/// Where the test's site is published.
const BASE: &str = "http://site.test/help/";

/// Headings that tell the generators' ids apart: repeats, punctuation, accents, code, a
/// custom id, a double hyphen (an en dash to mdBook), a setext heading over two lines, an
/// image and a link in a heading, inline HTML, and a heading named as another's repeat.
const REFUNDS: &str = "# Refunds\n\nIntro.\n\n## Window\n\n14 days.\n\n## Window\n\nAgain.\n\n\
    ## A -- B  c\n\nx\n\n## Ärger Über `code` spans\n\nx\n\n## Custom {#custom-id}\n\nx\n\n\
    ## Q&A: what's new?\n\nx\n\n## Window_1\n\nx\n\nTwo\nlines\n---\n\nx\n\n\
    ## Pay ![card](card.png) by [card](cards.md) *now*\n\nx\n\n### Window\n\nthird\n\n\
    ## Save <kbd>Ctrl</kbd>+<kbd>S</kbd>\n\nx\n";

/// The docs folder: pages at the top, in a folder, a folder's index, a name with a space.
const DOCS: &[(&str, &str)] = &[
    ("README.md", "# Acme Billing\n\nWelcome.\n\n## Getting started\n\nSign in.\n"),
    ("guides/refunds.md", REFUNDS),
    ("guides/index.md", "# Guides\n\nAll guides.\n\n## Window\n\nOne.\n"),
    ("faq page.md", "# FAQ\n\n## What's new?\n\nAll.\n"),
];

/// Writes `DOCS` (and `extra`) under `root/docs`.
fn write_docs(root: &Path, extra: &[(&str, &str)]) {
    for (path, text) in DOCS.iter().chain(extra) {
        let file = root.join("docs").join(path);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }
}

/// The site of the workspace at `root`, as `generator` builds it at [`BASE`].
fn site(root: &Path, generator: &str) -> (Site, Workspace) {
    let env = HashMap::from([
        ("WORKSPACE".to_string(), root.display().to_string()),
        ("DOCS_AGENT_STATE_DIR".to_string(), root.join(".state").display().to_string()),
        ("DOCS_AGENT_SITE_URL".to_string(), BASE.to_string()),
        ("DOCS_AGENT_SITE_GENERATOR".to_string(), generator.to_string()),
    ]);
    let config = Config::load_isolated(&Sources { env, ..Sources::default() }).expect("config");
    docs_agent::site::check_config(&config).expect("site config");
    let site = Site::of(&config).expect("site").expect("a base URL");
    (site, Workspace::of(&config).expect("workspace"))
}

/// `%XX` escapes decoded (UTF-8).
fn decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("UTF-8")
}

/// Every `id="..."` on an HTML page.
fn ids(html: &str) -> HashSet<String> {
    let pattern = regex::Regex::new(r#"\bid="([^"]*)""#).expect("regex");
    pattern.captures_iter(html).map(|c| c[1].replace("&amp;", "&").replace("&quot;", "\"")).collect()
}

/// For every section of every page in `DOCS` (its top too), the URL the site gives is a page
/// in `built` (the generator's output), and its fragment an id on that page; the anchors in
/// `not_headings` (what the generator does not read as a heading) link to the page alone.
/// Returns how many URLs were checked.
fn every_citation_lands(site: &Site, workspace: &Workspace, built: &Path, not_headings: &[&str]) -> usize {
    let mut checked = 0;
    let mut missing = Vec::new();
    for (path, text) in DOCS {
        let cited = format!("docs/{path}");
        let anchors = std::iter::once(String::new()).chain(site_outline(text).headings.into_iter().map(|h| h.anchor));
        for anchor in anchors {
            let url = site.url(workspace, &cited, &anchor).unwrap_or_else(|| panic!("no URL for {cited}#{anchor}"));
            let rest = url.strip_prefix(BASE).unwrap_or_else(|| panic!("{url} is not under {BASE}"));
            let (page, fragment) = rest.split_once('#').unwrap_or((rest, ""));
            let mut file: PathBuf = built.join(decoded(page));
            if page.is_empty() || page.ends_with('/') {
                file = file.join("index.html");
            }
            let html = match std::fs::read_to_string(&file) {
                Ok(html) => html,
                Err(e) => {
                    missing.push(format!("{cited}#{anchor} -> {url}: no page {} ({e})", file.display()));
                    continue;
                }
            };
            let fragment = decoded(fragment);
            let page_alone = anchor.is_empty() || not_headings.contains(&anchor.as_str());
            if page_alone != fragment.is_empty() || !(fragment.is_empty() || ids(&html).contains(&fragment)) {
                missing.push(format!("{cited}#{anchor} -> {url}: no id {fragment:?} on the page"));
            }
            checked += 1;
        }
    }
    assert!(missing.is_empty(), "citations that do not land:\n{}", missing.join("\n"));
    checked
}

/// Runs `command`, failing with its output when it fails.
fn run(mut command: Command) {
    let output = command.output().expect("run the generator");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn every_citation_lands_on_a_heading_of_the_book_mdbook_builds() {
    if !common::available("mdBook", common::runs("mdbook", "--version"), "cargo install mdbook --version 0.5.4") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let summary = "# Summary\n\n[Acme Billing](README.md)\n- [Refunds](guides/refunds.md)\n- [Guides](guides/index.md)\n- [FAQ](<faq page.md>)\n";
    write_docs(tmp.path(), &[("SUMMARY.md", summary)]);
    std::fs::write(tmp.path().join("book.toml"), "[book]\ntitle = \"Acme\"\nsrc = \"docs\"\n").expect("book.toml");
    let built = tmp.path().join("out");
    let mut command = Command::new("mdbook");
    command.arg("build").arg(tmp.path()).arg("--dest-dir").arg(&built);
    run(command);
    let (site, workspace) = site(tmp.path(), "mdbook");
    assert_eq!(every_citation_lands(&site, &workspace, &built, &[]), 22);
}

#[test]
fn every_citation_lands_on_a_heading_of_the_site_mkdocs_builds() {
    let mkdocs = std::env::var("DOCS_AGENT_TEST_MKDOCS").unwrap_or_else(|_| "mkdocs".to_string());
    if !common::available(
        "MkDocs",
        common::runs(&mkdocs, "--version"),
        "pip install mkdocs==1.6.1, or DOCS_AGENT_TEST_MKDOCS=/path/to/mkdocs",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    write_docs(tmp.path(), &[]);
    let built = tmp.path().join("out");
    // attr_list reads a heading's {#id}, as Material for MkDocs setups have it.
    let yml = format!(
        "site_name: Acme\ndocs_dir: docs\nsite_dir: {}\nmarkdown_extensions:\n  - attr_list\n  - toc\n",
        built.display()
    );
    std::fs::write(tmp.path().join("mkdocs.yml"), yml).expect("mkdocs.yml");
    let mut command = Command::new(&mkdocs);
    command.arg("build").arg("--quiet").arg("--config-file").arg(tmp.path().join("mkdocs.yml"));
    run(command);
    let (site, workspace) = site(tmp.path(), "mkdocs");
    // Python-Markdown reads a setext heading over two lines as a paragraph and a rule.
    assert_eq!(every_citation_lands(&site, &workspace, &built, &["two-lines"]), 22);
}

/// The command line's `Sources:` puts each citation's page on the docs site under it, to paste
/// into a ticket; without `[site]` there is none.
#[test]
fn the_command_lines_sources_give_the_docs_page() {
    let ws = common::sample_workspace();
    let site = [
        ("LLM_MODEL", "extractive"),
        ("DOCS_AGENT_SITE_URL", "https://docs.acme.test/"),
        ("DOCS_AGENT_SITE_GENERATOR", "mdbook"),
    ];
    let out = common::run(ws.path(), &site, &["how long is the refund window"]);
    assert_eq!(out.code, 0, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    let sources = out.stdout.split("Sources:").nth(1).unwrap_or_else(|| panic!("no sources: {}", out.stdout));
    assert!(sources.contains("docs/refunds.md#window"), "{}", out.stdout);
    assert!(sources.contains("\n  https://docs.acme.test/refunds.html#window"), "{}", out.stdout);
    let plain = common::run(ws.path(), &[("LLM_MODEL", "extractive")], &["how long is the refund window"]);
    assert!(plain.stdout.contains("docs/refunds.md#window") && !plain.stdout.contains("https://"), "{}", plain.stdout);
    // A base URL that is not one stops the command, naming the setting.
    let bad = common::run(ws.path(), &[("DOCS_AGENT_SITE_URL", "docs.acme.test")], &["how long is the refund window"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(bad.stderr.contains("site.base_url (DOCS_AGENT_SITE_URL)"), "{}", bad.stderr);
}

/// An MCP client's `ask` gets each citation's page on the docs site, in the structured result
/// and in the text's `Sources:`.
#[test]
fn an_mcp_answer_gives_the_docs_page_of_each_citation() {
    let ws = common::sample_workspace();
    let site = [
        ("LLM_MODEL", "extractive"),
        ("DOCS_AGENT_SITE_URL", "https://docs.acme.test/docs/"),
        ("DOCS_AGENT_SITE_GENERATOR", "docusaurus"),
    ];
    let mut mcp = common::mcp::McpChild::start(ws.path(), &site);
    let asked = mcp.call("ask", serde_json::json!({"question": "How long is the refund window?"}));
    let page = "https://docs.acme.test/docs/refunds#window";
    let citations = asked["structuredContent"]["citations"].as_array().cloned().unwrap_or_default();
    assert!(citations.iter().any(|c| c["anchor"] == "window" && c["url"] == page), "{asked}");
    assert!(
        common::mcp::text(&asked).contains(&format!("[docs/refunds.md#window] (Refunds > Window), verified: {page}")),
        "{asked}"
    );
}
