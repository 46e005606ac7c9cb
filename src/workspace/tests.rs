//! `write_note` is the last line of defence: the tools check a write's path against the write
//! policy before it gets here, but a path from the read policy must still be refused here,
//! with an approval in hand, and nothing written anywhere.

use std::collections::BTreeMap;
use std::path::Path;

use super::policy::{check_read, check_write};
use super::{FileError, Workspace};
use crate::workspace::approval::Approver;

/// Every file and folder under `root`, with its content.
fn tree(root: &Path) -> BTreeMap<String, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read dir").flatten() {
            let path = entry.path();
            let name = path.strip_prefix(root).expect("inside").display().to_string();
            if path.is_dir() {
                out.insert(name, None);
                stack.push(path);
            } else {
                out.insert(name, Some(std::fs::read(&path).expect("read")));
            }
        }
    }
    out
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for area in ["docs", "skills/a", "notes"] {
        std::fs::create_dir_all(dir.path().join(area)).expect("mkdir");
    }
    std::fs::write(dir.path().join("docs/refunds.md"), "# Refunds\n14 days\n").expect("doc");
    std::fs::write(dir.path().join("skills/a/SKILL.md"), "---\nname: a\n---\nbody\n").expect("skill");
    std::fs::write(dir.path().join("AGENTS.md"), "rules\n").expect("rules");
    dir
}

#[test]
fn a_path_from_the_read_policy_is_refused_even_with_an_approval() {
    for raw in ["docs/x.md", "docs/refunds.md", "docs/sub/new.md", "skills/a/SKILL.md", "skills/b.md", "AGENTS.md"] {
        let dir = workspace();
        let ws = Workspace::open(dir.path()).expect("open");
        let path = check_read(raw).expect("a readable path");
        let approved = Approver::Always.decide(&path, "pwned").expect("approved");
        let before = tree(dir.path());
        match ws.write_note(&path, "pwned", approved) {
            Err(FileError::Denied(denied)) => assert!(denied.0.contains("not under notes/"), "{raw}: {denied}"),
            other => panic!("{raw}: a write outside notes/ was not denied: {other:?}"),
        }
        assert_eq!(tree(dir.path()), before, "{raw}: the workspace changed");
    }
}

#[test]
fn a_path_from_the_write_policy_is_written_under_notes() {
    let dir = workspace();
    let ws = Workspace::open(dir.path()).expect("open");
    let path = check_write("notes/sub/a.md").expect("a writable path");
    let approved = Approver::Always.decide(&path, "hello").expect("approved");
    assert_eq!(ws.write_note(&path, "hello", approved).expect("written"), 5);
    assert_eq!(std::fs::read_to_string(dir.path().join("notes/sub/a.md")).expect("note"), "hello");
}
