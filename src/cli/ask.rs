//! A one-shot question (`docs-agent "question"`), and the commands that read the docs without
//! a model: `search` and `check`.

use std::io::Write;

use super::live::{self, Live};
use super::{Exit, Failure, StreamWhen, TraceWhen, open, require_docs, warn_skipped};
use crate::agent::{AskError, Stop};
use crate::config::Config;
use crate::session::progress::TurnEvent;
use crate::trace::Trace;
use crate::workspace::approval::{Approver, Terminal};
use crate::{check as checks, guard};

/// `docs-agent "question"`: the answer on stdout (as it is written, on a terminal), the trace
/// on stderr.
pub fn ask(config: Config, question: &str, when: StreamWhen, trace: TraceWhen) -> Result<Exit, Failure> {
    if question.trim().is_empty() {
        return Err((Exit::Usage, "the question is empty; ask something about the docs".into()));
    }
    let approver = Approver::new(&config, Terminal::detect());
    let harness = open(&config)?;
    require_docs(&harness, &config)?;
    super::ops::pull_if_missing(&config.llm)?;
    let mut trace = Trace::new(live::Stderr, config.limits.trace_result_chars).with_format(trace.format());
    warn_skipped(&harness, &mut trace);
    let mut live = Live::new(when, &config.allowed_link_hosts);
    let mut observe = |event: &TurnEvent<'_>| {
        // The view first: a progress line it ends is gone before the trace line is written.
        live.hear(event);
        trace.observe(event);
    };
    let run = harness.ask_blocking(&config, approver, question, Some(&mut observe)).map_err(|e| match e {
        AskError::Model(error) => (Exit::Model, error.to_string()),
        other => (Exit::Failure, other.to_string()),
    })?;
    match run.stop {
        Stop::Answered => {
            live.answered(&run.answer, &run.citations);
            Ok(super::report_failed_writes(&super::failed_writes(&run.events)).unwrap_or(Exit::Ok))
        }
        Stop::StepLimit | Stop::TimeLimit => Err((Exit::Limit, run.answer)),
        Stop::Budget => Err((Exit::Budget, run.answer)),
        Stop::ModelError | Stop::Cancelled => Err((Exit::Failure, run.answer)),
    }
}

/// `docs-agent search QUERY`: ranked sections, no model.
pub fn search(config: Config, query: &str, limit: usize, trace: TraceWhen) -> Result<Exit, Failure> {
    let harness = open(&config)?;
    require_docs(&harness, &config)?;
    let mut trace =
        Trace::new(crate::guard::sink::stderr(), config.limits.trace_result_chars).with_format(trace.format());
    warn_skipped(&harness, &mut trace);
    let hits = harness.index.current().search(query, limit.max(1)).map_err(|e| (Exit::Failure, e.to_string()))?;
    if hits.is_empty() {
        // Like grep: nothing found is exit 1, said on stderr so a script can tell it from a hit.
        return Err((Exit::Failure, format!("no section matches {query:?}; try other words")));
    }
    let mut out = crate::guard::sink::stdout();
    for hit in hits {
        let line = format!("{}  {}  {:.3}", hit.source(), hit.heading, hit.score);
        let _ = writeln!(out, "{}", guard::scrub(&line));
    }
    Ok(Exit::Ok)
}

/// `docs-agent search --evidence`: the evidence a model would be given for a question, numbered
/// as the model sees it, and how much of the question it covers.
pub fn evidence(config: Config, question: &str, trace: TraceWhen) -> Result<Exit, Failure> {
    let harness = open(&config)?;
    require_docs(&harness, &config)?;
    let mut trace =
        Trace::new(crate::guard::sink::stderr(), config.limits.trace_result_chars).with_format(trace.format());
    warn_skipped(&harness, &mut trace);
    let budget = crate::tools::evidence_budget(&config.retrieval);
    let evidence = harness.index.current().evidence(question, budget).map_err(|e| (Exit::Failure, e.to_string()))?;
    if evidence.items.is_empty() {
        return Err((Exit::Failure, format!("no section matches {question:?}; try other words")));
    }
    let mut out = crate::guard::sink::stdout();
    let weak = crate::tools::Weak::from(&config.retrieval);
    let verdict = if weak.judges(&evidence) {
        "too weak: the answer would be that the docs do not cover it"
    } else {
        "enough to ask the model"
    };
    let _ = writeln!(
        out,
        "the evidence holds {:.2} of the question's weight (retrieval.min_coverage {}), the docs {:.2} \
         (retrieval.min_known {}): {verdict}",
        evidence.coverage, weak.coverage, evidence.known, weak.known
    );
    if let Some(relevance) = evidence.relevance {
        let _ = writeln!(
            out,
            "the reranker rates the most relevant section {relevance:.2} (retrieval.reranker.min_relevance {}, \
             covers_at {})",
            weak.min_relevance, weak.covers_at
        );
    }
    if let Some(note) = evidence.reranked.note() {
        let _ = writeln!(out, "{}", guard::scrub(&note));
    }
    if let Some((source, standing)) = &evidence.nearest {
        let line = format!("nearest by meaning: {source}, {standing:.2} standard deviations above the mean");
        let _ = writeln!(out, "{}", guard::scrub(&line));
    }
    if !evidence.unknown.is_empty() {
        let _ = writeln!(out, "words of the question no section holds: {}", guard::scrub(&evidence.unknown.join(", ")));
        let _ = if evidence.unknown_named.is_empty() {
            writeln!(out, "none of them is written as a name: retrieval.min_known does not apply")
        } else {
            writeln!(out, "of them, names: {}", guard::scrub(&evidence.unknown_named.join(", ")))
        };
    }
    for (n, item) in evidence.items.iter().enumerate() {
        let _ = writeln!(out, "\n[{}] {}  {}  {:.3}", n + 1, item.source(), item.heading, item.score);
        for line in item.text.lines() {
            let _ = writeln!(out, "    {}", guard::scrub(line));
        }
    }
    Ok(Exit::Ok)
}

/// `docs-agent check`: every problem in the workspace, one line each.
pub fn check(config: Config) -> Result<Exit, Failure> {
    // check never searches: no embedding model is pulled or asked.
    let harness = crate::agent::Harness::open_unembedded(&config).map_err(|e| (Exit::Failure, e.to_string()))?;
    let report = checks::check(&harness, &config);
    let mut out = crate::guard::sink::stdout();
    for problem in &report.problems {
        let _ = writeln!(out, "{}", guard::scrub(&problem.to_string()));
    }
    for file in &report.skipped {
        let _ = writeln!(out, "{}", guard::scrub(&file.to_string()));
    }
    for note in &report.info {
        let _ = writeln!(out, "info: {}", guard::scrub(&note.to_string()));
    }
    let _ = writeln!(out, "{}", report.summary);
    let index = match config.index_store() {
        crate::config::IndexStore::File(file) => file.display().to_string(),
        crate::config::IndexStore::Memory => "in memory".into(),
    };
    let sessions = match config.session.log_url.trim().is_empty() {
        true => format!(
            "the command line's sessions {}; serve's {}",
            config.session.log_path.display(),
            config.serve_log_path().display()
        ),
        false => "sessions in PostgreSQL (session.log_url)".into(),
    };
    let state = format!("state: {} (index {index}; {sessions})", config.state_dir.display());
    let _ = writeln!(out, "{}", guard::scrub(&state));
    Ok(if report.problems.is_empty() { Exit::Ok } else { Exit::Failure })
}
