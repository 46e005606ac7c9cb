//! Policy checks for the container files: compose.yaml and Dockerfile.
//!
//! These tests need no Docker engine: they read the files and assert the
//! sandbox the agent is supposed to run in (read-only root, no capabilities,
//! non-root user, resource limits, notes/ as the only writable mount, an
//! internal-only network) and the shape of the image (multi-stage, empty
//! runtime base, non-root USER, exec-form ENTRYPOINT, no `curl | sh`).

use std::path::PathBuf;

use yaml_serde::Value;

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

fn repo_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn read(name: &str) -> String {
    let path = repo_file(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// compose.yaml, with its `<<: *replica` merge keys applied as Compose applies them.
fn compose() -> Value {
    let mut c: Value = yaml_serde::from_str(&read("compose.yaml")).expect("compose.yaml must be valid YAML");
    c.apply_merge().expect("compose.yaml: a `<<` merge key that Compose could not apply");
    c
}

// ---------------------------------------------------------------------------
// Navigating a yaml_serde::Value
// ---------------------------------------------------------------------------

/// Follows a dotted path of mapping keys, e.g. `"services.agent.read_only"`.
fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}

/// Like [`at`], but the key must exist.
fn req<'a>(v: &'a Value, path: &str) -> &'a Value {
    at(v, path).unwrap_or_else(|| panic!("compose.yaml: `{path}` is missing"))
}

/// The service named `name`.
fn service<'a>(c: &'a Value, name: &str) -> &'a Value {
    req(c, &format!("services.{name}"))
}

/// A scalar as text (`true`, `64`, `"256m"` all become strings).
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `true` (YAML bool) or `"true"` (string).
fn is_true(v: Option<&Value>) -> bool {
    v.and_then(text).is_some_and(|s| s.eq_ignore_ascii_case("true"))
}

/// A list of scalars; a single scalar counts as a one-element list; absent is empty.
fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items.iter().filter_map(text).collect(),
        Some(other) => text(other).into_iter().collect(),
    }
}

/// Names in the list form (`[a, b]`) or the mapping form (`{a: ..., b: ...}`),
/// as used by `networks:` and `depends_on:`.
fn names(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Mapping(m)) => m.keys().filter_map(text).collect(),
        other => strings(other),
    }
}

/// A non-empty list/mapping/scalar (for `ports:` and the like).
fn is_non_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Sequence(s)) => !s.is_empty(),
        Some(Value::Mapping(m)) => !m.is_empty(),
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(_) => true,
    }
}

/// Every service as `(name, definition)`.
fn services(c: &Value) -> Vec<(String, &Value)> {
    req(c, "services")
        .as_mapping()
        .expect("compose.yaml: `services` must be a mapping")
        .iter()
        .map(|(k, v)| (text(k).expect("service names are strings"), v))
        .collect()
}

/// The first of several alternative keys that is set.
fn first_set<'a>(svc: &'a Value, paths: &[&str]) -> Option<&'a Value> {
    paths.iter().filter_map(|p| at(svc, p)).find(|v| !v.is_null())
}

// ---------------------------------------------------------------------------
// Mounts (short `src:dst[:opts]` and long `{type, source, target, read_only}`)
// ---------------------------------------------------------------------------

#[derive(Debug)]
struct Mount {
    kind: String,
    source: String,
    target: String,
    read_only: bool,
}

fn mounts(svc: &Value) -> Vec<Mount> {
    let Some(Value::Sequence(items)) = at(svc, "volumes") else {
        return Vec::new();
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => {
                let parts: Vec<&str> = s.split(':').collect();
                let (source, target, opts) = match parts.as_slice() {
                    [target] => ("", *target, ""),
                    [source, target] => (*source, *target, ""),
                    [source, target, opts, ..] => (*source, *target, *opts),
                    [] => unreachable!("split yields at least one part"),
                };
                let kind = if source.starts_with('.') || source.starts_with('/') { "bind" } else { "volume" };
                Mount {
                    kind: kind.to_owned(),
                    source: source.to_owned(),
                    target: target.to_owned(),
                    read_only: opts.split(',').any(|o| o == "ro"),
                }
            }
            long => Mount {
                kind: at(long, "type").and_then(text).unwrap_or_default(),
                source: at(long, "source").and_then(text).unwrap_or_default(),
                target: at(long, "target")
                    .and_then(text)
                    .unwrap_or_else(|| panic!("compose.yaml: volume without target: {long:?}")),
                read_only: is_true(at(long, "read_only")),
            },
        })
        .collect()
}

/// The uid part of `user:` (`"10001:10001"`, `"10001"` or `10001`).
fn uid(svc: &Value) -> Option<String> {
    let user = at(svc, "user").and_then(text)?;
    Some(user.split(':').next().unwrap_or_default().trim().to_owned())
}

// ---------------------------------------------------------------------------
// compose.yaml: the agent's sandbox
// ---------------------------------------------------------------------------

/// The services that run docs-agent: the one-shot CLI (`agent`), the HTTP API (`api`) and the
/// `scale` profile's replicas of it.
const HARDENED: [&str; 4] = ["agent", "api", "api-a", "api-b"];

/// The `scale` profile's api replicas: sessions in the postgres service, behind lb.
const REPLICAS: [&str; 2] = ["api-a", "api-b"];

#[test]
fn compose_uses_the_compose_specification() {
    let c = compose();
    assert!(at(&c, "version").is_none(), "compose.yaml: drop the obsolete top-level `version:` key");
    assert!(is_non_empty(at(&c, "services")), "compose.yaml: no services defined");
}

#[test]
fn agent_root_filesystem_is_read_only() {
    let c = compose();
    for name in HARDENED {
        assert!(is_true(at(service(&c, name), "read_only")), "{name}: `read_only: true` is required");
    }
}

#[test]
fn agent_has_a_tmpfs_on_tmp() {
    let c = compose();
    for name in HARDENED {
        let agent = service(&c, name);
        let short = strings(at(agent, "tmpfs")).iter().any(|t| t.split(':').next() == Some("/tmp"));
        let long = mounts(agent).iter().any(|m| m.kind == "tmpfs" && m.target == "/tmp");
        assert!(short || long, "{name}: /tmp must be a tmpfs (the root filesystem is read-only)");
    }
}

#[test]
fn agent_drops_all_capabilities() {
    let c = compose();
    for name in HARDENED {
        let agent = service(&c, name);
        let dropped = strings(at(agent, "cap_drop"));
        assert!(
            dropped.iter().any(|c| c.eq_ignore_ascii_case("ALL")),
            "{name}: `cap_drop: [ALL]` is required, got {dropped:?}"
        );
        let added = strings(at(agent, "cap_add"));
        assert!(added.is_empty(), "{name}: must not add capabilities back, got cap_add {added:?}");
    }
}

#[test]
fn agent_cannot_gain_privileges() {
    let c = compose();
    for name in HARDENED {
        let opts = strings(at(service(&c, name), "security_opt"));
        let nnp = ["no-new-privileges", "no-new-privileges:true", "no-new-privileges=true"];
        assert!(
            opts.iter().any(|o| nnp.contains(&o.as_str())),
            "{name}: `security_opt: [no-new-privileges:true]` is required, got {opts:?}"
        );
    }
}

#[test]
fn agent_runs_as_uid_10001() {
    let c = compose();
    for name in HARDENED {
        let agent_uid = uid(service(&c, name));
        assert_eq!(
            agent_uid.as_deref(),
            Some("10001"),
            "{name}: `user:` must be the non-root 10001 (got {agent_uid:?})"
        );
    }
}

#[test]
fn agent_has_pids_and_memory_limits() {
    let c = compose();
    for name in HARDENED {
        let agent = service(&c, name);
        let pids = first_set(agent, &["pids_limit", "deploy.resources.limits.pids"]).and_then(text);
        assert!(
            pids.as_deref().and_then(|p| p.parse::<i64>().ok()).is_some_and(|p| p > 0),
            "{name}: a positive `pids_limit` (or deploy.resources.limits.pids) is required, got {pids:?}"
        );
        let mem = first_set(agent, &["mem_limit", "deploy.resources.limits.memory"]).and_then(text);
        assert!(
            mem.as_deref().is_some_and(|m| !m.trim().is_empty() && m != "0"),
            "{name}: `mem_limit` (or deploy.resources.limits.memory) is required, got {mem:?}"
        );
    }
}

#[test]
fn agent_workspace_is_read_only_and_only_notes_and_the_session_volume_are_writable() {
    let c = compose();
    for name in HARDENED {
        let all = mounts(service(&c, name));
        let workspace = all.iter().find(|m| m.target.trim_end_matches('/') == "/workspace");
        assert!(
            workspace.is_some_and(|m| m.read_only),
            "{name}: /workspace must be mounted read-only, mounts are {all:?}"
        );
        // the /tmp tmpfs (if given in long syntax) is scratch memory, not a mount of the host
        let is_writable = |m: &&Mount| {
            let tmp_tmpfs = m.kind == "tmpfs" && m.target == "/tmp";
            !m.read_only && !tmp_tmpfs
        };
        let mut writable: Vec<&str> = all.iter().filter(is_writable).map(|m| m.target.trim_end_matches('/')).collect();
        writable.sort();
        if REPLICAS.contains(&name) {
            // Its sessions are in postgres and its index in memory: notes/ alone.
            assert_eq!(writable, ["/workspace/notes"], "{name}: notes/ is the only writable mount");
            continue;
        }
        assert_eq!(
            writable,
            ["/data", "/workspace/notes"],
            "{name}: notes/ and the session log are the only writable mounts"
        );
        let notes = all.iter().filter(is_writable).find(|m| m.target.starts_with("/workspace"));
        assert!(
            notes.is_some_and(|m| m.kind == "bind" && m.source.trim_end_matches('/').ends_with("workspace/notes")),
            "{name}: notes must be a bind of ./workspace/notes, got {notes:?}"
        );
        let data = all.iter().find(|m| m.target.trim_end_matches('/') == "/data");
        assert!(
            data.is_some_and(|m| m.kind == "volume" && !m.source.contains('/') && !m.source.is_empty()),
            "{name}: /data must be a named volume, never a host folder, got {data:?}"
        );
        let volumes = names(at(&c, "volumes"));
        assert!(
            volumes.contains(&data.map(|m| m.source.clone()).unwrap_or_default()),
            "the session volume is declared"
        );
        assert!(
            at(service(&c, name), "volumes_from").is_none(),
            "{name}: `volumes_from` would bring in other services' (writable) mounts"
        );
    }
}

#[test]
fn agent_keeps_its_session_log_on_the_volume() {
    let c = compose();
    for name in HARDENED.into_iter().filter(|n| !REPLICAS.contains(n)) {
        let log = at(service(&c, name), "environment.DOCS_AGENT_SESSION_LOG").and_then(text);
        assert!(
            log.as_deref().is_some_and(|p| p.starts_with("/data/")),
            "DOCS_AGENT_SESSION_LOG must be under /data, got {log:?}"
        );
        let rootfs = read("docker/rootfs.sh");
        let theirs = rootfs.lines().skip_while(|l| !l.contains("--owner=10001")).take(2).collect::<String>();
        assert!(theirs.contains("./data"), "docker/rootfs.sh: /data must belong to 10001: {theirs}");
        let docker = read("Dockerfile");
        assert!(docker.contains("DOCS_AGENT_SESSION_LOG=/data/sessions.db"), "Dockerfile: the image points at /data");
    }
}

#[test]
fn agent_is_only_on_the_sealed_network() {
    let c = compose();
    let agent = service(&c, "agent");
    assert_eq!(names(at(agent, "networks")), ["sealed"], "agent: must join the internal `sealed` network and no other");
    assert!(at(agent, "network_mode").is_none(), "agent: `network_mode` would bypass the sealed network");
    // The api is published, which an internal network cannot do: it also joins `front`, a
    // plain bridge no other service joins.
    for name in ["api", "api-a", "api-b"] {
        let api = service(&c, name);
        assert_eq!(
            names(at(api, "networks")),
            ["sealed", "front"],
            "{name}: `sealed` for the model, `front` for its port"
        );
    }
    // lb, in front of the replicas, is on `front` alone: it reaches neither the model nor the
    // database.
    assert_eq!(names(at(service(&c, "lb"), "networks")), ["front"], "lb: on `front` only");
    for (name, svc) in services(&c) {
        assert!(
            ["api", "api-a", "api-b", "lb"].contains(&name.as_str())
                || !names(at(svc, "networks")).contains(&"front".to_string()),
            "{name} must not join front"
        );
    }
}

#[test]
fn sealed_network_is_internal() {
    let c = compose();
    assert!(
        is_true(at(&c, "networks.sealed.internal")),
        "networks.sealed: `internal: true` is required (no route out)"
    );
    // Without it, Docker before 25 still routes an internal network to the host's addresses.
    let inhibit = at(&c, "networks.sealed.driver_opts").and_then(|o| o.get("com.docker.network.bridge.inhibit_ipv4"));
    assert_eq!(inhibit.and_then(text).as_deref(), Some("true"), "networks.sealed: the host takes no address on it");
}

#[test]
fn ollama_bridges_sealed_and_egress() {
    let c = compose();
    let nets = names(at(service(&c, "ollama"), "networks"));
    assert!(
        nets.iter().any(|n| n == "sealed") && nets.iter().any(|n| n == "egress"),
        "ollama: must be on both `sealed` and `egress`, got {nets:?}"
    );
    assert!(
        at(&c, "networks").is_some_and(|n| n.get("egress").is_some()),
        "compose.yaml: the `egress` network must be declared"
    );
    assert!(
        !is_true(at(&c, "networks.egress.internal")),
        "networks.egress: must not be internal (ollama downloads models through it)"
    );
}

#[test]
fn ollama_image_is_pinned() {
    let c = compose();
    let image = at(service(&c, "ollama"), "image").and_then(text).unwrap_or_default();
    let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or_default();
    assert!(
        image.contains('@') || (!tag.is_empty() && !tag.contains('/') && tag != "latest"),
        "ollama: image must be pinned to a version tag or digest, got {image:?}"
    );
}

/// Nothing waits for a model pull (a question pulls the model it lacks itself), and the agent
/// waits for nothing: built-in models, search, check, eval and hash-token never need Ollama.
#[test]
fn nothing_waits_for_a_model_pull_and_the_agent_needs_no_ollama() {
    let c = compose();
    for (name, svc) in services(&c) {
        let words: Vec<String> = strings(at(svc, "command"))
            .iter()
            .flat_map(|s| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
            .collect();
        assert!(!words.iter().any(|w| w == "pull"), "{name}: no service pulls a model ({words:?})");
    }
    assert!(at(service(&c, "agent"), "depends_on").is_none(), "agent: must not wait for another service");
    let api = at(service(&c, "api"), "depends_on.ollama.condition").and_then(text);
    assert_eq!(api.as_deref(), Some("service_healthy"), "api: starts once ollama is healthy");
}

/// Ollama: no capability, no privilege gain, bounded memory and processes, a health check,
/// and the context length set (its OpenAI endpoint otherwise cuts long prompts silently).
#[test]
fn ollama_is_hardened() {
    let c = compose();
    let ollama = service(&c, "ollama");
    assert_eq!(strings(at(ollama, "cap_drop")), ["ALL"], "ollama: cap_drop ALL");
    assert!(strings(at(ollama, "security_opt")).iter().any(|o| o.starts_with("no-new-privileges")));
    assert!(at(ollama, "mem_limit").is_some() && at(ollama, "pids_limit").is_some(), "ollama: memory and pids limits");
    assert!(is_non_empty(at(ollama, "healthcheck.test")), "ollama: a health check");
    assert!(at(ollama, "environment.OLLAMA_CONTEXT_LENGTH").is_some(), "ollama: OLLAMA_CONTEXT_LENGTH");
}

/// The reranker (the `rerank` profile): off unless asked for, pinned, hardened as ollama, on
/// `sealed` for the agent and `egress` for its one download, its model in a volume of its own.
#[test]
fn the_reranker_is_optional_pinned_and_hardened() {
    let c = compose();
    let reranker = service(&c, "reranker");
    assert_eq!(strings(at(reranker, "profiles")), ["rerank"], "reranker: in the `rerank` profile, so `up` skips it");
    let image = at(reranker, "image").and_then(text).unwrap_or_default();
    // TEI's tags are `cpu-1.9.3` (a release) and `cpu-1.9`, `cpu-latest` (moving)
    let version = image.rsplit_once(':').and_then(|(_, tag)| tag.rsplit('-').next()).unwrap_or_default();
    let release = version.split('.').count() == 3 && version.split('.').all(|n| n.parse::<u32>().is_ok());
    assert!(image.contains('@') || release, "reranker: pin a release (x.y.z) or a digest, got {image:?}");
    let command = strings(at(reranker, "command"));
    assert!(
        command.windows(2).any(|w| w[0] == "--model-id" && w[1] == "cross-encoder/ms-marco-MiniLM-L-12-v2"),
        "reranker: serves the model the relevance thresholds are measured with, got {command:?}"
    );
    assert_eq!(strings(at(reranker, "cap_drop")), ["ALL"], "reranker: cap_drop ALL");
    assert!(strings(at(reranker, "cap_add")).is_empty(), "reranker: no capability added back");
    assert!(strings(at(reranker, "security_opt")).iter().any(|o| o.starts_with("no-new-privileges")), "reranker");
    assert!(
        at(reranker, "mem_limit").is_some() && at(reranker, "pids_limit").is_some(),
        "reranker: memory and pids limits"
    );
    assert!(!is_non_empty(at(reranker, "ports")), "reranker: its API is not published on the host");
    assert_eq!(
        names(at(reranker, "networks")),
        ["sealed", "egress"],
        "reranker: `sealed` to serve, `egress` to download"
    );
    assert!(is_non_empty(at(reranker, "healthcheck.test")), "reranker: a health check");
    let cache = mounts(reranker);
    assert!(
        cache.iter().any(|m| m.kind == "volume" && m.target == "/data")
            && names(at(&c, "volumes")).iter().any(|v| v == "reranker"),
        "reranker: its model cache (/data) in the declared `reranker` volume, got {cache:?}"
    );
    for (name, svc) in services(&c) {
        assert!(
            ["ollama", "reranker"].contains(&name.as_str())
                || !names(at(svc, "networks")).contains(&"egress".to_string()),
            "{name} must not join egress"
        );
        assert!(
            !names(at(svc, "depends_on")).contains(&"reranker".to_string()),
            "{name}: must not wait for the reranker (off by default; a search without it keeps its own order)"
        );
    }
}

/// Every service that runs docs-agent passes DOCS_AGENT_RERANKER_URL on, empty (reranking off)
/// unless set: `DOCS_AGENT_RERANKER_URL=http://reranker:80 docker compose run --rm agent ...`.
#[test]
fn docs_agent_reranks_only_when_asked() {
    let c = compose();
    for name in HARDENED {
        let url = at(service(&c, name), "environment.DOCS_AGENT_RERANKER_URL").and_then(text);
        assert_eq!(
            url.as_deref(),
            Some("${DOCS_AGENT_RERANKER_URL:-}"),
            "{name}: DOCS_AGENT_RERANKER_URL, empty by default"
        );
    }
}

/// `init` writes the api's config once, by hand only (a profile keeps `up` from starting it),
/// with no network, where the api reads it read-only.
#[test]
fn init_writes_the_api_config_by_hand_only() {
    let c = compose();
    let init = service(&c, "init");
    assert!(is_non_empty(at(init, "profiles")), "init: a profile, so `up` never runs it");
    assert_eq!(at(init, "network_mode").and_then(text).as_deref(), Some("none"), "init: no network");
    // The whole command is the entrypoint, so `run --rm init --replace` only adds a flag.
    let entrypoint = strings(at(init, "entrypoint"));
    let config = at(service(&c, "api"), "environment.DOCS_AGENT_CONFIG").and_then(text).unwrap_or_default();
    assert_eq!(
        entrypoint,
        ["/usr/local/bin/docs-agent", "init", "--to", config.as_str()],
        "init: writes the api's DOCS_AGENT_CONFIG"
    );
    assert!(at(init, "command").is_none(), "init: no command, so arguments given to `run` are init's flags");
    assert_eq!(strings(at(init, "cap_drop")), ["ALL"]);
    assert!(is_true(at(init, "read_only")), "init: read-only root");
}

/// The scale profile's replicas keep their sessions in the postgres service, with the password
/// from the environment (never written in the file), their index in memory, and start once
/// the database is up.
#[test]
fn replicas_keep_their_sessions_in_postgres() {
    let c = compose();
    for name in REPLICAS {
        let replica = service(&c, name);
        assert_eq!(strings(at(replica, "profiles")), ["scale"], "{name}: in the `scale` profile only");
        let url = at(replica, "environment.DOCS_AGENT_SESSION_LOG_URL").and_then(text).unwrap_or_default();
        assert!(
            url.starts_with("postgres://docs_agent:${DOCS_AGENT_DB_PASSWORD")
                && url.ends_with("@postgres:5432/docs_agent"),
            "{name}: its sessions in the postgres service, the password from DOCS_AGENT_DB_PASSWORD: {url}"
        );
        let index = at(replica, "environment.DOCS_AGENT_INDEX").and_then(text);
        assert_eq!(index.as_deref(), Some("memory"), "{name}: each replica indexes docs/ in memory");
        let waits = at(replica, "depends_on.postgres.condition").and_then(text);
        assert_eq!(waits.as_deref(), Some("service_healthy"), "{name}: starts once postgres is healthy");
    }
    let password = at(service(&c, "postgres"), "environment.POSTGRES_PASSWORD").and_then(text).unwrap_or_default();
    assert!(password.starts_with("${DOCS_AGENT_DB_PASSWORD"), "postgres: the password from .env, got {password:?}");
    let lb = strings(at(service(&c, "lb"), "depends_on"));
    assert_eq!(lb, ["api-a", "api-b"], "lb: in front of both replicas");
    let cfg = read("docker/haproxy.cfg");
    for name in REPLICAS {
        assert!(cfg.contains(&format!("server {name} {name}:8080")), "docker/haproxy.cfg: no server {name}");
    }
    assert!(cfg.contains("option httpchk GET /healthz"), "docker/haproxy.cfg: checks the replicas' /healthz");
}

/// The scale profile's outside images: pinned, no capability, no privilege gain, bounded,
/// not root; postgres on the sealed network alone.
#[test]
fn postgres_and_the_load_balancer_are_hardened() {
    let c = compose();
    for (name, user) in [("postgres", "postgres"), ("lb", "haproxy")] {
        let svc = service(&c, name);
        let image = at(svc, "image").and_then(text).unwrap_or_default();
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or_default();
        assert!(
            tag.chars().next().is_some_and(|c| c.is_ascii_digit()) && tag.contains('.'),
            "{name}: pin a version: {image}"
        );
        assert_eq!(strings(at(svc, "cap_drop")), ["ALL"], "{name}: cap_drop ALL");
        assert!(strings(at(svc, "security_opt")).iter().any(|o| o.starts_with("no-new-privileges")), "{name}");
        assert!(at(svc, "mem_limit").is_some() && at(svc, "pids_limit").is_some(), "{name}: memory and pids limits");
        assert_eq!(at(svc, "user").and_then(text).as_deref(), Some(user), "{name}: runs as {user}, not root");
        assert_eq!(strings(at(svc, "profiles")), ["scale"], "{name}: in the `scale` profile only");
    }
    assert_eq!(names(at(service(&c, "postgres"), "networks")), ["sealed"], "postgres: on the sealed network only");
    assert!(is_non_empty(at(service(&c, "postgres"), "healthcheck.test")), "postgres: a health check");
    assert!(is_true(at(service(&c, "lb"), "read_only")), "lb: read-only root");
}

#[test]
fn no_service_is_privileged_or_shares_host_namespaces() {
    let c = compose();
    for (name, svc) in services(&c) {
        assert!(!is_true(at(svc, "privileged")), "{name}: `privileged: true` is forbidden");
        for key in ["network_mode", "pid", "ipc", "userns_mode", "uts"] {
            let value = at(svc, key).and_then(text).unwrap_or_default();
            assert_ne!(value, "host", "{name}: `{key}: host` is forbidden");
        }
    }
}

#[test]
fn agent_publishes_no_ports_and_the_api_only_on_loopback() {
    let c = compose();
    let published = ["api", "lb"];
    for (name, svc) in services(&c) {
        if !published.contains(&name.as_str()) {
            assert!(!is_non_empty(at(svc, "ports")), "{name}: must not publish ports");
        }
    }
    for name in published {
        let ports = strings(at(service(&c, name), "ports"));
        assert_eq!(ports.len(), 1, "{name}: one published port, got {ports:?}");
        assert!(
            ports[0].starts_with("127.0.0.1:") && ports[0].ends_with(":8080"),
            "{name}: on the host's loopback only: {ports:?}"
        );
    }
}

#[test]
fn api_serves_with_a_health_check_of_its_own_binary() {
    let c = compose();
    for name in ["api", "api-a", "api-b"] {
        serves_with_a_health_check(&c, name);
    }
}

/// `name` runs `serve`, waits for its config, and is health-checked by its own binary.
fn serves_with_a_health_check(c: &Value, name: &str) {
    let api = service(c, name);
    let command = strings(at(api, "command"));
    assert_eq!(command.first().map(String::as_str), Some("serve"), "{name}: must run `serve`, got {command:?}");
    assert!(
        command.iter().any(|c| c == "--wait-for-config"),
        "{name}: started before `init` writes its config, `serve` must wait for it (--wait-for-config), \
         not exit and be restarted in a loop; got {command:?}"
    );
    let test = strings(at(api, "healthcheck.test"));
    assert!(
        test.first().is_some_and(|t| t == "CMD")
            && test.iter().any(|t| t.ends_with("docs-agent"))
            && test.iter().any(|t| t == "health"),
        "{name}: the health check must run `docs-agent health` (the image has no shell or curl), got {test:?}"
    );
    let config = at(api, "environment.DOCS_AGENT_CONFIG").and_then(text).unwrap_or_default();
    let mounted = mounts(api).iter().any(|m| std::path::Path::new(&config).starts_with(&m.target) && m.read_only);
    assert!(mounted, "{name}: its config (tokens) must be mounted read-only at DOCS_AGENT_CONFIG ({config})");
}

// ---------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------

/// One Dockerfile instruction: keyword (upper case) and its arguments.
#[derive(Debug)]
struct Instruction {
    keyword: String,
    args: String,
}

/// Splits the Dockerfile into instructions: comment lines dropped (also inside
/// a continued instruction, as Docker does), `\` continuations joined.
fn dockerfile() -> Vec<Instruction> {
    instructions("Dockerfile")
}

/// The instructions of the Dockerfile at `name` (see [`dockerfile`]).
fn instructions(name: &str) -> Vec<Instruction> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in read(name).lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (current.is_empty() && trimmed.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                let (keyword, args) = current.trim().split_once(char::is_whitespace).unwrap_or((current.trim(), ""));
                out.push(Instruction { keyword: keyword.to_ascii_uppercase(), args: args.trim().to_owned() });
                current.clear();
            }
        }
    }
    out
}

/// The image named by a `FROM` (flags such as `--platform` and `AS name` skipped).
fn from_image(args: &str) -> &str {
    args.split_whitespace().find(|w| !w.starts_with("--")).unwrap_or_default()
}

/// The instructions of the last stage (from its `FROM` on).
fn final_stage(all: &[Instruction]) -> &[Instruction] {
    let last_from = all.iter().rposition(|i| i.keyword == "FROM").expect("Dockerfile: no FROM");
    &all[last_from..]
}

#[test]
fn dockerfile_is_multi_stage() {
    let all = dockerfile();
    let froms = all.iter().filter(|i| i.keyword == "FROM").count();
    assert!(froms >= 2, "Dockerfile: a builder and a runtime stage are required, found {froms} FROM");
}

#[test]
fn dockerfile_runtime_is_scratch_or_distroless() {
    let all = dockerfile();
    let image = from_image(&final_stage(&all)[0].args);
    assert!(
        image == "scratch" || image.starts_with("gcr.io/distroless/"),
        "Dockerfile: the runtime stage must be FROM scratch or distroless, got {image:?}"
    );
}

#[test]
fn dockerfile_base_images_are_pinned() {
    let all = dockerfile();
    let stages: Vec<String> = all
        .iter()
        .filter(|i| i.keyword == "FROM")
        .filter_map(|i| {
            let words: Vec<&str> = i.args.split_whitespace().collect();
            words
                .iter()
                .position(|w| w.eq_ignore_ascii_case("as"))
                .and_then(|p| words.get(p + 1))
                .map(ToString::to_string)
        })
        .collect();
    for image in all.iter().filter(|i| i.keyword == "FROM").map(|i| from_image(&i.args)) {
        if image == "scratch" || stages.iter().any(|s| s == image) {
            continue;
        }
        let tag = image.rsplit_once(':').map(|(_, t)| t).unwrap_or_default();
        assert!(
            image.contains('@') || (!tag.is_empty() && !tag.contains('/') && tag != "latest"),
            "Dockerfile: base image {image:?} must be pinned by tag or digest"
        );
    }
}

#[test]
fn dockerfile_runs_as_uid_10001() {
    let all = dockerfile();
    let user = final_stage(&all).iter().rev().find(|i| i.keyword == "USER").map(|i| i.args.clone());
    let uid = user.as_deref().and_then(|u| u.split(':').next());
    assert_eq!(uid, Some("10001"), "Dockerfile: the runtime stage must end with `USER 10001` (got {user:?})");
}

#[test]
fn dockerfile_entrypoint_is_exec_form() {
    let all = dockerfile();
    let entrypoint = final_stage(&all)
        .iter()
        .rev()
        .find(|i| i.keyword == "ENTRYPOINT")
        .expect("Dockerfile: the runtime stage needs an ENTRYPOINT");
    // A JSON array is also a YAML flow sequence, so yaml_serde can check it.
    let argv: Vec<String> = yaml_serde::from_str(&entrypoint.args).unwrap_or_else(|e| {
        panic!("Dockerfile: ENTRYPOINT must be exec (JSON array) form, got {:?}: {e}", entrypoint.args)
    });
    assert!(
        entrypoint.args.starts_with('[') && !argv.is_empty(),
        "Dockerfile: ENTRYPOINT must be a non-empty JSON array"
    );
    assert_eq!(argv[0], "/usr/local/bin/docs-agent", "Dockerfile: ENTRYPOINT must run the docs-agent binary");
}

#[test]
fn dockerfile_never_pipes_a_download_into_a_shell() {
    let shells = ["sh", "bash", "zsh", "dash", "ash", "sudo"];
    for instruction in dockerfile() {
        let text = instruction.args.to_ascii_lowercase();
        let segments: Vec<&str> = text.split('|').map(str::trim).filter(|s| !s.is_empty()).collect();
        for pair in segments.windows(2) {
            let downloads = pair[0].split_whitespace().any(|w| w == "curl" || w == "wget");
            let next = pair[1].split_whitespace().next().unwrap_or_default();
            let into_shell = shells.iter().any(|s| next == *s || next.ends_with(&format!("/{s}")));
            assert!(
                !(downloads && into_shell),
                "Dockerfile: `{} {}` pipes a download into a shell",
                instruction.keyword,
                instruction.args
            );
        }
    }
}

/// Ollama's OpenAI-compatible endpoint cuts a prompt longer than its context from the start,
/// silently: the context length is set for the prompts the harness sends (rules, docs, history).
#[test]
fn ollama_serves_a_context_long_enough_for_the_harness() {
    let c = compose();
    let ollama = service(&c, "ollama");
    let length = text(req(ollama, "environment.OLLAMA_CONTEXT_LENGTH")).and_then(|v| v.parse::<u64>().ok());
    assert!(length.is_some_and(|n| n >= 8192), "OLLAMA_CONTEXT_LENGTH must be at least 8192, got {length:?}");
}

/// A model Ollama unloads after its default 5 idle minutes makes the next question wait for the
/// load and read its whole prompt again (the system prompt is a cached prefix only while the
/// model stays loaded); its OpenAI-compatible endpoint takes no keep_alive, so the server's
/// own setting keeps it.
#[test]
fn ollama_keeps_the_model_loaded_between_questions() {
    let c = compose();
    let ollama = service(&c, "ollama");
    let keep = text(req(ollama, "environment.OLLAMA_KEEP_ALIVE")).unwrap_or_default();
    assert!(keep.contains("24h") || keep.contains("-1"), "OLLAMA_KEEP_ALIVE keeps the model loaded, got {keep:?}");
}

/// `docker compose run --rm agent eval` needs the pack in the image, where its cases find the
/// workspace relative to the pack's parent (`/evals` → `/workspace`). Both images' files come
/// from one assembly, docker/rootfs.sh, fed the pack and the workspace.
#[test]
fn the_image_holds_the_eval_pack_beside_the_workspace() {
    let copies: Vec<String> = context_copies();
    for wanted in ["evals ./evals/", "workspace ./workspace/", "docker/rootfs.sh ./docker/"] {
        assert!(copies.iter().any(|c| c == wanted), "Dockerfile must COPY {wanted} (beside src/): {copies:?}");
    }
    let runs = dockerfile().into_iter().filter(|i| i.keyword == "RUN").map(|i| i.args).collect::<Vec<_>>();
    assert!(runs.iter().any(|r| r.contains("docker/rootfs.sh ")), "the Dockerfile must run docker/rootfs.sh");
    assert!(read("docker/prebuilt.sh").contains("docker/rootfs.sh \"$OUT/docs-agent\""), "prebuilt.sh too");
    let rootfs = read("docker/rootfs.sh");
    assert!(rootfs.contains("cp -R \"$HERE/evals\" \"$R/evals\""), "docker/rootfs.sh must pack evals/ as /evals");
    assert!(rootfs.contains("cp -R \"$HERE/workspace\" \"$R/workspace\""), "and workspace/ as /workspace");
    assert!(!read(".dockerignore").lines().any(|l| l.trim() == "evals" || l.trim() == "evals/"));
}

/// The image trusts Debian's CA bundle only, never the build machine's own additions (a
/// company proxy's CA in /usr/local/share/ca-certificates, merged into /etc/ssl/certs).
#[test]
fn the_image_trusts_only_debians_ca_bundle() {
    let rootfs = read("docker/rootfs.sh");
    let commands: Vec<&str> = rootfs.lines().filter(|l| !l.trim_start().starts_with('#')).collect();
    assert!(commands.iter().any(|l| l.contains("/usr/share/ca-certificates/mozilla/")), "{rootfs}");
    assert!(!commands.iter().any(|l| l.contains("/etc/ssl/certs/ca-certificates.crt ")), "{rootfs}");
}

/// The assembly refuses a binary that needs a dynamic loader (the image has none), naming it:
/// here, this test build's own binary, which is not static.
#[test]
fn the_image_assembly_refuses_a_dynamic_binary() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("temp dir");
    let tar = out.path().join("rootfs.tar");
    let bin = env!("CARGO_BIN_EXE_docs-agent");
    let run = std::process::Command::new(root.join("docker/rootfs.sh")).arg(bin).arg(&tar).output().expect("sh");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(bin) && stderr.contains("dynamically linked"), "{stderr}");
    assert!(!tar.exists(), "no archive is written");
}

/// The arguments of every `COPY` in the Dockerfile (from the build context, not `--from`).
fn context_copies() -> Vec<String> {
    dockerfile()
        .into_iter()
        .filter(|i| i.keyword == "COPY" && !i.args.starts_with("--from"))
        .map(|i| i.args.clone())
        .collect()
}

/// The image built offline (`docker/prebuilt.Dockerfile`, from `docker/prebuilt.sh`) is the same
/// runtime as the Dockerfile's last stage: same base, labels, user, folder, environment and
/// entry point; only how its files arrive differs. Compose builds either, by
/// `DOCS_AGENT_DOCKERFILE`.
#[test]
fn the_offline_image_is_the_same_runtime_as_the_dockerfile() {
    let keep = |all: &[Instruction]| -> Vec<(String, String)> {
        final_stage(all)
            .iter()
            .filter(|i| !matches!(i.keyword.as_str(), "COPY" | "ADD"))
            .map(|i| (i.keyword.clone(), i.args.clone()))
            .collect()
    };
    let main = dockerfile();
    let offline = instructions("docker/prebuilt.Dockerfile");
    assert_eq!(keep(&offline), keep(&main), "docker/prebuilt.Dockerfile's runtime differs from the Dockerfile's");
    let added: Vec<&Instruction> =
        final_stage(&offline).iter().filter(|i| i.keyword == "ADD" || i.keyword == "COPY").collect();
    assert_eq!(added.len(), 1, "one archive: {added:?}");
    assert_eq!(added[0].args, "dist/rootfs.tar /");
    let c = compose();
    for name in ["agent", "api", "init"] {
        let file = at(service(&c, name), "build.dockerfile").and_then(text).unwrap_or_default();
        assert_eq!(file, "${DOCS_AGENT_DOCKERFILE:-Dockerfile}", "{name}: the Dockerfile, or the offline one");
    }
}

/// The api holds a socket per connection and per follower of a session: its descriptor limit
/// leaves room for all of them (serve.max_connections 512 + 4 x serve.max_concurrent 256, and
/// the log's and index's files), above the common default of 1024.
#[test]
fn api_has_room_for_every_connection_and_follower() {
    let c = compose();
    for name in ["api", "api-a", "api-b"] {
        let api = service(&c, name);
        for limit in ["ulimits.nofile.soft", "ulimits.nofile.hard"] {
            let value = req(api, limit).as_u64().unwrap_or(0);
            assert!(value >= 4096, "{name} {limit} is {value}; it needs room for 512 connections and 256 followers");
        }
    }
}

/// docker/collections/compose.yaml, the two-collection example layered on compose.yaml, changes
/// only the api's config, state folder and repositories: every mount it adds is read-only, and
/// it adds no port, capability, network or privilege.
#[test]
fn the_collections_example_only_adds_read_only_mounts_to_the_api() {
    let file = read("docker/collections/compose.yaml");
    let c: Value = yaml_serde::from_str(&file).expect("docker/collections/compose.yaml must be valid YAML");
    let all = services(&c);
    assert_eq!(all.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>(), vec!["api"], "it changes the api only");
    let api = &all[0].1;
    let keys: Vec<String> = api.as_mapping().expect("a mapping").keys().filter_map(text).collect();
    assert_eq!(keys, vec!["volumes", "environment"], "only mounts and settings");
    let added = mounts(api);
    assert_eq!(added.len(), 2, "{added:?}");
    assert!(added.iter().all(|m| m.read_only), "every mount it adds is read-only: {added:?}");
    let config = read("docker/collections/config/docs-agent.toml");
    assert!(config.matches("[[collections]]").count() == 2 && config.matches("git = \"/srv/git/").count() == 2);
}
