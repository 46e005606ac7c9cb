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
            Some(line) => write!(
                f,
                "{}:{}: [{}] {}",
                self.file, line, self.rule, self.message
            ),
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
                for result in names
                    .iter()
                    .filter_map(|name| load_folder(&skills_dir, name))
                {
                    out.add(result);
                }
            }
            Err(err) => out.problems.push(unreadable(SKILLS_DIR, None, &err)),
        }
        out.skills.sort_by(|a, b| a.name.cmp(&b.name));
        out.problems
            .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out
    }

    /// Parses one SKILL.md's text (pure; used by load and by tests).
    ///
    /// `folder_name` is the skill's folder (the `name` field must equal it) and `location`
    /// is the workspace-relative path used in the result and in problems.
    pub fn parse(
        folder_name: &str,
        location: &str,
        text: &str,
    ) -> Result<Skill, Vec<SkillProblem>> {
        parse_issues(folder_name, location, text).map_err(|issues| {
            let mut problems: Vec<SkillProblem> = issues
                .into_iter()
                .map(|(rule, line, message)| problem_at(location, line, rule, message))
                .collect();
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
        if self.skills.is_empty() {
            return String::new();
        }
        let mut xml = String::from("<available_skills>\n");
        for skill in &self.skills {
            xml.push_str("<skill>\n");
            push_element(&mut xml, "name", &skill.name);
            push_element(&mut xml, "description", &skill.description);
            push_element(&mut xml, "location", &skill.location);
            xml.push_str("</skill>\n");
        }
        xml.push_str("</available_skills>");
        xml
    }

    /// Records what loading one folder produced.
    fn add(&mut self, result: Result<Skill, Vec<SkillProblem>>) {
        match result {
            Ok(skill) => self.skills.push(skill),
            Err(problems) => self.problems.extend(problems),
        }
    }
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

// ---------------------------------------------------------------------------------------
// Reading files
// ---------------------------------------------------------------------------------------

/// Entry names under `skills/`, sorted; hidden entries (`.git`, `.DS_Store`) are skipped.
fn folder_names(skills_dir: &Dir) -> io::Result<Vec<std::ffi::OsString>> {
    let mut names = Vec::new();
    for entry in skills_dir.entries()? {
        let name = entry?.file_name();
        if !name.as_encoded_bytes().starts_with(b".") {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Loads `skills/<name>/SKILL.md`, or says why it cannot; `None` for a loose file
/// beside the skill folders, which is not a skill.
fn load_folder(
    skills_dir: &Dir,
    name: &std::ffi::OsStr,
) -> Option<Result<Skill, Vec<SkillProblem>>> {
    let result = match folder_kind(skills_dir, name) {
        Ok(false) => return None,
        Ok(true) => load_skill_folder(skills_dir, name),
        Err(problem) => Err(vec![problem]),
    };
    Some(result)
}

/// Whether `skills/<name>` is a folder (following symlinks that stay inside `skills/`).
fn folder_kind(skills_dir: &Dir, name: &std::ffi::OsStr) -> Result<bool, SkillProblem> {
    match skills_dir.metadata(name) {
        Ok(meta) => Ok(meta.is_dir()),
        Err(err) => {
            let folder_path = format!("{SKILLS_DIR}/{}", name.to_string_lossy());
            Err(unreadable(&folder_path, None, &err))
        }
    }
}

/// Loads the SKILL.md of the folder `skills/<name>`.
fn load_skill_folder(skills_dir: &Dir, name: &std::ffi::OsStr) -> Result<Skill, Vec<SkillProblem>> {
    let shown = name.to_string_lossy();
    let folder_path = format!("{SKILLS_DIR}/{shown}");
    let location = format!("{folder_path}/{SKILL_FILE}");
    let Some(folder_name) = name.to_str() else {
        let message = format!(
            "folder name `{shown}` is not valid UTF-8; rename the folder to the skill's name"
        );
        return Err(vec![problem_at(&folder_path, None, "name", message)]);
    };
    let folder = skills_dir
        .open_dir(name)
        .map_err(|err| vec![unreadable(&folder_path, None, &err)])?;
    let text = read_skill_file(&folder, &location)?;
    Skills::parse(folder_name, &location, &text)
}

/// Reads SKILL.md from a skill folder: a regular UTF-8 file of at most [`MAX_SKILL_BYTES`].
fn read_skill_file(folder: &Dir, location: &str) -> Result<String, Vec<SkillProblem>> {
    let one = |line, rule, message| vec![problem_at(location, line, rule, message)];
    let meta = match folder.metadata(SKILL_FILE) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound && !is_dangling_link(folder) => {
            let message = format!(
                "no {SKILL_FILE} in this skill folder; add one with `name` and `description` \
                 front matter, or remove the folder"
            );
            return Err(one(None, "missing-skill-md", message));
        }
        Err(err) => return Err(vec![unreadable(location, None, &err)]),
    };
    check_regular_and_small(&meta).map_err(|message| one(None, "unreadable", message))?;
    // The type was checked before opening so a FIFO is never opened; check again on the
    // open handle in case the file was swapped in between.
    let file = folder
        .open(SKILL_FILE)
        .map_err(|err| vec![unreadable(location, None, &err)])?;
    let meta = file
        .metadata()
        .map_err(|err| vec![unreadable(location, None, &err)])?;
    check_regular_and_small(&meta).map_err(|message| one(None, "unreadable", message))?;
    let mut bytes = Vec::new();
    file.take(MAX_SKILL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| vec![unreadable(location, None, &err)])?;
    if bytes.len() as u64 > MAX_SKILL_BYTES {
        return Err(one(None, "unreadable", too_large_message()));
    }
    String::from_utf8(bytes).map_err(|err| {
        let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let message = format!(
            "file is not valid UTF-8 (bad byte at offset {}); save it as UTF-8",
            valid.len()
        );
        one(Some(line), "unreadable", message)
    })
}

/// True when SKILL.md exists as a symlink whose target is missing.
fn is_dangling_link(folder: &Dir) -> bool {
    folder
        .symlink_metadata(SKILL_FILE)
        .is_ok_and(|meta| meta.file_type().is_symlink())
}

/// Says why a SKILL.md with this metadata must not be read, if it must not.
fn check_regular_and_small(meta: &cap_std::fs::Metadata) -> Result<(), String> {
    if !meta.is_file() {
        return Err(format!(
            "{SKILL_FILE} is not a regular file (a directory, FIFO or device); \
             replace it with a plain Markdown file"
        ));
    }
    if meta.len() > MAX_SKILL_BYTES {
        return Err(too_large_message());
    }
    Ok(())
}

/// The message for a SKILL.md over the size limit.
fn too_large_message() -> String {
    format!(
        "file is larger than {} KiB; keep the SKILL.md short and move long material into \
         files the skill points to",
        MAX_SKILL_BYTES / 1024
    )
}

/// A problem for a file or folder the OS or the sandbox would not let us read.
fn unreadable(file: &str, line: Option<usize>, err: &io::Error) -> SkillProblem {
    let message = format!(
        "cannot read it: {err}; it must be a regular file or folder inside the workspace \
         (symlinks may not lead outside)"
    );
    problem_at(file, line, "unreadable", message)
}

/// Builds a problem for `file`.
fn problem_at(
    file: &str,
    line: Option<usize>,
    rule: &'static str,
    message: String,
) -> SkillProblem {
    SkillProblem {
        file: file.to_string(),
        line,
        rule,
        message,
    }
}

// ---------------------------------------------------------------------------------------
// Parsing text
// ---------------------------------------------------------------------------------------

/// A SKILL.md split at its front matter.
struct Document<'a> {
    /// The YAML, with an empty first line standing for the opening `---`, so the YAML
    /// parser's line numbers are the file's line numbers.
    yaml: &'a str,
    /// Markdown after the closing `---`, trimmed.
    body: &'a str,
}

/// Checks one SKILL.md's text, collecting every problem rather than stopping at the first.
fn parse_issues(folder: &str, location: &str, text: &str) -> Result<Skill, Vec<Issue>> {
    let doc = split_front_matter(text).map_err(|issue| vec![issue])?;
    let fields = parse_yaml(doc.yaml).map_err(|issue| vec![issue])?;
    let mut draft = Draft::default();
    let mut issues = Vec::new();
    for (key, value) in &fields {
        if let Err(found) = draft.take_field(doc.yaml, key, value) {
            issues.extend(found);
        }
    }
    match draft.finish(folder, location, &doc) {
        Ok(skill) if issues.is_empty() => Ok(skill),
        Ok(_) => Err(issues),
        Err(found) => {
            issues.extend(found);
            Err(issues)
        }
    }
}

/// Splits `text` into front matter and body, or says why it has no front matter.
fn split_front_matter(text: &str) -> Result<Document<'_>, Issue> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let first_len = text.find('\n').map_or(text.len(), |i| i + 1);
    if text[..first_len].trim_end() != "---" {
        let message = "SKILL.md must start with a `---` line that opens the YAML front matter \
                       (with `name:` and `description:`), closed by another `---` line"
            .to_string();
        return Err(("front-matter", Some(1), message));
    }
    let mut offset = first_len;
    for line in text[first_len..].split_inclusive('\n') {
        if line.trim_end() == "---" {
            let body = text[offset + line.len()..].trim();
            // Keep the opening line's newline so YAML lines count from file line 1.
            let yaml = &text[first_len - 1..offset];
            return Ok(Document { yaml, body });
        }
        offset += line.len();
    }
    let message = "front matter opened by `---` on line 1 is never closed; add a `---` line \
                   after the last field"
        .to_string();
    Err(("front-matter", Some(1), message))
}

/// Parses the front matter into its top-level fields.
fn parse_yaml(yaml: &str) -> Result<Mapping, Issue> {
    let value: Value = yaml_serde::from_str(yaml).map_err(|err| {
        let line = err.location().map(|loc| loc.line());
        let message = format!(
            "front matter is not valid YAML: {err}; check quoting and indentation between \
             the `---` lines"
        );
        ("yaml", line, message)
    })?;
    match value {
        Value::Mapping(map) => Ok(map),
        Value::Null => Err((
            "front-matter",
            Some(1),
            "front matter is empty; add `name:` and `description:` lines".to_string(),
        )),
        other => Err((
            "front-matter",
            Some(2),
            format!(
                "front matter must be `key: value` fields, found a {}",
                kind(&other)
            ),
        )),
    }
}

/// Fields collected so far; `finish` checks what is required.
#[derive(Default)]
struct Draft {
    /// `name`, once read as a string.
    name: Option<String>,
    /// `description`, once read and validated.
    description: Option<String>,
    /// `license`, if given.
    license: Option<String>,
    /// `compatibility`, if given and valid.
    compatibility: Option<String>,
    /// `metadata` pairs.
    metadata: BTreeMap<String, String>,
    /// `allowed-tools` entries.
    allowed_tools: Vec<String>,
    /// Whether `name` / `description` appeared at all (even if invalid).
    seen_name: bool,
    /// See `seen_name`.
    seen_description: bool,
}

impl Draft {
    /// Validates one top-level field and keeps its value.
    fn take_field(&mut self, yaml: &str, key: &Value, value: &Value) -> Result<(), Vec<Issue>> {
        let Some(key) = key.as_str() else {
            let message = format!(
                "front-matter key of type {} is not a field name; allowed: {ALLOWED_FIELDS}",
                kind(key)
            );
            return Err(vec![("unknown-field", None, message)]);
        };
        let line = key_line(yaml, key);
        let single = |rule, message| vec![(rule, line, message)];
        match key {
            "name" => {
                self.seen_name = true;
                self.name = Some(string_field(key, value).map_err(|m| single("name", m))?);
            }
            "description" => {
                self.seen_description = true;
                let text = string_field(key, value).map_err(|m| single("description", m))?;
                self.description =
                    Some(check_description(&text).map_err(|m| single("description", m))?);
            }
            "license" => {
                self.license = Some(string_field(key, value).map_err(|m| single("license", m))?)
            }
            "compatibility" => {
                let text = string_field(key, value).map_err(|m| single("compatibility", m))?;
                self.compatibility =
                    Some(check_compatibility(text).map_err(|m| single("compatibility", m))?);
            }
            "metadata" => self.metadata = metadata_field(yaml, line, value)?,
            "allowed-tools" => {
                self.allowed_tools =
                    allowed_tools_field(value).map_err(|m| single("allowed-tools", m))?;
            }
            other => {
                let message = format!("unknown field `{other}`; allowed: {ALLOWED_FIELDS}");
                return Err(single("unknown-field", message));
            }
        }
        Ok(())
    }

    /// Checks the required fields and builds the skill.
    fn finish(self, folder: &str, location: &str, doc: &Document<'_>) -> Result<Skill, Vec<Issue>> {
        let mut issues = Vec::new();
        if let Some(name) = &self.name {
            if let Err(issue) = check_name(name, folder) {
                let rule = issue.0;
                issues.push((rule, key_line(doc.yaml, "name"), issue.1));
            }
        } else if !self.seen_name {
            let message = format!("`name` is required; add `name: {folder}` to the front matter");
            issues.push(("name", Some(1), message));
        }
        if self.description.is_none() && !self.seen_description {
            let message = "`description` is required; add `description:` saying what the skill \
                           does and when to use it"
                .to_string();
            issues.push(("description", Some(1), message));
        }
        match (self.name, self.description) {
            (Some(name), Some(description)) if issues.is_empty() => Ok(Skill {
                name,
                description,
                location: location.to_string(),
                body: doc.body.to_string(),
                license: self.license,
                compatibility: self.compatibility,
                metadata: self.metadata,
                allowed_tools: self.allowed_tools,
            }),
            _ => Err(issues),
        }
    }
}

/// The value as a string, or a message saying what it is instead.
fn string_field(key: &str, value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Null => Err(format!(
            "`{key}` has no value; give it one or remove the line"
        )),
        other => Err(format!(
            "`{key}` must be a string, found a {}; put the value in quotes",
            kind(other)
        )),
    }
}

/// Checks `name` against the spec's rules and the folder name: (rule, message) on failure.
fn check_name(name: &str, folder: &str) -> Result<(), (&'static str, String)> {
    let fail = |why: &str| Err(("name", format!("name `{name}` {why}")));
    if name.is_empty() {
        return Err((
            "name",
            format!("`name` is empty; set it to the folder name `{folder}`"),
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return fail(&format!(
            "is longer than {MAX_NAME_CHARS} characters; shorten it (and the folder)"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return fail("may contain only lowercase letters, digits and hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return fail("must not start or end with a hyphen");
    }
    if name.contains("--") {
        return fail("must not contain consecutive hyphens `--`");
    }
    if name != folder {
        let message = format!(
            "name `{name}` must equal its folder name `{folder}`; rename one to match the other"
        );
        return Err(("name-matches-folder", message));
    }
    Ok(())
}

/// Checks the description's length; returns it trimmed.
fn check_description(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(
            "`description` is empty; say what the skill does and when to use it".to_string(),
        );
    }
    let chars = trimmed.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(format!(
            "`description` is {chars} characters; keep it to {MAX_DESCRIPTION_CHARS} and move \
             detail into the body"
        ));
    }
    Ok(trimmed.to_string())
}

/// Checks the compatibility note's length.
fn check_compatibility(text: String) -> Result<String, String> {
    let chars = text.trim().chars().count();
    if chars == 0 {
        return Err(
            "`compatibility` is empty; describe the requirements or remove the line".to_string(),
        );
    }
    if chars > MAX_COMPATIBILITY_CHARS {
        return Err(format!(
            "`compatibility` is {chars} characters; keep it to {MAX_COMPATIBILITY_CHARS}"
        ));
    }
    Ok(text)
}

/// Reads `metadata`: a map of string keys to string values.
fn metadata_field(
    yaml: &str,
    line: Option<usize>,
    value: &Value,
) -> Result<BTreeMap<String, String>, Vec<Issue>> {
    let Value::Mapping(map) = value else {
        let message = format!(
            "`metadata` must be a map of `key: \"value\"` pairs, found a {}",
            kind(value)
        );
        return Err(vec![("metadata", line, message)]);
    };
    let mut pairs = BTreeMap::new();
    let mut issues = Vec::new();
    for (key, item) in map {
        match (key.as_str(), item) {
            (Some(key), Value::String(text)) => {
                pairs.insert(key.to_string(), text.clone());
            }
            (Some(key), other) => {
                let at = line.and_then(|l| nested_key_line(yaml, l, key)).or(line);
                let message = format!(
                    "metadata `{key}` must be a string, found a {}; put the value in quotes",
                    kind(other)
                );
                issues.push(("metadata", at, message));
            }
            (None, _) => {
                let message = format!("metadata keys must be strings, found a {}", kind(key));
                issues.push(("metadata", line, message));
            }
        }
    }
    if issues.is_empty() {
        Ok(pairs)
    } else {
        Err(issues)
    }
}

/// Reads `allowed-tools`: a space-separated string, or a list of strings.
fn allowed_tools_field(value: &Value) -> Result<Vec<String>, String> {
    match value {
        Value::String(text) => Ok(text.split_whitespace().map(str::to_string).collect()),
        Value::Sequence(items) => items
            .iter()
            .map(|item| match item.as_str().map(str::trim) {
                Some(tool) if !tool.is_empty() => Ok(tool.to_string()),
                _ => Err(format!(
                    "`allowed-tools` entries must be non-empty strings, found a {}",
                    kind(item)
                )),
            })
            .collect(),
        other => Err(format!(
            "`allowed-tools` must be a space-separated string or a list of strings, found a {}",
            kind(other)
        )),
    }
}

/// Line (1-based, in the file) of a top-level `key:` in the front matter.
fn key_line(yaml: &str, key: &str) -> Option<usize> {
    yaml.lines()
        .position(|line| starts_with_key(line, key))
        .map(|index| index + 1)
}

/// Line of an indented `key:` inside the block that starts on `parent_line`.
fn nested_key_line(yaml: &str, parent_line: usize, key: &str) -> Option<usize> {
    yaml.lines()
        .enumerate()
        .skip(parent_line)
        .take_while(|(_, line)| line.trim().is_empty() || line.starts_with([' ', '\t']))
        .find(|(_, line)| starts_with_key(line.trim_start(), key))
        .map(|(index, _)| index + 1)
}

/// Whether `line` starts with `key:`, `"key":` or `'key':`.
fn starts_with_key(line: &str, key: &str) -> bool {
    [
        format!("{key}:"),
        format!("\"{key}\":"),
        format!("'{key}':"),
    ]
    .iter()
    .any(|prefix| line.starts_with(prefix.as_str()))
}

/// A YAML value's kind, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Sequence(_) => "list",
        Value::Mapping(_) => "map",
        Value::Tagged(_) => "tagged value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `parse` should give for one input.
    enum Want {
        /// A valid skill with this name.
        Skill(&'static str),
        /// Exactly these (rule, line) problems, in this order.
        Problems(&'static [(&'static str, Option<usize>)]),
    }

    /// A SKILL.md with these front-matter lines and body.
    fn doc(front: &str, body: &str) -> String {
        format!("---\n{front}---\n{body}")
    }

    /// A SKILL.md for `skills/cite-sources/` with extra front-matter lines after the
    /// required ones (so they start on line 4).
    fn cite(extra: &str) -> String {
        doc(
            &format!("name: cite-sources\ndescription: Cite the docs page.\n{extra}"),
            "Body",
        )
    }

    fn check(label: &str, folder: &str, text: &str, want: &Want) {
        let location = format!("skills/{folder}/SKILL.md");
        match (want, Skills::parse(folder, &location, text)) {
            (Want::Skill(name), Ok(skill)) => {
                assert_eq!(skill.name, *name, "{label}");
                assert_eq!(skill.location, location, "{label}");
            }
            (Want::Problems(expected), Err(problems)) => {
                let got: Vec<_> = problems.iter().map(|p| (p.rule, p.line)).collect();
                assert_eq!(got, expected.to_vec(), "{label}: {problems:#?}");
                for problem in &problems {
                    assert_eq!(problem.file, location, "{label}");
                    assert!(!problem.message.is_empty(), "{label}");
                }
            }
            (_, got) => panic!("{label}: unexpected result {got:#?}"),
        }
    }

    #[test]
    fn parse_table() {
        use Want::{Problems, Skill};
        let name_64 = "a".repeat(64);
        let name_65 = "a".repeat(65);
        let compat_501 = "c".repeat(501);
        #[rustfmt::skip]
        let cases: Vec<(&str, &str, String, Want)> = vec![
            ("valid minimal", "cite-sources", cite(""), Skill("cite-sources")),
            ("valid all optional fields", "cite-sources", cite("license: Apache-2.0\ncompatibility: any\nmetadata:\n  author: docs-team\nallowed-tools: search read\n"), Skill("cite-sources")),
            ("digits and hyphens", "v2-notes", doc("name: v2-notes\ndescription: d\n", ""), Skill("v2-notes")),
            ("name of 64 chars", &name_64, doc(&format!("name: {name_64}\ndescription: d\n"), ""), Skill("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")),
            ("name uppercase", "Cite-Sources", doc("name: Cite-Sources\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name underscore", "cite_sources", doc("name: cite_sources\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name leading hyphen", "-cite", doc("name: -cite\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name trailing hyphen", "cite-", doc("name: cite-\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name double hyphen", "cite--sources", doc("name: cite--sources\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name of 65 chars", &name_65, doc(&format!("name: {name_65}\ndescription: d\n"), ""), Problems(&[("name", Some(2))])),
            ("name empty", "cite", doc("name: \"\"\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name without value", "cite", doc("name:\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name a number", "42", doc("name: 42\ndescription: d\n", ""), Problems(&[("name", Some(2))])),
            ("name missing", "cite", doc("description: d\n", ""), Problems(&[("name", Some(1))])),
            ("name differs from folder", "other", cite(""), Problems(&[("name-matches-folder", Some(2))])),
            ("description blank", "cite", doc("name: cite\ndescription: \"   \"\n", ""), Problems(&[("description", Some(3))])),
            ("description 1025 chars", "cite", doc(&format!("name: cite\ndescription: {}\n", "d".repeat(1025)), ""), Problems(&[("description", Some(3))])),
            ("description 1024 chars", "cite", doc(&format!("name: cite\ndescription: {}\n", "d".repeat(1024)), ""), Skill("cite")),
            ("description missing", "cite", doc("name: cite\n", ""), Problems(&[("description", Some(1))])),
            ("no front matter", "cite", "# Cite sources\n".to_string(), Problems(&[("front-matter", Some(1))])),
            ("front matter not on line 1", "cite", format!("\n{}", cite("")), Problems(&[("front-matter", Some(1))])),
            ("front matter unclosed", "cite", "---\nname: cite\ndescription: d\n".to_string(), Problems(&[("front-matter", Some(1))])),
            ("front matter empty", "cite", doc("", "Body"), Problems(&[("front-matter", Some(1))])),
            ("front matter a list", "cite", doc("- name\n", ""), Problems(&[("front-matter", Some(2))])),
            ("yaml syntax error on line 2", "cite", doc("name: cite: sources\ndescription: d\n", ""), Problems(&[("yaml", Some(2))])),
            ("yaml syntax error on line 4", "cite-sources", cite("license: MIT: x\n"), Problems(&[("yaml", Some(4))])),
            ("yaml duplicate key", "cite-sources", cite("name: again\n"), Problems(&[("yaml", Some(2))])),
            ("unknown field", "cite-sources", cite("version: 1\n"), Problems(&[("unknown-field", Some(4))])),
            ("metadata non-string value", "cite-sources", cite("metadata:\n  author: me\n  version: 1.0\n"), Problems(&[("metadata", Some(6))])),
            ("metadata not a map", "cite-sources", cite("metadata: yes\n"), Problems(&[("metadata", Some(4))])),
            ("license not a string", "cite-sources", cite("license: [MIT]\n"), Problems(&[("license", Some(4))])),
            ("compatibility 501 chars", "cite-sources", cite(&format!("compatibility: {compat_501}\n")), Problems(&[("compatibility", Some(4))])),
            ("allowed-tools as string", "cite-sources", cite("allowed-tools: search_docs read_page\n"), Skill("cite-sources")),
            ("allowed-tools as list", "cite-sources", cite("allowed-tools:\n  - search_docs\n  - read_page\n"), Skill("cite-sources")),
            ("allowed-tools a number", "cite-sources", cite("allowed-tools: 3\n"), Problems(&[("allowed-tools", Some(4))])),
            ("allowed-tools list of maps", "cite-sources", cite("allowed-tools:\n  - a: b\n"), Problems(&[("allowed-tools", Some(4))])),
            ("several problems, by line", "Cite", doc("name: Cite\ncolour: red\n", ""), Problems(&[("description", Some(1)), ("name", Some(2)), ("unknown-field", Some(3))])),
            ("CRLF line endings", "cite-sources", cite("").replace('\n', "\r\n"), Skill("cite-sources")),
            ("byte-order mark", "cite-sources", format!("\u{feff}{}", cite("")), Skill("cite-sources")),
        ];
        for (label, folder, text, want) in &cases {
            check(label, folder, text, want);
        }
    }

    #[test]
    fn all_fields_are_kept() {
        let text = cite(
            "license: Apache-2.0\ncompatibility: Needs network access\nmetadata:\n  \
             author: docs-team\n  version: \"1.0\"\nallowed-tools:\n  - search_docs\n  - read_page\n",
        )
        .replace("Body", "\n\n# Cite sources\n\nAlways link the page.\n\n");
        let skill = Skills::parse("cite-sources", "skills/cite-sources/SKILL.md", &text);
        let want = Skill {
            name: "cite-sources".to_string(),
            description: "Cite the docs page.".to_string(),
            location: "skills/cite-sources/SKILL.md".to_string(),
            body: "# Cite sources\n\nAlways link the page.".to_string(),
            license: Some("Apache-2.0".to_string()),
            compatibility: Some("Needs network access".to_string()),
            metadata: BTreeMap::from([
                ("author".to_string(), "docs-team".to_string()),
                ("version".to_string(), "1.0".to_string()),
            ]),
            allowed_tools: vec!["search_docs".to_string(), "read_page".to_string()],
        };
        assert_eq!(skill, Ok(want));
    }

    #[test]
    fn allowed_tools_forms() {
        let cases = [
            (
                "allowed-tools: search_docs  read_page\n",
                vec!["search_docs", "read_page"],
            ),
            (
                "allowed-tools: [search_docs, read_page]\n",
                vec!["search_docs", "read_page"],
            ),
            ("allowed-tools: \"\"\n", vec![]),
            ("", vec![]),
        ];
        for (extra, want) in cases {
            let skill = Skills::parse("cite-sources", "s", &cite(extra));
            let got = skill.map(|s| s.allowed_tools);
            assert_eq!(
                got,
                Ok(want.iter().map(|t| t.to_string()).collect()),
                "{extra}"
            );
        }
    }

    #[test]
    fn messages_say_what_to_do() {
        let cases = [
            (
                "Cite_Sources",
                doc("name: Cite_Sources\ndescription: d\n", ""),
                "skills/Cite_Sources/SKILL.md:2: [name] name `Cite_Sources` may contain only lowercase letters, digits and hyphens",
            ),
            (
                "cite-sources",
                cite("version: 1\n"),
                "skills/cite-sources/SKILL.md:4: [unknown-field] unknown field `version`; allowed: name, description, license, compatibility, metadata, allowed-tools",
            ),
        ];
        for (folder, text, want) in cases {
            let location = format!("skills/{folder}/SKILL.md");
            let problems = Skills::parse(folder, &location, &text)
                .err()
                .unwrap_or_default();
            let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
            assert_eq!(shown, vec![want.to_string()]);
        }
        let no_line = problem_at("skills/x/SKILL.md", None, "missing-skill-md", "m".into());
        assert_eq!(
            no_line.to_string(),
            "skills/x/SKILL.md: [missing-skill-md] m"
        );
    }

    #[test]
    fn catalog_lists_skills_escaped_and_without_bodies() {
        let mut skills = Skills::default();
        let texts = [
            ("b-skill", "description: Use when a < b & c > d\n"),
            ("a-skill", "description: First\n"),
        ];
        for (name, front) in texts {
            let text = doc(&format!("name: {name}\n{front}"), "SECRET BODY <b>");
            let location = format!("skills/{name}/SKILL.md");
            skills.add(Skills::parse(name, &location, &text));
        }
        skills.skills.sort_by(|a, b| a.name.cmp(&b.name));
        let want = "<available_skills>\n<skill>\n<name>a-skill</name>\n<description>First</description>\n\
                    <location>skills/a-skill/SKILL.md</location>\n</skill>\n<skill>\n<name>b-skill</name>\n\
                    <description>Use when a &lt; b &amp; c &gt; d</description>\n\
                    <location>skills/b-skill/SKILL.md</location>\n</skill>\n</available_skills>";
        let catalog = skills.catalog();
        assert_eq!(catalog, want);
        assert!(!catalog.contains("SECRET BODY"));
        assert_eq!(
            skills.get("b-skill").map(|s| s.body.as_str()),
            Some("SECRET BODY <b>")
        );
        assert!(skills.get("c-skill").is_none());
        assert_eq!(Skills::default().catalog(), "");
    }

    /// How one `skills/<folder>` is laid out in the load fixture.
    enum Fixture {
        /// SKILL.md with this text.
        Text(String),
        /// SKILL.md with these raw bytes.
        Bytes(&'static [u8]),
        /// The folder but no SKILL.md.
        NoSkillMd,
        /// SKILL.md is a symlink to a file outside the workspace.
        LinkOutside,
        /// SKILL.md is a FIFO nobody writes to.
        Fifo,
        /// The folder itself is a symlink to a folder outside the workspace.
        FolderLinkOutside,
        /// A loose file, not a folder.
        LooseFile,
    }

    /// One load-fixture row: folder name, how it is laid out, and the (rule, line) of the
    /// problem it must produce (`None`: no problem).
    type Row = (&'static str, Fixture, Option<(&'static str, Option<usize>)>);

    /// Builds `root/skills/...` from the table; `outside/` holds what links point to.
    fn build(base: &std::path::Path, table: &[Row]) {
        let outside = base.join("outside");
        let skills = base.join("root").join("skills");
        std::fs::create_dir_all(outside.join("secret-skill")).unwrap();
        std::fs::write(outside.join("SKILL.md"), cite("")).unwrap();
        std::fs::create_dir_all(&skills).unwrap();
        for (folder, fixture, _) in table {
            let dir = skills.join(folder);
            let file = dir.join(SKILL_FILE);
            match fixture {
                Fixture::FolderLinkOutside => {
                    std::os::unix::fs::symlink(outside.join("secret-skill"), &dir).unwrap()
                }
                Fixture::LooseFile => std::fs::write(&dir, "notes").unwrap(),
                _ => std::fs::create_dir(&dir).unwrap(),
            }
            match fixture {
                Fixture::Text(text) => std::fs::write(&file, text).unwrap(),
                Fixture::Bytes(bytes) => std::fs::write(&file, bytes).unwrap(),
                Fixture::LinkOutside => {
                    std::os::unix::fs::symlink(outside.join("SKILL.md"), &file).unwrap()
                }
                Fixture::Fifo => {
                    let status = std::process::Command::new("mkfifo").arg(&file).status();
                    assert!(status.is_ok_and(|s| s.success()), "mkfifo failed");
                }
                _ => {}
            }
        }
    }

    #[test]
    fn load_reports_bad_folders_and_keeps_good_ones() {
        let huge = format!("{}{}", cite(""), "x".repeat(MAX_SKILL_BYTES as usize));
        #[rustfmt::skip]
        let table: Vec<Row> = vec![
            ("cite-sources", Fixture::Text(cite("")), None),
            ("summarize", Fixture::Text(doc("name: summarize\ndescription: Sum up.\n", "Body")), None),
            ("bad-name", Fixture::Text(cite("")), Some(("name-matches-folder", Some(2)))),
            ("empty", Fixture::NoSkillMd, Some(("missing-skill-md", None))),
            ("escape", Fixture::LinkOutside, Some(("unreadable", None))),
            ("fifo", Fixture::Fifo, Some(("unreadable", None))),
            ("huge", Fixture::Text(huge), Some(("unreadable", None))),
            ("latin1", Fixture::Bytes(b"---\nname: latin1\ndescription: caf\xe9\n---\n"), Some(("unreadable", Some(3)))),
            ("linked-folder", Fixture::FolderLinkOutside, Some(("unreadable", None))),
            ("notes.txt", Fixture::LooseFile, None),
        ];
        let base = tempfile::tempdir().unwrap();
        build(base.path(), &table);
        let root =
            Dir::open_ambient_dir(base.path().join("root"), cap_std::ambient_authority()).unwrap();
        // Load on another thread so a FIFO that blocks fails the test instead of hanging it.
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || send.send(Skills::load(&root)));
        let loaded = receive
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("Skills::load hung (a FIFO was opened?)");

        let names: Vec<&str> = loaded.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["cite-sources", "summarize"]);
        let got: Vec<(String, &str, Option<usize>)> = loaded
            .problems
            .iter()
            .map(|p| (p.file.clone(), p.rule, p.line))
            .collect();
        let want: Vec<(String, &str, Option<usize>)> = table
            .iter()
            .filter_map(|(folder, fixture, want)| {
                let file = match fixture {
                    Fixture::FolderLinkOutside => format!("skills/{folder}"),
                    _ => format!("skills/{folder}/SKILL.md"),
                };
                want.map(|(rule, line)| (file, rule, line))
            })
            .collect();
        assert_eq!(got, want, "{:#?}", loaded.problems);
        let catalog = loaded.catalog();
        assert!(catalog.contains("<location>skills/summarize/SKILL.md</location>"));
        assert!(!catalog.contains("bad-name"));
    }

    #[test]
    fn load_without_skills_folder_is_empty() {
        let base = tempfile::tempdir().unwrap();
        let root = Dir::open_ambient_dir(base.path(), cap_std::ambient_authority()).unwrap();
        let loaded = Skills::load(&root);
        assert!(loaded.skills.is_empty() && loaded.problems.is_empty());
        assert_eq!(loaded.catalog(), "");
    }
}
