//! The kernel sandbox (Landlock), seen from inside the real binary: `docs-agent sandbox-probe`
//! (test builds only) enters the sandbox `serve` would, then makes plain system calls. The
//! kernel, not the harness's path policy, must refuse what the plan does not name; the same
//! attempts with `--no-sandbox` succeed, so the refusals are the sandbox's. On a kernel without
//! Landlock (simulated in test builds by `DOCS_AGENT_TEST_HIDE_LANDLOCK=1`, a seccomp filter
//! that hides its system calls) a command warns and goes on, and with `--require-sandbox` every
//! command exits 7, which shows that every command enters it.

// It says on which Landlock ABI the checks ran; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros)]

mod common;

use std::net::TcpListener;
use std::path::Path;

use docs_agent::serve::auth::hash;
use serde_json::Value;

const EACCES: i64 = 13;
/// Makes the Landlock system calls fail in a test build, as on a kernel without Landlock.
const HIDE_LANDLOCK: (&str, &str) = ("DOCS_AGENT_TEST_HIDE_LANDLOCK", "1");
const ADMIN_TOKEN: &str = "sandbox-admin-token-0123456789";
const ASK_TOKEN: &str = "sandbox-ask-token-0123456789";

/// Two different ports on 127.0.0.1 that nothing listens on now (bound together, then
/// released).
fn free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").expect("free port");
    let (a, b) = (bind(), bind());
    let port = |l: &TcpListener| l.local_addr().expect("addr").port();
    (port(&a), port(&b))
}

/// Runs the probe in `ws` with `env` and the attempts; the status line and one line per attempt.
fn probe(ws: &Path, env: &[(&str, &str)], args: &[&str]) -> (common::Run, Option<Value>, Vec<Value>) {
    let mut all = vec!["sandbox-probe"];
    all.extend_from_slice(args);
    let out = common::run(ws, env, &all);
    let mut lines = out.stdout.lines().map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"));
    let status = lines.next();
    let attempts = lines.collect();
    (out, status, attempts)
}

/// The outcome of the attempt on `target`: Ok, or the errno.
fn outcome(attempts: &[Value], kind: &str, target: &str) -> Result<(), i64> {
    let line = attempts
        .iter()
        .find(|a| a["attempt"] == kind && a["target"] == target)
        .unwrap_or_else(|| panic!("no {kind} attempt on {target} in {attempts:?}"));
    if line["ok"] == true { Ok(()) } else { Err(line["errno"].as_i64().unwrap_or(-1)) }
}

#[test]
fn the_kernel_refuses_what_the_plan_does_not_name() {
    let ws = common::sample_workspace();
    let outside = tempfile::tempdir().expect("outside folder");
    // The model server's port, and another port that also listens on this machine.
    let model = TcpListener::bind("127.0.0.1:0").expect("model listener");
    let other = TcpListener::bind("127.0.0.1:0").expect("other listener");
    let (model_port, other_port) = (model.local_addr().expect("addr").port(), other.local_addr().expect("addr").port());
    let (listen_port, unlisted_port) = free_ports();
    let root = ws.path();
    let data = outside.path().join("data");
    let env = [
        ("LLM_BASE_URL", format!("http://127.0.0.1:{model_port}/v1")),
        ("DOCS_AGENT_SESSION_LOG", data.join("sessions.db").display().to_string()),
        ("DOCS_AGENT_LISTEN", format!("127.0.0.1:{listen_port}")),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let target = |p: &Path| p.display().to_string();
    let (docs_file, note, doc_write, outside_write, data_write, binary) = (
        target(&root.join("docs/refunds.md")),
        target(&root.join("notes/probe.md")),
        target(&root.join("docs/planted.md")),
        target(&outside.path().join("planted.txt")),
        target(&data.join("probe.txt")),
        env!("CARGO_BIN_EXE_docs-agent").to_string(),
    );
    // A program inside the workspace, which the sandbox lets the process read but not run. A
    // static one (Debian's ldconfig, run with --version), so that no library or loader outside
    // the workspace is what the kernel refuses; on a system without it, the attempt is skipped.
    let program = root.join("docs/tool");
    let static_program = std::fs::copy("/sbin/ldconfig", &program).is_ok();
    let program = target(&program);
    let attempts = [
        "read:/etc/passwd".to_string(),
        format!("read:{docs_file}"),
        format!("write:{note}"),
        format!("write:{doc_write}"),
        format!("write:{outside_write}"),
        format!("write:{data_write}"),
        format!("connect:127.0.0.1:{model_port}"),
        format!("connect:127.0.0.1:{other_port}"),
        format!("bind:127.0.0.1:{listen_port}"),
        format!("bind:127.0.0.1:{unlisted_port}"),
        format!("exec:{binary}"),
    ];
    let attempts: Vec<String> =
        attempts.into_iter().chain(static_program.then(|| format!("exec:{program} --version"))).collect();
    let attempts: Vec<&str> = attempts.iter().map(String::as_str).collect();

    let (out, status, made) = probe(root, &env, &attempts);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let status = status.expect("a status line");
    let abi = status["landlock_abi"].as_u64().unwrap_or(0);
    assert!(abi >= 1, "these checks need a kernel with Landlock (5.13 or later): {status}");
    let expected = if abi >= 6 { "enforced" } else { "partial" };
    assert_eq!(status["state"], expected, "{status}");
    assert_eq!(status["no_new_privs_kernel"], true, "{status}");
    eprintln!("sandbox checks ran on Landlock ABI {abi}");

    assert_eq!(outcome(&made, "read", "/etc/passwd"), Err(EACCES), "reading outside the workspace");
    assert_eq!(outcome(&made, "read", &docs_file), Ok(()));
    assert_eq!(outcome(&made, "write", &note), Ok(()));
    assert_eq!(outcome(&made, "write", &doc_write), Err(EACCES), "writing in docs/");
    assert_eq!(outcome(&made, "write", &outside_write), Err(EACCES), "writing outside the workspace");
    assert_eq!(outcome(&made, "write", &data_write), Ok(()), "the session log's folder is writable");
    assert_eq!(outcome(&made, "connect", &format!("127.0.0.1:{model_port}")), Ok(()));
    assert_eq!(outcome(&made, "bind", &format!("127.0.0.1:{listen_port}")), Ok(()));
    if abi >= 4 {
        assert_eq!(status["network"], true, "{status}");
        let other = format!("127.0.0.1:{other_port}");
        assert_eq!(outcome(&made, "connect", &other), Err(EACCES), "another port");
        assert_eq!(outcome(&made, "bind", &format!("127.0.0.1:{unlisted_port}")), Err(EACCES));
    }
    assert_eq!(outcome(&made, "exec", &binary), Err(EACCES), "running a program");
    if static_program {
        assert_eq!(outcome(&made, "exec", &program), Err(EACCES), "running a program it may read");
    }
    assert!(std::fs::read_to_string(root.join("notes/probe.md")).is_ok_and(|t| t.contains("inside the sandbox")));
    assert!(!root.join("docs/planted.md").exists() && !outside.path().join("planted.txt").exists());

    // Without the sandbox, the same process may do all of it: the refusals above are the kernel's.
    let mut unsandboxed = vec!["--no-sandbox"];
    unsandboxed.extend_from_slice(&attempts);
    let (out, status, made) = probe(root, &env, &unsandboxed);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(status.expect("a status line")["state"], "off");
    assert!(made.iter().all(|a| a["ok"] == true), "{made:?}");
}

#[test]
fn a_notes_folder_that_is_a_link_grants_no_write() {
    let ws = common::sample_workspace();
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    std::fs::remove_dir_all(ws.path().join("notes")).expect("remove notes");
    std::os::unix::fs::symlink(elsewhere.path(), ws.path().join("notes")).expect("link notes");
    let through_link = ws.path().join("notes/x.md").display().to_string();
    let direct = elsewhere.path().join("y.md").display().to_string();
    let (out, status, made) = probe(ws.path(), &[], &[&format!("write:{through_link}"), &format!("write:{direct}")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(status.expect("status")["filesystem"], true);
    assert_eq!(outcome(&made, "write", &through_link), Err(EACCES));
    assert_eq!(outcome(&made, "write", &direct), Err(EACCES));
}

#[test]
fn without_landlock_it_warns_and_goes_on_unless_the_sandbox_is_required() {
    let ws = common::sample_workspace();
    let (out, status, made) = probe(ws.path(), &[HIDE_LANDLOCK], &["read:/etc/passwd"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("warning: no kernel sandbox") && out.stderr.contains("--require-sandbox"));
    let status = status.expect("status");
    assert_eq!((status["state"].as_str(), status["landlock_abi"].as_u64()), (Some("unavailable"), Some(0)));
    assert_eq!(outcome(&made, "read", "/etc/passwd"), Ok(()));

    let out = common::run(ws.path(), &[HIDE_LANDLOCK, ("DOCS_AGENT_REQUIRE_SANDBOX", "1")], &["sandbox-probe"]);
    assert_eq!(out.code, 7, "required by the environment: {}", out.stderr);
    assert!(out.stdout.is_empty(), "nothing ran: {}", out.stdout);
    assert!(out.stderr.contains("the kernel sandbox is required") && out.stderr.contains("Landlock"));

    let out = common::run(ws.path(), &[], &["--require-sandbox", "--no-sandbox", "search", "refund"]);
    assert_eq!(out.code, 2, "the two flags conflict: {}", out.stderr);
    let required = [("DOCS_AGENT_REQUIRE_SANDBOX", "1")];
    let out = common::run(ws.path(), &required, &["--no-sandbox", "search", "refund"]);
    assert_eq!(out.code, 2, "a command line cannot undo the image's requirement: {}", out.stderr);
    assert!(out.stderr.contains("DOCS_AGENT_REQUIRE_SANDBOX=0"), "{}", out.stderr);
    let lifted = [("DOCS_AGENT_REQUIRE_SANDBOX", "0")];
    let out = common::run(ws.path(), &lifted, &["--no-sandbox", "search", "refund"]);
    assert_eq!(out.code, 0, "the requirement lifted: {}", out.stderr);
}

/// Every command enters the sandbox before it reads the workspace or talks to anyone: with
/// Landlock hidden and the sandbox required, each one exits 7 having printed nothing (one that
/// skipped the sandbox would run instead).
#[test]
fn every_command_enters_the_sandbox_first() {
    let ws = common::sample_workspace();
    // `serve` checks its configuration (a token) before the sandbox, as every command reads its
    // own: give it one it can use.
    let toml = format!(
        "[[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n",
        docs_agent::serve::auth::hash("a-token-of-twenty-characters")
    );
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("config");
    let evals = concat!(env!("CARGO_MANIFEST_DIR"), "/evals");
    let commands: &[&[&str]] = &[
        &["how long is the refund window"],
        &["ask", "how long is the refund window"],
        &["search", "refund"],
        &["check"],
        &["index", "status"],
        &["chat"],
        &["sessions", "list"],
        &["serve", "--listen", "127.0.0.1:0"],
        &["eval", "--cases", evals, "--filter", "robustness"],
        &["pull"],
        &["health"],
        &["redact"],
        &["mcp"],
        &["hash-token"],
        &["init", "--to", "new.toml"],
        &["tokens", "list"],
        &["tokens", "add", "bo"],
        &["report", "gaps"],
    ];
    let env = [HIDE_LANDLOCK, ("LLM_MODEL", "scripted")];
    for command in commands {
        let mut args = vec!["--require-sandbox"];
        args.extend_from_slice(command);
        let out = common::run_input(ws.path(), &env, &args, "a-token-of-twenty-characters\n");
        assert_eq!(out.code, 7, "{command:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("the kernel sandbox is required"), "{command:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{command:?} printed before entering: {}", out.stdout);
    }
}

/// A data folder that would let the sandbox open up the workspace or the whole filesystem is
/// refused with a message naming the setting, never granted.
#[test]
fn a_data_folder_that_would_open_up_the_workspace_is_refused() {
    let ws = common::sample_workspace();
    let out = common::run(ws.path(), &[("DOCS_AGENT_SESSION_LOG", "sessions.db")], &["sessions", "list"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("DOCS_AGENT_SESSION_LOG") && out.stderr.contains("holds the workspace"),
        "{}",
        out.stderr
    );
    // A workspace that ships `.docs-agent -> /` or a link to any other folder, run from inside it.
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    for target in [Path::new("/"), elsewhere.path()] {
        let _ = std::fs::remove_file(ws.path().join(".docs-agent"));
        std::os::unix::fs::symlink(target, ws.path().join(".docs-agent")).expect("link");
        let out = common::run(ws.path(), &[], &["search", "refund"]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains("index.path") && out.stderr.contains("symbolic link inside the workspace"));
        assert_eq!(std::fs::read_dir(elsewhere.path()).map(|d| d.count()).ok(), Some(0), "nothing made there");
    }
}

/// eval reads no config file from the folder it runs in, and writes its reports through
/// handles opened before the sandbox, so `--json /dev/stdout` into a pipe works.
#[test]
fn eval_runs_in_a_folder_with_a_config_file_and_reports_to_a_pipe() {
    let here = tempfile::tempdir().expect("folder");
    std::fs::write(here.path().join("docs-agent.toml"), "[limits]\nmax_steps = 1\n").expect("config");
    let evals = concat!(env!("CARGO_MANIFEST_DIR"), "/evals");
    let args = ["eval", "--cases", evals, "--filter", "robustness", "--json", "/dev/stdout"];
    let out = common::run(here.path(), &[], &args);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("\"categories\"") && out.stdout.contains("robustness"), "{}", out.stdout);
}

#[test]
fn serve_reports_its_sandbox_to_admins_and_health_reports_its_own() {
    let ws = common::sample_workspace();
    let toml = format!(
        "[serve]\nlisten = \"127.0.0.1:0\"\n\n[[serve.tokens]]\nprincipal = \"root\"\nsha256 = \"{}\"\nroles = [\"admin\"]\n\n\
         [[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n",
        hash(ADMIN_TOKEN),
        hash(ASK_TOKEN)
    );
    std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("config");
    let (mut child, url, _stderr) = common::spawn_serve(ws.path(), &[("LLM_MODEL", "scripted")]);
    let get = |token: Option<&str>| -> Value {
        let headers: Vec<_> = token.map(|t| ("Authorization", format!("Bearer {t}"))).into_iter().collect();
        http_get(&format!("{url}/readyz"), &headers)
    };
    let admin = get(Some(ADMIN_TOKEN));
    let asker = get(Some(ASK_TOKEN));
    let anyone = get(None);
    let health = common::run(ws.path(), &[], &["health", "--url", &format!("{url}/healthz")]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(admin["status"], "ready", "{admin}");
    assert_eq!(admin["sandbox"]["state"], "enforced", "{admin}");
    assert_eq!(admin["sandbox"]["network"], true, "{admin}");
    for other in [&asker, &anyone] {
        assert_eq!(other["status"], "ready");
        assert!(other.get("sandbox").is_none(), "only admins see the sandbox: {other}");
    }
    assert_eq!(health.code, 0, "{}", health.stderr);
    assert!(health.stdout.starts_with("sandbox: enforced (Landlock ABI "), "{}", health.stdout);
}

/// A blocking GET with `headers`; the JSON body.
fn http_get(url: &str, headers: &[(&'static str, String)]) -> Value {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let mut request = reqwest::Client::new().get(url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.expect("GET");
        response.json::<Value>().await.expect("JSON")
    })
}
