//! `cargo bench --bench redaction`: how much the redactor catches and how fast it runs, against
//! the redactor before the rule catalog (`benches/redaction/baseline.rs`, frozen at 1c0d9fe),
//! measured in the same run.
//!
//! - **Recall**: fake secrets generated in every format of `benches/redaction/corpus.rs`, each in
//!   a few contexts; a secret is caught when no 8 characters of its random part survive.
//! - **False positives**: near misses (UUIDs, SHAs, hashes, slugs, base64 images, versions,
//!   publishable keys, placeholders) that must come back unchanged.
//! - **Speed**: every Markdown file of both docs corpora, redacted one file per call (as tool
//!   results are), in MB/s; best of `BENCH_REPS` (5) passes per side.
//!
//! Environment: `DOCS_AGENT_CORPORA` (default `../shared/corpora` beside the checkout),
//! `BENCH_REPS` (5), `BENCH_SEED` (20261202), `BENCH_MISSES=1` lists every miss and false positive.

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

#[path = "redaction/baseline.rs"]
mod baseline;
#[path = "redaction/corpus.rs"]
mod corpus;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use docs_agent::guard::redact::redact;

/// Cases per format and fills per near-miss template.
const PER_FORMAT: usize = 3;
const NEAR_MISS_ROUNDS: usize = 3;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("redaction bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A redactor under test.
type Redactor = fn(&str) -> String;

fn current(text: &str) -> String {
    redact(text).into_owned()
}

fn before(text: &str) -> String {
    baseline::redact(text).into_owned()
}

fn number(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(value) => value.parse().map_err(|_| format!("{name}={value:?} is not a number")),
        Err(_) => Ok(default),
    }
}

fn run() -> Result<(), String> {
    let seed = number("BENCH_SEED", 20_261_202)?;
    let reps = number("BENCH_REPS", 5)?.max(1);
    let list = std::env::var_os("BENCH_MISSES").is_some();
    let cases = corpus::cases(seed, PER_FORMAT);
    let near = corpus::near_misses(seed ^ 0x5eed, NEAR_MISS_ROUNDS);
    let formats = corpus::FORMATS.len();
    println!("recall: {} secrets in {formats} formats; false positives: {} near misses\n", cases.len(), near.len());
    println!("| redactor | caught | recall | formats fully caught | false positives |");
    println!("|---|---:|---:|---:|---:|");
    for (name, redactor) in [("before (1c0d9fe)", before as Redactor), ("current", current as Redactor)] {
        let missed: Vec<&corpus::Case> =
            cases.iter().filter(|case| !case.survivors(&redactor(&case.text)).is_empty()).collect();
        let flagged: Vec<&String> = near.iter().filter(|text| redactor(text) != **text).collect();
        let mut missed_formats: Vec<&str> = missed.iter().map(|case| case.format).collect();
        missed_formats.dedup();
        let recall = 1.0 - missed.len() as f64 / cases.len() as f64;
        println!(
            "| {name} | {}/{} | {:.1}% | {}/{formats} | {} |",
            cases.len() - missed.len(),
            cases.len(),
            recall * 100.0,
            formats - missed_formats.len(),
            flagged.len()
        );
        if list && name == "current" {
            for case in &missed {
                eprintln!("missed {}: {:?} -> {:?}", case.format, case.text, redactor(&case.text));
            }
            for text in &flagged {
                eprintln!("false positive: {text:?} -> {:?}", redactor(text));
            }
        }
    }
    speed(reps)
}

/// Every Markdown file of both corpora, read in place.
fn docs() -> Result<Vec<String>, String> {
    let corpora = std::env::var_os("DOCS_AGENT_CORPORA")
        .map_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpora")), PathBuf::from);
    let mut files = Vec::new();
    for name in ["polar-docs", "business-central-docs"] {
        let root = corpora.join(name);
        collect(&root, &mut files).map_err(|e| {
            format!("cannot read corpus {} ({e}); set DOCS_AGENT_CORPORA to the folder holding it", root.display())
        })?;
    }
    Ok(files)
}

fn collect(dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(std::fs::read_to_string(&path)?);
        }
    }
    Ok(())
}

fn speed(reps: u64) -> Result<(), String> {
    let files = docs()?;
    let bytes: usize = files.iter().map(String::len).sum();
    println!("\nspeed: {} files, {:.1} MB, one call per file, best of {reps}\n", files.len(), bytes as f64 / 1e6);
    println!("| redactor | seconds | MB/s | changed files |");
    println!("|---|---:|---:|---:|");
    let mut rates = Vec::new();
    for (name, redactor) in [("before (1c0d9fe)", before as Redactor), ("current", current as Redactor)] {
        // One untimed pass compiles whatever the redactor compiles lazily.
        let changed = files.iter().filter(|text| redactor(text) != **text).count();
        let best = (0..reps)
            .map(|_| {
                let start = Instant::now();
                for text in &files {
                    std::hint::black_box(redactor(text));
                }
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        let rate = bytes as f64 / 1e6 / best;
        rates.push(rate);
        println!("| {name} | {best:.3} | {rate:.1} | {changed} |");
    }
    if let [old, new] = rates[..] {
        println!("\ncurrent / before: {:.2}x (aim: at least 50 MB/s)", new / old);
    }
    Ok(())
}
