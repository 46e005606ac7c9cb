//! Reranking in the benches: the reranker the environment names (`BENCH_RERANKER`, a base URL
//! such as `http://127.0.0.1:8091/v1`; `BENCH_RERANKER_MODEL`, `BENCH_RERANK_CANDIDATES`,
//! `BENCH_RERANK_CHARS`), configured as `[retrieval.reranker]` would be, with a timeout long
//! enough that a busy machine never turns a score into a failure.

#![allow(dead_code)]

use docs_agent::config::RerankerConfig;
use docs_agent::index::rerank::Reranker;

/// The reranker the environment names, if it names one; `defaults` are the configuration's.
pub fn reranker(defaults: &RerankerConfig) -> Option<Reranker> {
    let url = std::env::var("BENCH_RERANKER").ok().filter(|u| !u.is_empty())?;
    let number = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let settings = RerankerConfig {
        base_url: url,
        model: std::env::var("BENCH_RERANKER_MODEL").unwrap_or_default(),
        api_key: None,
        candidates: number("BENCH_RERANK_CANDIDATES", defaults.candidates),
        input_chars: number("BENCH_RERANK_CHARS", defaults.input_chars),
        timeout_ms: 120_000,
        ..defaults.clone()
    };
    eprintln!(
        "reranker: {} ({} candidates, {} characters each)",
        settings.base_url, settings.candidates, settings.input_chars
    );
    Some(Reranker::new(&settings, Default::default()))
}

/// The median and the 90th percentile of `ms`.
pub fn median_p90(ms: &mut [u64]) -> (u64, u64) {
    ms.sort_unstable();
    let at = |q: f64| ms.get(((ms.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0);
    (at(0.5), at(0.9))
}
