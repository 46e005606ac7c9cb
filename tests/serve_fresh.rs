//! A running `serve` keeps its index fresh: documents added, edited, renamed and deleted show in
//! the next search within 2 seconds (events, or the rescan where there are none), search, ask
//! and `/v1/sections` read the same generation, and a document still being written is never
//! half-indexed.

mod common;

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

use docs_agent::serve::auth::hash;
use serde_json::{Value, json};

const TOKEN: &str = "fresh-token-0123456789";
/// How soon a change must show.
const WITHIN: Duration = Duration::from_secs(2);

/// A `serve` process on 127.0.0.1 over a copy of the sample workspace.
struct Server {
    child: Child,
    url: String,
    http: reqwest::Client,
    ws: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(env: &[(&str, &str)]) -> Server {
        let ws = common::sample_workspace();
        let toml = format!(
            "[serve]\nlisten = \"127.0.0.1:0\"\n\n[[serve.tokens]]\nprincipal = \"ana\"\nsha256 = \"{}\"\nroles = [\"ask\", \"admin\"]\n",
            hash(TOKEN)
        );
        std::fs::write(ws.path().join("docs-agent.toml"), toml).expect("write config");
        let log = ws.path().join("data/sessions.db").display().to_string();
        let mut env: Vec<(&str, &str)> = env.to_vec();
        env.extend([("LLM_MODEL", "scripted"), ("DOCS_AGENT_SESSION_LOG", log.as_str())]);
        let (child, url, stderr) = common::spawn_serve(ws.path(), &env);
        // Keep reading stderr so the process never blocks on a full pipe.
        std::thread::spawn(move || for _ in stderr.lines() {});
        let _ = rustls::crypto::ring::default_provider().install_default();
        Server { child, url, http: reqwest::Client::new(), ws }
    }

    fn doc(&self, name: &str) -> PathBuf {
        self.ws.path().join("docs").join(name)
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let response = self.http.get(format!("{}{path}", self.url)).bearer_auth(TOKEN).send().await.expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// The paths of the hits for `q`, best first.
    async fn search(&self, q: &str) -> Vec<(String, String)> {
        let (status, body) = self.get(&format!("/v1/search?q={}", q.replace(' ', "+"))).await;
        assert_eq!(status, 200, "{body}");
        let hits = body["hits"].as_array().cloned().unwrap_or_default();
        hits.iter()
            .map(|h| (h["path"].as_str().unwrap_or("").to_string(), h["excerpt"].as_str().unwrap_or("").to_string()))
            .collect()
    }

    async fn generation(&self) -> i64 {
        let (status, body) = self.get("/readyz").await;
        assert_eq!(status, 200, "{body}");
        body["index"]["generation"].as_i64().expect("generation")
    }

    /// Waits until `search` for `q` satisfies `ok`, for at most [`WITHIN`]; panics with `what`.
    async fn until(&self, what: &str, q: &str, ok: impl Fn(&[(String, String)]) -> bool) {
        let started = Instant::now();
        loop {
            let hits = self.search(q).await;
            if ok(&hits) {
                return;
            }
            assert!(started.elapsed() < WITHIN, "{what}: not seen within {WITHIN:?}; search {q:?} gives {hits:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn has(hits: &[(String, String)], path: &str, text: &str) -> bool {
    hits.iter().any(|(p, excerpt)| p == path && excerpt.contains(text))
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write doc");
}

#[tokio::test]
async fn added_edited_renamed_and_deleted_docs_show_within_two_seconds() {
    let server = Server::start(&[]);
    let first = server.generation().await;

    write(&server.doc("zebra.md"), "# Zebra plan\n\n## Window\n\nZebra plan refunds take 14 days.\n");
    server.until("a new doc", "zebra plan refunds", |h| has(h, "docs/zebra.md", "14 days")).await;
    assert!(server.generation().await > first, "a new generation is searched");

    write(&server.doc("zebra.md"), "# Zebra plan\n\n## Window\n\nZebra plan refunds take 45 days.\n");
    server.until("an edit", "zebra plan refunds", |h| has(h, "docs/zebra.md", "45 days")).await;
    // What a citation opens is the generation search read, and the one-shot ask answers from it.
    let (status, section) = server.get("/v1/sections?path=docs/zebra.md&anchor=window").await;
    assert_eq!(status, 200, "{section}");
    assert!(section["text"].as_str().is_some_and(|t| t.contains("45 days")), "{section}");
    assert_eq!(section["heading"], "Zebra plan > Window", "{section}");
    let asked: Value = server
        .http
        .post(format!("{}/v1/ask", server.url))
        .bearer_auth(TOKEN)
        .json(&json!({"question": "zebra plan refunds"}))
        .send()
        .await
        .expect("ask")
        .json()
        .await
        .expect("JSON");
    let answer = asked["answer"].as_str().unwrap_or_default();
    assert!(answer.contains("45 days") && !answer.contains("14 days"), "{asked}");

    std::fs::rename(server.doc("zebra.md"), server.doc("zebra-plan.md")).expect("rename");
    server
        .until("a rename", "zebra plan refunds", |h| {
            has(h, "docs/zebra-plan.md", "45 days") && !h.iter().any(|(p, _)| p == "docs/zebra.md")
        })
        .await;
    let (status, _) = server.get("/v1/sections?path=docs/zebra.md&anchor=window").await;
    assert_eq!(status, 404, "the old name is gone from the generation searched");

    std::fs::remove_file(server.doc("zebra-plan.md")).expect("delete");
    server.until("a deletion", "zebra plan refunds", |h| !h.iter().any(|(p, _)| p.contains("zebra"))).await;

    let (status, metrics) = server.get("/metrics").await;
    assert_eq!(status, 200);
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    let generation = server.generation().await;
    assert!(metrics.contains(&format!("docs_agent_index_generation {generation}\n")), "{metrics}");
    assert!(metrics.contains("docs_agent_index_watching 1\n"), "{metrics}");
    assert!(metrics.contains("docs_agent_index_updated_timestamp_seconds "), "{metrics}");
    assert!(generation >= first + 4, "one generation per change: {first} → {generation}");
}

#[tokio::test]
async fn a_document_being_written_is_not_indexed_until_its_writer_closes_it() {
    let server = Server::start(&[]);
    let refunds = server.doc("refunds.md");
    let before = std::fs::read_to_string(&refunds).expect("read refunds");

    // A new document and a rewrite of an old one, both half written and still open.
    let mut fresh = std::fs::File::create(server.doc("quokka.md")).expect("create");
    fresh.write_all(b"# Quokka tier\n\nQuokka tier customers get ").expect("write");
    fresh.flush().expect("flush");
    let mut rewrite = std::fs::File::create(&refunds).expect("truncate");
    rewrite.write_all(b"# Refunds\n\n## Window\n\nRefunds are possible within ").expect("write");
    rewrite.flush().expect("flush");

    // Another change, complete, is indexed: the update ran, and held both back.
    write(&server.doc("sentinel.md"), "# Sentinel\n\nSentinel marker page.\n");
    server.until("a finished doc", "sentinel marker", |h| has(h, "docs/sentinel.md", "Sentinel")).await;
    assert!(server.search("quokka tier").await.is_empty(), "a new doc being written is not searchable yet");
    let window = server.search("refund window first payment").await;
    assert!(
        has(&window, "docs/refunds.md", "within 14 days of the first payment"),
        "the old version stays: {window:?}"
    );
    let (status, section) = server.get("/v1/sections?path=docs/refunds.md&anchor=window").await;
    assert_eq!(status, 200, "{section}");
    assert!(
        section["text"].as_str().is_some_and(|t| t.contains("within 14 days")),
        "a citation opens what search found, not the half-written file: {section}"
    );

    fresh.write_all(b"priority support.\n").expect("write");
    drop(fresh);
    rewrite.write_all(b"30 days of the first payment.\n").expect("write");
    drop(rewrite);
    server.until("a closed new doc", "quokka tier", |h| has(h, "docs/quokka.md", "priority support")).await;
    server.until("a closed rewrite", "refunds possible within", |h| has(h, "docs/refunds.md", "within 30 days")).await;
    assert!(!before.contains("30 days of the first payment"));
}

#[tokio::test]
async fn without_events_the_rescan_finds_changes_and_an_index_in_memory_is_rebuilt() {
    let env =
        [("DOCS_AGENT_INDEX_WATCH", "false"), ("DOCS_AGENT_INDEX_RESCAN_SECS", "1"), ("DOCS_AGENT_INDEX", "memory")];
    let server = Server::start(&env);
    let (status, ready) = server.get("/readyz").await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["index"]["watching"], false, "{ready}");
    let first = server.generation().await;

    write(&server.doc("okapi.md"), "# Okapi add-on\n\nThe okapi add-on costs 9 EUR a month.\n");
    server.until("a new doc, by rescan", "okapi add-on", |h| has(h, "docs/okapi.md", "9 EUR")).await;
    write(&server.doc("okapi.md"), "# Okapi add-on\n\nThe okapi add-on costs 12 EUR a month.\n");
    server.until("an edit, by rescan", "okapi add-on", |h| has(h, "docs/okapi.md", "12 EUR")).await;
    std::fs::remove_file(server.doc("okapi.md")).expect("delete");
    server.until("a deletion, by rescan", "okapi add-on", |h| !h.iter().any(|(p, _)| p == "docs/okapi.md")).await;
    assert!(server.generation().await >= first + 3);
}

/// With a docs folder given (alone, or beside the workspace), serve keeps that folder's index
/// fresh, not the workspace's own docs/.
#[tokio::test]
async fn a_docs_folder_given_is_the_one_kept_fresh() {
    for alone in [true, false] {
        let docs = tempfile::tempdir().expect("docs");
        write(&docs.path().join("first.md"), "# First\n\nAn early page about walruses.\n");
        let folder = docs.path().to_str().expect("utf-8 path");
        let env: Vec<(&str, &str)> = if alone {
            vec![("WORKSPACE", ""), ("DOCS_AGENT_DOCS", folder)]
        } else {
            vec![("DOCS_AGENT_DOCS", folder)]
        };
        let server = Server::start(&env);
        server.until("the first page", "walruses", |h| has(h, "docs/first.md", "walruses")).await;
        write(&docs.path().join("later.md"), "# Later\n\nA later page about narwhals.\n");
        server.until("a page added to the docs folder", "narwhals", |h| has(h, "docs/later.md", "narwhals")).await;
        // The workspace's own docs/ is not what is served.
        write(&server.doc("ignored.md"), "# Ignored\n\nPlatypus facts.\n");
        let hits = server.search("walruses narwhals").await;
        assert!(!hits.iter().any(|(p, _)| p.contains("refunds")), "alone={alone}: {hits:?}");
    }
}
