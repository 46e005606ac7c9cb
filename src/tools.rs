//! The closed set of tools the model may ask for, their JSON schemas, and their execution. Every
//! result handed back is redacted, and retrieved text is fenced as untrusted data. A bad call is
//! an `ERROR: ...` text for the model, a refusal a `DENIED: ...` text: never a crash.

use std::time::Instant;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::guard::fence::{self, Fenced};
use crate::guard::{self, redact};
use crate::index::Index;
use crate::index::evidence::Budget;
use crate::model::ToolSpec;
use crate::skills::Skills;
use crate::workspace::approval::{Approved, Approver};
use crate::workspace::policy::{self, Denied, ModelPath};
use crate::workspace::{FileError, Workspace};

/// Largest file `read_file` opens.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;
/// Largest note `write_file` accepts.
const MAX_WRITE_BYTES: usize = 64 * 1024;
/// Lines `read_file` returns when the model gives no limit.
const DEFAULT_READ_LINES: usize = 200;
/// What retrieve-first says when nothing matched.
const NO_HITS_HINT: &str = "Search with other words, or say the docs do not cover it.";
/// How a search that found nothing begins (`report gaps` counts such turns).
pub const NO_HITS: &str = "No section of the docs matched.";
/// Longest argument text parsed at all.
const MAX_ARGUMENT_BYTES: usize = 128 * 1024;

/// The tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// Ranked sections of docs/ for a query.
    SearchDocs,
    /// Lines of a workspace file.
    ReadFile,
    /// A note under notes/, with approval.
    WriteFile,
    /// The body of a skill.
    LoadSkill,
}

/// Every tool, in the order offered to the model.
pub const ALL: [Tool; 4] = [Tool::SearchDocs, Tool::ReadFile, Tool::WriteFile, Tool::LoadSkill];

impl Tool {
    /// The tool called `name`, if it exists.
    pub fn from_name(name: &str) -> Option<Tool> {
        ALL.into_iter().find(|t| t.name() == name)
    }

    /// The name the model calls it by.
    pub fn name(self) -> &'static str {
        match self {
            Tool::SearchDocs => "search_docs",
            Tool::ReadFile => "read_file",
            Tool::WriteFile => "write_file",
            Tool::LoadSkill => "load_skill",
        }
    }

    /// Name, description and argument schema, as offered to the model.
    pub fn spec(self) -> ToolSpec {
        // Short on purpose: the schemas are in every request's prompt. Unknown fields are
        // refused when the arguments are parsed, whatever the schema says.
        let (description, parameters) = match self {
            Tool::SearchDocs => (
                "Search the docs; returns sections, each with its path#anchor.",
                json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
            ),
            Tool::ReadFile => (
                "Read lines of a workspace file (docs/, notes/, skills/, AGENTS.md).",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}
                }, "required": ["path"]}),
            ),
            Tool::WriteFile => (
                "Write a note under notes/; a person must approve it.",
                json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}),
            ),
            Tool::LoadSkill => (
                "Load a skill's instructions by name.",
                json!({"type": "object", "properties": {"skill": {"type": "string"}}, "required": ["skill"]}),
            ),
        };
        ToolSpec { name: self.name(), description, parameters }
    }
}

/// The names of all tools.
pub fn names() -> Vec<&'static str> {
    ALL.into_iter().map(Tool::name).collect()
}

/// The specs of all tools.
pub fn specs() -> Vec<ToolSpec> {
    ALL.into_iter().map(Tool::spec).collect()
}

/// Estimated tokens the specs add to every request (bytes / 4, as `compact::tokens` counts).
pub fn specs_tokens(specs: &[ToolSpec]) -> u64 {
    specs.iter().map(|s| (s.name.len() + s.description.len() + s.parameters.to_string().len()) as u64 / 4).sum()
}

/// What the harness decided about one call: in the trace, the log and the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run, and it worked.
    Allowed,
    /// Refused by policy or by the approver.
    Denied,
    /// Not run or failed: unknown tool, bad arguments, I/O error.
    Error,
}

impl Decision {
    /// The word in the trace and the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Denied => "denied",
            Decision::Error => "error",
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of one call.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// What the model is shown (already redacted).
    pub text: String,
    /// What was decided.
    pub decision: Decision,
    /// What the harness says of how the call ran, for the trace only (the reranker's scores, or
    /// why a search kept its own order); never shown to the model nor logged.
    pub note: Option<String>,
}

impl Outcome {
    /// A success.
    pub fn allowed(text: String) -> Outcome {
        Outcome { text: guard::scrub(&text).into_owned(), decision: Decision::Allowed, note: None }
    }
    /// A refusal: `DENIED: {reason}`.
    pub fn denied(reason: impl std::fmt::Display) -> Outcome {
        Outcome {
            text: guard::scrub(&format!("DENIED: {reason}")).into_owned(),
            decision: Decision::Denied,
            note: None,
        }
    }
    /// A failure: `ERROR: {message}`.
    pub fn error(message: impl std::fmt::Display) -> Outcome {
        Outcome { text: guard::scrub(&format!("ERROR: {message}")).into_owned(), decision: Decision::Error, note: None }
    }

    /// This outcome with `note` for the trace (scrubbed).
    fn noted(mut self, note: Option<String>) -> Outcome {
        self.note = note.map(|n| guard::scrub(&n).into_owned());
        self
    }
}

/// A write that passed the path policy and waits for a decision.
#[derive(Debug, Clone)]
pub struct WriteRequest {
    /// Where, under notes/.
    pub path: ModelPath,
    /// What (scrubbed).
    pub content: String,
}

/// A call after the harness looked at it.
#[derive(Debug)]
pub enum Planned {
    /// It ran, or was refused: here is what the model is shown.
    Done(Outcome),
    /// A valid write: it needs an [`Approved`] before [`Toolbox::commit_write`].
    Write(WriteRequest),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillArgs {
    skill: String,
}

/// Everything a tool may touch, borrowed for one run.
pub struct Toolbox<'a> {
    /// The workspace's area handles.
    pub workspace: &'a Workspace,
    /// The docs index: one generation, for the whole turn.
    pub index: std::sync::Arc<Index>,
    /// The valid skills.
    pub skills: &'a Skills,
    /// Sections per search.
    pub top_k: usize,
    /// Bytes of a result handed to the model.
    pub max_result_bytes: usize,
}

impl Toolbox<'_> {
    /// Runs one call by name with its raw JSON arguments, `approver` deciding a write at once
    /// (a session's turn instead plans the call and decides writes through its log); never
    /// panics on model input.
    pub fn run(&self, approver: Approver, name: &str, arguments: &str) -> (Outcome, u128) {
        let started = Instant::now();
        let outcome = match self.plan(name, arguments) {
            Planned::Done(outcome) => outcome,
            Planned::Write(request) => match approver.decide(&request.path, &request.content) {
                Ok(approved) => self.commit_write(&request, approved),
                Err(denied) => Outcome::denied(denied),
            },
        };
        (outcome, started.elapsed().as_millis())
    }

    /// Runs a reading call, or checks a write and hands it back for a decision.
    pub fn plan(&self, name: &str, arguments: &str) -> Planned {
        let Some(tool) = Tool::from_name(name) else {
            let known: Vec<&str> = ALL.iter().map(|t| t.name()).collect();
            return Planned::Done(Outcome::error(format!(
                "unknown tool `{}`; the tools are {}",
                guard::clip(name, 64),
                known.join(", ")
            )));
        };
        if arguments.len() > MAX_ARGUMENT_BYTES {
            return Planned::Done(Outcome::error(format!(
                "arguments are {} bytes; the limit is {MAX_ARGUMENT_BYTES}",
                arguments.len()
            )));
        }
        let arguments = if arguments.trim().is_empty() { "{}" } else { arguments };
        let done = match tool {
            Tool::SearchDocs => parse(tool, arguments).map_or_else(|e| e, |a: SearchArgs| self.search(&a.query)),
            Tool::ReadFile => parse(tool, arguments).map_or_else(|e| e, |a: ReadArgs| self.read(&a)),
            Tool::WriteFile => {
                return match parse(tool, arguments).and_then(|a: WriteArgs| check_write(&a)) {
                    Ok(request) => Planned::Write(request),
                    Err(outcome) => Planned::Done(outcome),
                };
            }
            Tool::LoadSkill => parse(tool, arguments).map_or_else(|e| e, |a: SkillArgs| self.load_skill(&a.skill)),
        };
        Planned::Done(done)
    }

    /// Checks a `write_file` call's arguments: the request a decision is about.
    pub fn plan_write(arguments: &str) -> Result<WriteRequest, Outcome> {
        let arguments = if arguments.trim().is_empty() { "{}" } else { arguments };
        parse(Tool::WriteFile, arguments).and_then(|a: WriteArgs| check_write(&a))
    }

    /// Does an approved write.
    pub fn commit_write(&self, request: &WriteRequest, approved: Approved) -> Outcome {
        match self.workspace.write_note(&request.path, &request.content, approved) {
            Ok(bytes) => Outcome::allowed(format!("OK: wrote {bytes} bytes to {}", request.path)),
            Err(e) => file_error(e),
        }
    }

    /// True when the note already holds exactly this content: a write that completed before a
    /// crash, which must not be done again.
    pub fn already_written(&self, request: &WriteRequest) -> bool {
        self.workspace.read_text(&request.path, MAX_WRITE_BYTES as u64 + 1).is_ok_and(|text| text == request.content)
    }

    fn search(&self, query: &str) -> Outcome {
        let hits = match self.index.search(query, self.top_k) {
            Ok(hits) => hits,
            Err(e) => return Outcome::error(e),
        };
        Outcome::allowed(search_result(&hits, self.max_result_bytes))
    }

    /// The search the harness runs for a user's message before the first model call
    /// (retrieve-first), from its logged `search_docs` arguments: the evidence for the query
    /// (the passages of the best sections that bear on it, within `budget`), numbered, then the
    /// `question` and how to answer it. Evidence that covers less than `min_coverage` of the
    /// question is marked weak ([`WEAK_EVIDENCE`]): the turn then answers that the docs do not
    /// cover it, without the model.
    pub fn retrieve(&self, arguments: &str, question: &str, budget: Budget, weak: Weak) -> Outcome {
        let query = match parse::<SearchArgs>(Tool::SearchDocs, arguments) {
            Ok(args) => args.query,
            Err(outcome) => return outcome,
        };
        let budget = Budget { bytes: budget.bytes.min(self.max_result_bytes), ..budget };
        let evidence = match self.index.evidence(&query, budget) {
            Ok(evidence) => evidence,
            Err(e) => return Outcome::error(e),
        };
        let note = evidence.reranked.note();
        if evidence.items.is_empty() {
            return Outcome::allowed(format!("{NO_HITS} {NO_HITS_HINT}")).noted(note);
        }
        let mut text = String::new();
        if let Some(why) = weak.why(&evidence) {
            text.push_str(&format!("{WEAK_EVIDENCE} {why}"));
            if !evidence.unknown.is_empty() {
                text.push_str(&format!(" {NEVER_USED} {}.", crate::guard::scrub(&evidence.unknown.join(", "))));
            }
            text.push('\n');
        }
        text.push_str(EVIDENCE_HEADER);
        text.push('\n');
        for (n, item) in evidence.items.iter().enumerate() {
            let body = format!("# {}\n{}", item.heading, item.text);
            let body = redact::redact_truncated(&body, budget.bytes);
            text.push_str(&format!("[{}] {}\n", n + 1, Fenced::new(&item.source(), &body).as_str()));
        }
        text.push_str(&evidence_hint(question));
        Outcome::allowed(text).noted(note)
    }

    fn read(&self, args: &ReadArgs) -> Outcome {
        let path = match policy::check_read(&args.path) {
            Ok(path) => path,
            Err(denied) => return Outcome::denied(denied),
        };
        let text = match self.workspace.read_text(&path, MAX_READ_BYTES) {
            Ok(text) => text,
            Err(e) => return file_error(e),
        };
        // Redact the whole file before slicing, so no slice can show part of a secret.
        let text = guard::scrub(&text);
        let total = text.lines().count();
        let first = args.offset.unwrap_or(1).max(1) as usize;
        let limit = args.limit.unwrap_or(DEFAULT_READ_LINES as u64).max(1) as usize;
        if first > total.max(1) {
            return Outcome::error(format!("{path} has {total} lines; offset {first} is past the end"));
        }
        let slice: Vec<&str> = text.lines().skip(first - 1).take(limit).collect();
        let last = first + slice.len().saturating_sub(1);
        let header = format!("lines {first}-{last} of {total}\n");
        let body = redact::redact_truncated(&slice.join("\n"), self.max_result_bytes.saturating_sub(header.len() + 80));
        Outcome::allowed(Fenced::new(&path.display(), &format!("{header}{body}")).into_string())
    }

    fn load_skill(&self, name: &str) -> Outcome {
        match self.skills.get(name) {
            Some(skill) => {
                let body = fence::neutralize_tags(&fence::sanitize(&skill.body)).into_owned();
                Outcome::allowed(format!(
                    "<skill name=\"{}\" location=\"{}\">\n{}\n</skill>",
                    fence::escape_attr(&skill.name),
                    fence::escape_attr(&skill.location),
                    redact::redact_truncated(&body, self.max_result_bytes)
                ))
            }
            None => {
                let names: Vec<&str> = self.skills.skills.iter().map(|s| s.name.as_str()).collect();
                Outcome::error(format!("no skill named `{}`; available: {}", guard::clip(name, 64), names.join(", ")))
            }
        }
    }
}

/// Bytes a fence and its heading line add around a section's text, at most.
pub const FENCE_OVERHEAD: usize = 40;

/// One search hit, its heading line first, redacted and cut to fit in `bytes` with its fence.
fn fence_hit(hit: &crate::index::Hit, bytes: usize) -> String {
    let body = format!("# {}\n{}", hit.heading, hit.excerpt);
    let body = redact::redact_truncated(&body, bytes.saturating_sub(hit.source().len() + FENCE_OVERHEAD));
    Fenced::new(&hit.source(), &body).into_string()
}

/// What `search_docs` answers for `hits`: each fenced and redacted, sharing `max_bytes`, or a
/// hint to try other words when there are none. The MCP server's `search_docs` answers the same.
pub fn search_result(hits: &[crate::index::Hit], max_bytes: usize) -> String {
    if hits.is_empty() {
        return format!("{NO_HITS} Try other words.");
    }
    // Within `max_bytes` in all, the listing's first line, each section's line break and a
    // cut's marker included: a cap on the whole (a post-tool hook's) never cuts into a fence.
    let room = max_bytes.saturating_sub(listing(&[]).len() + 4) / hits.len();
    let budget = room.saturating_sub(1 + redact::TRUNCATED.len());
    let fenced: Vec<String> = hits.iter().map(|hit| fence_hit(hit, budget)).collect();
    listing(&fenced)
}

/// Fenced sections as a search result shows them: a count, then each, best first.
fn listing(fenced: &[String]) -> String {
    let mut text = match fenced.len() {
        1 => "1 section matched:\n".to_string(),
        n => format!("{n} sections matched, best first:\n"),
    };
    for section in fenced {
        text.push_str(section);
        text.push('\n');
    }
    text
}

/// The lines after retrieve-first's evidence (the harness's words, outside every fence), with
/// the question repeated: small models lose it behind the docs. The question's tags are
/// neutralised, so it cannot forge a fence (a "retrieved" section) in the tool result.
fn evidence_hint(question: &str) -> String {
    let question = guard::clip(question.trim(), 300).replace('\n', " ");
    // Measured with Qwen2.5-Coder-1.5B (bench/real-model): asked to cite "like [1]" after each
    // fact it cited almost never; asked to end with the number it used, nearly always. Told in
    // this line to say when the evidence does not answer, it said so for most questions the
    // evidence did answer: that rule stays in the system prompt, and the harness checks.
    format!(
        "Question: {}\nAnswer it in one or two sentences from this evidence. End with the evidence number you used, like: Source: [1]",
        fence::neutralize_tags(&question)
    )
}

/// What the model is asked to say (by the system prompt) when the docs do not answer: the
/// harness recognises it and others like it (`session::verify::says_not_covered`) and answers
/// that the docs do not cover the question.
pub const NOT_COVERED: &str = "The docs do not cover this.";

/// The first line of retrieve-first's result: the numbered evidence follows.
pub const EVIDENCE_HEADER: &str = "Evidence from the docs, numbered:";

/// How retrieve-first's result begins when its evidence is too weak to answer from.
pub const WEAK_EVIDENCE: &str = "Weak evidence:";

/// In the weak-evidence line, before the question's words that no section of the docs holds.
pub const NEVER_USED: &str = "Words of the question the docs never use:";

/// Below which evidence is too weak to answer from: shares of the question's weight, and the
/// relevance the reranker found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weak {
    /// Found in the evidence (`retrieval.min_coverage`).
    pub coverage: f64,
    /// Found anywhere in the docs (`retrieval.min_known`), when a word they lack is a name.
    pub known: f64,
    /// The best section's relevance below which the docs do not cover the question, whatever
    /// the words (`retrieval.reranker.min_relevance`).
    pub min_relevance: f64,
    /// The best section's relevance at which they do, whatever the words
    /// (`retrieval.reranker.covers_at`).
    pub covers_at: f64,
}

impl Weak {
    /// As `retrieval` sets it.
    pub fn from(retrieval: &crate::config::RetrievalConfig) -> Weak {
        Weak {
            coverage: retrieval.min_coverage,
            known: retrieval.min_known,
            min_relevance: retrieval.reranker.min_relevance,
            covers_at: retrieval.reranker.covers_at,
        }
    }

    /// Whether `evidence` is too weak to answer from.
    pub fn judges(&self, evidence: &crate::index::evidence::Evidence) -> bool {
        self.why(evidence).is_some()
    }

    /// Why `evidence` is too weak to answer from, if it is. Without a reranker's scores, the
    /// words decide: too little of the question's weight in the evidence, or in the docs when a
    /// word they lack is a name (`Evidence::unknown_named`). With
    /// them, meaning decides at either end: a best section below `min_relevance` answers
    /// nothing however many words it shares (a near-domain question), one at `covers_at` or
    /// above answers however few (a question in other words); in between, the words decide.
    pub fn why(&self, evidence: &crate::index::evidence::Evidence) -> Option<String> {
        // The docs' share of the question decides only when what they lack is a name: a
        // subject they never mention, not the asker's own everyday words.
        let unheard = evidence.known < self.known && !evidence.unknown_named.is_empty();
        let words = (evidence.coverage < self.coverage || unheard).then(|| {
            format!(
                "the closest passages hold {:.0}% of what the question asks, and the docs {:.0}% of it.",
                100.0 * evidence.coverage,
                100.0 * evidence.known
            )
        });
        let Some(relevance) = evidence.relevance else {
            return words;
        };
        if relevance < self.min_relevance {
            return Some(format!(
                "the reranker rates the most relevant section at {:.0}% (below {:.0}%).",
                100.0 * relevance,
                100.0 * self.min_relevance
            ));
        }
        words.filter(|_| relevance < self.covers_at)
    }
}

/// How much evidence retrieve-first gathers, as `retrieval` sets it.
pub fn evidence_budget(retrieval: &crate::config::RetrievalConfig) -> Budget {
    Budget {
        sections: retrieval.sections,
        files: retrieval.files,
        bytes: retrieval.context_tokens.saturating_mul(4),
        items: retrieval.evidence_items,
    }
}

/// Checks a write's path and size; the content is scrubbed here, once, so the approval prompt,
/// the log and the note all show the same text.
fn check_write(args: &WriteArgs) -> Result<WriteRequest, Outcome> {
    let path = policy::check_write(&args.path).map_err(Outcome::denied)?;
    if guard::scrub(&args.path) != args.path.as_str() {
        return Err(Outcome::denied(format!("{path}: the path contains something that looks like a secret")));
    }
    if args.content.len() > MAX_WRITE_BYTES {
        return Err(Outcome::error(format!(
            "content is {} bytes; a note may hold at most {MAX_WRITE_BYTES}",
            args.content.len()
        )));
    }
    Ok(WriteRequest { path, content: guard::scrub(&args.content).into_owned() })
}

fn file_error(e: FileError) -> Outcome {
    match e {
        FileError::Denied(Denied(reason)) => Outcome::denied(reason),
        FileError::Failed(message) => Outcome::error(message),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(tool: Tool, arguments: &str) -> Result<T, Outcome> {
    serde_json::from_str::<T>(arguments).map_err(|e| {
        let hint = match serde_json::from_str::<Value>(arguments) {
            Ok(_) => format!("{e}"),
            Err(_) => format!("arguments are not valid JSON ({e})"),
        };
        Outcome::error(format!(
            "bad arguments for {}: {hint}; expected {}",
            tool.name(),
            tool.spec().parameters["properties"]
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "Not covered": the words alone without a reranker's relevance (the docs' share only when
    /// what they lack is a name); with it, meaning decides at either end and the words between.
    #[test]
    fn weak_evidence_is_decided_by_the_words_and_the_rerankers_relevance() {
        let weak = Weak { coverage: 0.2, known: 0.6, min_relevance: 0.05, covers_at: 0.5 };
        // What the docs lack of the question is a name ("Salesforce") below known 0.6.
        let evidence = |coverage: f64, known: f64, relevance: Option<f64>| crate::index::evidence::Evidence {
            coverage,
            known,
            relevance,
            unknown_named: if known < 0.6 { vec!["salesforce".into()] } else { Vec::new() },
            ..Default::default()
        };
        let everyday = crate::index::evidence::Evidence {
            coverage: 0.9,
            known: 0.4,
            unknown: vec!["leftover".into(), "lapse".into()],
            ..Default::default()
        };
        let cases = [
            (evidence(0.9, 0.9, None), false, "words enough, no reranker"),
            (evidence(0.1, 0.9, None), true, "too little in the evidence"),
            (evidence(0.9, 0.4, None), true, "too little in the docs: a name they never use"),
            (everyday.clone(), false, "too little in the docs, but only everyday words they never use"),
            (
                crate::index::evidence::Evidence { relevance: Some(0.3), ..everyday },
                false,
                "everyday words, a relevance between the two: the words, which let it through",
            ),
            (
                crate::index::evidence::Evidence {
                    coverage: 0.9,
                    known: 0.7,
                    unknown_named: vec!["salesforce".into()],
                    ..Default::default()
                },
                false,
                "a name the docs never use, but enough of the question in them",
            ),
            (evidence(0.1, 0.4, Some(0.9)), false, "few words, but the reranker is sure"),
            (evidence(0.1, 0.4, Some(0.5)), false, "at covers_at"),
            (evidence(0.1, 0.4, Some(0.3)), true, "between the two, the words"),
            (evidence(0.9, 0.9, Some(0.3)), false, "between the two, the words"),
            (evidence(0.9, 0.9, Some(0.01)), true, "below min_relevance, whatever the words"),
        ];
        for (evidence, judged, why) in cases {
            assert_eq!(weak.judges(&evidence), judged, "{why}: {:?}", weak.why(&evidence));
        }
        assert!(weak.why(&evidence(0.9, 0.9, Some(0.01))).is_some_and(|w| w.contains("reranker rates")));
    }

    /// A write whose path holds a secret is refused, and the refusal never shows it.
    #[test]
    fn a_write_whose_path_holds_a_secret_is_refused_without_showing_it() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let arguments = serde_json::json!({"path": format!("notes/{token}.md"), "content": "x"}).to_string();
        let refused = Toolbox::plan_write(&arguments).expect_err("refused");
        assert_eq!(refused.decision, Decision::Denied);
        assert!(refused.text.contains("looks like a secret") && !refused.text.contains(token), "{}", refused.text);
        let fine = serde_json::json!({"path": "notes/faq.md", "content": "x"}).to_string();
        assert!(Toolbox::plan_write(&fine).is_ok());
    }
}
