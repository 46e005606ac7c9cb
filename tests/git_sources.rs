//! Git sources fetched over smart HTTP from a real git server on 127.0.0.1 (git's own
//! `git-http-backend` behind `common::git_http`), with repositories made in the test: the first
//! and later syncs, a force-push, a deleted branch, a server that goes away, a missing
//! repository, and a token the server asks for. Syncs of repositories on this machine are
//! `src/git/tests.rs`'s.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use common::git_http::GitHttp;
use docs_agent::config::SourceConfig;
use docs_agent::git::{Source, SyncError};

const TOKEN: &str = "ghp_testtoken0123456789abcdef";
/// `x-access-token:TOKEN` in base64, as a client sends it.
const BASIC: &str = "eC1hY2Nlc3MtdG9rZW46Z2hwX3Rlc3R0b2tlbjAxMjM0NTY3ODlhYmNkZWY=";

fn git(dir: &Path, args: &[&str]) -> String {
    common::git_http::git(dir, args).unwrap_or_else(|e| panic!("{e}"))
}

/// A served folder with `docs.git`, and a work repository that pushes to it.
struct Served {
    root: tempfile::TempDir,
    work: PathBuf,
}

impl Served {
    fn new() -> Option<Served> {
        let present = Command::new("git").arg("--version").output().is_ok() && common::git_http::backend().is_some();
        if !common::available("git and git-http-backend", present, "apt-get install git") {
            return None;
        }
        let root = tempfile::tempdir().expect("a folder");
        git(root.path(), &["init", "-q", "--bare", "docs.git"]);
        // git-http-backend answers pushes and fetches of a repository it may export.
        git(&root.path().join("docs.git"), &["config", "http.receivepack", "true"]);
        let work = root.path().join("work");
        std::fs::create_dir(&work).expect("work");
        git(&work, &["init", "-q"]);
        Some(Served { root, work })
    }

    fn write(&self, path: &str, text: &str) {
        let file = self.work.join(path);
        std::fs::create_dir_all(file.parent().expect("a parent")).expect("folders");
        std::fs::write(file, text).expect("a file");
    }

    /// Commits and pushes (forced, straight into the bare repository) `branch`.
    fn push(&self, branch: &str) -> String {
        git(&self.work, &["add", "-A"]);
        git(&self.work, &["commit", "-q", "--allow-empty", "-m", "change"]);
        let bare = self.root.path().join("docs.git");
        git(
            &self.work,
            &["push", "-q", "--force", bare.to_str().expect("utf-8"), &format!("HEAD:refs/heads/{branch}")],
        );
        git(&self.work, &["rev-parse", "HEAD"])
    }
}

fn source(url: &str, state: &Path, token_file: Option<PathBuf>) -> Source {
    let token = token_file.as_ref().map(|f| std::fs::read_to_string(f).expect("a token file").trim().to_string());
    let config = SourceConfig {
        name: "billing".into(),
        git: url.into(),
        branch: "main".into(),
        path: "docs".into(),
        every: String::new(),
        token_file,
        token_env: None,
        username: "x-access-token".into(),
        webhook_secret_file: None,
        webhook_secret_env: None,
        secrets: docs_agent::config::SourceSecrets { token, webhook: None },
    };
    Source::of(&config, state, 1 << 20).expect("a valid source")
}

fn read(dir: &Path, path: &str) -> String {
    std::fs::read_to_string(dir.join(path)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(path).display()))
}

#[test]
fn a_branch_is_fetched_over_http_followed_through_a_force_push_and_kept_when_the_server_goes() {
    let Some(served) = Served::new() else { return };
    served.write("docs/refunds.md", "# Refunds\n\nThirty days.\n");
    served.write("docs/setup.md", "# Setup\n");
    let first = served.push("main");
    let server = GitHttp::start(served.root.path(), None);
    let state = tempfile::tempdir().expect("state");
    let source = source(&format!("{}/docs.git", server.base), state.path(), None);
    let stop = AtomicBool::new(false);

    let synced = source.sync(&stop).expect("the first fetch");
    assert_eq!(synced.commit, first);
    assert_eq!(read(&synced.docs, "refunds.md"), "# Refunds\n\nThirty days.\n");
    assert!(!source.sync(&stop).expect("nothing new").changed);

    served.write("docs/refunds.md", "# Refunds\n\nSixty days.\n");
    let second = served.push("main");
    let next = source.sync(&stop).expect("the second fetch");
    assert_eq!(next.commit, second);
    assert_eq!(read(&next.docs, "refunds.md"), "# Refunds\n\nSixty days.\n");

    // A force-push to a commit with no common history.
    git(&served.work, &["checkout", "-q", "--orphan", "rewritten"]);
    git(&served.work, &["rm", "-q", "-rf", "."]);
    served.write("docs/other.md", "# Other\n");
    let rewritten = served.push("main");
    let forced = source.sync(&stop).expect("the fetch after a force-push");
    assert_eq!(forced.commit, rewritten);
    assert!(forced.docs.join("other.md").is_file() && !forced.docs.join("refunds.md").exists());

    // The branch deleted on the server: the last good tree keeps serving.
    git(&served.root.path().join("docs.git"), &["update-ref", "-d", "refs/heads/main"]);
    let gone = source.sync(&stop).expect_err("the branch is gone");
    assert!(matches!(gone, SyncError::BranchGone { .. }), "{gone}");
    assert_eq!(source.docs().expect("state"), Some(forced.docs.clone()));
    served.push("main");
    source.sync(&stop).expect("the branch is back");
    let served_now = source.docs().expect("state").expect("a tree");

    // The server goes away: the fetch fails, says so, and nothing changes.
    server.go_down();
    let down = source.sync(&stop).expect_err("the server is down");
    assert!(matches!(down, SyncError::Fetch(_)), "{down}");
    let recorded = source.state().expect("state").expect("written");
    assert!(recorded.error.as_deref().is_some_and(|e| e.contains("cannot fetch main")), "{recorded:?}");
    assert_eq!(source.docs().expect("state"), Some(served_now.clone()));
    assert!(served_now.join("other.md").is_file());
}

#[test]
fn a_missing_repository_and_a_refused_port_are_failures_that_say_so() {
    let Some(served) = Served::new() else { return };
    served.write("docs/a.md", "# A\n");
    served.push("main");
    let server = GitHttp::start(served.root.path(), None);
    let state = tempfile::tempdir().expect("state");
    let stop = AtomicBool::new(false);
    let missing = source(&format!("{}/nope.git", server.base), state.path(), None);
    let e = missing.sync(&stop).expect_err("no such repository");
    assert!(e.to_string().contains("cannot fetch main"), "{e}");
    assert_eq!(missing.docs().expect("state"), None);

    // A port nobody listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("an address").port();
    let refused = source(&format!("http://127.0.0.1:{port}/docs.git"), state.path(), None);
    let e = refused.sync(&stop).expect_err("nothing listens");
    assert!(e.to_string().contains("could not be reached"), "{e}");
}

#[test]
fn a_token_is_sent_when_the_server_asks_and_never_written_down() {
    let Some(served) = Served::new() else { return };
    served.write("docs/private.md", "# Private\n\nOnly for staff.\n");
    let commit = served.push("main");
    let server = GitHttp::start(served.root.path(), Some(BASIC));
    let state = tempfile::tempdir().expect("state");
    let url = format!("{}/docs.git", server.base);
    let stop = AtomicBool::new(false);

    let without = source(&url, state.path(), None).sync(&stop).expect_err("no token");
    assert!(without.to_string().contains("refused the credentials"), "{without}");

    let secrets = tempfile::tempdir().expect("secrets");
    let wrong_file = secrets.path().join("wrong");
    std::fs::write(&wrong_file, "ghp_wrongtoken99999999999999").expect("a token");
    let wrong = source(&url, state.path(), Some(wrong_file)).sync(&stop).expect_err("a wrong token");
    assert!(wrong.to_string().contains("refused the credentials"), "{wrong}");
    assert!(!wrong.to_string().contains("ghp_wrongtoken"), "{wrong}");

    let token_file = secrets.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("a token");
    let source = source(&url, state.path(), Some(token_file));
    let synced = source.sync(&stop).expect("fetched with the token");
    assert_eq!(synced.commit, commit);
    assert_eq!(read(&synced.docs, "private.md"), "# Private\n\nOnly for staff.\n");
    assert!(server.refused.load(Ordering::SeqCst) >= 2, "the server asked");

    let mut written = String::new();
    for entry in walk(state.path()) {
        if let Ok(text) = std::fs::read(&entry) {
            written.push_str(&String::from_utf8_lossy(&text));
        }
    }
    assert!(!written.contains(TOKEN) && !written.contains(BASIC), "the token is in the state folder");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Writes `dir/docs-agent.toml` naming one git source, `billing`: the `docs` folder of the
/// repository `server` serves.
fn billing_source(dir: &Path, server: &GitHttp) {
    let config = format!("[[sources]]\nname = \"billing\"\ngit = \"{}/docs.git\"\npath = \"docs\"\n", server.base);
    std::fs::write(dir.join("docs-agent.toml"), config).expect("a config");
}

/// `docs-agent` run in `dir` with only PATH and `env` (no workspace named, unless `env` names one).
fn docs_agent(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> common::Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_docs-agent"));
    command.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).current_dir(dir).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    common::finished(command.stdin(std::process::Stdio::null()).output().expect("run docs-agent"))
}

/// What the syncs of the first source of the serve at `url` did: (moved, unchanged, failed), as
/// an admin's /readyz says.
fn source_syncs(client: &reqwest::blocking::Client, url: &str) -> (u64, u64, u64) {
    let (_, ready) = call(client.get(format!("{url}/readyz")).bearer_auth("ops-token-0123456789abcdef"));
    let ready: serde_json::Value = serde_json::from_str(&ready).unwrap_or_default();
    let count = |field: &str| ready["sources"][0][field].as_u64().unwrap_or(0);
    (count("moved"), count("unchanged"), count("failed"))
}

/// The serve at `url`'s answer to "how long is the refund window", asked by ann.
fn refund_window(client: &reqwest::blocking::Client, url: &str) -> String {
    let (status, body) = call(
        client
            .post(format!("{url}/v1/ask"))
            .bearer_auth("ann-token-0123456789abcdef")
            .json(&serde_json::json!({"question": "how long is the refund window"})),
    );
    assert_eq!(status, 200, "{body}");
    body
}

/// `sources sync` once, then `docs-agent serve` in `dir` with `env` alone (and `PATH`): the
/// child, its URL and its stderr (kept open while the test runs).
fn synced_serve(
    dir: &Path,
    env: &[(&str, &str)],
) -> (std::process::Child, String, std::io::BufReader<std::process::ChildStderr>) {
    let synced = docs_agent(dir, env, &["sources", "sync"]);
    assert_eq!(synced.code, 0, "{synced:?}");
    let mut command = Command::new(env!("CARGO_BIN_EXE_docs-agent"));
    command.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).current_dir(dir).arg("serve");
    for (key, value) in env {
        command.env(key, value);
    }
    common::serve_child(command)
}

#[test]
fn every_command_reads_the_docs_of_the_tree_served_and_sources_sync_moves_it() {
    let Some(served) = Served::new() else { return };
    served.write("docs/refunds.md", "# Refunds\n\n## Window\n\nRefunds are accepted within 45 days of purchase.\n");
    served.push("main");
    let server = GitHttp::start(served.root.path(), None);
    let dir = tempfile::tempdir().expect("a folder");
    billing_source(dir.path(), &server);
    let state = dir.path().join("state");
    let state_env = state.to_str().expect("utf-8");
    let env = [("DOCS_AGENT_STATE_DIR", state_env), ("LLM_MODEL", "extractive")];

    // The first command syncs, then answers from the tree.
    let first = docs_agent(dir.path(), &env, &["how long is the refund window"]);
    assert_eq!(first.code, 0, "{first:?}");
    assert!(first.stderr.contains("first sync of"), "{}", first.stderr);
    assert!(first.stdout.contains("45 days") && first.stdout.contains("docs/refunds.md#window"), "{}", first.stdout);

    served.write("docs/refunds.md", "# Refunds\n\n## Window\n\nRefunds are accepted within 60 days of purchase.\n");
    let second = served.push("main");
    let stale = docs_agent(dir.path(), &env, &["search", "refund", "window"]);
    assert!(stale.stdout.contains("docs/refunds.md#window"), "{stale:?}");
    let synced = docs_agent(dir.path(), &env, &["sources", "sync"]);
    assert_eq!(synced.code, 0, "{synced:?}");
    assert!(synced.stdout.contains(&format!("now serving {}", &second[..12])), "{}", synced.stdout);
    let now = docs_agent(dir.path(), &env, &["how long is the refund window"]);
    assert!(now.stdout.contains("60 days") && !now.stdout.contains("45 days"), "{}", now.stdout);

    // The server goes away: sync fails with exit 1 and says why; the tree keeps serving.
    server.go_down();
    let failed = docs_agent(dir.path(), &env, &["sources", "sync", "billing"]);
    assert_eq!(failed.code, 1, "{failed:?}");
    assert!(failed.stderr.contains("source billing: cannot fetch main"), "{}", failed.stderr);
    let still = docs_agent(dir.path(), &env, &["how long is the refund window"]);
    assert!(still.stdout.contains("60 days"), "{still:?}");
    let status = docs_agent(dir.path(), &env, &["sources", "status"]);
    assert!(status.stdout.contains(&format!("serving {}", &second[..12])), "{}", status.stdout);
    assert!(status.stdout.contains("last sync failed"), "{}", status.stdout);
    let unknown = docs_agent(dir.path(), &env, &["sources", "sync", "nope"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(unknown.stderr.contains("the sources are: billing"), "{}", unknown.stderr);

    // A workspace named beside the source: its AGENTS.md and notes/, the source's docs.
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(workspace.join("notes")).expect("notes");
    std::fs::write(workspace.join("AGENTS.md"), "# Rules\n\nAnswer briefly.\n").expect("AGENTS.md");
    let named = [
        ("DOCS_AGENT_STATE_DIR", state_env),
        ("LLM_MODEL", "extractive"),
        ("WORKSPACE", workspace.to_str().expect("utf-8")),
    ];
    let from_workspace = docs_agent(dir.path(), &named, &["search", "refund", "window"]);
    assert!(from_workspace.stdout.contains("docs/refunds.md#window"), "{from_workspace:?}");
}

#[test]
fn a_first_sync_that_fails_says_there_is_nothing_to_answer_from() {
    let dir = tempfile::tempdir().expect("a folder");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("an address").port();
    std::fs::write(
        dir.path().join("docs-agent.toml"),
        format!("[[sources]]\nname = \"billing\"\ngit = \"http://127.0.0.1:{port}/docs.git\"\n"),
    )
    .expect("a config");
    let state = dir.path().join("state");
    let run =
        docs_agent(dir.path(), &[("DOCS_AGENT_STATE_DIR", state.to_str().expect("utf-8"))], &["search", "refunds"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("nothing was synced yet") && run.stderr.contains("docs-agent sources sync"),
        "{}",
        run.stderr
    );

    std::fs::write(
        dir.path().join("docs-agent.toml"),
        "[[sources]]\nname = \"billing\"\ngit = \"https://me:hunter22@git.example.com/docs.git\"\n",
    )
    .expect("a config");
    let run = docs_agent(dir.path(), &[], &["search", "refunds"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("has credentials") && !run.stderr.contains("hunter22"), "{}", run.stderr);
}

/// `(status, body)` of a request to a running serve.
fn call(request: reqwest::blocking::RequestBuilder) -> (u16, String) {
    let reply = request.timeout(std::time::Duration::from_secs(60)).send().expect("serve answers");
    (reply.status().as_u16(), reply.text().unwrap_or_default())
}

#[test]
fn serve_follows_the_branch_when_the_webhook_is_called_with_the_secret() {
    use hmac::Mac;
    let Some(served) = Served::new() else { return };
    let _ = rustls::crypto::ring::default_provider().install_default();
    served.write("docs/refunds.md", "# Refunds\n\n## Window\n\nRefunds are accepted within 45 days of purchase.\n");
    let first = served.push("main");
    let server = GitHttp::start(served.root.path(), None);
    let dir = tempfile::tempdir().expect("a folder");
    common::serve_config(
        dir.path(),
        &[("ann", "ann-token-0123456789abcdef", &["ask"]), ("ops", "ops-token-0123456789abcdef", &["admin"])],
        &format!(
            "[[sources]]\nname = \"billing\"\ngit = \"{}/docs.git\"\npath = \"docs\"\nwebhook_secret_env = \"HOOK_SECRET\"\n",
            server.base
        ),
    );
    let state = dir.path().join("state");
    let env = [
        ("DOCS_AGENT_STATE_DIR", state.to_str().expect("utf-8")),
        ("LLM_MODEL", "extractive"),
        ("HOOK_SECRET", "the-webhook-secret-0123"),
    ];
    let (mut child, url, _stderr) = synced_serve(dir.path(), &env);
    let client = reqwest::blocking::Client::new();
    // Serve looks at the branch once when it starts: wait for that look (an admin's /readyz
    // says), so the push below is found by the webhook's sync, not by it.
    let looked = || {
        let (moved, unchanged, failed) = source_syncs(&client, &url);
        moved + unchanged + failed
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while looked() == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(looked(), 1, "serve's first look at the branch");
    let ask = || refund_window(&client, &url);
    assert!(ask().contains("45 days"));
    // A session's answer records the commit its docs came from.
    let token = "ann-token-0123456789abcdef";
    let (status, created) =
        call(client.post(format!("{url}/v1/sessions")).bearer_auth(token).json(&serde_json::json!({})));
    assert_eq!(status, 201, "{created}");
    let id =
        serde_json::from_str::<serde_json::Value>(&created).expect("json")["id"].as_str().expect("an id").to_string();
    let say = |text: &str| {
        let (status, body) = call(
            client
                .post(format!("{url}/v1/sessions/{id}/messages"))
                .bearer_auth(token)
                .json(&serde_json::json!({"text": text})),
        );
        assert_eq!(status, 200, "{body}");
    };
    let answers = || {
        let (status, body) = call(client.get(format!("{url}/v1/sessions/{id}/events")).bearer_auth(token));
        assert_eq!(status, 200, "{body}");
        body
    };
    say("how long is the refund window");
    assert!(answers().contains(&format!("\"revision\":\"{first}\"")), "{}", answers());

    served.write("docs/refunds.md", "# Refunds\n\n## Window\n\nRefunds are accepted within 60 days of purchase.\n");
    let second = served.push("main");
    let body = br#"{"ref":"refs/heads/main"}"#.to_vec();
    let hook = format!("{url}/v1/sources/billing/sync");
    let (status, said) = call(client.post(&hook).header("X-Hub-Signature-256", "sha256=00").body(body.clone()));
    assert_eq!(status, 401, "{said}");
    // A name that is no source answers exactly as a bad signature does: the names cannot be
    // listed by calling.
    for unsigned in [client.post(format!("{url}/v1/sources/nope/sync")), client.post(&hook)] {
        let (status, unknown) = call(unsigned.header("X-Hub-Signature-256", "sha256=00").body(body.clone()));
        assert_eq!((status, unknown.as_str()), (401, said.as_str()));
    }
    let (status, unsigned) = call(client.post(format!("{url}/v1/sources/nope/sync")).body(body.clone()));
    assert_eq!((status, unsigned.as_str()), (401, said.as_str()));
    assert!(ask().contains("45 days"), "nothing moved without a signed call");

    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(b"the-webhook-secret-0123").expect("a key");
    mac.update(&body);
    let signature: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    let (status, said) =
        call(client.post(&hook).header("X-Hub-Signature-256", format!("sha256={signature}")).body(body.clone()));
    assert_eq!(status, 202, "{said}");
    assert!(said.contains("queued"), "{said}");
    // The sync runs on its own thread: the answer moves once it is done.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut answer = ask();
    while !answer.contains("60 days") && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
        answer = ask();
    }
    assert!(answer.contains("60 days") && !answer.contains("45 days"), "{answer}");
    say("and the refund window now?");
    let shown = answers();
    assert!(shown.contains(&format!("\"revision\":\"{first}\"")), "the first answer keeps its commit: {shown}");
    assert!(shown.contains(&format!("\"revision\":\"{second}\"")), "the second names the new one: {shown}");

    // GitLab's way: the secret itself in a header.
    let (status, said) = call(client.post(&hook).header("X-Gitlab-Token", "the-webhook-secret-0123").body(body));
    assert_eq!(status, 202, "{said}");
    let _ = child.kill();
    let _ = child.wait();
}

/// GitLab's webhook sends the secret itself (`X-Gitlab-Token`): only the whole secret, byte for
/// byte, queues a sync. A prefix of it, the secret with more after it, an empty token and one of
/// the same length that differs in its last byte are each the one refusal (401 bad_signature),
/// and no sync follows them: the branch moved before they came, and the tree moves only after
/// the right token, in exactly one sync (issue 51: the token's comparison, end to end).
#[test]
fn a_gitlab_token_queues_a_sync_only_when_it_is_the_whole_secret() {
    const SECRET: &str = "the-gitlab-secret-0123";
    let Some(served) = Served::new() else { return };
    let _ = rustls::crypto::ring::default_provider().install_default();
    served.write("docs/refunds.md", "# Refunds\n\n## Window\n\nRefunds are accepted within 45 days of purchase.\n");
    served.push("main");
    let server = GitHttp::start(served.root.path(), None);
    let dir = tempfile::tempdir().expect("a folder");
    // `every = "0"`: serve looks once at start and then only when the webhook asks.
    common::serve_config(
        dir.path(),
        &[("ann", "ann-token-0123456789abcdef", &["ask"]), ("ops", "ops-token-0123456789abcdef", &["admin"])],
        &format!(
            "[[sources]]\nname = \"billing\"\ngit = \"{}/docs.git\"\npath = \"docs\"\nevery = \"0\"\n\
             webhook_secret_env = \"HOOK_SECRET\"\n",
            server.base
        ),
    );
    let state = dir.path().join("state");
    let env = [
        ("DOCS_AGENT_STATE_DIR", state.to_str().expect("utf-8")),
        ("LLM_MODEL", "extractive"),
        ("HOOK_SECRET", SECRET),
    ];
    let (mut child, url, _stderr) = synced_serve(dir.path(), &env);
    let client = reqwest::blocking::Client::new();
    let syncs = || source_syncs(&client, &url);
    let total = |(moved, unchanged, failed): (u64, u64, u64)| moved + unchanged + failed;
    let until = |done: &dyn Fn((u64, u64, u64)) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut now = syncs();
        while !done(now) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            now = syncs();
        }
        now
    };
    assert_eq!(until(&|s| total(s) >= 1), (0, 1, 0), "serve's first look at the branch found nothing new");
    let ask = || refund_window(&client, &url);
    assert!(ask().contains("45 days"));

    // The branch moves; the calls below must not fetch it.
    served.write("docs/refunds.md", "# Refunds\n\n## Window\n\nRefunds are accepted within 60 days of purchase.\n");
    served.push("main");
    let hook = format!("{url}/v1/sources/billing/sync");
    let body = br#"{"ref":"refs/heads/main","object_kind":"push"}"#.to_vec();
    let last = SECRET.len() - 1;
    let same_length = format!("{}{}", &SECRET[..last], if SECRET.ends_with('3') { '4' } else { '3' });
    let tokens = [
        SECRET[..last].to_string(),
        SECRET[..1].to_string(),
        format!("{SECRET}x"),
        format!("{SECRET}{SECRET}"),
        String::new(),
        same_length,
        SECRET.to_uppercase(),
    ];
    for token in &tokens {
        let (status, said) = call(client.post(&hook).header("X-Gitlab-Token", token).body(body.clone()));
        assert_eq!(status, 401, "X-Gitlab-Token {token:?}: {said}");
        assert!(said.contains("bad_signature"), "X-Gitlab-Token {token:?}: {said}");
    }
    assert_eq!(syncs(), (0, 1, 0), "no sync was asked for");
    assert!(ask().contains("45 days"), "nothing moved without the secret");

    // The whole secret: one sync, which moves the tree.
    let (status, said) = call(client.post(&hook).header("X-Gitlab-Token", SECRET).body(body));
    assert_eq!(status, 202, "{said}");
    assert_eq!(until(&|s| total(s) >= 2), (1, 1, 0), "the secret's sync moved the tree, and no other sync ran");
    let answer = ask();
    assert!(answer.contains("60 days") && !answer.contains("45 days"), "{answer}");
    let _ = child.kill();
    let _ = child.wait();
}

/// A tree nested deeper than a listing reads is served down to the limit: `sources sync` says
/// which folder was left out, and the docs above it are searched.
#[test]
fn a_tree_nested_past_the_limit_is_served_down_to_it_and_says_what_was_left_out() {
    /// `git::checkout::MAX_DEPTH`, as the book gives it.
    const LIMIT: usize = 32;
    let Some(served) = Served::new() else { return };
    served.write("docs/refunds.md", "# Refunds\n\n## Window\n\nRefunds are accepted within 45 days of purchase.\n");
    served.write(&format!("docs/{}/deep.md", vec!["d"; LIMIT + 3].join("/")), "# Deep\n\nBelow the limit.\n");
    served.push("main");
    let server = GitHttp::start(served.root.path(), None);
    let dir = tempfile::tempdir().expect("a folder");
    billing_source(dir.path(), &server);
    let state = dir.path().join("state");
    let env = [("DOCS_AGENT_STATE_DIR", state.to_str().expect("utf-8"))];
    let synced = docs_agent(dir.path(), &env, &["sources", "sync"]);
    assert_eq!(synced.code, 0, "{synced:?}");
    let too_deep = vec!["d"; LIMIT + 1].join("/");
    let said = format!("left out {too_deep}: a folder deeper than {LIMIT} levels");
    assert!(synced.stdout.contains(&said), "{}", synced.stdout);
    let found = docs_agent(dir.path(), &env, &["search", "refund", "window"]);
    assert!(found.stdout.contains("docs/refunds.md#window"), "{found:?}");
}
