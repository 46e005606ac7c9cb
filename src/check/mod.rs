//! `docs-agent check`: validates a workspace and reports every problem with its file (and line,
//! where one is known), so a team can fix AGENTS.md, skills and docs before they ship.

mod docs;

use std::fmt;

use crate::agent::Harness;
use crate::config::Config;
use crate::workspace::FileError;
use crate::workspace::policy::check_read;

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Workspace-relative file.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: {}", self.file, line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Everything `check` found.
#[derive(Debug, Default)]
pub struct Report {
    /// Problems, in file order.
    pub problems: Vec<Problem>,
    /// Files in docs/ the index does not read, each with why: shown, but not a problem.
    pub skipped: Vec<Problem>,
    /// What is optional and absent (AGENTS.md, notes/): said, but not a problem.
    pub info: Vec<Problem>,
    /// A one-line summary of what is fine.
    pub summary: String,
}

fn problem(file: &str, line: Option<usize>, message: impl Into<String>) -> Problem {
    Problem { file: file.to_string(), line, message: message.into() }
}

/// Checks AGENTS.md, the skills, docs/ and notes/.
pub fn check(harness: &Harness, config: &Config) -> Report {
    let index = harness.index.current();
    let mut problems = Vec::new();
    let mut info = Vec::new();
    let workspace = &harness.workspace;
    let limit = config.prompt.agents_md_max_bytes;
    match check_read("AGENTS.md").map(|p| workspace.read_text(&p, limit)) {
        Ok(Ok(text)) if text.trim().is_empty() => {
            problems.push(problem("AGENTS.md", Some(1), "is empty; write the project's rules for the assistant"))
        }
        Ok(Ok(_)) => {}
        Ok(Err(FileError::Failed(m))) if m.ends_with("no such file") => info.push(problem(
            "AGENTS.md",
            None,
            if workspace.docs_alone() {
                "none: a docs folder alone has no project rules (answering needs none); to add some, \
                 use a workspace with AGENTS.md and pass --workspace"
            } else {
                "none (answering needs none); add the project's rules for the assistant as AGENTS.md"
            },
        )),
        Ok(Err(FileError::Failed(m))) | Ok(Err(FileError::Denied(crate::workspace::policy::Denied(m)))) => {
            let m = m.strip_prefix("AGENTS.md: ").unwrap_or(&m);
            problems.push(problem("AGENTS.md", None, crate::agent::unusable_agents_md(m, limit)))
        }
        Err(d) => problems.push(problem("AGENTS.md", None, d.0)),
    }
    let catalog = harness.skills.catalog_within(config.prompt.skills_catalog_tokens);
    if catalog.left_out > 0 {
        problems.push(problem(
            "skills",
            None,
            format!(
                "{} of {} valid skills are left out of the prompt: the catalog is capped at {} tokens \
                 (prompt.skills_catalog_tokens); raise it, or merge skills",
                catalog.left_out,
                harness.skills.skills.len(),
                config.prompt.skills_catalog_tokens
            ),
        ));
    }
    for p in &harness.skills.problems {
        problems.push(problem(&p.file, p.line, format!("[{}] {}", p.rule, p.message)));
    }
    for area in workspace.linked_areas() {
        problems.push(problem(area, None, "is a symbolic link; areas must be real folders, so it is not used"));
    }
    if workspace.docs().is_none() {
        problems.push(problem("docs", None, "folder is missing; put the product's Markdown docs in docs/"));
    }
    for warning in &index.warnings {
        let (file, message) = warning.split_once(": ").unwrap_or(("docs", warning.as_str()));
        problems.push(problem(file, None, message));
    }
    let mut skipped = Vec::new();
    if let Some(dir) = workspace.docs() {
        let walk = crate::index::ahead::walk_docs(&dir, crate::index::Limits::of(&config.index));
        problems.extend(docs::check_docs(&walk.files));
        for line in &walk.ignored {
            let (file, message) = line.split_once(": ").unwrap_or(("docs", line.as_str()));
            skipped.push(problem(file, None, message));
        }
    }
    for file in &index.stats.empty_files {
        problems.push(problem(file, None, "has no text to index (empty sections only)"));
    }
    if !workspace.has_notes() {
        info.push(problem(
            "notes",
            None,
            "none: writing notes is off (answering needs no notes/; create it to allow writes)",
        ));
    }
    if let Some(reranker) = harness.index.reranker() {
        let model = match reranker.model() {
            "" => String::new(),
            model => format!(" ({model})"),
        };
        match reranker.probe() {
            Ok(took) => info.push(problem(
                "retrieval.reranker",
                None,
                format!(
                    "{}{model} answers ({} ms for one section): searches are reranked",
                    reranker.url(),
                    took.as_millis()
                ),
            )),
            Err(e) => problems.push(problem(
                "retrieval.reranker",
                None,
                format!("{e}; until it answers, searches keep their own order and \"not covered\" is decided by words"),
            )),
        }
    }
    let stats = &index.stats;
    let summary = format!(
        "{} docs, {} sections indexed; {} files skipped; {} skills valid ({} in the prompt); hooks: {}; {} problems",
        stats.files,
        stats.sections,
        skipped.len(),
        harness.skills.skills.len(),
        catalog.listed,
        harness.hooks.describe(),
        problems.len()
    );
    Report { problems, skipped, info, summary }
}
