//! Syncs of repositories on this machine, made in the test with the `git` program (the tests may
//! run it; the code under test never does). Fetches over HTTP are `tests/git_sources.rs`'s.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;

use super::*;

/// A work repository whose commits are pushed to a bare one, the source.
pub(crate) struct Repos {
    pub work: PathBuf,
    pub bare: PathBuf,
    _dir: tempfile::TempDir,
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "init.defaultBranch=main", "-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("the git program (tests make their repositories with it)");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// True when the `git` program runs; else the test is skipped (said on stderr), unless
/// `DOCS_AGENT_TEST_REQUIRE` is set (`.ci/run`), which makes it fail.
fn git_present() -> bool {
    if Command::new("git").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return true;
    }
    let required = std::env::var("DOCS_AGENT_TEST_REQUIRE").is_ok_and(|v| !v.is_empty() && v != "0");
    assert!(!required, "the git program is not installed (apt-get install git); DOCS_AGENT_TEST_REQUIRE is set");
    let _ = std::io::Write::write_all(
        &mut crate::guard::sink::stderr(),
        b"skipped: git is not installed (apt-get install git)\n",
    );
    false
}

impl Repos {
    /// Two new repositories, or `None` (the test skipped) without the `git` program.
    pub fn new() -> Option<Repos> {
        if !git_present() {
            return None;
        }
        let dir = tempfile::tempdir().expect("a temporary folder");
        let work = dir.path().join("work");
        let bare = dir.path().join("docs.git");
        std::fs::create_dir(&work).expect("work");
        git(dir.path(), &["init", "-q", "--bare", "docs.git"]);
        git(&work, &["init", "-q"]);
        git(&work, &["remote", "add", "origin", bare.to_str().expect("utf-8")]);
        Some(Repos { work, bare, _dir: dir })
    }

    pub fn write(&self, path: &str, text: &str) {
        let file = self.work.join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("folders");
        std::fs::write(file, text).expect("a file");
    }

    /// Commits everything and pushes `branch` (forced); the commit's id.
    pub fn push(&self, branch: &str) -> String {
        git(&self.work, &["add", "-A"]);
        git(&self.work, &["commit", "-q", "--allow-empty", "-m", "change"]);
        git(&self.work, &["push", "-q", "--force", "origin", &format!("HEAD:refs/heads/{branch}")]);
        git(&self.work, &["rev-parse", "HEAD"])
    }
}

fn source(repos: &Repos, state: &Path, path: &str) -> Source {
    let config = crate::config::SourceConfig {
        name: "docs".into(),
        git: repos.bare.display().to_string(),
        branch: "main".into(),
        path: path.into(),
        every: String::new(),
        token_file: None,
        token_env: None,
        username: "x-access-token".into(),
        webhook_secret_file: None,
        webhook_secret_env: None,
        secrets: Default::default(),
    };
    Source::of(&config, state, 1024).expect("a valid source")
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn a_branch_is_checked_out_whole_and_only_changed_files_are_written_again() {
    let Some(repos) = Repos::new() else { return };
    repos.write("docs/refunds.md", "# Refunds\n\nThirty days.\n");
    repos.write("docs/guide/setup.md", "# Setup\n");
    repos.write("README.md", "not docs\n");
    let first = repos.push("main");
    let state = tempfile::tempdir().expect("state");
    let source = source(&repos, state.path(), "docs");
    let stop = AtomicBool::new(false);

    let synced = source.sync(&stop).expect("the first sync");
    assert!(synced.changed);
    assert_eq!(synced.commit, first);
    assert_eq!(read(&synced.docs, "refunds.md"), "# Refunds\n\nThirty days.\n");
    assert_eq!(read(&synced.docs, "guide/setup.md"), "# Setup\n");
    assert!(!synced.docs.join("README.md").exists(), "only the source's folder");
    assert_eq!(source.docs().expect("state"), Some(synced.docs.clone()));
    let recorded = source.state().expect("state").expect("written");
    assert_eq!(recorded.commit.as_deref(), Some(first.as_str()));
    assert!(recorded.error.is_none() && recorded.synced_at.is_some());

    let again = source.sync(&stop).expect("a sync with nothing new");
    assert!(!again.changed);
    assert_eq!(again.docs, synced.docs);

    repos.write("docs/refunds.md", "# Refunds\n\nSixty days.\n");
    let second = repos.push("main");
    let next = source.sync(&stop).expect("the second sync");
    assert!(next.changed);
    assert_eq!(next.commit, second);
    assert_ne!(next.docs, synced.docs, "a new folder per commit");
    assert_eq!(read(&next.docs, "refunds.md"), "# Refunds\n\nSixty days.\n");
    assert_eq!(read(&synced.docs, "refunds.md"), "# Refunds\n\nThirty days.\n", "the old tree is untouched");
    let inode = |dir: &Path, p: &str| std::fs::metadata(dir.join(p)).expect("a file").ino();
    assert_eq!(
        inode(&next.docs, "guide/setup.md"),
        inode(&synced.docs, "guide/setup.md"),
        "an unchanged file is linked"
    );
    assert_ne!(inode(&next.docs, "refunds.md"), inode(&synced.docs, "refunds.md"));

    // The first tree is held (a process still reads it), so the syncs below leave it.
    source.hold(&first);
    repos.write("docs/new.md", "# New\n");
    let third = source.sync(&stop).map(|s| s.commit);
    assert_eq!(third.expect("a sync"), second, "nothing pushed yet");
    repos.push("main");
    let last = source.sync(&stop).expect("the third sync");
    assert!(last.docs.join("new.md").is_file());
    assert!(synced.docs.exists(), "the held first tree is not pruned");
    assert!(next.docs.exists(), "the one served before is kept");
    source.hold(&last.commit);
    repos.write("docs/newer.md", "# Newer\n");
    repos.push("main");
    source.sync(&stop).expect("the fourth sync");
    assert!(!synced.docs.exists(), "the first tree, no longer held, is pruned");
    assert!(!next.docs.exists(), "the second, neither held nor served before, is pruned");
    assert!(last.docs.exists(), "the one served before is kept");

    // The same commit with another folder served is a checkout of its own, not the old tree.
    let mut other = source.clone();
    other.path = "docs/guide".into();
    let guide = other.sync(&stop).expect("another folder");
    assert!(guide.changed && guide.docs.join("setup.md").is_file() && !guide.docs.join("refunds.md").exists());
}

#[test]
fn a_force_push_is_taken_and_a_deleted_branch_keeps_the_last_good_tree() {
    let Some(repos) = Repos::new() else { return };
    repos.write("a.md", "# A\n\nfirst\n");
    repos.push("main");
    let state = tempfile::tempdir().expect("state");
    let source = source(&repos, state.path(), "");
    let stop = AtomicBool::new(false);
    source.sync(&stop).expect("the first sync");

    // History rewritten: an orphan commit replaces the branch.
    git(&repos.work, &["checkout", "-q", "--orphan", "rewritten"]);
    git(&repos.work, &["rm", "-q", "-rf", "."]);
    repos.write("b.md", "# B\n\nrewritten\n");
    let rewritten = repos.push("main");
    let synced = source.sync(&stop).expect("the sync after a force-push");
    assert_eq!(synced.commit, rewritten);
    assert!(synced.docs.join("b.md").is_file() && !synced.docs.join("a.md").exists());

    git(&repos.bare, &["update-ref", "-d", "refs/heads/main"]);
    let gone = source.sync(&stop).expect_err("the branch is gone");
    assert!(matches!(gone, SyncError::BranchGone { .. }), "{gone}");
    assert!(gone.to_string().contains("a tree synced before keeps serving"), "{gone}");
    let recorded = source.state().expect("state").expect("written");
    assert_eq!(recorded.commit.as_deref(), Some(rewritten.as_str()), "still served");
    assert!(recorded.error.as_deref().is_some_and(|e| e.contains("main")), "{recorded:?}");
    assert_eq!(source.docs().expect("state"), Some(synced.docs.clone()));
    assert!(synced.docs.join("b.md").is_file());

    repos.push("main");
    let back = source.sync(&stop).expect("the branch is back");
    assert!(back.changed);
    assert!(source.state().expect("state").expect("written").error.is_none(), "the failure is cleared");
}

#[test]
fn huge_files_links_out_of_the_tree_and_submodules_are_left_out_and_said() {
    let Some(repos) = Repos::new() else { return };
    repos.write("docs/a.md", "# A\n");
    repos.write("docs/huge.md", &"x".repeat(4096));
    repos.write("secret.txt", "outside the docs folder\n");
    let link = |target: &str, at: &str| {
        let at = repos.work.join(at);
        std::fs::create_dir_all(at.parent().expect("a folder")).expect("folders");
        std::os::unix::fs::symlink(target, at).expect("a link");
    };
    link("../../../etc/passwd", "docs/evil.md");
    link("/etc/passwd", "docs/absolute.md");
    link("../secret.txt", "docs/up.md");
    link("a.md", "docs/same.md");
    repos.write("docs/internal/plan.md", "# Plan\n");
    link("../internal/plan.md", "docs/public/alias.md");
    link("alias.md", "docs/public/again.md");
    // A submodule: a commit of another repository recorded in the tree.
    let other = "0123456789abcdef0123456789abcdef01234567";
    git(&repos.work, &["add", "-A"]);
    git(&repos.work, &["update-index", "--add", "--cacheinfo", &format!("160000,{other},docs/vendor")]);
    git(&repos.work, &["commit", "-q", "-m", "with a submodule"]);
    git(&repos.work, &["push", "-q", "origin", "HEAD:refs/heads/main"]);
    let state = tempfile::tempdir().expect("state");
    let source = source(&repos, state.path(), "docs");
    let synced = source.sync(&AtomicBool::new(false)).expect("a sync");
    let why = |path: &str| synced.skipped.iter().find(|s| s.path == path).map(|s| s.why.clone());

    assert!(why("huge.md").is_some_and(|w| w.contains("4096 bytes")), "{:?}", synced.skipped);
    for refused in ["evil.md", "absolute.md", "up.md"] {
        assert!(why(refused).is_some_and(|w| w.contains("outside the docs folder")), "{refused}: {:?}", synced.skipped);
        assert!(!synced.docs.join(refused).exists(), "{refused}");
    }
    assert!(why("vendor").is_some_and(|w| w.contains("submodule")), "{:?}", synced.skipped);
    // A link inside the folder stays a link, straight to the file it leads to (a chain of links
    // resolved here), so the reading rules see where it leads as they do on disk.
    assert_eq!(read(&synced.docs, "same.md"), "# A\n");
    for (at, to) in
        [("same.md", "a.md"), ("public/alias.md", "../internal/plan.md"), ("public/again.md", "../internal/plan.md")]
    {
        let target = std::fs::read_link(synced.docs.join(at)).unwrap_or_else(|e| panic!("{at} is a link: {e}"));
        assert_eq!(target, Path::new(to), "{at}");
    }
    assert_eq!(read(&synced.docs, "public/again.md"), "# Plan\n");
    assert!(!synced.docs.join("huge.md").exists());
    let recorded = source.state().expect("state").expect("written");
    assert_eq!(recorded.skipped, synced.skipped);
}

#[test]
fn a_missing_repository_or_folder_fails_and_keeps_nothing_half_written() {
    let Some(repos) = Repos::new() else { return };
    repos.write("docs/a.md", "# A\n");
    repos.push("main");
    let state = tempfile::tempdir().expect("state");
    let wrong_folder = source(&repos, state.path(), "handbook");
    let e = wrong_folder.sync(&AtomicBool::new(false)).expect_err("no such folder");
    assert!(e.to_string().contains("handbook is not in this commit"), "{e}");
    let trees = state.path().join("sources/docs/trees");
    assert_eq!(std::fs::read_dir(&trees).expect("trees").count(), 0, "nothing half written");
    assert_eq!(wrong_folder.docs().expect("state"), None);

    let mut missing = source(&repos, state.path(), "");
    missing.remote = Remote::Local(state.path().join("nowhere.git"));
    let e = missing.sync(&AtomicBool::new(false)).expect_err("no repository");
    assert!(e.to_string().contains("cannot open the repository"), "{e}");
}

#[test]
fn urls_are_read_and_credentials_stay_out_of_the_config() {
    assert_eq!(
        Remote::parse("d", "https://git.example.com/d.git"),
        Ok(Remote::Http("https://git.example.com/d.git".into()))
    );
    assert_eq!(Remote::parse("d", "file:///srv/d.git"), Ok(Remote::Local("/srv/d.git".into())));
    assert_eq!(Remote::parse("d", "/srv/d.git"), Ok(Remote::Local("/srv/d.git".into())));
    for refused in [
        "https://me:hunter2@git.example.com/d.git",
        "https://git.example.com/d.git?private_token=glpat-0123456789",
        "ssh://git@example.com/d.git",
        "git@example.com:d.git",
    ] {
        assert!(Remote::parse("d", refused).is_err(), "{refused}");
    }
    assert_eq!(Remote::parse("d", "https://git.example.com:8443/d.git").map(|r| r.port()), Ok(Some(8443)));
    assert_eq!(Remote::parse("d", "https://git.example.com/d.git").map(|r| r.port()), Ok(Some(443)));

    let dir = tempfile::tempdir().expect("a folder");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "ghp_tokenfromafile0123456789\n").expect("a token");
    let mut config = crate::config::SourceConfig {
        name: "d".into(),
        git: "https://git.example.com/d.git".into(),
        branch: "main".into(),
        path: String::new(),
        every: "5m".into(),
        token_file: Some(token_file),
        token_env: None,
        username: "oauth2".into(),
        webhook_secret_file: None,
        webhook_secret_env: Some("HOOK".into()),
        secrets: Default::default(),
    };
    let env = |var: &str| (var == "HOOK").then(|| "a-webhook-secret-value".to_string());
    let mut whole = crate::config::Config::load_isolated(&crate::config::Sources::default()).expect("defaults");
    whole.sources = vec![config.clone()];
    read_secrets(&mut whole, &env).expect("secrets read");
    let source = Source::of(&whole.sources[0], dir.path(), 1024).expect("a source");
    assert_eq!(source.credentials, Some(("oauth2".into(), "ghp_tokenfromafile0123456789".into())));
    assert_eq!(source.webhook_secret(), Some("a-webhook-secret-value"));
    assert_eq!(source.every, Some(std::time::Duration::from_secs(300)));
    assert!(!format!("{source:?}").contains("ghp_tokenfromafile"), "Debug hides the token");
    let said = crate::guard::redact::redact("the token ghp_tokenfromafile0123456789 leaked");
    assert!(!said.contains("ghp_tokenfromafile0123456789"), "{said}");

    config.webhook_secret_env = Some("UNSET".into());
    whole.sources = vec![config];
    let e = read_secrets(&mut whole, &env).expect_err("an unset variable");
    assert!(e.contains("UNSET is not set"), "{e}");
}

/// Writes a tree made of `lines` (`MODE TYPE ID\tNAME`, as `git ls-tree` prints them) into
/// `repo`; its id.
fn mktree(repo: &Path, lines: &[String]) -> String {
    use std::io::Write as _;
    let mut child = Command::new("git")
        .arg("mktree")
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("git mktree");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(lines.join("\n").as_bytes()).expect("the listing");
    drop(stdin);
    let out = child.wait_with_output().expect("git mktree ends");
    assert!(out.status.success(), "git mktree: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A tree no work folder could hold (a name over what file systems take, folders nested past
/// the limit) is served without what goes too far, which is said; the rest is served.
#[test]
fn folders_too_deep_and_names_too_long_are_left_out_and_said() {
    let Some(repos) = Repos::new() else { return };
    repos.write("docs/ok.md", "# Ok\n");
    repos.push("main");
    let bare = &repos.bare;
    let blob = git(bare, &["rev-parse", "main:docs/ok.md"]);
    let mut deep = mktree(bare, &[format!("100644 blob {blob}\tdeep.md")]);
    for _ in 0..(checkout::MAX_DEPTH + 8) {
        deep = mktree(bare, &[format!("040000 tree {deep}\td")]);
    }
    let long = format!("{}.md", "n".repeat(checkout::MAX_NAME_BYTES + 20));
    // A name and a link's target that would drive the terminal `sources sync` prints them on.
    let escaped = "\u{1b}]0;owned\u{7}\u{1b}[2Jclear.md";
    let target_file = repos.work.join("target");
    std::fs::write(&target_file, "../\u{1b}[2J../etc/passwd").expect("a link's target");
    let target = git(bare, &["hash-object", "-w", target_file.to_str().expect("utf-8")]);
    let docs = mktree(
        bare,
        &[
            format!("040000 tree {deep}\td"),
            format!("100644 blob {blob}\tok.md"),
            format!("100644 blob {blob}\t{long}"),
            format!("100644 blob {blob}\t{escaped}"),
            format!("120000 blob {target}\tlink.md"),
        ],
    );
    let root = mktree(bare, &[format!("040000 tree {docs}\tdocs")]);
    let commit = git(bare, &["commit-tree", &root, "-m", "hostile"]);
    git(bare, &["update-ref", "refs/heads/main", &commit]);

    let state = tempfile::tempdir().expect("state");
    let synced = source(&repos, state.path(), "docs").sync(&AtomicBool::new(false)).expect("a sync");
    assert_eq!(read(&synced.docs, "ok.md"), "# Ok\n");
    let said = |part: &str| synced.skipped.iter().any(|s| s.why.contains(part));
    assert!(said(&format!("deeper than {} levels", checkout::MAX_DEPTH)), "{:?}", synced.skipped);
    assert!(said(&format!("over {} bytes", checkout::MAX_NAME_BYTES)), "{:?}", synced.skipped);
    assert!(said("not a plain path") && said("outside the docs folder"), "{:?}", synced.skipped);
    for skipped in &synced.skipped {
        assert!(!skipped.path.contains(['\u{1b}', '\u{7}']) && !skipped.why.contains('\u{1b}'), "{skipped:?}");
    }
    let deepest = synced.docs.join(vec!["d"; checkout::MAX_DEPTH].join("/"));
    assert!(deepest.is_dir() && !deepest.join("d").exists(), "served down to the limit, no further");
}

/// A tree may hold what git itself never checks out (a `.git` folder with a `config`, under any
/// spelling a file system reads as `.git`): left out and said, as git would. A chain of links
/// is followed up to its limit exactly, and a link to the docs folder itself says so.
#[test]
fn git_s_own_names_are_never_written_and_link_chains_stop_at_their_limit() {
    let Some(repos) = Repos::new() else { return };
    repos.write("docs/ok.md", "# Ok\n");
    repos.push("main");
    let bare = &repos.bare;
    let blob = git(bare, &["rev-parse", "main:docs/ok.md"]);
    let config_file = repos.work.join("config");
    std::fs::write(&config_file, "[core]\n\tfsmonitor = touch /tmp/owned\n").expect("a config");
    let config = git(bare, &["hash-object", "-w", config_file.to_str().expect("utf-8")]);
    let dot_git = mktree(bare, &[format!("100644 blob {config}\tconfig")]);
    let link_to = |target: &str| {
        let file = repos.work.join("link-target");
        std::fs::write(&file, target).expect("a link's target");
        git(bare, &["hash-object", "-w", file.to_str().expect("utf-8")])
    };
    // chain0 -> chain1 -> ... -> chainN -> ok.md: a link at chain0 is N + 1 links in a row.
    let hops = checkout::MAX_LINK_HOPS;
    let mut lines = vec![format!("100644 blob {blob}\tok.md")];
    for n in 0..=hops {
        let next = if n == hops { "ok.md".to_string() } else { format!("chain{}.md", n + 1) };
        lines.push(format!("120000 blob {}\tchain{n}.md", link_to(&next)));
    }
    lines.push(format!("120000 blob {}\tlonger.md", link_to("chain0.md")));
    lines.push(format!("120000 blob {}\there.md", link_to(".")));
    for name in [".git", ".GIT", "git~1", ".Git"] {
        lines.push(format!("040000 tree {dot_git}\t{name}"));
    }
    lines.push(format!("040000 tree {}", mktree(bare, &[format!("040000 tree {dot_git}\t.git")]) + "\tsub"));
    let docs = mktree(bare, &lines);
    let root = mktree(bare, &[format!("040000 tree {docs}\tdocs")]);
    let commit = git(bare, &["commit-tree", &root, "-m", "git's own names"]);
    git(bare, &["update-ref", "refs/heads/main", &commit]);

    let state = tempfile::tempdir().expect("state");
    let synced = source(&repos, state.path(), "docs").sync(&AtomicBool::new(false)).expect("a sync");
    let why = |path: &str| synced.skipped.iter().find(|s| s.path == path).map(|s| s.why.clone());
    for name in [".git", ".GIT", "git~1", ".Git", "sub/.git"] {
        assert!(why(name).is_some_and(|w| w.contains("git never checks out")), "{name}: {:?}", synced.skipped);
        assert!(!synced.docs.join(name).exists(), "{name} is not written");
    }
    assert!(synced.docs.join("sub").is_dir(), "the folder around it is");
    // chain1 is exactly MAX_LINK_HOPS links from the file; chain0 and longer are more.
    assert_eq!(read(&synced.docs, "chain1.md"), "# Ok\n");
    for refused in ["chain0.md", "longer.md"] {
        let said = why(refused).unwrap_or_default();
        assert!(said.contains(&format!("more than {hops} links")), "{refused}: {said}");
    }
    let here = why("here.md").unwrap_or_default();
    assert!(here.contains("the docs folder itself") && !here.contains("outside"), "{here}");
}

/// A state file written before names were scrubbed is scrubbed as it is read.
#[test]
fn what_a_state_file_says_was_left_out_is_read_without_terminal_controls() {
    let home = tempfile::tempdir().expect("home");
    let written = r#"{"commit":null,"synced_at":null,"checked_at":null,"error":null,"failed_at":null,
        "skipped":[{"path":"\u001b[2Jx.md","why":"a link to \u001b]0;t\u0007y"},
                   {"path":"line\nbreak.md\r\t","why":"its name is not a plain path"}]}"#;
    std::fs::write(home.path().join("state.json"), written).expect("state.json");
    let state = State::read(home.path()).expect("read").expect("a state");
    let one_line = Skipped { path: "line\\nbreak.md\\t".into(), why: "its name is not a plain path".into() };
    assert_eq!(state.skipped, vec![Skipped { path: "x.md".into(), why: "a link to y".into() }, one_line]);
}
