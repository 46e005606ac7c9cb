//! Words as the index reads them: stems computed by FTS5 itself (the index's `porter unicode61
//! remove_diacritics 2` tokenizer, through a scratch table read back with `fts5vocab`), and how
//! many sections hold a stem. Search's term pruning and the evidence's scoring both ask here,
//! so a question's "refunded" is the "refund" of the docs exactly as search matches it.

use std::collections::HashMap;
use std::sync::{LazyLock, RwLock};

use rusqlite::{Connection, OptionalExtension, params};

use super::IndexError;

/// The tables this module needs beside `sections`, in the connection's own `temp` schema: the
/// index itself may be read-only (an image shared by several connections), and nothing of
/// this belongs in it.
const SCRATCH: &str = "
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.sections_vocab USING fts5vocab(main, sections, 'row');
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_text USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');
    CREATE VIRTUAL TABLE IF NOT EXISTS temp.stem_vocab USING fts5vocab(temp, stem_text, 'instance');";

/// Words stemmed before, with their stems, shared by every connection of the process: a
/// word's stems never change (every connection uses the one tokenizer above), and the docs'
/// words recur in every passage and question. Without it, stemming through FTS5 took about
/// 60% of a one-shot answer's CPU (`cargo bench --bench load`).
static KNOWN: LazyLock<RwLock<HashMap<String, Vec<String>>>> = LazyLock::new(RwLock::default);

/// Words [`KNOWN`] holds at most (a few MiB); past it, it starts again empty.
const KNOWN_WORDS: usize = 100_000;

/// Readies `conn` (which holds `sections`) for [`stems`] and [`sections_holding`].
pub fn prepare(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCRATCH)
}

/// The stems of each text, sorted (as FTS5's vocabulary lists them): a bag of the text's stems.
///
/// Each distinct word is stemmed once. A word here is a run between ASCII characters that are
/// not letters or digits, which the tokenizer always treats as separators, so a text's stems are
/// exactly its words' stems together (a word the tokenizer splits further, at a non-ASCII
/// separator such as `—`, gives each of its stems). Passages repeat their words many times:
/// stemming each distinct word once is several times less work for FTS5 than the whole texts.
pub fn stems(conn: &Connection, texts: &[&str]) -> Result<Vec<Vec<String>>, IndexError> {
    let mut distinct: HashMap<&str, usize> = HashMap::new();
    let words_of: Vec<Vec<usize>> = texts
        .iter()
        .map(|text| {
            words(text)
                .map(|word| {
                    let next = distinct.len();
                    *distinct.entry(word).or_insert(next)
                })
                .collect()
        })
        .collect();
    let mut of_word: Vec<Vec<String>> = vec![Vec::new(); distinct.len()];
    let mut unknown: Vec<(&str, usize)> = Vec::new();
    {
        let known = KNOWN.read().unwrap_or_else(|p| p.into_inner());
        for (&word, &at) in &distinct {
            match known.get(word) {
                Some(stems) => of_word[at].clone_from(stems),
                None => unknown.push((word, at)),
            }
        }
    }
    if !unknown.is_empty() {
        stem_with_fts5(conn, &unknown, &mut of_word)?;
        let mut known = KNOWN.write().unwrap_or_else(|p| p.into_inner());
        if known.len() + unknown.len() > KNOWN_WORDS {
            known.clear();
        }
        for (word, at) in unknown {
            known.insert(word.to_string(), of_word[at].clone());
        }
    }
    Ok(words_of
        .iter()
        .map(|words| {
            let mut bag: Vec<String> = words.iter().flat_map(|&w| of_word[w].iter().cloned()).collect();
            bag.sort_unstable();
            bag
        })
        .collect())
}

thread_local! {
    /// This thread's connection for stemming text outside any index (an operator's rule and a
    /// call's arguments: `hooks`): the scratch tables over an empty `sections`.
    static STEMMER: std::cell::RefCell<Option<Connection>> = const { std::cell::RefCell::new(None) };
}

/// `text` as the index reads its words: each word's stems, in order, one space between
/// (`Refunds were restructured` is `refund were restructur`).
pub fn stemmed(text: &str) -> Result<String, IndexError> {
    STEMMER.with_borrow_mut(|slot| {
        let conn = match slot {
            Some(conn) => conn,
            None => {
                let conn = Connection::open_in_memory()?;
                conn.execute_batch("CREATE VIRTUAL TABLE sections USING fts5(heading, body);")?;
                prepare(&conn)?;
                slot.insert(conn)
            }
        };
        let words: Vec<&str> = words(text).collect();
        let bags = stems(conn, &words)?;
        Ok(bags.iter().filter(|bag| !bag.is_empty()).map(|bag| bag.join(" ")).collect::<Vec<_>>().join(" "))
    })
}

/// Stems each of `words` (a word and its slot in `of_word`) through the scratch table.
fn stem_with_fts5(conn: &Connection, words: &[(&str, usize)], of_word: &mut [Vec<String>]) -> Result<(), IndexError> {
    conn.execute("DELETE FROM temp.stem_text", [])?;
    {
        let mut insert = conn.prepare_cached("INSERT INTO temp.stem_text(rowid, text) VALUES (?1, ?2)")?;
        for (word, at) in words {
            insert.execute(params![*at as i64, word])?;
        }
    }
    let mut read = conn.prepare_cached("SELECT doc, term FROM temp.stem_vocab")?;
    let rows = read.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (doc, term) = row?;
        if let Some(slot) = usize::try_from(doc).ok().and_then(|i| of_word.get_mut(i)) {
            slot.push(term);
        }
    }
    Ok(())
}

/// The words of `text`: runs between ASCII characters that are neither letters nor digits.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_ascii() && !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty())
}

/// How many sections of the index hold `stem` (0 when none does).
pub fn sections_holding(conn: &Connection, stem: &str) -> Result<usize, IndexError> {
    let mut df = conn.prepare_cached("SELECT doc FROM temp.sections_vocab WHERE term = ?1")?;
    let count: Option<i64> = df.query_row([stem], |r| r.get(0)).optional()?;
    Ok(count.map_or(0, |n| usize::try_from(n).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each text's stems as FTS5 gives them for the whole text at once, sorted.
    fn whole(conn: &Connection, texts: &[&str]) -> Vec<Vec<String>> {
        conn.execute_batch(
            "CREATE VIRTUAL TABLE temp.whole USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE temp.whole_vocab USING fts5vocab(temp, whole, 'instance');",
        )
        .expect("reference tables");
        for (i, text) in texts.iter().enumerate() {
            conn.execute("INSERT INTO temp.whole(rowid, text) VALUES (?1, ?2)", params![i as i64, text])
                .expect("insert");
        }
        let mut out = vec![Vec::new(); texts.len()];
        let mut read = conn.prepare("SELECT doc, term FROM temp.whole_vocab").expect("read");
        for row in read.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))).expect("rows") {
            let (doc, term) = row.expect("row");
            out[doc as usize].push(term);
        }
        for bag in &mut out {
            bag.sort_unstable();
        }
        out
    }

    #[test]
    fn stemming_word_by_word_gives_what_fts5_gives_for_the_whole_text() {
        let conn = Connection::open_in_memory().expect("memory db");
        conn.execute_batch("CREATE VIRTUAL TABLE sections USING fts5(heading, body);").expect("schema");
        prepare(&conn).expect("scratch");
        let texts = [
            "Refunds are refunded within 14 days; refunding is refused after.",
            "Café résumé — naïve façade… ÉLAN   co-operate, e-mail_address/path.md#anchor",
            "Zahlungstoleranz einrichten—Mahnungen «Rechnung» 支払い許容範囲 ١٢٣ x²",
            "",
            "refunds refunds REFUNDS",
        ];
        let ours = stems(&conn, &texts).expect("stems");
        assert_eq!(ours, whole(&conn, &texts));
        // Again, now from the words already known, and mixed with new ones.
        assert_eq!(stems(&conn, &texts).expect("stems"), ours);
        let mixed = ["refunded quickly, résumés revised", texts[0]];
        let again = stems(&conn, &mixed).expect("stems");
        conn.execute_batch("DROP TABLE temp.whole; DROP TABLE temp.whole_vocab;").expect("drop the reference");
        assert_eq!(again, whole(&conn, &mixed));
        assert!(ours[0].contains(&"refund".to_string()), "{:?}", ours[0]);
        assert_eq!(ours[4], vec!["refund"; 3]);
    }
}
