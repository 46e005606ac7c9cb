//! What the page suggests asking when a conversation is empty: first the questions many people
//! asked and the docs answered, read from the session log; then topics from the docs' own
//! headings, for a new deployment whose log says nothing yet.
//!
//! A question is only suggested once at least `asked_by` different people besides the one
//! looking asked it in the same words (ignoring case, spacing and the closing `?`), and it is
//! shown in words that many people typed: one person's wording, which may name a customer, is
//! never shown to anyone else. A question whose turn was a gap (no hits, retrieval-only, not
//! covered, rated not helpful; [`super::gaps`]) does not count.

use std::collections::{BTreeMap, BTreeSet};

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

/// A question several people asked in the same words and the docs answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Popular {
    /// Its key: lower case, single spaces, no closing punctuation.
    key: String,
    /// Who asked it (principal names).
    people: BTreeSet<String>,
    /// Each exact wording (trimmed), with who typed it.
    wordings: BTreeMap<String, BTreeSet<String>>,
}

/// The questions of the last `days` days that at least `asked_by` people asked in the same
/// words and the docs answered, read from the sessions active in that time. Only sessions
/// started over HTTP count: each principal name is one person, and the local CLI's sessions
/// (no principal) are nobody's, and only sessions of `collection`. `asked_by` 0 reads nothing.
pub fn popular(log: &Log, days: u64, asked_by: usize, collection: &str) -> Result<Vec<Popular>, LogError> {
    if asked_by == 0 {
        return Ok(Vec::new());
    }
    let since_ms = crate::session::turn::now_ms().saturating_sub(days.saturating_mul(86_400_000));
    let mut counted: BTreeMap<String, Popular> = BTreeMap::new();
    for session in log.active_ids_since(since_ms)? {
        let events = log.events_after(&session, 0)?;
        // Only sessions of this collection: a question asked of other docs is not offered here.
        if crate::session::state::reads_collection(&events) != collection {
            continue;
        }
        for (question, who) in answered(&session, &events, since_ms) {
            let key = key(&question);
            let entry = counted.entry(key.clone()).or_insert_with(|| Popular {
                key,
                people: BTreeSet::new(),
                wordings: BTreeMap::new(),
            });
            entry.people.insert(who.clone());
            entry.wordings.entry(question).or_default().insert(who);
        }
    }
    Ok(counted.into_values().filter(|p| p.people.len() >= asked_by).collect())
}

impl Popular {
    /// Every text of it that could be shown: its key and its wordings.
    pub fn words(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.key.as_str()).chain(self.wordings.keys().map(String::as_str))
    }
}

/// The suggestions for `caller`: the questions at least `asked_by` people other than the
/// caller asked (so nobody learns from the list whether one other person asked what they
/// guessed), most people first, at most `limit`. Each is shown in a wording at least `asked_by`
/// people typed exactly, else in its key's words, never one person's own wording.
pub fn asked(popular: &[Popular], caller: &str, asked_by: usize, limit: usize) -> Vec<Suggestion> {
    if asked_by == 0 {
        return Vec::new();
    }
    let others = |people: &BTreeSet<String>| people.iter().filter(|p| *p != caller).count();
    let mut found: Vec<(&Popular, usize)> =
        popular.iter().map(|p| (p, others(&p.people))).filter(|(_, n)| *n >= asked_by).collect();
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.key.cmp(&b.0.key)));
    found
        .into_iter()
        .take(limit)
        .map(|(p, people)| {
            let shared = p
                .wordings
                .iter()
                .filter(|(_, typed)| others(typed) >= asked_by)
                .max_by_key(|(_, typed)| typed.len())
                .map(|(wording, _)| wording.clone());
            let question = shared.unwrap_or_else(|| p.key.clone());
            Suggestion { label: question.clone(), question, origin: Origin::Asked, people: Some(people), section: None }
        })
        .collect()
}

/// The questions of one session asked since `since_ms` whose turn has an answer that is no
/// gap, each with who asked (the session's owner); none for a session without an owner.
fn answered(session: &str, events: &[Stored], since_ms: u64) -> Vec<(String, String)> {
    let owner = events.iter().find_map(|s| match &s.event {
        Event::SessionStarted { principal, .. } => principal.clone(),
        _ => None,
    });
    let Some(owner) = owner.filter(|o| !o.is_empty()) else { return Vec::new() };
    let gaps: BTreeSet<u64> = super::gaps::unanswered(session, events).iter().map(|a| a.seq).collect();
    let mut out = Vec::new();
    let mut open: Option<(&str, &Stored)> = None;
    for stored in events {
        match &stored.event {
            Event::UserMessage { text } => open = Some((text.as_str(), stored)),
            Event::Answer { .. } => {
                if let Some((question, asked)) = open.take()
                    && asked.at_ms >= since_ms
                    && !gaps.contains(&asked.seq)
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
/// first, then by path; only sections `readable` keeps (asked of the chosen ones only).
pub fn topics(sections: &[Listed], limit: usize, readable: &dyn Fn(&Listed) -> bool) -> Vec<Suggestion> {
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
        .filter(|s| readable(s))
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
