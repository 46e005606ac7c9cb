//! The eval case format (`evals/*.toml`, one file per category), read with a real TOML parser.
//! See `evals/README.md` for the format as users write it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// One file of cases.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    /// The cases, as `[[case]]` tables.
    #[serde(default)]
    case: Vec<Case>,
}

/// One case: a question, the conditions it runs in, and what must be true afterwards.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Unique within its category.
    pub name: String,
    /// What is asked.
    pub question: String,
    /// The question is this many copies, joined by spaces (for huge questions).
    #[serde(default = "one")]
    pub question_repeat: usize,
    /// The model that answers.
    #[serde(default = "scripted")]
    pub model: String,
    /// The workspace copied for the run, relative to the repository root.
    #[serde(default = "sample_workspace")]
    pub workspace: String,
    /// True for a security invariant (must pass with any model); false for answer quality.
    #[serde(default = "yes")]
    pub must_hold: bool,
    /// The environment the run sees (`APPROVE`, `DOCS_AGENT_MAX_STEPS`...).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Changes made to the temporary copy before the run, in order.
    #[serde(default)]
    pub setup: Vec<Setup>,
    /// What must be true afterwards.
    #[serde(default)]
    pub expect: Expect,
}

fn one() -> usize {
    1
}
fn scripted() -> String {
    "scripted".into()
}
fn sample_workspace() -> String {
    "workspace".into()
}
fn yes() -> bool {
    true
}

/// One change to the temporary workspace; exactly one action key is set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Create or replace this file with `content`.
    pub write: Option<String>,
    /// Make this symbolic link, pointing to `target`.
    pub symlink: Option<String>,
    /// Make this hard link to the workspace file `target` (created if missing).
    pub hardlink: Option<String>,
    /// Make a FIFO here.
    pub fifo: Option<String>,
    /// Write the bytes given in `hex` here.
    pub bytes: Option<String>,
    /// Delete this file or folder.
    pub remove: Option<String>,
    /// Write `content` repeated `times` times here.
    pub repeat: Option<String>,
    /// Text for `write` and `repeat`.
    pub content: Option<String>,
    /// Link target for `symlink` and `hardlink`.
    pub target: Option<String>,
    /// Bytes for `bytes`, as hex.
    pub hex: Option<String>,
    /// Copies for `repeat`.
    pub times: Option<usize>,
}

/// A refusal expected in the trace.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Denial {
    /// The tool that was refused.
    pub tool: String,
    /// Text the `DENIED:` reason contains.
    pub reason: String,
}

/// Text a file must (or must not) contain.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileText {
    /// Workspace-relative file.
    pub path: String,
    /// The text.
    pub text: String,
}

/// The checks of a case; every one that is set must hold.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Each appears in the answer.
    #[serde(default)]
    pub answer_contains: Vec<String>,
    /// None appears in the answer.
    #[serde(default)]
    pub answer_not_contains: Vec<String>,
    /// Each path or path#anchor is mentioned in the answer.
    #[serde(default)]
    pub cites: Vec<String>,
    /// The tools called, in this exact order.
    pub tools: Option<Vec<String>>,
    /// The first tool called.
    pub first_tool: Option<String>,
    /// The decision of each call, in order.
    pub decisions: Option<Vec<String>>,
    /// Calls refused with these reasons.
    #[serde(default)]
    pub denied: Vec<Denial>,
    /// Files that exist afterwards.
    #[serde(default)]
    pub files_exist: Vec<String>,
    /// Files that do not exist afterwards.
    #[serde(default)]
    pub files_absent: Vec<String>,
    /// Files holding a text afterwards.
    #[serde(default)]
    pub file_contains: Vec<FileText>,
    /// Files not holding a text afterwards (a missing file holds nothing).
    #[serde(default)]
    pub file_not_contains: Vec<FileText>,
    /// Values that appear in no sink: the answer, the trace, any file under notes/.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// How the run ends: answered, step_limit, time_limit, model_error, usage.
    pub stop: Option<String>,
}

/// A category: its name (the file stem) and its cases.
#[derive(Debug, Clone)]
pub struct Category {
    /// File stem, e.g. `injection`.
    pub name: String,
    /// Its cases, in file order.
    pub cases: Vec<Case>,
}

/// Why the cases cannot be loaded: each message names the folder or file, and the case.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The eval folder cannot be listed.
    #[error("cannot read the eval folder {}: {source}", dir.display())]
    Folder {
        /// The folder.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A case file cannot be read.
    #[error("{}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A case file is not valid TOML, or not the case format.
    #[error("{}: {source}", file.display())]
    Parse {
        /// The file.
        file: PathBuf,
        /// What the TOML reader said (with the line).
        source: toml::de::Error,
    },
    /// Two cases of one file share a name.
    #[error("{}: two cases are named `{name}`", file.display())]
    Duplicate {
        /// The file.
        file: PathBuf,
        /// The name.
        name: String,
    },
    /// A setup step does not say one thing to do.
    #[error("{}: case `{case}`: {source}", file.display())]
    Step {
        /// The file.
        file: PathBuf,
        /// The case.
        case: String,
        /// What is wrong with the step.
        source: StepError,
    },
}

/// Reads every `*.toml` in `dir`, sorted by name; an unreadable or invalid file is an error
/// naming it, and so is a repeated case name or a setup step without exactly one action.
pub fn load(dir: &Path) -> Result<Vec<Category>, LoadError> {
    let entries = std::fs::read_dir(dir).map_err(|source| LoadError::Folder { dir: dir.to_path_buf(), source })?;
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut categories = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| LoadError::Read { file: path.clone(), source })?;
        let file: CaseFile = toml::from_str(&text).map_err(|source| LoadError::Parse { file: path.clone(), source })?;
        let name = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let mut seen = std::collections::BTreeSet::new();
        for case in &file.case {
            if !seen.insert(case.name.as_str()) {
                return Err(LoadError::Duplicate { file: path, name: case.name.clone() });
            }
            for step in &case.setup {
                step.action().map_err(|source| LoadError::Step {
                    file: path.clone(),
                    case: case.name.clone(),
                    source,
                })?;
            }
        }
        categories.push(Category { name, cases: file.case });
    }
    Ok(categories)
}

/// Largest file a `repeat` step may make.
const MAX_REPEAT_BYTES: usize = 64 << 20;

/// What a setup step does.
pub enum Action<'a> {
    /// Write text.
    Write(&'a str, &'a str),
    /// Make a symlink to a target.
    Symlink(&'a str, &'a str),
    /// Make a hard link to a workspace file.
    Hardlink(&'a str, &'a str),
    /// Make a FIFO.
    Fifo(&'a str),
    /// Write bytes from hex.
    Bytes(&'a str, &'a str),
    /// Delete.
    Remove(&'a str),
    /// Write text repeated.
    Repeat(&'a str, &'a str, usize),
}

/// Why a setup step cannot be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepError {
    /// No action key, or more than one.
    #[error("a setup step needs exactly one of write, symlink, hardlink, fifo, bytes, remove, repeat")]
    NotOneAction,
    /// The action needs another key (`content`, `target`, `hex`, `times`).
    #[error("needs `{0}`")]
    Needs(&'static str),
    /// A `repeat` would make a file over [`MAX_REPEAT_BYTES`].
    #[error("repeat makes more than {} MiB", MAX_REPEAT_BYTES >> 20)]
    TooLarge,
}

impl Setup {
    /// The one action this step names, or why it is malformed.
    pub fn action(&self) -> Result<Action<'_>, StepError> {
        let content = || self.content.as_deref().ok_or(StepError::Needs("content"));
        let target = || self.target.as_deref().ok_or(StepError::Needs("target"));
        let set = [&self.write, &self.symlink, &self.hardlink, &self.fifo, &self.bytes, &self.remove, &self.repeat]
            .iter()
            .filter(|a| a.is_some())
            .count();
        if set != 1 {
            return Err(StepError::NotOneAction);
        }
        Ok(if let Some(p) = &self.write {
            Action::Write(p, content()?)
        } else if let Some(p) = &self.symlink {
            Action::Symlink(p, target()?)
        } else if let Some(p) = &self.hardlink {
            Action::Hardlink(p, target()?)
        } else if let Some(p) = &self.fifo {
            Action::Fifo(p)
        } else if let Some(p) = &self.bytes {
            Action::Bytes(p, self.hex.as_deref().ok_or(StepError::Needs("hex"))?)
        } else if let Some(p) = &self.remove {
            Action::Remove(p)
        } else if let Some(p) = &self.repeat {
            let times = self.times.ok_or(StepError::Needs("times"))?;
            let content = content()?;
            if content.len().saturating_mul(times) > MAX_REPEAT_BYTES {
                return Err(StepError::TooLarge);
            }
            Action::Repeat(p, content, times)
        } else {
            return Err(StepError::NotOneAction);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of a table: the input, which error it must give, and that error's message.
    type Row<'a> = (&'a str, fn(&LoadError) -> bool, &'a str);

    /// Each way a setup step is malformed: the error `action` returns, and its message.
    #[test]
    fn malformed_steps_are_named() {
        let text = |s: &str| Some(s.to_string());
        #[rustfmt::skip]
        let cases = [
            (Setup::default(), StepError::NotOneAction,
             "a setup step needs exactly one of write, symlink, hardlink, fifo, bytes, remove, repeat"),
            (Setup { write: text("a"), remove: text("b"), ..Setup::default() }, StepError::NotOneAction,
             "a setup step needs exactly one of write, symlink, hardlink, fifo, bytes, remove, repeat"),
            (Setup { write: text("a"), ..Setup::default() }, StepError::Needs("content"), "needs `content`"),
            (Setup { symlink: text("a"), ..Setup::default() }, StepError::Needs("target"), "needs `target`"),
            (Setup { bytes: text("a"), ..Setup::default() }, StepError::Needs("hex"), "needs `hex`"),
            (Setup { repeat: text("a"), content: text("x"), ..Setup::default() }, StepError::Needs("times"),
             "needs `times`"),
            (Setup { repeat: text("a"), content: text("xx"), times: Some(40 << 20), ..Setup::default() },
             StepError::TooLarge, "repeat makes more than 64 MiB"),
        ];
        for (step, want, message) in cases {
            assert_eq!(step.action().err(), Some(want.clone()), "{step:?}");
            assert_eq!(want.to_string(), message);
        }
    }

    /// Each way the cases fail to load: the error, and its message naming the file and case.
    #[test]
    fn load_errors_name_the_file() {
        let tmp = tempfile::tempdir().expect("tmp");
        let missing = tmp.path().join("missing");
        let error = load(&missing).expect_err("no folder");
        assert!(matches!(error, LoadError::Folder { .. }), "{error:?}");
        assert!(error.to_string().starts_with(&format!("cannot read the eval folder {}: ", missing.display())));
        #[rustfmt::skip]
        let cases: [Row<'_>; 3] = [
            ("[[case]]\nname = \"a\"\nquestion = \"q\"\n[[case]]\nname = \"a\"\nquestion = \"q\"\n",
             |e| matches!(e, LoadError::Duplicate { .. }), ": two cases are named `a`"),
            ("[[case]]\nname = \"a\"\nquestion = \"q\"\n[[case.setup]]\nwrite = \"x\"\n",
             |e| matches!(e, LoadError::Step { .. }), ": case `a`: needs `content`"),
            ("[[case]]\nname = \"a\"\n", |e| matches!(e, LoadError::Parse { .. }), ": "),
        ];
        for (i, (toml, is, tail)) in cases.into_iter().enumerate() {
            let dir = tmp.path().join(format!("d{i}"));
            std::fs::create_dir(&dir).expect("mkdir");
            let file = dir.join("cat.toml");
            std::fs::write(&file, toml).expect("write");
            let error = load(&dir).expect_err(toml);
            assert!(is(&error), "{toml}: {error:?}");
            assert!(error.to_string().starts_with(&format!("{}{tail}", file.display())), "{error}");
        }
        let dir = tmp.path().join("unreadable");
        std::fs::create_dir_all(dir.join("cat.toml")).expect("a folder named like a file");
        assert!(matches!(load(&dir), Err(LoadError::Read { .. })));
    }
}
