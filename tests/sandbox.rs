//! The kernel sandbox (Landlock), seen from inside the real binary: `docs-agent sandbox-probe`
//! (test builds only) enters the sandbox `serve` would, then makes plain system calls. The
//! kernel, not the harness's path policy, must refuse what the plan does not name; the same
//! attempts with `--no-sandbox` succeed, so the refusals are the sandbox's. On a kernel without
//! Landlock (simulated with a seccomp filter that hides its system calls) the command warns
//! and goes on, and `--require-sandbox` makes it exit 7.

// It says on which Landlock ABI the checks ran; docs-agent itself prints only through guard::sink.
#![allow(clippy::disallowed_macros)]

mod common;

use std::net::TcpListener;
use std::path::Path;

use docs_agent::serve::auth::hash;
use serde_json::Value;

const EACCES: i64 = 13;
const ADMIN_TOKEN: &str = "sandbox-admin-token-0123456789";
const ASK_TOKEN: &str = "sandbox-ask-token-0123456789";

/// A port on 127.0.0.1 that nothing listens on now (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("free port").port()
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
    let (listen_port, unlisted_port) = (free_port(), free_port());
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
    // the workspace is what the kernel refuses.
    let program = root.join("docs/tool");
    std::fs::copy("/sbin/ldconfig", &program).expect("copy a static program (/sbin/ldconfig) into the workspace");
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
        format!("exec:{program} --version"),
    ];
    let attempts: Vec<&str> = attempts.iter().map(String::as_str).collect();

    let (out, status, made) = probe(root, &env, &attempts);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let status = status.expect("a status line");
    assert_eq!(status["state"], "enforced", "this kernel must enforce Landlock: {status}");
    assert!(status["landlock_abi"].as_u64().unwrap_or(0) >= 6, "{status}");
    assert_eq!((status["network"].clone(), status["no_new_privs_kernel"].clone()), (true.into(), true.into()));
    eprintln!("sandbox checks ran on Landlock ABI {}", status["landlock_abi"]);

    assert_eq!(outcome(&made, "read", "/etc/passwd"), Err(EACCES), "reading outside the workspace");
    assert_eq!(outcome(&made, "read", &docs_file), Ok(()));
    assert_eq!(outcome(&made, "write", &note), Ok(()));
    assert_eq!(outcome(&made, "write", &doc_write), Err(EACCES), "writing in docs/");
    assert_eq!(outcome(&made, "write", &outside_write), Err(EACCES), "writing outside the workspace");
    assert_eq!(outcome(&made, "write", &data_write), Ok(()), "the session log's folder is writable");
    assert_eq!(outcome(&made, "connect", &format!("127.0.0.1:{model_port}")), Ok(()));
    assert_eq!(outcome(&made, "connect", &format!("127.0.0.1:{other_port}")), Err(EACCES), "another port");
    assert_eq!(outcome(&made, "bind", &format!("127.0.0.1:{listen_port}")), Ok(()));
    assert_eq!(outcome(&made, "bind", &format!("127.0.0.1:{unlisted_port}")), Err(EACCES));
    assert_eq!(outcome(&made, "exec", &binary), Err(EACCES), "running a program");
    assert_eq!(outcome(&made, "exec", &program), Err(EACCES), "running a program it may read");
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
    assert_eq!(status.expect("status")["state"], "enforced");
    assert_eq!(outcome(&made, "write", &through_link), Err(EACCES));
    assert_eq!(outcome(&made, "write", &direct), Err(EACCES));
}

#[test]
fn without_landlock_it_warns_and_goes_on_unless_the_sandbox_is_required() {
    let ws = common::sample_workspace();
    let (out, status, made) = probe(ws.path(), &[], &["--hide-landlock", "read:/etc/passwd"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("warning: no kernel sandbox") && out.stderr.contains("--require-sandbox"));
    let status = status.expect("status");
    assert_eq!((status["state"].as_str(), status["landlock_abi"].as_u64()), (Some("unavailable"), Some(0)));
    assert_eq!(status["no_new_privs_kernel"], true, "no_new_privs is set even without Landlock");
    assert_eq!(outcome(&made, "read", "/etc/passwd"), Ok(()));

    for (env, flag) in [(vec![], Some("--require-sandbox")), (vec![("DOCS_AGENT_REQUIRE_SANDBOX", "1")], None)] {
        let mut args = vec!["--hide-landlock", "read:/etc/passwd"];
        args.extend(flag);
        let (out, status, _) = probe(ws.path(), &env, &args);
        assert_eq!(out.code, 7, "required sandbox: {}", out.stderr);
        assert!(status.is_none(), "nothing ran: {}", out.stdout);
        assert!(out.stderr.contains("the kernel sandbox is required") && out.stderr.contains("Landlock"));
    }
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
