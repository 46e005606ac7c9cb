//! `docs-agent report gaps` from the terminal: the questions the docs could not answer, asked
//! in chats, grouped and counted, as text and as JSON; an empty log says so.

mod common;

#[test]
fn report_gaps_lists_the_questions_the_docs_could_not_answer() {
    let ws = common::sample_workspace();
    let env = [("LLM_MODEL", "scripted")];
    let empty = common::run(ws.path(), &env, &["report", "gaps"]);
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    assert!(empty.stdout.contains("No unanswered questions in the last 30 days"), "{}", empty.stdout);
    // Two chats ask the same unanswerable thing in other words; one asks what the docs answer.
    for question in ["xylophone zeppelin quasar?", "Quasars and xylophones, zeppelin"] {
        let out = common::run_input(ws.path(), &env, &["chat"], &format!("{question}\n/quit\n"));
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let out = common::run_input(ws.path(), &env, &["chat"], "how long is the refund window\n/quit\n");
    assert_eq!(out.code, 0, "{}", out.stderr);

    let text = common::run(ws.path(), &env, &["report", "gaps"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("2 unanswered question(s) in the last 30 days, in 1 group(s)"), "{}", text.stdout);
    assert!(text.stdout.contains("1. \"xylophone zeppelin quasar?\" asked 2x (no hits 2)"), "{}", text.stdout);
    assert!(text.stdout.contains("also asked as: \"Quasars and xylophones, zeppelin\""), "{}", text.stdout);
    assert!(!text.stdout.contains("refund"), "an answered question is not a gap: {}", text.stdout);

    let json = common::run(ws.path(), &env, &["report", "gaps", "--json", "--days", "1"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON document");
    assert_eq!(report["questions"], 2, "{report}");
    assert_eq!(report["gaps"][0]["count"], 2, "{report}");
    assert_eq!(report["gaps"][0]["reasons"]["no_hits"], 2, "{report}");
}

#[test]
fn a_question_the_docs_do_not_cover_is_a_gap_with_its_closest_sections() {
    let ws = common::sample_workspace();
    let env = [("LLM_MODEL", "scripted")];
    let out = common::run_input(ws.path(), &env, &["chat"], "does it support kubernetes helm\n/quit\n");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("The docs do not cover this."), "{}", out.stdout);
    let json = common::run(ws.path(), &env, &["report", "gaps", "--json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON document");
    assert_eq!(report["gaps"][0]["question"], "does it support kubernetes helm", "{report}");
    assert_eq!(report["gaps"][0]["reasons"]["not_covered"], 1, "{report}");
    assert!(report["gaps"][0]["closest"].as_array().is_some_and(|c| !c.is_empty()), "{report}");
    let text = common::run(ws.path(), &env, &["report", "gaps"]);
    assert!(text.stdout.contains("(not covered by the docs 1)"), "{}", text.stdout);
}
