//! Finds the documents under `docs/` (Markdown, MDX, text and HTML: [`DocKind`]) through its
//! capability handle. A document that is not a plain, small, UTF-8 file inside `docs/` is
//! skipped with a warning: FIFOs are never opened for blocking reads, symlinks never lead out,
//! and nothing crashes the walk. Files of other types are skipped quietly and listed in
//! [`Walk::ignored`], which `check` shows.

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

use crate::doc_kind::{DocKind, extensions_listed};
use crate::workspace::{FileError, read_confined_sized};

/// Folders deeper than this are not entered (guards against pathological trees).
const MAX_DEPTH: usize = 32;

/// One readable document.
pub struct DocFile {
    /// Path relative to the workspace, e.g. `docs/admin/roles.md`.
    pub path: String,
    /// The file's text.
    pub text: String,
}

/// What the walk found and what it skipped: documents read (`ahead::walk_docs`), or listed
/// with their size and time ([`list_docs`]).
pub struct Walk<T = DocFile> {
    /// Documents, sorted by path.
    pub files: Vec<T>,
    /// One line per skipped entry: the path and why.
    pub warnings: Vec<String>,
    /// Files skipped because the index does not read their type, one line each with why.
    pub ignored: Vec<String>,
}

/// How much text one docs folder may make the index read: each document at most
/// `file_bytes` (`index.max_file_bytes`; a PDF's text, not its size), all of them together at
/// most `total_bytes` (`index.max_total_bytes`). A document that would take the total over
/// its limit is left out with a warning ([`Limits::over_total`]), and the documents after it
/// are still read: whatever a source holds, the index holds at most `total_bytes` of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most text of one document.
    pub file_bytes: u64,
    /// The most text of all the documents.
    pub total_bytes: u64,
}

impl Limits {
    /// The limits the configuration sets.
    #[must_use]
    pub fn of(index: &crate::config::IndexConfig) -> Limits {
        Limits { file_bytes: index.max_file_bytes, total_bytes: index.max_total_bytes }
    }

    /// Only the limit on one document (`file_bytes`), none on the total: for tests and benches.
    #[must_use]
    pub fn file_only(file_bytes: u64) -> Limits {
        Limits { file_bytes, total_bytes: u64::MAX }
    }

    /// The warning for the document at `path`, left out because its text would take the
    /// docs' total over `total_bytes`.
    #[must_use]
    pub fn over_total(&self, path: &str) -> String {
        format!(
            "{path}: the docs' text would be over index.max_total_bytes ({} bytes) with it; skipped (raise the \
             setting, or move documents out of docs/)",
            self.total_bytes
        )
    }
}

/// A document found by [`list_docs`], not read yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Path relative to the workspace, e.g. `docs/admin/roles.md`.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch (0 when the system has none).
    pub mtime_ns: i64,
}

/// What [`list_docs`] found.
pub type Listing = Walk<Listed>;

/// Lists the documents under `docs` with their size and modification time, reading none, with
/// the confinement and skip rules every read follows: what the index reads and an update
/// compares.
pub fn list_docs(docs: &Dir) -> Listing {
    let mut files = Vec::new();
    let mut warnings = Vec::new();
    let mut ignored = Vec::new();
    let mut on_listed = |listed| files.push(listed);
    let mut sink = Sink { on_listed: &mut on_listed, warnings: &mut warnings, ignored: &mut ignored };
    visit(docs, "docs", 0, &mut sink);
    files.sort_by(|a: &Listed, b: &Listed| a.path.cmp(&b.path));
    Listing { files, warnings, ignored }
}

/// Reads `path` (as listed: `docs/…`) inside `docs`, with the walk's rules: its text, and how
/// many bytes the file held (a PDF's text is not its size).
pub fn read_listed(docs: &Dir, path: &str, max_bytes: u64) -> Result<(String, u64), Unreadable> {
    let inner = path.strip_prefix("docs/").unwrap_or(path);
    read_confined_sized(docs, inner, max_bytes).map_err(|cause| Unreadable { path: path.to_string(), cause })
}

/// A document that cannot be read: its message is the warning the walk and the index record.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {}; skipped", why(cause))]
pub struct Unreadable {
    /// The document, as listed (`docs/…`).
    pub path: String,
    /// Why: refused by the workspace's rules (not a regular file, too large...) or failed.
    pub cause: FileError,
}

/// What a read's failure says.
fn why(cause: &FileError) -> &str {
    match cause {
        FileError::Denied(d) => &d.0,
        FileError::Failed(m) => m,
    }
}

/// Nanoseconds from the epoch to `time` (0 before it, the largest `i64` far after it).
pub fn epoch_ns(time: std::time::SystemTime) -> i64 {
    time.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Where the walk puts what it finds.
struct Sink<'a> {
    /// Hands over each document's size and modification time.
    on_listed: &'a mut dyn FnMut(Listed),
    /// Collects one line per skipped entry.
    warnings: &'a mut Vec<String>,
    /// Collects one line per file of a type the index does not read.
    ignored: &'a mut Vec<String>,
}

/// Roughly how many bytes of documents `docs` holds, from metadata alone (no file is opened,
/// no link followed), stopping once `enough` is reached: to choose how to build, not to index.
/// A PDF counts as `enough` whatever its size: a few kB of PDF can be megabytes of text, so
/// docs with PDFs are always built streaming, one document at a time (with PDFs read ahead,
/// `ahead`).
pub fn approximate_bytes(dir: &Dir, depth: usize, enough: u64) -> u64 {
    let Ok(entries) = dir.entries() else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        if total >= enough {
            break;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        if kind.is_dir() && depth < MAX_DEPTH {
            if let Ok(sub) = dir.open_dir_nofollow(&name) {
                total += approximate_bytes(&sub, depth + 1, enough - total);
            }
        } else if kind.is_file() {
            match name.to_str().and_then(DocKind::of) {
                Some(DocKind::Pdf) => total = enough,
                Some(_) => total += entry.metadata().map_or(0, |m| m.len()),
                None => {}
            }
        }
    }
    total
}

fn visit(dir: &Dir, prefix: &str, depth: usize, walk: &mut Sink<'_>) {
    let entries = match dir.entries() {
        Ok(entries) => entries,
        Err(e) => {
            return walk.warnings.push(format!("{prefix}/: cannot list ({e}); skipped"));
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => names.push(entry),
            Err(e) => walk.warnings.push(format!("{prefix}/: cannot read an entry ({e}); skipped")),
        }
    }
    names.sort_by_key(|entry| entry.file_name());
    for entry in names {
        let os_name = entry.file_name();
        let Some(name) = os_name.to_str() else {
            walk.warnings.push(format!("{prefix}/{}: name is not UTF-8; skipped", os_name.to_string_lossy()));
            continue;
        };
        let path = format!("{prefix}/{name}");
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            Err(e) => {
                walk.warnings.push(format!("{path}: cannot stat ({e}); skipped"));
                continue;
            }
        };
        if kind.is_dir() {
            if depth >= MAX_DEPTH {
                walk.warnings.push(format!("{path}: deeper than {MAX_DEPTH} folders; skipped"));
            } else {
                match dir.open_dir(name) {
                    Ok(sub) => visit(&sub, &path, depth + 1, walk),
                    Err(e) => walk.warnings.push(format!("{path}: cannot open folder ({e}); skipped")),
                }
            }
            continue;
        }
        if DocKind::of(name).is_none() {
            let why = format!("not a type the index reads ({})", extensions_listed());
            walk.ignored.push(format!("{path}: {why}; skipped"));
            continue;
        }
        if kind.is_symlink() {
            // Resolved inside `docs/` only: a link out of it fails here.
            match dir.metadata(name) {
                Ok(meta) if meta.is_file() => {}
                Ok(_) => {
                    walk.warnings.push(format!("{path}: symlink to something that is not a file; skipped"));
                    continue;
                }
                Err(_) => {
                    walk.warnings.push(format!("{path}: symlink leads outside docs/ or nowhere; skipped"));
                    continue;
                }
            }
        } else if !kind.is_file() {
            walk.warnings.push(format!("{path}: not a regular file (FIFO, socket or device); skipped"));
            continue;
        }
        // A symlink's target is stat'ed through `dir` (confined); a plain file through its
        // entry, which costs no open.
        match if kind.is_symlink() { dir.metadata(name) } else { entry.metadata() } {
            Ok(meta) => {
                let mtime_ns = meta.modified().map_or(0, |t| epoch_ns(t.into_std()));
                (walk.on_listed)(Listed { path, size: meta.len(), mtime_ns });
            }
            Err(e) => walk.warnings.push(format!("{path}: cannot stat ({e}); skipped")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PDF's size says nothing of its text: docs with one are measured as large, so they are
    /// built one document at a time (issue 51, finding 5).
    #[test]
    fn a_pdf_makes_the_docs_count_as_large() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(tmp.path().join("guides")).expect("mkdir");
        std::fs::write(tmp.path().join("a.md"), "# A\n").expect("write");
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).expect("open");
        assert_eq!(approximate_bytes(&dir, 0, 1 << 20), 4);
        std::fs::write(tmp.path().join("guides/tiny.pdf"), "%PDF-1.5").expect("write");
        assert_eq!(approximate_bytes(&dir, 0, 1 << 20), 1 << 20);
    }
}
