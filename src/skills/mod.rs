//! Skills: reusable instructions the agent can pull in on demand, stored in the
//! Agent Skills format (`skills/<name>/SKILL.md`: YAML front matter, then Markdown).
//!
//! This module exists so that skills are disclosed progressively: the system prompt
//! carries only the [`Skills::catalog`] (name, description, location), and the
//! `load_skill` tool hands over a [`Skill::body`] when the model asks for it.
//!
//! Architecture invariants:
//! - Files are reached only through a `cap_std::fs::Dir` for the workspace root, so a
//!   symlink that leads outside the workspace is refused, not followed.
//! - A bad SKILL.md never stops the harness: it becomes a [`SkillProblem`] (file, line,
//!   rule, what to do) and is left out of the catalog. Nothing here panics on input.
//! - Only regular files up to [`MAX_SKILL_BYTES`] are opened, so a FIFO cannot block and
//!   a huge file cannot fill memory.

mod load;
mod parse;

use load::*;
use parse::*;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};

use cap_std::fs::Dir;
use yaml_serde::{Mapping, Value};

/// Largest SKILL.md read, in bytes (256 KiB). Skills are prompts, not data.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// Folder, under the workspace root, that holds one folder per skill.
const SKILLS_DIR: &str = "skills";

/// File inside each skill folder that defines the skill.
const SKILL_FILE: &str = "SKILL.md";

/// Front-matter fields the Agent Skills spec allows, in the order we name them.
const ALLOWED_FIELDS: &str = "name, description, license, compatibility, metadata, allowed-tools";

/// Longest `name`, in characters.
const MAX_NAME_CHARS: usize = 64;

/// Longest `description`, in characters.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Longest `compatibility`, in characters.
const MAX_COMPATIBILITY_CHARS: usize = 500;

/// One valid skill, parsed from its SKILL.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Identifier the model passes to `load_skill`; equal to the folder name.
    pub name: String,
    /// What the skill does and when to use it; shown in the catalog (trimmed).
    pub description: String,
    /// Workspace-relative path of the SKILL.md, e.g. "skills/cite-sources/SKILL.md".
    pub location: String,
    /// Markdown after the front matter, trimmed.
    pub body: String,
    /// License name or file the skill is offered under, if it says.
    pub license: Option<String>,
    /// Environment requirements (products, packages, network), if it says.
    pub compatibility: Option<String>,
    /// Free-form string pairs the author attached (e.g. `author`, `version`).
    pub metadata: BTreeMap<String, String>,
    /// Tools the skill expects to use; empty when it does not say.
    pub allowed_tools: Vec<String>,
}

/// A rule a SKILL.md breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// Workspace-relative path ("skills/x/SKILL.md").
    pub file: String,
    /// 1-based line in that file, when known.
    pub line: Option<usize>,
    /// Short rule id: "front-matter", "yaml", "name", "name-matches-folder", "description",
    /// "license", "compatibility", "metadata", "allowed-tools", "unknown-field", "unreadable",
    /// "missing-skill-md".
    pub rule: &'static str,
    /// What is wrong and what to do, e.g. "name `Cite_Sources` may contain only lowercase
    /// letters, digits and hyphens".
    pub message: String,
}

impl fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: [{}] {}", self.file, line, self.rule, self.message),
            None => write!(f, "{}: [{}] {}", self.file, self.rule, self.message),
        }
    }
}

/// Every skill found in a workspace, and every problem that kept one out.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    /// Valid skills, sorted by name.
    pub skills: Vec<Skill>,
    /// Problems found while loading, sorted by file then line.
    pub problems: Vec<SkillProblem>,
}

impl Skills {
    /// Loads every `skills/<name>/SKILL.md` under the workspace root.
    ///
    /// A missing `skills/` folder means no skills and no problems. Anything else that goes
    /// wrong is recorded in [`Skills::problems`]; this never fails and never blocks on a FIFO.
    pub fn load(root: &Dir) -> Skills {
        let mut out = Skills::default();
        let skills_dir = match root.open_dir(SKILLS_DIR) {
            Ok(dir) => dir,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return out,
            Err(err) => {
                out.problems.push(unreadable(SKILLS_DIR, None, &err));
                return out;
            }
        };
        match folder_names(&skills_dir) {
            Ok(names) => {
                for result in names.iter().filter_map(|name| load_folder(&skills_dir, name)) {
                    out.add(result);
                }
            }
            Err(err) => out.problems.push(unreadable(SKILLS_DIR, None, &err)),
        }
        out.skills.sort_by(|a, b| a.name.cmp(&b.name));
        out.problems.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out
    }

    /// Parses one SKILL.md's text (pure; used by load and by tests).
    ///
    /// `folder_name` is the skill's folder (the `name` field must equal it) and `location`
    /// is the workspace-relative path used in the result and in problems.
    pub fn parse(folder_name: &str, location: &str, text: &str) -> Result<Skill, Vec<SkillProblem>> {
        parse_issues(folder_name, location, text).map_err(|issues| {
            let mut problems: Vec<SkillProblem> =
                issues.into_iter().map(|(rule, line, message)| problem_at(location, line, rule, message)).collect();
            problems.sort_by_key(|problem| problem.line);
            problems
        })
    }

    /// The valid skill called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name == name)
    }

    /// The catalog for the system prompt, XML as the spec suggests, one `<skill>` per
    /// valid skill in name order, with &, <, > escaped in every value:
    ///
    /// ```text
    /// <available_skills>
    /// <skill>
    /// <name>cite-sources</name>
    /// <description>Cite the docs page an answer came from.</description>
    /// <location>skills/cite-sources/SKILL.md</location>
    /// </skill>
    /// </available_skills>
    /// ```
    ///
    /// Empty string when there are no skills. Never contains a body: the model asks
    /// `load_skill` for that.
    pub fn catalog(&self) -> String {
        self.catalog_within(usize::MAX).text
    }

    /// The catalog within `tokens` (estimated as bytes / 4): skills in name order as long as
    /// they fit, then a line saying how many were left out.
    pub fn catalog_within(&self, tokens: usize) -> Catalog {
        if self.skills.is_empty() {
            return Catalog { text: String::new(), listed: 0, left_out: 0 };
        }
        let budget = tokens.saturating_mul(4);
        let mut xml = String::from("<available_skills>\n");
        let mut listed = 0;
        for skill in &self.skills {
            let mut entry = String::from("<skill>\n");
            push_element(&mut entry, "name", &skill.name);
            push_element(&mut entry, "description", &skill.description);
            push_element(&mut entry, "location", &skill.location);
            entry.push_str("</skill>\n");
            if xml.len() + entry.len() > budget {
                break;
            }
            xml.push_str(&entry);
            listed += 1;
        }
        let left_out = self.skills.len() - listed;
        if left_out > 0 {
            xml.push_str(&format!(
                "<!-- {left_out} more skills are not listed: the catalog is capped at prompt.skills_catalog_tokens -->\n"
            ));
        }
        xml.push_str("</available_skills>");
        Catalog { text: xml, listed, left_out }
    }

    /// Records what loading one folder produced.
    fn add(&mut self, result: Result<Skill, Vec<SkillProblem>>) {
        match result {
            Ok(skill) => self.skills.push(skill),
            Err(problems) => self.problems.extend(problems),
        }
    }
}

/// The skills catalog as it goes in the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    /// The text (empty without skills).
    pub text: String,
    /// How many skills it lists.
    pub listed: usize,
    /// How many valid skills did not fit the cap.
    pub left_out: usize,
}

/// A problem before it is tied to a file: (rule, line, message).
type Issue = (&'static str, Option<usize>, String);

/// Appends `<tag>value</tag>\n` with the value escaped.
fn push_element(xml: &mut String, tag: &str, value: &str) {
    xml.push('<');
    xml.push_str(tag);
    xml.push('>');
    for c in value.chars() {
        match c {
            '&' => xml.push_str("&amp;"),
            '<' => xml.push_str("&lt;"),
            '>' => xml.push_str("&gt;"),
            _ => xml.push(c),
        }
    }
    xml.push_str("</");
    xml.push_str(tag);
    xml.push_str(">\n");
}

#[cfg(test)]
mod tests;
