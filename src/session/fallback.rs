//! The answers the harness gives in the model's place, made from what the turn retrieved:
//! - the retrieval-only answer, when the model's answer could not be checked (or no model can
//!   be asked): the turn's evidence quoted, numbered and cited, under a label that says why;
//! - the "not covered" answer, when the evidence is too weak to answer from or the model says
//!   the docs are silent: it says so plainly and lists the closest sections as might-help,
//!   never as an answer.
//!
//! Neither adds a citation the turn did not retrieve: they quote and name what was shown.

use crate::guard::fence;
use crate::session::store::Stored;
use crate::tools;

use super::verify;

/// Sections the "not covered" answer lists as might-help.
const MIGHT_HELP: usize = 4;

/// The labelled retrieval-only answer: the turn's searched evidence, quoted and cited.
pub fn retrieval_only(turn: &[Stored], header: &str) -> String {
    let searched: Vec<String> = verify::retrieved(turn)
        .into_iter()
        .filter(|s| s.searched)
        .map(|s| fence::Fenced::new(&s.source, &s.body).into_string())
        .collect();
    crate::model::builtin::extractive_answer(&searched.join("\n"), header)
}

/// The answer that the docs do not cover the question: [`tools::NOT_COVERED`], then the
/// sections the turn's searches found closest, as might-help (heading and source).
pub fn not_covered(turn: &[Stored]) -> String {
    not_covered_saying(turn, None)
}

/// [`not_covered`] with a `sentence` of the harness's after its first (which term of the
/// model's answer the docs never mention: a word, never markup).
pub fn not_covered_saying(turn: &[Stored], sentence: Option<&str>) -> String {
    // The question's words are not echoed (the words the docs never use are in the log's
    // evidence line and `search --evidence`): a question can carry markup or injected text,
    // and the answer says only what the harness and the docs say.
    let mut text = String::from(tools::NOT_COVERED);
    if let Some(sentence) = sentence {
        text.push(' ');
        text.push_str(sentence);
    }
    let mut listed: Vec<(String, String)> = Vec::new();
    for section in verify::retrieved(turn).into_iter().filter(|s| s.searched) {
        if listed.len() < MIGHT_HELP && !listed.iter().any(|(source, _)| *source == section.source) {
            listed.push((section.source, section.heading));
        }
    }
    if listed.is_empty() {
        text.push_str(" No section of the docs matched the question.");
        return text;
    }
    text.push_str("\n\nThese sections came closest and might help:\n");
    for (source, heading) in listed {
        let heading = if heading.is_empty() { String::new() } else { format!("{heading} ") };
        text.push_str(&format!("- {heading}[{source}]\n"));
    }
    text
}

/// What kind of answer a turn gave, read from its text: what the docs-gaps report and the
/// metrics count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AnswerKind {
    /// The model's own answer.
    Model,
    /// A retrieval-only answer: the model's could not be checked (or no model was asked).
    RetrievalOnly,
    /// The docs do not cover the question (the harness's answer, or a model's that begins so).
    NotCovered,
}

impl AnswerKind {
    /// The kind of `answer`.
    pub fn of(answer: &str) -> AnswerKind {
        if answer.starts_with(tools::NOT_COVERED) {
            AnswerKind::NotCovered
        } else if answer.starts_with("Retrieval-only answer") {
            AnswerKind::RetrievalOnly
        } else {
            AnswerKind::Model
        }
    }

    /// The word in metrics and listings.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Model => "model",
            AnswerKind::RetrievalOnly => "retrieval_only",
            AnswerKind::NotCovered => "not_covered",
        }
    }
}
