//! The lines of a cited section that an answer draws on, for the page to highlight: the lines
//! that share the most content words with the answer. A heuristic for the eye, never a check:
//! whether a citation holds is [`super::cited`]'s business.

use std::collections::BTreeSet;

/// A line is highlighted when it shares at least this many content words with the answer…
const MIN_SHARED: usize = 2;

/// The indexes (from 0) of the lines of `section` that `answer` draws on: those sharing at least
/// [`MIN_SHARED`] content words with it, and at least half as many as the line that shares
/// most. Citations (`docs/x.md#anchor`) and a heading line (`# …`) do not count.
pub fn cited_lines(answer: &str, section: &str) -> Vec<usize> {
    let said = crate::index::query::stems(&crate::guard::citations::without_citations(answer));
    let shared: Vec<usize> = section
        .lines()
        .map(|line| {
            if line.trim_start().starts_with('#') {
                return 0;
            }
            let words: BTreeSet<String> = crate::index::query::stems(line);
            words.intersection(&said).count()
        })
        .collect();
    let best = shared.iter().copied().max().unwrap_or(0);
    let enough = MIN_SHARED.max(best.div_ceil(2));
    shared.iter().enumerate().filter(|(_, n)| **n >= enough).map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::cited_lines;

    const SECTION: &str = "# Refunds > Window\n\
        Refunds are possible within 14 days of the first payment on a subscription. This is the\n\
        refund window. It starts on the date of the customer's first payment, not on the date\n\
        the account was created or the date of a later renewal.\n\
        \n\
        After the refund window has closed, only billing errors are refunded.";

    /// The line holding the answer's facts is highlighted; unrelated lines and the heading are not.
    #[test]
    fn the_lines_an_answer_draws_on_are_found() {
        let lines =
            cited_lines("Refunds are possible within 14 days of the first payment [docs/refunds.md#window].", SECTION);
        assert!(lines.contains(&1), "{lines:?}");
        assert!(!lines.contains(&0), "the heading is not a cited line: {lines:?}");
        assert!(!lines.contains(&3) && !lines.contains(&4), "{lines:?}");
    }

    /// An answer about something else highlights nothing; the source's own words do not count.
    #[test]
    fn nothing_is_highlighted_without_shared_words() {
        assert!(cited_lines("See docs/refunds.md#window.", SECTION).is_empty());
        assert!(cited_lines("", SECTION).is_empty());
        assert!(cited_lines("Anything", "").is_empty());
    }
}
