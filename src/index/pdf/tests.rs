use super::*;
use crate::pdf::{Entry, Extracted};

fn entry(level: usize, title: &str, page: usize) -> Entry {
    Entry { level, title: title.into(), page }
}

/// Each page with text is a section, titled by the outline's path at that page (a page an
/// entry does not start keeps the path before it), anchored `page=N`; a blank page is none.
#[test]
fn pages_are_sections_titled_by_the_outline() {
    let pdf = Extracted {
        pages: vec![
            "Cover".into(),
            "Installing the agent.\nRun the installer.".into(),
            "   ".into(),
            "Refunds take 14 days.".into(),
            "Contact us.".into(),
        ],
        outline: vec![
            entry(1, "Setup", 2),
            entry(2, "Installing", 2),
            entry(1, "Billing", 4),
            entry(2, "Refunds", 4),
            entry(1, "Support\n and  help", 5),
        ],
    };
    let chunks = chunk_pdf(&pdf.rendition(), "manual");
    let shown: Vec<(String, &str, &str)> =
        chunks.iter().map(|c| (c.heading_text(), c.anchor.as_str(), c.body.as_str())).collect();
    assert_eq!(
        shown,
        [
            ("manual > page 1".to_string(), "page=1", "Cover"),
            ("manual > Setup > Installing".to_string(), "page=2", "Installing the agent.\nRun the installer."),
            ("manual > Billing > Refunds".to_string(), "page=4", "Refunds take 14 days."),
            ("manual > Support and help".to_string(), "page=5", "Contact us."),
        ]
    );
    // Lines are the rendition's: the marker, then the body's first and last line.
    let second = &chunks[1];
    let rendition = pdf.rendition();
    let lines: Vec<&str> = rendition.lines().collect();
    assert!(lines[second.start_line - 1].starts_with("\u{c}[page 2]"));
    assert_eq!(lines[second.body_line - 1], "Installing the agent.");
    assert_eq!(lines[second.end_line - 1], "Run the installer.");
}

/// A form feed in a page's text cannot fake a page; an outline entry before page 1 or past
/// the end changes nothing it should not; a blank PDF is blank.
#[test]
fn a_page_cannot_fake_a_marker() {
    let pdf = Extracted {
        pages: vec!["one\u{c}[page 9] Fake\ntwo".into()],
        outline: vec![entry(1, "Zero", 0), entry(1, "Later", 7)],
    };
    let chunks = chunk_pdf(&pdf.rendition(), "t");
    assert_eq!(chunks.len(), 1, "{chunks:?}");
    assert_eq!(chunks[0].anchor, "page=1");
    assert!(chunks[0].body.contains("[page 9] Fake"), "kept as text: {:?}", chunks[0].body);
    assert_eq!(chunks[0].heading_text(), "t > page 1");
    assert!(!pdf.is_blank());
    assert!(Extracted { pages: vec![" \n".into(), String::new()], outline: vec![] }.is_blank());
}
