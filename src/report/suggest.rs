//! What the page suggests asking when a conversation is empty: first the questions many people
//! asked and the docs answered, read from the session log; then topics from the docs' own
//! headings, for a new deployment whose log says nothing yet.
//!
//! A question is only suggested as it was typed by at least `asked_by` different people (the
//! same words, ignoring case, spacing and the closing `?`): one person's wording, which may
//! name a customer, is never shown to anyone else. A question whose turn was a gap (no hits,
//! retrieval-only, not covered, rated not helpful; [`super::gaps`]) does not count.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::Serialize;

use crate::index::section::Listed;
use crate::session::event::Event;
use crate::session::store::{Log, LogError, Stored};

/// Where a suggestion comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Asked by several people, and answered.
    Asked,
    /// A heading of the docs.
    Docs,
}

/// One question to suggest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Suggestion {
    /// The question the page asks when it is picked.
    pub question: String,
    /// What the page shows: the question, or the heading a topic comes from ("Refunds > Window").
    pub label: String,
    /// Where it comes from.
    pub origin: Origin,
    /// For `asked`: how many different people asked it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub people: Option<usize>,
    /// For `docs`: the section the heading names (`docs/refunds.md#window`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
}

/// The questions of the last `days` days that at least `asked_by` people asked in the same
/// words and the docs answered, most people first (then alphabetically), at most `limit`.
/// `asked_by` 0 suggests none.
pub fn asked(log: &Log, days: u64, asked_by: usize, limit: usize) -> Result<Vec<Suggestion>, LogError> {
    if asked_by == 0 {
        return Ok(Vec::new());
    }
    let since_ms = crate::session::turn::now_ms().saturating_sub(days.saturating_mul(86_400_000));
    // The question's key → its words as first typed, and who asked it.
    let mut counted: BTreeMap<String, (String, HashSet<String>)> = BTreeMap::new();
    for session in log.sessions()? {
        let events = log.events_after(&session, 0)?;
        for (question, who) in answered(&session, &events, since_ms) {
            let entry = counted.entry(key(&question)).or_insert_with(|| (question.clone(), HashSet::new()));
            entry.1.insert(who);
        }
    }
    let mut found: Vec<(String, usize)> = counted
        .into_values()
        .map(|(question, people)| (question, people.len()))
        .filter(|(_, people)| *people >= asked_by)
        .collect();
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(found
        .into_iter()
        .take(limit)
        .map(|(question, people)| Suggestion {
            label: question.clone(),
            question,
            origin: Origin::Asked,
            people: Some(people),
            section: None,
        })
        .collect())
}

/// The questions of one session asked since `since_ms` whose turn has an answer that is no
/// gap, each with who asked (the session's owner; the local CLI's sessions are one person).
fn answered(session: &str, events: &[Stored], since_ms: u64) -> Vec<(String, String)> {
    let owner = events
        .iter()
        .find_map(|s| match &s.event {
            Event::SessionStarted { principal, .. } => Some(principal.clone().unwrap_or_default()),
            _ => None,
        })
        .unwrap_or_default();
    let gaps: BTreeSet<u64> = super::gaps::unanswered(session, events).iter().map(|a| a.at_ms).collect();
    let mut out = Vec::new();
    let mut open: Option<(&str, u64)> = None;
    for stored in events {
        match &stored.event {
            Event::UserMessage { text } => open = Some((text.as_str(), stored.at_ms)),
            Event::Answer { .. } => {
                if let Some((question, at_ms)) = open.take()
                    && at_ms >= since_ms
                    && !gaps.contains(&at_ms)
                    && !question.trim().is_empty()
                {
                    out.push((question.trim().to_string(), owner.clone()));
                }
            }
            _ => {}
        }
    }
    out
}

/// A question's key: lower case, single spaces, without the closing punctuation.
fn key(question: &str) -> String {
    let words = question.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    words.trim_end_matches(['?', '.', '!', ' ']).to_string()
}

/// Up to `limit` topics from the docs' headings: in each file, its first section under the
/// file's title (a heading with a parent, "Refunds > Window"); files nearer the top of `docs/`
/// first, then by path.
pub fn topics(sections: &[Listed], limit: usize) -> Vec<Suggestion> {
    let mut firsts: Vec<&Listed> = Vec::new();
    for section in sections {
        let nested = section.heading.contains(" > ") && !section.anchor.is_empty();
        if nested && firsts.last().is_none_or(|last| last.path != section.path) {
            firsts.push(section);
        }
    }
    firsts.sort_by(|a, b| {
        a.path.matches('/').count().cmp(&b.path.matches('/').count()).then_with(|| a.path.cmp(&b.path))
    });
    firsts
        .into_iter()
        .take(limit)
        .map(|s| Suggestion {
            // The heading's own words: a wrapper ("what do the docs say about…") adds words the
            // docs never use, which the evidence check counts against the answer.
            question: topic(&s.heading),
            label: s.heading.clone(),
            origin: Origin::Docs,
            people: None,
            section: Some(crate::index::source(&s.path, &s.anchor)),
        })
        .collect()
}

/// A heading path as a question: the page's title and the heading itself ("API keys > Key
/// types > Secret keys" is "API keys: Secret keys").
fn topic(heading: &str) -> String {
    match (heading.split_once(" > "), heading.rsplit_once(" > ")) {
        (Some((first, _)), Some((_, last))) => format!("{first}: {last}"),
        _ => heading.to_string(),
    }
}

#[cfg(test)]
mod tests;
