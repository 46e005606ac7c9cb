//! An answer checked against what its turn retrieved. A citation counts only when the section
//! it names was shown to the model in this turn: a search hit with that source, or lines read
//! with `read_file` holding that section's heading; a bare path counts when some section of the
//! file was shown. A quoted span counts only when the retrieved text (or the user's own
//! message) holds it, and so does a number the answer states (`support`). The turn sends an answer that fails back once, then falls back to a
//! retrieval-only answer. The harness never adds a citation the model did not make: it only
//! marks the ones it made.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::guard::{citations, fence};
use crate::tools::{Decision, Tool};

pub use lines::cited_lines;
pub use numbers::{Pieces, evidence_result, numbered, resolve, says_not_covered, weak_evidence};
pub use support::unsupported_numbers;

use super::event::Event;
use super::store::Stored;

/// Shortest quoted span that is checked (shorter quotes are names and labels).
const MIN_QUOTE_CHARS: usize = 16;

/// Longest quoted span that is checked, in characters.
const MAX_QUOTE_CHARS: usize = 400;

/// Text in straight or curly double quotes, on one line (longer than [`MAX_QUOTE_CHARS`] is
/// left out after the match: a counted repetition of a Unicode class compiles to a large
/// automaton, which every process paid for on its first answer).
static QUOTED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""([^"\n]+)"|“([^”\n]+)”"#).expect("constant regex QUOTED"));

/// A citation in an answer, and whether the turn backs it.
/// (The API's `Citation`: verified is true when the turn retrieved that section, or, for a bare
/// path, some section of the file; heading is empty when it did not.)
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Citation {
    /// `docs/...md`
    pub path: String,
    /// The section's anchor (empty for a whole file, or the text before its first heading).
    pub anchor: String,
    /// The section's heading, as retrieved (empty when it was not).
    pub heading: String,
    /// True when the cited section was retrieved in this turn.
    pub verified: bool,
    /// The section's page on the published docs site (`[site]`), when one is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// True when the section changed since the answer was given, or is gone (a recorded
    /// answer, shown again: `session::stale`); the answer may be out of date.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

impl Citation {
    /// `path#anchor`, or the bare path.
    pub fn source(&self) -> String {
        crate::index::source(&self.path, &self.anchor)
    }
}

/// One fenced text a tool showed the model in this turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// `path#anchor` for a search hit, the path for a file read whole.
    pub source: String,
    /// The heading line of a search hit (empty for a file read).
    pub heading: String,
    /// The text the model saw.
    pub body: String,
    /// True when it came from `search_docs` (a section), false from `read_file` (a file).
    pub searched: bool,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Every citation the answer makes, in order, once each.
    pub citations: Vec<Citation>,
    /// Quoted spans that no retrieved text holds.
    pub misquotes: Vec<String>,
    /// Numbers the answer states that no retrieved text (nor the question) holds.
    pub unsupported: Vec<String>,
    /// The answer is only its citations.
    pub bare: bool,
    /// What the answer says besides the question is, for the most part, in what was retrieved.
    pub grounded: bool,
    /// True when the turn retrieved at least one section.
    pub had_hits: bool,
}

impl Verdict {
    /// Whether a correction can mend the answer: it cites nothing retrieved, is only its
    /// citation, or misquotes (the quote is shown back to it); a cited answer whose words or
    /// numbers the evidence does not hold is not mended by telling the model so.
    pub fn correctable(&self) -> bool {
        let cited = self.citations.iter().any(|c| c.verified);
        !cited || self.bare || !self.misquotes.is_empty()
    }

    /// What is wrong with the answer, in the order the checks run; empty when it holds. The
    /// model is told them (the turn's reminder) and the log records them ([`Fault::logged`]).
    pub fn faults(&self) -> Vec<Fault<'_>> {
        let mut out = Vec::new();
        if self.bare {
            out.push(Fault::Bare);
        } else if !self.citations.iter().any(|c| c.verified) {
            out.push(Fault::Uncited);
        }
        if !self.bare && !self.grounded {
            out.push(Fault::Ungrounded);
        }
        if !self.unsupported.is_empty() {
            out.push(Fault::Unsupported(&self.unsupported));
        }
        if let Some(quote) = self.misquotes.first() {
            out.push(Fault::Misquote(quote));
        }
        out
    }

    /// An answer holds when the turn retrieved no section (nothing to cite), or when it cites
    /// at least one retrieved section, says something besides that the retrieved text holds,
    /// and neither quotes nor states a number that was not retrieved.
    pub fn holds(&self) -> bool {
        !self.had_hits
            || (self.citations.iter().any(|c| c.verified)
                && self.misquotes.is_empty()
                && self.unsupported.is_empty()
                && !self.bare
                && self.grounded)
    }
}

/// One way an answer fails the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault<'v> {
    /// It is only its citation.
    Bare,
    /// It cites nothing retrieved.
    Uncited,
    /// What it says besides the question is mostly not the evidence's words.
    Ungrounded,
    /// It states these numbers, which the evidence does not hold.
    Unsupported(&'v [String]),
    /// It quotes this, which the evidence does not hold.
    Misquote(&'v str),
}

impl Fault<'_> {
    /// The fault in words for the log: "states 3, which the evidence does not hold". Numbers
    /// and quotes are the model's words: scrubbed and clipped.
    pub fn logged(&self) -> String {
        match self {
            Fault::Bare => "is only its citation".to_string(),
            Fault::Uncited => "cites none of the evidence".to_string(),
            Fault::Ungrounded => {
                "says mostly what the evidence does not (its own words are not the evidence's)".to_string()
            }
            Fault::Unsupported(numbers) => {
                let numbers: Vec<String> = numbers.iter().take(3).map(|n| crate::guard::clip(n, 20)).collect();
                format!("states {}, which the evidence does not hold", numbers.join(", "))
            }
            Fault::Misquote(quote) => {
                format!("quotes \"{}\", which the evidence does not hold", crate::guard::clip(quote, 60))
            }
        }
    }
}

/// Checks `answer` against the sections retrieved in `turn` (the events after the user's
/// `question`); quoting the question back is not a misquote.
pub fn check(answer: &str, question: &str, turn: &[Stored]) -> Verdict {
    let sections = retrieved(turn);
    let bodies: String = sections.iter().map(|s| s.body.as_str()).collect::<Vec<_>>().join("\n");
    Verdict {
        citations: cited(answer, &sections),
        misquotes: misquotes(answer, &sections, question),
        unsupported: support::unsupported_numbers(answer, &bodies, question),
        bare: support::bare(answer),
        grounded: support::grounded(answer, question, &bodies),
        had_hits: sections.iter().any(|s| s.searched),
    }
}

/// Where among `events` the answer recorded as event `seq` is, and its text; none when that
/// event is not an answer.
pub fn answer_at(events: &[Stored], seq: u64) -> Option<(usize, &str)> {
    let at = events.iter().position(|s| s.seq == seq)?;
    match &events[at].event {
        Event::Answer { text, .. } => Some((at, text.as_str())),
        _ => None,
    }
}

/// The citations of the answer recorded as event `answer_seq` among a session's `events`,
/// checked against what its own turn retrieved, as the turn checked them (none when that
/// event is not an answer).
pub fn answer_citations(events: &[Stored], answer_seq: u64) -> Vec<Citation> {
    let Some((at, text)) = answer_at(events, answer_seq) else {
        return Vec::new();
    };
    let before = &events[..at];
    let question = super::state::latest_user_message(before).unwrap_or_default();
    sources_of(text, question, super::state::this_turn(before))
}

/// `citations` with their pages on the published docs `site` (read from its workspace), if one
/// is configured: only the
/// verified ones, whose sections the turn retrieved (so they exist and may be read); a
/// citation the model made up gets no link to paste into a ticket.
pub fn linked(
    mut citations: Vec<Citation>,
    site: Option<(&crate::site::Site, &crate::workspace::Workspace)>,
) -> Vec<Citation> {
    if let Some((site, workspace)) = site {
        for citation in citations.iter_mut().filter(|c| c.verified) {
            citation.url = site.url(workspace, &citation.path, &citation.anchor);
        }
    }
    citations
}

/// The citations of `answer` to `question`, checked against what `turn` retrieved: none for
/// an answer that the docs do not cover the question, whose sections might help and are not
/// its sources.
pub fn sources_of(answer: &str, question: &str, turn: &[Stored]) -> Vec<Citation> {
    if answer.starts_with(crate::tools::NOT_COVERED) {
        return Vec::new();
    }
    check(answer, question, turn).citations
}

/// Every fenced text `search_docs` or `read_file` showed the model in `turn`, in order.
pub fn retrieved(turn: &[Stored]) -> Vec<Section> {
    let mut tools: HashMap<&str, Tool> = HashMap::new();
    let mut out = Vec::new();
    for stored in turn {
        match &stored.event {
            Event::AssistantMessage { tool_calls, .. } => {
                for call in tool_calls {
                    if let Some(tool) = Tool::from_name(&call.name) {
                        tools.insert(call.id.as_str(), tool);
                    }
                }
            }
            Event::ToolResult { call_id, text, decision: Decision::Allowed } => {
                let searched = match tools.get(call_id.as_str()) {
                    Some(Tool::SearchDocs) => true,
                    Some(Tool::ReadFile) => false,
                    _ => continue,
                };
                for found in fence::found_in(text).filter(|f| f.closed) {
                    let heading = if searched { heading_of(found.body) } else { String::new() };
                    out.push(Section { source: found.source, heading, body: found.body.to_string(), searched });
                }
            }
            _ => {}
        }
    }
    out
}

/// The citations `answer` makes, each marked verified when `sections` back it.
pub fn cited(answer: &str, sections: &[Section]) -> Vec<Citation> {
    citations::cited(answer)
        .into_iter()
        .map(|source| {
            let (path, anchor) = source.split_once('#').unwrap_or((source.as_str(), ""));
            let backing = sections.iter().find(|s| s.source == source).or_else(|| {
                // A bare path is backed by any section of the file; an anchor of a file read
                // with read_file, by lines that hold its heading.
                sections.iter().find(|s| {
                    let file = s.source.split('#').next().unwrap_or("");
                    file == path && (anchor.is_empty() || (!s.searched && holds_heading(&s.body, anchor)))
                })
            });
            Citation {
                path: path.to_string(),
                anchor: anchor.to_string(),
                heading: backing.map(|s| s.heading.clone()).unwrap_or_default(),
                verified: backing.is_some(),
                url: None,
                stale: false,
            }
        })
        .collect()
}

/// True when `body` (lines of a file) has a Markdown heading whose anchor is `anchor`.
fn holds_heading(body: &str, anchor: &str) -> bool {
    body.lines()
        .filter_map(|line| line.trim_start().strip_prefix('#'))
        .map(|rest| rest.trim_start_matches('#').trim())
        .any(|heading| crate::index::chunk::slugify(heading) == anchor)
}

/// Quoted spans of `answer` (at least [`MIN_QUOTE_CHARS`], split at ellipses) that neither the
/// retrieved text nor the user's `question` holds, compared without case, emphasis marks or
/// extra spaces.
pub fn misquotes(answer: &str, sections: &[Section], question: &str) -> Vec<String> {
    let mut haystack: String = sections.iter().map(|s| normal(&s.body)).collect::<Vec<_>>().join("\n");
    haystack.push('\n');
    haystack.push_str(&normal(question));
    QUOTED
        .captures_iter(answer)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .filter(|m| m.as_str().chars().count() <= MAX_QUOTE_CHARS)
        .flat_map(|m| m.as_str().split(['…']).flat_map(|part| part.split("...")).map(str::trim))
        .filter(|part| part.chars().count() >= MIN_QUOTE_CHARS && part.contains(' '))
        .filter(|part| !haystack.contains(&normal(part)))
        .map(str::to_string)
        .collect()
}

/// Lower case, without Markdown emphasis and code marks, curly quotes made straight, runs of
/// white space made one space.
fn normal(text: &str) -> String {
    let mapped: String = text
        .chars()
        .filter(|c| !matches!(c, '*' | '`' | '_'))
        .map(|c| match c {
            '’' | '‘' => '\'',
            '“' | '”' => '"',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The heading a search hit's body starts with (`# Refunds > Window`).
fn heading_of(body: &str) -> String {
    body.lines().next().unwrap_or("").trim_start_matches('#').trim().to_string()
}

pub mod invented;
mod lines;
mod numbers;
mod support;
#[cfg(test)]
mod tests;
