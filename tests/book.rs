//! The documentation cannot drift from the code or break its own links: the book's
//! configuration reference names every setting and every environment variable the code reads;
//! every chapter is in SUMMARY.md and every SUMMARY entry is a chapter; every relative link in
//! the book and the README reaches a file, and its `#anchor` a heading there. (`.ci/run` also
//! builds the book with mdBook.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The chapters of the book (every `.md` in book/src).
fn chapters() -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root().join("book/src"))
        .expect("book/src")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    found.sort();
    found
}

/// Lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// A heading's anchor as mdBook (and GitHub) make it: lower case, punctuation dropped, spaces
/// as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter_map(|line| {
            let hashes = line.chars().take_while(|c| *c == '#').count();
            (1..=6).contains(&hashes).then(|| line[hashes..].strip_prefix(' ')).flatten().map(slug)
        })
        .collect()
}

/// The `](target)` links of a Markdown text outside code, that are not URLs.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") && !target.contains(' ') {
                links.push(target.to_string());
            }
            rest = &rest[end..];
        }
    }
    links
}

/// Every relative link of `file` reaches a file, and its anchor a heading there.
fn check_links(file: &Path, broken: &mut Vec<String>) {
    let text = read(file);
    for link in relative_links(&text) {
        let (path, anchor) = link.split_once('#').map_or((link.as_str(), None), |(p, a)| (p, Some(a)));
        let target = if path.is_empty() { file.to_path_buf() } else { file.parent().expect("a folder").join(path) };
        if !target.exists() {
            broken.push(format!("{}: {link}: no such file", file.display()));
            continue;
        }
        if let Some(anchor) = anchor
            && target.extension().is_some_and(|x| x == "md")
            && !anchors(&read(&target)).contains(anchor)
        {
            broken.push(format!("{}: {link}: no heading with that anchor", file.display()));
        }
    }
}

#[test]
fn every_relative_link_reaches_its_file_and_heading() {
    let mut broken = Vec::new();
    for chapter in chapters() {
        check_links(&chapter, &mut broken);
    }
    for file in ["README.md", "ARCHITECTURE.md"] {
        check_links(&root().join(file), &mut broken);
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_summary_lists_every_chapter_once() {
    let summary = read(&root().join("book/src/SUMMARY.md"));
    let listed: Vec<String> = relative_links(&summary);
    let unique: BTreeSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), listed.len(), "a chapter listed twice: {listed:?}");
    let files: BTreeSet<String> = chapters()
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n != "SUMMARY.md")
        .collect();
    let listed: BTreeSet<String> = listed.into_iter().collect();
    assert_eq!(files, listed, "book/src and SUMMARY.md disagree");
}

/// The configuration reference documents every setting the code has (by its key, as
/// `` `llm.model` ``, or its section, as `` `[budget.prices.NAME]` `` for a table of entries)
/// and every environment variable it reads.
#[test]
fn the_configuration_reference_names_every_setting_and_variable() {
    let reference = read(&root().join("book/src/configuration.md"));
    let missing_keys: Vec<&str> =
        docs_agent::config::keys().into_iter().filter(|key| !reference.contains(&format!("`{key}`"))).collect();
    assert!(missing_keys.is_empty(), "settings missing from book/src/configuration.md: {missing_keys:?}");
    let missing_vars: Vec<&str> = docs_agent::config::ENV_KEYS
        .iter()
        .map(|(var, _)| *var)
        .filter(|var| !reference.contains(&format!("`{var}`")))
        .collect();
    assert!(missing_vars.is_empty(), "variables missing from book/src/configuration.md: {missing_vars:?}");
}

/// The README stays a two-minute read; the rest is the book's.
#[test]
fn the_readme_is_short() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(lines <= 150, "README.md has {lines} lines; move the detail to a chapter of book/src");
}

/// The link checker itself: anchors as mdBook makes them, and links in code left alone.
#[test]
fn anchors_and_links_are_read_as_mdbook_does() {
    assert_eq!(
        slug("What to expect: answer quality, speed and which model"),
        "what-to-expect-answer-quality-speed-and-which-model"
    );
    assert_eq!(slug("Sessions on PostgreSQL"), "sessions-on-postgresql");
    let text = "# A `code` title\n[a](b.md#c) and [d](https://e.f)\n```\n[g](h.md)\n```\n";
    assert_eq!(relative_links(text), ["b.md#c"]);
    assert!(anchors(text).contains("a-code-title"));
}
