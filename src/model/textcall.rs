//! Small local models often write a tool call as JSON in the message text instead of using
//! `tool_calls`. This accepts that form when it names a known tool; the same policy then applies.

use serde_json::Value;

use super::ToolCall;

/// Reads `{"name": "...", "arguments"|"parameters": {...}}` (optionally in a ```json fence, or
/// `{"function": {...}}`) from `content`, when `name` is one of `known`.
pub fn parse(content: &str, known: &[&str]) -> Option<ToolCall> {
    let text = strip_fence(content.trim());
    if !text.starts_with('{') || text.len() > 256 * 1024 {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let object = value.get("function").filter(|f| f.is_object()).unwrap_or(&value);
    let name = object.get("name")?.as_str()?;
    if !known.contains(&name) {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => "{}".to_string(),
    };
    Some(ToolCall { id: "text_call".to_string(), name: name.to_string(), arguments })
}

fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["search_docs", "read_file"];

    #[test]
    fn accepts_only_known_tools_in_json_text() {
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            (
                r#"{"name": "search_docs", "arguments": {"query": "refunds"}}"#,
                Some(("search_docs", r#"{"query":"refunds"}"#)),
            ),
            (
                "```json\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"docs/a.md\"}}\n```",
                Some(("read_file", r#"{"path":"docs/a.md"}"#)),
            ),
            (
                r#"{"function": {"name": "search_docs", "arguments": "{\"query\":\"x\"}"}}"#,
                Some(("search_docs", r#"{"query":"x"}"#)),
            ),
            (r#"{"name": "rm_rf", "arguments": {}}"#, None),
            ("The refund window is 14 days.", None),
            ("{not json", None),
            (r#"["search_docs"]"#, None),
        ];
        for (content, expected) in cases {
            let got = parse(content, KNOWN);
            assert_eq!(got.as_ref().map(|c| (c.name.as_str(), c.arguments.as_str())), *expected, "content {content:?}");
        }
    }
}
