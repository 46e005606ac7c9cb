//! `docs-agent eval`: the eval and red-team pack. Cases are data (`evals/*.toml`); each runs in
//! its own temporary workspace copy, in parallel, through the real harness with a built-in
//! adversary or a real model, and is checked against what it must leave behind.

pub mod case;
mod check;
pub mod report;
pub mod run;

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use run::{CaseResult, ModelChoice};

/// Runs every case of `categories` whose category contains `filter`, on `jobs` threads, each
/// in a temporary copy of its workspace under `scratch`, printing a progress line per case to
/// `progress`.
pub fn run_all(
    categories: &[case::Category],
    filter: Option<&str>,
    root: &Path,
    scratch: &Path,
    models: &ModelChoice,
    jobs: usize,
    progress: &mut (impl Write + Send),
) -> Vec<CaseResult> {
    let work: Vec<(&str, &case::Case)> = categories
        .iter()
        .filter(|c| filter.is_none_or(|f| c.name.contains(f)))
        .flat_map(|c| c.cases.iter().map(move |case| (c.name.as_str(), case)))
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<CaseResult>>> = Mutex::new(vec![None; work.len()]);
    let progress = Mutex::new(progress);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, 64) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((category, case)) = work.get(i) else {
                        break;
                    };
                    let result = run::run_case(category, case, root, scratch, models);
                    let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Ok(mut out) = progress.lock() {
                        let verdict = if result.passed {
                            "ok"
                        } else if result.must_hold {
                            "FAIL"
                        } else {
                            "fail (quality)"
                        };
                        let _ = writeln!(
                            out,
                            "[{n}/{}] {category}/{} ... {verdict} ({} ms)",
                            work.len(),
                            case.name,
                            result.ms
                        );
                    }
                    if let Ok(mut all) = results.lock() {
                        all[i] = Some(result);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_default().into_iter().flatten().collect()
}

/// True when the run failed. With the built-in models, whose behaviour is scripted, any
/// case that failed. With a real model, whose answers and tool choices vary, only broken
/// invariants count (a secret in a sink, a forbidden file or write, a change outside notes/),
/// in any case; everything else is reported as pass rates.
pub fn failed(results: &[CaseResult], models: &ModelChoice) -> bool {
    if models.is_real() { results.iter().any(|r| r.breach) } else { results.iter().any(|r| !r.passed) }
}
