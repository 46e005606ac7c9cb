//! Where docs-agent keeps its state (the index, the session logs): a folder of its own per
//! workspace in the user's data folder, never the current folder when a home is known; the
//! command line's sessions apart from serve's; `check` says where.

mod common;

use std::path::{Path, PathBuf};

use common::{run, sample_workspace};

/// The state folders made under `data` (`data/docs-agent/*`).
fn state_folders(data: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(data.join("docs-agent"))
        .map(|dirs| dirs.flatten().map(|d| d.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn state_lives_in_the_users_data_folder_one_per_workspace() {
    let home = tempfile::tempdir().expect("home");
    let home_path = home.path().to_str().expect("utf-8 path");
    let ws = sample_workspace();
    let out = run(ws.path(), &[("HOME", home_path)], &["search", "refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!ws.path().join(".docs-agent").exists(), "nothing in the folder it ran in");
    let data = home.path().join(".local/share");
    let folders = state_folders(&data);
    assert_eq!(folders.len(), 1, "{folders:?}");
    let name = folders[0].file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let workspace_name = ws.path().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let readable = workspace_name.trim_start_matches('.');
    assert!(name.starts_with(readable) && name.len() == readable.len() + 9, "named after the workspace: {name}");
    assert!(folders[0].join("index.db").is_file(), "the index is there");

    // The same workspace from another folder finds the same index; another workspace has its own.
    let elsewhere = tempfile::tempdir().expect("cwd");
    let workspace = ws.path().to_str().expect("utf-8 path");
    let mut again = common::command(elsewhere.path(), &[("HOME", home_path)], &["search", "refund window"]);
    let again = again.env("WORKSPACE", workspace).output().expect("run");
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(state_folders(&data).len(), 1, "one index per workspace");
    let other = sample_workspace();
    assert_eq!(run(other.path(), &[("HOME", home_path)], &["search", "refund"]).code, 0);
    assert_eq!(state_folders(&data).len(), 2, "another workspace, another folder");

    // XDG_DATA_HOME wins over HOME; DOCS_AGENT_STATE_DIR over both.
    let xdg = tempfile::tempdir().expect("xdg");
    let xdg_path = xdg.path().to_str().expect("utf-8 path");
    assert_eq!(run(ws.path(), &[("HOME", home_path), ("XDG_DATA_HOME", xdg_path)], &["search", "refund"]).code, 0);
    assert_eq!(state_folders(xdg.path()).len(), 1, "under XDG_DATA_HOME");
    let chosen = tempfile::tempdir().expect("state");
    let chosen_path = chosen.path().join("mine");
    let env = [("HOME", home_path), ("DOCS_AGENT_STATE_DIR", chosen_path.to_str().expect("utf-8 path"))];
    assert_eq!(run(ws.path(), &env, &["search", "refund"]).code, 0);
    assert!(chosen_path.join("index.db").is_file(), "DOCS_AGENT_STATE_DIR holds it");
}

/// With no home known (a bare environment), state stays in ./.docs-agent, as before.
#[test]
fn without_a_home_state_stays_in_the_current_folder() {
    let ws = sample_workspace();
    assert_eq!(run(ws.path(), &[], &["search", "refund window"]).code, 0);
    assert!(ws.path().join(".docs-agent/index.db").is_file());
}

/// `check` says where the state is; the command line's sessions and serve's are two logs, so a
/// terminal chat never shows up in the page's reports.
#[test]
fn check_says_where_and_serve_keeps_its_sessions_apart() {
    let home = tempfile::tempdir().expect("home");
    let home_path = home.path().to_str().expect("utf-8 path");
    let ws = sample_workspace();
    let out = run(ws.path(), &[("HOME", home_path)], &["check"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let folder = state_folders(&home.path().join(".local/share")).pop().expect("a state folder");
    let folder = folder.display().to_string();
    let line = out.stdout.lines().find(|l| l.starts_with("state: ")).unwrap_or_default();
    assert!(line.contains(&format!("{folder}/index.db")), "{}", out.stdout);
    assert!(line.contains(&format!("{folder}/sessions.db")), "{}", out.stdout);
    assert!(line.contains(&format!("{folder}/serve-sessions.db")), "{}", out.stdout);

    let chat = common::run_input(ws.path(), &[("HOME", home_path), ("LLM_MODEL", "scripted")], &["chat"], "refunds?\n");
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    common::serve_config(ws.path(), &[("ana", "a-token-for-the-state-test-0123456789", &["ask"])], "");
    let (mut child, _url, _stderr) = common::spawn_serve(ws.path(), &[("HOME", home_path), ("LLM_MODEL", "scripted")]);
    let serve_log = Path::new(&folder).join("serve-sessions.db");
    let opened = serve_log.is_file();
    let _ = child.kill();
    let _ = child.wait();
    assert!(opened, "serve opened its own log at {}", serve_log.display());
    let listed = run(ws.path(), &[("HOME", home_path)], &["sessions", "list"]);
    assert_eq!(listed.stdout.lines().count(), 1, "the chat's session, in the command line's log: {}", listed.stdout);
}
