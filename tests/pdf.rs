//! PDFs in the docs: read through their text layer, a section per page titled by the outline,
//! cited `file.pdf#page=N`; a scan or a file that is no PDF is skipped and `check` says why.
//! On PDFs made here (`docs_agent::pdf::fixtures`) and on a real manual, GNU Libtasn1's (made
//! by pdfTeX; Debian's `libtasn1-doc`, which `.ci/run` installs).

mod common;

use common::{available, run, sample_workspace};

const SCRIPTED: &[(&str, &str)] = &[("LLM_MODEL", "scripted")];

/// A manual with an outline is searched and cited by page; a scan and a broken file are
/// skipped, each with its reason.
#[test]
fn a_pdf_is_searched_and_cited_by_page() {
    let ws = sample_workspace();
    let docs = ws.path().join("docs");
    std::fs::create_dir_all(docs.join("guides")).expect("mkdir");
    std::fs::write(docs.join("guides/bluebird.pdf"), docs_agent::pdf::fixtures::manual(true)).expect("write");
    std::fs::write(docs.join("scan.pdf"), docs_agent::pdf::fixtures::scanned()).expect("write");
    std::fs::write(docs.join("broken.pdf"), b"%PDF-1.5 not really").expect("write");

    let out = run(ws.path(), &[], &["search", "proxy.url bluebird.toml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = out.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("docs/guides/bluebird.pdf#page=2  bluebird > Guide > Configuring the proxy  "),
        "{}",
        out.stdout
    );

    let out = run(ws.path(), SCRIPTED, &["what does error E42 mean"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("token expired"), "{}", out.stdout);
    assert!(out.stdout.contains("- docs/guides/bluebird.pdf#page=3 (bluebird > Troubleshooting)"), "{}", out.stdout);
    assert!(!out.stdout.contains("unverified"), "{}", out.stdout);

    let out = run(ws.path(), &[], &["check"]);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("docs/scan.pdf: no text layer (a scanned PDF?)"), "{said}");
    assert!(said.contains("docs/broken.pdf: not a PDF that can be read"), "{said}");
}

/// A real manual: its function reference is found on its page, titled by its outline, and an
/// answer cites that page.
#[test]
fn a_real_manual_is_found_on_its_page() {
    let manual = std::path::Path::new("/usr/share/doc/libtasn1-doc/libtasn1.pdf");
    if !available("the libtasn1 manual", manual.is_file(), "apt-get install libtasn1-doc") {
        return;
    }
    let ws = sample_workspace();
    std::fs::create_dir_all(ws.path().join("docs/manuals")).expect("mkdir");
    std::fs::copy(manual, ws.path().join("docs/manuals/libtasn1.pdf")).expect("copy");
    let out = run(ws.path(), &[], &["search", "asn1_der_coding DER encoding"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let hits: Vec<&str> = out.stdout.lines().collect();
    assert!(
        hits.iter()
            .take(3)
            .any(|h| h.starts_with("docs/manuals/libtasn1.pdf#page=") && h.contains("Function reference")),
        "{}",
        out.stdout
    );
    let out = run(ws.path(), SCRIPTED, &["what does asn1_der_coding do"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let cited = out.stdout.lines().find(|l| l.starts_with("- docs/manuals/libtasn1.pdf#page=")).unwrap_or_default();
    assert!(cited.contains("Function reference"), "{}", out.stdout);
    assert!(out.stdout.contains("asn1_der_coding"), "{}", out.stdout);
}

/// PDFs are read in worker processes: one whose reading aborts (as a parser's panic does in
/// the release build), loops or runs out of memory is skipped with what happened, and the
/// command goes on to read the rest. (Debug builds read these bytes as those failures.) A PDF of
/// a few kB whose text is over `index.max_file_bytes` is refused as a file over it is; one whose
/// outline loops is read without its outline, at once (issue 51, findings 5 and 6).
#[test]
fn a_pdf_that_crashes_or_hangs_its_reader_costs_only_itself() {
    let ws = sample_workspace();
    let docs = ws.path().join("docs");
    for (name, bytes) in [
        ("abort.pdf", &b"%docs-agent-test: abort"[..]),
        ("loop.pdf", b"%docs-agent-test: loop"),
        ("memory.pdf", b"%docs-agent-test: memory"),
    ] {
        std::fs::write(docs.join(name), bytes).expect("write");
    }
    std::fs::write(docs.join("bluebird.pdf"), docs_agent::pdf::fixtures::manual(true)).expect("write");
    let bomb = docs_agent::pdf::fixtures::text_bomb(512);
    assert!(bomb.len() < 16 * 1024, "{} bytes", bomb.len());
    std::fs::write(docs.join("bomb.pdf"), bomb).expect("write");
    std::fs::write(docs.join("cycle.pdf"), docs_agent::pdf::fixtures::cyclic_outline()).expect("write");
    std::fs::write(ws.path().join("docs-agent.toml"), "[index]\nmax_file_bytes = 262144\n").expect("config");
    let out = run(ws.path(), &[("DOCS_AGENT_TEST_PDF_SECONDS", "2")], &["check"]);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("docs/abort.pdf: the PDF reader gave up on it (it aborted"), "{said}");
    assert!(said.contains("docs/loop.pdf: the PDF reader took longer than 2 s on it"), "{said}");
    // Out of memory, or (on a busy machine, mapping is slow) out of time first.
    assert!(
        said.contains("docs/memory.pdf: the PDF reader gave up on it")
            || said.contains("docs/memory.pdf: the PDF reader was killed")
            || said.contains("docs/memory.pdf: the PDF reader took longer than 2 s on it"),
        "{said}"
    );
    assert!(said.contains("docs/bomb.pdf: its text is over the 262144-byte limit (index.max_file_bytes)"), "{said}");
    assert!(!said.contains("docs/cycle.pdf"), "the looping outline costs nothing: {said}");
    // (Files this fresh are read again by the next command: it too gets the short limit.)
    let out = run(ws.path(), &[("DOCS_AGENT_TEST_PDF_SECONDS", "2")], &["search", "proxy.url bluebird.toml"]);
    for page in ["docs/bluebird.pdf#page=2", "docs/cycle.pdf#page=2"] {
        assert!(out.stdout.contains(page), "the rest is read: {}", out.stdout);
    }
}
