//! `cargo bench --bench retrieval`: how often search finds the right file and section for
//! questions written as support tickets (`bench/questions/{polar-docs,business-central-docs}.jsonl`,
//! each with its gold files and sections, odd ids `dev`, even ids `held-out`), beside two plain
//! FTS5 indexes of the same sections built in the same run: `unicode61` with no weights, and the
//! same with `porter`, each searched with the question's words OR-ed.
//!
//! Measured per corpus and half: R@1 and R@5 (a top-1 / top-5 section is in a gold file),
//! MRR@10 (over files), and section hits at 1 and 5 (the section itself is gold; a gold entry
//! without `#anchor` accepts any section of its file). Tune on `dev` only; `held-out` is the check.
//!
//! Environment: `DOCS_AGENT_CORPORA` (default `../shared/corpora` beside the checkout);
//! `BENCH_MISSES=dev` lists the dev questions whose top section is not in a gold file.
//!
//! Hybrid search: with `BENCH_EMBEDDINGS=http://127.0.0.1:PORT/v1` (an OpenAI-compatible
//! embedding server, `bench/embeddings/kit.sh serve` starts one) and `BENCH_EMBEDDINGS_MODEL`,
//! the table also has the vectors alone and each fusion tried ([`FUSIONS`]). `BENCH_QUERY_PREFIX`,
//! `BENCH_PASSAGE_PREFIX` and `BENCH_INPUT_CHARS` are the model's `[retrieval.embeddings]`
//! settings. Vectors are cached in `target/bench-vectors/` by model and text, so a second run
//! embeds nothing; the time to embed a question is printed on stderr. `BENCH_CORPORA=polar-docs`
//! measures one corpus (a comma-separated list).
//!
//! Reranking: with `BENCH_RERANKER=http://127.0.0.1:PORT/v1` (a `/v1/rerank` server,
//! `../shared/reranker/serve-reranker.sh` starts one) the table also has each system reranked
//! (keywords, and the default fusion with vectors), the best `BENCH_RERANK_CANDIDATES` of its
//! sections scored once and ordered with each weight of `BENCH_RERANK_WEIGHTS` (default
//! `0.5,0.8,1.0`; the reranker's share of a section's new score). The time the scores took is
//! printed on stderr (median and 90th percentile per question).
//!
//! Each corpus is asked its support tickets (`{corpus}.jsonl`) and, when there is one, its set
//! of questions in other words (`{corpus}.paraphrase.jsonl`); `workspace` is the sample
//! workspace's docs.

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::ExitCode;

use cap_std::fs::Dir;
use docs_agent::index::rank::Fusion;
use docs_agent::index::{Index, Rerank, formats};
use rusqlite::{Connection, params};

#[path = "shared/embeddings.rs"]
mod embeddings;
#[path = "shared/questions.rs"]
mod questions;
#[path = "shared/reranker.rs"]
mod reranker;
use questions::Question;

/// `index.max_file_bytes` as the default config sets it.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Sections looked at per question.
const DEPTH: usize = 10;
/// The corpora, by folder name (`workspace`: the sample workspace's docs).
const CORPORA: [&str; 3] = ["workspace", "polar-docs", "business-central-docs"];

type Result<T> = std::result::Result<T, String>;

/// The fusions compared with an embedding model, by name.
const FUSIONS: [(&str, Fusion); 7] = [
    ("vectors only", Fusion::Weighted { vector_weight: 1.0 }),
    ("hybrid rrf 60", Fusion::Rrf { k: 60.0, vector_weight: 1.0 }),
    ("hybrid rrf 60, vectors 0.5", Fusion::Rrf { k: 60.0, vector_weight: 0.5 }),
    ("hybrid rrf 10", Fusion::Rrf { k: 10.0, vector_weight: 1.0 }),
    ("hybrid weighted 0.3", Fusion::Weighted { vector_weight: 0.3 }),
    ("hybrid weighted 0.5", Fusion::Weighted { vector_weight: 0.5 }),
    ("hybrid weighted 0.7", Fusion::Weighted { vector_weight: 0.7 }),
];

/// Sums of the measures over questions.
#[derive(Default, Clone, Copy)]
struct Score {
    n: usize,
    r1: f64,
    r5: f64,
    mrr: f64,
    s1: f64,
    s5: f64,
}

impl Score {
    fn add(&mut self, question: &Question, ranked: &[(String, String)]) {
        self.n += 1;
        let file_rank = ranked.iter().position(|(p, _)| question.gold_file(p));
        let section_rank = ranked.iter().position(|(p, a)| question.gold_section(p, a));
        self.r1 += f64::from(u8::from(file_rank == Some(0)));
        self.r5 += f64::from(u8::from(file_rank.is_some_and(|r| r < 5)));
        self.mrr += file_rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0));
        self.s1 += f64::from(u8::from(section_rank == Some(0)));
        self.s5 += f64::from(u8::from(section_rank.is_some_and(|r| r < 5)));
    }

    fn row(&self, corpus: &str, half: &str, system: &str) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "| {corpus} | {half} | {system} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            self.n,
            self.r1 / n,
            self.r5 / n,
            self.mrr / n,
            self.s1 / n,
            self.s5 / n
        )
    }
}

/// A plain FTS5 index of the same sections: one text column, no weights.
struct Plain {
    conn: Connection,
}

impl Plain {
    fn build(docs: &Dir, tokenizer: &str) -> Result<Plain> {
        let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
        conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE s USING fts5(text, path UNINDEXED, anchor UNINDEXED, tokenize = '{tokenizer}');"
        ))
        .map_err(|e| e.to_string())?;
        let walked = docs_agent::index::ahead::walk_docs(docs, docs_agent::index::Limits::file_only(MAX_FILE_BYTES));
        let tx = conn.unchecked_transaction().map_err(|e| e.to_string())?;
        for file in &walked.files {
            for c in formats::chunk_file(&file.path, &file.text) {
                tx.execute(
                    "INSERT INTO s (text, path, anchor) VALUES (?1, ?2, ?3)",
                    params![format!("{}\n{}", c.heading_text(), c.body), file.path, c.anchor],
                )
                .map_err(|e| e.to_string())?;
            }
        }
        tx.commit().map_err(|e| e.to_string())?;
        Ok(Plain { conn })
    }

    fn search(&self, question: &str) -> Result<Vec<(String, String)>> {
        let words: Vec<String> = question
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| format!("\"{}\"", w.to_lowercase()))
            .collect();
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT path, anchor FROM s WHERE s MATCH ?1 ORDER BY bm25(s) LIMIT ?2")
            .map_err(|e| e.to_string())?;
        let rows = stmt
            .query_map(params![words.join(" OR "), DEPTH as i64], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| e.to_string())?;
        rows.collect::<std::result::Result<_, _>>().map_err(|e| e.to_string())
    }
}

/// Rows with a vector.
fn semantic_rows(index: &Index) -> usize {
    index.semantic.as_ref().map_or(0, |s| s.vectors.len())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench retrieval: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let corpora = std::env::var_os("DOCS_AGENT_CORPORA").map_or_else(|| root.join("../shared/corpora"), PathBuf::from);
    let misses = std::env::var("BENCH_MISSES").ok();
    let defaults = docs_agent::service::settings::load_isolated(&Default::default()).map_err(|e| e.to_string())?;
    let reranker = reranker::reranker(&defaults.retrieval.reranker);
    let weights: Vec<f64> = std::env::var("BENCH_RERANK_WEIGHTS")
        .unwrap_or_else(|_| "0.5,0.8,1.0".into())
        .split(',')
        .filter_map(|w| w.trim().parse().ok())
        .collect();
    println!("| corpus | half | system | n | R@1 | R@5 | MRR@10 | section@1 | section@5 |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|");
    let only = std::env::var("BENCH_CORPORA").unwrap_or_default();
    let mut rerank_ms: Vec<u64> = Vec::new();
    for corpus in CORPORA.into_iter().filter(|c| only.is_empty() || only.split(',').any(|o| o == *c)) {
        let path = if corpus == "workspace" { root.join("workspace/docs") } else { corpora.join(corpus) };
        let docs = Dir::open_ambient_dir(&path, cap_std::ambient_authority()).map_err(|e| {
            format!("cannot open corpus {} ({e}); set DOCS_AGENT_CORPORA to the folder holding it", path.display())
        })?;
        let mut sets = vec![(corpus.to_string(), questions::load(&root, &format!("{corpus}.jsonl"))?)];
        let paraphrases = format!("{corpus}.paraphrase.jsonl");
        if root.join("bench/questions").join(&paraphrases).is_file() {
            sets.push((format!("{corpus} paraphrase"), questions::load(&root, &paraphrases)?));
        }
        eprintln!(
            "{corpus}: indexing for 3 systems, {} questions...",
            sets.iter().map(|(_, q)| q.len()).sum::<usize>()
        );
        let index = Index::build(&docs, docs_agent::index::Limits::file_only(MAX_FILE_BYTES))
            .map_err(|e| format!("{corpus}: {e}"))?;
        let index = embeddings::embedded(index, corpus)?;
        let plain = Plain::build(&docs, "unicode61")?;
        let porter = Plain::build(&docs, "porter unicode61")?;
        for (set, asked) in &sets {
            for half in ["dev", "held-out"] {
                let (mut ours, mut base, mut stem) = (Score::default(), Score::default(), Score::default());
                let mut fused = [Score::default(); FUSIONS.len()];
                // Reranked: keywords, then (with vectors) the default fusion; one score per weight.
                let mut reranked = vec![vec![Score::default(); weights.len()]; 2];
                let (mut query_ms, mut scan_ms): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
                for q in asked.iter().filter(|q| q.split == half) {
                    if let Some(semantic) = &index.semantic {
                        let started = std::time::Instant::now();
                        let vector = semantic.embedder.query(&q.question).map_err(|e| e.to_string())?;
                        query_ms.push(started.elapsed().as_secs_f64() * 1e3);
                        // The exact scan over every row's vector, alone (search asks for 80 rows).
                        let started = std::time::Instant::now();
                        std::hint::black_box(semantic.vectors.nearest(&vector, 80));
                        scan_ms.push(started.elapsed().as_secs_f64() * 1e3);
                        for ((_, fusion), score) in FUSIONS.iter().zip(fused.iter_mut()) {
                            let hits = index.search_fused(&q.question, DEPTH, *fusion).map_err(|e| e.to_string())?;
                            score.add(q, &ranked_of(hits));
                        }
                    }
                    // With vectors, a weight of 0 on them is today's keyword ranking.
                    let keywords = Fusion::Weighted { vector_weight: 0.0 };
                    let hits = match index.semantic {
                        Some(_) => index.search_fused(&q.question, DEPTH, keywords),
                        None => index.search(&q.question, DEPTH),
                    }
                    .map_err(|e| e.to_string())?;
                    let ranked = ranked_of(hits);
                    if misses.as_deref() == Some(half) && !ranked.first().is_some_and(|(p, _)| q.gold_file(p)) {
                        let top: Vec<String> = ranked.iter().take(3).map(|(p, a)| format!("{p}#{a}")).collect();
                        eprintln!("miss {}: {}\n  gold {:?}\n  got  {top:?}", q.id, q.question, q.gold);
                    }
                    ours.add(q, &ranked);
                    base.add(q, &plain.search(&q.question)?);
                    stem.add(q, &porter.search(&q.question)?);
                    if let Some(reranker) = &reranker {
                        let mut systems = vec![keywords];
                        if index.semantic.is_some() {
                            systems.push(index.fusion());
                        }
                        for (fusion, scores) in systems.into_iter().zip(reranked.iter_mut()) {
                            let wanted = DEPTH.max(reranker.candidates());
                            let found = index
                                .search_reranked(&q.question, wanted, fusion, Rerank::Off)
                                .map_err(|e| e.to_string())?;
                            let read = found.hits.len().min(reranker.candidates());
                            let documents: Vec<String> =
                                found.hits[..read].iter().map(|h| reranker.document(h)).collect();
                            let started = std::time::Instant::now();
                            let relevance = reranker.scores(&q.question, &documents).map_err(|e| e.to_string())?;
                            rerank_ms.push(u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX));
                            for (weight, score) in weights.iter().zip(scores.iter_mut()) {
                                let hits = docs_agent::index::rerank::reorder(found.hits.clone(), &relevance, *weight);
                                score.add(q, &ranked_of(hits));
                            }
                            if misses.as_deref() == Some(half) {
                                rerank_misses(q, &found.hits, &relevance);
                            }
                        }
                    }
                }
                if ours.n == 0 {
                    continue;
                }
                println!("{}", ours.row(set, half, "docs-agent keywords"));
                if index.semantic.is_some() {
                    for ((name, _), score) in FUSIONS.iter().zip(&fused) {
                        println!("{}", score.row(set, half, name));
                    }
                    query_ms.sort_by(f64::total_cmp);
                    scan_ms.sort_by(f64::total_cmp);
                    let median = |v: &[f64]| v.get(v.len() / 2).copied().unwrap_or(0.0);
                    eprintln!(
                        "{set} {half}: a question's vector took {:.1} ms (median), {:.1} ms (max); the scan of {} vectors {:.2} ms (median), {:.2} ms (max)",
                        median(&query_ms),
                        query_ms.last().copied().unwrap_or(0.0),
                        semantic_rows(&index),
                        median(&scan_ms),
                        scan_ms.last().copied().unwrap_or(0.0)
                    );
                }
                if reranker.is_some() {
                    let names = ["keywords", "hybrid (default fusion)"];
                    let systems = if index.semantic.is_some() { 2 } else { 1 };
                    for (name, scores) in names.iter().zip(&reranked).take(systems) {
                        for (weight, score) in weights.iter().zip(scores) {
                            println!("{}", score.row(set, half, &format!("{name} + rerank {weight}")));
                        }
                    }
                }
                println!("{}", base.row(set, half, "plain FTS5"));
                println!("{}", stem.row(set, half, "FTS5 porter"));
            }
        }
    }
    if !rerank_ms.is_empty() {
        let (median, p90) = reranker::median_p90(&mut rerank_ms);
        eprintln!(
            "reranking took {median} ms per question (median), {p90} ms (90th percentile), {} questions",
            rerank_ms.len()
        );
    }
    Ok(())
}

/// With `BENCH_MISSES`, a question whose first file the reranker (alone) changed from or to a
/// gold one: the candidates with their search order and relevance.
fn rerank_misses(q: &Question, hits: &[docs_agent::index::Hit], relevance: &[f64]) {
    let best = relevance.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i);
    let (before, after) = (hits.first().is_some_and(|h| q.gold_file(&h.path)), q.gold_file(&hits[best].path));
    if before == after {
        return;
    }
    eprintln!("rerank {} {}: {}", if after { "fixed" } else { "broke" }, q.id, q.question);
    for (i, (hit, r)) in hits.iter().zip(relevance).enumerate() {
        let gold = if q.gold_file(&hit.path) { "*" } else { " " };
        eprintln!("  {gold} {i:>2} {r:.3} {}", hit.source());
    }
}

/// Hits as (path, anchor), in their order.
fn ranked_of(hits: Vec<docs_agent::index::Hit>) -> Vec<(String, String)> {
    hits.into_iter().map(|h| (h.path, h.anchor)).collect()
}
