//! `docs-agent index status|rebuild|verify`: the search index file, looked at and mended by
//! hand. Every other command keeps it up to date by itself.

use std::io::Write;
use std::time::Instant;

use super::{Exit, Failure, IndexAction};
use crate::config::{Config, IndexStore};
use crate::index::progress::Line;
use crate::index::{Index, store, walk};
use crate::workspace::Workspace;

/// Runs one `index` action.
pub fn run(config: Config, action: IndexAction) -> Result<Exit, Failure> {
    let IndexStore::File(file) = config.index_store() else {
        return Err((
            Exit::Usage,
            "index.path is `memory`: every process builds its own index, so there is no file to \
             show, rebuild or verify; set index.path (DOCS_AGENT_INDEX) to a file, or leave it empty"
                .to_string(),
        ));
    };
    let workspace = Workspace::of(&config).map_err(|e| (Exit::Failure, e.to_string()))?;
    let docs = workspace
        .docs()
        .ok_or_else(|| (Exit::Failure, format!("{}: has no docs/ folder to index", config.workspace.display())))?;
    let docs = &*docs;
    let id = crate::session::workspace_of(&config);
    let max = crate::index::Limits::of(&config.index);
    let mut out = crate::guard::sink::stdout();
    let fail = |e: &dyn std::fmt::Display| (Exit::Failure, format!("search index {}: {e}", file.display()));
    match action {
        IndexAction::Status => {
            if !file.exists() {
                let _ = writeln!(out, "index: {} (not built yet: the next question builds it)", file.display());
                return Ok(Exit::Ok);
            }
            let conn = store::connect(&file).map_err(|e| (Exit::Failure, e.0))?;
            let listing = walk::list_docs(docs);
            let _ = writeln!(out, "index: {}", file.display());
            let reason = store::stale_reason(&conn, &id, max)
                .unwrap_or_else(|e| Some(format!("SQLite cannot read it ({e}); it will be moved aside")));
            match reason {
                Some(reason) => {
                    let _ = writeln!(out, "stale: {reason}; the next question rebuilds it");
                }
                None => {
                    let stats = store::stats(&conn).map_err(|e| fail(&e))?;
                    let generation = store::generation(&conn).map_err(|e| fail(&e))?;
                    let updated = store::meta(&conn, "updated_at_ms").map_err(|e| fail(&e))?.unwrap_or_default();
                    let (changed, gone, recheck) = store::pending(&conn, &listing).map_err(|e| fail(&e))?;
                    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
                    let _ = writeln!(out, "generation: {generation} (updated {})", when(&updated));
                    let _ = writeln!(out, "holds: {} docs, {} sections, {bytes} bytes", stats.files, stats.sections);
                    let _ = writeln!(
                        out,
                        "out of date: {changed} docs new or changed, {gone} gone, {recheck} to read again (written \
                         moments before they were read); the next question updates them"
                    );
                }
            }
            Ok(Exit::Ok)
        }
        IndexAction::Rebuild => {
            if let Some(aside) = store::reset(&file).map_err(|e| (Exit::Failure, e.0))? {
                let _ = writeln!(
                    crate::guard::sink::stderr(),
                    "SQLite could not read {}; it was moved to {}",
                    file.display(),
                    aside.display()
                );
            }
            let started = Instant::now();
            let mut line = Line::on_stderr();
            let (mut index, update) = Index::open(docs, &id, &file, max, 1, &mut |done, total| line.show(done, total))
                .map_err(|e| (Exit::Failure, e.0))?;
            for warning in &index.warnings {
                let _ = writeln!(crate::guard::sink::stderr(), "warning: {}", crate::guard::scrub(warning));
            }
            let _ = writeln!(
                out,
                "rebuilt {}: {} docs, {} sections, generation {}, in {} ms",
                file.display(),
                index.stats.files,
                index.stats.sections,
                update.generation,
                started.elapsed().as_millis()
            );
            // With an embedding model, the sections' vectors too (those the cache lacks), so the
            // next question does not wait for them.
            // What the operator's rules hide is never sent to the embedding server, and what
            // their patterns redact is not sent with its section.
            let hooks = crate::hooks::Hooks::compile(&config.hooks).map_err(|e| (Exit::Failure, e.to_string()))?;
            if let Some(embedder) = crate::agent::embedder(&config, &hooks.outbound()) {
                index.hidden = crate::agent::hidden_by(&workspace, &hooks);
                let started = Instant::now();
                let cache = crate::index::vectors::cache_path(&file);
                let mut show = |done, total| line.show_as("embedding sections", "sections", done, total);
                let filled = index.embed(embedder.clone(), Some(&cache), None, &mut show).map_err(|e| fail(&e))?;
                if let Some(warning) = &filled.cache_warning {
                    let _ = writeln!(crate::guard::sink::stderr(), "warning: {}", crate::guard::scrub(warning));
                }
                if let Some(e) = &filled.failure {
                    return Err((
                        Exit::Failure,
                        format!("{e}; {} sections have no vector yet", filled.semantic.vectors.missing),
                    ));
                }
                // Rebuilt by hand: the cache keeps only this model's vectors of the text indexed now.
                if let Err(e) = crate::index::vectors::prune_cache(&cache, &index, &embedder) {
                    let _ = writeln!(crate::guard::sink::stderr(), "warning: the vector cache was not pruned: {e}");
                }
                let _ = writeln!(
                    out,
                    "embedded {} sections with {} in {} ms; {} of {} have a vector (kept in {})",
                    filled.embedded,
                    embedder.model(),
                    started.elapsed().as_millis(),
                    filled.semantic.vectors.len(),
                    index.stats.sections,
                    cache.display()
                );
            }
            Ok(Exit::Ok)
        }
        IndexAction::Verify => {
            if !file.exists() {
                return Err((
                    Exit::Failure,
                    format!("index: {} does not exist yet; run `docs-agent index rebuild`", file.display()),
                ));
            }
            let conn = store::connect(&file).map_err(|e| (Exit::Failure, e.0))?;
            if let Some(reason) = store::stale_reason(&conn, &id, max).map_err(|e| fail(&e))? {
                let _ = writeln!(out, "{}: stale: {reason}; run `docs-agent index rebuild`", file.display());
                return Ok(Exit::Failure);
            }
            let listing = walk::list_docs(docs);
            let problems = store::verify(&conn, docs, &listing, max).map_err(|e| fail(&e))?;
            for problem in &problems {
                let _ = writeln!(out, "{}", crate::guard::scrub(problem));
            }
            let _ =
                writeln!(out, "{}: {} docs checked, {} problems", file.display(), listing.files.len(), problems.len());
            Ok(if problems.is_empty() { Exit::Ok } else { Exit::Failure })
        }
    }
}

/// A time kept as milliseconds since the epoch, as a person reads it: `2026-12-05 07:25:48 UTC`
/// (what the index holds, unchanged, when it is not such a number).
fn when(ms: &str) -> String {
    ms.parse::<i64>()
        .ok()
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map_or_else(|| ms.to_string(), |at| at.format("%Y-%m-%d %H:%M:%S UTC").to_string())
}

#[cfg(test)]
mod tests {
    /// The index's update time reads as a date, not a count of milliseconds.
    #[test]
    fn an_update_time_reads_as_a_date() {
        assert_eq!(super::when("1796455548058"), "2026-12-05 07:25:48 UTC");
        assert_eq!(super::when("0"), "1970-01-01 00:00:00 UTC");
        assert_eq!(super::when("not a time"), "not a time");
    }
}
