//! The workspace on disk: one capability handle per area (`docs/`, `skills/`, `notes/`, the root
//! for `AGENTS.md`). A [`ModelPath`] is opened only through the handle of its area, so a symlink
//! or `..` can never reach outside it, and there is no check-then-open race: cap-std resolves
//! every component inside the handle.

pub mod approval;
pub mod hidden;
pub mod policy;

#[cfg(test)]
mod tests;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions, OpenOptionsExt};

use approval::Approved;
use policy::{Area, Denied, ModelPath};

/// Open handles on the workspace's areas.
pub struct Workspace {
    /// Where the workspace is, for messages.
    path: PathBuf,
    /// The workspace root, used only for `AGENTS.md` and to find the areas.
    root: Dir,
    /// `docs/`, when present. Replaced whole when a git source moves to a new tree
    /// ([`Workspace::switch_docs`]); a reader keeps the handle it took for all it does.
    docs: std::sync::RwLock<Option<std::sync::Arc<Dir>>>,
    /// `skills/`, when present.
    skills: Option<Dir>,
    /// `notes/`, when present: writes are denied without it.
    notes: Option<Dir>,
    /// What the operator's rules keep from being read in `docs/` ([`Workspace::hiding`]).
    hidden: hidden::Hidden,
    /// True for a docs folder alone: the root is the docs, and there is no AGENTS.md, no
    /// skills and no notes.
    docs_alone: bool,
}

/// Where the workspace's documents are.
#[derive(Debug, Clone, Copy)]
pub enum Layout<'a> {
    /// In the workspace's `docs/`, beside `AGENTS.md`, `skills/` and `notes/`.
    Workspace,
    /// In this folder; `AGENTS.md`, `skills/` and `notes/` in the workspace.
    DocsAt(&'a Path),
    /// A plain docs folder, here: no `AGENTS.md`, skills or notes. The workspace's root is the
    /// folder itself, or (for a git source) the folder its trees are kept in.
    DocsAlone(&'a Path),
}

/// The workspace could not be opened at all. One message, written for the person who meets it: what failed, on which input,
/// what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WorkspaceError(pub String);

/// Why a file could not be read or written: a policy denial or an ordinary failure.
#[derive(Debug)]
pub enum FileError {
    /// The harness refused: shown to the model as `DENIED: ...`.
    Denied(Denied),
    /// Something failed: shown as `ERROR: ...`.
    Failed(String),
}

impl From<Denied> for FileError {
    fn from(d: Denied) -> Self {
        FileError::Denied(d)
    }
}

/// Flags that keep `open` from blocking on a FIFO or taking a terminal.
const NONBLOCKING: i32 = libc::O_NONBLOCK | libc::O_NOCTTY;

impl Workspace {
    /// Opens the workspace at `path` with its `docs/`, `skills/` and `notes/`; its areas are
    /// optional, the root is not.
    pub fn open(path: &Path) -> Result<Workspace, WorkspaceError> {
        Workspace::open_as(path, Layout::Workspace)
    }

    /// Opens the workspace `config` names: `workspace`, its documents in `docs` when that is
    /// set (the whole workspace when no workspace was named).
    pub fn of(config: &crate::config::Config) -> Result<Workspace, WorkspaceError> {
        let layout = match &config.docs {
            Some(docs) if config.docs_alone => Layout::DocsAlone(docs),
            Some(docs) => Layout::DocsAt(docs),
            None => Layout::Workspace,
        };
        Workspace::open_as(&config.workspace, layout)
    }

    /// Opens the workspace at `path`, its documents where `layout` says.
    pub fn open_as(path: &Path, layout: Layout<'_>) -> Result<Workspace, WorkspaceError> {
        let opened = |folder: &Path, what: &str| {
            Dir::open_ambient_dir(folder, ambient_authority()).map_err(|e| {
                WorkspaceError(format!(
                    "cannot open {what} {}: {e}; pass --docs DIR (a folder of documents) or --workspace DIR \
                     (a folder with docs/)",
                    folder.display()
                ))
            })
        };
        let what = if matches!(layout, Layout::DocsAlone(_)) { "the docs folder" } else { "workspace" };
        let root = opened(path, what)?;
        // An area that is a symbolic link is not opened: `notes -> .` would make the whole
        // workspace writable, `docs -> ..` readable. `check` reports it.
        let area = |name: &str| root.open_dir_nofollow(name).ok();
        let (docs, skills, notes) = match layout {
            Layout::Workspace => (area("docs"), area("skills"), area("notes")),
            Layout::DocsAt(docs) => (Some(opened(docs, "the docs folder")?), area("skills"), area("notes")),
            Layout::DocsAlone(docs) => (Some(opened(docs, "the docs folder")?), None, None),
        };
        Ok(Workspace {
            path: path.to_path_buf(),
            docs: std::sync::RwLock::new(docs.map(std::sync::Arc::new)),
            skills,
            notes,
            root,
            hidden: hidden::Hidden::default(),
            docs_alone: matches!(layout, Layout::DocsAlone(_)),
        })
    }

    /// True for a docs folder alone (no AGENTS.md, skills or notes are looked for).
    pub fn docs_alone(&self) -> bool {
        self.docs_alone
    }

    /// The workspace, refusing to read a document of `docs/` through a link that leads to one
    /// `hidden` keeps from being read.
    pub fn hiding(self, hidden: hidden::Hidden) -> Workspace {
        Workspace { hidden, ..self }
    }

    /// Where the workspace is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root handle (for loaders that walk skills/ themselves).
    pub fn root(&self) -> &Dir {
        &self.root
    }

    /// The `docs/` handle, if the workspace has one.
    pub fn docs(&self) -> Option<std::sync::Arc<Dir>> {
        self.docs.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// Opens `folder` and reads the documents from it from now on ([`Workspace::switch_docs`]).
    pub fn switch_docs_to(&self, folder: &Path) -> Result<(), WorkspaceError> {
        let docs = Dir::open_ambient_dir(folder, ambient_authority())
            .map_err(|e| WorkspaceError(format!("cannot open the docs folder {}: {e}", folder.display())))?;
        // The operator's rules resolve links in the new folder too (every generation shares them).
        self.hidden.switch(&docs);
        self.switch_docs(docs);
        Ok(())
    }

    /// Reads the documents from `docs` from now on (a git source's new tree); a reader that
    /// took the old handle finishes with it.
    pub fn switch_docs(&self, docs: Dir) {
        *self.docs.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(std::sync::Arc::new(docs));
    }

    /// The `skills/` handle, if the workspace has one.
    pub fn skills(&self) -> Option<&Dir> {
        self.skills.as_ref()
    }

    /// The areas (`docs`, `skills`, `notes`) that are symbolic links, and so not opened.
    pub fn linked_areas(&self) -> Vec<&'static str> {
        if self.docs_alone {
            return Vec::new();
        }
        ["docs", "skills", "notes"]
            .into_iter()
            .filter(|name| self.root.symlink_metadata(name).is_ok_and(|m| m.file_type().is_symlink()))
            .collect()
    }

    /// True when `notes/` exists, so writes are possible.
    pub fn has_notes(&self) -> bool {
        self.notes.is_some()
    }

    /// True when the operator's rules keep the document at `path` (`docs/…`) from being read,
    /// by its name or where its links lead.
    pub fn hides(&self, path: &str) -> bool {
        self.hidden.hides(path)
    }

    /// Reads a UTF-8 text file of at most `max_bytes` bytes, confined to its area.
    pub fn read_text(&self, path: &ModelPath, max_bytes: u64) -> Result<String, FileError> {
        let docs = self.docs();
        let (dir, inner) = match path.area() {
            Area::AgentsMd if self.docs_alone => return Err(FileError::Failed("AGENTS.md: no such file".into())),
            Area::AgentsMd => (Some(&self.root), "AGENTS.md".to_string()),
            Area::Docs => (docs.as_deref(), path.inner()),
            Area::Skills => (self.skills.as_ref(), path.inner()),
            Area::Notes => (self.notes.as_ref(), path.inner()),
        };
        let dir = dir.ok_or_else(|| {
            FileError::Failed(format!(
                "{}/ is missing from this workspace, or is a symbolic link (areas must be real folders)",
                path.area().prefix()
            ))
        })?;
        if path.area() == Area::Docs
            && let Some(to) = self.hidden.leads_to_hidden(&path.display())
        {
            return Err(Denied(format!(
                "{path} is a link to {to}, which the operator's rules keep from being read; links do not change what a rule decides"
            ))
            .into());
        }
        read_confined(dir, &inner, max_bytes).map_err(|e| match e {
            FileError::Failed(m) => FileError::Failed(format!("{path}: {m}")),
            FileError::Denied(Denied(m)) => FileError::Denied(Denied(format!("{path}: {m}"))),
        })
    }

    /// Writes a note. Needs an [`Approved`] value; the path and content are redacted first.
    /// The file is written to a temporary name and renamed, so a failure leaves no half note,
    /// and the rename replaces a directory entry: it never writes through a link.
    pub fn write_note(&self, path: &ModelPath, content: &str, _approved: Approved) -> Result<usize, FileError> {
        if path.area() != Area::Notes {
            return Err(Denied(format!("{path} is not under notes/")).into());
        }
        let notes = self.notes.as_ref().ok_or_else(|| {
            FileError::Failed(
                "notes/ is missing from this workspace, or is a symbolic link; create a real notes/ folder to allow notes".into(),
            )
        })?;
        let inner = path.inner();
        if crate::guard::scrub(&inner) != inner.as_str() {
            return Err(Denied("the path contains something that looks like a secret".into()).into());
        }
        let content = crate::guard::scrub(content);
        let (parent, name) = match inner.rsplit_once('/') {
            Some((parent, name)) => (Some(parent), name),
            None => (None, inner.as_str()),
        };
        let dir = match parent {
            Some(parent) => open_note_folder(notes, parent)?,
            None => notes.try_clone().map_err(|e| FileError::Failed(e.to_string()))?,
        };
        refuse_links(&dir, name).map_err(|e| match e {
            FileError::Denied(Denied(m)) => {
                FileError::Denied(Denied(m.replacen(&format!("notes/{name}"), &path.display(), 1)))
            }
            other => other,
        })?;
        let temp = format!(".{name}.tmp-{}", std::process::id());
        let mut options = OpenOptions::new();
        options.write(true).create_new(true).mode(0o644).custom_flags(NONBLOCKING);
        options.follow(FollowSymlinks::No);
        let mut file = dir.open_with(&temp, &options).map_err(|e| confine_error(e, "cannot create the note"))?;
        let written = file
            .write_all(content.as_bytes())
            .and_then(|()| file.sync_all())
            .and_then(|()| dir.rename(&temp, &dir, name));
        if let Err(e) = written {
            let _ = dir.remove_file(&temp);
            return Err(FileError::Failed(format!("cannot write {path}: {e}")));
        }
        // The note is in place; syncing its folder makes the rename survive a power loss. A
        // failure here does not undo the write, so it is only logged.
        let mut read_only = OpenOptions::new();
        read_only.read(true);
        if let Err(e) = dir.open_with(".", &read_only).and_then(|folder| folder.sync_all()) {
            tracing::warn!("wrote {path} but could not sync its folder: {e}");
        }
        Ok(content.len())
    }
}

/// Opens (creating as needed) the folder `parent` inside notes/, one component at a time, refusing
/// any component that is a symbolic link.
fn open_note_folder(notes: &Dir, parent: &str) -> Result<Dir, FileError> {
    let mut dir = notes.try_clone().map_err(|e| FileError::Failed(e.to_string()))?;
    for name in parent.split('/') {
        match dir.symlink_metadata(name) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Denied(format!(
                    "notes/{parent}: `{name}` is a symbolic link; links in notes/ are not followed"
                ))
                .into());
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                dir.create_dir(name).map_err(|e| confine_error(e, "cannot create the folder"))?;
            }
            Err(e) => return Err(confine_error(e, "cannot inspect the folder")),
        }
        dir = dir.open_dir_nofollow(name).map_err(|e| confine_error(e, "cannot open the folder"))?;
    }
    Ok(dir)
}

/// Refuses to replace a symlink or a file with other hard links: either may lead elsewhere.
fn refuse_links(dir: &Dir, name: &str) -> Result<(), FileError> {
    match dir.symlink_metadata(name) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(Denied(format!("notes/{name} is a symbolic link; links in notes/ are not followed or replaced")).into())
        }
        Ok(meta) if !meta.is_file() => Err(Denied(format!("notes/{name} is not a regular file")).into()),
        Ok(meta) if cap_std::fs::MetadataExt::nlink(&meta) > 1 => {
            Err(Denied(format!("notes/{name} is hard-linked elsewhere; it may not be written")).into())
        }
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(confine_error(e, "cannot inspect the note")),
    }
}

/// Opens and reads a regular file inside `dir` without following links out of it or blocking;
/// a PDF is read as its text, the rendition `crate::pdf` makes.
pub fn read_confined(dir: &Dir, inner: &str, max_bytes: u64) -> Result<String, FileError> {
    read_confined_sized(dir, inner, max_bytes).map(|(text, _)| text)
}

/// [`read_confined`], with how many bytes the file held when read (a PDF's text is not its
/// size: an index update compares this with the size it listed).
pub fn read_confined_sized(dir: &Dir, inner: &str, max_bytes: u64) -> Result<(String, u64), FileError> {
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(NONBLOCKING);
    let file = dir.open_with(inner, &options).map_err(|e| confine_error(e, "cannot open"))?;
    let meta = file.metadata().map_err(|e| FileError::Failed(e.to_string()))?;
    if !meta.is_file() {
        return Err(FileError::Failed("not a regular file".into()));
    }
    if meta.len() > max_bytes {
        return Err(FileError::Failed(format!("{} bytes is over the {max_bytes}-byte limit", meta.len())));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes).map_err(|e| FileError::Failed(e.to_string()))?;
    // A PDF is read as its text (`crate::pdf`): what the index, read_file and check see.
    let size = bytes.len() as u64;
    if crate::doc_kind::DocKind::of(inner) == Some(crate::doc_kind::DocKind::Pdf) {
        return crate::pdf::read(&bytes, max_bytes)
            .map(|pdf| (pdf.rendition(), size))
            .map_err(|e| FileError::Failed(e.to_string()));
    }
    if bytes.contains(&0) {
        return Err(FileError::Failed("binary file (contains NUL bytes)".into()));
    }
    String::from_utf8(bytes)
        .map(|text| (text, size))
        .map_err(|e| FileError::Failed(format!("not UTF-8 text (invalid byte at {})", e.utf8_error().valid_up_to())))
}

/// Turns an OS error from a confined open into a denial (escape attempts) or a failure.
fn confine_error(e: std::io::Error, what: &str) -> FileError {
    let text = e.to_string();
    if text.contains("outside of the filesystem") || e.raw_os_error() == Some(40) {
        // cap-std: "a path led outside of the filesystem"; ELOOP (40): a symlink where none may be.
        FileError::Denied(Denied(format!("{what}: the path leads outside its folder through a link")))
    } else if e.kind() == std::io::ErrorKind::NotFound {
        FileError::Failed(format!("{what}: no such file"))
    } else {
        FileError::Failed(format!("{what}: {text}"))
    }
}
