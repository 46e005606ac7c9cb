//! A site's URLs for documents written to a temporary workspace, and the base URLs it refuses.

use std::collections::HashMap;

use super::*;
use crate::config::Sources;

/// The configuration of a workspace at `root` with `[site]` from the environment.
fn config(root: &std::path::Path, base_url: &str, generator: &str) -> Result<Config, ConfigError> {
    let env = HashMap::from([
        ("WORKSPACE".to_string(), root.display().to_string()),
        ("DOCS_AGENT_STATE_DIR".to_string(), root.join(".state").display().to_string()),
        ("DOCS_AGENT_SITE_URL".to_string(), base_url.to_string()),
        ("DOCS_AGENT_SITE_GENERATOR".to_string(), generator.to_string()),
    ]);
    let config = Config::load_isolated(&Sources { env, ..Sources::default() })?;
    check_config(&config)?;
    Ok(config)
}

/// A workspace whose docs hold `files`.
fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tmp");
    for (path, text) in files {
        let file = tmp.path().join("docs").join(path);
        std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
        std::fs::write(file, text).expect("write");
    }
    tmp
}

/// The URL of each `(path, anchor)` under `generator` at `base_url`.
fn urls(tmp: &tempfile::TempDir, base_url: &str, generator: &str, cited: &[(&str, &str)]) -> Vec<Option<String>> {
    let config = config(tmp.path(), base_url, generator).expect("config");
    let site = Site::of(&config).expect("site").expect("a base URL");
    let workspace = Workspace::of(&config).expect("workspace");
    cited.iter().map(|(path, anchor)| site.url(&workspace, path, anchor)).collect()
}

const REFUNDS: &str = "# Refunds\n\nIntro.\n\n## Window\n\n14 days.\n\n## Window\n\nAgain.\n";

#[test]
fn a_citation_becomes_the_page_and_heading_each_generator_makes() {
    let tmp = workspace(&[
        ("guides/refunds.md", REFUNDS),
        (
            "guides/01-cards.mdx",
            "---\nslug: /pay-by-card\n---\n\nimport X from './x';\n\n# Cards\n\n<X>\n\n## Fees\n\n</X>\n",
        ),
        ("index.md", "# Home\n\nHello.\n"),
        ("faq page.md", "# Q&A: what's new?\n\nNew.\n"),
    ]);
    let cited = [
        ("docs/guides/refunds.md", "window-1"),
        ("docs/guides/refunds.md", ""),
        ("docs/guides/01-cards.mdx", "fees"),
        ("docs/index.md", "home"),
        ("docs/faq page.md", "qa-whats-new"),
    ];
    let base = "https://docs.acme.test/help";
    let want: [(&str, [&str; 5]); 4] = [
        (
            "files",
            [
                "https://docs.acme.test/help/guides/refunds.md#window-1",
                "https://docs.acme.test/help/guides/refunds.md",
                "https://docs.acme.test/help/guides/01-cards.mdx#fees",
                "https://docs.acme.test/help/index.md#home",
                "https://docs.acme.test/help/faq%20page.md#qa-whats-new",
            ],
        ),
        (
            "mkdocs",
            [
                "https://docs.acme.test/help/guides/refunds/#window_1",
                "https://docs.acme.test/help/guides/refunds/",
                "https://docs.acme.test/help/guides/01-cards.mdx#fees",
                "https://docs.acme.test/help/#home",
                "https://docs.acme.test/help/faq%20page/#qa-whats-new",
            ],
        ),
        (
            "mdbook",
            [
                "https://docs.acme.test/help/guides/refunds.html#window-1",
                "https://docs.acme.test/help/guides/refunds.html",
                "https://docs.acme.test/help/guides/01-cards.mdx#fees",
                "https://docs.acme.test/help/index.html#home",
                "https://docs.acme.test/help/faq%20page.html#qa-whats-new",
            ],
        ),
        (
            "docusaurus",
            [
                "https://docs.acme.test/help/guides/refunds#window-1",
                "https://docs.acme.test/help/guides/refunds",
                "https://docs.acme.test/help/pay-by-card#fees",
                "https://docs.acme.test/help/#home",
                "https://docs.acme.test/help/faq%20page#qa-whats-new",
            ],
        ),
    ];
    for (generator, want) in want {
        let got = urls(&tmp, base, generator, &cited);
        let want: Vec<Option<String>> = want.iter().map(|u| Some(u.to_string())).collect();
        assert_eq!(got, want, "{generator}");
    }
}

#[test]
fn a_heading_that_is_gone_leaves_the_page_and_no_page_leaves_nothing() {
    let tmp = workspace(&[("refunds.md", REFUNDS), ("_partial.md", "# Part\n\nx\n")]);
    let cited = [
        ("docs/refunds.md", "no-such-heading"),
        ("docs/missing.md", "window"),
        ("notes/a.md", ""),
        ("docs/_partial.md", "part"),
    ];
    assert_eq!(
        urls(&tmp, "https://docs.acme.test", "mkdocs", &cited),
        [
            Some("https://docs.acme.test/refunds/".into()),
            Some("https://docs.acme.test/missing/".into()),
            None,
            Some("https://docs.acme.test/_partial/#part".into()),
        ]
    );
    // Docusaurus makes no page of a partial; a file it cannot read keeps the index's anchor.
    assert_eq!(
        urls(&tmp, "https://docs.acme.test/docs/", "docusaurus", &cited),
        [
            Some("https://docs.acme.test/docs/refunds".into()),
            Some("https://docs.acme.test/docs/missing#window".into()),
            None,
            None,
        ]
    );
}

#[test]
fn a_base_url_that_cannot_be_one_is_refused_by_name() {
    let tmp = workspace(&[("refunds.md", REFUNDS)]);
    for (base, says) in [
        ("docs.acme.test", "is not a URL"),
        ("ftp://docs.acme.test/", "http:// or https://"),
        ("https://docs.acme.test/?v=1", "no query"),
        ("https://docs.acme.test/#top", "no query, fragment"),
        ("https://ana:pw@docs.acme.test/", "user name"),
    ] {
        let error = config(tmp.path(), base, "files").expect_err(base).to_string();
        assert!(error.contains("site.base_url (DOCS_AGENT_SITE_URL)") && error.contains(says), "{base}: {error}");
    }
    let error = config(tmp.path(), "https://docs.acme.test/", "hugo").expect_err("hugo").to_string();
    assert!(error.contains("site.generator (DOCS_AGENT_SITE_GENERATOR) must be `files` or `mkdocs`"), "{error}");
    let off = config(tmp.path(), "", "files").expect("empty is off");
    assert!(Site::of(&off).expect("site").is_none());
}

#[test]
fn a_hidden_document_and_an_unverified_citation_get_no_link() {
    let tmp = workspace(&[("refunds.md", REFUNDS), ("internal/plan.md", "# Plan\n\n## Acquisition\n\nx\n")]);
    let config = config(tmp.path(), "https://docs.acme.test/", "mkdocs").expect("config");
    let site = Site::of(&config).expect("site").expect("a base URL");
    let workspace = Workspace::of(&config).expect("workspace");
    let docs = workspace.docs().expect("docs/").try_clone().expect("a handle");
    let hidden = crate::workspace::hidden::Hidden::new(&docs, |path| path.starts_with("docs/internal/"));
    let workspace = workspace.hiding(hidden);
    assert_eq!(site.url(&workspace, "docs/internal/plan.md", "acquisition"), None);
    assert_eq!(
        site.url(&workspace, "docs/refunds.md", "window"),
        Some("https://docs.acme.test/refunds/#window".into())
    );
    // Only what the turn retrieved is linked: a citation the model made up gets no URL.
    use crate::session::verify::{Citation, linked};
    let cited = |path: &str, verified| Citation {
        path: path.into(),
        anchor: "window".into(),
        heading: String::new(),
        verified,
        url: None,
        stale: false,
    };
    let got = linked(vec![cited("docs/refunds.md", true), cited("docs/refunds.md", false)], Some((&site, &workspace)));
    let urls: Vec<Option<String>> = got.into_iter().map(|c| c.url).collect();
    assert_eq!(urls, [Some("https://docs.acme.test/refunds/#window".to_string()), None]);
}

/// A PDF is published as it is, under every generator, and its page anchor is the one a
/// browser's PDF viewer opens.
#[test]
fn a_pdf_citation_opens_its_page() {
    let tmp = workspace(&[("manuals/bluebird.pdf", "not read for its URL")]);
    for generator in ["files", "mkdocs", "mdbook", "docusaurus"] {
        let got = urls(&tmp, "https://docs.acme.test/help", generator, &[("docs/manuals/bluebird.pdf", "page=3")]);
        assert_eq!(got, [Some("https://docs.acme.test/help/manuals/bluebird.pdf#page=3".to_string())], "{generator}");
    }
}
