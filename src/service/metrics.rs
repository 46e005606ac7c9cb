//! Prometheus metrics, rendered in the text format at `/metrics`: requests and latencies by
//! route, tool calls by decision, approvals by outcome, answers by kind, model errors and tokens.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Latency bucket bounds, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// One route's latency histogram.
#[derive(Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Every counter.
#[derive(Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    latency: Mutex<BTreeMap<String, Histogram>>,
    tool_calls: Mutex<BTreeMap<String, u64>>,
    approvals: Mutex<BTreeMap<String, u64>>,
    /// Answers by kind (model, retrieval_only, not_covered).
    answers: Mutex<BTreeMap<String, u64>>,
    model_errors: AtomicU64,
    /// Tokens by who used them: prompt, completion.
    tokens: Mutex<BTreeMap<TokensBy, (u64, u64)>>,
}

/// Whose tokens: (model, principal, collection).
type TokensBy = (String, String, String);

fn bump(map: &Mutex<BTreeMap<String, u64>>, key: &str) {
    *map.lock().unwrap_or_else(|p| p.into_inner()).entry(key.to_string()).or_default() += 1;
}

impl Metrics {
    /// One request to `route` answered with `status` after `secs`.
    pub fn request(&self, route: &str, status: u16, secs: f64) {
        *self.requests.lock().unwrap_or_else(|p| p.into_inner()).entry((route.to_string(), status)).or_default() += 1;
        let mut latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = latency.entry(route.to_string()).or_default();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                h.counts[i] += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// One tool call, by decision (allowed, denied, error).
    pub fn tool_call(&self, decision: crate::tools::Decision) {
        bump(&self.tool_calls, decision.as_str());
    }

    /// One approval outcome (granted, denied, expired).
    pub fn approval(&self, outcome: &str) {
        bump(&self.approvals, outcome);
    }

    /// One answer, by its kind: a `not_covered` one is a question the docs do not answer.
    pub fn answer(&self, text: &str) {
        bump(&self.answers, crate::session::fallback::AnswerKind::of(text).as_str());
    }

    /// One failed model call.
    pub fn model_error(&self) {
        self.model_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Tokens `principal`'s turn in `collection` used of `model` (reported by the server, or
    /// estimated where it said nothing).
    pub fn tokens(&self, model: &str, principal: &str, collection: &str, prompt: u64, completion: u64) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        let used = tokens.entry((model.to_string(), principal.to_string(), collection.to_string())).or_default();
        used.0 += prompt;
        used.1 += completion;
    }

    /// The Prometheus text format, as the reader of `shown` collections sees it: principals
    /// (the tokens' label) are named only by the turns of those collections, so an admin of one
    /// collection never learns who uses another. `several`: the configuration has
    /// `[[collections]]`, and the tokens' series are labelled by collection.
    pub fn render(&self, shown: &dyn Fn(&str) -> bool, several: bool) -> String {
        let mut out = String::new();
        out.push_str("# HELP docs_agent_requests_total HTTP requests by route and status.\n# TYPE docs_agent_requests_total counter\n");
        for ((route, status), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.push_str(&format!("docs_agent_requests_total{{route=\"{}\",status=\"{status}\"}} {n}\n", label(route)));
        }
        out.push_str("# HELP docs_agent_request_seconds HTTP request latency by route.\n# TYPE docs_agent_request_seconds histogram\n");
        for (route, h) in self.latency.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let route = label(route);
            for (bound, n) in BUCKETS.iter().zip(h.counts) {
                out.push_str(&format!("docs_agent_request_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {n}\n"));
            }
            out.push_str(&format!("docs_agent_request_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}\n", h.count));
            out.push_str(&format!("docs_agent_request_seconds_sum{{route=\"{route}\"}} {}\n", h.sum));
            out.push_str(&format!("docs_agent_request_seconds_count{{route=\"{route}\"}} {}\n", h.count));
        }
        out.push_str("# HELP docs_agent_tool_calls_total Tool calls by the harness's decision.\n# TYPE docs_agent_tool_calls_total counter\n");
        for (decision, n) in self.tool_calls.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.push_str(&format!("docs_agent_tool_calls_total{{decision=\"{}\"}} {n}\n", label(decision)));
        }
        out.push_str("# HELP docs_agent_approvals_total Write approvals by outcome.\n# TYPE docs_agent_approvals_total counter\n");
        for (outcome, n) in self.approvals.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.push_str(&format!("docs_agent_approvals_total{{outcome=\"{}\"}} {n}\n", label(outcome)));
        }
        out.push_str(
            "# HELP docs_agent_answers_total Answers by kind: the model's, retrieval-only, or not covered by the docs (a docs gap).\n# TYPE docs_agent_answers_total counter\n",
        );
        for (kind, n) in self.answers.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.push_str(&format!("docs_agent_answers_total{{kind=\"{}\"}} {n}\n", label(kind)));
        }
        out.push_str(&format!(
            "# HELP docs_agent_model_errors_total Failed model calls.\n# TYPE docs_agent_model_errors_total counter\ndocs_agent_model_errors_total {}\n",
            self.model_errors.load(Ordering::Relaxed)
        ));
        out.push_str(
            "# HELP docs_agent_tokens_total Tokens used, by model and principal (as the model server \
             reported them, or estimated where it did not).\n# TYPE docs_agent_tokens_total counter\n",
        );
        let tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        for ((model, principal, collection), (prompt, completion)) in tokens.iter().filter(|((_, _, c), _)| shown(c)) {
            let collection = if several { format!(",collection=\"{}\"", label(collection)) } else { String::new() };
            for (kind, n) in [("prompt", prompt), ("completion", completion)] {
                out.push_str(&format!(
                    "docs_agent_tokens_total{{kind=\"{kind}\",model=\"{}\",principal=\"{}\"{collection}}} {n}\n",
                    label(model),
                    label(principal)
                ));
            }
        }
        out
    }
}

/// A label value, escaped for the text format.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tokens' series are those of the collections the reader is shown: an admin of hr
    /// learns nothing of who uses billing, and one of both sees each series by its collection.
    #[test]
    fn token_series_are_only_those_of_the_collections_shown() {
        let metrics = Metrics::default();
        metrics.tokens("m", "ana", "billing", 10, 2);
        metrics.tokens("m", "hal", "hr", 7, 1);
        let hr = metrics.render(&|c| c == "hr", true);
        assert!(hr.contains("principal=\"hal\",collection=\"hr\"} 7"), "{hr}");
        assert!(!hr.contains("ana") && !hr.contains("billing"), "{hr}");
        let both = metrics.render(&|_| true, true);
        assert!(both.contains("principal=\"ana\",collection=\"billing\"} 10"), "{both}");
        assert!(both.contains("principal=\"hal\",collection=\"hr\"} 1"), "{both}");
    }
}
