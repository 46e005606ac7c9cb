//! The reranker: a cross-encoder that reads the question with each of the search's best
//! sections and says how relevant each is, through `POST {base_url}/rerank`, the endpoint
//! llama.cpp (`llama-server --reranking`), vLLM, Jina and Cohere serve with one shape
//! (`query`, `documents`; `results` of `index` and `relevance_score`); Hugging Face TEI takes
//! `texts` and answers a bare list of `index` and `score`, and is asked so once it refuses the
//! first shape. Synchronous, its requests on a thread of its own ([`super::remote`]).
//!
//! Keyword search (and vectors) find sections that share the question's words; a cross-encoder
//! reads both texts together, so "rotate an API key" finds "Rolling and revoking keys", and a
//! section that shares words with a question it does not answer scores low. That score is what
//! "not covered" weighs ([`crate::config::RerankerConfig::min_relevance`]).
//!
//! A reranker that is slow, down or answers nonsense costs a search its timeout at most: the
//! search keeps its own order and says why ([`Reranked::Failed`]); after a failure the server is
//! not asked again for [`PAUSE`], so a reranker that is down does not cost every question.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::json;

use super::Hit;
use super::remote::RequestThread;
use crate::config::{RerankScores, RerankerConfig};
use crate::model::openai::{Capped, root_cause};

/// After a failure, searches keep their own order for this long before the server is asked again.
pub const PAUSE: Duration = Duration::from_secs(30);
/// Bytes of a reply read at most: a score per section is a few dozen bytes.
const MAX_REPLY_BYTES: usize = 1 << 20;
/// Characters of a server's error reply kept in a message.
const ERROR_BODY_CHARS: usize = 300;
/// Characters of the question sent at most (a pair is read within one window; the section needs
/// most of it).
const MAX_QUERY_CHARS: usize = 500;
/// Characters of a section sent at least, however often the server says a pair is too long.
const MIN_INPUT_CHARS: usize = 100;

/// What the reranker's relevance weighs in a reranked section's score, the rest being its share
/// of the search's best score. Chosen on the dev halves (`cargo bench --bench retrieval`).
pub const WEIGHT: f64 = 0.7;

/// `hits` with the first `scores.len()` of them ordered by `weight` of their relevance and the
/// rest of their share of the best search score among them; each hit's score becomes that
/// (0 to 1), and the hits the reranker did not read follow, scored no higher than the last it did.
/// Relevance is compared within the question, as the reranker's logits spread between the
/// least and the most relevant candidate: a cross-encoder's probabilities crowd near 0 for the
/// long questions of support tickets, where their order still tells.
pub fn reorder(hits: Vec<Hit>, scores: &[f64], weight: f64) -> Vec<Hit> {
    let read = scores.len().min(hits.len());
    let top = hits[..read].iter().map(|h| h.score).fold(f64::MIN_POSITIVE, f64::max);
    let share = |h: &Hit| (h.score / top).clamp(0.0, 1.0);
    let logits: Vec<f64> = scores.iter().map(|p| logit(*p)).collect();
    let (low, high) = logits.iter().fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
    let spread = |x: f64| if high > low { (x - low) / (high - low) } else { 0.5 };
    let mut hits = hits;
    let rest = hits.split_off(read);
    let mut ranked: Vec<(usize, Hit)> = hits.into_iter().enumerate().collect();
    for (i, hit) in ranked.iter_mut() {
        hit.score = weight * spread(logits[*i]) + (1.0 - weight) * share(hit);
    }
    ranked.sort_by(|(a, x), (b, y)| y.score.total_cmp(&x.score).then(a.cmp(b)));
    let floor = ranked.last().map_or(0.0, |(_, h)| h.score);
    let mut out: Vec<Hit> = ranked.into_iter().map(|(_, h)| h).collect();
    out.extend(rest.into_iter().map(|mut h| {
        h.score = ((1.0 - weight) * share(&h)).min(floor);
        h
    }));
    out
}

/// The logit of a probability, bounded (a probability of 0 or 1 is ±36).
fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-16, 1.0 - 1e-16);
    (p / (1.0 - p)).ln()
}

/// What became of a search's reranking: what the trace says.
#[derive(Debug, Clone, PartialEq)]
pub enum Reranked {
    /// No reranker is configured.
    Off,
    /// The best `candidates` sections were scored in `ms` milliseconds.
    Scored {
        /// Sections scored.
        candidates: usize,
        /// How long the scores took.
        ms: u64,
    },
    /// The reranker gave no usable scores: the search kept its own order. Why, scrubbed.
    Failed(String),
}

impl Reranked {
    /// The line the trace shows for a search that was meant to be reranked; none without a
    /// reranker.
    pub fn note(&self) -> Option<String> {
        match self {
            Reranked::Off => None,
            Reranked::Scored { candidates, ms } => Some(format!("reranked the best {candidates} sections in {ms} ms")),
            Reranked::Failed(why) => Some(format!("not reranked, the search's own order was kept: {why}")),
        }
    }
}

/// What the last search's scores did: what `/readyz` reports without asking the server (a
/// probe a minute could cost every readiness check its timeout, and the server a model pass).
#[derive(Debug, Clone, PartialEq)]
pub enum Last {
    /// No search was reranked yet.
    NotAsked,
    /// The scores came back in `ms` milliseconds.
    Answered {
        /// How long they took.
        ms: u64,
    },
    /// They did not: why, scrubbed.
    Failed(String),
}

/// Why no scores came back: written for the operator, naming the server and what to do. Told
/// scrubbed: the server's words can echo the key it was sent.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", crate::guard::scrub(&format!("the reranker at {url}: {detail}")))]
pub struct RerankError {
    /// The URL asked.
    pub url: String,
    /// What went wrong, and what to do about it.
    pub detail: String,
}

/// A configured reranker.
pub struct Reranker {
    settings: RerankerConfig,
    /// `{base_url}/rerank`.
    url: String,
    /// The server refused `documents` and takes `texts` (Hugging Face TEI).
    texts: AtomicBool,
    /// The server's scores are logits: one fell outside 0..1, or TEI was asked for raw scores.
    logits: AtomicBool,
    /// Characters of a section sent: `input_chars`, halved each time the server says a pair is
    /// too long, and kept so (every search would pay the refused attempt again).
    chars: AtomicUsize,
    /// Until when the server is not asked, after it failed.
    paused_until: Mutex<Option<Instant>>,
    /// What the last search's scores did.
    last: Mutex<Last>,
    /// The HTTP client, made on first use.
    http: OnceLock<Result<reqwest::Client, RerankError>>,
    /// The thread the requests run on.
    thread: RequestThread,
    /// The guard the question and every document pass before they are sent.
    outbound: crate::guard::outbound::Outbound,
}

/// One scored document, as every server names its fields.
#[derive(Deserialize)]
struct Scored {
    index: usize,
    #[serde(alias = "score")]
    relevance_score: f64,
}

/// A reply: `results` (llama.cpp, vLLM, Jina, Cohere), `data`, or a bare list (TEI).
#[derive(Deserialize)]
#[serde(untagged)]
enum Reply {
    Results { results: Vec<Scored> },
    Data { data: Vec<Scored> },
    List(Vec<Scored>),
}

/// One failed attempt.
enum Failed {
    /// A pair is longer than the model reads: worth sending again shorter.
    TooLong(String),
    /// The server wants TEI's `texts` in place of `documents`.
    WantsTexts(String),
    /// Anything else.
    Other(String),
}

impl Reranker {
    /// The reranker `settings` name (its `base_url` set).
    pub fn new(settings: &RerankerConfig, outbound: crate::guard::outbound::Outbound) -> Reranker {
        Reranker {
            settings: settings.clone(),
            url: format!("{}/rerank", settings.base_url.trim().trim_end_matches('/')),
            texts: AtomicBool::new(false),
            logits: AtomicBool::new(settings.scores == RerankScores::Logits),
            chars: AtomicUsize::new(settings.input_chars),
            paused_until: Mutex::new(None),
            last: Mutex::new(Last::NotAsked),
            http: OnceLock::new(),
            thread: RequestThread::new("reranker"),
            outbound,
        }
    }

    /// Sections of the search's best that are scored.
    pub fn candidates(&self) -> usize {
        self.settings.candidates.max(1)
    }

    /// The URL asked.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model's name (empty when the server serves one model and none is named).
    pub fn model(&self) -> &str {
        self.settings.model.trim()
    }

    /// The text a section is read as: its heading path, then its text as plain words (no link
    /// targets, markup or tags: they spend the pair's window on nothing the model reads), within
    /// `input_chars` characters, cut at a word.
    pub fn document(&self, hit: &Hit) -> String {
        let text = plain(super::uncut(&hit.excerpt));
        clip_words(&format!("{}. {text}", hit.heading), self.settings.input_chars).to_string()
    }

    /// Each of `documents`' relevance to `query`, from 0 to 1, in their order; within
    /// `timeout_ms`, and at once an error for [`PAUSE`] after one failed.
    pub fn scores(&self, query: &str, documents: &[String]) -> Result<Vec<f64>, RerankError> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let paused = *self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        if paused.is_some_and(|until| Instant::now() < until) {
            return Err(self.error(format!("it failed less than {} s ago and is not asked again yet", PAUSE.as_secs())));
        }
        let started = Instant::now();
        let result = self.ask(query, documents);
        *self.paused_until.lock().unwrap_or_else(|p| p.into_inner()) = result.is_err().then(|| Instant::now() + PAUSE);
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = match &result {
            Ok(_) => Last::Answered { ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX) },
            Err(e) => Last::Failed(e.to_string()),
        };
        result
    }

    /// What the last search's scores did.
    pub fn last(&self) -> Last {
        self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Whether the server answers a one-pair request, and how long it took: what `check`
    /// reports. A failure does not pause searches; an answer ends a pause.
    pub fn probe(&self) -> Result<Duration, RerankError> {
        let started = Instant::now();
        self.ask("is the reranker up", &["The reranker answers this request.".to_string()])?;
        *self.paused_until.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(started.elapsed())
    }

    fn ask(&self, query: &str, documents: &[String]) -> Result<Vec<f64>, RerankError> {
        let http = self.http.get_or_init(|| self.client()).clone()?;
        let deadline = Instant::now() + Duration::from_millis(self.settings.timeout_ms.max(1));
        let query = self.outbound.text(query);
        let query = clip_words(&query, MAX_QUERY_CHARS).to_string();
        // The docs were scrubbed when indexed; the operator's patterns may have grown since.
        let documents: Vec<String> = documents.iter().map(|d| self.outbound.text(d).into_owned()).collect();
        loop {
            let chars = self.chars.load(Ordering::Relaxed);
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.error(format!(
                    "no scores within {} ms (retrieval.reranker.timeout_ms)",
                    self.settings.timeout_ms
                )));
            }
            let texts = self.texts.load(Ordering::Relaxed);
            let sent: Vec<String> = documents.iter().map(|d| clip_words(d, chars).to_string()).collect();
            let body = match (texts, self.model()) {
                (true, _) => json!({"query": query, "texts": sent, "raw_scores": true, "truncate": true}),
                (false, "") => json!({"query": query, "documents": sent, "top_n": sent.len()}),
                (false, model) => json!({"model": model, "query": query, "documents": sent, "top_n": sent.len()}),
            };
            let request = Request { http: http.clone(), url: self.url.clone(), api_key: self.settings.api_key.clone() };
            let answer = self.thread.run(async move { request.once(body, left).await }).map_err(|e| self.error(e))?;
            match answer {
                Ok(reply) => {
                    let raw = scores_of(reply, documents.len()).map_err(|e| self.error(e))?;
                    return Ok(self.relevance(raw, texts));
                }
                Err(Failed::TooLong(_)) if chars > MIN_INPUT_CHARS => {
                    self.chars.store((chars / 2).max(MIN_INPUT_CHARS), Ordering::Relaxed);
                }
                Err(Failed::WantsTexts(_)) if !texts => self.texts.store(true, Ordering::Relaxed),
                Err(Failed::TooLong(detail) | Failed::WantsTexts(detail) | Failed::Other(detail)) => {
                    return Err(self.error(detail));
                }
            }
        }
    }

    /// `raw` scores as relevances from 0 to 1: the sigmoid of logits, probabilities as they
    /// are. With `scores = auto`, a server is taken to send logits from its first score outside
    /// 0..1 on, or when it was asked for TEI's raw scores (`texts`).
    fn relevance(&self, raw: Vec<f64>, texts: bool) -> Vec<f64> {
        let logits = match self.settings.scores {
            RerankScores::Logits => true,
            RerankScores::Probabilities => false,
            RerankScores::Auto => {
                if texts || raw.iter().any(|s| !(0.0..=1.0).contains(s)) {
                    self.logits.store(true, Ordering::Relaxed);
                }
                self.logits.load(Ordering::Relaxed)
            }
        };
        raw.into_iter().map(|s| if logits { 1.0 / (1.0 + (-s).exp()) } else { s }).collect()
    }

    fn client(&self) -> Result<reqwest::Client, RerankError> {
        super::remote::client(Duration::from_millis(self.settings.timeout_ms.max(1))).map_err(|e| self.error(e))
    }

    fn error(&self, detail: String) -> RerankError {
        RerankError { url: self.url.clone(), detail: crate::guard::scrub(&detail).into_owned() }
    }
}

/// One request's needs.
struct Request {
    http: reqwest::Client,
    url: String,
    api_key: Option<String>,
}

impl Request {
    /// One attempt: the reply's text, or what went wrong.
    async fn once(self, body: serde_json::Value, timeout: Duration) -> Result<String, Failed> {
        let mut request = self.http.post(&self.url).timeout(timeout).json(&body);
        if let Some(key) = self.api_key.as_deref().filter(|k| !k.is_empty()) {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            let why = if e.is_timeout() { "no answer in time".to_string() } else { root_cause(&e) };
            Failed::Other(format!(
                "no answer ({why}); is a reranker served there? Set retrieval.reranker.base_url \
                 (DOCS_AGENT_RERANKER_URL), or clear it to search without one"
            ))
        })?;
        let status = response.status();
        let text = crate::model::openai::read_capped(response, MAX_REPLY_BYTES).await.map_err(|e| {
            Failed::Other(match e {
                Capped::TooLarge => format!("the reply is larger than {} MiB", MAX_REPLY_BYTES >> 20),
                Capped::NotUtf8 => "the reply is not UTF-8".into(),
                Capped::Transport(e) => format!("the reply was cut off ({})", root_cause(&e)),
            })
        })?;
        if status.is_success() {
            return Ok(text);
        }
        let lower = text.to_lowercase();
        let detail = format!("HTTP {status}: {}", crate::guard::clip(text.trim(), ERROR_BODY_CHARS));
        let code = status.as_u16();
        if matches!(code, 400 | 413 | 500)
            && ["context", "too large", "too long", "exceed"].iter().any(|w| lower.contains(w))
        {
            return Err(Failed::TooLong(detail));
        }
        if matches!(code, 400 | 422) && lower.contains("texts") {
            return Err(Failed::WantsTexts(detail));
        }
        let hint = match code {
            404 => {
                "; is the path right (the server's base URL, often ending in /v1), and does it serve a reranking model \
                    (llama-server needs --reranking)?"
            }
            401 | 403 => "; set retrieval.reranker.api_key (DOCS_AGENT_RERANKER_API_KEY)",
            _ => "",
        };
        Err(Failed::Other(format!("{detail}{hint}")))
    }
}

/// The score of each of `count` documents from a reply's text, in their order: every document
/// scored once, each score a number.
fn scores_of(reply: String, count: usize) -> Result<Vec<f64>, String> {
    let reply: Reply = serde_json::from_str(&reply)
        .map_err(|e| format!("the reply is not a list of scores ({e}): {}", crate::guard::clip(reply.trim(), 120)))?;
    let scored = match reply {
        Reply::Results { results } => results,
        Reply::Data { data } => data,
        Reply::List(list) => list,
    };
    let mut scores: Vec<Option<f64>> = vec![None; count];
    for s in &scored {
        if !s.relevance_score.is_finite() {
            return Err("the reply holds a score that is not a number".into());
        }
        match scores.get_mut(s.index) {
            Some(slot @ None) => *slot = Some(s.relevance_score),
            Some(Some(_)) => return Err(format!("the reply scores section {} twice", s.index)),
            None => return Err(format!("the reply scores section {}, and {count} were sent", s.index)),
        }
    }
    let scores: Vec<f64> = scores.into_iter().flatten().collect();
    if scores.len() != count {
        return Err(format!("the reply scores {} of the {count} sections sent", scores.len()));
    }
    Ok(scores)
}

/// Markdown as the words a reader sees: text and code, blocks and lines joined by spaces; link
/// targets, images' addresses, HTML and JSX tags left out.
fn plain(markdown: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, TagEnd};
    let mut out = String::with_capacity(markdown.len());
    for event in Parser::new_ext(markdown, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Text(text) | Event::Code(text) => out.push_str(&text),
            Event::SoftBreak
            | Event::HardBreak
            | Event::End(
                TagEnd::Paragraph | TagEnd::Item | TagEnd::Heading(_) | TagEnd::TableCell | TagEnd::CodeBlock,
            ) => out.push(' '),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `text`, cut after the last whole word when one ends in the
/// second half.
fn clip_words(text: &str, max: usize) -> &str {
    let Some((at, _)) = text.char_indices().nth(max) else {
        return text;
    };
    let cut = &text[..at];
    match cut.rfind(char::is_whitespace) {
        Some(space) if space > at / 2 => cut[..space].trim_end(),
        _ => cut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_servers_reply_shape_is_read_in_the_documents_order() {
        let llama =
            r#"{"model":"m","results":[{"index":1,"relevance_score":7.2},{"index":0,"relevance_score":-10.7}]}"#;
        assert_eq!(scores_of(llama.into(), 2).expect("llama.cpp's shape"), [-10.7, 7.2]);
        let tei = r#"[{"index":0,"score":0.25},{"index":1,"score":0.9}]"#;
        assert_eq!(scores_of(tei.into(), 2).expect("TEI's shape"), [0.25, 0.9]);
        let data = r#"{"data":[{"index":0,"relevance_score":0.5}]}"#;
        assert_eq!(scores_of(data.into(), 1).expect("a data list"), [0.5]);
    }

    fn settings(scores: RerankScores) -> RerankerConfig {
        RerankerConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: String::new(),
            api_key: None,
            candidates: 12,
            input_chars: 600,
            timeout_ms: 1_000,
            scores,
            min_relevance: 0.0,
            covers_at: 0.5,
        }
    }

    /// Logits become probabilities, as configured or once the server shows it sends them: a
    /// logit of 0.3 inside 0..1 is then 0.57, not 0.3.
    #[test]
    fn scores_are_read_as_the_server_sends_them() {
        let auto = Reranker::new(&settings(RerankScores::Auto), Default::default());
        assert_eq!(auto.relevance(vec![0.3], false), [0.3], "ambiguous, and nothing said otherwise yet");
        let seen = auto.relevance(vec![7.2, -10.7], false);
        assert!(seen[0] > 0.99 && seen[1] < 0.001, "{seen:?}");
        assert!((auto.relevance(vec![0.3], false)[0] - 0.574).abs() < 0.001, "logits from then on");
        let tei = Reranker::new(&settings(RerankScores::Auto), Default::default());
        assert!((tei.relevance(vec![0.3], true)[0] - 0.574).abs() < 0.001, "TEI was asked for raw scores");
        let logits = Reranker::new(&settings(RerankScores::Logits), Default::default());
        assert!((logits.relevance(vec![0.0], false)[0] - 0.5).abs() < 1e-9);
        let probabilities = Reranker::new(&settings(RerankScores::Probabilities), Default::default());
        assert_eq!(probabilities.relevance(vec![0.3, 0.9], false), [0.3, 0.9]);
    }

    #[test]
    fn a_reply_that_does_not_score_each_section_once_is_refused() {
        let cases = [
            (r#"{"results":[{"index":0,"relevance_score":1.0}]}"#, 2, "scores 1 of the 2"),
            (r#"{"results":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":2}]}"#, 2, "twice"),
            (r#"{"results":[{"index":5,"relevance_score":1}]}"#, 1, "scores section 5"),
            (r#"{"results":"no"}"#, 1, "not a list of scores"),
            (r#"<html>busy</html>"#, 1, "not a list of scores"),
        ];
        for (reply, count, says) in cases {
            let error = scores_of(reply.into(), count).expect_err(reply);
            assert!(error.contains(says), "{reply}: {error}");
        }
    }

    fn hit(anchor: &str, score: f64) -> Hit {
        Hit {
            path: "docs/a.md".into(),
            anchor: anchor.into(),
            heading: anchor.into(),
            score,
            lines: (1, 2),
            excerpt: String::new(),
        }
    }

    #[test]
    fn reranked_sections_are_ordered_by_relevance_and_the_rest_follow() {
        let hits = vec![hit("a", 10.0), hit("b", 8.0), hit("c", 5.0), hit("d", 4.0)];
        let order = |hits: &[Hit]| hits.iter().map(|h| h.anchor.clone()).collect::<Vec<_>>();
        let pure = reorder(hits.clone(), &[0.1, 0.2, 0.9], 1.0);
        assert_eq!(order(&pure), ["c", "b", "a", "d"]);
        assert!(pure[3].score <= pure[2].score, "an unread hit scores no higher than the last read one");
        assert!((pure[0].score - 1.0).abs() < 1e-9 && pure[2].score.abs() < 1e-9, "spread from least to most relevant");
        // Half the weight on the search's own score: a is far ahead by words, c by meaning.
        let mixed = reorder(hits.clone(), &[0.5, 0.2, 0.6], 0.5);
        assert_eq!(order(&mixed), ["a", "c", "b", "d"]);
        // Probabilities near 0 still order by their logits.
        let faint = reorder(hits.clone(), &[1e-6, 1e-4, 1e-5], 1.0);
        assert_eq!(order(&faint), ["b", "c", "a", "d"]);
        assert_eq!(order(&reorder(hits.clone(), &[], 1.0)), ["a", "b", "c", "d"], "nothing scored: the order stays");
        let two = reorder(hits[..2].to_vec(), &[0.1, 0.9, 0.5], 1.0);
        assert_eq!(order(&two), ["b", "a"], "more scores than hits: the extra ones are left");
    }

    #[test]
    fn a_section_is_read_as_plain_words() {
        let markdown = "Go to [**Settings**](https://x.example/s) and <Note>check</Note> the `Type`.\n\n- one\n- two\n\n![logo](a.png)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        assert_eq!(plain(markdown), "Go to Settings and check the Type. one two logo a b 1 2");
    }

    #[test]
    fn a_section_is_cut_at_a_word() {
        assert_eq!(clip_words("refunds are possible", 14), "refunds are");
        assert_eq!(clip_words("short", 10), "short");
        assert_eq!(clip_words("ééééé", 2), "éé", "characters, not bytes");
    }
}
