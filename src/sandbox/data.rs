//! Which folder a data file (the session log, the index) may be written in once the sandbox
//! grants it. Granting a folder grants everything beneath it, so a folder is refused when it
//! is `/`, holds the workspace, or lies in the workspace's `docs/` or `skills/`, and when the
//! path to it goes through a symbolic link inside the workspace (a workspace that ships
//! `.docs-agent -> ~/.ssh` must not make `~/.ssh` writable). The checks run twice: on the path
//! as written, before any folder is made, and on the real folder by device and inode, so a
//! bind mount or a link outside the workspace cannot alias a refused place.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

/// Why a data folder is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It is the root of the filesystem.
    Root,
    /// It is the workspace or one of its parents.
    HoldsWorkspace,
    /// It lies in the workspace's `docs/` or `skills/`.
    InArea(&'static str),
    /// The path to it goes through this symbolic link inside the workspace.
    LinkInWorkspace(PathBuf),
}

impl Refused {
    /// Why, for the message that names the setting.
    pub fn why(&self) -> String {
        match self {
            Refused::Root => "is the root of the filesystem".into(),
            Refused::HoldsWorkspace => "holds the workspace".into(),
            Refused::InArea(area) => format!("is inside the workspace's {area}/"),
            Refused::LinkInWorkspace(link) => {
                format!("is reached through {}, a symbolic link inside the workspace", link.display())
            }
        }
    }
}

/// The folder `file` is in (`.` for a bare name).
pub fn folder_of(file: &Path) -> &Path {
    match file.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    }
}

/// The real folder to grant for `file` (made if missing, private), or `None` when it cannot be
/// made: it then gets no rule, and the log or index says why it cannot open.
pub fn folder_for(file: &Path, workspace: &Path) -> Result<Option<PathBuf>, Refused> {
    let folder = folder_of(file);
    let (Ok(written), Ok(workspace_written)) = (std::path::absolute(folder), std::path::absolute(workspace)) else {
        return Ok(None);
    };
    let workspace_real = std::fs::canonicalize(workspace).ok();
    let workspaces: Vec<PathBuf> =
        [Some(normal(&workspace_written)), workspace_real.clone()].into_iter().flatten().collect();
    check_as_written(&normal(&written), &workspaces)?;
    let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder);
    let Ok(real) = std::fs::canonicalize(folder) else { return Ok(None) };
    if real.parent().is_none() {
        return Err(Refused::Root);
    }
    if let Some(workspace) = &workspace_real {
        check_real(&real, workspace)?;
    }
    Ok(Some(real))
}

/// How the folder `file` lives in touches `protected`: "is in" or "holds"; `None` when they
/// are apart. Compared as written (made absolute, `.` and `..` taken out) and as real paths: a
/// folder not made yet is resolved through its deepest existing parent, so a link on the way
/// (`data/alias -> docs/sub`, then `data/alias/new/x.db`) is followed before anything is made.
pub fn touches(file: &Path, protected: &Path) -> Option<&'static str> {
    overlap(folder_of(file), protected)
}

/// How folder `a` touches folder `b`: "is in" (or is it) or "holds"; `None` when apart.
pub fn overlap(a: &Path, b: &Path) -> Option<&'static str> {
    let forms = |p: &Path| -> Vec<PathBuf> {
        let written = std::path::absolute(p).ok().map(|p| normal(&p));
        written.iter().cloned().chain(written.as_deref().and_then(real_through_parents)).collect()
    };
    let (a, b) = (forms(a), forms(b));
    for a in &a {
        for b in &b {
            if a.starts_with(b) {
                return Some("is in");
            }
            if b.starts_with(a) {
                return Some("holds");
            }
        }
    }
    None
}

/// `path` with its deepest existing parent resolved to its real path, and the rest (which does
/// not exist, so holds no link) put back.
fn real_through_parents(path: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return Some(rest.iter().rev().fold(real, |p: PathBuf, part| p.join(part)));
        }
        rest.push(at.file_name()?.to_os_string());
        at = at.parent()?;
    }
}

/// The checks on the path as written (made absolute, `.` and `..` taken out), before any
/// folder is made: not a parent of the workspace, not in `docs/` or `skills/`, and no link
/// between the workspace and it.
fn check_as_written(folder: &Path, workspaces: &[PathBuf]) -> Result<(), Refused> {
    if folder.parent().is_none() {
        return Err(Refused::Root);
    }
    for workspace in workspaces {
        if workspace.starts_with(folder) {
            return Err(Refused::HoldsWorkspace);
        }
        let Ok(inside) = folder.strip_prefix(workspace) else { continue };
        if let Some(area) = ["docs", "skills"].into_iter().find(|area| inside.starts_with(area)) {
            return Err(Refused::InArea(area));
        }
        let mut path = workspace.clone();
        for part in inside.components() {
            path.push(part);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(Refused::LinkInWorkspace(path));
            }
        }
    }
    Ok(())
}

/// The checks on the real folder, by device and inode: it is not the workspace or one of its
/// parents, and neither it nor a parent of it is the workspace's `docs/` or `skills/`.
fn check_real(real: &Path, workspace: &Path) -> Result<(), Refused> {
    let id = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    let Some(folder) = id(real) else { return Ok(()) };
    if workspace.ancestors().any(|parent| id(parent) == Some(folder)) {
        return Err(Refused::HoldsWorkspace);
    }
    for area in ["docs", "skills"] {
        let Some(area_id) = id(&workspace.join(area)) else { continue };
        if real.ancestors().any(|parent| id(parent) == Some(area_id)) {
            return Err(Refused::InArea(area));
        }
    }
    Ok(())
}

/// `path` with `.` and `..` taken out lexically (a `..` after a link is judged again on the
/// real folder).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_folders_and_a_folder_of_its_own() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("ws");
        let outside = tmp.path().join("outside");
        for dir in [ws.join("docs"), ws.join("skills"), outside.clone()] {
            std::fs::create_dir_all(dir).expect("dir");
        }
        std::os::unix::fs::symlink(&outside, ws.join(".docs-agent")).expect("link");
        std::os::unix::fs::symlink("/", ws.join("root")).expect("link");
        std::os::unix::fs::symlink(ws.join("docs"), outside.join("docs-alias")).expect("link");
        let refused = |file: PathBuf| folder_for(&file, &ws).err();
        assert_eq!(refused(tmp.path().join("x.db")), Some(Refused::HoldsWorkspace));
        assert_eq!(refused(ws.join("x.db")), Some(Refused::HoldsWorkspace));
        assert_eq!(refused(ws.join("docs/new/x.db")), Some(Refused::InArea("docs")));
        assert!(!ws.join("docs/new").exists(), "refused before anything is made");
        assert_eq!(refused(ws.join("skills/../docs/x.db")), Some(Refused::InArea("docs")));
        assert_eq!(refused(ws.join(".docs-agent/x.db")), Some(Refused::LinkInWorkspace(ws.join(".docs-agent"))));
        assert_eq!(refused(ws.join("root/x.db")), Some(Refused::LinkInWorkspace(ws.join("root"))));
        assert_eq!(refused(outside.join("docs-alias/x.db")), Some(Refused::InArea("docs")), "a link outside");
        assert_eq!(refused(PathBuf::from("/x.db")), Some(Refused::Root));

        let own = folder_for(&ws.join("data/x.db"), &ws).expect("granted").expect("made");
        assert_eq!(own, ws.join("data").canonicalize().expect("real"));
        assert_eq!(folder_for(&outside.join("x.db"), &ws), Ok(Some(outside.canonicalize().expect("real"))));
    }

    /// A data folder in a docs folder given beside the workspace, or holding it, as written or
    /// through a link, is told; one apart is not.
    #[test]
    fn a_data_folder_touching_a_docs_folder_is_told() {
        let tmp = tempfile::tempdir().expect("tmp");
        let docs = tmp.path().join("my-docs");
        let apart = tmp.path().join("data");
        std::fs::create_dir_all(docs.join("sub")).expect("dir");
        std::fs::create_dir_all(&apart).expect("dir");
        std::os::unix::fs::symlink(docs.join("sub"), apart.join("alias")).expect("link");
        assert_eq!(touches(&docs.join("x.db"), &docs), Some("is in"));
        assert_eq!(touches(&docs.join("sub/x.db"), &docs), Some("is in"));
        assert_eq!(touches(&apart.join("../my-docs/x.db"), &docs), Some("is in"));
        assert_eq!(touches(&apart.join("alias/x.db"), &docs), Some("is in"), "through a link");
        assert_eq!(touches(&tmp.path().join("x.db"), &docs), Some("holds"));
        assert_eq!(touches(&apart.join("x.db"), &docs), None);
        // A folder not made yet, through a link into the docs; a link to a parent of the docs.
        assert_eq!(touches(&apart.join("alias/new/deeper/x.db"), &docs), Some("is in"), "not made yet");
        std::os::unix::fs::symlink(tmp.path(), apart.join("up")).expect("link");
        assert_eq!(touches(&apart.join("up/x.db"), &docs), Some("holds"), "through a link to a parent");
        assert_eq!(overlap(&docs, &docs.join("sub")), Some("holds"));
    }
}
