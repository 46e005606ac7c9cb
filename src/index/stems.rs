//! Words as the index reads them: stems computed by FTS5 itself (the index's `porter unicode61
//! remove_diacritics 2` tokenizer, through a scratch table read back with `fts5vocab`), and how
//! many sections hold a stem. Search's term pruning and the evidence's scoring both ask here,
//! so a question's "refunded" is the "refund" of the docs exactly as search matches it.

use rusqlite::{Connection, OptionalExtension, params};

use super::IndexError;

/// The tables this module needs beside `sections`, in the connection's own `temp` schema: the
/// index itself may be read-only (an image shared by several connections), and nothing of
/// this belongs in it.
const SCRATCH: &str = "
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.sections_vocab USING fts5vocab(main, sections, 'row');
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_text USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_vocab USING fts5vocab(temp, stem_text, 'instance');";

/// Readies `conn` (which holds `sections`) for [`stems`] and [`sections_holding`].
pub fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCRATCH)
}

/// The stems of each text, in the order of their instances (a word's stems together).
pub fn stems(conn: &Connection, texts: &[&str]) -> Result<Vec<Vec<String>>, IndexError> {
    conn.execute("DELETE FROM temp.stem_text", [])?;
    {
        let mut insert = conn.prepare_cached("INSERT INTO temp.stem_text(rowid, text) VALUES (?1, ?2)")?;
        for (i, text) in texts.iter().enumerate() {
            insert.execute(params![i as i64, text])?;
        }
    }
    let mut out = vec![Vec::new(); texts.len()];
    let mut read = conn.prepare_cached("SELECT doc, term FROM temp.stem_vocab")?;
    let rows = read.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (doc, term) = row?;
        if let Some(slot) = usize::try_from(doc).ok().and_then(|i| out.get_mut(i)) {
            slot.push(term);
        }
    }
    Ok(out)
}

/// How many sections of the index hold `stem` (0 when none does).
pub fn sections_holding(conn: &Connection, stem: &str) -> Result<usize, IndexError> {
    let mut df = conn.prepare_cached("SELECT doc FROM temp.sections_vocab WHERE term = ?1")?;
    let count: Option<i64> = df.query_row([stem], |r| r.get(0)).optional()?;
    Ok(count.map_or(0, |n| usize::try_from(n).unwrap_or(0)))
}
