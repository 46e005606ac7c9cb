//! The operator's reading rules hold on every route and tool that returns doc text (issue 34,
//! findings 1-3), through the real binary: the HTTP routes (`/v1/search`, `/v1/sections`, which
//! the page's source panel reads), MCP over stdio and under serve (`search_docs`,
//! `read_section`, `resources/list`, `resources/read`), the model's own tools, and the command
//! line's `search`. A denied folder is invisible, not only unreadable, under its own name and
//! through links into it; the post-tool patterns redact everywhere; an argument rule holds for
//! every spelling the index finds the same. Each holds whatever the docs' source: a folder on
//! disk, or a git source's tree with the same layout (issue 51, finding 3: a link there was a
//! copy judged by its own path).

mod common;
mod fake;

use common::mcp::{McpChild, post_mcp, text};
use serde_json::{Value, json};

/// A word only the denied document holds.
const DENIED_WORD: &str = "Quokkaplan";
/// Values the post-tool pattern redacts: one in the denied document, one in a visible one.
const TICKETS: [&str; 2] = ["ACME-112233", "ACME-445566"];
const ASKER: &str = "rules-asker-0123456789";

/// Where the docs come from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Source {
    /// The workspace's `docs/` folder.
    Disk,
    /// A git source (a repository on this machine) whose `docs/` has the same files and links.
    Git,
}

/// The sample workspace with a denied folder, two links into it, a visible page with a
/// ticket number, and the rules; with [`Source::Git`], its docs moved into a repository that
/// the workspace names as its source (the other folder returned, `None` when the `git`
/// program is missing and the test is skipped).
fn workspace_with_rules(source: Source) -> Option<(tempfile::TempDir, Option<tempfile::TempDir>)> {
    let ws = common::sample_workspace();
    let docs = ws.path().join("docs");
    std::fs::create_dir_all(docs.join("internal")).expect("mkdir");
    std::fs::write(
        docs.join("internal/plan.md"),
        format!("# Launch plan\n\n## Dates\n\n{DENIED_WORD} launches on 3 March. Ticket {}.\n", TICKETS[0]),
    )
    .expect("write");
    std::fs::write(docs.join("shipping.md"), format!("# Shipping\n\nOrder {} shipped on time.\n", TICKETS[1]))
        .expect("write");
    std::os::unix::fs::symlink("internal", docs.join("pub")).expect("dir link");
    std::os::unix::fs::symlink("internal/plan.md", docs.join("plan-alias.md")).expect("file link");
    let (repo, sources) = match source {
        Source::Disk => (None, String::new()),
        Source::Git => {
            let present = std::process::Command::new("git").arg("--version").output().is_ok();
            if !common::available("git", present, "apt-get install git") {
                return None;
            }
            let repo = tempfile::tempdir().expect("a folder");
            let git = |dir: &std::path::Path, args: &[&str]| {
                common::git_http::git(dir, args).unwrap_or_else(|e| panic!("{e}"));
            };
            let work = repo.path().join("work");
            std::fs::create_dir(&work).expect("work");
            git(&work, &["init", "-q"]);
            std::fs::rename(&docs, work.join("docs")).expect("the docs move into the repository");
            git(&work, &["add", "-A"]);
            git(&work, &["commit", "-q", "-m", "docs"]);
            git(repo.path(), &["clone", "-q", "--bare", "work", "docs.git"]);
            let bare = repo.path().join("docs.git");
            let config = format!("[[sources]]\nname = \"docs\"\ngit = \"{}\"\npath = \"docs\"\n", bare.display());
            (Some(repo), config)
        }
    };
    let rules = r#"
[[hooks.pre_tool]]
name = "internal-only"
tool = "read_file"
path = "docs/internal/**"
decision = "deny"
reason = "internal documents stay internal"

[[hooks.pre_tool]]
name = "no-bluebird"
arguments = "(?i)bluebird"
decision = "deny"
reason = "Project Bluebird is confidential"

[[hooks.pre_tool]]
name = "no-restructuring"
arguments = "(?i)restructuring"
decision = "deny"
reason = "restructuring is not discussed"

[hooks.post_tool]
redact = ["ACME-[0-9]{6}"]
"#;
    common::serve_config(ws.path(), &[("ana", ASKER, &["ask"])], &format!("{rules}\n{sources}"));
    Some((ws, repo))
}

/// The paths a denied text could be read under.
const DENIED_PATHS: [&str; 3] = ["docs/internal/plan.md", "docs/pub/plan.md", "docs/plan-alias.md"];

async fn get(url: &str) -> (u16, Value) {
    let reply = reqwest::Client::new().get(url).bearer_auth(ASKER).send().await.expect("the server answers");
    (reply.status().as_u16(), reply.json().await.unwrap_or_default())
}

#[tokio::test]
async fn every_route_and_tool_obeys_the_reading_rules_on_disk() {
    obeys_the_reading_rules(Source::Disk).await;
}

#[tokio::test]
async fn every_route_and_tool_obeys_the_reading_rules_in_a_git_source() {
    obeys_the_reading_rules(Source::Git).await;
}

async fn obeys_the_reading_rules(source: Source) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some((ws, _repo)) = workspace_with_rules(source) else { return };
    let state = ws.path().join(".state");
    let state = state.to_str().expect("utf-8").to_string();
    // The model tries each way in: a search for the word, reads under the three names.
    let mut replies = vec![fake::Canned::tool("search_docs", json!({"query": format!("{DENIED_WORD} launch")}))];
    replies.extend(DENIED_PATHS.iter().map(|p| fake::Canned::tool("read_file", json!({"path": p}))));
    replies.push(fake::Canned::tool("read_file", json!({"path": "docs/shipping.md"})));
    replies.push(fake::Canned::text("I found nothing about it."));
    let fake = fake::FakeServer::start(replies);
    let base = fake.base_url();
    let env = [
        ("LLM_BASE_URL", base.as_str()),
        ("LLM_MODEL", "m"),
        ("DOCS_AGENT_RETRIEVE_FIRST", "false"),
        ("DOCS_AGENT_VERIFY", "false"),
        ("DOCS_AGENT_STATE_DIR", state.as_str()),
    ];
    // (where, what it returned, whether it must show the visible page's redacted ticket)
    let mut seen: Vec<(String, String)> = Vec::new();

    let (mut child, url, log) = common::spawn_serve_logged(ws.path(), &env);
    let search = |q: &str| format!("{url}/v1/search?q={}", common::percent(q));
    for q in [format!("{DENIED_WORD} launch"), "launch plan dates march".into(), "order shipped".into()] {
        let (status, body) = get(&search(&q)).await;
        seen.push((format!("GET /v1/search?q={q} ({status})"), body.to_string()));
    }
    let (shipped_status, shipped) = get(&search("order shipped")).await;
    for path in DENIED_PATHS.iter().chain(&["docs/shipping.md"]) {
        let (status, body) = get(&format!("{url}/v1/sections?path={path}")).await;
        seen.push((format!("GET /v1/sections?path={path} ({status})"), body.to_string()));
        if path.contains("plan") {
            // Refused by its own name (403, the rule named), not found through a link (404).
            let want = if path.contains("internal") { 403 } else { 404 };
            assert_eq!(status, want, "{path}: {body}");
        }
    }
    let (section_status, section) = get(&format!("{url}/v1/sections?path=docs/shipping.md")).await;
    let mut refused = Vec::new();
    // Every spelling and form the index reads as the same word (issue 51, finding 10: the
    // forms a rule's word stems alike to).
    let forms = [
        ("bluebird", "no-bluebird"),
        ("bluebïrd", "no-bluebird"),
        ("BLUEBİRD", "no-bluebird"),
        ("restructure", "no-restructuring"),
        ("restructured", "no-restructuring"),
        ("Restructures", "no-restructuring"),
    ];
    for (q, rule) in forms {
        let (status, body) = get(&search(q)).await;
        refused.push((q, rule, status, body.clone()));
        seen.push((format!("GET /v1/search?q={q} ({status})"), body.to_string()));
    }
    // MCP under serve.
    for (id, (name, arguments)) in [
        ("search_docs", json!({"query": format!("{DENIED_WORD} launch")})),
        ("read_section", json!({"path": "docs/plan-alias.md"})),
        ("read_section", json!({"path": "docs/pub/plan.md"})),
        ("search_docs", json!({"query": "order shipped"})),
    ]
    .into_iter()
    .enumerate()
    {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        let (_, body) = post_mcp(&url, Some(ASKER), call).await;
        seen.push((format!("/mcp {name} {arguments}"), body.to_string()));
    }
    // The model's own tools, in a question over HTTP.
    let asked = reqwest::Client::new()
        .post(format!("{url}/v1/ask"))
        .bearer_auth(ASKER)
        .json(&json!({"question": "When does the launch happen?"}))
        .send()
        .await
        .expect("ask");
    let asked: Value = asked.json().await.unwrap_or_default();
    seen.push(("/v1/ask".into(), asked.to_string()));
    let _ = child.kill();
    let _ = child.wait();
    seen.push(("serve's log".into(), log.text()));
    let told: Vec<String> = fake
        .requests()
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect();
    assert!(told.len() >= 5, "the model's five calls ran: {told:?}");
    seen.push(("the model's tool results".into(), told.join("\n")));

    // MCP over stdio.
    let mut mcp = McpChild::start(ws.path(), &env);
    let mut listed = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let page = mcp.request("resources/list", cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c})));
        listed.extend(page["result"]["resources"].as_array().cloned().unwrap_or_default());
        cursor = page["result"].get("nextCursor").cloned();
        if cursor.is_none() {
            break;
        }
    }
    seen.push(("resources/list".into(), Value::Array(listed.clone()).to_string()));
    for path in DENIED_PATHS {
        let read = mcp.request("resources/read", json!({"uri": format!("docs-agent://{path}#dates")}));
        seen.push((format!("resources/read {path}"), read.to_string()));
        let section = mcp.call("read_section", json!({"path": path}));
        seen.push((format!("read_section {path}"), section.to_string()));
    }
    let searched = mcp.call("search_docs", json!({"query": format!("{DENIED_WORD} launch")}));
    seen.push(("search_docs over stdio".into(), searched.to_string()));
    let accented = mcp.call("search_docs", json!({"query": "bluebïrd plans"}));
    drop(mcp);
    // The command line.
    for args in [vec!["search", "launch plan dates march"], vec!["search", "--evidence", "when does the launch happen"]]
    {
        let out = common::run(ws.path(), &env, &args);
        seen.push((format!("docs-agent {}", args.join(" ")), format!("{}\n{}", out.stdout, out.stderr)));
    }

    let mut leaks = Vec::new();
    for (place, shown) in &seen {
        for secret in [DENIED_WORD, TICKETS[0], TICKETS[1]] {
            if shown.contains(secret) {
                leaks.push(format!("{place}: {secret} shown: {shown}"));
            }
        }
    }
    assert!(leaks.is_empty(), "{}", leaks.join("\n\n"));
    // What is visible still works, with the operator's pattern applied.
    assert_eq!(shipped_status, 200, "{shipped}");
    assert!(
        shipped.to_string().contains("docs/shipping.md") && shipped.to_string().contains("[REDACTED:hook]"),
        "{shipped}"
    );
    assert_eq!(section_status, 200, "{section}");
    assert!(section["text"].as_str().is_some_and(|t| t.contains("Order [REDACTED:hook] shipped")), "{section}");
    assert!(listed.iter().any(|r| r["uri"].as_str().is_some_and(|u| u.contains("shipping.md"))), "{listed:?}");
    assert!(told.iter().any(|t| t.contains("Order [REDACTED:hook] shipped")), "{told:?}");
    for (q, rule, status, body) in refused {
        assert_eq!(status, 403, "{q}: {body}");
        assert!(body.to_string().contains(rule), "{q}: the rule is named: {body}");
    }
    assert!(common::mcp::is_error(&accented) && text(&accented).contains("no-bluebird"), "{accented}");
}
