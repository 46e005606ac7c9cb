//! The model's context length, as the server reports it: where `session.context_budget_tokens`
//! comes from when it is unset. Each kind of server says it in its own place:
//! - vLLM: `GET /v1/models`, `max_model_len` of the model's entry (others there: `context_length`,
//!   `context_window`);
//! - llama.cpp's `llama-server`: `GET /props`, `default_generation_settings.n_ctx` (a slot's
//!   context, what one request gets);
//! - Ollama (known by `GET /api/version`): `GET /api/ps`, `context_length` of the model while it
//!   is loaded, else `POST /api/show`, its `num_ctx` parameter, else [`OLLAMA_DEFAULT`] until the
//!   model is loaded. The `context_length` in `model_info` is what the model was trained on, not
//!   what Ollama gives it, so it is not used.
//!
//! Any other server (a hosted API) is asked its model list only.
//!
//! A length the server trained the model on is never taken for the one it serves: a budget too
//! large is the silent loss of the prompt's start this exists to prevent.

use serde_json::Value;

/// The context Ollama gives a model unless told otherwise (`OLLAMA_CONTEXT_LENGTH`, `num_ctx`),
/// on a machine with less than 24 GiB of VRAM: what to assume before it says.
pub const OLLAMA_DEFAULT: u64 = 4096;

/// Whether a `GET /v1/models` listing is llama.cpp's `llama-server` (its models say
/// `owned_by: llamacpp`), which says its context in `/props`.
pub fn is_llama_cpp(listing: &Value) -> bool {
    listing
        .get("data")
        .and_then(Value::as_array)
        .is_some_and(|models| models.iter().any(|m| m.get("owned_by").and_then(Value::as_str) == Some("llamacpp")))
}

/// The context length in a `GET /v1/models` listing, from `model`'s entry.
pub fn from_models(listing: &Value, model: &str) -> Option<u64> {
    let entry = listing.get("data")?.as_array()?.iter().find(|m| m.get("id").and_then(Value::as_str) == Some(model))?;
    ["max_model_len", "context_length", "context_window"].iter().find_map(|key| positive(entry.get(key)))
}

/// llama.cpp's `GET /props`: the context one request gets.
pub fn from_props(props: &Value) -> Option<u64> {
    positive(props.get("default_generation_settings")?.get("n_ctx"))
}

/// Ollama's `GET /api/ps`: the context `model` is loaded with, if it is loaded.
pub fn from_ollama_ps(ps: &Value, model: &str) -> Option<u64> {
    let tagged = tagged(model);
    let entry = ps.get("models")?.as_array()?.iter().find(|m| {
        ["name", "model"].iter().any(|k| m.get(k).and_then(Value::as_str).is_some_and(|n| n == model || n == tagged))
    })?;
    positive(entry.get("context_length"))
}

/// Ollama's `POST /api/show`: the `num_ctx` its parameters set, if they do.
pub fn from_ollama_show(show: &Value) -> Option<u64> {
    let parameters = show.get("parameters")?.as_str()?;
    parameters.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx")).then(|| words.next()?.parse::<u64>().ok()).flatten().filter(|&n| n > 0)
    })
}

/// Ollama names a model given without a tag `name:latest`.
pub fn tagged(model: &str) -> String {
    if model.contains(':') { model.to_string() } else { format!("{model}:latest") }
}

/// A positive whole number.
fn positive(value: Option<&Value>) -> Option<u64> {
    value?.as_u64().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_server_says_it_in_its_own_place() {
        let vllm = json!({"object": "list", "data": [
            {"id": "other", "max_model_len": 1}, {"id": "qwen", "max_model_len": 32768}
        ]});
        assert_eq!(from_models(&vllm, "qwen"), Some(32768));
        assert_eq!(from_models(&vllm, "absent"), None);
        let llama = json!({"data": [{"id": "local", "meta": {"n_ctx_train": 32768}}]});
        assert_eq!(from_models(&llama, "local"), None, "a training length is not the served one");
        assert_eq!(from_props(&json!({"default_generation_settings": {"n_ctx": 2048}})), Some(2048));
        assert_eq!(from_props(&json!({"n_ctx": 0})), None);
        let ps = json!({"models": [{"name": "qwen2.5:1.5b", "model": "qwen2.5:1.5b", "context_length": 4096}]});
        assert_eq!(from_ollama_ps(&ps, "qwen2.5:1.5b"), Some(4096));
        assert_eq!(
            from_ollama_ps(&json!({"models": [{"name": "llama3:latest", "context_length": 8192}]}), "llama3"),
            Some(8192)
        );
        let show = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx                        16384\ntemperature 0.2",
                          "model_info": {"qwen2.context_length": 32768}});
        assert_eq!(from_ollama_show(&show), Some(16384));
        assert_eq!(from_ollama_show(&json!({"model_info": {"qwen2.context_length": 32768}})), None);
    }
}
