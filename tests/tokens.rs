//! `docs-agent tokens add|list|revoke`: a caller added prints its token once and only its hash
//! is written, the file's comments stay, a running serve takes an added token and refuses a
//! revoked one without a restart, ending the streams it holds open; `init` keeps its config out
//! of git.

mod common;

use std::time::{Duration, Instant};

use common::{run, sample_workspace};

/// The status of `GET /v1/me` with `token`.
async fn me(url: &str, token: &str) -> u16 {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    client.get(format!("{url}/v1/me")).bearer_auth(token).send().await.map_or(0, |r| r.status().as_u16())
}

/// Asks until the status is `want` (serve looks at its file every 2 s), for at most 20 s.
async fn until(url: &str, token: &str, want: u16) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = me(url, token).await;
        if status == want || Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_added_and_revoked_while_serve_runs() {
    let ws = sample_workspace();
    let admin = "an-admin-token-for-the-tokens-test-0123456789";
    common::serve_config(ws.path(), &[("ops", admin, &["admin"])], "# kept: a comment of the operator's\n");
    let (mut child, url, _stderr) = common::spawn_serve(ws.path(), &[("LLM_MODEL", "scripted")]);

    // Readable by others, as an operator may keep it for a serve running as another user.
    use std::os::unix::fs::PermissionsExt;
    let config = ws.path().join("docs-agent.toml");
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let added = run(ws.path(), &[], &["tokens", "add", "ana", "--role", "ask", "--role", "approve"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    let token = added.stdout.trim().to_string();
    assert_eq!(token.len(), 48, "one token on stdout: {}", added.stdout);
    let text = std::fs::read_to_string(ws.path().join("docs-agent.toml")).expect("config");
    assert!(!text.contains(&token), "only its hash is written");
    assert!(text.contains(&docs_agent::serve::auth::hash(&token)), "{text}");
    assert!(text.contains("# kept: a comment of the operator's"), "the rest of the file stays: {text}");
    let mode = std::fs::metadata(&config).expect("config").permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "the file keeps its mode");
    let taken = until(&url, &token, 200).await;
    // A session of ana's, followed as the page follows it: the stream outlives any request.
    let client = reqwest::Client::new();
    let created: serde_json::Value = match client.post(format!("{url}/v1/sessions")).bearer_auth(&token).send().await {
        Ok(reply) => reply.json().await.unwrap_or_default(),
        Err(e) => panic!("create a session: {e}"),
    };
    let id = created["id"].as_str().unwrap_or_default().to_string();
    let followed = client
        .get(format!("{url}/v1/sessions/{id}/events"))
        .bearer_auth(&token)
        .header("Accept", "text/event-stream")
        .send()
        .await;
    let Ok(mut followed) = followed else { panic!("follow the session: {followed:?}") };
    assert_eq!(followed.status(), 200, "the stream is open");

    let listed = run(ws.path(), &[], &["tokens", "list"]);
    let again = run(ws.path(), &[], &["tokens", "add", "ana"]);
    let revoked = run(ws.path(), &[], &["tokens", "revoke", "ana"]);
    // The open stream ends with its reason once serve takes the change (at most 20 s here).
    let mut told = String::new();
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(chunk)) = followed.chunk().await {
            told.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    let refused = until(&url, &token, 401).await;
    let admin_still = me(&url, admin).await;
    let gone = run(ws.path(), &[], &["tokens", "revoke", "ana"]);
    let _ = child.kill();
    let _ = child.wait();

    assert_eq!(taken, 200, "a running serve takes the added token");
    assert!(
        listed.stdout.contains("ana  ask,approve  sha256 ") && listed.stdout.contains("ops  admin"),
        "{}",
        listed.stdout
    );
    assert!(!listed.stdout.contains(&token), "list never shows a token");
    assert_eq!(again.code, 2, "one token per name: {}", again.stderr);
    assert!(again.stderr.contains("tokens revoke ana"), "{}", again.stderr);
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    assert_eq!(refused, 401, "a running serve refuses the revoked token");
    assert!(ended.is_ok(), "the revoked token's open stream ended: {told}");
    assert!(told.contains("event: error") && told.contains("token_revoked"), "and said why: {told}");
    assert_eq!(admin_still, 200, "the other callers keep working");
    assert_eq!(gone.code, 1, "{}", gone.stderr);
}

/// Names that could not show plainly in logs and the page are refused; a file that is not
/// TOML is left alone.
#[test]
fn bad_names_and_broken_files_are_refused_and_nothing_is_written() {
    let ws = sample_workspace();
    for name in ["", "a b", "ana\u{202e}", &"x".repeat(65)] {
        let out = run(ws.path(), &[], &["tokens", "add", name]);
        assert_eq!(out.code, 2, "{name:?}: {}", out.stderr);
    }
    assert!(!ws.path().join("docs-agent.toml").exists(), "nothing written");
    std::fs::write(ws.path().join("docs-agent.toml"), "[serve\n").expect("write");
    let out = run(ws.path(), &[], &["tokens", "add", "ana"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("not valid TOML"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(ws.path().join("docs-agent.toml")).expect("read"), "[serve\n");
}

/// `init` in a git repository's working tree adds its config to the folder's .gitignore, once.
#[test]
fn init_keeps_its_config_out_of_git() {
    let ws = sample_workspace();
    std::fs::create_dir(ws.path().join(".git")).expect("a repository");
    std::fs::write(ws.path().join(".gitignore"), "target").expect("write");
    let out = run(ws.path(), &[], &["init"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(ws.path().join(".gitignore")).expect("read"), "target\n/docs-agent.toml\n");
    assert!(out.stderr.contains("added /docs-agent.toml"), "{}", out.stderr);
    let again = run(ws.path(), &[], &["init", "--replace"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(std::fs::read_to_string(ws.path().join(".gitignore")).expect("read"), "target\n/docs-agent.toml\n");
    // Outside a repository, nothing is added.
    let plain = sample_workspace();
    assert_eq!(run(plain.path(), &[], &["init"]).code, 0);
    assert!(!plain.path().join(".gitignore").exists());
}

/// A config in the home folder: serve reads that file alone (its folder would open the home
/// folder to the sandbox), and `docs-agent tokens` rewrites it in place, so an added token works
/// and a revoked one is refused without a restart (issue 51, finding 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_in_the_home_folder_is_watched_as_a_file() {
    let ws = sample_workspace();
    let admin = "an-admin-token-for-the-home-test-0123456789";
    common::serve_config(ws.path(), &[("ops", admin, &["admin"])], "");
    let home = ws.path().to_str().expect("utf-8 path");
    let env = [("LLM_MODEL", "scripted"), ("HOME", home)];
    let (mut child, url, mut log) = common::spawn_serve_logged(ws.path(), &env);
    let config = ws.path().join("docs-agent.toml");
    let inode = |p: &std::path::Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).expect("config"));
    let before = inode(&config);
    let added = run(ws.path(), &[("HOME", home)], &["tokens", "add", "ana", "--role", "ask"]);
    let token = added.stdout.trim().to_string();
    let taken = until(&url, &token, 200).await;
    let revoked = run(ws.path(), &[("HOME", home)], &["tokens", "revoke", "ana"]);
    let refused = until(&url, &token, 401).await;
    let admin_still = me(&url, admin).await;
    let told =
        log.text().contains("reads that file alone") || log.until("reads that file alone", Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let said = log.text();
    assert!(told, "serve said how it reads the file: {said}");
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert_eq!(revoked.code, 0, "{}", revoked.stderr);
    assert_eq!(inode(&config), before, "rewritten in place, never replaced");
    assert_eq!((taken, refused, admin_still), (200, 401, 200), "{said}");
    assert!(!ws.path().join(".docs-agent.toml.new").exists(), "the safety copy is gone once the rewrite is done");
}

/// When the file cannot all be taken (another value does not load, or it names collections
/// serve does not serve yet), its revocations still are: a token it no longer lists stops
/// working at once, one it keeps as it is goes on, and one it adds waits for a restart (issue
/// 51, finding 4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_is_taken_even_when_the_rest_of_the_file_waits_for_a_restart() {
    use docs_agent::serve::auth::hash;
    let ws = sample_workspace();
    let admin = "an-admin-token-for-the-partial-test-0123456789";
    let (ana, bo) = ("ana-token-for-the-partial-test-0123456789", "bo-token-for-the-partial-test-0123456789");
    let carol = "carol-token-for-the-partial-test-0123456789";
    // Without [[collections]], a token names none (and reads every one: `*`, as a token that
    // names `*` with them).
    let entry = |principal: &str, token: &str, role: &str| {
        format!("[[serve.tokens]]\nprincipal = \"{principal}\"\nsha256 = \"{}\"\nroles = [\"{role}\"]\n\n", hash(token))
    };
    let reading_all = |principal: &str, token: &str, role: &str| {
        entry(principal, token, role).replace("]\n\n", "]\ncollections = [\"*\"]\n\n")
    };
    let listen = "[serve]\nlisten = \"127.0.0.1:0\"\n\n";
    let config = ws.path().join("docs-agent.toml");
    let all = format!("{listen}{}{}{}", entry("ops", admin, "admin"), entry("ana", ana, "ask"), entry("bo", bo, "ask"));
    std::fs::write(&config, &all).expect("config");
    let (mut child, url, mut log) = common::spawn_serve_logged(ws.path(), &[("LLM_MODEL", "scripted")]);
    assert_eq!((me(&url, ana).await, me(&url, bo).await), (200, 200));

    // ana revoked, in a file with a value elsewhere that does not load.
    let broken = format!(
        "{listen}{}{}[budget]\nsession_tokens = \"lots\"\n",
        entry("ops", admin, "admin"),
        entry("bo", bo, "ask")
    );
    std::fs::write(&config, broken).expect("write");
    let ana_refused = until(&url, ana, 401).await;
    let bo_kept = me(&url, bo).await;

    // bo revoked and carol added, in a file that names a collection serve does not serve.
    let collections = format!(
        "{listen}{}{}[[collections]]\nname = \"billing\"\nworkspace = \"{}\"\n",
        reading_all("ops", admin, "admin"),
        reading_all("carol", carol, "ask"),
        ws.path().display()
    );
    std::fs::write(&config, collections).expect("write");
    let bo_refused = until(&url, bo, 401).await;
    let carol_waits = me(&url, carol).await;
    let admin_still = me(&url, admin).await;
    let within = Duration::from_secs(20);
    let told_ana = log.until("(tokens of ana no longer work)", within);
    let told_bo = log.until("(tokens of bo no longer work)", within);
    let _ = child.kill();
    let _ = child.wait();
    let said = log.text();
    assert!(told_ana && told_bo, "serve said which revocations it took: {said}");
    assert!(said.contains("but it cannot be used") && said.contains("but it changed its collections"), "{said}");
    assert_eq!(ana_refused, 401, "revoked though another value does not load: {said}");
    assert_eq!(bo_kept, 200, "a token kept as it was keeps working: {said}");
    assert_eq!(bo_refused, 401, "revoked though the file names collections not served: {said}");
    assert_eq!(carol_waits, 401, "a token added waits for a restart: {said}");
    assert_eq!(admin_still, 200, "{said}");
}
