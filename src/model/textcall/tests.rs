//! Samples of what small models really write (Qwen2.5-Coder 1.5B and 0.5B through llama.cpp,
//! Hermes-style templates), and what must not be read as a call.

use super::*;

const KNOWN: &[&str] = &["search_docs", "read_file", "write_file", "load_skill"];

/// (message text, the calls read from it as (name, arguments)).
const READ: &[(&str, &[(&str, &str)])] = &[
    // Qwen2.5-Coder 1.5B, retrieve-first off: the call in a fence, nothing else.
    (
        "```json\n{\n  \"name\": \"search_docs\",\n  \"arguments\": {\n    \"query\": \"refund window\"\n  }\n}\n```",
        &[("search_docs", r#"{"query":"refund window"}"#)],
    ),
    // After a stray tag it imitated from a tool result.
    (
        "<untrusted>\n```json\n{\"name\": \"search_docs\", \"arguments\": {\"query\": \"card payment fails\"}}\n```",
        &[("search_docs", r#"{"query":"card payment fails"}"#)],
    ),
    // Bare JSON.
    (r#"{"name": "search_docs", "arguments": {"query": "refunds"}}"#, &[("search_docs", r#"{"query":"refunds"}"#)]),
    // The Qwen/Hermes template's own tags.
    (
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"docs/refunds.md\"}}\n</tool_call>",
        &[("read_file", r#"{"path":"docs/refunds.md"}"#)],
    ),
    // Several calls, in tags.
    (
        "<tool_call>\n{\"name\": \"search_docs\", \"arguments\": {\"query\": \"dunning\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"search_docs\", \"arguments\": {\"query\": \"retry schedule\"}}\n</tool_call>",
        &[("search_docs", r#"{"query":"dunning"}"#), ("search_docs", r#"{"query":"retry schedule"}"#)],
    ),
    // Several calls, as bare lines.
    (
        "{\"name\": \"search_docs\", \"arguments\": {\"query\": \"a\"}}\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"docs/a.md\"}}",
        &[("search_docs", r#"{"query":"a"}"#), ("read_file", r#"{"path":"docs/a.md"}"#)],
    ),
    // An array of calls.
    (
        r#"[{"name": "search_docs", "arguments": {"query": "a"}}, {"name": "search_docs", "arguments": {"query": "b"}}]"#,
        &[("search_docs", r#"{"query":"a"}"#), ("search_docs", r#"{"query":"b"}"#)],
    ),
    // "function" as the key, with "parameters".
    (
        "```json\n{\"function\": \"read_file\", \"parameters\": {\"path\": \"docs/a.md\"}}\n```",
        &[("read_file", r#"{"path":"docs/a.md"}"#)],
    ),
    // The OpenAI shape, arguments as a string.
    (
        r#"{"type": "function", "function": {"name": "search_docs", "arguments": "{\"query\":\"x\"}"}}"#,
        &[("search_docs", r#"{"query":"x"}"#)],
    ),
    // Text before and after.
    (
        "Let me look that up in the docs.\n```json\n{\"name\": \"search_docs\", \"arguments\": {\"query\": \"webhook events invoice paid\"}}\n```\nI will answer once I have the results.",
        &[("search_docs", r#"{"query":"webhook events invoice paid"}"#)],
    ),
    // A fence with no language tag, and a tag body in a fence.
    (
        "```\n{\"name\": \"load_skill\", \"arguments\": {\"skill\": \"cite-sources\"}}\n```",
        &[("load_skill", r#"{"skill":"cite-sources"}"#)],
    ),
    (
        "<tool_call>\n```json\n{\"name\": \"search_docs\", \"arguments\": {\"query\": \"vat\"}}\n```\n</tool_call>",
        &[("search_docs", r#"{"query":"vat"}"#)],
    ),
];

/// Text that is not a call: left as the answer, and no correction either.
const PLAIN: &[&str] = &[
    "The refund window is 14 days [docs/refunds.md#window].",
    "{not json",
    r#"["search_docs"]"#,
    // JSON data in an answer, with a "name" that is not a call.
    "The event looks like this:\n```json\n{\"name\": \"Acme\", \"plan\": \"pro\", \"amount\": 12}\n```",
    "Use `{\"query\": \"x\"}` inline.",
    "```python\n{\"name\": \"search_docs\", \"arguments\": {}}\n```",
];

#[test]
fn every_form_small_models_write_is_read() {
    for (text, expected) in READ {
        let calls = parse(text, KNOWN).unwrap_or_else(|| panic!("not read: {text:?}"));
        let got: Vec<(&str, &str)> = calls.iter().map(|c| (c.name.as_str(), c.arguments.as_str())).collect();
        assert_eq!(got, *expected, "text {text:?}");
        assert_eq!(unreadable(text, KNOWN), None, "a readable call needs no correction: {text:?}");
        let ids: std::collections::BTreeSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), calls.len(), "ids are distinct: {text:?}");
    }
}

#[test]
fn plain_text_is_neither_a_call_nor_corrected() {
    for text in PLAIN {
        assert!(parse(text, KNOWN).is_none(), "read as a call: {text:?}");
        assert_eq!(unreadable(text, KNOWN), None, "corrected: {text:?}");
    }
}

#[test]
fn what_looks_like_a_call_but_is_not_one_gets_a_one_line_correction() {
    let cases: &[(&str, &str)] = &[
        (r#"{"name": "rm_rf", "arguments": {}}"#, "no tool named `rm_rf`"),
        ("<tool_call>\n{\"name\": \"search_docs\", \"arguments\": {\"query\": \n</tool_call>", "not valid JSON"),
        ("```json\n{\"arguments\": {\"query\": \"refunds\"}}\n```", "needs a \"name\""),
        // One good call beside an unknown one: nothing is run, the model is told.
        (
            "{\"name\": \"search_docs\", \"arguments\": {\"query\": \"a\"}}\n{\"name\": \"exec_shell\", \"arguments\": {\"cmd\": \"id\"}}",
            "no tool named `exec_shell`",
        ),
    ];
    for (text, says) in cases {
        assert!(parse(text, KNOWN).is_none(), "read as a call: {text:?}");
        let correction = unreadable(text, KNOWN).unwrap_or_else(|| panic!("no correction for {text:?}"));
        assert!(correction.contains(says), "{correction}");
        assert!(!correction.contains('\n'), "one line: {correction}");
        assert!(correction.contains("search_docs, read_file"), "names the tools: {correction}");
    }
}
