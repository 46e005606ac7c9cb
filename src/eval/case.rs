//! The eval case format (`evals/*.toml`, one file per category), read with a real TOML parser.
//! See `evals/README.md` for the format as users write it.

use std::collections::BTreeMap;
use std::path::Path;

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

/// Reads every `*.toml` in `dir`, sorted by name; an unreadable or invalid file is an error
/// naming it, and so is a repeated case name or a setup step without exactly one action.
pub fn load(dir: &Path) -> Result<Vec<Category>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the eval folder {}: {e}", dir.display()))?;
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut categories = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file: CaseFile = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let mut seen = std::collections::BTreeSet::new();
        for case in &file.case {
            if !seen.insert(case.name.as_str()) {
                return Err(format!("{}: two cases are named `{}`", path.display(), case.name));
            }
            for step in &case.setup {
                step.action().map_err(|e| format!("{}: case `{}`: {e}", path.display(), case.name))?;
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

impl Setup {
    /// The one action this step names, or why it is malformed.
    pub fn action(&self) -> Result<Action<'_>, String> {
        let content = || self.content.as_deref().ok_or("needs `content`");
        let target = || self.target.as_deref().ok_or("needs `target`");
        let set = [&self.write, &self.symlink, &self.hardlink, &self.fifo, &self.bytes, &self.remove, &self.repeat]
            .iter()
            .filter(|a| a.is_some())
            .count();
        if set != 1 {
            return Err(
                "a setup step needs exactly one of write, symlink, hardlink, fifo, bytes, remove, repeat".into()
            );
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
            Action::Bytes(p, self.hex.as_deref().ok_or("needs `hex`")?)
        } else if let Some(p) = &self.remove {
            Action::Remove(p)
        } else if let Some(p) = &self.repeat {
            let times = self.times.ok_or("needs `times`")?;
            let content = content()?;
            if content.len().saturating_mul(times) > MAX_REPEAT_BYTES {
                return Err(format!("repeat makes more than {} MiB", MAX_REPEAT_BYTES >> 20));
            }
            Action::Repeat(p, content, times)
        } else {
            return Err("no action".into());
        })
    }
}
