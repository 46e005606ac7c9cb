//! A commit's tree (or one folder of it) written into a new folder. Written here rather than by
//! gix's worktree checkout, which makes symbolic links as the tree says (`../../etc/passwd`
//! included), has no size limit and runs filter programs: here a link is made only when it leads
//! to a file inside the folder, and then straight to that file (the chain of links the tree
//! wrote is resolved here, by path, never by the disk). So the tree on disk has the layout the
//! repository has, and the reading rules judge a link in a git source as they judge one on disk:
//! by its name and by where it leads (`workspace::hidden`). What is left out is said.
//!
//! What a tree can make this build is bounded whatever the repository holds: at most
//! [`MAX_FILES`] entries, [`MAX_DEPTH`] folders deep, names of at most [`MAX_NAME_BYTES`] and
//! paths of at most [`MAX_PATH_BYTES`] (so the listing holds at most their product), and the
//! files at most [`MAX_TREE_BYTES`]. Deeper folders and longer names are left out and said.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use gix::bstr::ByteSlice;
use gix::object::tree::EntryKind;

use super::{Skipped, SyncError};

/// A tree with more files than this is refused whole, rather than served in part.
pub const MAX_FILES: usize = 200_000;

/// A tree whose files (those under the size limit) add up to more is refused whole: a small
/// pack can name the same large blob many times.
pub const MAX_TREE_BYTES: u64 = 2 << 30;

/// Folders deeper than this are left out (and said): the walk of the docs folder on disk goes no
/// deeper either (`index::walk`'s own limit, the same number).
pub const MAX_DEPTH: usize = 32;

/// The longest name served: what the file systems hold.
pub const MAX_NAME_BYTES: usize = 255;

/// The longest path served, from the docs folder. With [`MAX_FILES`], it bounds the listing's
/// memory (200,000 paths of at most 1 kB: 200 MB at the very worst, a few MB for real docs).
pub const MAX_PATH_BYTES: usize = 1024;

/// The largest link target read (a path).
const MAX_LINK_BYTES: u64 = 4096;

/// How many levels of links are followed to find a file.
pub const MAX_LINK_HOPS: usize = 8;

/// One entry of the tree, by its path in the docs folder.
#[derive(Clone, Copy)]
struct Entry {
    kind: EntryKind,
    oid: gix::ObjectId,
}

/// Writes the docs folder of `commit` (`sub`, or the whole tree) as the new folder `dest`,
/// linking the files `previous` (the tree served before) already has with the same content.
/// Files over `max_bytes` are left out, and so are links that lead out of the folder or to
/// anything but a file, and submodules: each is listed with its reason. A link to a file inside
/// the folder is a link straight to it. `dest` appears whole or not at all.
pub fn checkout(
    repo: &gix::Repository,
    commit: gix::ObjectId,
    sub: &str,
    dest: &Path,
    previous: Option<&Path>,
    max_bytes: u64,
) -> Result<Vec<Skipped>, SyncError> {
    let failed = |e: &dyn std::fmt::Display| SyncError::Checkout(format!("commit {commit}: {e}"));
    let mut tree = repo.find_commit(commit).map_err(|e| failed(&e))?.tree().map_err(|e| failed(&e))?;
    if !sub.is_empty() {
        let entry = tree
            .lookup_entry_by_path(sub)
            .map_err(|e| failed(&e))?
            .ok_or_else(|| failed(&format!("the folder {sub} is not in this commit; check the source's path")))?;
        if !entry.mode().is_tree() {
            return Err(failed(&format!("{sub} is not a folder; check the source's path")));
        }
        tree = entry.object().map_err(|e| failed(&e))?.into_tree();
    }
    let (entries, mut skipped) = listing(repo, &tree).map_err(|e| failed(&e))?;
    let by_path: HashMap<&str, Entry> = entries.iter().map(|(p, e)| (p.as_str(), *e)).collect();
    let old = previous.map(manifest_of).unwrap_or_default();

    let trees = dest.parent().ok_or_else(|| failed(&"the tree has no parent folder"))?;
    let name = dest.file_name().and_then(|n| n.to_str()).ok_or_else(|| failed(&"the tree's name"))?;
    if dest.is_dir() {
        // A commit served before and not pruned (a force-push back to it): its tree is whole.
        return Ok(skipped);
    }
    let partial = trees.join(format!(".{name}.partial"));
    let _ = std::fs::remove_dir_all(&partial);
    std::fs::create_dir(&partial).map_err(|e| failed(&format!("cannot create {}: {e}", partial.display())))?;
    let written = (|| -> Result<Vec<(String, gix::ObjectId)>, SyncError> {
        let mut manifest = Vec::new();
        let mut written_bytes = 0u64;
        for (path, entry) in &entries {
            let out = partial.join(path);
            let blob = match entry.kind {
                EntryKind::Tree => {
                    std::fs::create_dir_all(&out).map_err(|e| failed(&format!("{path}: {e}")))?;
                    continue;
                }
                EntryKind::Commit => {
                    skipped.push(Skipped::new(path, "a submodule (another repository): not read"));
                    continue;
                }
                EntryKind::Blob | EntryKind::BlobExecutable => entry.oid,
                EntryKind::Link => {
                    match followed(repo, &by_path, path) {
                        Ok((to, oid)) if fits(repo, oid, max_bytes) => {
                            if let Some(parent) = out.parent() {
                                std::fs::create_dir_all(parent).map_err(|e| failed(&format!("{path}: {e}")))?;
                            }
                            std::os::unix::fs::symlink(relative(path, &to), &out)
                                .map_err(|e| failed(&format!("{path}: {e}")))?;
                        }
                        Ok((to, _)) => skipped.push(Skipped::new(
                            path,
                            &format!("a link to {to}, which is left out (over index.max_file_bytes)"),
                        )),
                        Err(why) => skipped.push(Skipped::new(path, &why)),
                    }
                    continue;
                }
            };
            let size = repo.find_header(blob).map_err(|e| failed(&e))?.size();
            if size <= max_bytes {
                written_bytes += size;
            }
            if written_bytes > MAX_TREE_BYTES {
                return Err(failed(&format!(
                    "its files add up to more than {} GiB; the tree is refused whole rather than served in part",
                    MAX_TREE_BYTES >> 30
                )));
            }
            if size > max_bytes {
                skipped.push(Skipped::new(path, &format!("{size} bytes, over index.max_file_bytes ({max_bytes})")));
                continue;
            }
            if let Some(parent) = out.parent() {
                std::fs::create_dir_all(parent).map_err(|e| failed(&format!("{path}: {e}")))?;
            }
            let linked = match (previous, old.get(path.as_str())) {
                (Some(previous), Some(was)) if *was == blob => std::fs::hard_link(previous.join(path), &out).is_ok(),
                _ => false,
            };
            if !linked {
                let data = repo.find_blob(blob).map_err(|e| failed(&e))?.detach().data;
                write_new(&out, &data).map_err(|e| failed(&format!("{path}: {e}")))?;
            }
            manifest.push((path.clone(), blob));
        }
        Ok(manifest)
    })();
    let manifest = match written {
        Ok(manifest) => manifest,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    let mut listing = String::new();
    for (path, oid) in &manifest {
        listing.push_str(&format!("{oid}\t{path}\n"));
    }
    // The manifest goes in place first (a temporary name, renamed), then the tree: a manifest
    // without its tree is harmless, replaced by the next checkout of that commit.
    let manifest_temp = trees.join(format!(".{name}.files.partial"));
    let _ = std::fs::remove_file(&manifest_temp);
    let done = write_new(&manifest_temp, listing.as_bytes())
        .and_then(|()| std::fs::rename(&manifest_temp, trees.join(format!("{name}.files"))))
        .and_then(|()| std::fs::rename(&partial, dest));
    if let Err(e) = done {
        let _ = std::fs::remove_dir_all(&partial);
        let _ = std::fs::remove_file(&manifest_temp);
        return Err(failed(&format!("cannot put the tree in place at {}: {e}", dest.display())));
    }
    Ok(skipped)
}

/// A tree's entries by path, and the names left out with why.
type Listing = (Vec<(String, Entry)>, Vec<Skipped>);

/// Every entry under `root`, by its path, read folder by folder and stopped as soon as there are
/// more than [`MAX_FILES`] (a tree of a few small folders named many times over would otherwise
/// list billions of paths); and the entries whose names cannot be served, with why.
fn listing(repo: &gix::Repository, root: &gix::Tree<'_>) -> Result<Listing, String> {
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut folders = vec![(String::new(), root.id, 0usize)];
    let mut seen = 0usize;
    while let Some((prefix, id, depth)) = folders.pop() {
        let tree = repo.find_tree(id).map_err(|e| e.to_string())?;
        for entry in tree.iter() {
            let entry = entry.map_err(|e| e.to_string())?;
            seen += 1;
            if seen > MAX_FILES {
                return Err(format!("more than {MAX_FILES} entries, more than a tree may hold"));
            }
            let name = entry.filename();
            if name.len() > MAX_NAME_BYTES || prefix.len() + 1 + name.len() > MAX_PATH_BYTES {
                let why = format!("its name is over {MAX_NAME_BYTES} bytes or its path over {MAX_PATH_BYTES}");
                let shown: String = name.to_str_lossy().chars().take(64).collect();
                skipped.push(Skipped::new(format!("{prefix}/{shown}…").trim_start_matches('/'), &why));
                continue;
            }
            let path = match name.to_str() {
                Ok(name) if prefix.is_empty() => name.to_string(),
                Ok(name) => format!("{prefix}/{name}"),
                Err(_) => {
                    let shown = format!("{prefix}/{}", name.to_str_lossy());
                    skipped.push(Skipped::new(shown.trim_start_matches('/'), "its name is not UTF-8"));
                    continue;
                }
            };
            let plain = !path.contains('\\')
                && !path.chars().any(char::is_control)
                && Path::new(&path).components().all(|c| matches!(c, Component::Normal(_)));
            if !plain {
                skipped.push(Skipped::new(&path, "its name is not a plain path"));
                continue;
            }
            let kind = entry.mode().kind();
            if let Err(why) = git_would_write(name, kind) {
                skipped.push(Skipped::new(&path, &format!("a name git never checks out ({why})")));
                continue;
            }
            let oid = entry.oid().to_owned();
            if kind == EntryKind::Tree {
                if depth + 1 > MAX_DEPTH {
                    skipped.push(Skipped::new(&path, &format!("a folder deeper than {MAX_DEPTH} levels: not read")));
                    continue;
                }
                folders.push((path.clone(), oid, depth + 1));
            }
            entries.push((path, Entry { kind, oid }));
        }
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((entries, skipped))
}

/// Whether git itself would write an entry named `name` in a work tree: never a `.git` (nor
/// the names HFS+ and NTFS read as `.git`: `.GIT`, `git~1`, `.git\u{200c}`...), whose
/// `config` would be a repository's settings for anyone who runs git in the docs folder, and no
/// link named `.gitmodules`. gix's check, as `core.protectHFS` and `core.protectNTFS` have it.
fn git_would_write(name: &gix::bstr::BStr, kind: EntryKind) -> Result<(), String> {
    use gix::validate::path::component;
    let options = component::Options { protect_windows: false, protect_hfs: true, protect_ntfs: true };
    let mode = (kind == EntryKind::Link).then_some(component::Mode::Symlink);
    gix::validate::path::component(name, mode, options).map(|_| ()).map_err(|e| e.to_string())
}

/// The file a link at `path` leads to (its path and blob), following at most
/// [`MAX_LINK_HOPS`] links within the folder; or why it is refused.
fn followed(
    repo: &gix::Repository,
    by_path: &HashMap<&str, Entry>,
    path: &str,
) -> Result<(String, gix::ObjectId), String> {
    let mut at = path.to_string();
    // The link at `path` is the first hop; a file reached after the last allowed hop is served.
    for _ in 0..=MAX_LINK_HOPS {
        if at.is_empty() {
            return Err("a link to the docs folder itself: not followed".into());
        }
        let entry = by_path.get(at.as_str()).ok_or_else(|| format!("a link to {at}, which is not in the folder"))?;
        match entry.kind {
            EntryKind::Blob | EntryKind::BlobExecutable => return Ok((at, entry.oid)),
            EntryKind::Link => {
                if repo.find_header(entry.oid).map_err(|e| e.to_string())?.size() > MAX_LINK_BYTES {
                    return Err(format!("a link at {at} whose target is over {MAX_LINK_BYTES} bytes: refused"));
                }
                let target = repo.find_blob(entry.oid).map_err(|e| e.to_string())?.detach().data;
                let target = String::from_utf8_lossy(&target).into_owned();
                at = inside(Path::new(&at), Path::new(&target)).ok_or_else(|| {
                    format!("a link to {target}, outside the docs folder: refused (links never lead out of the tree)")
                })?;
            }
            EntryKind::Tree => return Err(format!("a link to the folder {at}: not followed")),
            EntryKind::Commit => return Err(format!("a link to the submodule {at}: not followed")),
        }
    }
    Err(format!("more than {MAX_LINK_HOPS} links in a row"))
}

/// Where `target`, written in the link at `link`, leads inside the folder (`None`: out of it;
/// `""`: the folder itself).
fn inside(link: &Path, target: &Path) -> Option<String> {
    let mut parts: Vec<String> = link.parent().map(|p| p.components().filter_map(part).collect()).unwrap_or_default();
    for c in target.components() {
        match c {
            Component::Normal(name) => parts.push(name.to_str()?.to_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// The target of a link at `link` to the file `to` (both paths in the folder), written from the
/// link's own folder: `public/alias.md` to `internal/plan.md` is `../internal/plan.md`.
fn relative(link: &str, to: &str) -> String {
    let ups = link.matches('/').count();
    format!("{}{to}", "../".repeat(ups))
}

/// True when the blob `oid` is at most `max_bytes` (a link to a file left out is left out).
fn fits(repo: &gix::Repository, oid: gix::ObjectId, max_bytes: u64) -> bool {
    repo.find_header(oid).is_ok_and(|h| h.size() <= max_bytes)
}

fn part(c: Component<'_>) -> Option<String> {
    match c {
        Component::Normal(name) => name.to_str().map(str::to_string),
        _ => None,
    }
}

/// Creates `path` (never through a link: it must not exist) with `data`.
fn write_new(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(data)
}

/// The manifest of the tree at `tree` (`trees/COMMIT.files` beside it): each file's blob.
fn manifest_of(tree: &Path) -> HashMap<String, gix::ObjectId> {
    let mut listing = tree.as_os_str().to_owned();
    listing.push(".files");
    let Ok(text) = std::fs::read_to_string(PathBuf::from(listing)) else {
        return HashMap::new();
    };
    text.lines()
        .filter_map(|line| {
            let (oid, path) = line.split_once('\t')?;
            Some((path.to_string(), gix::ObjectId::from_hex(oid.as_bytes()).ok()?))
        })
        .collect()
}

/// Removes every tree in `trees` but those named in `keep` (and their manifests), and those a
/// process still reads (its manifest locked shared: `Source::hold`).
pub fn prune(trees: &Path, keep: &[Option<String>]) {
    let Ok(listing) = std::fs::read_dir(trees) else { return };
    for entry in listing.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let tree = name.strip_suffix(".files").unwrap_or(name);
        if keep.iter().flatten().any(|k| k == tree) {
            continue;
        }
        let in_use = std::fs::File::open(trees.join(format!("{tree}.files")))
            .is_ok_and(|manifest| matches!(manifest.try_lock(), Err(std::fs::TryLockError::WouldBlock)));
        if in_use {
            continue;
        }
        let path = entry.path();
        let removed = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if let Err(e) = removed {
            tracing::warn!("cannot remove the old tree {}: {e}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EntryKind, git_would_write, inside, relative};
    use std::path::Path;

    #[test]
    fn a_link_is_written_from_its_own_folder() {
        assert_eq!(relative("public/alias.md", "internal/plan.md"), "../internal/plan.md");
        assert_eq!(relative("alias.md", "internal/plan.md"), "internal/plan.md");
        assert_eq!(relative("a/b/c.md", "d.md"), "../../d.md");
    }

    #[test]
    fn a_link_stays_inside_or_is_refused() {
        assert_eq!(inside(Path::new("a/b.md"), Path::new("c.md")).as_deref(), Some("a/c.md"));
        assert_eq!(inside(Path::new("a/b.md"), Path::new("../c.md")).as_deref(), Some("c.md"));
        assert_eq!(inside(Path::new("a/b.md"), Path::new("./x/../c.md")).as_deref(), Some("a/c.md"));
        assert_eq!(inside(Path::new("a/b.md"), Path::new("../../etc/passwd")), None);
        assert_eq!(inside(Path::new("b.md"), Path::new("/etc/passwd")), None);
        assert_eq!(inside(Path::new("b.md"), Path::new("..")), None);
        assert_eq!(inside(Path::new("b.md"), Path::new(".")).as_deref(), Some(""), "the folder itself");
        assert_eq!(inside(Path::new("a/b.md"), Path::new("..")).as_deref(), Some(""));
    }

    /// The names git refuses to check out, under every spelling a file system reads as `.git`,
    /// and nothing else.
    #[test]
    fn names_git_never_writes_are_refused() {
        let file = EntryKind::Blob;
        for name in [".git", ".GIT", ".Git", "git~1", ".git.", ".git\u{200c}"] {
            assert!(git_would_write(name.into(), EntryKind::Tree).is_err(), "{name:?}");
        }
        assert!(git_would_write(".gitmodules".into(), EntryKind::Link).is_err(), "a linked .gitmodules");
        for name in [".gitmodules", ".github", "git.md", ".gitignore", "a.git", "config"] {
            assert!(git_would_write(name.into(), file).is_ok(), "{name:?}");
        }
    }
}
