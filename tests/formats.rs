//! Documents other than Markdown: `.mdx`, `.txt` and `.html` are indexed, searched and cited
//! like Markdown, and `check` lists every file in docs/ the index does not read.

mod common;

use common::{run, sample_workspace};

const MDX: &str = "---\ntitle: Seats\n---\nimport { Note } from '../snippets/note'\n\n# Seats\n\n\
                   <Note>\n    Removing a seat takes effect at the **next renewal**, not at once.\n</Note>\n\n\
                   ## Prorated seats\n\n<Tip>Adding a seat mid-cycle charges a prorated zanzibar fee.</Tip>\n";
const HTML: &str = "<!doctype html>\n<html><head><title>Webhooks</title><script>var quokka = 1;</script></head>\n\
                    <body><nav>Home | quokka pricing</nav>\n<main>\n<h1>Webhooks</h1>\n<p>Events are signed.</p>\n\
                    <h2 id=\"retries\">Delivery retries</h2>\n<p>Failed deliveries are retried with a \
                    marmoset backoff for 3 days.</p>\n</main></body></html>\n";
const TEXT: &str = "Support hours\n\nThe pangolin desk answers from 9 to 5 on weekdays.\n";

fn workspace_with_formats() -> tempfile::TempDir {
    let ws = sample_workspace();
    let docs = ws.path().join("docs");
    std::fs::write(docs.join("seats.mdx"), MDX).expect("write mdx");
    std::fs::write(docs.join("webhooks.html"), HTML).expect("write html");
    std::fs::write(docs.join("hours.txt"), TEXT).expect("write txt");
    std::fs::write(docs.join("logo.png"), b"\x89PNG\r\n").expect("write png");
    ws
}

fn first_hit(ws: &std::path::Path, query: &str) -> String {
    let out = run(ws, &[], &["search", query]);
    assert_eq!(out.code, 0, "{query}: stderr {}", out.stderr);
    out.stdout.lines().next().unwrap_or_default().to_string()
}

#[test]
fn mdx_text_and_html_are_searched_by_their_sections() {
    let ws = workspace_with_formats();
    let cases = [
        ("prorated zanzibar fee", "docs/seats.mdx#prorated-seats  Seats > Prorated seats  "),
        ("seat next renewal", "docs/seats.mdx#seats  Seats  "),
        ("marmoset backoff", "docs/webhooks.html#retries  Webhooks > Delivery retries  "),
        ("pangolin desk weekdays", "docs/hours.txt  hours  "),
    ];
    for (query, want) in cases {
        let hit = first_hit(ws.path(), query);
        assert!(hit.starts_with(want), "{query}: {hit}");
    }
    // Imports, scripts and navigation are not text.
    for (query, file) in [("snippets import", "docs/seats.mdx"), ("quokka", "docs/webhooks.html")] {
        let out = run(ws.path(), &[], &["search", query]);
        assert!(!out.stdout.contains(file), "{query} found {file}: {}", out.stdout);
    }
}

#[test]
fn an_answer_citing_an_html_section_is_verified() {
    let ws = workspace_with_formats();
    let out = run(ws.path(), &[("LLM_MODEL", "scripted")], &["marmoset backoff retries"]);
    assert_eq!(out.code, 0, "stderr: {}", out.stderr);
    assert!(out.stdout.contains("docs/webhooks.html#retries"), "{}", out.stdout);
    assert!(!out.stdout.contains("[unverified citation]"), "{}", out.stdout);
}

#[test]
fn check_lists_skipped_files_and_invalid_mdx() {
    let ws = workspace_with_formats();
    let out = run(ws.path(), &[], &["check"]);
    assert_eq!(out.code, 0, "stdout: {}", out.stdout);
    assert!(
        out.stdout.contains(
            "docs/logo.png: not a type the index reads (.md, .markdown, .mdx, .txt, .html, .htm, .pdf); skipped"
        ),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("1 files skipped") && out.stdout.contains("0 problems"), "{}", out.stdout);

    std::fs::write(ws.path().join("docs/broken.mdx"), "# Broken\n\n<Note>\nnever closed\n").expect("write");
    let out = run(ws.path(), &[], &["check"]);
    assert_eq!(out.code, 1, "stdout: {}", out.stdout);
    assert!(out.stdout.contains("docs/broken.mdx: not valid MDX: "), "{}", out.stdout);
    // Still indexed, as Markdown, so nothing in it is lost.
    assert!(first_hit(ws.path(), "never closed").starts_with("docs/broken.mdx#broken"), "indexed anyway");
}
