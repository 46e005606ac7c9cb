//! The docs' gaps: the questions the docs could not answer, read from the session log, grouped
//! when they ask the same thing, most asked first, each with the sections that came closest. A
//! docs writer's to-do list.
//!
//! A question is a gap when its turn found nothing (every search said no section matched), ended
//! with the retrieval-only answer (the model's answer could not be checked against the docs),
//! was answered that the docs do not cover it, or its answer was rated not helpful.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::session::event::Event;
use crate::session::store::{Log, LogError, Stored};

/// Why a question is a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Every search of its turn found nothing.
    NoHits,
    /// The turn ended with the retrieval-only answer.
    RetrievalOnly,
    /// The answer said the docs do not cover the question.
    NotCovered,
    /// A person rated the answer not helpful.
    NotHelpful,
}

impl Reason {
    /// The words shown on a terminal.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoHits => "no hits",
            Reason::RetrievalOnly => "retrieval-only answer",
            Reason::NotCovered => "not covered by the docs",
            Reason::NotHelpful => "rated not helpful",
        }
    }
}

/// One unanswered question, as asked.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Asked {
    /// The question.
    pub question: String,
    /// Its session.
    pub session: String,
    /// When it was asked (ms since the epoch).
    pub at_ms: u64,
    /// The seq of its `user_message` event in its session.
    #[serde(skip)]
    #[schema(ignore)]
    pub seq: u64,
    /// Why it is a gap (one or more).
    pub reasons: Vec<Reason>,
    /// What the person said when rating it, if anything.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub comment: String,
    /// The sections its searches found, best first (`path#anchor`).
    #[serde(skip)]
    #[schema(ignore)]
    pub found: Vec<String>,
}

/// Questions that ask the same thing, counted.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Gap {
    /// The question as first asked: the group's name.
    pub question: String,
    /// How many times it was asked.
    pub count: usize,
    /// How many times for each reason.
    pub reasons: BTreeMap<Reason, usize>,
    /// The sections that came closest, most often found first.
    pub closest: Vec<Closest>,
    /// Every time it was asked, oldest first.
    pub asked: Vec<Asked>,
    /// The latest time it was asked (ms since the epoch).
    pub last_ms: u64,
}

/// A section a gap's searches found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Closest {
    /// `path#anchor`.
    pub section: String,
    /// How many of the gap's questions found it.
    pub questions: usize,
}

/// How alike two questions' words must be (Jaccard) to be one gap.
const ALIKE: f64 = 0.5;
/// Closest sections listed per gap.
const CLOSEST: usize = 3;

/// The gaps in every session of `log` that `keep` keeps (`serve`: those of the collections the
/// caller reads), of the questions asked in the last `days` days.
pub fn report(log: &Log, days: u64, keep: &dyn Fn(&[Stored]) -> bool) -> Result<Vec<Gap>, LogError> {
    let since_ms = crate::session::turn::now_ms().saturating_sub(days.saturating_mul(86_400_000));
    let mut asked = Vec::new();
    for session in log.sessions()? {
        let events = log.events_after(&session, 0)?;
        if !keep(&events) {
            continue;
        }
        asked.extend(unanswered(&session, &events).into_iter().filter(|a| a.at_ms >= since_ms));
    }
    Ok(group(asked))
}

/// Times a gap was asked that the JSON lists (the latest; `count` has them all).
const LISTED: usize = 20;

/// The report as JSON: the window, the totals and the first `limit` gaps, each with its latest
/// [`LISTED`] askings.
pub fn json(found: &[Gap], days: u64, limit: usize) -> serde_json::Value {
    serde_json::to_value(summary(found, days, limit)).unwrap_or_default()
}

/// The report a client reads (`GET /v1/reports/gaps`, `report gaps --json`).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Report {
    /// The window: questions of the last `days` days.
    pub days: u64,
    /// Unanswered questions in it, every time asked.
    pub questions: usize,
    /// Gaps: groups of questions that ask the same thing.
    pub groups: usize,
    /// The first `limit` gaps, most asked first, each with its latest askings.
    pub gaps: Vec<Gap>,
}

/// The window, the totals and the first `limit` gaps, each with its latest [`LISTED`] askings.
pub fn summary(found: &[Gap], days: u64, limit: usize) -> Report {
    let gaps: Vec<Gap> = found
        .iter()
        .take(limit)
        .map(|gap| {
            let mut gap = gap.clone();
            let skip = gap.asked.len().saturating_sub(LISTED);
            gap.asked.drain(..skip);
            gap
        })
        .collect();
    Report { days, questions: found.iter().map(|g| g.count).sum::<usize>(), groups: found.len(), gaps }
}

/// The unanswered questions of one session.
pub fn unanswered(session: &str, events: &[Stored]) -> Vec<Asked> {
    // The last rating of each answer.
    let mut rated: BTreeMap<u64, (bool, &str)> = BTreeMap::new();
    for stored in events {
        if let Event::Feedback { answer_seq, helpful, comment } = &stored.event {
            rated.insert(*answer_seq, (*helpful, comment.as_str()));
        }
    }
    let starts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.event, Event::UserMessage { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
    for (n, &start) in starts.iter().enumerate() {
        let end = starts.get(n + 1).copied().unwrap_or(events.len());
        let Event::UserMessage { text } = &events[start].event else { continue };
        let turn = &events[start + 1..end];
        let mut reasons = Vec::new();
        // Only search_docs' results say what the docs hold (not a read of notes/ or AGENTS.md).
        let searches: BTreeSet<&str> = turn
            .iter()
            .filter_map(|s| match &s.event {
                Event::AssistantMessage { tool_calls, .. } => Some(tool_calls),
                _ => None,
            })
            .flatten()
            .filter(|call| call.name == "search_docs")
            .map(|call| call.id.as_str())
            .collect();
        let (mut searched, mut found) = (false, Vec::new());
        for stored in turn {
            if let Event::ToolResult { text, call_id, .. } = &stored.event
                && searches.contains(call_id.as_str())
            {
                let sources: Vec<String> = crate::guard::fence::found_in(text).map(|f| f.source).collect();
                if text.starts_with(crate::tools::NO_HITS) {
                    searched = true;
                }
                for source in sources {
                    if !found.contains(&source) {
                        found.push(source);
                    }
                }
            }
        }
        if searched && found.is_empty() {
            reasons.push(Reason::NoHits);
        }
        let answer = turn.iter().find_map(|s| match &s.event {
            Event::Answer { text, .. } => Some((s.seq, text.as_str())),
            _ => None,
        });
        let mut comment = String::new();
        if let Some((seq, text)) = answer {
            if text.starts_with(crate::model::builtin::UNCHECKED_PREFIX) {
                reasons.push(Reason::RetrievalOnly);
            }
            if crate::session::fallback::AnswerKind::of(text) == crate::session::fallback::AnswerKind::NotCovered {
                reasons.push(Reason::NotCovered);
            }
            if let Some((false, said)) = rated.get(&seq) {
                reasons.push(Reason::NotHelpful);
                comment = said.to_string();
            }
        }
        if !reasons.is_empty() {
            out.push(Asked {
                question: text.trim().to_string(),
                session: session.to_string(),
                at_ms: events[start].at_ms,
                seq: events[start].seq,
                reasons,
                comment,
                found,
            });
        }
    }
    out
}

/// Groups questions that ask the same thing: most asked first, then the most recent.
///
/// A question joins the oldest group whose first question shares at least [`ALIKE`] of its
/// words (Jaccard), as comparing it with every group would find; but only the groups that hold
/// one of its rarest words are compared (prefix filtering, as set-similarity joins do), so the
/// report grows with the questions, not with questions times groups. Why that finds every
/// alike group: with all words in one order (rarest first), two sets sharing `o` words share
/// the first of those, which is among the first `|x| - o + 1` words of each; an alike pair
/// shares at least `ALIKE * |x|` words of either, so the first [`prefix_len`] words of each
/// meet.
pub fn group(mut asked: Vec<Asked>) -> Vec<Gap> {
    asked.sort_by_key(|a| a.at_ms);
    let words: Vec<BTreeSet<String>> = asked.iter().map(|a| crate::index::query::stems(&a.question)).collect();
    // How many questions hold each word: the one order, rarest first.
    let mut held: HashMap<&str, usize> = HashMap::new();
    for word in words.iter().flatten() {
        *held.entry(word.as_str()).or_insert(0) += 1;
    }
    // Each group: the index of its first question, and its members.
    let mut groups: Vec<(usize, Vec<Asked>)> = Vec::new();
    // For each word, the groups whose first question's prefix holds it, oldest first.
    let mut holding: HashMap<&str, Vec<usize>> = HashMap::new();
    // The group of questions with no word at all (alike only to each other).
    let mut wordless: Option<usize> = None;
    for (at, one) in asked.into_iter().enumerate() {
        let Some(set) = words.get(at) else { continue };
        let own = prefix(set, &held);
        let joins = if set.is_empty() {
            wordless
        } else {
            let mut candidates: Vec<usize> =
                own.iter().filter_map(|word| holding.get(word)).flatten().copied().collect();
            candidates.sort_unstable();
            candidates.dedup();
            candidates.into_iter().find(|&g| {
                groups.get(g).and_then(|(first, _)| words.get(*first)).is_some_and(|first| alike(first, set))
            })
        };
        match joins.and_then(|g| groups.get_mut(g)) {
            Some((_, members)) => members.push(one),
            None => {
                let g = groups.len();
                if set.is_empty() {
                    wordless = Some(g);
                }
                for word in own {
                    holding.entry(word).or_default().push(g);
                }
                groups.push((at, vec![one]));
            }
        }
    }
    let mut gaps: Vec<Gap> = groups.into_iter().map(|(_, asked)| gap(asked)).collect();
    gaps.sort_by(|a, b| b.count.cmp(&a.count).then(b.last_ms.cmp(&a.last_ms)));
    gaps
}

/// The first [`prefix_len`] words of `set`, rarest first (by how many questions hold them,
/// then alphabetically: one order for every question).
fn prefix<'a>(set: &'a BTreeSet<String>, held: &HashMap<&str, usize>) -> Vec<&'a str> {
    let mut ordered: Vec<&str> = set.iter().map(String::as_str).collect();
    ordered.sort_by_key(|word| (held.get(word).copied().unwrap_or(0), *word));
    ordered.truncate(prefix_len(ordered.len()));
    ordered
}

/// How many of a question's rarest words two alike questions must share one of: all but the
/// `ALIKE` share it must at least have in common, plus one.
fn prefix_len(words: usize) -> usize {
    let shared = (ALIKE * words as f64).ceil() as usize;
    (words + 1).saturating_sub(shared).min(words)
}

/// A group, counted.
fn gap(asked: Vec<Asked>) -> Gap {
    let mut reasons = BTreeMap::new();
    let mut closest: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for one in &asked {
        for reason in &one.reasons {
            *reasons.entry(*reason).or_insert(0) += 1;
        }
        for (rank, source) in one.found.iter().enumerate() {
            let entry = closest.entry(source.as_str()).or_insert((0, usize::MAX));
            entry.0 += 1;
            entry.1 = entry.1.min(rank);
        }
    }
    let mut closest: Vec<(&str, (usize, usize))> = closest.into_iter().collect();
    closest.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)).then(a.0.cmp(b.0)));
    let closest = closest
        .into_iter()
        .take(CLOSEST)
        .map(|(source, (questions, _))| Closest { section: source.to_string(), questions })
        .collect();
    Gap {
        question: asked.first().map(|a| a.question.clone()).unwrap_or_default(),
        count: asked.len(),
        reasons,
        closest,
        last_ms: asked.iter().map(|a| a.at_ms).max().unwrap_or(0),
        asked,
    }
}

/// True when two questions share at least [`ALIKE`] of their words.
fn alike(a: &BTreeSet<String>, b: &BTreeSet<String>) -> bool {
    if a.is_empty() || b.is_empty() {
        return a == b;
    }
    let shared = a.intersection(b).count() as f64;
    shared / a.union(b).count() as f64 >= ALIKE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::event::{CallRecord, Origin, StopReason};
    use crate::tools::Decision;

    fn stored(seq: u64, event: Event) -> Stored {
        Stored { seq, at_ms: seq * 1000, event }
    }

    /// A session of three turns: found nothing; answered, rated not helpful; answered and fine.
    fn session() -> Vec<Stored> {
        let hit = "1 sections matched, best first:\n<untrusted source=\"docs/refunds.md#window\">\n# Refunds\n...\n</untrusted>";
        // A call of `tool` (its id `c{seq}`), then its result.
        let called = |seq: u64, tool: &str, text: &str| {
            let call = CallRecord { id: format!("c{seq}"), name: tool.into(), arguments: "{}".into() };
            let asked = Event::AssistantMessage {
                text: String::new(),
                tool_calls: vec![call],
                usage: None,
                estimated: None,
                origin: Origin::Harness,
            };
            let result =
                Event::ToolResult { call_id: format!("c{seq}"), text: text.into(), decision: Decision::Allowed };
            [stored(seq, asked), stored(seq + 1, result)]
        };
        let answered = || Event::Stopped { reason: StopReason::Answered, detail: String::new() };
        let mut events = vec![stored(1, Event::UserMessage { text: "How do I export invoices to Xero?".into() })];
        events.extend(called(2, "search_docs", &format!("{} Try other words.", crate::tools::NO_HITS)));
        // A fenced read of something else (a note) does not make the docs' search a hit.
        events.extend(called(4, "read_file", "<untrusted source=\"notes/xero.md\">\nxero\n</untrusted>"));
        events.extend([
            stored(6, Event::Answer { text: "The docs do not say.".into(), revision: None }),
            stored(7, answered()),
            stored(8, Event::UserMessage { text: "how long is the refund window".into() }),
        ]);
        events.extend(called(9, "search_docs", hit));
        events.extend([
            stored(11, Event::Answer { text: "14 days [docs/refunds.md#window]".into(), revision: None }),
            stored(12, answered()),
            stored(13, Event::UserMessage { text: "what are the fees".into() }),
        ]);
        events.extend(called(14, "search_docs", hit));
        events.extend([
            stored(16, Event::Answer { text: "none [docs/refunds.md#window]".into(), revision: None }),
            stored(17, answered()),
            stored(18, Event::Feedback { answer_seq: 11, helpful: false, comment: "annual plans?".into() }),
            stored(19, Event::Feedback { answer_seq: 16, helpful: false, comment: String::new() }),
            stored(20, Event::Feedback { answer_seq: 16, helpful: true, comment: String::new() }),
        ]);
        events
    }

    /// No hits and a bad rating are gaps, with the sections found; a rating changed to helpful
    /// is not.
    #[test]
    fn a_turn_is_a_gap_for_no_hits_or_a_bad_rating() {
        let asked = unanswered("s-1", &session());
        let shown: Vec<(&str, &[Reason])> = asked.iter().map(|a| (a.question.as_str(), a.reasons.as_slice())).collect();
        assert_eq!(
            shown,
            vec![
                ("How do I export invoices to Xero?", &[Reason::NoHits][..]),
                ("how long is the refund window", &[Reason::NotHelpful][..]),
            ]
        );
        assert!(asked[0].found.is_empty());
        assert_eq!(asked[1].found, vec!["docs/refunds.md#window".to_string()]);
        assert_eq!(asked[1].comment, "annual plans?");
    }

    /// The retrieval-only answer is a gap, as this release words it and as earlier ones did
    /// (a session log outlives a release).
    #[test]
    fn the_retrieval_only_answer_is_a_gap() {
        let earlier = "Retrieval-only answer (the model's answer did not cite the docs it was given, or quoted what they do not say, so it is not shown): the best-matching sections of the docs, quoted.";
        for header in [crate::model::builtin::UNCHECKED_HEADER, earlier] {
            let events = vec![
                stored(1, Event::UserMessage { text: "refunds for annual plans".into() }),
                stored(2, Event::Answer { text: format!("{header}\n> quoted"), revision: None }),
            ];
            let asked = unanswered("s-2", &events);
            assert_eq!(asked.len(), 1, "{header}");
            assert_eq!(asked[0].reasons, vec![Reason::RetrievalOnly], "{header}");
        }
        let extractive = crate::model::builtin::EXTRACTIVE_HEADER;
        let events = vec![
            stored(1, Event::UserMessage { text: "refunds for annual plans".into() }),
            stored(2, Event::Answer { text: format!("{extractive}\n> quoted"), revision: None }),
        ];
        assert!(unanswered("s-3", &events).is_empty(), "no model was asked: no gap");
    }

    /// Questions with mostly the same words are one gap, counted; others stay apart; the most
    /// asked comes first, with the sections found most often.
    #[test]
    fn alike_questions_are_grouped_and_counted() {
        let one = |q: &str, at: u64, found: &[&str]| Asked {
            question: q.into(),
            session: "s".into(),
            at_ms: at,
            seq: at,
            reasons: vec![Reason::NoHits],
            comment: String::new(),
            found: found.iter().map(|s| s.to_string()).collect(),
        };
        let gaps = group(vec![
            one("How do I export invoices to Xero?", 1, &["docs/exports.md#csv"]),
            one("What is the SLA?", 2, &[]),
            one("export invoice to xero", 3, &["docs/exports.md#csv", "docs/api.md#invoices"]),
            one("Can I export my invoices to Xero", 4, &["docs/api.md#invoices", "docs/exports.md#csv"]),
        ]);
        let counted: Vec<(&str, usize)> = gaps.iter().map(|g| (g.question.as_str(), g.count)).collect();
        assert_eq!(counted, vec![("How do I export invoices to Xero?", 3), ("What is the SLA?", 1)]);
        let closest: Vec<(&str, usize)> = gaps[0].closest.iter().map(|c| (c.section.as_str(), c.questions)).collect();
        assert_eq!(closest, vec![("docs/exports.md#csv", 3), ("docs/api.md#invoices", 2)]);
        assert_eq!(gaps[0].reasons.get(&Reason::NoHits), Some(&3));
        assert_eq!(gaps[0].last_ms, 4);
    }

    /// The grouping of every question with every group, as it was: the oracle for [`group`].
    fn group_by_scanning(mut asked: Vec<Asked>) -> Vec<Vec<String>> {
        asked.sort_by_key(|a| a.at_ms);
        let mut groups: Vec<(BTreeSet<String>, Vec<String>)> = Vec::new();
        for one in asked {
            let words = crate::index::query::stems(&one.question);
            match groups.iter_mut().find(|(first, _)| alike(first, &words)) {
                Some((_, members)) => members.push(one.question),
                None => groups.push((words, vec![one.question])),
            }
        }
        groups.into_iter().map(|(_, members)| members).collect()
    }

    /// Thousands of questions made of a few words, common and rare (and some with no word at
    /// all): the filtered grouping puts each exactly where comparing with every group does.
    #[test]
    fn grouping_by_rare_words_finds_what_comparing_every_group_finds() {
        let vocabulary = [
            "refund", "window", "invoice", "export", "xero", "annual", "plan", "vat", "tax", "card", "retry",
            "dunning", "webhook", "secret", "key", "approver", "credit", "note", "trial", "sepa",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let mut asked = Vec::new();
        for at in 0..3000 {
            let length = next(6);
            let mut words: Vec<&str> = (0..length).map(|_| vocabulary[next(vocabulary.len()).min(next(20))]).collect();
            if length == 0 && next(2) == 0 {
                words.push("the");
            }
            asked.push(Asked {
                question: words.join(" "),
                session: "s".into(),
                at_ms: at,
                seq: at,
                reasons: vec![Reason::NoHits],
                comment: String::new(),
                found: Vec::new(),
            });
        }
        let want = group_by_scanning(asked.clone());
        assert!(want.len() > 100 && want.iter().any(|g| g.len() > 20), "a mix of groups: {}", want.len());
        let mut got: Vec<Vec<String>> =
            group(asked).into_iter().map(|gap| gap.asked.into_iter().map(|a| a.question).collect()).collect();
        let mut want = want;
        got.sort();
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn the_prefix_holds_all_but_the_shared_half() {
        let lengths: Vec<usize> = (0..7).map(prefix_len).collect();
        assert_eq!(lengths, [0, 1, 2, 2, 3, 3, 4]);
    }
}
