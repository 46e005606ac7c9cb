//! One page's text, found by the page's id, so that reading every page of a PDF costs time in
//! proportion to its pages.
//!
//! Not lopdf's `Document::extract_text(&[n])`: that finds page `n` by walking the whole page
//! tree into a map (`get_pages`) on every call, so reading N pages one by one walks the tree N
//! times, O(N²): 10,000 pages took 23.6 s and 100,000 ran into the 60 s limit
//! (`bench/hostile.py`, issue 51). lopdf 0.47 reads one page by its id only in private code
//! (`extract_text_chunks_from_page` and `collect_text`, in its `parser_aux.rs`); [`page_text`]
//! does what they do with lopdf's public pieces, for a page id from one `get_pages` made by the
//! caller. It gives the same text for each page (`tests::page_text_is_lopdfs`), and an error
//! wherever lopdf's gives one.

use std::collections::BTreeMap;

use lopdf::content::Content;
use lopdf::{Document, Encoding, Error, Object, ObjectId};

/// The text of the page `page` of `doc`, as lopdf's `extract_text` reads it: the strings shown
/// by `Tj`, `TJ`, `'` and `"` in the font `Tf` last chose, a line break at `T*`, `'`, `"` and
/// `ET` unless the text since the last `Tf` already ends one. No stream (the page's content,
/// a font's `ToUnicode`) may inflate to more than `max_inflated` bytes.
pub(super) fn page_text(doc: &Document, page: ObjectId, max_inflated: usize) -> lopdf::Result<String> {
    let mut encodings: BTreeMap<Vec<u8>, Encoding> = BTreeMap::new();
    for (name, font) in doc.get_page_fonts(page)? {
        encodings.insert(name, font.get_font_encoding_with_limit(doc, max_inflated)?);
    }
    let content = Content::decode(&doc.get_page_content_with_limit(page, max_inflated)?)?;
    let mut text = String::new();
    // lopdf reads the text shown in each font as a chunk of its own and joins the chunks; a
    // chunk (not the text before it) decides whether a line break is already there.
    let mut chunk = 0;
    let mut encoding = None;
    for operation in &content.operations {
        let operands = operation.operands.as_slice();
        match operation.operator.as_str() {
            "Tf" => {
                let font = operands.first().ok_or_else(|| Error::Syntax("missing font operand".into()))?;
                encoding = encodings.get(font.as_name()?);
                chunk = text.len();
            }
            "Tj" | "TJ" => {
                if let Some(encoding) = encoding {
                    collect(&mut text, encoding, operands)?;
                }
            }
            // `'` is `T*` then `Tj`; `"` (`aw ac string "`) is `Tw`, `Tc`, then `'` with its
            // third operand.
            "'" | "\"" => {
                if let Some(encoding) = encoding {
                    end_line(&mut text, chunk);
                    let shown =
                        if operation.operator == "'" { operands } else { operands.get(2..3).unwrap_or_default() };
                    collect(&mut text, encoding, shown)?;
                }
            }
            "T*" | "ET" => end_line(&mut text, chunk),
            _ => {}
        }
    }
    Ok(text)
}

/// A line break at the end of `text`, unless the chunk that begins at `chunk` ends with one.
fn end_line(text: &mut String, chunk: usize) {
    if !text[chunk..].ends_with('\n') {
        text.push('\n');
    }
}

/// The strings among `operands`, decoded with `encoding`, onto `text`: an array's strings
/// then a space, and a space for each integer below -100 (in a `TJ` array, a gap of more than
/// a tenth of the font's size: a space between words).
fn collect(text: &mut String, encoding: &Encoding, operands: &[Object]) -> lopdf::Result<()> {
    for operand in operands {
        match operand {
            Object::String(bytes, _) => encoding.write_to_string(bytes, text)?,
            Object::Array(items) => {
                collect(text, encoding, items)?;
                text.push(' ');
            }
            Object::Integer(n) if *n < -100 => text.push(' '),
            _ => {}
        }
    }
    Ok(())
}
