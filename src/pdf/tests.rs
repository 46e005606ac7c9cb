use super::fixtures::{cyclic_outline, doubling_outline, manual, many_pages, scanned, shared_outline_entry, text_bomb};
use super::*;

/// The default `index.max_file_bytes`.
const LIMIT: u64 = 4 << 20;

/// A PDF's pages and outline are read; its rendition has a marker per page with the
/// outline's path at it.
#[test]
fn pages_and_outline_are_read() {
    let read = extract(&manual(true), LIMIT).expect("the manual reads");
    assert_eq!(read.pages.len(), 3);
    assert!(read.pages[1].contains("Set proxy.url in bluebird.toml."), "{:?}", read.pages);
    let outline: Vec<(usize, &str, usize)> = read.outline.iter().map(|e| (e.level, e.title.as_str(), e.page)).collect();
    assert_eq!(
        outline,
        [(1, "Guide", 1), (2, "Installing", 1), (2, "Configuring the proxy", 2), (1, "Troubleshooting", 3)]
    );
    let rendition = read.rendition();
    let markers: Vec<(usize, &str)> = rendition.lines().filter_map(marker).collect();
    assert_eq!(markers, [(1, "Guide > Installing"), (2, "Guide > Configuring the proxy"), (3, "Troubleshooting")]);
    // Without an outline: the pages alone.
    let plain = extract(&manual(false), LIMIT).expect("reads");
    assert!(plain.outline.is_empty());
    assert_eq!(plain.rendition().lines().filter_map(marker).map(|(_, p)| p).collect::<Vec<_>>(), ["", "", ""]);
}

/// A scan has no text layer; bytes that are no PDF are unreadable; neither panics.
#[test]
fn a_scan_or_garbage_is_said_so() {
    assert!(
        matches!(extract(&scanned(), LIMIT), Err(PdfError::NoText)),
        "{:?}",
        extract(&scanned(), LIMIT).map(|e| e.pages)
    );
    for bytes in [&b"not a pdf"[..], b"%PDF-1.5\n1 0 obj << /Type /Catalog", b""] {
        assert!(matches!(extract(bytes, LIMIT), Err(PdfError::Unreadable(_))), "{bytes:?}");
    }
    // A manual cut short reads as far as it goes or says it cannot: never a panic.
    let whole = manual(true);
    for cut in [whole.len() / 2, whole.len() - 30] {
        let _ = extract(&whole[..cut], LIMIT);
    }
}

/// An outline entry whose `Next` is itself is left out, and the pages are read (lopdf alone
/// followed it until the worker's time ran out). A bound on the wait turns a hang into a failure.
#[test]
fn a_looping_outline_is_left_out_and_the_pages_read() {
    let (sent, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sent.send(extract(&cyclic_outline(), LIMIT));
    });
    let read = got.recv_timeout(std::time::Duration::from_secs(60)).expect("the PDF is read, not looped on");
    let read = read.expect("the pages read");
    assert_eq!(read.pages.len(), 3);
    assert!(read.outline.is_empty(), "{:?}", read.outline);
}

/// An outline that reaches an entry twice (from two parents, or as both `First` and `Next` of
/// the entry before it, which a reader following both reads 2^n - 1 times over) is left out,
/// and the pages are read.
#[test]
fn an_outline_that_reaches_an_entry_twice_is_left_out_and_the_pages_read() {
    for (name, pdf) in [("shared", shared_outline_entry()), ("doubling", doubling_outline(12))] {
        let read = extract(&pdf, LIMIT).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(read.pages.len(), 3, "{name}");
        assert!(read.outline.is_empty(), "{name}: {} entries", read.outline.len());
    }
}

/// A PDF of a few kB whose text is over the limit is refused as a file over it is, without
/// holding more than the limit; under a larger limit it reads.
#[test]
fn text_over_the_limit_is_refused_whatever_the_file_size() {
    let bomb = text_bomb(2048);
    assert!(bomb.len() < 64 * 1024, "{} bytes on disk", bomb.len());
    assert!(matches!(extract(&bomb, 1 << 20), Err(PdfError::TooMuchText(limit)) if limit == 1 << 20));
    let read = extract(&bomb, 4 << 20).expect("under a larger limit");
    assert!(read.pages[0].len() > 2 << 20, "{}", read.pages[0].len());
}

/// Each page's text, read by its id (`text::page_text`, once over the page tree), is what
/// lopdf's `extract_text(&[n])` (a walk of the tree for each page) reads, an error where it
/// errs: for every fixture, and for many pages that show text in each way lopdf reads.
#[test]
fn page_text_is_lopdfs() {
    let fixtures = [
        ("manual", manual(true)),
        ("manual without outline", manual(false)),
        ("scan", scanned()),
        ("cyclic outline", cyclic_outline()),
        ("shared outline entry", shared_outline_entry()),
        ("doubling outline", doubling_outline(12)),
        ("text bomb", text_bomb(64)),
        ("many pages", many_pages(250)),
    ];
    for (name, pdf) in fixtures {
        let options = lopdf::LoadOptions { max_decompressed_size: Some(MAX_INFLATED), ..Default::default() };
        let doc = lopdf::Document::load_mem_with_options(&pdf, options).expect("the fixture reads");
        let pages = doc.get_pages();
        let (mut read, mut errors) = (0, 0);
        for (n, id) in pages {
            let ours = text::page_text(&doc, id, lopdf::DEFAULT_MAX_DECOMPRESSED_SIZE).ok();
            assert_eq!(ours, doc.extract_text(&[n]).ok(), "{name}, page {n}");
            read += usize::from(ours.as_ref().is_some_and(|t| !t.trim().is_empty()));
            errors += usize::from(ours.is_none());
        }
        if name == "many pages" {
            // Each kind of page was there to compare: text, and the error every fifth page.
            assert_eq!((read, errors), (200, 50), "{name}");
        }
    }
}
