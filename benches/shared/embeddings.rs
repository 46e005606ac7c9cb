//! Hybrid search in the benches: the embedding model the environment names
//! (`BENCH_EMBEDDINGS`, `BENCH_EMBEDDINGS_MODEL`, `BENCH_QUERY_PREFIX`, `BENCH_PASSAGE_PREFIX`,
//! `BENCH_INPUT_CHARS`, `BENCH_WEIGHT`), and an index's rows embedded with it, cached in
//! `target/bench-vectors/` per model so a second run embeds nothing.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use docs_agent::config::EmbeddingsConfig;
use docs_agent::index::Index;
use docs_agent::index::embed::Embedder;

/// The embedding model the environment names, if it names one.
pub fn embedder() -> Option<Embedder> {
    let url = std::env::var("BENCH_EMBEDDINGS").ok()?;
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let settings = EmbeddingsConfig {
        model: std::env::var("BENCH_EMBEDDINGS_MODEL").unwrap_or_else(|_| "bench".into()),
        base_url: url.clone(),
        api_key: None,
        dimensions: 0,
        batch: 32,
        query_prefix: std::env::var("BENCH_QUERY_PREFIX").ok(),
        passage_prefix: std::env::var("BENCH_PASSAGE_PREFIX").ok(),
        input_chars: var("BENCH_INPUT_CHARS").parse().unwrap_or(1_000),
        timeout_secs: 600,
        weight: var("BENCH_WEIGHT").parse().unwrap_or(0.5),
    };
    Some(Embedder::new(&settings, &url, None, 2, Default::default()))
}

/// `index` with the vectors of every row when the environment names a model (`name` names the
/// cache file), saying on stderr how many were embedded, how long it took and their size.
pub fn embedded(mut index: Index, name: &str) -> Result<Index, String> {
    let Some(embedder) = embedder() else {
        return Ok(index);
    };
    // One file per model: a cache keeps one model's vectors.
    let model: String = embedder.model().chars().map(|c| if c.is_alphanumeric() { c } else { '-' }).collect();
    let cache =
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench-vectors")).join(format!("{name}.{model}.db"));
    let started = std::time::Instant::now();
    let mut shown = 0;
    let filled = index
        .embed(Arc::new(embedder), Some(&cache), None, &mut |done, total| {
            if done >= shown + 500 || done == total {
                eprintln!("{name}: embedded {done} of {total} sections");
                shown = done;
            }
        })
        .map_err(|e| e.to_string())?;
    if let Some(e) = filled.failure {
        return Err(format!("{name}: {e}"));
    }
    eprintln!(
        "{name}: {} vectors ({} embedded now, {:.1} s; {:.1} MB)",
        filled.semantic.vectors.len(),
        filled.embedded,
        started.elapsed().as_secs_f64(),
        filled.semantic.vectors.bytes() as f64 / 1e6
    );
    index.semantic = Some(filled.semantic);
    Ok(index)
}
