//! Small local models often write tool calls in their text instead of `tool_calls`. This is
//! the one place that knows the forms they use, each tested below with real outputs:
//! - bare JSON, or JSON in a code fence (```` ```json ````, ```` ``` ````), with text before or after;
//! - `<tool_call>…</tool_call>` tags, as the Qwen and Hermes chat templates write them;
//! - several calls in one message;
//! - `"name"` or `"function"` as the key (`{"function": {"name", "arguments"}}` too), and
//!   `"arguments"` or `"parameters"`, as a JSON string or an object.
//!
//! A message is read as calls only when every call-shaped object in it names a known tool;
//! anything else that looks like a call is [`unreadable`], and the turn sends the model a
//! one-line correction. The same policy then applies to every call, however it was written.

use serde_json::{Map, Value};

use super::ToolCall;

/// Longest message text searched for calls.
const MAX_TEXT_BYTES: usize = 256 * 1024;

/// The calls written in `content`, when it holds at least one and every call-shaped object in
/// it names one of `known`.
pub fn parse(content: &str, known: &[&str]) -> Option<Vec<ToolCall>> {
    let shapes = shapes(content)?;
    let mut calls = Vec::new();
    for shape in shapes {
        match shape {
            Shape::Call { name, arguments } if known.contains(&name.as_str()) => {
                let id = format!("text_call_{}", calls.len());
                calls.push(ToolCall { id, name, arguments });
            }
            _ => return None,
        }
    }
    (!calls.is_empty()).then_some(calls)
}

/// A one-line correction for text that looks like a tool call but is not one the harness can
/// read: an unknown tool, JSON that does not parse in a `<tool_call>` tag, a call object with
/// no name. `None` for ordinary text and for calls [`parse`] accepts.
pub fn unreadable(content: &str, known: &[&str]) -> Option<String> {
    let list = known.join(", ");
    let shapes = shapes(content)?;
    for shape in shapes {
        let problem = match shape {
            Shape::Call { name, .. } if known.contains(&name.as_str()) => continue,
            Shape::Call { name, .. } => format!("there is no tool named `{}`", crate::guard::clip(&name, 40)),
            Shape::Nameless => "a tool call needs a \"name\"".to_string(),
            Shape::Broken => "the tool call is not valid JSON".to_string(),
        };
        return Some(format!(
            "Your reply looks like a tool call, but {problem}. The tools are {list}; call one with its JSON arguments, or answer in plain text."
        ));
    }
    None
}

/// What one candidate object in a message is.
#[derive(Debug)]
enum Shape {
    /// A call: a tool name and its arguments as JSON text.
    Call { name: String, arguments: String },
    /// Call-shaped (has arguments or parameters) but names no tool.
    Nameless,
    /// Inside `<tool_call>` tags, but not a JSON object.
    Broken,
}

/// The call-shaped objects of `content`, or `None` when there are none (ordinary text).
fn shapes(content: &str) -> Option<Vec<Shape>> {
    if content.len() > MAX_TEXT_BYTES || !content.contains('{') {
        return None;
    }
    let mut found = Vec::new();
    for (tagged, candidate) in candidates(content) {
        match serde_json::from_str::<Value>(candidate) {
            Ok(Value::Object(object)) => found.extend(shape_of(&object)),
            Ok(Value::Array(items)) => {
                found.extend(items.iter().filter_map(Value::as_object).filter_map(shape_of));
            }
            _ if tagged => found.push(Shape::Broken),
            _ => {}
        }
    }
    (!found.is_empty()).then_some(found)
}

/// The text of each candidate: `<tool_call>` tag bodies (`true`) and, outside them, fenced
/// blocks and bare JSON values that start a line (`false`).
fn candidates(content: &str) -> Vec<(bool, &str)> {
    let mut out = Vec::new();
    let mut rest = content;
    let mut plain = Vec::new();
    while let Some(start) = rest.find("<tool_call>") {
        plain.push(&rest[..start]);
        let body = &rest[start + "<tool_call>".len()..];
        let end = body.find("</tool_call>").unwrap_or(body.len());
        out.push((true, strip_fence(body[..end].trim())));
        rest = body.get(end + "</tool_call>".len()..).unwrap_or("");
    }
    plain.push(rest);
    for text in plain {
        out.extend(json_values(text).into_iter().map(|v| (false, v)));
    }
    out
}

/// JSON values in free text: each fenced block's body, and each `{` or `[` that starts a line
/// outside fences, read as far as one JSON value goes.
fn json_values(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        let line = text[at..line_end].trim_start();
        if let Some(after) = line.strip_prefix("```") {
            let body_start = line_end;
            let close = text[body_start..].find("```").map_or(text.len(), |i| body_start + i);
            let lang = after.trim();
            if lang.is_empty() || lang.eq_ignore_ascii_case("json") {
                out.push(text[body_start..close].trim());
            }
            at = text[close..].find('\n').map_or(text.len(), |i| close + i + 1);
            continue;
        }
        if line.starts_with('{') || line.starts_with('[') {
            let start = text.len() - text[at..].trim_start().len();
            let mut values = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
            if let Some(Ok(_)) = values.next() {
                let end = start + values.byte_offset();
                out.push(&text[start..end]);
                at = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
                continue;
            }
        }
        at = line_end;
    }
    out
}

/// The shape of one object: a call, a nameless call, or nothing call-like (`None`).
fn shape_of(object: &Map<String, Value>) -> Option<Shape> {
    // {"type": "function", "function": {...}} and {"function": {...}} wrap the call.
    if let Some(Value::Object(inner)) = object.get("function") {
        return shape_of(inner);
    }
    let name = ["name", "function", "tool", "tool_name"].iter().find_map(|k| object.get(*k)?.as_str());
    let arguments = ["arguments", "parameters", "args", "input"].iter().find_map(|k| object.get(*k));
    match (name, arguments) {
        (Some(name), arguments) => {
            let arguments = match arguments {
                Some(Value::String(text)) => text.clone(),
                Some(value) => value.to_string(),
                None if object.len() == 1 => "{}".to_string(),
                // {"name": "Refunds", "price": 3} is data, not a call.
                None => return None,
            };
            Some(Shape::Call { name: name.to_string(), arguments })
        }
        (None, Some(_)) if object.len() <= 2 => Some(Shape::Nameless),
        _ => None,
    }
}

/// A fenced block's body (```` ```json ... ``` ````), or the text as it is.
fn strip_fence(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let rest = rest.strip_prefix("json").unwrap_or(rest);
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests;
