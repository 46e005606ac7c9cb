//! `docs-agent sources sync|status`, and the docs of a git source for every other command: the
//! tree its last good sync checked out, synced first when there is none.

use std::io::Write;
use std::sync::atomic::AtomicBool;

use super::{Exit, Failure, SourcesAction};
use crate::config::Config;
use crate::git::{Remote, Source};

fn sources(config: &Config) -> Result<Vec<Source>, Failure> {
    crate::git::check_config(config).map_err(|e| (Exit::Usage, e))
}

fn origin(source: &Source) -> String {
    let remote = match &source.remote {
        Remote::Http(url) => url.clone(),
        Remote::Local(path) => path.display().to_string(),
    };
    match source.path.as_str() {
        "" => format!("{remote} ({})", source.branch),
        path => format!("{remote} ({}, {path}/)", source.branch),
    }
}

/// Points `config.docs` at the tree the configuration's git source serves, checking its branch
/// out first (with a line on stderr) when nothing was synced yet. Nothing to do without a source,
/// nor for a configuration of `[[collections]]`: each collection's own configuration
/// ([`Config::for_collection`]) is served from its source.
pub fn serve_from(config: &mut Config) -> Result<(), Failure> {
    if !config.collections.is_empty() {
        return Ok(());
    }
    let Some(source) = sources(config)?.into_iter().next() else { return Ok(()) };
    let state = source.state().map_err(|e| (Exit::Failure, format!("source {}: {e}", source.name)))?;
    let served = state.and_then(|s| s.commit).map(|commit| (source.tree(&commit), commit));
    let (docs, commit) = match served.filter(|(tree, _)| tree.is_dir()) {
        Some(served) => served,
        None => {
            crate::guard::sink::err_line!("docs-agent: source {}: first sync of {}", source.name, origin(&source));
            let synced = source.sync(&AtomicBool::new(false)).map_err(|e| {
                (
                    Exit::Failure,
                    format!(
                        "source {}: {e}; nothing was synced yet, so there are no docs to answer from \
                         (check the URL, branch and token, then run `docs-agent sources sync`)",
                        source.name
                    ),
                )
            })?;
            (synced.docs, synced.commit)
        }
    };
    // Another process's sync leaves this tree in place while this one reads it.
    source.hold(&commit);
    config.docs = Some(docs);
    config.docs_revision = Some(commit);
    Ok(())
}

/// Runs one `sources` action.
pub fn run(config: &Config, action: SourcesAction) -> Result<Exit, Failure> {
    let all = sources(config)?;
    if all.is_empty() {
        return Err((
            Exit::Usage,
            "no [[sources]] are configured: the docs are the folder on disk (see `docs-agent --help` and the book's \
             Configuration page for git sources)"
                .into(),
        ));
    }
    let mut out = crate::guard::sink::stdout();
    match action {
        SourcesAction::Sync { name } => {
            let chosen: Vec<&Source> = all.iter().filter(|s| name.as_deref().is_none_or(|n| n == s.name)).collect();
            if chosen.is_empty() {
                let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
                return Err((
                    Exit::Usage,
                    format!("no source is named {:?}; the sources are: {}", name.unwrap_or_default(), names.join(", ")),
                ));
            }
            let mut failed = false;
            for source in chosen {
                let _ = writeln!(out, "{}: syncing {}", source.name, origin(source));
                match source.sync(&AtomicBool::new(false)) {
                    Ok(synced) if synced.changed => {
                        let _ = writeln!(
                            out,
                            "{}: now serving {} ({})",
                            source.name,
                            short(&synced.commit),
                            synced.docs.display()
                        );
                        for skipped in &synced.skipped {
                            let _ = writeln!(out, "  left out {}: {}", skipped.path, skipped.why);
                        }
                    }
                    Ok(synced) => {
                        let _ = writeln!(out, "{}: up to date at {}", source.name, short(&synced.commit));
                    }
                    Err(e) => {
                        failed = true;
                        crate::guard::sink::err_line!("docs-agent: source {}: {e}", source.name);
                    }
                }
            }
            Ok(if failed { Exit::Failure } else { Exit::Ok })
        }
        SourcesAction::Status => {
            for source in &all {
                let state = source.state().map_err(|e| (Exit::Failure, format!("source {}: {e}", source.name)))?;
                let _ = writeln!(out, "{}: {}", source.name, origin(source));
                let Some(state) = state else {
                    let _ = writeln!(out, "  not synced yet: the next command that reads the docs syncs it");
                    continue;
                };
                match (&state.commit, state.synced_at) {
                    (Some(commit), Some(at)) => {
                        let _ = writeln!(out, "  serving {} (checked out {})", short(commit), when(at));
                    }
                    _ => {
                        let _ = writeln!(out, "  serving nothing yet");
                    }
                }
                if let Some(at) = state.checked_at {
                    let _ = writeln!(out, "  last looked at {}", when(at));
                }
                if let (Some(error), Some(at)) = (&state.error, state.failed_at) {
                    let _ = writeln!(out, "  last sync failed {}: {error}", when(at));
                }
                for skipped in &state.skipped {
                    let _ = writeln!(out, "  left out {}: {}", skipped.path, skipped.why);
                }
            }
            Ok(Exit::Ok)
        }
    }
}

/// A commit's first 12 hex digits.
fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// A time as a person reads it, in UTC.
fn when(secs: u64) -> String {
    chrono::DateTime::from_timestamp(i64::try_from(secs).unwrap_or(i64::MAX), 0)
        .map_or_else(|| secs.to_string(), |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}
