//! Hybrid search through the binary, against a fake embedding server on 127.0.0.1
//! (`fake::embeddings`: character trigrams, so a misspelled question is near its section while
//! no keyword matches): what it finds that keywords alone do not, which sections it embeds
//! (only new text; everything again for another model), and that a failing server leaves
//! search to the keywords, never to an error.

mod common;
mod fake;

use common::{run, sample_workspace};
use fake::embeddings::FakeEmbeddings;
use fake::{Canned, FakeServer};

/// A question with no word of the docs in it, spelled as a hurried support agent would.
const MISSPELLED: &str = "refnd windw";

fn env(embeddings: &FakeEmbeddings) -> Vec<(&'static str, String)> {
    embeddings.env()
}

fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The sources `search` printed, best first.
fn sources(stdout: &str) -> Vec<String> {
    stdout.lines().filter_map(|l| l.split_whitespace().next()).map(str::to_string).collect()
}

#[test]
fn vectors_find_what_no_keyword_matches_and_only_new_text_is_embedded() {
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let env = env(&embeddings);

    // Keywords alone: nothing.
    let keywords = run(ws.path(), &[], &["search", MISSPELLED]);
    assert_eq!(keywords.code, 1, "no keyword matches: {}", keywords.stdout);

    // Hybrid: the refund window first. The first run embeds every section, then the question.
    let first = run(ws.path(), &borrowed(&env), &["search", MISSPELLED]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(sources(&first.stdout).first().map(String::as_str), Some("docs/refunds.md#window"), "{}", first.stdout);
    let texts = embeddings.texts();
    assert!(texts.len() > 20, "every section embedded: {}", texts.len());
    assert!(
        texts.iter().any(|t| t.starts_with("Refunds > Window\n\nRefunds are possible within 14 days")),
        "{texts:?}"
    );
    assert_eq!(texts.last().map(String::as_str), Some(MISSPELLED), "the question last");
    assert!(ws.path().join(".docs-agent/index.vectors.db").is_file(), "vectors are kept beside the index");

    // Again: only the question; the sections' vectors come from the file.
    embeddings.clear();
    let again = run(ws.path(), &borrowed(&env), &["search", MISSPELLED]);
    assert_eq!(again.stdout, first.stdout, "the same ranking");
    assert_eq!(embeddings.texts(), [MISSPELLED], "nothing embedded again");

    // One section changed: it alone is embedded.
    let refunds = ws.path().join("docs/refunds.md");
    let text = std::fs::read_to_string(&refunds).expect("read").replace("within 14 days", "within 30 days");
    std::fs::write(&refunds, text).expect("write");
    embeddings.clear();
    let changed = run(ws.path(), &borrowed(&env), &["search", MISSPELLED]);
    assert_eq!(changed.code, 0, "{}", changed.stderr);
    let texts = embeddings.texts();
    assert_eq!(texts.len(), 2, "the changed section and the question: {texts:?}");
    assert!(texts[0].contains("within 30 days"), "{texts:?}");

    // Another model: everything again.
    embeddings.clear();
    let mut other = env.clone();
    other[0].1 = "another-embed".into();
    let switched = run(ws.path(), &borrowed(&other), &["search", MISSPELLED]);
    assert_eq!(switched.code, 0, "{}", switched.stderr);
    assert!(embeddings.texts().len() > 20, "a model change embeds every section");
    assert_eq!(embeddings.models().last().map(String::as_str), Some("another-embed"));
}

#[test]
fn a_failing_embedding_server_leaves_search_to_the_keywords() {
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let env = env(&embeddings);
    let keywords = run(ws.path(), &[], &["search", "refund window"]);
    assert_eq!(keywords.code, 0, "{}", keywords.stderr);

    embeddings.fail(true);
    // The server's error echoes the key it was sent: it is never shown.
    let key = "sk-embed-0123456789abcdefghijklmnopqrstuv";
    let mut keyed = env.clone();
    keyed.push(("DOCS_AGENT_EMBEDDINGS_API_KEY", key.into()));
    let failing = run(ws.path(), &borrowed(&keyed), &["search", "refund window"]);
    assert_eq!(failing.code, 0, "keywords still answer: {}", failing.stderr);
    assert!(failing.stderr.contains("Incorrect API key"), "the server's message: {}", failing.stderr);
    assert!(!failing.stderr.contains(key) && !failing.stdout.contains(key), "{}", failing.stderr);
    assert_eq!(sources(&failing.stdout), sources(&keywords.stdout), "exactly the keyword ranking");
    assert!(failing.stderr.contains("503") && failing.stderr.contains("keywords only"), "said why: {}", failing.stderr);

    // Back up: the sections missed are embedded now, and the misspelled question is found.
    embeddings.fail(false);
    let back = run(ws.path(), &borrowed(&env), &["search", MISSPELLED]);
    assert_eq!(back.code, 0, "{}", back.stderr);
    assert_eq!(sources(&back.stdout).first().map(String::as_str), Some("docs/refunds.md#window"), "{}", back.stdout);

    // Nothing listening: the same, and the message names the URL and what to do.
    let nowhere =
        [("DOCS_AGENT_EMBEDDINGS_MODEL", "fake-embed"), ("DOCS_AGENT_EMBEDDINGS_URL", "http://127.0.0.1:9/v1")];
    let down = run(ws.path(), &nowhere, &["search", "refund window"]);
    assert_eq!(down.code, 0, "{}", down.stderr);
    assert!(down.stderr.contains("127.0.0.1:9/v1/embeddings"), "{}", down.stderr);
    assert!(down.stderr.contains("retrieval.embeddings"), "says what to set: {}", down.stderr);
}

#[test]
fn a_server_that_refuses_long_inputs_gets_them_shorter() {
    let embeddings = FakeEmbeddings::start();
    embeddings.refuse_longer_than(300);
    let ws = sample_workspace();
    let env = env(&embeddings);
    let out = run(ws.path(), &borrowed(&env), &["search", MISSPELLED]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("keywords only"), "every section has its vector: {}", out.stderr);
    // Found by its vector (no keyword matches), from the start of the section only.
    assert!(sources(&out.stdout).iter().take(3).any(|s| s == "docs/refunds.md#window"), "{}", out.stdout);
    let texts = embeddings.texts();
    assert!(texts.len() > 20 && texts.iter().all(|t| t.chars().count() <= 300), "{}", texts.len());
}

/// `GET {url}/v1/search?q=` with `token`: the hits' sources, best first.
async fn served(http: &reqwest::Client, url: &str, token: &str, q: &str) -> Vec<String> {
    let response = http.get(format!("{url}/v1/search?q={}", q.replace(' ', "+"))).bearer_auth(token).send().await;
    let body: serde_json::Value = response.expect("search").json().await.expect("json");
    let hits = body["hits"].as_array().cloned().unwrap_or_default();
    hits.iter()
        .map(|h| format!("{}#{}", h["path"].as_str().unwrap_or(""), h["anchor"].as_str().unwrap_or("")))
        .collect()
}

#[tokio::test]
async fn serve_starts_on_keywords_and_its_updater_embeds_the_docs_and_each_change() {
    use std::io::BufRead;
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let token = "hybrid-token-0123456789";
    common::serve_config(ws.path(), &[("ana", token, &["ask"])], "");
    let mut env = env(&embeddings);
    env.push(("LLM_MODEL", "scripted".into()));
    env.push(("DOCS_AGENT_INDEX_RESCAN_SECS", "1".into()));
    let (mut child, url, stderr) = common::spawn_serve(ws.path(), &borrowed(&env));
    std::thread::spawn(move || for _ in stderr.lines() {});
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();

    // Within a minute (in practice the first rescan), the misspelled question finds its section.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut hits = Vec::new();
    while std::time::Instant::now() < deadline {
        hits = served(&http, &url, token, MISSPELLED).await;
        if hits.first().map(String::as_str) == Some("docs/refunds.md#window") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(hits.first().map(String::as_str), Some("docs/refunds.md#window"), "{hits:?}");

    // A new document: its section alone is embedded, and found by its vector.
    embeddings.clear();
    std::fs::write(ws.path().join("docs/okapi.md"), "# Okapi add-on\n\nThe okapi add-on costs 9 EUR a month.\n")
        .expect("write");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        hits = served(&http, &url, token, "okapy addon").await;
        if hits.first().map(String::as_str) == Some("docs/okapi.md#okapi-add-on") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(hits.first().map(String::as_str), Some("docs/okapi.md#okapi-add-on"), "{hits:?}");
    let sections: Vec<String> = embeddings.texts().into_iter().filter(|t| t.contains("\n\n")).collect();
    assert_eq!(sections.len(), 1, "only the new section: {sections:?}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_answer_path_puts_what_vectors_found_in_context() {
    let embeddings = FakeEmbeddings::start();
    let model = FakeServer::start(vec![Canned::text("Within 14 days of the first payment [1].")]);
    let ws = sample_workspace();
    let mut env = env(&embeddings);
    env.push(("LLM_BASE_URL", model.base_url()));
    env.push(("LLM_MODEL", "test-model".into()));
    // The coverage gate weighs keywords; it is off here so the misspelled question reaches the model.
    env.push(("DOCS_AGENT_MIN_COVERAGE", "0".into()));
    env.push(("DOCS_AGENT_MIN_KNOWN", "0".into()));
    let out = run(ws.path(), &borrowed(&env), &[MISSPELLED]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = model.requests();
    let context = requests.first().map(|r| r["messages"].to_string()).unwrap_or_default();
    assert!(context.contains("docs/refunds.md#window"), "the refund window in context: {context}");
    // Its text, read for its meaning alone: the question shares no word with it.
    assert!(context.contains("Refunds are possible within 14 days"), "the window's passage in context: {context}");

    // `search --evidence` shows the same, and the section the question is nearest by meaning.
    let shown = run(ws.path(), &borrowed(&env), &["search", "--evidence", MISSPELLED]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("nearest by meaning: docs/refunds.md#window"), "{}", shown.stdout);
    assert!(shown.stdout.contains("Refunds are possible within 14 days"), "{}", shown.stdout);
}

#[test]
fn index_rebuild_embeds_what_the_cache_lacks_and_says_so() {
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let env = env(&embeddings);
    let first = run(ws.path(), &borrowed(&env), &["index", "rebuild"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let embedded = embeddings.texts().len();
    assert!(embedded > 20, "{embedded}");
    assert!(first.stdout.contains(&format!("embedded {embedded} sections with fake-embed")), "{}", first.stdout);
    // Rebuilt again: the rows are new, their text is not.
    embeddings.clear();
    let again = run(ws.path(), &borrowed(&env), &["index", "rebuild"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("embedded 0 sections"), "{}", again.stdout);
    assert!(embeddings.texts().is_empty());
    // The server down: the rebuild says so and fails, naming what to set.
    embeddings.fail(true);
    std::fs::write(ws.path().join("docs/okapi.md"), "# Okapi\n\nNine EUR.\n").expect("write");
    let down = run(ws.path(), &borrowed(&env), &["index", "rebuild"]);
    assert_eq!(down.code, 1, "{}", down.stdout);
    assert!(down.stderr.contains("503") && down.stderr.contains("no vector yet"), "{}", down.stderr);
}

#[test]
fn the_model_servers_key_goes_only_to_the_model_server() {
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let url = embeddings.base_url();
    let model_key = "sk-model-server-key-0123456789abcdef";
    let own_key = "embeddings-own-key-0123456789";
    // Another host than llm.base_url: the model server's key is not sent.
    let elsewhere = [
        ("DOCS_AGENT_EMBEDDINGS_MODEL", "fake-embed"),
        ("DOCS_AGENT_EMBEDDINGS_URL", url.as_str()),
        ("LLM_API_KEY", model_key),
    ];
    assert_eq!(run(ws.path(), &elsewhere, &["search", MISSPELLED]).code, 0);
    assert!(embeddings.keys().iter().all(String::is_empty), "{:?}", embeddings.keys());
    // Its own key, when it has one.
    let own = [
        ("DOCS_AGENT_EMBEDDINGS_MODEL", "fake-embed"),
        ("DOCS_AGENT_EMBEDDINGS_URL", url.as_str()),
        ("LLM_API_KEY", model_key),
        ("DOCS_AGENT_EMBEDDINGS_API_KEY", own_key),
    ];
    assert_eq!(run(ws.path(), &own, &["search", MISSPELLED]).code, 0);
    assert_eq!(embeddings.keys().last().map(String::as_str), Some(format!("Bearer {own_key}").as_str()));
    // The model server itself (its base URL, no URL of their own): its key.
    let same =
        [("DOCS_AGENT_EMBEDDINGS_MODEL", "fake-embed"), ("LLM_BASE_URL", url.as_str()), ("LLM_API_KEY", model_key)];
    assert_eq!(run(ws.path(), &same, &["search", MISSPELLED]).code, 0);
    assert_eq!(embeddings.keys().last().map(String::as_str), Some(format!("Bearer {model_key}").as_str()));
}

/// What the operator's rules hide (a denied folder, and a link into it) is never sent to the
/// embedding server: by a question, by `index rebuild`, or by serve's updater (`Live::replace`,
/// which runs the same `Index::embed`). Without the rule the same text is sent: the control.
#[test]
fn hidden_documents_never_reach_the_embedding_server() {
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let docs = ws.path().join("docs");
    std::fs::create_dir_all(docs.join("internal")).expect("mkdir");
    std::fs::write(docs.join("internal/plan.md"), "# Launch plan\n\n## Dates\n\nBluebird launches on 3 March.\n")
        .expect("write");
    std::os::unix::fs::symlink("internal/plan.md", docs.join("plan-alias.md")).expect("link");
    let env = env(&embeddings);
    let sent_hidden = |texts: &[String]| texts.iter().any(|t| t.contains("Bluebird") || t.contains("Launch plan"));

    let control = run(ws.path(), &borrowed(&env), &["index", "rebuild"]);
    assert_eq!(control.code, 0, "{}", control.stderr);
    assert!(sent_hidden(&embeddings.texts()), "without a rule the plan is embedded");

    std::fs::write(
        ws.path().join("docs-agent.toml"),
        "[[hooks.pre_tool]]\nname = \"internal-only\"\ntool = \"read_file\"\npath = \"docs/internal/**\"\ndecision = \"deny\"\nreason = \"internal\"\n",
    )
    .expect("config");
    std::fs::remove_file(ws.path().join(".docs-agent/index.vectors.db")).expect("no cached vectors");
    for args in [&["index", "rebuild"][..], &["search", MISSPELLED][..]] {
        embeddings.clear();
        let ran = run(ws.path(), &borrowed(&env), args);
        assert_eq!(ran.code, 0, "{args:?}: {}", ran.stderr);
        let texts = embeddings.texts();
        assert!(!texts.is_empty(), "{args:?} embedded nothing");
        assert!(!sent_hidden(&texts), "{args:?} sent a hidden document: {texts:?}");
        if args[0] == "search" {
            let found = sources(&ran.stdout);
            assert_eq!(found.first().map(String::as_str), Some("docs/refunds.md#window"), "{}", ran.stdout);
        }
    }
}

#[test]
fn a_broken_cache_costs_time_never_search_and_check_and_weight_zero_ask_nothing() {
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let env = env(&embeddings);

    // check never searches: nothing is embedded.
    let check = run(ws.path(), &borrowed(&env), &["check"]);
    assert!(embeddings.texts().is_empty(), "check embedded: {}", check.stderr);

    // A cache file that is not a database: the sections are embedded without it.
    std::fs::create_dir_all(ws.path().join(".docs-agent")).expect("folder");
    std::fs::write(ws.path().join(".docs-agent/index.vectors.db"), "not a database, ".repeat(400)).expect("junk");
    let broken = run(ws.path(), &borrowed(&env), &["search", MISSPELLED]);
    assert_eq!(broken.code, 0, "{}", broken.stderr);
    assert!(broken.stderr.contains("vector cache") && broken.stderr.contains("cannot be used"), "{}", broken.stderr);
    assert_eq!(
        sources(&broken.stdout).first().map(String::as_str),
        Some("docs/refunds.md#window"),
        "{}",
        broken.stdout
    );

    // Weight 0: the keyword ranking, and no question's vector asked for.
    let keywords = run(ws.path(), &[], &["search", "refund window"]);
    embeddings.clear();
    let mut weightless = env.clone();
    weightless.push(("DOCS_AGENT_EMBEDDINGS_WEIGHT", "0".into()));
    let zero = run(ws.path(), &borrowed(&weightless), &["search", "refund window"]);
    assert_eq!(sources(&zero.stdout), sources(&keywords.stdout), "{}", zero.stderr);
    assert!(!embeddings.texts().iter().any(|t| t == "refund window"), "no question's vector");
}

#[test]
fn another_model_behind_the_same_name_is_said_and_search_stays_on_keywords() {
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let env = env(&embeddings);
    assert_eq!(run(ws.path(), &borrowed(&env), &["search", MISSPELLED]).code, 0);
    let keywords = run(ws.path(), &[], &["search", "refund window"]);
    embeddings.cut_to(128);
    let changed = run(ws.path(), &borrowed(&env), &["search", "refund window"]);
    assert_eq!(changed.code, 0, "{}", changed.stderr);
    assert_eq!(sources(&changed.stdout), sources(&keywords.stdout), "the keyword ranking");
    assert!(
        changed.stderr.contains("now returns vectors of 128 dimensions and the index holds 256"),
        "{}",
        changed.stderr
    );
}

#[test]
fn a_section_the_server_refuses_leaves_only_that_section_without_a_vector() {
    let embeddings = FakeEmbeddings::start();
    embeddings.refuse_containing("Refunds over 500 EUR need a second approver");
    let ws = sample_workspace();
    let env = env(&embeddings);
    let out = run(ws.path(), &borrowed(&env), &["search", MISSPELLED]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("2 of") && out.stderr.contains("have no vector"),
        "the two sections that hold it: {}",
        out.stderr
    );
    assert!(out.stderr.contains("tokenizer failed"), "the server's reason: {}", out.stderr);
    // Every other section was embedded, the ones after the refused one too.
    let embedded: std::collections::HashSet<String> = embeddings.texts().into_iter().collect();
    assert!(embedded.iter().any(|t| t.starts_with("Webhooks")), "sections after it: {}", embedded.len());
    assert_eq!(sources(&out.stdout).first().map(String::as_str), Some("docs/refunds.md#window"), "{}", out.stdout);
}

#[test]
fn a_bad_embeddings_setting_is_named_before_anything_runs() {
    let ws = sample_workspace();
    for (env, named) in [
        (
            [("DOCS_AGENT_EMBEDDINGS_MODEL", "m"), ("DOCS_AGENT_EMBEDDINGS_WEIGHT", "1.5")],
            "retrieval.embeddings.weight (DOCS_AGENT_EMBEDDINGS_WEIGHT) must be a fraction",
        ),
        (
            [("DOCS_AGENT_EMBEDDINGS_MODEL", "m"), ("DOCS_AGENT_EMBEDDINGS_URL", "localhost:11434")],
            "retrieval.embeddings.base_url (DOCS_AGENT_EMBEDDINGS_URL) must start with http://",
        ),
    ] {
        let out = run(ws.path(), &env, &["search", "refund window"]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(out.stderr.contains(named), "{}", out.stderr);
    }
}

/// Every path by which text leaves for the embedding server or the reranker passes one guard
/// (`guard::outbound`), in serve as on the command line (issue 51, findings 8 and 9, and the
/// weakly held "hidden documents are never embedded by any path"): a question's pasted secrets
/// and the operator's pattern are taken out of `/v1/search`, MCP `search_docs` and `/v1/ask`
/// alike; a section is sent with what the pattern redacts taken out; serve's index updater
/// never sends a hidden document, at start or when one is added.
#[tokio::test]
async fn what_leaves_for_the_embedding_server_and_the_reranker_is_guarded_on_every_path() {
    use std::io::BufRead;
    const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
    const GITHUB: &str = "ghp_0123456789abcdefABCDEF0123456789abcd";
    const TICKET: &str = "ACME-112233";
    const HIDDEN: &str = "Quokkaplan";
    let embeddings = FakeEmbeddings::start();
    let reranker = fake::reranker::FakeReranker::start(fake::reranker::Mode::Documents);
    let ws = sample_workspace();
    let docs = ws.path().join("docs");
    std::fs::create_dir_all(docs.join("internal")).expect("mkdir");
    std::fs::write(docs.join("internal/plan.md"), format!("# Launch plan\n\n{HIDDEN} launches in March.\n"))
        .expect("write");
    std::fs::write(docs.join("shipping.md"), format!("# Shipping\n\nOrder {TICKET} shipped on time.\n"))
        .expect("write");
    let token = "outbound-token-0123456789";
    common::serve_config(
        ws.path(),
        &[("ana", token, &["ask"])],
        "[[hooks.pre_tool]]\nname = \"internal-only\"\ntool = \"read_file\"\npath = \"docs/internal/**\"\n\
         decision = \"deny\"\nreason = \"internal\"\n\n[hooks.post_tool]\nredact = [\"ACME-[0-9]{6}\"]\n",
    );
    let mut env = env(&embeddings);
    env.push(("DOCS_AGENT_RERANKER_URL", reranker.base_url()));
    env.push(("LLM_MODEL", "extractive".into()));
    env.push(("DOCS_AGENT_INDEX_RESCAN_SECS", "1".into()));
    let (mut child, url, stderr) = common::spawn_serve(ws.path(), &borrowed(&env));
    std::thread::spawn(move || for _ in stderr.lines() {});
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    // Serve's updater embeds the docs (the shipping page among them), then a hidden page added
    // later is not sent either.
    let embedded = |needle: &str| embeddings.texts().iter().any(|t| t.contains(needle));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !embedded("shipped on time") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(embedded("shipped on time"), "the updater embedded the docs: {:?}", embeddings.texts());
    std::fs::write(docs.join("internal/later.md"), format!("# Later\n\n{HIDDEN} later, in April.\n")).expect("write");
    std::fs::write(docs.join("okapi.md"), "# Okapi add-on\n\nThe okapi add-on costs 9 EUR a month.\n").expect("write");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !embedded("okapi add-on costs") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(embedded("okapi add-on costs"), "the updater embedded the change");

    let question = format!("order {TICKET} shipped with key {AWS} and token {GITHUB}");
    let mut answered = Vec::new();
    let search = http.get(format!("{url}/v1/search?q={}", common::percent(&question))).bearer_auth(token);
    answered.push(search.send().await.expect("search").status().as_u16());
    let ask = http.post(format!("{url}/v1/ask")).bearer_auth(token).json(&serde_json::json!({"question": question}));
    answered.push(ask.send().await.expect("ask").status().as_u16());
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_docs", "arguments": {"query": question}}});
    let (status, _) = common::mcp::post_mcp(&url, Some(token), call).await;
    answered.push(status);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(answered, [200, 200, 200]);

    let sent: Vec<String> =
        embeddings.texts().into_iter().chain(reranker.requests().iter().map(serde_json::Value::to_string)).collect();
    let questions = sent.iter().filter(|t| t.contains("shipped with key")).count();
    assert!(questions >= 4, "each path asked (three embeddings, the reranker): {sent:?}");
    for secret in [AWS, GITHUB, TICKET, HIDDEN] {
        let leaked: Vec<&String> = sent.iter().filter(|t| t.contains(secret)).collect();
        assert!(leaked.is_empty(), "{secret} was sent: {leaked:?}");
    }
    assert!(sent.iter().any(|t| t.contains("Order [REDACTED:hook] shipped")), "{sent:?}");
}

/// Serve's index updater never sends a hidden document to the embedding server, whatever way
/// it arrives while serve runs: a hidden document edited, a new one in a new folder under the
/// denied one, and a link from a visible name into it. A visible document written after them
/// all is embedded (so the updater has taken every change in by then), and no hidden text ever
/// reached the server (issue 51: `index rebuild` and `search` were tested, serve's updater
/// only at start).
#[tokio::test]
async fn serves_updater_never_embeds_a_hidden_document_added_while_it_runs() {
    use std::io::BufRead;
    let embeddings = FakeEmbeddings::start();
    let ws = sample_workspace();
    let docs = ws.path().join("docs");
    std::fs::create_dir_all(docs.join("internal")).expect("mkdir");
    std::fs::write(docs.join("internal/plan.md"), "# Launch plan\n\nWombatplan launches in March.\n").expect("write");
    let token = "updater-token-0123456789";
    common::serve_config(
        ws.path(),
        &[("ana", token, &["ask"])],
        "[[hooks.pre_tool]]\nname = \"internal-only\"\ntool = \"read_file\"\npath = \"docs/internal/**\"\n\
         decision = \"deny\"\nreason = \"internal\"\n",
    );
    let mut env = env(&embeddings);
    env.push(("LLM_MODEL", "scripted".into()));
    env.push(("DOCS_AGENT_INDEX_RESCAN_SECS", "1".into()));
    let (mut child, _url, stderr) = common::spawn_serve(ws.path(), &borrowed(&env));
    std::thread::spawn(move || for _ in stderr.lines() {});
    let embedded = |needle: &str| embeddings.texts().iter().any(|t| t.contains(needle));
    let until_embedded = |needle: &'static str| async move {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !embedded(needle) && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        embedded(needle)
    };
    assert!(until_embedded("Refunds are possible within 14 days").await, "the updater embedded the docs at start");

    std::fs::write(docs.join("internal/plan.md"), "# Launch plan\n\nNumbatplan launches in April.\n").expect("edit");
    std::fs::create_dir_all(docs.join("internal/later")).expect("mkdir");
    std::fs::write(docs.join("internal/later/dates.md"), "# Dates\n\nNumbatplan dates, kept in house.\n")
        .expect("write");
    std::os::unix::fs::symlink("internal/later/dates.md", docs.join("dates.md")).expect("link");
    std::fs::write(docs.join("okapi.md"), "# Okapi add-on\n\nThe okapi add-on costs 9 EUR a month.\n").expect("write");
    let visible = until_embedded("okapi add-on costs").await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(visible, "the updater embedded the visible document: {:?}", embeddings.texts());
    let hidden = ["Wombatplan", "Numbatplan", "Launch plan", "kept in house"];
    let leaked: Vec<String> = embeddings.texts().into_iter().filter(|t| hidden.iter().any(|h| t.contains(h))).collect();
    assert!(leaked.is_empty(), "hidden text was sent: {leaked:?}");
}

/// The Embedder guards what it sends itself, whoever calls it: a question and a section holding
/// a key and the operator's pattern reach the embedding server redacted.
#[test]
fn the_embedder_sends_no_secret_whoever_calls_it() {
    use docs_agent::guard::outbound::Outbound;
    const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
    const TICKET: &str = "ACME-112233";
    let embeddings = FakeEmbeddings::start();
    let settings = docs_agent::config::EmbeddingsConfig {
        model: "fake-embed".into(),
        base_url: String::new(),
        api_key: None,
        dimensions: 0,
        batch: 8,
        query_prefix: None,
        passage_prefix: None,
        input_chars: 2000,
        timeout_secs: 10,
        weight: 0.5,
    };
    let guard = Outbound::new(vec![regex::Regex::new("ACME-[0-9]{6}").expect("a pattern")]);
    let embedder = docs_agent::index::embed::Embedder::new(&settings, &embeddings.base_url(), None, 0, guard);
    embedder.query(&format!("key {AWS} for {TICKET}")).expect("a question's vector");
    embedder.passages(&[&format!("# Keys\n\nThe key is {AWS}; ticket {TICKET}.")]).expect("a section's vector");
    let sent = embeddings.texts();
    assert_eq!(sent.len(), 2, "{sent:?}");
    for text in &sent {
        assert!(!text.contains(AWS) && !text.contains(TICKET), "sent as it was: {text:?}");
        assert!(text.contains("[REDACTED:hook]"), "{text:?}");
    }
}
