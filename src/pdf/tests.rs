use super::fixtures::{manual, scanned};
use super::*;

/// A PDF's pages and outline are read; its rendition has a marker per page with the
/// outline's path at it.
#[test]
fn pages_and_outline_are_read() {
    let read = extract(&manual(true)).expect("the manual reads");
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
    let plain = extract(&manual(false)).expect("reads");
    assert!(plain.outline.is_empty());
    assert_eq!(plain.rendition().lines().filter_map(marker).map(|(_, p)| p).collect::<Vec<_>>(), ["", "", ""]);
}

/// A scan has no text layer; bytes that are no PDF are unreadable; neither panics.
#[test]
fn a_scan_or_garbage_is_said_so() {
    assert!(matches!(extract(&scanned()), Err(PdfError::NoText)), "{:?}", extract(&scanned()).map(|e| e.pages));
    for bytes in [&b"not a pdf"[..], b"%PDF-1.5\n1 0 obj << /Type /Catalog", b""] {
        assert!(matches!(extract(bytes), Err(PdfError::Unreadable(_))), "{bytes:?}");
    }
    // A manual cut short reads as far as it goes or says it cannot: never a panic.
    let whole = manual(true);
    for cut in [whole.len() / 2, whole.len() - 30] {
        let _ = extract(&whole[..cut]);
    }
}
