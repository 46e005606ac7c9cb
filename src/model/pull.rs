//! `docs-agent pull`: asks Ollama to pull the configured model through its native API
//! (`POST /api/pull`, newline-delimited JSON progress), and reports the progress as it arrives.
//! Only Ollama has this API; another OpenAI-compatible server is named as such.

use std::time::Duration;

use serde::Deserialize;

use crate::config::LlmConfig;

/// How long the connection may take to open; the pull itself may take as long as it needs.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One progress report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// A step: `pulling manifest`, `verifying sha256 digest`, `success`...
    Status(String),
    /// Bytes of a layer: `completed` of `total`.
    Bytes {
        /// What is being downloaded (`pulling 6a0746a1ec1a`).
        status: String,
        /// Bytes done.
        completed: u64,
        /// Bytes in all.
        total: u64,
    },
}

/// Why a pull failed, written for the person who runs it.
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// Nothing answered.
    #[error(
        "cannot reach the model server at {url} ({detail}); start it with `ollama serve`, or set llm.base_url (LLM_BASE_URL)"
    )]
    Unreachable {
        /// Where it tried.
        url: String,
        /// The cause.
        detail: String,
    },
    /// The server has no pull API.
    #[error(
        "the server at {url} has no /api/pull (HTTP {status}): it is not Ollama; pull `{model}` with that server's own tool"
    )]
    NotOllama {
        /// Where it asked.
        url: String,
        /// The status it answered.
        status: u16,
        /// The model.
        model: String,
    },
    /// Ollama refused the model itself: a name it cannot find, or a request it rejects.
    #[error("ollama cannot pull `{model}`: {detail}; check the name (llm.model, LLM_MODEL)")]
    Rejected {
        /// The model.
        model: String,
        /// What Ollama said.
        detail: String,
    },
    /// Ollama failed the pull.
    #[error("ollama could not pull `{model}`: {detail}")]
    Failed {
        /// The model.
        model: String,
        /// What Ollama said.
        detail: String,
    },
}

/// One line of Ollama's progress stream.
#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    status: String,
    #[serde(default)]
    total: Option<u64>,
    #[serde(default)]
    completed: Option<u64>,
    #[serde(default)]
    error: Option<String>,
}

impl Progress {
    /// One line for a person: the step, or `status: 40% of 4.0 MB`; `tenths` rounds the
    /// percentage down to a tenth (a line per tenth where lines cannot be redrawn).
    pub fn describe(&self, tenths: bool) -> String {
        match self {
            Progress::Status(status) => status.clone(),
            Progress::Bytes { status, completed, total } => {
                let percent = completed.saturating_mul(100) / (*total).max(1);
                let shown = if tenths { percent / 10 * 10 } else { percent };
                format!("{status}: {shown}% of {:.1} MB", *total as f64 / 1e6)
            }
        }
    }
}

/// What the model server says of `llm.model`, before it is asked (`llm.pull = missing`).
#[derive(Debug)]
pub enum Presence {
    /// Nothing to pull: the model is built in, `llm.pull = never`, or the server lists it (or
    /// gave an answer a pull cannot mend, left for the question to meet).
    Present,
    /// The server answered that it lacks the model: pull it.
    Missing,
    /// The server could not be asked: it did not answer, timed out or failed (5xx). It may
    /// come up later.
    Unsure(super::ModelError),
}

/// Whether `llm.model` should be pulled before it is asked (`llm.pull = missing`): it is not
/// built in, and the server says it lacks it (`GET /models`).
pub async fn presence(llm: &LlmConfig) -> Result<Presence, super::SetupError> {
    use super::ModelError;
    if llm.pull == crate::config::Pull::Never || super::builtin::Builtin::from_name(&llm.model).is_some() {
        return Ok(Presence::Present);
    }
    let model = super::Model::from_config(llm, 1)?;
    Ok(match model.ready().await {
        // Only Ollama can pull; another server's list may just name the model differently.
        Err(ModelError::UnknownModel { .. }) if is_ollama(llm).await => Presence::Missing,
        Err(e @ (ModelError::Unreachable { .. } | ModelError::Timeout { .. })) => Presence::Unsure(e),
        Err(e @ ModelError::Http { status: 500.., .. }) => Presence::Unsure(e),
        Ok(_) | Err(_) => Presence::Present,
    })
}

/// Whether the server at `llm.base_url` is Ollama: its own API answers `GET /api/version`
/// with a version. Any other answer, or none, is "no", and nothing is pulled.
async fn is_ollama(llm: &LlmConfig) -> bool {
    #[derive(Deserialize)]
    struct Version {
        version: String,
    }
    let Ok(http) = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).timeout(CONNECT_TIMEOUT).build() else {
        return false;
    };
    let mut request = http.get(format!("{}/api/version", api_root(&llm.base_url)));
    if let Some(key) = &llm.api_key {
        request = request.bearer_auth(key);
    }
    match request.send().await {
        Ok(reply) if reply.status().is_success() => reply.json::<Version>().await.is_ok_and(|v| !v.version.is_empty()),
        _ => false,
    }
}

/// Whether a failed pull may succeed if tried again later: the server was down or the
/// download failed. Not when the server is not Ollama, or refused the model itself.
pub fn worth_retrying(error: &PullError) -> bool {
    !matches!(error, PullError::NotOllama { .. } | PullError::Rejected { .. })
}

/// Whether what Ollama said means the model itself cannot be had (a name that does not exist),
/// so asking again would not help.
fn is_rejection(status: Option<reqwest::StatusCode>, detail: &str) -> bool {
    status.is_some_and(|s| s.is_client_error()) || detail.contains("does not exist") || detail.contains("not found")
}

/// Ollama's own API root for an OpenAI-compatible base URL (`http://h:11434/v1` → `http://h:11434`).
pub fn api_root(base_url: &str) -> &str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// Pulls `llm.model`, telling `on` each progress line; ends when Ollama says `success`.
pub async fn pull(llm: &LlmConfig, mut on: impl FnMut(Progress)) -> Result<(), PullError> {
    let url = format!("{}/api/pull", api_root(&llm.base_url));
    let unreachable = |e: reqwest::Error| PullError::Unreachable { url: url.clone(), detail: e.to_string() };
    let http = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).build().map_err(unreachable)?;
    let mut request = http.post(&url).json(&serde_json::json!({ "model": llm.model, "stream": true }));
    if let Some(key) = &llm.api_key {
        request = request.bearer_auth(key);
    }
    let mut response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return Err(PullError::NotOllama { url, status: status.as_u16(), model: llm.model.clone() });
    }
    let failed =
        |detail: String| PullError::Failed { model: llm.model.clone(), detail: crate::guard::clip(&detail, 500) };
    let said = |status: Option<reqwest::StatusCode>, detail: String| {
        let model = llm.model.clone();
        let shown = crate::guard::clip(&detail, 500);
        if is_rejection(status, &detail) {
            PullError::Rejected { model, detail: shown }
        } else {
            PullError::Failed { model, detail: shown }
        }
    };
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        let detail = serde_json::from_str::<Line>(&body).ok().and_then(|l| l.error).unwrap_or(body);
        return Err(said(Some(status), format!("HTTP {status}: {detail}")));
    }
    let mut pending: Vec<u8> = Vec::new();
    let mut succeeded = false;
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(format!("the progress stream broke: {e}")))? {
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            succeeded |= report(&line, &mut on).map_err(|e| said(None, e.to_string()))?;
        }
    }
    if !pending.is_empty() {
        succeeded |= report(&pending, &mut on).map_err(|e| said(None, e.to_string()))?;
    }
    if succeeded { Ok(()) } else { Err(failed("the progress stream ended before `success`".into())) }
}

/// A progress line that says the pull failed, or that cannot be read.
#[derive(Debug, PartialEq, thiserror::Error)]
enum LineError {
    /// Not a JSON progress line.
    #[error("unreadable progress line ({0})")]
    Unreadable(String),
    /// Ollama's `error` line, as it said it.
    #[error("{0}")]
    Said(String),
}

/// Tells `on` what one line says; true for `success`, an error for an `error` line.
fn report(line: &[u8], on: &mut impl FnMut(Progress)) -> Result<bool, LineError> {
    let text = String::from_utf8_lossy(line);
    if text.trim().is_empty() {
        return Ok(false);
    }
    let line: Line = serde_json::from_str(text.trim()).map_err(|e| LineError::Unreadable(e.to_string()))?;
    if let Some(error) = line.error {
        return Err(LineError::Said(error));
    }
    let status = crate::guard::clip(&line.status, 120);
    let success = status == "success";
    match (line.completed, line.total) {
        (Some(completed), Some(total)) if total > 0 => on(Progress::Bytes { status, completed, total }),
        _ => on(Progress::Status(status)),
    }
    Ok(success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_root_is_the_base_url_without_v1() {
        for (base, root) in [
            ("http://localhost:11434/v1", "http://localhost:11434"),
            ("http://ollama:11434/v1/", "http://ollama:11434"),
            ("http://h:11434", "http://h:11434"),
        ] {
            assert_eq!(api_root(base), root);
        }
    }

    #[test]
    fn progress_lines_are_read_and_errors_named() {
        let mut seen = Vec::new();
        let mut on = |p: Progress| seen.push(p);
        assert_eq!(report(br#"{"status":"pulling manifest"}"#, &mut on), Ok(false));
        assert_eq!(
            report(br#"{"status":"pulling 6a07","digest":"sha256:6a07","total":200,"completed":50}"#, &mut on),
            Ok(false)
        );
        assert_eq!(report(br#"{"status":"success"}"#, &mut on), Ok(true));
        assert_eq!(
            report(br#"{"error":"pull model manifest: file does not exist"}"#, &mut on),
            Err(LineError::Said("pull model manifest: file does not exist".into()))
        );
        let unreadable = report(b"<html>", &mut on).expect_err("not JSON");
        assert!(matches!(unreadable, LineError::Unreadable(_)), "{unreadable:?}");
        assert_eq!(unreadable.to_string(), "unreadable progress line (expected value at line 1 column 1)");
        assert_eq!(LineError::Said("no space left".into()).to_string(), "no space left");
        assert_eq!(
            seen,
            [
                Progress::Status("pulling manifest".into()),
                Progress::Bytes { status: "pulling 6a07".into(), completed: 50, total: 200 },
                Progress::Status("success".into()),
            ]
        );
    }
}
