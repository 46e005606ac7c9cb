//! Keeps the terms of a long question that can change the ranking. BM25 must score every row a
//! term matches, so a term found in most sections ("the" of this corpus: "set", "business")
//! costs time and gives almost no weight; a term found nowhere costs nothing and gives none.
//! Terms are looked up by their stem, which FTS5 itself computes: the words go through a
//! scratch FTS5 table with the same tokenizer, read back through `fts5vocab` ([`stems`]).

use rusqlite::Connection;

use super::{IndexError, stems};

/// Questions with at most this many terms are searched as they are.
const SMALL_QUESTION: usize = 4;
/// At most this many terms are searched, the rarest first. Support tickets are long, and their
/// rarest words are often not the topic ("yesterday", a product name): keeping only the 8
/// rarest put the right file first for 20% of the ERP dev questions, against 60% with every
/// selective term (`cargo bench --bench retrieval`).
pub const MAX_SEARCH_TERMS: usize = super::query::MAX_TERMS;

/// The terms worth searching, in the order given: terms found nowhere are dropped, terms in
/// more than half of the `rows` are dropped when any rarer term remains (else the rarest few
/// stay), and at most [`MAX_SEARCH_TERMS`] of the rarest are kept.
pub fn selective(conn: &Connection, terms: Vec<String>, rows: usize) -> Result<Vec<String>, IndexError> {
    if terms.len() <= SMALL_QUESTION {
        return Ok(terms);
    }
    let frequencies = frequencies(conn, &terms)?;
    let mut ranked: Vec<(usize, usize)> = frequencies.iter().copied().enumerate().filter(|(_, df)| *df > 0).collect();
    ranked.sort_by_key(|(i, df)| (*df, *i));
    let rare = ranked.iter().filter(|(_, df)| *df * 2 <= rows).count();
    let wanted = if rare > 0 { rare } else { SMALL_QUESTION };
    ranked.truncate(wanted.min(MAX_SEARCH_TERMS));
    let mut keep: Vec<usize> = ranked.into_iter().map(|(i, _)| i).collect();
    keep.sort_unstable();
    Ok(keep.into_iter().filter_map(|i| terms.get(i).cloned()).collect())
}

/// How many rows of `sections` hold each term (by its stem).
fn frequencies(conn: &Connection, terms: &[String]) -> Result<Vec<usize>, IndexError> {
    let texts: Vec<&str> = terms.iter().map(String::as_str).collect();
    stems::stems(conn, &texts)?
        .iter()
        .map(|stems| match stems.first() {
            Some(stem) => stems::sections_holding(conn, stem),
            None => Ok(0),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_with(rows: &[&str]) -> Connection {
        let conn = Connection::open_in_memory().expect("memory db");
        conn.execute_batch(
            "CREATE VIRTUAL TABLE sections USING fts5(heading, body, tokenize = 'porter unicode61 remove_diacritics 2');",
        )
        .expect("schema");
        stems::prepare(&conn).expect("stems schema");
        for body in rows {
            conn.execute("INSERT INTO sections(heading, body) VALUES ('h', ?1)", [body]).expect("insert");
        }
        conn
    }

    fn words(list: &str) -> Vec<String> {
        list.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn common_and_absent_terms_are_dropped_from_long_questions() {
        let rows = ["posting invoices", "posting groups", "posting vat", "posting setup", "rare zebra"];
        let conn = index_with(&rows);
        let cases: &[(&str, &str)] = &[
            // Short questions are searched as they are.
            ("posting zebra", "posting zebra"),
            // "posting" (stem "post") is in 4 of 5 rows; "nothing" matches none.
            ("posting invoice zebra group nothing", "invoice zebra group"),
            // When every term is common, the rarest few stay.
            ("posting posted posts poster", "posting posted posts poster"),
        ];
        for (question, expected) in cases {
            let got = selective(&conn, words(question), rows.len()).expect("selective");
            assert_eq!(got.join(" "), *expected, "question {question:?}");
        }
    }

    #[test]
    fn at_most_the_rarest_terms_are_kept() {
        // Term t{i} is in rows 0..=i (i + 1 rows of 80, all under half); the rest are filler.
        let rows: Vec<String> = (0..80)
            .map(|r| {
                let terms: Vec<String> = (r..40).map(|i| format!("t{i}")).collect();
                if terms.is_empty() { "filler".to_string() } else { terms.join(" ") }
            })
            .collect();
        let refs: Vec<&str> = rows.iter().map(String::as_str).collect();
        let conn = index_with(&refs);
        let question: Vec<String> = (0..40).rev().map(|i| format!("t{i}")).collect();
        let got = selective(&conn, question, rows.len()).expect("selective");
        // The rarest MAX_SEARCH_TERMS (t0..t31), in the question's order.
        assert_eq!(got, (0..MAX_SEARCH_TERMS).rev().map(|i| format!("t{i}")).collect::<Vec<_>>());
    }
}
