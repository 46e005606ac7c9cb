//! `cargo bench --bench sources`: how long a git source's sync takes on a real 2,800-file docs
//! repository (the Business Central corpus committed into a repository made here), over smart
//! HTTP from git's own `git-http-backend` on 127.0.0.1, against git's own client measured in the
//! same run on the same server: `git clone --depth 1` for the first sync, `git fetch --depth 1`
//! plus `git checkout` for the next ones. Reported as numbers and ratios, never asserted.
//!
//! Measured: the first sync (fetch and a whole checkout), an incremental one (1% of the files
//! changed: a fetch of those objects, the rest linked from the tree before), and one with nothing
//! new. Environment: `DOCS_AGENT_CORPORA` (default `../shared/corpora`), `BENCH_REPS` (3).

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

#[path = "../tests/common/git_http.rs"]
#[allow(dead_code)]
mod git_http;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use docs_agent::config::{SourceConfig, SourceSecrets};
use docs_agent::git::Source;

type Result<T> = std::result::Result<T, String>;

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    git_http::git(dir, args).map(|_| ())
}

fn copy_tree(from: &Path, to: &Path) -> Result<usize> {
    let mut files = 0;
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for entry in std::fs::read_dir(from).map_err(|e| e.to_string())?.flatten() {
        let target = to.join(entry.file_name());
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        if kind.is_dir() {
            files += copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(|e| e.to_string())?;
            files += 1;
        }
    }
    Ok(files)
}

/// Appends a line to every hundredth Markdown file of `dir` (1% of them); how many.
fn change_some(dir: &Path, round: usize) -> Result<usize> {
    let mut markdown = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).map_err(|e| e.to_string())?.flatten() {
            let path = entry.path();
            if path.is_dir() && entry.file_name() != ".git" {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                markdown.push(path);
            }
        }
    }
    markdown.sort();
    let changed: Vec<&PathBuf> = markdown.iter().skip(round % 100).step_by(100).collect();
    for path in &changed {
        let mut text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        text.push_str(&format!("\nChanged in round {round}.\n"));
        std::fs::write(path, text).map_err(|e| e.to_string())?;
    }
    Ok(changed.len())
}

fn seconds(start: Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn run() -> Result<()> {
    let corpora =
        std::env::var_os("DOCS_AGENT_CORPORA").map_or_else(|| PathBuf::from("../shared/corpora"), PathBuf::from);
    let corpus = corpora.join("business-central-docs");
    let reps: usize = std::env::var("BENCH_REPS").ok().and_then(|r| r.parse().ok()).unwrap_or(3).max(1);
    if !corpus.is_dir() {
        return Err(format!("{} is missing: set DOCS_AGENT_CORPORA to the folder of the corpora", corpus.display()));
    }
    if git_http::backend().is_none() {
        return Err("git and git-http-backend are needed (apt-get install git)".into());
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = scratch.path();
    let work = root.join("work");
    let files = copy_tree(&corpus, &work)?;
    git(root, &["init", "-q", "--bare", "docs.git"])?;
    git(&work, &["init", "-q"])?;
    git(&work, &["add", "-A"])?;
    git(&work, &["commit", "-q", "-m", "corpus"])?;
    git(&work, &["push", "-q", root.join("docs.git").to_str().ok_or("utf-8")?, "HEAD:refs/heads/main"])?;
    let server = git_http::GitHttp::start(root, None);
    let url = format!("{}/docs.git", server.base);
    println!(
        "sync of {} ({files} files) over HTTP from git-http-backend on 127.0.0.1, {reps} runs each",
        corpus.display()
    );

    let (mut ours_first, mut git_first, mut ours_next, mut git_next, mut ours_same, mut git_same) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut round = 0;
    for rep in 0..reps {
        let state = root.join(format!("state-{rep}"));
        let config = SourceConfig {
            name: "bench".into(),
            git: url.clone(),
            branch: "main".into(),
            path: String::new(),
            every: String::new(),
            token_file: None,
            token_env: None,
            username: "x-access-token".into(),
            webhook_secret_file: None,
            webhook_secret_env: None,
            secrets: SourceSecrets::default(),
        };
        let source = Source::of(&config, &state, 4 * 1024 * 1024)?;
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        let synced = source.sync(&stop).map_err(|e| e.to_string())?;
        ours_first.push(seconds(start));
        if !synced.skipped.is_empty() {
            println!("  (left out: {})", synced.skipped.len());
        }
        let clone = root.join(format!("clone-{rep}"));
        let start = Instant::now();
        git(root, &["clone", "-q", "--depth", "1", "--branch", "main", &url, clone.to_str().ok_or("utf-8")?])?;
        git_first.push(seconds(start));

        round += 1;
        let changed = change_some(&work, round)?;
        git(&work, &["commit", "-q", "-am", "some changes"])?;
        git(&work, &["push", "-q", root.join("docs.git").to_str().ok_or("utf-8")?, "HEAD:refs/heads/main"])?;
        let start = Instant::now();
        let next = source.sync(&stop).map_err(|e| e.to_string())?;
        ours_next.push(seconds(start));
        if rep == 0 {
            println!("  incremental: {changed} files changed; the sync moved: {}", next.changed);
        }
        let start = Instant::now();
        git(&clone, &["fetch", "-q", "--depth", "1", "origin", "main"])?;
        git(&clone, &["checkout", "-q", "FETCH_HEAD"])?;
        git_next.push(seconds(start));

        let start = Instant::now();
        source.sync(&stop).map_err(|e| e.to_string())?;
        ours_same.push(seconds(start));
        let start = Instant::now();
        git(&clone, &["fetch", "-q", "--depth", "1", "origin", "main"])?;
        git_same.push(seconds(start));
    }
    println!("{:<34} {:>12} {:>12} {:>8}", "median of runs", "docs-agent", "git", "ratio");
    for (what, ours, theirs) in [
        ("first sync (fetch + checkout)", ours_first, git_first),
        ("1% changed (fetch + checkout)", ours_next, git_next),
        ("nothing new (fetch)", ours_same, git_same),
    ] {
        let (o, t) = (median(ours), median(theirs));
        println!("{what:<34} {:>10.3} s {:>10.3} s {:>7.2}x", o, t, o / t);
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench sources: {e}");
            ExitCode::FAILURE
        }
    }
}
