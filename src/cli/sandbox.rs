//! What each command may touch once it runs (its sandbox [`Plan`]), and entering it: after the
//! configuration is read, before the command starts a thread. The plans, by command:
//!
//! | command | reads | writes | TCP |
//! |---|---|---|---|
//! | ask, chat, sessions | the workspace | `notes/`, the index and session folders | connect: the model server |
//! | serve | the workspace; the config file's folder (changed tokens are read) | `notes/`, the index and session folders | connect: the model server, the OpenID provider's issuer (its port: discovery, keys, tokens); listen: its port |
//! | search, check, index | the workspace | the index folder | none (the embedding server, when `[retrieval.embeddings]` names a model, and the reranker, when `[retrieval.reranker]` names one: every command that searches does) |
//! | eval | each case's workspace | its own folder in the temporary folder | connect: `--model URL`'s port |
//! | pull, health | — | — | connect: the model server, the health URL |
//! | init, tokens | — | the config file's folder | none |
//! | redact, hash-token | — | — | none |
//!
//! Connecting also reads the host and resolver files and the CA certificates; opening SQLite
//! reads `/dev/urandom`. The configuration file is read before the sandbox and never again (an
//! eval case reads none), except by `serve`, which reads its folder for changed tokens. SQLite keeps its temporary data in memory
//! (`temp_store`), so only eval has a temporary folder. eval's reports are opened before the
//! sandbox and written through those handles.
//!
//! A data folder (the session log's, the index's) is granted only when it neither holds the
//! workspace nor lies in its `docs/` or `skills/`, is not `/`, and is not reached through a
//! link inside the workspace (`sandbox::data`): `DOCS_AGENT_SESSION_LOG=x.db` run in the
//! workspace, or a workspace's own `.docs-agent -> ~/.ssh`, is refused, not granted.
//!
//! Besides `load_config`, this is where the CLI reads the environment: the variables the HTTP
//! and TLS libraries read on their own (`*_PROXY`, `SSL_CERT_FILE`, `SSL_CERT_DIR`) and
//! `TMPDIR`, so the sandbox lets through what they will use; and `HOME`, so serve never keeps
//! reading a config file's folder that holds the home folder.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use super::{Exit, Failure, Global};
use crate::config::{Config, IndexStore};
use crate::sandbox::{self, Grant, Mode, Plan, State, Status};
use crate::session::store::Location;

/// How a command uses the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// Reads it and keeps the index: `search`, `check`, `index`.
    Look,
    /// Answers one question: may write notes, talks to the model.
    Answer,
    /// Serves another agent over MCP (`docs-agent mcp`): reads, talks to the model, writes
    /// nothing (its questions are asked in sessions that may not write).
    Mcp,
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

/// Enters `plan`; says on stderr when the kernel leaves files or TCP ports unrestricted.
pub fn enter(global: &Global, plan: &Plan) -> Result<Status, Failure> {
    // The trace exporter, when one is asked for, connects to its collector; not from a
    // command that connects nowhere (`redact`, `hash-token`, `init`, `search`...): those export
    // nothing rather than get a network.
    let exports = plan.connect.iter().next().is_some();
    let plan = match crate::telemetry::otel::settings() {
        Some(otel) if exports => with_model(plan.clone(), &otel.endpoint),
        _ => plan.clone(),
    };
    let status = sandbox::enter(&plan, mode(global)?).map_err(|e| match e {
        sandbox::SandboxError::Required(_) => (Exit::Sandbox, e.to_string()),
        other => (Exit::Failure, other.to_string()),
    })?;
    match status.state {
        // An older kernel (before 6.12) lacks only the scopes and device ioctls: not worth a
        // line on every command; `health` and `/readyz` still say "partial".
        State::Enforced | State::Off => {}
        State::Partial if status.filesystem && status.network => {}
        State::Partial => crate::guard::sink::err_line!(
            "docs-agent: warning: the kernel sandbox is {}; this kernel lacks the rest",
            status.describe()
        ),
        State::Unavailable => crate::guard::sink::err_line!(
            "docs-agent: warning: no kernel sandbox: {}; going on without it (a container, if one runs \
             this, still confines it; --require-sandbox makes this an error)",
            status.reason
        ),
    }
    // PDFs are read in processes of their own, forked from here while this is the one thread.
    #[cfg(unix)]
    if let Err(e) = crate::pdf::worker::start() {
        crate::guard::sink::err_line!("docs-agent: warning: {e}");
    }
    // Its threads start inside the sandbox.
    if exports && let Err(e) = crate::telemetry::otel::start() {
        crate::guard::sink::err_line!("docs-agent: warning: {e}; going on without exporting traces");
    }
    Ok(status)
}

/// The cores this process may use, counted before the sandbox: inside it, the cgroup's CPU
/// limit (a container's `cpus:`) cannot be read, and the host's count would be used.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// The plan of a command that works on the workspace `config` names; an error when a data
/// folder would open up the workspace or the whole filesystem.
pub fn for_workspace(config: &Config, uses: Use) -> Result<Plan, Failure> {
    if config.collections.is_empty() {
        return for_one(Plan::nothing(), config, uses);
    }
    // Each collection's workspace, index and source, as if it were the only one.
    let mut plan = Plan::nothing();
    for name in config.collection_names() {
        let own = config.for_collection(Some(&name)).map_err(|e| (Exit::Usage, e.to_string()))?;
        plan = for_one(plan, &own, uses)?;
    }
    Ok(plan)
}

/// [`for_workspace`] for one workspace, added to `plan`.
fn for_one(plan: Plan, config: &Config, uses: Use) -> Result<Plan, Failure> {
    let mut plan = plan.allow(&config.workspace, Grant::Read).allow("/dev/urandom", Grant::Read);
    // A docs folder given beside a workspace is read there (alone, it is the workspace).
    if let Some(docs) = config.docs.as_ref().filter(|_| !config.docs_alone) {
        plan = plan.allow(docs, Grant::Read);
    }
    if let IndexStore::File(file) = config.index_store() {
        let what = if config.index.path.trim().is_empty() {
            "the index (index.path unset: beside session.log_path, DOCS_AGENT_SESSION_LOG)"
        } else {
            "index.path (DOCS_AGENT_INDEX)"
        };
        plan = with_folder_of(plan, &file, what, config)?;
    }
    // A git source's folder (its cache, trees and state) is written by its sync, which connects
    // to the repository's port, or reads a repository on this machine. Its trees hold links
    // (each to a file inside the same tree: `git::checkout`).
    for source in crate::git::check_config(config).map_err(|e| (Exit::Usage, e))? {
        let _ = std::fs::DirBuilder::new().recursive(true).create(&source.home);
        plan = plan.allow(&source.home, Grant::WriteLinks);
        match &source.remote {
            crate::git::Remote::Http(_) => plan = plan.connect(source.remote.port().unwrap_or(443), &[]),
            crate::git::Remote::Local(path) => plan = plan.allow(path, Grant::Read),
        }
    }
    // Hybrid search asks the embedding server for every question's vector and for new sections'.
    if config.retrieval.embeddings.enabled() {
        plan = with_model(plan, config.embeddings_base_url());
    }
    // A reranker reads every search's best sections (and `check` asks whether it answers).
    if config.retrieval.reranker.enabled() {
        plan = with_model(plan, &config.retrieval.reranker.base_url);
    }
    match uses {
        Use::Look => return Ok(plan),
        Use::Mcp => return Ok(with_model(plan, &config.llm.base_url)),
        Use::Answer | Use::Converse | Use::Serve { .. } => {}
    }
    // notes/ only as a real folder: `notes -> /` must not make everything writable. A docs
    // folder alone has no notes: nothing in it is writable.
    if !config.docs_alone {
        let notes = config.workspace.join("notes");
        // The notes the model writes must never become documents it cites.
        if let Some(docs) = &config.docs
            && let Some(why) = sandbox::data::overlap(docs, &notes)
        {
            return Err((
                Exit::Usage,
                format!(
                    "the docs folder {} {why} the workspace's notes/ ({}), where approved notes are written; \
                     keep the documents in a folder of their own",
                    docs.display(),
                    notes.display()
                ),
            ));
        }
        plan = plan.allow_folder_not_link(notes, Grant::Write);
    }
    if matches!(uses, Use::Converse | Use::Serve { .. }) {
        match crate::session::store::Location::of(&config.session) {
            Location::File(path) => {
                let what = "session.log_path (DOCS_AGENT_SESSION_LOG)";
                plan = with_folder_of(plan, &path, what, config)?;
            }
            // The session database's port; a Unix socket's folder, to connect to it; the CA
            // file its certificate is checked against (sslrootcert).
            Location::Postgres { target, .. } => {
                for port in target.ports() {
                    plan = plan.connect(port, &[]);
                }
                for file in target.tls().files() {
                    plan = plan.allow(file, Grant::Read);
                }
                for folder in target.unix_folders() {
                    plan = plan.allow(folder, Grant::Write);
                }
            }
        }
    }
    plan = with_model(plan, &config.llm.base_url);
    if let Use::Serve { port } = uses {
        plan = plan.bind(port);
        // Sign-in asks the provider for its discovery document, keys, tokens and userinfo, all
        // on the issuer's port as providers publish them.
        if config.serve.oidc.enabled() {
            plan = with_model(plan, config.serve.oidc.issuer.trim());
        }
    }
    Ok(plan)
}

/// eval's own folder in the temporary folder (`docs-agent-eval-UID`), made private and kept
/// between runs: each case's copy is a folder inside it, removed after the case, and copies an
/// interrupted run left behind (over an hour old) are removed here. (A folder made fresh for
/// each run could not be removed from inside the sandbox.) When that name is taken by
/// something that is not this user's private folder, a fresh folder is made instead.
pub fn eval_scratch() -> Result<PathBuf, Failure> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    let folder = std::env::temp_dir().join(format!("docs-agent-eval-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&folder);
    let private = std::fs::symlink_metadata(&folder)
        .is_ok_and(|meta| meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0);
    if !private {
        return tempfile::Builder::new()
            .prefix(&format!("docs-agent-eval-{uid}-"))
            .tempdir()
            .map(tempfile::TempDir::keep)
            .map_err(|e| {
                (
                    Exit::Failure,
                    format!("cannot make a temporary folder for eval: {e}; set TMPDIR to a writable folder"),
                )
            });
    }
    let stale = |entry: &std::fs::DirEntry| {
        entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(3600))
    };
    for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten().filter(stale) {
        let _ = std::fs::remove_dir_all(entry.path());
    }
    Ok(folder)
}

/// The plan of `eval`: each case's workspace (read; it is copied), its folder in the temporary
/// folder for the copies, and the model server when one is named by URL.
pub fn for_eval(workspaces: &[PathBuf], scratch: &Path, base_url: Option<&str>) -> Plan {
    let mut plan = Plan::nothing().allow_folder_not_link(scratch, Grant::Scratch).allow("/dev/urandom", Grant::Read);
    for workspace in workspaces {
        plan = plan.allow(workspace, Grant::Read);
    }
    match base_url {
        Some(url) => with_model(plan, url),
        None => plan,
    }
}

/// The plan of `init`: making `file` in its folder (which must exist), nothing else.
pub fn for_new_file(file: &Path) -> Result<Plan, Failure> {
    let folder = sandbox::data::folder_of(file);
    if !folder.is_dir() {
        return Err((Exit::Usage, format!("{}: the folder {} does not exist", file.display(), folder.display())));
    }
    Ok(Plan::nothing().allow(folder, Grant::Write))
}

/// The plan of a command that only talks to the server at `url` (`pull`, `health`).
pub fn for_url(url: &str) -> Plan {
    with_model(Plan::nothing(), url)
}

/// The port of a listen address (`0.0.0.0:8080`, `[::1]:0`, `localhost:8080`).
pub fn listen_port(listen: &str) -> Option<u16> {
    listen.rsplit_once(':').and_then(|(_, port)| port.parse().ok())
}

/// Adds reading the folder the config file `file` is in, when `serve` may keep reading it for
/// changed tokens (a file replaced by a rename is a new file, which a rule on the old one would
/// not cover); and whether it may: the file exists, and its folder is neither `/` nor the home
/// folder or one of its parents (a config in `~` must not open `~/.ssh` to the sandbox).
pub fn with_config_file(plan: Plan, file: &Path) -> (Plan, bool) {
    if config_folder_readable(file) {
        return (plan.allow(sandbox::data::folder_of(file), Grant::Read), true);
    }
    // A file whose folder holds the home folder (or is `/`): the file alone, which
    // `docs-agent tokens` then rewrites in place ([`rewritten_in_place`]).
    match std::fs::canonicalize(file) {
        Ok(real) if real.is_file() => (plan.allow(&real, Grant::Read), true),
        _ => (plan, false),
    }
}

/// True when `file` is a config file serve reads alone, not its folder (it lies in the home
/// folder, or in a folder above it): a change must keep the file itself (the same inode), so
/// `docs-agent tokens` rewrites it in place rather than renaming a new file over it.
pub fn rewritten_in_place(file: &Path) -> bool {
    file.is_file() && !config_folder_readable(file)
}

fn config_folder_readable(file: &Path) -> bool {
    let Ok(folder) = std::fs::canonicalize(sandbox::data::folder_of(file)) else { return false };
    let home = std::env::var_os("HOME").map(PathBuf::from).and_then(|h| std::fs::canonicalize(h).ok());
    file.is_file() && folder.parent().is_some() && !home.is_some_and(|home| home.starts_with(&folder))
}

/// Adds the folder `file` (the setting `what`) lives in, made first so the rule can name it,
/// and granted as the real folder it resolves to (`sandbox::data`); an error that names the
/// setting when that folder would open up the workspace or the whole filesystem.
fn with_folder_of(plan: Plan, file: &Path, what: &str, config: &Config) -> Result<Plan, Failure> {
    let name = file.file_name().map_or("x.db".into(), |n| n.to_string_lossy());
    // The docs of a git source are a tree in the state folder, which its sync writes; with no
    // workspace named there is no AGENTS.md, skills or notes to keep apart from the data either.
    if !config.sources.is_empty() && config.docs_alone {
        return Ok(match sandbox::data::folder_for(file, Path::new("/nonexistent")) {
            Ok(Some(real)) => plan.allow_folder_not_link(real, Grant::Write),
            _ => plan,
        });
    }
    // A docs folder given is protected as a workspace's docs/ is, alone or not (not a git
    // source's tree, which lives in the state folder and which only its sync writes).
    if let Some(docs) = config.docs.as_ref().filter(|_| config.sources.is_empty())
        && let Some(why) = sandbox::data::touches(file, docs)
    {
        return Err((
            Exit::Usage,
            format!(
                "{what} {}: its folder {why} the docs folder {}, and the sandbox would let docs-agent write \
                 there; keep it in a folder of its own, e.g. .docs-agent/{name} or /data/{name}",
                file.display(),
                docs.display()
            ),
        ));
    }
    match sandbox::data::folder_for(file, &config.workspace) {
        Ok(Some(real)) => Ok(plan.allow_folder_not_link(real, Grant::Write)),
        Ok(None) => Ok(plan),
        Err(refused) => Err((
            Exit::Usage,
            format!(
                "{what} {}: its folder {}, and the sandbox would let docs-agent write there; keep it in a \
                     folder of its own, e.g. .docs-agent/{name} or /data/{name}",
                file.display(),
                refused.why(),
            ),
        )),
    }
}

/// Adds connecting to the server at `url` (the model's, or another the process calls: its port,
/// or the scheme's), and to a proxy the
/// environment names for it (the HTTP client uses `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`).
fn with_model(mut plan: Plan, url: &str) -> Plan {
    let Ok(url) = reqwest::Url::parse(url) else {
        // The client reports a malformed URL when it is used.
        return plan;
    };
    let mut extra: Vec<PathBuf> = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from).into_iter().collect();
    if let Some(dirs) = std::env::var_os("SSL_CERT_DIR") {
        extra.extend(std::env::split_paths(&dirs));
    }
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
#[cfg(all(debug_assertions, target_os = "linux"))]
pub fn probe(global: &Global, config: &Config, attempts: &[String]) -> Result<Exit, Failure> {
    use crate::sandbox::probe::{self, Attempt};
    let attempts: Vec<Attempt> = attempts
        .iter()
        .map(|a| Attempt::parse(a))
        .collect::<Result<_, _>>()
        .map_err(|e| (Exit::Usage, e.to_string()))?;
    let port = listen_port(&config.serve.listen).unwrap_or(0);
    let status = enter(global, &for_workspace(config, Use::Serve { port })?)?;
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
        crate::service::settings::load(&crate::config::Sources { file: None, env: env.into_iter().collect(), flags })
            .expect("config")
    }

    #[test]
    fn each_use_of_the_workspace_gets_only_what_it_needs() {
        let tmp = tempfile::tempdir().expect("tmp");
        let (ws, data) = (tmp.path().join("ws"), tmp.path().join("data"));
        let config = config(&ws, &data);
        let granted = |plan: &Plan, grant: Grant| -> Vec<PathBuf> {
            plan.entries.iter().filter(|e| e.grant == grant).map(|e| e.path.clone()).collect()
        };

        let look = for_workspace(&config, Use::Look).expect("plan");
        let data = data.canonicalize().expect("the folder is made so the rule can name it");
        assert_eq!(granted(&look, Grant::Read), vec![ws.clone(), PathBuf::from("/dev/urandom")]);
        assert_eq!(granted(&look, Grant::Write), vec![data.clone()], "the index beside the session log");
        assert!(look.connect.is_empty() && look.bind.is_empty());

        let answer = for_workspace(&config, Use::Answer).expect("plan");
        assert_eq!(granted(&answer, Grant::Write), vec![data.clone(), ws.join("notes")]);
        assert_eq!(answer.connect.iter().copied().collect::<Vec<_>>(), vec![11434]);
        assert!(answer.bind.is_empty());
        assert!(granted(&answer, Grant::Read).contains(&PathBuf::from("/etc/resolv.conf")));

        let mcp = for_workspace(&config, Use::Mcp).expect("plan");
        assert_eq!(granted(&mcp, Grant::Write), vec![data.clone()], "the index; no notes/, no session log");
        assert_eq!(mcp.connect.iter().copied().collect::<Vec<_>>(), vec![11434]);
        assert!(mcp.bind.is_empty());

        let serve = for_workspace(&config, Use::Serve { port: 8080 }).expect("plan");
        assert_eq!(serve.bind.iter().copied().collect::<Vec<_>>(), vec![8080]);
        assert!(serve.entries.iter().all(|e| e.grant != Grant::Scratch), "no temporary folder");
    }

    #[test]
    fn a_data_folder_that_would_open_up_the_workspace_or_everything_is_refused() {
        let tmp = tempfile::tempdir().expect("tmp");
        let ws = tmp.path().join("ws");
        std::fs::create_dir_all(ws.join("docs")).expect("docs");
        std::os::unix::fs::symlink("/", ws.join("root-link")).expect("link");
        for (log, why) in [
            (tmp.path().join("sessions.db"), "holds the workspace"),
            (ws.join("sessions.db"), "holds the workspace"),
            (ws.join("docs/sessions.db"), "inside the workspace's docs/"),
            (ws.join("root-link/sessions.db"), "a symbolic link inside the workspace"),
        ] {
            let config = config(&ws, log.parent().expect("folder"));
            let refused = for_workspace(&config, Use::Converse).expect_err("refused");
            assert_eq!(refused.0, Exit::Usage);
            assert!(refused.1.contains(why) && refused.1.contains("DOCS_AGENT_SESSION_LOG"), "{}", refused.1);
        }
        let config = config(&ws, &ws.join(".docs-agent"));
        assert!(for_workspace(&config, Use::Converse).is_ok(), "a folder of its own inside the workspace");
    }

    #[test]
    fn eval_reads_its_workspaces_and_writes_only_its_own_folder() {
        let tmp = tempfile::tempdir().expect("tmp");
        let scratch = eval_scratch().expect("eval's folder");
        assert!(scratch.starts_with(std::env::temp_dir()) && scratch.is_dir());
        assert_eq!(eval_scratch().expect("again"), scratch, "kept between runs");
        let plan = for_eval(&[tmp.path().join("ws")], &scratch, None);
        let scratched: Vec<_> = plan.entries.iter().filter(|e| e.grant == Grant::Scratch).map(|e| &e.path).collect();
        assert_eq!(scratched, vec![&scratch], "not the whole temporary folder");
        assert!(plan.entries.iter().all(|e| e.grant != Grant::Write), "nothing else is written");
        assert!(plan.connect.is_empty(), "the built-in models need no network");
    }

    #[test]
    fn the_model_port_comes_from_the_url_or_its_scheme() {
        assert!(for_url("http://ollama:11434/v1").connect.contains(&11434));
        assert!(for_url("https://api.example.com/v1").connect.contains(&443));
        assert!(for_url("not a url").connect.is_empty(), "a bad URL opens nothing");
    }
}
