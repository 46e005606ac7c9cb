//! What the workspace puts in the system prompt stays within limits that speak: an AGENTS.md
//! too large to use is said on stderr by every command (or stops them, if configured), and the
//! skills catalog is capped, with `check` saying how many skills are left out. Through the real
//! binary, against a fake model server that records the prompts it is sent.

mod common;
mod fake;

use common::{run, sample_workspace};
use fake::{Canned, FakeServer};

/// The system prompt of the first request a fake server received.
fn system_prompt(server: &FakeServer) -> String {
    let requests = server.requests();
    let first = requests.first().expect("the model was asked");
    first["messages"][0]["content"].as_str().unwrap_or("").to_string()
}

#[test]
fn an_agents_md_over_the_limit_is_said_by_every_command_or_stops_them() {
    let ws = sample_workspace();
    let rules = format!("# Rules\nALWAYS-SAY-PINEAPPLE\n{}", "Be kind to customers.\n".repeat(4_000));
    std::fs::write(ws.path().join("AGENTS.md"), &rules).expect("write");
    let server = FakeServer::start(vec![Canned::text("14 days [docs/refunds.md#window].")]);
    let base = server.base_url();
    let env = [("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model")];

    let out = run(ws.path(), &env, &["how long is the refund window"]);
    assert_eq!(out.code, 0, "answered without the rules: {}", out.stderr);
    assert!(out.stderr.contains("AGENTS.md") && out.stderr.contains("prompt.agents_md_max_bytes"), "{}", out.stderr);
    assert!(out.stderr.contains("65536"), "the limit is named: {}", out.stderr);
    assert!(!system_prompt(&server).contains("ALWAYS-SAY-PINEAPPLE"));
    for args in [&["search", "refund window"][..], &["check"][..]] {
        let out = run(ws.path(), &env, args);
        assert!(out.stderr.contains("prompt.agents_md_max_bytes"), "{args:?} says it too: {}", out.stderr);
    }
    let out = run(ws.path(), &env, &["check"]);
    assert!(out.stdout.contains("AGENTS.md:") && out.stdout.contains("over the 65536-byte limit"), "{}", out.stdout);
    assert!(!out.stdout.contains("add the project's rules as AGENTS.md"), "no misleading hint: {}", out.stdout);

    // Configured as an error, it stops the command with the reason.
    let strict = [env[0], env[1], ("DOCS_AGENT_AGENTS_MD_UNUSABLE", "error")];
    let out = run(ws.path(), &strict, &["how long is the refund window"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(out.stderr.contains("prompt.agents_md_unusable = \"error\""), "{}", out.stderr);
    let bad = [env[0], env[1], ("DOCS_AGENT_AGENTS_MD_UNUSABLE", "ignore")];
    let out = run(ws.path(), &bad, &["check"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("`warn` or `error`"), "{}", out.stderr);

    // A raised limit takes it in whole; 22,000 tokens of rules then do not fit the context
    // budget, and they are never cut: the model is not asked, and the retrieval-only answer
    // says why.
    std::fs::write(ws.path().join("docs-agent.toml"), "[prompt]\nagents_md_max_bytes = 200000\n").expect("config");
    let server = FakeServer::start(vec![Canned::text("14 days [docs/refunds.md#window].")]);
    let base = server.base_url();
    let out = run(ws.path(), &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model")], &["refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("Retrieval-only answer") && out.stdout.contains("session.context_budget_tokens"));
    assert!(out.stdout.contains("docs/refunds.md#window"), "{}", out.stdout);
    assert!(server.requests().is_empty(), "no request over the budget");
    let raised = "[prompt]\nagents_md_max_bytes = 200000\n[session]\ncontext_budget_tokens = 40000\n";
    std::fs::write(ws.path().join("docs-agent.toml"), raised).expect("config");
    let out = run(ws.path(), &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model")], &["refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("agents_md_max_bytes"), "{}", out.stderr);
    assert!(system_prompt(&server).contains("ALWAYS-SAY-PINEAPPLE"));
}

#[test]
fn the_skills_catalog_is_capped_and_check_says_how_many_are_left_out() {
    let ws = sample_workspace();
    for n in 0..200 {
        let dir = ws.path().join(format!("skills/extra-skill-{n:03}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let skill =
            format!("---\nname: extra-skill-{n:03}\ndescription: Extra skill number {n} for a test.\n---\nDo {n}.\n");
        std::fs::write(dir.join("SKILL.md"), skill).expect("write");
    }
    let out = run(ws.path(), &[], &["check"]);
    assert!(out.stdout.contains("valid skills are left out of the prompt"), "{}", out.stdout);
    assert!(out.stdout.contains("prompt.skills_catalog_tokens"), "{}", out.stdout);

    let server = FakeServer::start(vec![Canned::text("14 days [docs/refunds.md#window].")]);
    let base = server.base_url();
    let out = run(ws.path(), &[("LLM_BASE_URL", base.as_str()), ("LLM_MODEL", "test-model")], &["refund window"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("left out of the prompt"), "said on stderr: {}", out.stderr);
    let prompt = system_prompt(&server);
    let listed = prompt.matches("<skill>").count();
    assert!(listed > 0 && listed < 200, "some skills, not all: {listed}");
    assert!(prompt.len() <= 2_000 * 4 + 2_000, "the catalog keeps to its cap: {} bytes", prompt.len());
    assert!(prompt.contains("more skills are not listed"), "the prompt says so too");

    // A cap that holds them all: no warning, every skill listed.
    std::fs::write(ws.path().join("docs-agent.toml"), "[prompt]\nskills_catalog_tokens = 100000\n").expect("config");
    let out = run(ws.path(), &[], &["check"]);
    assert!(!out.stdout.contains("left out of the prompt"), "{}", out.stdout);
    assert!(out.stdout.contains("in the prompt)"), "{}", out.stdout);
}
