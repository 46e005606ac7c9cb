//! Runs one eval case: a temporary copy of its workspace, its setup, the question through the
//! real harness (in-process, with the trace captured), then the checks.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::{FileTypeExt, symlink};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use crate::agent::{AskError, Harness, Stop};
use crate::config::Sources;
use crate::session::progress::TurnEvent;
use crate::trace::Trace;
use crate::workspace::approval::{Approver, Terminal};

use super::case::{Action, Case, StepError};
use super::check::{self, Observed, Snapshot};

/// How the models of the cases are chosen.
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    /// Replaces every case's model (`--model NAME`).
    pub name: Option<String>,
    /// An OpenAI-compatible server for every case (`--model URL` or `--base-url`).
    pub base_url: Option<String>,
    /// Retrieve-first and verification on for cases that do not set them (`--retrieval`).
    pub retrieval: bool,
}

impl ModelChoice {
    /// True when the cases run against a real model rather than the built-in adversaries.
    pub fn is_real(&self) -> bool {
        self.base_url.is_some()
            || self.name.as_deref().is_some_and(|n| crate::model::builtin::Builtin::from_name(n).is_none())
    }
}

/// The outcome of one case.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CaseResult {
    /// The category (file stem).
    pub category: String,
    /// The case's name.
    pub name: String,
    /// A security invariant (true) or answer quality (false).
    pub must_hold: bool,
    /// Every check held.
    pub passed: bool,
    /// An invariant broke (a secret in a sink, a forbidden file or write, a change outside
    /// notes/), or the case could not run: a failure whichever model answers.
    pub breach: bool,
    /// What did not hold, one line each.
    pub failures: Vec<String>,
    /// How the run ended.
    pub stop: String,
    /// Wall time of the case, setup included.
    pub ms: u128,
}

/// Runs `case` with its workspace resolved against `root`, copied into a new folder in
/// `scratch`.
pub fn run_case(category: &str, case: &Case, root: &Path, scratch: &Path, models: &ModelChoice) -> CaseResult {
    let started = Instant::now();
    let executed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| execute(case, root, scratch, models)));
    let (stop, breaches, missed) = match executed {
        Ok(Ok(executed)) => executed,
        Ok(Err(error)) => ("failed".to_string(), vec![format!("could not run: {error}")], Vec::new()),
        Err(_) => ("failed".to_string(), vec!["the case panicked (a bug in docs-agent)".to_string()], Vec::new()),
    };
    CaseResult {
        category: category.to_string(),
        name: case.name.clone(),
        must_hold: case.must_hold,
        passed: breaches.is_empty() && missed.is_empty(),
        breach: !breaches.is_empty(),
        failures: breaches.into_iter().chain(missed).collect(),
        stop,
        ms: started.elapsed().as_millis(),
    }
}

/// How the run ended, the invariants it broke, the other expectations it missed.
type Executed = (String, Vec<String>, Vec<String>);

/// Why a case could not run (reported as its failure, after "could not run: ").
#[derive(Debug, thiserror::Error)]
enum RunError {
    /// No temporary folder for the copy.
    #[error("cannot make a temporary folder: {0}")]
    TempDir(#[source] std::io::Error),
    /// The workspace could not be copied.
    #[error(transparent)]
    Copy(#[from] CopyError),
    /// A setup step is malformed.
    #[error(transparent)]
    Step(#[from] StepError),
    /// A setup step failed.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The case's settings are not a valid configuration.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The harness could not be built.
    #[error(transparent)]
    Open(#[from] crate::agent::OpenError),
    /// The question failed otherwise than by the model (whose failure is a `model_error` stop).
    #[error(transparent)]
    Ask(#[from] AskError),
}

/// Why the case's workspace could not be copied.
#[derive(Debug, thiserror::Error)]
enum CopyError {
    /// The copy's folder cannot be made.
    #[error("cannot create {}: {source}", dir.display())]
    Create {
        /// The folder.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The fixture's folder cannot be listed.
    #[error("cannot read workspace {}: {source}", dir.display())]
    List {
        /// The folder.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// An entry, its type or a link's target cannot be read.
    #[error("{0}")]
    Entry(#[source] std::io::Error),
    /// A file cannot be copied.
    #[error("cannot copy {}: {source}", file.display())]
    File {
        /// The fixture's file.
        file: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A link cannot be made again.
    #[error("cannot copy the link {}: {source}", file.display())]
    Link {
        /// The fixture's link.
        file: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A FIFO, socket or device in the fixture.
    #[error("{} is not a file, folder or link; fixtures cannot hold it", file.display())]
    Special {
        /// The entry.
        file: PathBuf,
    },
}

/// Why a setup step could not be done in the copy.
#[derive(Debug, thiserror::Error)]
enum SetupError {
    /// Absolute, empty, or with `..`.
    #[error("setup path `{0}` must be relative and stay in the workspace")]
    Outside(String),
    /// A folder on the way is a symbolic link.
    #[error("setup path `{0}` goes through a symbolic link")]
    ThroughLink(String),
    /// The file to write is a symbolic link.
    #[error("setup path `{0}` is a symbolic link; writing would follow it")]
    IsLink(String),
    /// `hex` holds something else than pairs of hex digits.
    #[error("setup bytes {0}: `hex` is not hex")]
    NotHex(String),
    /// The file system refused.
    #[error("setup {what} {path}: {source}")]
    Io {
        /// The step (`write`, `symlink`, `hardlink target`...).
        what: &'static str,
        /// The step's path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

fn execute(case: &Case, root: &Path, scratch: &Path, models: &ModelChoice) -> Result<Executed, RunError> {
    let temp = tempfile::tempdir_in(scratch).map_err(RunError::TempDir)?;
    let workspace = temp.path().join("ws");
    copy_tree(&root.join(&case.workspace), &workspace)?;
    for step in &case.setup {
        apply(&workspace, step.action()?)?;
    }
    let before = snapshot(&workspace);
    let question = vec![case.question.as_str(); case.question_repeat.max(1)].join(" ");
    let asked = if question.trim().is_empty() {
        Asked { stop: "usage".to_string(), answer: String::new(), trace: String::new(), session_log: String::new() }
    } else {
        ask(case, &workspace, &question, models)?
    };
    let after = snapshot(&workspace);
    let mut breaches = check::outside_notes_unchanged(&before, &after);
    let observed = Observed {
        workspace: &workspace,
        answer: &asked.answer,
        trace: &asked.trace,
        session_log: &asked.session_log,
        stop: &asked.stop,
    };
    breaches.extend(check::invariants(&case.expect, &observed));
    let missed = check::behaviour(&case.expect, &observed);
    Ok((asked.stop, breaches, missed))
}

/// What one question left: how it stopped, the answer, the trace and the session log.
struct Asked {
    stop: String,
    answer: String,
    trace: String,
    /// Every stored event of the run's session, one per line.
    session_log: String,
}

/// Runs the question through the harness as the CLI would, capturing answer, trace and log.
fn ask(case: &Case, workspace: &Path, question: &str, models: &ModelChoice) -> Result<Asked, RunError> {
    let mut flags = vec![
        ("workspace", workspace.display().to_string()),
        // Each case has its own temporary workspace: an index file would only be rebuilt.
        ("index.path", "memory".to_string()),
        ("llm.model", models.name.clone().unwrap_or_else(|| case.model.clone())),
    ];
    if let Some(url) = &models.base_url {
        flags.push(("llm.base_url", url.clone()));
    }
    let mut env: HashMap<String, String> = case.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    // The pack tests the guards on what the model itself says and calls: retrieve-first and
    // verification stay off unless the case (or `--retrieval`) turns them on.
    for key in ["DOCS_AGENT_RETRIEVE_FIRST", "DOCS_AGENT_VERIFY"] {
        env.entry(key.to_string()).or_insert_with(|| models.retrieval.to_string());
    }
    let config = crate::service::settings::load_isolated(&Sources { file: None, env, flags })?;
    // The approver the CLI builds, with nobody at the terminal: the eval never waits for a
    // person, so only APPROVE=yes approves.
    let approver = Approver::new(&config, Terminal::Absent);
    let harness = Harness::open(&config)?;
    let mut trace = Trace::new(Vec::new(), config.limits.trace_result_chars);
    let mut observe = |event: &TurnEvent<'_>| trace.observe(event);
    let outcome = harness.ask_blocking(&config, approver, question, Some(&mut observe));
    let trace = String::from_utf8_lossy(&trace.into_inner()).into_owned();
    Ok(match outcome {
        Ok(run) => Asked {
            stop: run.stop.as_str().to_string(),
            answer: if run.stop == Stop::Answered { run.answer } else { String::new() },
            trace,
            session_log: run
                .events
                .iter()
                .map(|s| serde_json::to_string(&s.event).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n"),
        },
        Err(AskError::Model(_)) => {
            Asked { stop: "model_error".to_string(), answer: String::new(), trace, session_log: String::new() }
        }
        Err(other) => return Err(other.into()),
    })
}

/// A setup path: relative, inside the workspace, and reached through no symbolic link (an
/// earlier step may have made one), so setup can never touch anything outside the copy. The
/// last component may be a link only for `remove`, which removes the link itself.
fn inside(workspace: &Path, relative: &str) -> Result<PathBuf, SetupError> {
    let path = Path::new(relative);
    if path.as_os_str().is_empty() || path.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(SetupError::Outside(relative.to_string()));
    }
    let mut at = workspace.to_path_buf();
    let mut parts = path.components().peekable();
    while let Some(part) = parts.next() {
        at.push(part);
        let is_link = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if is_link && parts.peek().is_some() {
            return Err(SetupError::ThroughLink(relative.to_string()));
        }
    }
    Ok(at)
}

/// Like [`inside`], and the path itself is not a symbolic link (writing would follow it).
fn inside_not_link(workspace: &Path, relative: &str) -> Result<PathBuf, SetupError> {
    let full = inside(workspace, relative)?;
    if std::fs::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(SetupError::IsLink(relative.to_string()));
    }
    Ok(full)
}

fn apply(workspace: &Path, action: Action<'_>) -> Result<(), SetupError> {
    let fail = |what: &'static str, path: &str, source: std::io::Error| SetupError::Io {
        what,
        path: path.to_string(),
        source,
    };
    let parent = |p: &Path| p.parent().map_or(Ok(()), std::fs::create_dir_all);
    match action {
        Action::Write(path, content) => {
            let full = inside_not_link(workspace, path)?;
            parent(&full).and_then(|()| std::fs::write(&full, content)).map_err(|e| fail("write", path, e))
        }
        Action::Repeat(path, content, times) => {
            let full = inside_not_link(workspace, path)?;
            parent(&full)
                .and_then(|()| std::fs::write(&full, content.repeat(times)))
                .map_err(|e| fail("repeat", path, e))
        }
        Action::Bytes(path, hex) => {
            let full = inside_not_link(workspace, path)?;
            let bytes = decode_hex(hex).ok_or_else(|| SetupError::NotHex(path.to_string()))?;
            parent(&full).and_then(|()| std::fs::write(&full, bytes)).map_err(|e| fail("bytes", path, e))
        }
        Action::Symlink(path, target) => {
            let full = inside(workspace, path)?;
            parent(&full).and_then(|()| symlink(target, &full)).map_err(|e| fail("symlink", path, e))
        }
        Action::Hardlink(path, target) => {
            let full = inside(workspace, path)?;
            let original = inside_not_link(workspace, target)?;
            if !original.exists() {
                std::fs::write(&original, "original").map_err(|e| fail("hardlink target", target, e))?;
            }
            parent(&full).and_then(|()| std::fs::hard_link(&original, &full)).map_err(|e| fail("hardlink", path, e))
        }
        Action::Fifo(path) => {
            let full = inside(workspace, path)?;
            parent(&full).map_err(|e| fail("fifo", path, e))?;
            make_fifo(&full).map_err(|e| fail("fifo", path, e))
        }
        Action::Remove(path) => {
            let full = inside(workspace, path)?;
            let removed = match std::fs::symlink_metadata(&full) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&full),
                Ok(_) => std::fs::remove_file(&full),
                Err(e) => Err(e),
            };
            removed.map_err(|e| fail("remove", path, e))
        }
    }
}

/// Makes a named pipe at `path` (mkfifo(3): eval runs no program, and its sandbox forbids it).
fn make_fifo(path: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a NUL byte in the path"))?;
    // SAFETY: `path` is a NUL-terminated string that outlives the call.
    if unsafe { libc::mkfifo(path.as_ptr(), 0o644) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let hex: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    hex.chunks(2).map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()).collect()
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), CopyError> {
    std::fs::create_dir_all(to).map_err(|source| CopyError::Create { dir: to.to_path_buf(), source })?;
    let entries = std::fs::read_dir(from).map_err(|source| CopyError::List { dir: from.to_path_buf(), source })?;
    for entry in entries {
        let entry = entry.map_err(CopyError::Entry)?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type().map_err(CopyError::Entry)?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(|source| CopyError::File { file: entry.path(), source })?;
        } else if kind.is_symlink() {
            let link = std::fs::read_link(entry.path()).map_err(CopyError::Entry)?;
            symlink(&link, &target).map_err(|source| CopyError::Link { file: entry.path(), source })?;
        } else {
            return Err(CopyError::Special { file: entry.path() });
        }
    }
    Ok(())
}

fn snapshot(workspace: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    record(workspace, workspace, &mut out);
    out
}

fn record(root: &Path, dir: &Path, out: &mut Snapshot) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let relative = path.strip_prefix(root).map_or_else(|_| path.display().to_string(), |p| p.display().to_string());
        if relative == "notes" {
            continue;
        }
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let kind = meta.file_type();
        let state = if kind.is_symlink() {
            format!("link -> {}", std::fs::read_link(&path).map_or_else(|_| "?".into(), |t| t.display().to_string()))
        } else if kind.is_dir() {
            record(root, &path, out);
            "dir".to_string()
        } else if kind.is_fifo() || kind.is_socket() || kind.is_block_device() || kind.is_char_device() {
            "special".to_string()
        } else {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            std::fs::read(&path).unwrap_or_default().hash(&mut hasher);
            format!("file {} {:x}", meta.len(), hasher.finish())
        };
        out.insert(relative, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of a table: the input, which error it must give, and that error's message.
    type Row<'a> = (Action<'a>, fn(&SetupError) -> bool, &'a str);

    /// Each way a setup step fails in the copy: the error, and its message.
    #[test]
    fn setup_errors_name_the_step_and_path() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path();
        std::fs::create_dir(ws.join("real")).expect("mkdir");
        symlink(ws.join("real"), ws.join("link")).expect("symlink");
        symlink(ws.join("real/f"), ws.join("file-link")).expect("symlink");
        std::fs::create_dir(ws.join("taken")).expect("mkdir");
        #[rustfmt::skip]
        let cases: [Row<'_>; 6] = [
            (Action::Write("../x", "t"), |e| matches!(e, SetupError::Outside(_)),
             "setup path `../x` must be relative and stay in the workspace"),
            (Action::Write("/etc/x", "t"), |e| matches!(e, SetupError::Outside(_)),
             "setup path `/etc/x` must be relative and stay in the workspace"),
            (Action::Write("link/x", "t"), |e| matches!(e, SetupError::ThroughLink(_)),
             "setup path `link/x` goes through a symbolic link"),
            (Action::Write("file-link", "t"), |e| matches!(e, SetupError::IsLink(_)),
             "setup path `file-link` is a symbolic link; writing would follow it"),
            (Action::Bytes("b", "zz"), |e| matches!(e, SetupError::NotHex(_)), "setup bytes b: `hex` is not hex"),
            (Action::Write("taken", "t"), |e| matches!(e, SetupError::Io { what: "write", .. }),
             "setup write taken: "),
        ];
        for (action, is, message) in cases {
            let error = apply(ws, action).expect_err(message);
            assert!(is(&error), "{message}: {error:?}");
            assert!(error.to_string().starts_with(message), "{error}");
        }
    }

    /// A fixture with a FIFO cannot be copied, and says so.
    #[test]
    fn a_special_file_in_a_fixture_is_named() {
        let tmp = tempfile::tempdir().expect("tmp");
        let from = tmp.path().join("from");
        std::fs::create_dir(&from).expect("mkdir");
        make_fifo(&from.join("pipe")).expect("mkfifo");
        let error = copy_tree(&from, &tmp.path().join("to")).expect_err("a FIFO");
        assert!(matches!(error, CopyError::Special { .. }), "{error:?}");
        let pipe = from.join("pipe");
        assert_eq!(
            error.to_string(),
            format!("{} is not a file, folder or link; fixtures cannot hold it", pipe.display())
        );
        let error = copy_tree(&tmp.path().join("none"), &tmp.path().join("to2")).expect_err("no fixture");
        assert!(error.to_string().starts_with("cannot read workspace "), "{error}");
    }
}
