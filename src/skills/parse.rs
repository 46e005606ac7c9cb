//! Parsing one SKILL.md: front matter split, YAML, and the Agent Skills field rules, each
//! problem tied to the line of its key.

use super::*;

/// A SKILL.md split at its front matter.
pub(super) struct Document<'a> {
    /// The YAML, with an empty first line standing for the opening `---`, so the YAML
    /// parser's line numbers are the file's line numbers.
    pub(super) yaml: &'a str,
    /// Markdown after the closing `---`, trimmed.
    pub(super) body: &'a str,
}

/// Checks one SKILL.md's text, collecting every problem rather than stopping at the first.
pub(super) fn parse_issues(folder: &str, location: &str, text: &str) -> Result<Skill, Vec<Issue>> {
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
pub(super) fn split_front_matter(text: &str) -> Result<Document<'_>, Issue> {
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
pub(super) fn parse_yaml(yaml: &str) -> Result<Mapping, Issue> {
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
        Value::Null => {
            Err(("front-matter", Some(1), "front matter is empty; add `name:` and `description:` lines".to_string()))
        }
        other => Err((
            "front-matter",
            Some(2),
            format!("front matter must be `key: value` fields, found a {}", kind(&other)),
        )),
    }
}

/// Fields collected so far; `finish` checks what is required.
#[derive(Default)]
pub(super) struct Draft {
    /// `name`, once read as a string.
    pub(super) name: Option<String>,
    /// `description`, once read and validated.
    pub(super) description: Option<String>,
    /// `license`, if given.
    pub(super) license: Option<String>,
    /// `compatibility`, if given and valid.
    pub(super) compatibility: Option<String>,
    /// `metadata` pairs.
    pub(super) metadata: BTreeMap<String, String>,
    /// `allowed-tools` entries.
    pub(super) allowed_tools: Vec<String>,
    /// Whether `name` / `description` appeared at all (even if invalid).
    pub(super) seen_name: bool,
    /// See `seen_name`.
    pub(super) seen_description: bool,
}

impl Draft {
    /// Validates one top-level field and keeps its value.
    pub(super) fn take_field(&mut self, yaml: &str, key: &Value, value: &Value) -> Result<(), Vec<Issue>> {
        let Some(key) = key.as_str() else {
            let message =
                format!("front-matter key of type {} is not a field name; allowed: {ALLOWED_FIELDS}", kind(key));
            return Err(vec![("unknown-field", None, message)]);
        };
        let line = key_line(yaml, key);
        let single = |rule, message| vec![(rule, line, message)];
        let field = |rule, error: FieldError| single(rule, error.to_string());
        match key {
            "name" => {
                self.seen_name = true;
                self.name = Some(string_field(key, value).map_err(|e| field("name", e))?);
            }
            "description" => {
                self.seen_description = true;
                let text = string_field(key, value).map_err(|e| field("description", e))?;
                self.description = Some(check_description(&text).map_err(|e| field("description", e))?);
            }
            "license" => self.license = Some(string_field(key, value).map_err(|e| field("license", e))?),
            "compatibility" => {
                let text = string_field(key, value).map_err(|e| field("compatibility", e))?;
                self.compatibility = Some(check_compatibility(text).map_err(|e| field("compatibility", e))?);
            }
            "metadata" => self.metadata = metadata_field(yaml, line, value)?,
            "allowed-tools" => {
                self.allowed_tools = allowed_tools_field(value).map_err(|e| field("allowed-tools", e))?;
            }
            other => {
                let message = format!("unknown field `{other}`; allowed: {ALLOWED_FIELDS}");
                return Err(single("unknown-field", message));
            }
        }
        Ok(())
    }

    /// Checks the required fields and builds the skill.
    pub(super) fn finish(self, folder: &str, location: &str, doc: &Document<'_>) -> Result<Skill, Vec<Issue>> {
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

/// Why a front-matter field's value is refused: each message names the field and says what
/// to write instead (it becomes a [`SkillProblem`]'s message, on the field's line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum FieldError {
    /// The key is there with nothing after it.
    #[error("`{key}` has no value; give it one or remove the line")]
    NoValue {
        /// The field.
        key: String,
    },
    /// A string field holds a number, a list, a map...
    #[error("`{key}` must be a string, found a {found}; put the value in quotes")]
    NotAString {
        /// The field.
        key: String,
        /// The kind of value found ([`kind`]).
        found: &'static str,
    },
    /// `description` is blank.
    #[error("`description` is empty; say what the skill does and when to use it")]
    EmptyDescription,
    /// `description` is over [`MAX_DESCRIPTION_CHARS`].
    #[error("`description` is {chars} characters; keep it to {max} and move detail into the body", max = MAX_DESCRIPTION_CHARS)]
    LongDescription {
        /// Its length, trimmed.
        chars: usize,
    },
    /// `compatibility` is blank.
    #[error("`compatibility` is empty; describe the requirements or remove the line")]
    EmptyCompatibility,
    /// `compatibility` is over [`MAX_COMPATIBILITY_CHARS`].
    #[error("`compatibility` is {chars} characters; keep it to {max}", max = MAX_COMPATIBILITY_CHARS)]
    LongCompatibility {
        /// Its length, trimmed.
        chars: usize,
    },
    /// An `allowed-tools` list holds an entry that is not a non-empty string.
    #[error("`allowed-tools` entries must be non-empty strings, found a {found}")]
    ToolEntry {
        /// The kind of the entry ([`kind`]).
        found: &'static str,
    },
    /// `allowed-tools` is neither a string nor a list.
    #[error("`allowed-tools` must be a space-separated string or a list of strings, found a {found}")]
    ToolsShape {
        /// The kind of value found ([`kind`]).
        found: &'static str,
    },
}

/// The value as a string, or why it is not one.
pub(super) fn string_field(key: &str, value: &Value) -> Result<String, FieldError> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Null => Err(FieldError::NoValue { key: key.to_string() }),
        other => Err(FieldError::NotAString { key: key.to_string(), found: kind(other) }),
    }
}

/// Checks `name` against the spec's rules and the folder name: (rule, message) on failure.
pub(super) fn check_name(name: &str, folder: &str) -> Result<(), (&'static str, String)> {
    let fail = |why: &str| Err(("name", format!("name `{name}` {why}")));
    if name.is_empty() {
        return Err(("name", format!("`name` is empty; set it to the folder name `{folder}`")));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return fail(&format!("is longer than {MAX_NAME_CHARS} characters; shorten it (and the folder)"));
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        return fail("may contain only lowercase letters, digits and hyphens");
    }
    if name.starts_with('-') || name.ends_with('-') {
        return fail("must not start or end with a hyphen");
    }
    if name.contains("--") {
        return fail("must not contain consecutive hyphens `--`");
    }
    if name != folder {
        let message = format!("name `{name}` must equal its folder name `{folder}`; rename one to match the other");
        return Err(("name-matches-folder", message));
    }
    Ok(())
}

/// Checks the description's length; returns it trimmed.
pub(super) fn check_description(text: &str) -> Result<String, FieldError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(FieldError::EmptyDescription);
    }
    let chars = trimmed.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(FieldError::LongDescription { chars });
    }
    Ok(trimmed.to_string())
}

/// Checks the compatibility note's length.
pub(super) fn check_compatibility(text: String) -> Result<String, FieldError> {
    let chars = text.trim().chars().count();
    if chars == 0 {
        return Err(FieldError::EmptyCompatibility);
    }
    if chars > MAX_COMPATIBILITY_CHARS {
        return Err(FieldError::LongCompatibility { chars });
    }
    Ok(text)
}

/// Reads `metadata`: a map of string keys to string values.
pub(super) fn metadata_field(
    yaml: &str,
    line: Option<usize>,
    value: &Value,
) -> Result<BTreeMap<String, String>, Vec<Issue>> {
    let Value::Mapping(map) = value else {
        let message = format!("`metadata` must be a map of `key: \"value\"` pairs, found a {}", kind(value));
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
                let message =
                    format!("metadata `{key}` must be a string, found a {}; put the value in quotes", kind(other));
                issues.push(("metadata", at, message));
            }
            (None, _) => {
                let message = format!("metadata keys must be strings, found a {}", kind(key));
                issues.push(("metadata", line, message));
            }
        }
    }
    if issues.is_empty() { Ok(pairs) } else { Err(issues) }
}

/// Reads `allowed-tools`: a space-separated string, or a list of strings.
pub(super) fn allowed_tools_field(value: &Value) -> Result<Vec<String>, FieldError> {
    match value {
        Value::String(text) => Ok(text.split_whitespace().map(str::to_string).collect()),
        Value::Sequence(items) => items
            .iter()
            .map(|item| match item.as_str().map(str::trim) {
                Some(tool) if !tool.is_empty() => Ok(tool.to_string()),
                _ => Err(FieldError::ToolEntry { found: kind(item) }),
            })
            .collect(),
        other => Err(FieldError::ToolsShape { found: kind(other) }),
    }
}

/// Line (1-based, in the file) of a top-level `key:` in the front matter.
pub(super) fn key_line(yaml: &str, key: &str) -> Option<usize> {
    yaml.lines().position(|line| starts_with_key(line, key)).map(|index| index + 1)
}

/// Line of an indented `key:` inside the block that starts on `parent_line`.
pub(super) fn nested_key_line(yaml: &str, parent_line: usize, key: &str) -> Option<usize> {
    yaml.lines()
        .enumerate()
        .skip(parent_line)
        .take_while(|(_, line)| line.trim().is_empty() || line.starts_with([' ', '\t']))
        .find(|(_, line)| starts_with_key(line.trim_start(), key))
        .map(|(index, _)| index + 1)
}

/// Whether `line` starts with `key:`, `"key":` or `'key':`.
pub(super) fn starts_with_key(line: &str, key: &str) -> bool {
    [format!("{key}:"), format!("\"{key}\":"), format!("'{key}':")]
        .iter()
        .any(|prefix| line.starts_with(prefix.as_str()))
}

/// A YAML value's kind, for messages.
pub(super) fn kind(value: &Value) -> &'static str {
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
