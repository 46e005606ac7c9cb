//! The binary run the way the container runs it: as uid 10001, from `/`, with a root-owned,
//! read-only workspace whose only writable folder is `notes/`, no HOME or config around, and the
//! kernel sandbox required.
//! (No Docker engine runs here; `setpriv` drops to the image's user instead.)

// It prints its own report; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros, clippy::disallowed_methods)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{ONBOARDING_KEY, sample_workspace};

const UID: &str = "10001";

fn lock_down(root: &Path) {
    // The workspace is read-only for 10001 (root owns it); notes/ belongs to 10001.
    for (path, _) in common::files_under(root) {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).expect("chmod file");
    }
    for dir in ["", "docs", "docs/admin", "skills", "skills/cite-sources", "skills/save-note"] {
        std::fs::set_permissions(root.join(dir), std::fs::Permissions::from_mode(0o555)).expect("chmod dir");
    }
    let status = Command::new("chown")
        .args([&format!("{UID}:{UID}"), &root.join("notes").display().to_string()])
        .status()
        .expect("chown");
    assert!(status.success());
}

/// Runs `docs-agent ARGS` as uid 10001 from `/`, with the scripted model and `input` on stdin.
fn as_image(root: &Path, env: &[(&str, &Path)], args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write;
    let mut command = Command::new("setpriv");
    command
        .args(["--reuid", UID, "--regid", UID, "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_docs-agent"))
        .args(args)
        .env_clear()
        .env("WORKSPACE", root)
        .env("LLM_MODEL", "scripted")
        // as the image sets it: no kernel sandbox, no run
        .env("DOCS_AGENT_REQUIRE_SANDBOX", "1")
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("run setpriv");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("type");
    child.wait_with_output().expect("wait")
}

fn run_as_image(root: &Path, approve: &str) -> std::process::Output {
    as_image(root, &[("APPROVE", Path::new(approve))], &["what is in the onboarding integrations"], "")
}

#[test]
fn runs_as_uid_10001_on_a_read_only_workspace() {
    // Dropping privileges needs root, which CI has; elsewhere this test cannot run.
    if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
        eprintln!("not root: cannot drop to uid {UID}; this check runs in CI");
        return;
    }
    let ws = sample_workspace();
    let root = ws.path();
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755)).expect("chmod temp dir");
    lock_down(root);

    let denied = run_as_image(root, "");
    assert_eq!(denied.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&denied.stderr));
    assert!(String::from_utf8_lossy(&denied.stdout).contains("docs/onboarding.md"));
    assert!(!root.join("notes/leak.txt").exists());

    let approved = run_as_image(root, "yes");
    assert_eq!(approved.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&approved.stderr));
    let note = std::fs::read_to_string(root.join("notes/leak.txt")).expect("uid 10001 can write notes/");
    assert!(note.contains("[REDACTED]") && !note.contains(ONBOARDING_KEY));
    for out in [&denied, &approved] {
        assert!(!String::from_utf8_lossy(&out.stdout).contains(ONBOARDING_KEY));
        assert!(!String::from_utf8_lossy(&out.stderr).contains(ONBOARDING_KEY));
    }
}

#[test]
fn chat_as_uid_10001_keeps_its_session_on_the_data_volume() {
    if !Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.starts_with(b"0\n")) {
        eprintln!("not root: cannot drop to uid {UID}; this check runs in CI");
        return;
    }
    let ws = sample_workspace();
    let root = ws.path().join("ws");
    std::fs::create_dir(&root).expect("mkdir");
    for entry in ["docs", "skills", "notes", "AGENTS.md"] {
        std::fs::rename(ws.path().join(entry), root.join(entry)).expect("move into ws/");
    }
    std::fs::set_permissions(ws.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod temp dir");
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).expect("chmod ws");
    lock_down(&root);
    // /data as the image makes it: owned by 10001, private.
    let data = ws.path().join("data");
    std::fs::create_dir(&data).expect("mkdir data");
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).expect("chmod data");
    let status = Command::new("chown").args([&format!("{UID}:{UID}"), &data.display().to_string()]).status();
    assert!(status.expect("chown").success());
    let log = data.join("sessions.db");
    let as_image = |args: &[&str], input: &str, session_log: &Path| {
        as_image(&root, &[("APPROVE", Path::new("yes")), ("DOCS_AGENT_SESSION_LOG", session_log)], args, input)
    };
    let out = as_image(&["chat"], "what is in the onboarding integrations\n", &log);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(root.join("notes/leak.txt").exists());
    let listed = as_image(&["sessions", "list"], "", &log);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("idle"), "{}", String::from_utf8_lossy(&listed.stderr));
    // A log path the user cannot write is an error that names the setting.
    let out = as_image(&["chat"], "hi\n", Path::new("/proc/docs-agent/sessions.db"));
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("DOCS_AGENT_SESSION_LOG"));
}
