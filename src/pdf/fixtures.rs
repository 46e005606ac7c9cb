//! PDFs made for tests (debug builds only, as `sandbox::probe`), written with lopdf: a
//! three-page manual with or without an outline, a scan, outlines that loop or share entries,
//! a text bomb, and many pages that show text in each way lopdf reads.

use lopdf::content::{Content, Operation};
use lopdf::{Document, Object, ObjectId, Stream, StringFormat, dictionary};

/// A page of `lines` in Helvetica, under `pages`.
fn text_page(doc: &mut Document, pages: ObjectId, font: ObjectId, lines: &[&str]) -> ObjectId {
    let mut ops = vec![
        Operation::new("BT", vec![]),
        Operation::new("Tf", vec!["F1".into(), 12.into()]),
        Operation::new("TL", vec![16.into()]),
        Operation::new("Td", vec![72.into(), 720.into()]),
    ];
    for line in lines {
        ops.push(Operation::new("Tj", vec![Object::string_literal(*line)]));
        ops.push(Operation::new("T*", vec![]));
    }
    ops.push(Operation::new("ET", vec![]));
    let content = doc.add_object(Stream::new(dictionary! {}, Content { operations: ops }.encode().expect("content")));
    doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages, "Contents" => content,
        "Resources" => dictionary! { "Font" => dictionary! { "F1" => font } },
    })
}

/// An outline entry titled `title` pointing at `page`.
fn outline_item(doc: &mut Document, title: &str, page: ObjectId) -> ObjectId {
    doc.add_object(dictionary! {
        "Title" => Object::String(title.as_bytes().to_vec(), StringFormat::Literal),
        "Dest" => vec![page.into(), "XYZ".into(), Object::Null, Object::Null, Object::Null],
    })
}

/// Links `kids` under `parent` (Parent, Prev, Next; First, Last, Count).
fn link(doc: &mut Document, parent: ObjectId, kids: &[ObjectId]) {
    for (i, kid) in kids.iter().enumerate() {
        let entry = doc.get_object_mut(*kid).and_then(Object::as_dict_mut).expect("an outline item");
        entry.set("Parent", parent);
        if i > 0 {
            entry.set("Prev", kids[i - 1]);
        }
        if i + 1 < kids.len() {
            entry.set("Next", kids[i + 1]);
        }
    }
    let parent = doc.get_object_mut(parent).and_then(Object::as_dict_mut).expect("an outline parent");
    parent.set("First", kids[0]);
    parent.set("Last", kids[kids.len() - 1]);
    parent.set("Count", kids.len() as i64);
}

/// A three-page manual with an outline: Guide (Installing p1, Configuring the proxy p2),
/// Troubleshooting p3; or, `with_outline` false, the same pages without one.
pub fn manual(with_outline: bool) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages = doc.new_object_id();
    let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
    let kids = [
        text_page(&mut doc, pages, font, &["Installing", "Run the installer and follow the prompts."]),
        text_page(&mut doc, pages, font, &["Configuring the proxy", "Set proxy.url in bluebird.toml."]),
        text_page(&mut doc, pages, font, &["Troubleshooting", "Error E42 means the token expired."]),
    ];
    doc.objects.insert(
        pages,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids.iter().map(|k| Object::from(*k)).collect::<Vec<_>>(),
            "Count" => kids.len() as i64,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let mut catalog = dictionary! { "Type" => "Catalog", "Pages" => pages };
    if with_outline {
        let outlines = doc.add_object(dictionary! { "Type" => "Outlines" });
        let guide = outline_item(&mut doc, "Guide", kids[0]);
        let install = outline_item(&mut doc, "Installing", kids[0]);
        let proxy = outline_item(&mut doc, "Configuring the proxy", kids[1]);
        let trouble = outline_item(&mut doc, "Troubleshooting", kids[2]);
        link(&mut doc, outlines, &[guide, trouble]);
        link(&mut doc, guide, &[install, proxy]);
        catalog.set("Outlines", outlines);
    }
    let catalog = doc.add_object(catalog);
    doc.trailer.set("Root", catalog);
    doc.compress();
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("the PDF is written");
    out
}

/// A one-page PDF whose page is only an image: a scan.
pub fn scanned() -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages = doc.new_object_id();
    let image = doc.add_object(Stream::new(
        dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 2, "Height" => 2,
        "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8 },
        vec![0, 255, 255, 0],
    ));
    let ops = vec![
        Operation::new("q", vec![]),
        Operation::new("cm", vec![500.into(), 0.into(), 0.into(), 700.into(), 50.into(), 50.into()]),
        Operation::new("Do", vec!["Im1".into()]),
        Operation::new("Q", vec![]),
    ];
    one_page(doc, pages, ops, dictionary! { "XObject" => dictionary! { "Im1" => image } })
}

/// `doc` saved with one page (the object `pages` names) drawn by `ops` with `resources`.
fn one_page(mut doc: Document, pages: ObjectId, ops: Vec<Operation>, resources: lopdf::Dictionary) -> Vec<u8> {
    let content = doc.add_object(Stream::new(dictionary! {}, Content { operations: ops }.encode().expect("content")));
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages, "Contents" => content, "Resources" => resources,
    });
    doc.objects.insert(
        pages,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1,
        "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()] }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages });
    doc.trailer.set("Root", catalog);
    doc.compress();
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("the PDF is written");
    out
}

/// [`manual`] whose last outline entry's `Next` is itself: a loop for a reader that follows
/// `Next` without remembering where it has been.
pub fn cyclic_outline() -> Vec<u8> {
    let mut doc = Document::load_mem(&manual(true)).expect("the manual reads");
    let last = doc
        .objects
        .iter()
        .find(|(_, o)| {
            o.as_dict().ok().and_then(|d| d.get(b"Title").ok()).and_then(|t| t.as_str().ok())
                == Some(b"Troubleshooting")
        })
        .map(|(id, _)| *id)
        .expect("the last entry");
    doc.get_object_mut(last).and_then(Object::as_dict_mut).expect("an entry").set("Next", last);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("the PDF is written");
    out
}

/// A one-page PDF of a few kB whose page holds `kib` KiB of text (one line of 1 KiB shown again
/// and again, compressed): small on disk, large once read.
pub fn text_bomb(kib: usize) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages = doc.new_object_id();
    let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
    let line = "Bluebird ".repeat(114);
    let mut ops = vec![Operation::new("BT", vec![]), Operation::new("Tf", vec!["F1".into(), 12.into()])];
    for _ in 0..kib {
        ops.push(Operation::new("Tj", vec![Object::string_literal(line.as_str())]));
    }
    ops.push(Operation::new("ET", vec![]));
    one_page(doc, pages, ops, dictionary! { "Font" => dictionary! { "F1" => font } })
}

/// The id of the outline entry titled `title`.
fn entry_titled(doc: &Document, title: &[u8]) -> ObjectId {
    doc.objects
        .iter()
        .find(|(_, o)| o.as_dict().ok().and_then(|d| d.get(b"Title").ok()).and_then(|t| t.as_str().ok()) == Some(title))
        .map(|(id, _)| *id)
        .expect("an outline entry by that title")
}

/// `doc` written out.
fn saved(mut doc: Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("the PDF is written");
    out
}

/// [`manual`] whose "Troubleshooting" entry has Guide's entries ("Installing", then
/// "Configuring the proxy") as its own too: entries reached from two parents, with no loop.
pub fn shared_outline_entry() -> Vec<u8> {
    let mut doc = Document::load_mem(&manual(true)).expect("the manual reads");
    let (install, proxy) = (entry_titled(&doc, b"Installing"), entry_titled(&doc, b"Configuring the proxy"));
    let trouble = entry_titled(&doc, b"Troubleshooting");
    let entry = doc.get_object_mut(trouble).and_then(Object::as_dict_mut).expect("an entry");
    entry.set("First", install);
    entry.set("Last", proxy);
    entry.set("Count", 2);
    saved(doc)
}

/// [`manual`] without an outline, given one of `depth` entries, each of whose `First` and
/// `Next` are both the entry after it: `depth` objects that a reader following `First` and
/// `Next` without remembering reads 2^depth - 1 times.
pub fn doubling_outline(depth: usize) -> Vec<u8> {
    let mut doc = Document::load_mem(&manual(false)).expect("the manual reads");
    let page = *doc.get_pages().get(&1).expect("a first page");
    let entries: Vec<ObjectId> = (0..depth).map(|i| outline_item(&mut doc, &format!("Part {i}"), page)).collect();
    for pair in entries.windows(2) {
        let entry = doc.get_object_mut(pair[0]).and_then(Object::as_dict_mut).expect("an entry");
        entry.set("First", pair[1]);
        entry.set("Next", pair[1]);
    }
    let outlines =
        doc.add_object(dictionary! { "Type" => "Outlines", "First" => entries[0], "Last" => entries[0], "Count" => 1 });
    let root = doc.trailer.get(b"Root").and_then(Object::as_reference).expect("a catalog");
    doc.get_object_mut(root).and_then(Object::as_dict_mut).expect("a catalog").set("Outlines", outlines);
    saved(doc)
}

/// A PDF of `n` pages in a page tree two levels deep (100 pages a node), whose pages show text
/// in each way lopdf reads ([`shown_in_each_way`]).
pub fn many_pages(n: usize) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let root = doc.new_object_id();
    let plain = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
    let ansi = doc.add_object(
        dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Times-Roman", "Encoding" => "WinAnsiEncoding" },
    );
    let resources = dictionary! { "Font" => dictionary! { "F1" => plain, "F2" => ansi } };
    let mut nodes = Vec::new();
    for first in (0..n).step_by(100) {
        let node = doc.new_object_id();
        let kids: Vec<Object> = (first..n.min(first + 100))
            .map(|k| {
                let ops = Content { operations: shown_in_each_way(k) }.encode().expect("content");
                let content = doc.add_object(Stream::new(dictionary! {}, ops));
                let page = dictionary! {
                    "Type" => "Page", "Parent" => node, "Contents" => content, "Resources" => resources.clone(),
                };
                doc.add_object(page).into()
            })
            .collect();
        let count = kids.len() as i64;
        doc.objects.insert(
            node,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Parent" => root, "Count" => count, "Kids" => kids }),
        );
        nodes.push(Object::from(node));
    }
    doc.objects.insert(
        root,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Count" => n as i64, "Kids" => nodes,
            "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => root });
    doc.trailer.set("Root", catalog);
    doc.compress();
    saved(doc)
}

/// Page `k`'s operators, by `k % 5`: text before any font, then `Tj` and `T*`; `TJ` with gaps
/// wide and narrow, a second font (WinAnsi) within the line, `T*` twice; `'` and `"` (one
/// without its string); fonts switched between lines and one the page lacks, `ET` twice; and
/// a `Tf` whose font is a number, which lopdf reads as an error.
fn shown_in_each_way(k: usize) -> Vec<Operation> {
    let op = |name: &str, operands: Vec<Object>| Operation::new(name, operands);
    let s = |text: &str| Object::string_literal(text);
    let font = |name: &str| op("Tf", vec![name.into(), 12.into()]);
    let body = match k % 5 {
        0 => vec![
            font("F1"),
            op("Tj", vec![s(&format!("Page {k} of the manual"))]),
            op("T*", vec![]),
            op("Tj", vec![s("caf\u{e9} \u{fb01}le")]),
        ],
        1 => vec![
            font("F1"),
            op(
                "TJ",
                vec![Object::Array(vec![
                    s("Spa"),
                    Object::Integer(-200),
                    s(&format!("ced {k}")),
                    Object::Integer(50),
                    Object::Real(-300.0),
                    s("word"),
                ])],
            ),
            font("F2"),
            op("Tj", vec![Object::String(b"se\xe7ond font".to_vec(), StringFormat::Literal)]),
            op("T*", vec![]),
            op("T*", vec![]),
        ],
        2 => vec![
            font("F2"),
            op("'", vec![s(&format!("quoted line {k}"))]),
            op("'", vec![s("another")]),
            op("\"", vec![1.into(), 2.into(), s("spaced line")]),
            op("\"", vec![1.into()]),
        ],
        3 => vec![
            font("F1"),
            op("Tj", vec![s(&format!("before {k}"))]),
            op("T*", vec![]),
            font("F2"),
            op("T*", vec![]),
            op("Tj", vec![s("after")]),
            font("F9"),
            op("Tj", vec![s("in a font the page lacks")]),
            op("ET", vec![]),
        ],
        _ => vec![
            font("F1"),
            op("Tj", vec![s(&format!("read before the error {k}"))]),
            op("Tf", vec![12.into(), 12.into()]),
        ],
    };
    let mut ops = vec![op("Tj", vec![s("no font yet")]), op("BT", vec![])];
    ops.extend(body);
    ops.push(op("ET", vec![]));
    ops
}
