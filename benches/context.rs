//! `cargo bench --bench context`: tokens per request over a long turn, before and after the
//! context budget holds inside a turn (issue 18). The turn is the one that found it: a model that
//! reads a large document four times a step, for eight steps, each result at the most a tool may
//! return (`limits.max_tool_result_bytes`, 12,000 bytes), with `session.context_budget_tokens` at
//! 4,000. The document is the largest of the ERP docs in `../shared/corpora` (a generated one of
//! the same size when the corpus is not there).
//!
//! Before each model call both requests are measured in the same run: *before*, the projection
//! compacted as the turn compacts it (what was sent until now); *after*, the same fitted
//! (`session::fit`). What fitting costs is reported as a ratio against the projection it fits,
//! timed in the same run.

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::path::Path;
use std::time::Instant;

use docs_agent::guard::{fence::Fenced, redact};
use docs_agent::session::compact::{plan_for, tokens};
use docs_agent::session::event::{CallRecord, Event, Origin};
use docs_agent::session::fit;
use docs_agent::session::projection::projected;
use docs_agent::session::store::Stored;
use docs_agent::tools::Decision;

const BUDGET: u64 = 4000;
const STEPS: usize = 8;
const CALLS: usize = 4;
const RESULT_BYTES: usize = 12_000;
const LINES: usize = 200;
const TIMINGS: usize = 200;
const SYSTEM_BYTES: usize = 1_900;

/// The document read, and where it came from.
fn document() -> (String, String) {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpora/business-central-docs");
    let mut largest: Option<(u64, std::path::PathBuf)> = None;
    for entry in walk(&corpus) {
        let size = std::fs::metadata(&entry).map_or(0, |m| m.len());
        if entry.extension().is_some_and(|e| e == "md") && largest.as_ref().is_none_or(|(s, _)| size > *s) {
            largest = Some((size, entry));
        }
    }
    match largest.and_then(|(_, path)| Some((std::fs::read_to_string(&path).ok()?, path))) {
        Some((text, path)) => {
            let shown =
                path.strip_prefix(&corpus).map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
            (text, format!("corpora/business-central-docs/{shown}"))
        }
        None => {
            let text = (1..=3000).map(|n| format!("Line {n}: the general ledger posts each entry.\n")).collect();
            (text, "a generated document (the corpus is not there)".into())
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return out };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Where the `n`th read starts: a fresh part of the document each time, around again at its end.
fn offset(doc: &[&str], n: usize) -> usize {
    1 + (n * LINES) % doc.len().saturating_sub(LINES).max(1)
}

/// What `read_file` returns for [`LINES`] lines from `first`: fenced, with its header, cut to
/// the result cap as the tool cuts it.
fn read_result(doc: &[&str], first: usize) -> String {
    let slice: Vec<&str> = doc.iter().skip(first - 1).take(LINES).copied().collect();
    let header = format!("lines {first}-{} of {}\n", first + slice.len() - 1, doc.len());
    let body = redact::redact_truncated(&slice.join("\n"), RESULT_BYTES.saturating_sub(header.len() + 80));
    Fenced::new("docs/large.md", &format!("{header}{body}")).into_string()
}

fn push(events: &mut Vec<Stored>, event: Event) {
    let seq = events.len() as u64 + 1;
    events.push(Stored { seq, at_ms: 0, event });
}

/// The default session settings with the budget at [`BUDGET`].
fn config() -> Result<docs_agent::config::SessionConfig, String> {
    let flags = vec![("session.context_budget_tokens", BUDGET.to_string())];
    let sources = docs_agent::config::Sources { file: None, env: Default::default(), flags };
    Ok(docs_agent::service::settings::load_isolated(&sources).map_err(|e| e.to_string())?.session)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<(), String> {
    let (text, from) = document();
    let doc: Vec<&str> = text.lines().collect();
    let system =
        format!("You answer questions about a product's docs. {}", "Cite [path#anchor]. ".repeat(SYSTEM_BYTES / 20));
    let tools = docs_agent::tools::specs_tokens(&docs_agent::tools::specs());
    let config = config()?;
    let mut events = Vec::new();
    push(&mut events, Event::UserMessage { text: "Which setup steps does the general ledger need?".into() });
    println!("document: {from} ({} KB, {} lines)", text.len() / 1024, doc.len());
    println!("budget {BUDGET} tokens; {STEPS} steps of {CALLS} read_file calls, {RESULT_BYTES} bytes each at most");
    println!("{:>5} {:>10} {:>10} {:>8} {:>8} {:>5}", "call", "before", "after", "stubbed", "dropped", "cut");
    let (mut befores, mut afters) = (Vec::new(), Vec::new());
    let (mut project_us, mut fit_us) = (Vec::new(), Vec::new());
    for step in 0..=STEPS {
        // Compacted as the turn compacts before each call.
        while let Some(event) =
            plan_for(&config, BUDGET, &system, &events, tokens(&projected(&system, &events).messages))
        {
            push(&mut events, event);
        }
        let started = Instant::now();
        for _ in 0..TIMINGS {
            std::hint::black_box(projected(&system, &events));
        }
        project_us.push(started.elapsed().as_secs_f64() * 1e6 / TIMINGS as f64);
        let projection = projected(&system, &events);
        let before = tokens(&projection.messages) + tools;
        let started = Instant::now();
        for _ in 0..TIMINGS {
            let copy = projection.clone();
            std::hint::black_box(fit::fit(copy, BUDGET - tools, &|_| None).map_err(|o| format!("{o:?}"))?);
        }
        let fitting = started.elapsed().as_secs_f64() * 1e6 / TIMINGS as f64;
        let fitted = fit::fit(projection, BUDGET - tools, &|_| None).map_err(|o| format!("{o:?}"))?;
        fit_us.push(fitting);
        let after = fitted.tokens + tools;
        println!(
            "{:>5} {before:>10} {after:>10} {:>8} {:>8} {:>5}",
            step + 1,
            fitted.stubbed,
            fitted.dropped,
            fitted.cut
        );
        befores.push(before);
        afters.push(after);
        if step == STEPS {
            break;
        }
        let calls: Vec<CallRecord> = (0..CALLS)
            .map(|i| CallRecord {
                id: format!("call_{step}_{i}"),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"docs/large.md\",\"offset\":{}}}", offset(&doc, step * CALLS + i)),
            })
            .collect();
        let results: Vec<Event> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| Event::ToolResult {
                call_id: c.id.clone(),
                text: read_result(&doc, offset(&doc, step * CALLS + i)),
                decision: Decision::Allowed,
            })
            .collect();
        push(
            &mut events,
            Event::AssistantMessage {
                text: String::new(),
                tool_calls: calls,
                usage: None,
                estimated: None,
                origin: Origin::Model,
            },
        );
        for result in results {
            push(&mut events, result);
        }
    }
    let max = |v: &[u64]| v.iter().copied().max().unwrap_or(0);
    println!(
        "largest request: before {} tokens ({:.1}x the budget), after {} ({:.2}x)",
        max(&befores),
        max(&befores) as f64 / BUDGET as f64,
        max(&afters),
        max(&afters) as f64 / BUDGET as f64
    );
    let (p, f) = (median(project_us), median(fit_us));
    println!(
        "fitting a request: median {f:.0} µs, {:.2}x the projection it fits ({p:.0} µs), timed in this run",
        f / p
    );
    Ok(())
}
