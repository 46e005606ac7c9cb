//! `cargo bench --bench evidence`: what the model reads for each question, before and after
//! evidence (issue 32), and how well the evidence's coverage tells questions the docs answer
//! from questions they do not. No model is run: this is the harness's half of an answer.
//!
//! For every answerable question of `bench/questions/{workspace,polar-docs,business-central-docs}.jsonl`
//! (odd ids `dev`, even ids `held-out`), per corpus and half:
//! - **gold in context**: a gold section (a bare gold path: any section of it) is among the
//!   sections the model is given; also at file level;
//! - the bytes of docs text the model reads (before the fences and the question).
//!
//! "before" is retrieve-first as it was up to issue 32: the best of 8 sections, whole where they
//! fit, within 400 tokens (1,600 bytes). "after" is [`Index::evidence`] with the default budget.
//!
//! Then, with the off-topic sets (`*.off-topic.jsonl`: questions the docs do not answer, checked
//! by hand), the share of each kind that a coverage threshold calls "not covered", for a sweep
//! of thresholds: choose on `dev`, check on `held-out`.
//!
//! Environment: `DOCS_AGENT_CORPORA` (default `../shared/corpora` beside the checkout);
//! `BENCH_BUDGET` (evidence tokens, default the configuration's), `BENCH_SECTIONS`,
//! `BENCH_ITEMS`; `BENCH_MISSES=dev` lists the dev questions whose gold is not in the evidence;
//! `BENCH_EMBEDDINGS` and the rest of `benches/shared/embeddings.rs`: hybrid search (its
//! "before" row is then hybrid too).
//!
//! With a reranker (`BENCH_RERANKER` and the rest of `benches/shared/reranker.rs`), every
//! question's evidence is gathered twice, without and with reranking, and "not covered" is
//! decided by the words alone and by the words with the reranker's relevance
//! ([`docs_agent::tools::Weak`]): at the configuration's thresholds (or `BENCH_MIN_RELEVANCE`,
//! `BENCH_COVERS_AT`), and over a grid of both on the dev halves of every set together, which is
//! where the defaults are chosen. The sets of questions in other words
//! (`{set}.paraphrase.jsonl`) are answerable questions too, counted apart.

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cap_std::fs::Dir;
use docs_agent::index::evidence::Budget;
use docs_agent::index::{Index, Rerank};

#[path = "shared/embeddings.rs"]
mod embeddings;
#[path = "shared/questions.rs"]
mod questions;
#[path = "shared/reranker.rs"]
mod reranker;
use questions::Question;

/// `index.max_file_bytes` as the default config sets it.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The sets: name, and where their docs are (`None`: the sample workspace).
const SETS: [&str; 3] = ["workspace", "polar-docs", "business-central-docs"];
/// Retrieve-first before issue 32: candidates, and bytes of sections (400 tokens).
const BEFORE_CANDIDATES: usize = 8;
/// See [`BEFORE_CANDIDATES`].
const BEFORE_BYTES: usize = 1_600;
/// Thresholds swept.
const THRESHOLDS: [f64; 9] = [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7];

type Result<T> = std::result::Result<T, String>;

/// Sums over the questions of one half.
#[derive(Default)]
struct Context {
    n: usize,
    section: usize,
    first: usize,
    file: usize,
    bytes: Vec<usize>,
}

impl Context {
    fn add(&mut self, q: &Question, shown: &[(String, String)], bytes: usize) {
        self.n += 1;
        self.section += usize::from(shown.iter().any(|(p, a)| q.gold_section(p, a)));
        self.first += usize::from(shown.first().is_some_and(|(p, a)| q.gold_section(p, a)));
        self.file += usize::from(shown.iter().any(|(p, _)| q.gold_file(p)));
        self.bytes.push(bytes);
    }

    fn row(&mut self, set: &str, half: &str, system: &str) -> String {
        self.bytes.sort_unstable();
        let n = self.n.max(1) as f64;
        let median = self.bytes.get(self.bytes.len() / 2).copied().unwrap_or(0);
        format!(
            "| {set} | {half} | {system} | {} | {:.0}% | {:.0}% | {:.0}% | {median} |",
            self.n,
            100.0 * self.section as f64 / n,
            100.0 * self.first as f64 / n,
            100.0 * self.file as f64 / n
        )
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench evidence: {e}");
            ExitCode::FAILURE
        }
    }
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn run() -> Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpora = std::env::var_os("DOCS_AGENT_CORPORA").map_or_else(|| root.join("../shared/corpora"), PathBuf::from);
    let defaults = docs_agent::service::settings::load_isolated(&Default::default()).map_err(|e| e.to_string())?;
    let retrieval = &defaults.retrieval;
    let budget = Budget {
        sections: env_or("BENCH_SECTIONS", retrieval.sections),
        files: env_or("BENCH_FILES", retrieval.files),
        bytes: env_or("BENCH_BUDGET", retrieval.context_tokens) * 4,
        items: env_or("BENCH_ITEMS", retrieval.evidence_items),
    };
    let mut gate = docs_agent::tools::Weak::from(retrieval);
    let fraction = |name: &str, default: f64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    gate.min_relevance = fraction("BENCH_MIN_RELEVANCE", gate.min_relevance);
    gate.covers_at = fraction("BENCH_COVERS_AT", gate.covers_at);
    let reranker = reranker::reranker(&retrieval.reranker);
    let misses = std::env::var("BENCH_MISSES").ok();
    eprintln!("evidence budget: {budget:?}");
    let mut context_rows = Vec::new();
    let mut sweep_rows = Vec::new();
    let mut judged: Vec<Judged> = Vec::new();
    let mut rerank_ms: Vec<u64> = Vec::new();
    for set in SETS {
        let folder = if set == "workspace" { root.join("workspace/docs") } else { corpora.join(set) };
        let index = embeddings::embedded(open(&folder)?, set)?;
        let answerable = questions::load(&root, &format!("{set}.jsonl"))?;
        let off_topic = questions::load(&root, &format!("{set}.off-topic.jsonl"))?;
        let paraphrases = format!("{set}.paraphrase.jsonl");
        let paraphrased = match root.join("bench/questions").join(&paraphrases).is_file() {
            true => questions::load(&root, &paraphrases)?,
            false => Vec::new(),
        };
        for half in ["dev", "held-out"] {
            let (mut before, mut after, mut ranked) = (Context::default(), Context::default(), Context::default());
            let (mut para, mut para_ranked) = (Context::default(), Context::default());
            let (mut coverage_on, mut coverage_off) = (Vec::new(), Vec::new());
            let (mut gated_on, mut gated_off) = (Vec::new(), Vec::new());
            let kinds =
                [(Kind::Answerable, &answerable), (Kind::Paraphrase, &paraphrased), (Kind::OffTopic, &off_topic)];
            for (kind, asked) in kinds {
                for q in asked.iter().filter(|q| q.split == half) {
                    if kind == Kind::Answerable {
                        let hits = index.search(&q.question, BEFORE_CANDIDATES).map_err(|e| e.to_string())?;
                        let (shown, bytes) = before_issue_32(&hits);
                        before.add(q, &shown, bytes);
                    }
                    let evidence = index.evidence_with(&q.question, budget, Rerank::Off).map_err(|e| e.to_string())?;
                    let (shown, bytes) = shown_of(&evidence);
                    if kind != Kind::OffTopic
                        && misses.as_deref() == Some(half)
                        && !shown.iter().any(|(p, a)| q.gold_section(p, a))
                    {
                        eprintln!("miss {} ({:.2}): {}\n  gold {:?}", q.id, evidence.coverage, q.question, q.gold);
                        for item in &evidence.items {
                            eprintln!("  got  {} {:.2}", item.source(), item.score);
                        }
                    }
                    let reranked = match &reranker {
                        Some(reranker) => {
                            let rerank = Rerank::With(reranker, docs_agent::index::rerank::WEIGHT);
                            let evidence =
                                index.evidence_with(&q.question, budget, rerank).map_err(|e| e.to_string())?;
                            match &evidence.reranked {
                                docs_agent::index::rerank::Reranked::Scored { ms, .. } => rerank_ms.push(*ms),
                                other => return Err(format!("{}: {other:?}", q.id)),
                            }
                            Some(evidence)
                        }
                        None => None,
                    };
                    match kind {
                        Kind::Answerable => {
                            after.add(q, &shown, bytes);
                            coverage_on.push(evidence.coverage);
                            gated_on.push(gate.judges(&evidence));
                        }
                        Kind::Paraphrase => para.add(q, &shown, bytes),
                        Kind::OffTopic => {
                            coverage_off.push(evidence.coverage);
                            gated_off.push(gate.judges(&evidence));
                        }
                    }
                    if let Some(reranked) = &reranked {
                        let (shown, bytes) = shown_of(reranked);
                        match kind {
                            Kind::Answerable => ranked.add(q, &shown, bytes),
                            Kind::Paraphrase => para_ranked.add(q, &shown, bytes),
                            Kind::OffTopic => {}
                        }
                    }
                    let read = match (&reranker, &reranked) {
                        (Some(reranker), Some(evidence)) if std::env::var_os("BENCH_FEATURES").is_some() => {
                            let text: Vec<String> =
                                evidence.items.iter().map(|i| format!("{}. {}", i.heading, i.text)).collect();
                            reranker.scores(&q.question, &[text.join(" ")]).ok().and_then(|s| s.first().copied())
                        }
                        _ => None,
                    };
                    features(kind.as_str(), q, &evidence, reranked.as_ref(), read);
                    judged.push(Judged {
                        set,
                        half,
                        kind,
                        coverage: evidence.coverage,
                        known: evidence.known,
                        unknown_named: evidence.unknown_named.clone(),
                        relevance: reranked.as_ref().and_then(|e| e.relevance),
                    });
                }
            }
            if before.n > 0 {
                context_rows.push(before.row(set, half, "before (400 tokens of sections)"));
                context_rows.push(after.row(set, half, "evidence"));
            }
            if ranked.n > 0 {
                context_rows.push(ranked.row(set, half, "evidence, reranked"));
            }
            if para.n > 0 {
                context_rows.push(para.row(set, half, "paraphrases: evidence"));
            }
            if para_ranked.n > 0 {
                context_rows.push(para_ranked.row(set, half, "paraphrases: evidence, reranked"));
            }
            let mut cells = vec![format!("{:.0}% / {:.0}%", share(&gated_off), share(&gated_on))];
            cells.extend(
                THRESHOLDS
                    .iter()
                    .map(|t| format!("{:.0}% / {:.0}%", below(&coverage_off, *t), below(&coverage_on, *t))),
            );
            sweep_rows.push(format!(
                "| {set} | {half} | {} / {} | {} |",
                coverage_off.len(),
                coverage_on.len(),
                cells.join(" | ")
            ));
        }
    }
    println!(
        "| set | half | what the model reads | n | gold section in context | gold section first | gold file in context | median bytes of docs |"
    );
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    for row in context_rows {
        println!("{row}");
    }
    println!();
    println!(
        "Called \"not covered\" by the default gate and at each coverage threshold alone: off-topic questions / answerable questions"
    );
    println!();
    let heads: Vec<String> = THRESHOLDS.iter().map(|t| format!("< {t}")).collect();
    println!(
        "| set | half | n (off / on) | the default gate: coverage < {} or known < {} | {} |",
        gate.coverage,
        gate.known,
        heads.join(" | ")
    );
    println!("|---|---|---|{}", "---:|".repeat(THRESHOLDS.len() + 1));
    for row in sweep_rows {
        println!("{row}");
    }
    if reranker.is_some() {
        gate_tables(&judged, gate);
        let (median, p90) = reranker::median_p90(&mut rerank_ms);
        eprintln!(
            "reranking took {median} ms per question (median), {p90} ms (90th percentile), {} questions",
            rerank_ms.len()
        );
    }
    Ok(())
}

/// What a question is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A support ticket the docs answer.
    Answerable,
    /// A question the docs answer, asked in words they do not use.
    Paraphrase,
    /// A question the docs do not answer.
    OffTopic,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Answerable => "on",
            Kind::Paraphrase => "para",
            Kind::OffTopic => "off",
        }
    }
}

/// What the gate reads of one question's evidence.
struct Judged {
    set: &'static str,
    half: &'static str,
    kind: Kind,
    coverage: f64,
    known: f64,
    /// The question's words the docs never use that it writes as names.
    unknown_named: Vec<String>,
    /// The reranker's relevance of the best section.
    relevance: Option<f64>,
}

/// Minimum relevances and "covers at" relevances tried on the dev halves.
const MIN_RELEVANCES: [f64; 8] = [0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1];
/// See [`MIN_RELEVANCES`].
const COVERS_AT: [f64; 6] = [0.05, 0.1, 0.2, 0.3, 0.5, 1.0];

/// "Not covered" with the reranker: per set and half at `gate`, then the dev halves of every
/// set together over the grid of thresholds (off-topic caught / answerable and paraphrases
/// wrongly called not covered).
fn gate_tables(judged: &[Judged], gate: docs_agent::tools::Weak) {
    let rate = |items: &[&Judged], kind: Kind, gate: docs_agent::tools::Weak, reranked: bool| -> (usize, usize) {
        let of: Vec<&&Judged> = items.iter().filter(|j| j.kind == kind).collect();
        let weak = of.iter().filter(|j| weak(j, gate, reranked)).count();
        (weak, of.len())
    };
    let cell = |(weak, n): (usize, usize)| match n {
        0 => "-".to_string(),
        n => format!("{:.0}% ({weak}/{n})", 100.0 * weak as f64 / n as f64),
    };
    println!();
    println!(
        "\"Not covered\" with the reranker (min_relevance {}, covers_at {}), against the words alone: off-topic caught, answerable and paraphrased called not covered",
        gate.min_relevance, gate.covers_at
    );
    println!();
    println!("| set | half | gate | off-topic | answerable | paraphrases |");
    println!("|---|---|---|---:|---:|---:|");
    for set in SETS {
        for half in ["dev", "held-out"] {
            let items: Vec<&Judged> = judged.iter().filter(|j| j.set == set && j.half == half).collect();
            for (name, reranked) in [("words", false), ("words and reranker", true)] {
                println!(
                    "| {set} | {half} | {name} | {} | {} | {} |",
                    cell(rate(&items, Kind::OffTopic, gate, reranked)),
                    cell(rate(&items, Kind::Answerable, gate, reranked)),
                    cell(rate(&items, Kind::Paraphrase, gate, reranked))
                );
            }
        }
    }
    println!();
    println!(
        "Dev halves of every set together, by min_relevance (rows) and covers_at (columns): off-topic caught / answerable / paraphrases called not covered"
    );
    println!();
    let heads: Vec<String> = COVERS_AT.iter().map(|c| format!("covers_at {c}")).collect();
    println!("| min_relevance | {} |", heads.join(" | "));
    println!("|---:|{}", "---|".repeat(COVERS_AT.len()));
    let dev: Vec<&Judged> = judged.iter().filter(|j| j.half == "dev").collect();
    for min in MIN_RELEVANCES {
        let cells: Vec<String> = COVERS_AT
            .iter()
            .map(|covers| {
                let g = docs_agent::tools::Weak { min_relevance: min, covers_at: covers.max(min), ..gate };
                let pct = |(weak, n): (usize, usize)| 100.0 * weak as f64 / n.max(1) as f64;
                format!(
                    "{:.0}% / {:.0}% / {:.0}%",
                    pct(rate(&dev, Kind::OffTopic, g, true)),
                    pct(rate(&dev, Kind::Answerable, g, true)),
                    pct(rate(&dev, Kind::Paraphrase, g, true))
                )
            })
            .collect();
        println!("| {min} | {} |", cells.join(" | "));
    }
}

/// Whether `gate` calls the question's evidence too weak, as [`docs_agent::tools::Weak::why`]
/// does: with the reranker's relevance when `reranked`, else by the words alone.
fn weak(j: &Judged, gate: docs_agent::tools::Weak, reranked: bool) -> bool {
    let evidence = docs_agent::index::evidence::Evidence {
        coverage: j.coverage,
        known: j.known,
        unknown_named: j.unknown_named.clone(),
        relevance: j.relevance.filter(|_| reranked),
        ..Default::default()
    };
    gate.judges(&evidence)
}

/// The sections evidence shows, and the bytes of docs in it.
fn shown_of(evidence: &docs_agent::index::evidence::Evidence) -> (Vec<(String, String)>, usize) {
    let shown = evidence.items.iter().map(|i| (i.path.clone(), i.anchor.clone())).collect();
    (shown, evidence.items.iter().map(|i| i.text.len() + i.heading.len()).sum())
}

/// With `BENCH_FEATURES` set, one tab-separated line per question on stderr: kind, id, half,
/// coverage, known, best, the reranker's relevance of the best section and of the evidence as
/// the model reads it (`-` without one), the question's words the docs never use (comma-separated),
/// question.
fn features(
    kind: &str,
    q: &Question,
    evidence: &docs_agent::index::evidence::Evidence,
    reranked: Option<&docs_agent::index::evidence::Evidence>,
    read: Option<f64>,
) {
    if std::env::var_os("BENCH_FEATURES").is_some() {
        let relevance = reranked.and_then(|e| e.relevance).map_or("-".to_string(), |r| format!("{r:.4}"));
        let read = read.map_or("-".to_string(), |r| format!("{r:.4}"));
        eprintln!(
            "F\t{kind}\t{}\t{}\t{:.3}\t{:.3}\t{:.3}\t{relevance}\t{read}\t{}\t{}",
            q.id,
            q.split,
            evidence.coverage,
            evidence.known,
            evidence.best,
            evidence.unknown.join(","),
            q.question
        );
    }
}

/// The share (percent) of `flags` that are set.
fn share(flags: &[bool]) -> f64 {
    100.0 * flags.iter().filter(|f| **f).count() as f64 / flags.len().max(1) as f64
}

/// The share (percent) of `values` below `threshold`.
fn below(values: &[f64], threshold: f64) -> f64 {
    100.0 * values.iter().filter(|v| **v < threshold).count() as f64 / values.len().max(1) as f64
}

/// The sections retrieve-first showed before issue 32, and their bytes: whole sections in rank
/// order while at least 200 bytes of the next fit in 1,600.
fn before_issue_32(hits: &[docs_agent::index::Hit]) -> (Vec<(String, String)>, usize) {
    let mut left = BEFORE_BYTES;
    let (mut shown, mut bytes) = (Vec::new(), 0);
    for hit in hits {
        let overhead = hit.source().len() + 40;
        if !shown.is_empty() && left < overhead + 200 {
            break;
        }
        let size = (hit.heading.len() + hit.excerpt.len()).min(left.saturating_sub(overhead));
        left = left.saturating_sub(size + overhead);
        bytes += size;
        shown.push((hit.path.clone(), hit.anchor.clone()));
    }
    (shown, bytes)
}

fn open(folder: &Path) -> Result<Index> {
    let docs = Dir::open_ambient_dir(folder, cap_std::ambient_authority()).map_err(|e| {
        format!("cannot open {} ({e}); set DOCS_AGENT_CORPORA to the folder holding the corpora", folder.display())
    })?;
    Index::build(&docs, docs_agent::index::Limits::file_only(MAX_FILE_BYTES))
        .map_err(|e| format!("{}: {e}", folder.display()))
}
