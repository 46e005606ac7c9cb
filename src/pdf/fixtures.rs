//! PDFs made for tests (debug builds only, as `sandbox::probe`): a three-page manual with or
//! without an outline, and a scan, written with lopdf.

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
