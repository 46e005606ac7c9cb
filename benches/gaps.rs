//! `cargo bench --bench gaps`: `report gaps` over a session log of 100,000 events (issue 35), and
//! the grouping it had before (every question compared with every group), timed in the same run
//! on the same questions. Reported as seconds and as a ratio; nothing is asserted but that both
//! group the questions the same way.
//!
//! The log: sessions of 10 turns, each turn 5 events (the question, a search, its result with no
//! hit, an answer, the stop), in an in-memory log. A third of the questions repeat 200 common
//! ones; the rest are 3 to 9 words from a vocabulary of 4,000, common words far more often
//! than rare ones, as support tickets are.
//!
//! Environment: `BENCH_EVENTS` (100000), `BENCH_SEED` (20261205).

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::process::ExitCode;
use std::time::Instant;

use docs_agent::report::gaps::{self, Asked};
use docs_agent::session::event::{CallRecord, Event, Origin, StopReason};
use docs_agent::session::store::Log;
use docs_agent::tools::Decision;

const TURNS_PER_SESSION: usize = 10;
const EVENTS_PER_TURN: usize = 5;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("gaps bench: {message}");
            ExitCode::FAILURE
        }
    }
}

fn number(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(value) => value.parse().map_err(|_| format!("{name}={value:?} is not a number")),
        Err(_) => Ok(default),
    }
}

/// A small deterministic generator (xorshift), so every run asks the same questions.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    /// A word of the vocabulary, common ones far more often (the smallest of three draws).
    fn word(&mut self) -> String {
        let rank = self.below(4000).min(self.below(4000)).min(self.below(4000));
        format!("w{rank}")
    }

    fn question(&mut self) -> String {
        let length = 3 + self.below(7);
        (0..length).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

fn turn(question: String, n: usize) -> Vec<Event> {
    let id = format!("c{n}");
    vec![
        Event::UserMessage { text: question },
        Event::AssistantMessage {
            text: String::new(),
            tool_calls: vec![CallRecord { id: id.clone(), name: "search_docs".into(), arguments: "{}".into() }],
            usage: None,
            estimated: None,
            origin: Origin::Harness,
        },
        Event::ToolResult {
            call_id: id,
            text: format!("{} Try other words.", docs_agent::tools::NO_HITS),
            decision: Decision::Allowed,
        },
        Event::Answer { text: "The docs do not say.".into(), revision: None },
        Event::Stopped { reason: StopReason::Answered, detail: String::new() },
    ]
}

/// The grouping before issue 35: each question compared with the first question of every
/// group, oldest first. Returns the groups' questions.
fn group_by_scanning(mut asked: Vec<Asked>) -> Vec<Vec<String>> {
    asked.sort_by_key(|a| a.at_ms);
    let mut groups: Vec<(BTreeSet<String>, Vec<String>)> = Vec::new();
    for one in asked {
        let words = docs_agent::index::query::stems(&one.question);
        let alike = |first: &BTreeSet<String>| {
            if first.is_empty() || words.is_empty() {
                return *first == words;
            }
            let shared = first.intersection(&words).count() as f64;
            shared / first.union(&words).count() as f64 >= 0.5
        };
        match groups.iter_mut().position(|(first, _)| alike(first)) {
            Some(at) => groups[at].1.push(one.question),
            None => groups.push((words, vec![one.question])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

fn run() -> Result<(), String> {
    let events = number("BENCH_EVENTS", 100_000)? as usize;
    let mut dice = Dice(number("BENCH_SEED", 20_261_205)? | 1);
    let common: Vec<String> = (0..200).map(|_| dice.question()).collect();
    let mut log = Log::in_memory().map_err(|e| e.to_string())?;
    let turns = events / EVENTS_PER_TURN;
    let started = Instant::now();
    for session in 0..turns.div_ceil(TURNS_PER_SESSION) {
        let mut batch = Vec::new();
        for n in 0..TURNS_PER_SESSION.min(turns - session * TURNS_PER_SESSION) {
            let question = if dice.below(3) == 0 { common[dice.below(common.len())].clone() } else { dice.question() };
            batch.extend(turn(question, n));
        }
        log.append_all(&format!("s-{session:06}"), batch).map_err(|e| e.to_string())?;
    }
    println!(
        "log: {} events in {} turns, written in {:.1} s\n",
        turns * EVENTS_PER_TURN,
        turns,
        started.elapsed().as_secs_f64()
    );

    // Now: the whole report, log read included.
    let started = Instant::now();
    let found = gaps::report(&log, 30, &|_| true).map_err(|e| e.to_string())?;
    let now = started.elapsed().as_secs_f64();

    // Before: the same log read, then the scanning grouping.
    let started = Instant::now();
    let mut asked = Vec::new();
    for session in log.sessions().map_err(|e| e.to_string())? {
        let events = log.events_after(&session, 0).map_err(|e| e.to_string())?;
        asked.extend(gaps::unanswered(&session, &events));
    }
    let read = started.elapsed().as_secs_f64();
    let before = group_by_scanning(asked);
    let then = started.elapsed().as_secs_f64();

    let mut ours: Vec<Vec<String>> =
        found.iter().map(|gap| gap.asked.iter().map(|a| a.question.clone()).collect()).collect();
    let mut theirs = before;
    ours.sort();
    theirs.sort();
    if ours != theirs {
        return Err(format!("the groupings differ: {} groups now, {} before", ours.len(), theirs.len()));
    }
    println!("| grouping | groups | seconds (log read {read:.2} s included) |");
    println!("|---|---:|---:|");
    println!("| every group compared (before) | {} | {then:.2} |", theirs.len());
    println!("| rarest words first (now) | {} | {now:.2} |", ours.len());
    println!("\nbefore / now: {:.1}x; the same groups", then / now);
    Ok(())
}
