//! What each command may touch once it runs (its sandbox [`Plan`]), and entering it: after the
//! configuration is read, before the command starts a thread. The plans, by command:
//!
//! | command | reads | writes | TCP |
//! |---|---|---|---|
//! | ask, chat, sessions | the workspace | `notes/`, the index and session folders | connect: the model server |
//! | serve | the workspace | `notes/`, the index and session folders | connect: the model server; listen: its port |
//! | search, check, index | the workspace | the index folder | none |
//! | eval | each case's workspace | a temporary folder, the report files | connect: `--model URL`'s port |
//! | pull, health | — | — | connect: the model server, the health URL |
//! | redact, hash-token | — | — | none |
//!
//! Connecting also reads the host and resolver files and the CA certificates. The
//! configuration file is read before the sandbox and never again, so no plan names it; no
//! plan has a temporary folder but eval's (SQLite keeps its temporary tables in memory).

use std::path::{Path, PathBuf};

use super::{Exit, Failure, Global};
use crate::config::{Config, IndexStore};
use crate::sandbox::{self, Grant, Mode, Plan, State, Status};

/// How a command uses the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Reads it and keeps the index: `search`, `check`, `index`.
    Look,
    /// Answers one question: may write notes, talks to the model.
    Answer,
    /// Answers in durable sessions: `chat`, `sessions`; also keeps the session log.
    Converse,
    /// `serve`: a durable conversation for many, listening on `port`.
    Serve {
        /// The listen address's port.
        port: u16,
    },
}

/// The mode the flags ask for. `--no-sandbox` is refused while the sandbox is required, so a
/// command line cannot undo what the image sets; `DOCS_AGENT_REQUIRE_SANDBOX=0` lifts it.
pub fn mode(global: &Global) -> Result<Mode, Failure> {
    match (global.no_sandbox, global.require_sandbox) {
        (true, true) => Err((
            Exit::Usage,
            "--no-sandbox cannot be used while the sandbox is required (--require-sandbox, or \
             DOCS_AGENT_REQUIRE_SANDBOX set, as in the image); set DOCS_AGENT_REQUIRE_SANDBOX=0 to lift the requirement"
                .into(),
        )),
        (true, false) => Ok(Mode::Off),
        (false, true) => Ok(Mode::Require),
        (false, false) => Ok(Mode::Auto),
    }
}

/// Enters `plan`; says on stderr when the kernel enforces less than all of it.
pub fn enter(global: &Global, plan: &Plan) -> Result<Status, Failure> {
    let status = sandbox::enter(plan, mode(global)?).map_err(|e| match e {
        sandbox::SandboxError::Required(_) => (Exit::Sandbox, e.to_string()),
        other => (Exit::Failure, other.to_string()),
    })?;
    match status.state {
        State::Enforced | State::Off => {}
        State::Partial => crate::guard::sink::err_line!(
            "docs-agent: warning: the kernel sandbox is {}; this kernel lacks the rest",
            status.describe()
        ),
        State::Unavailable => crate::guard::sink::err_line!(
            "docs-agent: warning: no kernel sandbox: {}; going on with the container's confinement only \
             (--require-sandbox makes this an error)",
            status.reason
        ),
    }
    Ok(status)
}

/// The plan of a command that works on the workspace `config` names.
pub fn for_workspace(config: &Config, uses: Use) -> Plan {
    let mut plan = Plan::nothing().allow(&config.workspace, Grant::Read);
    if let IndexStore::File(file) = config.index_store() {
        plan = with_folder_of(plan, &file);
    }
    if uses == Use::Look {
        return plan;
    }
    // notes/ only as a real folder: `notes -> /` must not make everything writable.
    plan = plan.allow_folder_not_link(config.workspace.join("notes"), Grant::Write);
    if matches!(uses, Use::Converse | Use::Serve { .. }) {
        plan = with_folder_of(plan, &config.session.log_path);
    }
    plan = with_model(plan, &config.llm.base_url);
    if let Use::Serve { port } = uses {
        plan = plan.bind(port);
    }
    plan
}

/// The plan of `eval`: each case's workspace (read; it is copied), a temporary folder for the
/// copies, the report files, and the model server when one is named by URL.
pub fn for_eval(workspaces: &[PathBuf], reports: &[&Path], base_url: Option<&str>) -> Plan {
    let mut plan = Plan::nothing().allow(std::env::temp_dir(), Grant::Scratch);
    for workspace in workspaces {
        plan = plan.allow(workspace, Grant::Read);
    }
    for report in reports {
        // Made now (empty) so the rule can name the file itself, not its whole folder.
        let _ = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(report);
        plan = plan.allow(*report, Grant::Write);
    }
    match base_url {
        Some(url) => with_model(plan, url),
        None => plan,
    }
}

/// The plan of a command that only talks to the server at `url` (`pull`, `health`).
pub fn for_url(url: &str) -> Plan {
    with_model(Plan::nothing(), url)
}

/// The port of a listen address (`0.0.0.0:8080`, `[::1]:0`, `localhost:8080`).
pub fn listen_port(listen: &str) -> Option<u16> {
    listen.rsplit_once(':').and_then(|(_, port)| port.parse().ok())
}

/// Adds the folder `file` lives in, made first (private, as the log and index make it) so the
/// rule can name it.
fn with_folder_of(plan: Plan, file: &Path) -> Plan {
    let folder = match file.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.to_path_buf(),
        _ => PathBuf::from("."),
    };
    use std::os::unix::fs::DirBuilderExt;
    // A folder that cannot be made gets no rule; the log or index then says why it cannot open.
    let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&folder);
    plan.allow(folder, Grant::Write)
}

/// Adds connecting to the server at `url` (its port, or the scheme's), and to a proxy the
/// environment names for it (the HTTP client uses `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`).
fn with_model(mut plan: Plan, url: &str) -> Plan {
    let Ok(url) = reqwest::Url::parse(url) else {
        // The client reports a malformed URL when it is used.
        return plan;
    };
    let extra: Vec<PathBuf> =
        ["SSL_CERT_FILE", "SSL_CERT_DIR"].iter().filter_map(std::env::var_os).map(PathBuf::from).collect();
    if let Some(port) = url.port_or_known_default() {
        plan = plan.connect(port, &extra);
    }
    for var in ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
        let port = std::env::var(var)
            .ok()
            .and_then(|proxy| reqwest::Url::parse(&proxy).ok())
            .and_then(|proxy| proxy.port_or_known_default());
        if let Some(port) = port {
            plan = plan.connect(port, &extra);
        }
    }
    plan
}

/// `docs-agent sandbox-probe` (test builds): enters the plan `serve` would have, then makes
/// each attempt; one JSON line for the status, then one per attempt.
#[cfg(debug_assertions)]
pub fn probe(global: &Global, config: &Config, attempts: &[String], hide_landlock: bool) -> Result<Exit, Failure> {
    use crate::sandbox::probe::{self, Attempt};
    let attempts: Vec<Attempt> =
        attempts.iter().map(|a| Attempt::parse(a)).collect::<Result<_, _>>().map_err(|e| (Exit::Usage, e))?;
    if hide_landlock {
        probe::hide_landlock().map_err(|e| (Exit::Failure, e))?;
    }
    let port = listen_port(&config.serve.listen).unwrap_or(0);
    let status = enter(global, &for_workspace(config, Use::Serve { port }))?;
    let mut line = status.to_json();
    line["no_new_privs_kernel"] = probe::no_new_privs().into();
    crate::guard::sink::out_line!("{line}");
    for attempt in &attempts {
        crate::guard::sink::out_line!("{}", attempt.run());
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_ports_are_read_from_any_address_form() {
        assert_eq!(listen_port("0.0.0.0:8080"), Some(8080));
        assert_eq!(listen_port("[::1]:0"), Some(0));
        assert_eq!(listen_port("localhost:9000"), Some(9000));
        assert_eq!(listen_port("8080"), None);
    }

    /// A configuration with `workspace` and the session log under `data`.
    fn config(workspace: &Path, data: &Path) -> Config {
        let flags = vec![
            ("workspace", workspace.display().to_string()),
            ("llm.base_url", "http://127.0.0.1:11434/v1".to_string()),
        ];
        let env = [("DOCS_AGENT_SESSION_LOG".to_string(), data.join("sessions.db").display().to_string())];
        Config::load(&crate::config::Sources { file: None, env: env.into_iter().collect(), flags }).expect("config")
    }

    #[test]
    fn each_use_of_the_workspace_gets_only_what_it_needs() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (ws, data) = (tmp.path().join("ws"), tmp.path().join("data"));
        let config = config(&ws, &data);
        let granted = |plan: &Plan, grant: Grant| -> Vec<PathBuf> {
            plan.entries.iter().filter(|e| e.grant == grant).map(|e| e.path.clone()).collect()
        };

        let look = for_workspace(&config, Use::Look);
        assert_eq!(granted(&look, Grant::Read), vec![ws.clone()]);
        assert_eq!(granted(&look, Grant::Write), vec![data.clone()], "the index beside the session log");
        assert!(look.connect.is_empty() && look.bind.is_empty());
        assert!(data.is_dir(), "the folder is made so the rule can name it");

        let answer = for_workspace(&config, Use::Answer);
        assert_eq!(granted(&answer, Grant::Write), vec![data.clone(), ws.join("notes")]);
        assert_eq!(answer.connect.iter().copied().collect::<Vec<_>>(), vec![11434]);
        assert!(answer.bind.is_empty());
        assert!(granted(&answer, Grant::Read).contains(&PathBuf::from("/etc/resolv.conf")));

        let serve = for_workspace(&config, Use::Serve { port: 8080 });
        assert_eq!(serve.bind.iter().copied().collect::<Vec<_>>(), vec![8080]);
        assert!(serve.entries.iter().all(|e| e.grant != Grant::Scratch), "no temporary folder");
    }

    #[test]
    fn eval_reads_its_workspaces_and_writes_its_reports_and_a_temporary_folder() {
        let tmp = tempfile::tempdir().expect("tmp");
        let report = tmp.path().join("junit.xml");
        let plan = for_eval(&[tmp.path().join("ws")], &[&report], None);
        assert!(report.is_file(), "the report is made so its rule names the file, not the folder");
        assert!(plan.entries.iter().any(|e| e.path == report && e.grant == Grant::Write));
        assert!(plan.entries.iter().any(|e| e.path == std::env::temp_dir() && e.grant == Grant::Scratch));
        assert!(plan.connect.is_empty(), "the built-in models need no network");
    }

    #[test]
    fn the_model_port_comes_from_the_url_or_its_scheme() {
        assert!(for_url("http://ollama:11434/v1").connect.contains(&11434));
        assert!(for_url("https://api.example.com/v1").connect.contains(&443));
        assert!(for_url("not a url").connect.is_empty(), "a bad URL opens nothing");
    }
}
