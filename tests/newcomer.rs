//! A newcomer's first minutes, played from the README: a fresh clone of the repository, the
//! README's question command in it (the binary under test standing in for `cargo run --release
//! --`, with no model server: the README's `LLM_MODEL=extractive`), the README's test command
//! being what CI runs, then `--docs` on a folder of the newcomer's own.

mod common;

use std::path::Path;
use std::process::Command;

/// The commands of the README's "The two commands" section, one per `sh` block line.
fn readme_commands() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).expect("README");
    let section = readme.split("## The two commands").nth(1).expect("a section named The two commands");
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in section.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            command if in_sh && !command.is_empty() => commands.push(command.to_string()),
            _ => {}
        }
    }
    commands
}

/// The README's question, as the binary under test runs it in `cwd` with `env`.
fn ask_as_the_readme_does(command: &str, cwd: &Path, env: &[(&str, &str)]) -> common::Run {
    let words = command.strip_prefix("cargo run --release -- ").expect("the README runs a question with cargo run");
    let question = words.trim_matches('"');
    let mut child = Command::new(env!("CARGO_BIN_EXE_docs-agent"));
    child.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).current_dir(cwd).arg(question);
    for (key, value) in env {
        child.env(key, value);
    }
    common::finished(child.output().expect("run docs-agent"))
}

#[test]
fn a_newcomer_follows_the_readme_then_asks_their_own_docs() {
    let repository = Path::new(env!("CARGO_MANIFEST_DIR"));
    let has_git = common::runs("git", "--version") && repository.join(".git").exists();
    if !common::available("git and a git checkout of the repository", has_git, "apt-get install git; run in a clone") {
        return;
    }
    let commands = readme_commands();
    assert_eq!(commands.len(), 2, "the README gives two commands: {commands:?}");
    let ci = std::fs::read_to_string(repository.join(".ci/run")).expect(".ci/run");
    assert!(ci.lines().any(|line| line.trim() == commands[1]), "CI runs the README's test command `{}`", commands[1]);

    // A fresh clone: only what is committed.
    let place = tempfile::tempdir().expect("temp dir");
    let clone = place.path().join("docs-agent");
    // Whoever owns the checkout (CI may run as another user than the one who cloned it).
    let cloned = Command::new("git")
        .args(["-c", "safe.directory=*", "clone", "--quiet", "--no-hardlinks"])
        .arg(repository)
        .arg(&clone)
        .output()
        .expect("git clone");
    assert!(cloned.status.success(), "{}", String::from_utf8_lossy(&cloned.stderr));
    let home = place.path().join("home");
    let home = home.to_str().expect("utf-8 path");
    let extractive = [("HOME", home), ("LLM_MODEL", "extractive")];

    let out = ask_as_the_readme_does(&commands[0], &clone, &extractive);
    assert_eq!(out.code, 0, "stdout {}\nstderr {}", out.stdout, out.stderr);
    assert!(out.stdout.contains("14 days"), "the sample's answer: {}", out.stdout);
    assert!(out.stdout.contains("docs/refunds.md#window"), "cited: {}", out.stdout);
    assert!(!clone.join(".docs-agent").exists(), "nothing written into the clone");

    // Their own docs, in a folder of their own.
    let mine = place.path().join("my-docs");
    std::fs::create_dir_all(mine.join("integrations")).expect("mkdir");
    std::fs::write(
        mine.join("integrations/webhooks.md"),
        "# Webhooks\n\nWe send events as signed POST requests.\n\n## Retries\n\n\
         A failed webhook delivery is retried 7 times over 24 hours, with exponential backoff.\n",
    )
    .expect("write");
    let mut own = Command::new(env!("CARGO_BIN_EXE_docs-agent"));
    own.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(extractive)
        .current_dir(place.path())
        .args(["--docs", "my-docs", "how many times is a failed webhook retried"]);
    let out = own.output().expect("run docs-agent");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("retried 7 times over 24 hours"), "{stdout}");
    assert!(stdout.contains("docs/integrations/webhooks.md#retries"), "{stdout}");
}
