//! An argument rule's words as the index reads them: the pattern's literal words replaced by
//! their stems (`restructuring` is `restructur`), matched against the call's words replaced by
//! theirs, so every form the search finds the same (`restructure`, `restructured`,
//! `restructures`) is caught the same. The stems are FTS5's own (`index::stems`).

use regex::Regex;
use regex_syntax::ast::{self, Ast, Literal, LiteralKind};

use crate::index::IndexError;

/// Why a pattern's stemmed form could not be made.
#[derive(Debug, thiserror::Error)]
pub enum StemError {
    /// The pattern did not parse (the regex crate said why first, so this is not reached for a
    /// pattern that compiles).
    #[error("{0}")]
    Parse(#[from] Box<ast::Error>),
    /// The stemmer (an in-memory SQLite table) failed.
    #[error("stemming failed: {0}")]
    Stems(#[from] IndexError),
    /// The stemmed pattern did not compile.
    #[error("{0}")]
    Regex(#[from] regex::Error),
}

/// `pattern` with each run of letters and digits written as itself replaced by that word's
/// stems (lower case, as the tokenizer gives them); `None` when it has no such word, since
/// the stemmed text then adds nothing to what the pattern as written is matched against.
pub fn pattern(pattern: &str) -> Result<Option<Regex>, StemError> {
    let mut ast = ast::parse::Parser::new().parse(pattern).map_err(Box::new)?;
    let mut words = 0;
    let mut failed = None;
    rewrite(&mut ast, &mut |word| {
        words += 1;
        crate::index::stemmed(word).unwrap_or_else(|e| {
            failed = Some(e);
            word.to_string()
        })
    });
    if let Some(e) = failed {
        return Err(e.into());
    }
    if words == 0 {
        return Ok(None);
    }
    let mut written = String::new();
    // Printing an AST to a String cannot fail.
    let _ = ast::print::Printer::new().print(&ast, &mut written);
    Ok(Some(Regex::new(&written)?))
}

/// Replaces, inside `ast`, every run of two or more verbatim letters and digits in a
/// concatenation by `stem(run)` (as verbatim literals).
fn rewrite(ast: &mut Ast, stem: &mut dyn FnMut(&str) -> String) {
    match ast {
        Ast::Concat(concat) => {
            for child in &mut concat.asts {
                rewrite(child, stem);
            }
            let mut out: Vec<Ast> = Vec::with_capacity(concat.asts.len());
            let mut run: Vec<Literal> = Vec::new();
            for child in std::mem::take(&mut concat.asts) {
                match &child {
                    Ast::Literal(literal) if literal.kind == LiteralKind::Verbatim && literal.c.is_alphanumeric() => {
                        run.push((**literal).clone());
                    }
                    _ => {
                        flush(&mut run, &mut out, stem);
                        out.push(child);
                    }
                }
            }
            flush(&mut run, &mut out, stem);
            concat.asts = out;
        }
        Ast::Alternation(alternation) => {
            for child in &mut alternation.asts {
                rewrite(child, stem);
            }
        }
        Ast::Group(group) => rewrite(&mut group.ast, stem),
        Ast::Repetition(repetition) => rewrite(&mut repetition.ast, stem),
        _ => {}
    }
}

/// Writes `run` (literals of one word) to `out`: its stem when it is two or more characters.
fn flush(run: &mut Vec<Literal>, out: &mut Vec<Ast>, stem: &mut dyn FnMut(&str) -> String) {
    if run.len() < 2 {
        out.extend(run.drain(..).map(Ast::literal));
        return;
    }
    let word: String = run.iter().map(|l| l.c).collect();
    let span = run[0].span;
    run.clear();
    out.extend(stem(&word).chars().map(|c| Ast::literal(Literal { span, kind: LiteralKind::Verbatim, c })));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word's inflections stem alike on both sides; the pattern's syntax is kept; a pattern
    /// without words has no stemmed form.
    #[test]
    fn a_patterns_words_become_their_stems() {
        let re = pattern("(?i)restructuring").expect("stems").expect("a word");
        for said in ["restructure", "Restructured", "restructures", "restructuring plans"] {
            let stemmed = crate::index::stemmed(&crate::hooks::fold(said)).expect("stems");
            assert!(re.is_match(&stemmed), "{said}: {stemmed} against {re}");
        }
        assert!(!re.is_match(&crate::index::stemmed("structure").expect("stems")));
        let alternation = pattern(r"\b(layoffs|merger)\b").expect("stems").expect("words");
        assert!(
            alternation.is_match(&crate::index::stemmed("the layoff and mergers").expect("stems")),
            "{alternation}"
        );
        assert!(pattern(r"\d{4}-\d{4}").expect("parses").is_none());
    }
}
