//! Collections (`[[collections]]`): several sets of docs in one `serve`, each read only by the
//! principals given it. The isolation suite, driven through `serve::app(state)`: a caller never
//! searches, reads, asks, follows a session, lists a suggestion or reaches an MCP tool of a
//! collection it may not read, whatever route and parameter it uses; the one it may read
//! answers from its own docs alone. A compromised model that asks for another collection's
//! file finds nothing.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use docs_agent::config::Sources;
use docs_agent::serve::{AppState, app, auth::hash};
use docs_agent::service::Service;
use docs_agent::service::collections::Collections;
use docs_agent::session::store::Store;
use serde_json::{Value, json};
use tower::ServiceExt;

/// Reads billing only.
const ANA: &str = "ana-billing-token-0123456789";
/// Reads hr only.
const HAL: &str = "hal-hr-token-0123456789";
/// An admin reading both.
const ROOT: &str = "root-all-token-0123456789";
/// Decides writes in hr only.
const HR_APPROVER: &str = "hr-approver-token-0123456789";
/// Decides writes in billing.
const BILLING_APPROVER: &str = "billing-approver-token-0123456789";
/// An admin of hr only.
const HR_ADMIN: &str = "hr-admin-token-0123456789";
/// A word only the hr collection's docs hold.
const HR_WORD: &str = "zephyrleave";

struct Server {
    state: Arc<AppState>,
    _dir: tempfile::TempDir,
}

/// A serve of two collections: `billing` (the sample workspace) and `hr` (a workspace of one
/// document holding [`HR_WORD`]), side by side in one folder, answered by `model`.
fn server(model: &str) -> Server {
    server_with(&[("llm.model", model.to_string())])
}

fn server_with(flags: &[(&'static str, String)]) -> Server {
    let dir = tempfile::tempdir().expect("dir");
    let billing = common::sample_workspace();
    let billing_path = dir.path().join("billing");
    std::fs::rename(billing.path(), &billing_path).expect("move the sample");
    let hr = dir.path().join("hr");
    std::fs::create_dir_all(hr.join("docs")).expect("hr docs");
    std::fs::write(
        hr.join("docs/leave.md"),
        format!(
            "# Leave\n\n## Holiday allowance\n\nEvery employee gets 31 days of {HR_WORD} holiday a year; ask HR \
             to carry days over.\n"
        ),
    )
    .expect("hr doc");
    std::fs::write(hr.join("AGENTS.md"), "Answer HR questions from the HR docs.\n").expect("hr rules");
    let config_file = dir.path().join("docs-agent.toml");
    let toml = format!(
        r#"
state_dir = "{state}"

[[serve.tokens]]
principal = "ana"
sha256 = "{ana}"
roles = ["ask"]
collections = ["billing"]

[[serve.tokens]]
principal = "hal"
sha256 = "{hal}"
roles = ["ask"]
collections = ["hr"]

[[serve.tokens]]
principal = "root"
sha256 = "{root}"
roles = ["admin"]
collections = ["*"]

[[serve.tokens]]
principal = "cy"
sha256 = "{cy}"
roles = ["approve"]
collections = ["hr"]

[[serve.tokens]]
principal = "di"
sha256 = "{di}"
roles = ["approve"]
collections = ["billing"]

[[serve.tokens]]
principal = "hra"
sha256 = "{hra}"
roles = ["admin"]
collections = ["hr"]

[[collections]]
name = "billing"
workspace = "{billing}"

[[collections]]
name = "hr"
workspace = "{hr}"
"#,
        state = dir.path().join("state").display(),
        ana = hash(ANA),
        hal = hash(HAL),
        root = hash(ROOT),
        cy = hash(HR_APPROVER),
        di = hash(BILLING_APPROVER),
        hra = hash(HR_ADMIN),
        billing = billing_path.display(),
        hr = hr.display(),
    );
    std::fs::write(&config_file, toml).expect("config");
    let sources = Sources { file: Some(config_file), env: Default::default(), flags: flags.to_vec() };
    let config = docs_agent::service::settings::load(&sources).expect("config");
    let collections = Collections::open(&config, 1, &|_| Ok(())).expect("collections");
    let store = Store::open(&docs_agent::session::store::Location::of(&config.session)).expect("log");
    let state = AppState::on(Service::of(config, collections, store));
    Server { state: Arc::new(state), _dir: dir }
}

async fn call(server: &Server, method: &str, uri: &str, token: &str, body: Option<Value>) -> (StatusCode, Value) {
    let mut request =
        Request::builder().method(method).uri(uri).header(header::AUTHORIZATION, format!("Bearer {token}"));
    // MCP's transport asks for both; elsewhere, a stream would follow a session forever.
    if uri.starts_with("/mcp") {
        request =
            request.header(header::ACCEPT, "application/json, text/event-stream").header(header::HOST, "localhost");
    }
    let request = match body {
        Some(body) => request.header(header::CONTENT_TYPE, "application/json").body(Body::from(body.to_string())),
        None => {
            request = request.header(header::CONTENT_LENGTH, "0");
            request.body(Body::empty())
        }
    }
    .expect("request");
    let response = app(server.state.clone()).oneshot(request).await.expect("response");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 16 << 20).await.expect("body");
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, value)
}

/// True when `body` shows anything of the hr collection's document.
fn shows_hr(body: &Value) -> bool {
    let text = body.to_string().to_lowercase();
    text.contains(HR_WORD) || text.contains("holiday allowance") || text.contains("31 days")
}

async fn until_idle(server: &Server, id: &str, token: &str) -> Value {
    for _ in 0..2_000 {
        let (status, body) = call(server, "GET", &format!("/v1/sessions/{id}"), token, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] == "idle" && body["running"] == false {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("session {id} never became idle");
}

#[tokio::test]
async fn each_caller_reads_only_its_collections_on_every_reading_route() {
    let s = server("extractive");
    let q = format!("{HR_WORD} holiday allowance days");
    // Named: a collection the caller does not read is 404, as one that does not exist, and the
    // refusal names only the caller's own.
    for (method, uri, body) in [
        ("GET", format!("/v1/search?q={HR_WORD}&collection=hr"), None),
        ("GET", "/v1/sections?path=docs/leave.md&anchor=holiday-allowance&collection=hr".to_string(), None),
        ("GET", "/v1/suggestions?collection=hr".to_string(), None),
        ("POST", "/v1/ask?collection=hr".to_string(), Some(json!({"question": q}))),
        ("POST", "/v1/sessions?collection=hr".to_string(), None),
        ("POST", "/mcp?collection=hr".to_string(), Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))),
    ] {
        let (status, refused) = call(&s, method, &uri, ANA, body.clone()).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {refused}");
        assert_eq!(refused["error"]["code"], "no_collection", "{method} {uri}: {refused}");
        let said = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(said.contains("yours: billing") && !said.contains("hr,"), "{said}");
        // One that does not exist is refused in the same words.
        let (status, missing) = call(&s, method, &uri.replace("=hr", "=payroll"), ANA, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{uri}: {missing}");
        assert_eq!(
            missing["error"]["message"],
            refused["error"]["message"].as_str().unwrap_or("").replace("hr", "payroll")
        );
    }
    // A model named after a collection the caller does not read is any other model name: the
    // caller's own collection answers, and nothing says whether that collection exists.
    for model in ["hr", "payroll"] {
        let chat = json!({"model": model, "messages": [{"role": "user", "content": q}]});
        let (status, completion) = call(&s, "POST", "/v1/chat/completions", ANA, Some(chat)).await;
        assert_eq!(status, StatusCode::OK, "{model}: {completion}");
        assert_eq!(completion["model"], "docs-agent", "{completion}");
        assert!(!shows_hr(&completion), "{completion}");
    }
    // A secret sent as a collection's name is not echoed in the refusal (the error's guard).
    let planted = "sk-test-4eC39HqLyjWDarjtT1zdp7dc";
    let (status, refused) = call(&s, "GET", &format!("/v1/search?q=x&collection={planted}"), ANA, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{refused}");
    assert!(!refused.to_string().contains(planted), "{refused}");
    // Unnamed: the caller's first collection, so ana's words never reach hr's docs.
    let (status, hits) = call(&s, "GET", &format!("/v1/search?q={HR_WORD}"), ANA, None).await;
    assert_eq!(status, StatusCode::OK, "{hits}");
    assert!(!shows_hr(&hits), "{hits}");
    let (status, section) =
        call(&s, "GET", "/v1/sections?path=docs/leave.md&anchor=holiday-allowance", ANA, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "billing has no such section: {section}");
    let (status, answer) = call(&s, "POST", "/v1/ask", ANA, Some(json!({"question": q}))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(!shows_hr(&answer), "ana's answer drew on hr: {answer}");
    let chat = json!({"model": "docs-agent", "messages": [{"role": "user", "content": q}]});
    let (status, completion) = call(&s, "POST", "/v1/chat/completions", ANA, Some(chat)).await;
    assert_eq!(status, StatusCode::OK, "{completion}");
    assert!(!shows_hr(&completion), "{completion}");
    let (_, models) = call(&s, "GET", "/v1/models", ANA, None).await;
    let ids: Vec<&str> = models["data"].as_array().expect("data").iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(ids, vec!["docs-agent", "billing"], "{models}");
    let (_, me) = call(&s, "GET", "/v1/me", ANA, None).await;
    assert_eq!(me["collections"], json!([{"name": "billing"}]), "{me}");

    // hal reads hr by default, and only hr.
    let (status, hits) = call(&s, "GET", &format!("/v1/search?q={HR_WORD}"), HAL, None).await;
    assert_eq!(status, StatusCode::OK, "{hits}");
    assert_eq!(hits["hits"][0]["path"], "docs/leave.md", "{hits}");
    let (_, refunds) = call(&s, "GET", "/v1/search?q=refund%20window", HAL, None).await;
    assert_eq!(refunds["hits"], json!([]), "billing's refunds are not hr's: {refunds}");
    let (status, answer) = call(&s, "POST", "/v1/ask", HAL, Some(json!({"question": q}))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer["citations"].to_string().contains("docs/leave.md"), "{answer}");
    let chat = json!({"model": "hr", "messages": [{"role": "user", "content": q}]});
    let (status, completion) = call(&s, "POST", "/v1/chat/completions", HAL, Some(chat)).await;
    assert_eq!(status, StatusCode::OK, "{completion}");
    assert_eq!(completion["model"], "hr");
    assert!(shows_hr(&completion), "{completion}");

    // MCP: the tools read the chosen collection only.
    let search = |query: &str| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "search_docs", "arguments": {"query": query}}})
    };
    let (status, found) = call(&s, "POST", "/mcp", HAL, Some(search(HR_WORD))).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert!(shows_hr(&found), "{found}");
    let (status, found) = call(&s, "POST", "/mcp", ANA, Some(search(HR_WORD))).await;
    assert_eq!(status, StatusCode::OK, "{found}");
    assert!(!shows_hr(&found), "{found}");

    // An admin reads either, by name.
    let (_, hits) = call(&s, "GET", &format!("/v1/search?q={HR_WORD}&collection=hr"), ROOT, None).await;
    assert_eq!(hits["hits"][0]["path"], "docs/leave.md", "{hits}");
    let (_, ready) = call(&s, "GET", "/readyz", ROOT, None).await;
    let names: Vec<&str> = ready["collections"]
        .as_array()
        .expect("an admin sees each")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, vec!["billing", "hr"], "{ready}");
}

#[tokio::test]
async fn a_session_reads_the_collection_it_started_in_and_is_seen_only_by_who_reads_it() {
    let s = server("extractive");
    let (status, created) = call(&s, "POST", "/v1/sessions", HAL, None).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["collection"], "hr");
    let id = created["id"].as_str().expect("id").to_string();
    let message = json!({"text": format!("how many {HR_WORD} days do I get?")});
    let (status, turn) = call(&s, "POST", &format!("/v1/sessions/{id}/messages"), HAL, Some(message)).await;
    assert!(status.is_success(), "{turn}");
    until_idle(&s, &id, HAL).await;
    let (_, events) = call(&s, "GET", &format!("/v1/sessions/{id}/events"), HAL, None).await;
    assert!(shows_hr(&events), "the turn retrieved hr's docs: {events}");
    let answer_seq = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["event"]["type"] == "answer")
        .and_then(|e| e["seq"].as_u64())
        .expect("an answer");
    // Its citation opens in its own collection, whatever collection the query names.
    let cited = format!("/v1/sections?path=docs/leave.md&anchor=holiday-allowance&session={id}&seq={answer_seq}");
    let (status, section) = call(&s, "GET", &cited, HAL, None).await;
    assert_eq!(status, StatusCode::OK, "{section}");
    assert!(shows_hr(&section), "{section}");

    // Nobody else sees it, on any of its routes, even naming its collection.
    for (method, path, body) in [
        ("GET", format!("/v1/sessions/{id}"), None),
        ("GET", format!("/v1/sessions/{id}/events"), None),
        ("POST", format!("/v1/sessions/{id}/messages"), Some(json!({"text": "and sick days?"}))),
        ("GET", format!("/v1/sections?path=docs/leave.md&session={id}&seq={answer_seq}"), None),
    ] {
        let (status, body) = call(&s, method, &path, ANA, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {body}");
        assert!(!shows_hr(&body), "{body}");
    }
    let (_, listed) = call(&s, "GET", "/v1/sessions", ANA, None).await;
    assert!(!listed.to_string().contains(&id), "{listed}");

    // Each collection's topics are its own headings (that questions stay in their collection is
    // report::suggest's unit test).
    let (_, billing) = call(&s, "GET", "/v1/suggestions?limit=12", ANA, None).await;
    assert!(!shows_hr(&billing), "{billing}");
    assert!(billing.to_string().to_lowercase().contains("refund"), "billing's topics: {billing}");
    let (_, hr) = call(&s, "GET", "/v1/suggestions?limit=12&collection=hr", ROOT, None).await;
    assert!(shows_hr(&hr), "{hr}");
    assert!(!hr.to_string().to_lowercase().contains("refund"), "hr's topics are hr's: {hr}");
}

#[tokio::test]
async fn a_compromised_model_finds_nothing_of_another_collection() {
    // The traversal adversary reads whatever path the question names, writes it to a note and
    // answers with it. Asked from billing, hr's document is neither in billing's workspace nor
    // reachable beside it (the two workspaces share a folder).
    let s = server_with(&[("llm.model", "adversary-traversal".to_string()), ("retrieval.first", "false".to_string())]);
    for path in ["docs/leave.md", "../hr/docs/leave.md", "../../hr/docs/leave.md"] {
        let (status, answer) = call(&s, "POST", "/v1/ask", ANA, Some(json!({"question": path}))).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert!(!shows_hr(&answer), "{path}: {answer}");
        let (status, created) = call(&s, "POST", "/v1/sessions", ANA, None).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        let id = created["id"].as_str().expect("id").to_string();
        let (status, turn) =
            call(&s, "POST", &format!("/v1/sessions/{id}/messages"), ANA, Some(json!({"text": path}))).await;
        assert!(status.is_success(), "{turn}");
        let (_, events) = call(&s, "GET", &format!("/v1/sessions/{id}/events"), ANA, None).await;
        let read = events["events"].as_array().expect("events").iter().any(|e| e["event"]["type"] == "tool_result");
        assert!(read, "the adversary's read_file ran and was answered: {events}");
        assert!(!shows_hr(&events), "{path}: {events}");
    }
}

#[tokio::test]
async fn approvers_and_admins_see_only_their_collections_writes_and_gaps() {
    let s = server("scripted");
    // A write asked for in billing (the sample's onboarding doc orders one), and a question
    // billing's docs cannot answer (a gap).
    let (_, created) = call(&s, "POST", "/v1/sessions", ANA, None).await;
    let id = created["id"].as_str().expect("id").to_string();
    let message = json!({"text": "what is in the onboarding integrations"});
    let (status, turn) = call(&s, "POST", &format!("/v1/sessions/{id}/messages"), ANA, Some(message)).await;
    assert!(status.is_success(), "{turn}");
    assert_eq!(turn["stop"], "awaiting_approval", "{turn}");
    // A name billing's docs never use (written as one: an everyday word they never use would
    // go on to the model).
    let gap = json!({"text": "how do I export to QuasarLedger"});
    let (_, created) = call(&s, "POST", "/v1/sessions", ANA, None).await;
    let other = created["id"].as_str().expect("id").to_string();
    let (status, _) = call(&s, "POST", &format!("/v1/sessions/{other}/messages"), ANA, Some(gap)).await;
    assert!(status.is_success());
    until_idle(&s, &other, ANA).await;

    let (_, theirs) = call(&s, "GET", "/v1/approvals?state=pending", HR_APPROVER, None).await;
    assert_eq!(theirs["approvals"], json!([]), "hr's approver sees no billing write: {theirs}");
    let (_, billing) = call(&s, "GET", "/v1/approvals?state=pending", BILLING_APPROVER, None).await;
    let pending = billing["approvals"][0]["id"].as_str().expect("billing's approver sees it").to_string();
    let decide = json!({"decision": "deny", "reason": "no"});
    let (status, refused) =
        call(&s, "POST", &format!("/v1/approvals/{pending}"), HR_APPROVER, Some(decide.clone())).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "hr's approver cannot decide it: {refused}");
    let (status, decided) = call(&s, "POST", &format!("/v1/approvals/{pending}"), BILLING_APPROVER, Some(decide)).await;
    assert_eq!(status, StatusCode::OK, "{decided}");

    let (_, hr_gaps) = call(&s, "GET", "/v1/reports/gaps?days=30&limit=50", HR_ADMIN, None).await;
    assert!(!hr_gaps.to_string().contains("QuasarLedger"), "hr's admin sees billing's gaps: {hr_gaps}");
    let (_, all_gaps) = call(&s, "GET", "/v1/reports/gaps?days=30&limit=50", ROOT, None).await;
    assert!(all_gaps.to_string().contains("QuasarLedger"), "an admin of both sees it: {all_gaps}");

    // An admin closes anyone's session, but only in the collections they read; the metrics and
    // the readiness they see are of those collections too.
    let (status, refused) = call(&s, "DELETE", &format!("/v1/sessions/{other}"), HR_ADMIN, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "hr's admin cannot close a billing session: {refused}");
    let (_, metrics) = call(&s, "GET", "/metrics", HR_ADMIN, None).await;
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    assert!(metrics.contains("collection=\"hr\"") && !metrics.contains("collection=\"billing\""), "{metrics}");
    // Who used billing (ana's tokens) is billing's readers' business.
    assert!(!metrics.contains("principal=\"ana\""), "hr's admin learns who reads billing: {metrics}");
    let (_, all_metrics) = call(&s, "GET", "/metrics", ROOT, None).await;
    let all_metrics = all_metrics.as_str().unwrap_or_default().to_string();
    assert!(all_metrics.contains("principal=\"ana\",collection=\"billing\""), "{all_metrics}");
    let (_, ready) = call(&s, "GET", "/readyz", HR_ADMIN, None).await;
    assert_eq!(ready["collections"].as_array().map(Vec::len), Some(1), "{ready}");
    // Readiness counts only what the caller reads: hr's one file for hr's readers, both
    // collections' for an admin of both, and nothing for a caller without a token.
    let (_, hr_ready) = call(&s, "GET", "/readyz", HAL, None).await;
    assert_eq!((hr_ready["files"].as_u64(), hr_ready["sections"].as_u64()), (Some(1), Some(1)), "{hr_ready}");
    let (_, billing_ready) = call(&s, "GET", "/readyz", ANA, None).await;
    let billing_files = billing_ready["files"].as_u64().expect("billing's files");
    let (_, root_ready) = call(&s, "GET", "/readyz", ROOT, None).await;
    assert_eq!(root_ready["files"].as_u64(), Some(billing_files + 1), "{root_ready}");
    let (status, anonymous) = call(&s, "GET", "/readyz", "", None).await;
    assert_eq!(status, StatusCode::OK, "{anonymous}");
    assert_eq!(anonymous["status"], "ready", "{anonymous}");
    for field in ["files", "sections", "index", "collections", "sources"] {
        assert!(anonymous.get(field).is_none(), "an anonymous caller sees {field}: {anonymous}");
    }
    let (status, closed) = call(&s, "DELETE", &format!("/v1/sessions/{other}"), ROOT, None).await;
    assert_eq!(status, StatusCode::OK, "{closed}");
}

/// An admin's /readyz totals are the sum of the collections it is shown, one by one: an admin of
/// hr alone counts hr's files and sections, not billing's.
#[tokio::test]
async fn readyz_totals_are_those_of_the_collections_the_admin_is_shown() {
    let s = server("extractive");
    for (token, shown) in [(HR_ADMIN, vec!["hr"]), (ROOT, vec!["billing", "hr"])] {
        let (status, ready) = call(&s, "GET", "/readyz", token, None).await;
        assert_eq!(status, StatusCode::OK, "{ready}");
        let collections = ready["collections"].as_array().expect("an admin sees its collections");
        let names: Vec<&str> = collections.iter().filter_map(|c| c["name"].as_str()).collect();
        assert_eq!(names, shown, "{ready}");
        for field in ["files", "sections"] {
            let sum: u64 = collections.iter().filter_map(|c| c[field].as_u64()).sum();
            assert_eq!(ready[field].as_u64(), Some(sum), "{field}: {ready}");
        }
    }
}

#[test]
fn collections_whose_folders_nest_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("docs-agent.toml");
    let outer = dir.path().join("kb");
    let toml = format!(
        "[[collections]]\nname = \"billing\"\nworkspace = \"{}\"\n\n[[collections]]\nname = \"hr\"\nworkspace = \"{}\"\n",
        outer.display(),
        outer.join("docs/hr").display()
    );
    std::fs::write(&file, toml).expect("config");
    let sources = Sources { file: Some(file), env: Default::default(), flags: Vec::new() };
    let refused = docs_agent::service::settings::load(&sources).err().map(|e| e.0).unwrap_or_default();
    assert!(refused.contains("billing's workspace") && refused.contains("holds hr's"), "{refused}");
}

#[test]
fn tokens_add_names_the_collections_a_token_reads() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("docs-agent.toml");
    let toml = format!(
        "[[collections]]\nname = \"billing\"\nworkspace = \"{}\"\n\n[[collections]]\nname = \"hr\"\nworkspace = \"{}\"\n",
        dir.path().join("billing").display(),
        dir.path().join("hr").display()
    );
    std::fs::write(&file, toml).expect("config");
    let config = file.to_str().expect("utf-8");
    let without = common::run(dir.path(), &[], &["--config", config, "tokens", "add", "ana", "--role", "ask"]);
    assert_eq!(without.code, 2, "{}", without.stderr);
    assert!(
        without.stderr.contains("--reads COLLECTION") && without.stderr.contains("billing, hr"),
        "{}",
        without.stderr
    );
    let unknown = common::run(dir.path(), &[], &["--config", config, "tokens", "add", "ana", "--reads", "payroll"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    let added = common::run(dir.path(), &[], &["--config", config, "tokens", "add", "ana", "--reads", "hr"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    let written = std::fs::read_to_string(&file).expect("config");
    assert!(written.contains("collections = [\"hr\"]"), "{written}");
    let sources = Sources { file: Some(file), env: Default::default(), flags: Vec::new() };
    assert!(docs_agent::service::settings::load(&sources).is_ok(), "the token it wrote is one serve takes");
}

#[test]
fn a_token_that_names_no_collection_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("docs-agent.toml");
    let toml = format!(
        "[[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\"]\n\n\
         [[collections]]\nname = \"billing\"\nworkspace = \"{}\"\n",
        hash(ANA),
        dir.path().display()
    );
    std::fs::write(&file, toml).expect("config");
    let run = common::run(dir.path(), &[], &["--config", file.to_str().expect("utf-8"), "search", "refund"]);
    assert_eq!(run.code, 2, "a usage error: {}", run.stderr);
    assert!(
        run.stderr.contains("names no collections") && run.stderr.contains("collections = [\"billing\"]"),
        "{}",
        run.stderr
    );
}

/// The compose example's configuration (docker/collections) is one docs-agent takes, once a
/// caller is added as its comment says: two collections, each from its own repository.
#[test]
fn the_compose_examples_configuration_loads() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let example = std::fs::read_to_string(root.join("docker/collections/config/docs-agent.toml")).expect("example");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("docs-agent.toml");
    let caller = format!(
        "\n[[serve.tokens]]\nprincipal = \"helpdesk\"\nsha256 = \"{}\"\nroles = [\"ask\"]\ncollections = [\"billing\"]\n",
        hash(ANA)
    );
    std::fs::write(&file, example + &caller).expect("config");
    let sources = Sources { file: Some(file), env: Default::default(), flags: vec![("state_dir", "/data".into())] };
    let config = docs_agent::service::settings::load(&sources).expect("the example loads");
    assert_eq!(config.collection_names(), vec!["billing", "hr"]);
    for name in ["billing", "hr"] {
        let own = config.for_collection(Some(name)).expect("its own configuration");
        assert_eq!(own.sources.len(), 1, "{name} has its repository");
        assert!(own.sources[0].git.starts_with("/srv/git/"), "{name}: {}", own.sources[0].git);
    }
}

/// Every way of spelling `?collection=` (another case, percent-encoded, twice, a capital in the
/// parameter's name, a NUL or a space around it) on every route that takes it, and every way of
/// naming hr as a chat completion's model: a caller who reads only billing is refused (4xx) or
/// answered from billing, never shown anything of hr (issue 51: the collection check held by
/// one test only).
#[tokio::test]
async fn no_spelling_of_a_collection_parameter_reaches_one_the_caller_may_not_read() {
    let s = server("extractive");
    let q = format!("{HR_WORD} holiday allowance days");
    let spellings = [
        "collection=hr",
        "collection=HR",
        "collection=%68r",
        "collection=%68%72",
        "collection=hr&collection=billing",
        "collection=billing&collection=hr",
        "Collection=hr",
        "COLLECTION=hr",
        "collection=hr%00",
        "collection=%20hr",
        "collection=+hr",
        "collection=hr%20",
        "collection=%09hr%0A",
        "collection[]=hr",
        "collection=hr;collection=hr",
    ];
    let search = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "search_docs", "arguments": {"query": q}}});
    // Every call that showed hr, or answered other than with a refusal or billing's answer.
    let mut wrong = Vec::new();
    for spelling in spellings {
        let routes = [
            ("GET", format!("/v1/search?q={}&{spelling}", common::percent(&q)), None),
            ("GET", format!("/v1/sections?path=docs/leave.md&anchor=holiday-allowance&{spelling}"), None),
            ("GET", format!("/v1/suggestions?limit=12&{spelling}"), None),
            ("POST", format!("/v1/ask?{spelling}"), Some(json!({"question": q}))),
            ("POST", format!("/v1/sessions?{spelling}"), None),
            ("POST", format!("/mcp?{spelling}"), Some(search.clone())),
        ];
        for (method, uri, body) in routes {
            let (status, answered) = call(&s, method, &uri, ANA, body).await;
            let billings = if uri.starts_with("/v1/sessions") {
                answered["collection"] == "billing"
            } else if uri.starts_with("/mcp") {
                answered.get("result").is_some()
            } else {
                true
            };
            let fine = status.is_client_error() || (status.is_success() && billings);
            if shows_hr(&answered) || !fine {
                wrong.push(format!("{method} {uri}: {status} {answered}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{} calls reached hr or were not refused:\n{}", wrong.len(), wrong.join("\n"));
    // The control: the same question, asked by hr's reader, shows what `shows_hr` catches.
    let (_, hr_answer) = call(&s, "POST", "/v1/ask?collection=hr", HAL, Some(json!({"question": q}))).await;
    assert!(shows_hr(&hr_answer), "the control: hr's reader is answered from hr: {hr_answer}");

    // A chat completion names its collection as the model.
    for model in ["hr", "HR", " hr", "hr ", "hr\u{0}", "%68r", "docs-agent/hr", "hr,billing"] {
        let chat = json!({"model": model, "messages": [{"role": "user", "content": q}]});
        let (status, completion) = call(&s, "POST", "/v1/chat/completions", ANA, Some(chat)).await;
        assert!(!shows_hr(&completion), "model {model:?} showed hr: {completion}");
        assert!(status.is_client_error() || status.is_success(), "model {model:?}: {status}: {completion}");
        if status.is_success() {
            assert_eq!(completion["model"], "docs-agent", "model {model:?}: billing's, by the default name");
        }
    }
}
