//! The embedding client of hybrid search: texts to unit vectors through an OpenAI-compatible
//! `POST {base_url}/embeddings` (Ollama, llama.cpp's `llama-server --embedding`, vLLM, OpenAI).
//! Synchronous, its requests on a thread of its own ([`super::remote`]).

use std::sync::OnceLock;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::config::EmbeddingsConfig;
use crate::model::openai::{Capped, root_cause};

/// Characters of a server's error reply kept in a message.
const ERROR_BODY_CHARS: usize = 300;
/// Bytes of a reply read at most: a batch of 32 vectors of 4,096 dimensions written as JSON is
/// a few MB; a server that sends more is refused before it fills memory.
const MAX_REPLY_BYTES: usize = 64 << 20;
/// Dimensions of a vector taken at most (the largest embedding models have 4,096).
const MAX_DIMENSIONS: usize = 16_384;
/// Seconds a question's vector may take at most, whatever `timeout_secs` allows a batch: a
/// search waits for it.
const QUERY_TIMEOUT_SECS: u64 = 5;
/// After a question's vector failed, searches use keywords alone for this long before the
/// server is asked again, so a hung server does not hold every search for its timeout.
const QUERY_PAUSE: Duration = Duration::from_secs(30);
/// Characters of a text sent at least, however often the server says it is too long.
const MIN_INPUT_CHARS: usize = 64;
/// First pause before a retry; doubled each time.
const BACKOFF_START: Duration = Duration::from_millis(200);

/// Why no vectors came back: written for the operator, naming the server and what to do. Told
/// scrubbed: the server's words can echo the key it was sent.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", crate::guard::scrub(&format!("embeddings from {url}: {detail}")))]
pub struct EmbedError {
    /// The URL asked.
    pub url: String,
    /// What went wrong, and what to do about it.
    pub detail: String,
    /// The server refused an input as longer than the model reads: sent again shorter.
    pub too_long: bool,
    /// The server could not answer now (unreachable, 429, 5xx, timed out): the same request may
    /// pass later. Otherwise it refused what was sent.
    pub transient: bool,
}

/// What one request is for: the prefix the model was trained with differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A question.
    Query,
    /// A section of the docs.
    Passage,
}

/// The prefixes (question, section) that models known by name were trained with, as their model
/// cards say: a name that holds the key (`nomic-embed-text:v1.5`, `embeddinggemma:300m`) gets
/// them unless `[retrieval.embeddings]` sets its own. Models not named here get none.
pub const KNOWN_PREFIXES: &[(&str, &str, &str)] = &[
    ("nomic-embed-text", "search_query: ", "search_document: "),
    ("embeddinggemma", "task: search result | query: ", "title: none | text: "),
    ("e5", "query: ", "passage: "),
    ("bge-m3", "", ""),
    ("bge-", "Represent this sentence for searching relevant passages: ", ""),
    ("mxbai-embed", "Represent this sentence for searching relevant passages: ", ""),
    ("snowflake-arctic-embed", "Represent this sentence for searching relevant passages: ", ""),
];

/// The question and section prefixes of `model` as [`KNOWN_PREFIXES`] has them, or none.
pub fn known_prefixes(model: &str) -> (&'static str, &'static str) {
    let name = model.to_lowercase();
    KNOWN_PREFIXES.iter().find(|(key, _, _)| name.contains(key)).map_or(("", ""), |(_, q, p)| (*q, *p))
}

/// A configured embedding model.
pub struct Embedder {
    settings: EmbeddingsConfig,
    /// What is put before a question, and before a section.
    prefixes: (String, String),
    /// `{base_url}/embeddings`.
    url: String,
    /// Bearer key, if any.
    api_key: Option<String>,
    /// Retries of a section batch after the first attempt (a question's vector is asked once).
    retries: u32,
    /// The guard every text passes before it is sent.
    outbound: crate::guard::outbound::Outbound,
    /// Until when a question's vector is not asked for, after one failed.
    paused_until: std::sync::Mutex<Option<std::time::Instant>>,
    /// What every request shares, made on first use.
    request: OnceLock<Result<Request, EmbedError>>,
    /// The thread the requests run on.
    thread: super::remote::RequestThread,
}

/// What an OpenAI-compatible server answers.
#[derive(Deserialize)]
struct Reply {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Embedder {
    /// The model `settings` names on `base_url` (already resolved: the embeddings' own, or the
    /// model server's), sending `api_key`; a section batch is tried `retries` more times. Every
    /// text it sends, a question or a section, passes `outbound` first.
    pub fn new(
        settings: &EmbeddingsConfig,
        base_url: &str,
        api_key: Option<&str>,
        retries: u32,
        outbound: crate::guard::outbound::Outbound,
    ) -> Embedder {
        let known = known_prefixes(&settings.model);
        let prefixes = (
            settings.query_prefix.clone().unwrap_or_else(|| known.0.to_string()),
            settings.passage_prefix.clone().unwrap_or_else(|| known.1.to_string()),
        );
        Embedder {
            settings: settings.clone(),
            prefixes,
            url: format!("{}/embeddings", base_url.trim_end_matches('/')),
            api_key: api_key.filter(|k| !k.is_empty()).map(str::to_string),
            retries,
            outbound,
            paused_until: std::sync::Mutex::new(None),
            request: OnceLock::new(),
            thread: super::remote::RequestThread::new("embeddings"),
        }
    }

    /// What the vectors depend on besides the text: vectors made under another identity are
    /// never compared with these (a model change embeds everything again).
    pub fn identity(&self) -> String {
        let s = &self.settings;
        format!(
            "{} | dimensions {} | query {:?} | passage {:?} | {} chars",
            s.model.trim(),
            s.dimensions,
            self.prefixes.0,
            self.prefixes.1,
            s.input_chars
        )
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        self.settings.model.trim()
    }

    /// How search fuses the keyword and vector lists: `retrieval.embeddings.weight` on the
    /// vectors' scaled scores.
    pub fn fusion(&self) -> super::rank::Fusion {
        super::rank::Fusion::Weighted { vector_weight: self.settings.weight.clamp(0.0, 1.0) }
    }

    /// Sections sent per request.
    pub fn batch(&self) -> usize {
        self.settings.batch.max(1)
    }

    /// The vector of a question, within [`QUERY_TIMEOUT_SECS`]; for [`QUERY_PAUSE`] after one
    /// failed, an error at once (searches use keywords meanwhile).
    pub fn query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let paused = *self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        if paused.is_some_and(|until| std::time::Instant::now() < until) {
            return Err(self.error(format!(
                "a question's vector failed less than {} s ago; not asked again yet",
                QUERY_PAUSE.as_secs()
            )));
        }
        let result = self.embed(&[text], Role::Query, 0).and_then(|mut v| {
            v.pop().ok_or_else(|| self.error("the server returned no vector for the question".into()))
        });
        *self.paused_until.lock().unwrap_or_else(|p| p.into_inner()) =
            result.is_err().then(|| std::time::Instant::now() + QUERY_PAUSE);
        result
    }

    /// The vectors of sections, in order (at most [`Embedder::batch`] per request is the
    /// caller's to keep).
    pub fn passages(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed(texts, Role::Passage, self.retries)
    }

    fn embed(&self, texts: &[&str], role: Role, retries: u32) -> Result<Vec<Vec<f32>>, EmbedError> {
        let prefix = match role {
            Role::Query => &self.prefixes.0,
            Role::Passage => &self.prefixes.1,
        };
        let count = texts.len();
        let request = self.request.get_or_init(|| self.start()).clone()?;
        let batch = Duration::from_secs(self.settings.timeout_secs.max(1));
        let timeout = match role {
            Role::Query => batch.min(Duration::from_secs(QUERY_TIMEOUT_SECS)),
            Role::Passage => batch,
        };
        // A server that refuses an input as too long for the model (llama.cpp does; Ollama cuts
        // it itself) is asked again with every text cut to half, down to MIN_INPUT_CHARS.
        let mut chars = self.settings.input_chars;
        let vectors = loop {
            let clipped: Vec<String> =
                texts.iter().map(|t| format!("{prefix}{}", clip(&self.outbound.text(t), chars))).collect();
            let request = request.clone();
            match self
                .thread
                .run(async move { request.send(&clipped, retries, timeout).await })
                .map_err(|e| self.error(e))?
            {
                Err(e) if e.too_long && chars > MIN_INPUT_CHARS => chars = (chars / 2).max(MIN_INPUT_CHARS),
                result => break result?,
            }
        };
        if vectors.len() != count {
            return Err(self.error(format!("the server returned {} vectors for {count} texts", vectors.len())));
        }
        vectors.into_iter().map(|v| self.shaped(v)).collect()
    }

    /// `vector` cut to the configured dimensions and scaled to length 1, so a dot product is
    /// the cosine.
    fn shaped(&self, mut vector: Vec<f32>) -> Result<Vec<f32>, EmbedError> {
        let want = self.settings.dimensions;
        if want > 0 {
            if vector.len() < want {
                return Err(self.error(format!(
                    "the model returned vectors of {} dimensions, fewer than retrieval.embeddings.dimensions ({want}); \
                     set it to {} or 0",
                    vector.len(),
                    vector.len()
                )));
            }
            vector.truncate(want);
        }
        if vector.len() > MAX_DIMENSIONS {
            return Err(self.error(format!(
                "the server returned a vector of {} dimensions, more than {MAX_DIMENSIONS}; is it an embedding model?",
                vector.len()
            )));
        }
        if vector.is_empty() || vector.iter().any(|x| !x.is_finite()) {
            return Err(self.error("the server returned an empty vector or one that is not numbers".into()));
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        Ok(vector)
    }

    fn error(&self, detail: String) -> EmbedError {
        EmbedError {
            url: self.url.clone(),
            detail: crate::guard::scrub(&detail).into_owned(),
            too_long: false,
            transient: false,
        }
    }

    /// What every request shares: the HTTP client, where it goes, what it sends.
    fn start(&self) -> Result<Request, EmbedError> {
        let http =
            super::remote::client(Duration::from_secs(self.settings.timeout_secs.max(1))).map_err(|e| self.error(e))?;
        Ok(Request { http, url: self.url.clone(), model: self.model().to_string(), api_key: self.api_key.clone() })
    }
}

/// What every request of one embedder shares.
#[derive(Clone)]
struct Request {
    http: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
}

impl Request {
    /// Asks for the vectors of `texts`, retrying a connect error, a 429 or a 5xx `retries` times.
    async fn send(&self, texts: &[String], retries: u32, timeout: Duration) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut pause = BACKOFF_START;
        let mut attempt = 0;
        loop {
            match self.once(texts, timeout).await {
                Err(Failed { retry: true, detail, .. }) if attempt < retries => {
                    tracing::debug!("embeddings: {detail}; retrying in {pause:?}");
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                    attempt += 1;
                }
                Err(Failed { detail, too_long, retry }) => {
                    return Err(EmbedError {
                        url: self.url.clone(),
                        detail: crate::guard::scrub(&detail).into_owned(),
                        too_long,
                        transient: retry,
                    });
                }
                Ok(vectors) => return Ok(vectors),
            }
        }
    }

    /// One attempt: the vectors, or what went wrong.
    async fn once(&self, texts: &[String], timeout: Duration) -> Result<Vec<Vec<f32>>, Failed> {
        let mut request =
            self.http.post(&self.url).timeout(timeout).json(&json!({"model": self.model, "input": texts}));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            Failed::retry(format!(
                "no answer ({}); is the embedding model served there? Set retrieval.embeddings.base_url, or \
                 clear retrieval.embeddings.model to search by keywords only",
                root_cause(&e)
            ))
        })?;
        let status = response.status();
        let body = read_capped(response).await?;
        if !status.is_success() {
            let lower = body.to_lowercase();
            let too_long = matches!(status.as_u16(), 400 | 413 | 500)
                && ["context", "too large", "too long", "exceed"].iter().any(|w| lower.contains(w));
            let retry = !too_long && (status.as_u16() == 429 || status.is_server_error());
            let hint = if status.as_u16() == 404 {
                format!("; does the server have the model `{}` (Ollama: `ollama pull {}`)?", self.model, self.model)
            } else {
                String::new()
            };
            let detail = format!("HTTP {status}: {}{hint}", crate::guard::clip(body.trim(), ERROR_BODY_CHARS));
            return Err(Failed { retry, too_long, detail });
        }
        let mut reply: Reply = serde_json::from_str(&body).map_err(|e| Failed {
            retry: false,
            too_long: false,
            detail: format!(
                "the reply is not an OpenAI-style embeddings list ({e}): {}",
                crate::guard::clip(&body, 120)
            ),
        })?;
        // Servers may answer out of order; `index` says whose vector each is.
        if reply.data.iter().all(|d| d.index.is_some()) {
            reply.data.sort_by_key(|d| d.index);
        }
        Ok(reply.data.into_iter().map(|d| d.embedding).collect())
    }
}

/// The reply's body as text, refused past [`MAX_REPLY_BYTES`] before it fills memory.
async fn read_capped(response: reqwest::Response) -> Result<String, Failed> {
    let refused = |detail| Failed { retry: false, too_long: false, detail };
    crate::model::openai::read_capped(response, MAX_REPLY_BYTES).await.map_err(|e| match e {
        Capped::TooLarge => refused(format!("the reply is larger than {} MiB", MAX_REPLY_BYTES >> 20)),
        Capped::NotUtf8 => refused("the reply is not UTF-8".into()),
        Capped::Transport(e) => Failed::retry(format!("the reply was cut off ({})", root_cause(&e))),
    })
}

/// One failed attempt.
struct Failed {
    /// Worth trying again as it was (a connect error, a 429, a 5xx).
    retry: bool,
    /// The input is longer than the model reads.
    too_long: bool,
    detail: String,
}

impl Failed {
    fn retry(detail: String) -> Failed {
        Failed { retry: true, too_long: false, detail }
    }
}

/// At most `max` characters of `text`.
fn clip(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_known_by_name_gets_its_prefixes_unless_they_are_set() {
        assert_eq!(known_prefixes("nomic-embed-text:v1.5"), ("search_query: ", "search_document: "));
        assert_eq!(known_prefixes("multilingual-e5-small"), ("query: ", "passage: "));
        assert_eq!(known_prefixes("all-minilm"), ("", ""));
        let mut settings = EmbeddingsConfig {
            model: "embeddinggemma:300m".into(),
            base_url: String::new(),
            dimensions: 0,
            batch: 8,
            api_key: None,
            query_prefix: None,
            passage_prefix: None,
            input_chars: 100,
            timeout_secs: 5,
            weight: 0.5,
        };
        let known = Embedder::new(&settings, "http://127.0.0.1:1/v1", None, 0, Default::default());
        assert_eq!(known.prefixes.0, "task: search result | query: ");
        settings.query_prefix = Some(String::new());
        let set = Embedder::new(&settings, "http://127.0.0.1:1/v1", None, 0, Default::default());
        assert_eq!((set.prefixes.0.as_str(), set.prefixes.1.as_str()), ("", "title: none | text: "));
        assert_ne!(known.identity(), set.identity(), "another prefix is another identity");
    }

    #[test]
    fn a_text_is_clipped_by_characters_not_bytes() {
        assert_eq!(clip("héllo", 2), "hé");
        assert_eq!(clip("hi", 10), "hi");
    }
}
