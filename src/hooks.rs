//! Policy hooks: rules an operator declares in `[hooks]` (data, never code), applied by the
//! harness around every tool call and before an answer is taken:
//!
//! - `[[hooks.pre_tool]]`: the first rule whose `tool`, `path` (a glob on the call's `path`
//!   argument, as the workspace policy reads it: only `read_file` and `write_file` have one; a
//!   document whose read is denied or asked about is also hidden from every search and listing,
//!   [`Hooks::hides`]) and `arguments` (a regular expression over the call's arguments, decoded,
//!   and folded as the index folds words, [`fold`]) all match decides, for the model's calls and the
//!   harness's own first search alike: `allow` (no further rule applies; the built-in policy still
//!   does), `deny` (the call is refused with the rule's reason) or `ask` (a person approves the
//!   call first, as a write is approved);
//! - `[hooks.post_tool]`: extra redaction patterns and a size cap for every tool result;
//! - `[hooks.stop]`: an answer must cite a verified section, or one whose path matches one of
//!   `require_citation_from`; otherwise it is sent back once, then replaced by the retrieval-only
//!   answer, as an unverified one is.
//!
//! Each decision is recorded in the session log (`Event::Hook`) and told to the trace, with the
//! rule that made it. The rules are compiled once ([`Hooks::compile`]), when the configuration is
//! read, so a bad glob or pattern is a configuration error that names the rule.

mod stemmed;

use globset::{Glob, GlobMatcher, GlobSet, GlobSetBuilder};
use regex::Regex;

use crate::tools::Tool;

use crate::config::hooks::HooksConfig;
pub use crate::config::hooks::RuleDecision;

/// A compiled pre-tool rule.
#[derive(Debug, Clone)]
struct Rule {
    name: String,
    tool: Option<Tool>,
    path: Option<GlobMatcher>,
    arguments: Option<ArgumentsRule>,
    decision: RuleDecision,
    reason: String,
}

/// A pre-tool rule's `arguments` pattern, in each form it is matched in.
#[derive(Debug, Clone)]
struct ArgumentsRule {
    /// As written: against the arguments as sent, and with their JSON escapes decoded.
    written: Regex,
    /// Its diacritics dropped: against the folded arguments ([`fold`]), so `café` also matches
    /// what folds to `cafe`.
    folded: Regex,
    /// Its words as their stems: against the folded arguments' words as their stems
    /// ([`stemmed`]), so `restructuring` also matches `restructured`, which the search finds
    /// the same; `None` when the pattern has no word.
    stemmed: Option<Regex>,
}

/// The rules, compiled.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    rules: Vec<Rule>,
    /// The `post_tool.redact` patterns, and the guard that applies them to text sent elsewhere.
    redact: crate::guard::outbound::Outbound,
    max_result_bytes: usize,
    require_citation: bool,
    citation_from: Option<(GlobSet, Vec<String>)>,
}

/// A pre-tool rule's decision on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruled {
    /// The rule's name.
    pub rule: String,
    /// What it decided.
    pub decision: RuleDecision,
    /// Its reason.
    pub reason: String,
}

/// What the post-tool hook did to a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trimmed {
    /// The result as the model is shown it.
    pub text: String,
    /// What changed, for the log (`redacted 2 matches of post_tool.redact[0]`, `cut to 4000
    /// bytes`); empty when nothing did.
    pub changes: Vec<String>,
}

/// A pre-tool rule as messages name it: `hooks.pre_tool[2] (no-internal)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleAt {
    /// Its place in `[[hooks.pre_tool]]`, from 0.
    pub index: usize,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for RuleAt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hooks.pre_tool[{}] ({})", self.index, self.name)
    }
}

/// Why `[hooks]` does not compile: each message names the rule or setting and says what is
/// wrong.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// A pre-tool rule without a name.
    #[error("hooks.pre_tool[{index}] needs a name, recorded with each decision it makes")]
    Unnamed {
        /// Its place in `[[hooks.pre_tool]]`.
        index: usize,
    },
    /// A pre-tool rule names a tool there is not.
    #[error("{at}: no tool is named `{tool}`; the tools are {}", crate::tools::names().join(", "))]
    UnknownTool {
        /// The rule.
        at: RuleAt,
        /// The name it gave.
        tool: String,
    },
    /// A pre-tool rule's `path` is not a usable glob.
    #[error("{at}: {source}")]
    RulePath {
        /// The rule.
        at: RuleAt,
        /// What is wrong with the glob.
        source: PathGlobError,
    },
    /// A pre-tool rule's `arguments` is not a regular expression.
    #[error("{at}: arguments `{pattern}` is not a pattern ({source})")]
    RuleArguments {
        /// The rule.
        at: RuleAt,
        /// The pattern as written.
        pattern: String,
        /// What the regex parser said.
        source: regex::Error,
    },
    /// A pre-tool rule's `arguments` whose words could not be stemmed.
    #[error("{at}: arguments `{pattern}`: its words could not be read as the index reads them ({source})")]
    RuleStems {
        /// The rule.
        at: RuleAt,
        /// The pattern as written.
        pattern: String,
        /// What went wrong.
        source: stemmed::StemError,
    },
    /// A deny rule without a reason.
    #[error("{at}: a deny rule needs a reason, which the model is shown")]
    DenyWithoutReason {
        /// The rule.
        at: RuleAt,
    },
    /// A `post_tool.redact` entry is not a regular expression.
    #[error("hooks.post_tool.redact[{index}]: `{pattern}` is not a pattern ({source})")]
    RedactPattern {
        /// Its place in the list.
        index: usize,
        /// The pattern.
        pattern: String,
        /// What the regex parser said.
        source: regex::Error,
    },
    /// A `post_tool.redact` entry that matches empty text (it would redact between every byte).
    #[error("hooks.post_tool.redact[{index}]: `{pattern}` matches empty text; it must match something")]
    RedactMatchesEmpty {
        /// Its place in the list.
        index: usize,
        /// The pattern.
        pattern: String,
    },
    /// A `stop.require_citation_from` glob is not usable.
    #[error("hooks.stop.require_citation_from: {0}")]
    CitationGlob(#[source] PathGlobError),
    /// The `stop.require_citation_from` globs do not build into one set.
    #[error("hooks.stop.require_citation_from: {0}")]
    CitationSet(#[source] globset::Error),
}

/// Why a path glob is refused.
#[derive(Debug, thiserror::Error)]
pub enum PathGlobError {
    /// It starts with `./` or `/`, so it could never match a workspace-relative path.
    #[error("path `{glob}` must start with an area, as docs/… (paths are workspace-relative)")]
    NotRelative {
        /// The glob.
        glob: String,
    },
    /// globset cannot read it.
    #[error("path `{glob}` is not a glob ({source})")]
    NotAGlob {
        /// The glob.
        glob: String,
        /// What globset said.
        source: globset::Error,
    },
}

impl Hooks {
    /// Compiles `config`; an error names the rule or setting and says what is wrong.
    pub fn compile(config: &HooksConfig) -> Result<Hooks, HooksError> {
        let mut rules = Vec::new();
        for (i, rule) in config.pre_tool.iter().enumerate() {
            let at = || RuleAt { index: i, name: rule.name.clone() };
            if rule.name.trim().is_empty() {
                return Err(HooksError::Unnamed { index: i });
            }
            let tool = match &rule.tool {
                Some(name) => Some(
                    Tool::from_name(name).ok_or_else(|| HooksError::UnknownTool { at: at(), tool: name.clone() })?,
                ),
                None => None,
            };
            let path = match &rule.path {
                Some(glob) => {
                    Some(path_glob(glob).map_err(|source| HooksError::RulePath { at: at(), source })?.compile_matcher())
                }
                None => None,
            };
            let arguments = match &rule.arguments {
                Some(pattern) => {
                    let bad = |source| HooksError::RuleArguments { at: at(), pattern: pattern.clone(), source };
                    let written = Regex::new(pattern).map_err(bad)?;
                    let folded = Regex::new(&without_diacritics(pattern)).map_err(bad)?;
                    let stemmed = stemmed::pattern(&without_diacritics(pattern))
                        .map_err(|source| HooksError::RuleStems { at: at(), pattern: pattern.clone(), source })?;
                    Some(ArgumentsRule { written, folded, stemmed })
                }
                None => None,
            };
            if rule.decision == RuleDecision::Deny && rule.reason.trim().is_empty() {
                return Err(HooksError::DenyWithoutReason { at: at() });
            }
            rules.push(Rule {
                name: rule.name.clone(),
                tool,
                path,
                arguments,
                decision: rule.decision,
                reason: rule.reason.clone(),
            });
        }
        let mut redact = Vec::new();
        for (i, pattern) in config.post_tool.redact.iter().enumerate() {
            let regex = Regex::new(pattern).map_err(|source| HooksError::RedactPattern {
                index: i,
                pattern: pattern.clone(),
                source,
            })?;
            if regex.is_match("") {
                return Err(HooksError::RedactMatchesEmpty { index: i, pattern: pattern.clone() });
            }
            redact.push(regex);
        }
        let citation_from = if config.stop.require_citation_from.is_empty() {
            None
        } else {
            let mut set = GlobSetBuilder::new();
            for glob in &config.stop.require_citation_from {
                set.add(path_glob(glob).map_err(HooksError::CitationGlob)?);
            }
            let set = set.build().map_err(HooksError::CitationSet)?;
            Some((set, config.stop.require_citation_from.clone()))
        };
        Ok(Hooks {
            rules,
            redact: crate::guard::outbound::Outbound::new(redact),
            max_result_bytes: config.post_tool.max_result_bytes,
            require_citation: config.stop.require_citation,
            citation_from,
        })
    }

    /// How many rules and patterns there are, for `check`.
    pub fn describe(&self) -> String {
        let stop = match (&self.citation_from, self.require_citation) {
            (Some((_, globs)), _) => format!("a citation from {}", globs.join(" or ")),
            (None, true) => "a verified citation".into(),
            (None, false) => "nothing beyond the built-in verification".into(),
        };
        format!(
            "{} pre-tool rule(s), {} post-tool redaction pattern(s){}, an answer needs {stop}",
            self.rules.len(),
            self.redact.patterns().len(),
            if self.max_result_bytes > 0 {
                format!(", results cut at {} bytes", self.max_result_bytes)
            } else {
                String::new()
            }
        )
    }

    /// The first rule that matches a call of `tool` with `arguments`, if any. A rule's
    /// `arguments` pattern is matched against the arguments as the toolbox will read them
    /// (JSON escapes decoded: `\u0070assword` is `password`), against the raw text, against
    /// the decoded text folded as the index folds words ([`fold`]), and, its words stemmed,
    /// against that text's words stemmed as the index stems them ([`stemmed`]), so a spelling
    /// or a form the search finds the same (`bluebïrd`, `BLUEBİRD`, `restructured` for
    /// `restructuring`) is caught the same.
    pub fn before(&self, tool: &str, arguments: &str) -> Option<Ruled> {
        if self.rules.is_empty() {
            return None;
        }
        let known = Tool::from_name(tool);
        let path = call_path(arguments);
        let value = serde_json::from_str::<serde_json::Value>(arguments).ok();
        // Strings decoded (as the tool reads them), then folded; keys and punctuation too.
        let decoded = value.as_ref().map(|v| v.to_string());
        let folded = fold(&value.as_ref().map_or_else(|| arguments.to_string(), json_text));
        // The words as the index stems them, made once for every rule that asks; when they
        // cannot be made, a rule that refuses or asks matches and one that allows does not.
        let stemmed_text = std::cell::OnceCell::new();
        let stemmed_match = |re: &Regex, decision: RuleDecision| match stemmed_text
            .get_or_init(|| crate::index::stemmed(&folded).ok())
        {
            Some(text) => re.is_match(text),
            None => decision != RuleDecision::Allow,
        };
        self.rules.iter().find_map(|rule| {
            let tool_matches = rule.tool.is_none_or(|t| Some(t) == known);
            let path_matches = match (&rule.path, &path) {
                (None, _) => true,
                (Some(glob), Some(path)) => glob.is_match(path),
                (Some(_), None) => false,
            };
            let arguments_match = rule.arguments.as_ref().is_none_or(|pattern| {
                pattern.written.is_match(arguments)
                    || decoded.as_deref().is_some_and(|d| pattern.written.is_match(d))
                    || pattern.folded.is_match(&folded)
                    || pattern.stemmed.as_ref().is_some_and(|re| stemmed_match(re, rule.decision))
            });
            (tool_matches && path_matches && arguments_match).then(|| Ruled {
                rule: rule.name.clone(),
                decision: rule.decision,
                reason: rule.reason.clone(),
            })
        })
    }

    /// The refusal of a call of `tool` with `arguments` where no person can approve one (an MCP
    /// client's call, the HTTP reading routes), with the rule that made it: a `deny`, or an `ask`
    /// with nobody there to ask. `where_` names the front end in the message (`over MCP`).
    pub fn refuses_unattended(&self, tool: &str, arguments: &str, where_: &str) -> Option<(Ruled, String)> {
        let ruled = self.before(tool, arguments)?;
        let message = match ruled.decision {
            RuleDecision::Allow => return None,
            RuleDecision::Deny => format!("refused by the operator's rule `{}`: {}", ruled.rule, ruled.reason),
            RuleDecision::Ask => format!(
                "the operator's rule `{}` asks a person to approve this call, and nobody can approve {where_}; ask the \
                 operator",
                ruled.rule
            ),
        };
        Some((ruled, message))
    }

    /// Whether there is any pre-tool rule.
    pub fn has_rules(&self) -> bool {
        !self.rules.is_empty()
    }

    /// True when the rules keep the document at `path` (`docs/…`) from being read: the first
    /// rule that matches a `read_file` of it denies it or asks a person first. Such a document
    /// is left out of every search, listing and section read as well ([`crate::workspace::hidden`]):
    /// an excerpt is a read, and nobody approves one.
    pub fn hides(&self, path: &str) -> bool {
        let arguments = serde_json::json!({ "path": path }).to_string();
        self.before(Tool::ReadFile.name(), &arguments).is_some_and(|ruled| ruled.decision != RuleDecision::Allow)
    }

    /// Whether the section `anchor` of `path` (`docs/…`) may be listed where nobody approves a
    /// read (MCP's resources, the page's suggested topics): its name (`path#anchor`) is shown as
    /// it is, unchanged by scrubbing and the extra patterns, and a `read_file` of it is allowed.
    pub fn lists(&self, path: &str, anchor: &str) -> bool {
        let source = crate::index::source(path, anchor);
        crate::guard::scrub(&source) == source.as_str()
            && self.redacted(&source) == source.as_str()
            && self
                .before(Tool::ReadFile.name(), &serde_json::json!({"path": path, "anchor": anchor}).to_string())
                .is_none_or(|ruled| ruled.decision == RuleDecision::Allow)
    }

    /// The guard on text sent to another server, with these extra redaction patterns.
    pub fn outbound(&self) -> crate::guard::outbound::Outbound {
        self.redact.clone()
    }

    /// `text` with the extra redaction patterns applied, and nothing cut: for the short texts
    /// shown beside a result (a hit's path or heading in an MCP client's structured content).
    pub fn redacted<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        self.redact.patterns_applied(std::borrow::Cow::Borrowed(text))
    }

    /// A tool result after the extra redaction and the size cap.
    pub fn after(&self, text: &str) -> Trimmed {
        if self.redact.patterns().is_empty() && (self.max_result_bytes == 0 || text.len() <= self.max_result_bytes) {
            return Trimmed { text: text.to_string(), changes: Vec::new() };
        }
        let mut changes = Vec::new();
        let mut text = text.to_string();
        for (i, regex) in self.redact.patterns().iter().enumerate() {
            let found = regex.find_iter(&text).count();
            if found > 0 {
                text = regex.replace_all(&text, crate::guard::outbound::HOOK_MARKER).into_owned();
                changes.push(format!("redacted {found} match(es) of hooks.post_tool.redact[{i}]"));
            }
        }
        if self.max_result_bytes > 0 && text.len() > self.max_result_bytes {
            let cut = crate::guard::redact::floor_char_boundary(&text, self.max_result_bytes);
            text = format!("{cut}\n[cut at {} bytes by hooks.post_tool.max_result_bytes]", self.max_result_bytes);
            changes.push(format!("cut to {} bytes (hooks.post_tool.max_result_bytes)", self.max_result_bytes));
        }
        Trimmed { text, changes }
    }

    /// What an answer with these citations (each a docs path and whether the turn backs it)
    /// lacks under `[hooks.stop]`, as a correction for the model and the rule's name; `None`
    /// when it has what the rules ask.
    pub fn lacking<'a>(&self, citations: impl IntoIterator<Item = (&'a str, bool)>) -> Option<(String, String)> {
        let verified: Vec<&str> = citations.into_iter().filter(|(_, verified)| *verified).map(|(p, _)| p).collect();
        if let Some((set, globs)) = &self.citation_from {
            if !verified.iter().any(|path| set.is_match(path)) {
                return Some((
                    "hooks.stop.require_citation_from".into(),
                    format!(
                        "The operator's rules require the answer to cite a section from {} that you retrieved; \
                         search there, read the section and cite it as [path#anchor].",
                        globs.join(" or ")
                    ),
                ));
            }
        } else if self.require_citation && verified.is_empty() {
            return Some((
                "hooks.stop.require_citation".into(),
                "The operator's rules require the answer to cite a section you retrieved, as [path#anchor].".into(),
            ));
        }
        None
    }

    /// The result size the toolbox should keep to, so a cut keeps whole fenced sections:
    /// `limit`, or the post-tool cap when it is smaller.
    pub fn result_cap(&self, limit: usize) -> usize {
        if self.max_result_bytes > 0 { limit.min(self.max_result_bytes) } else { limit }
    }

    /// Whether any stop rule is set.
    pub fn checks_stop(&self) -> bool {
        self.require_citation || self.citation_from.is_some()
    }
}

/// `text` as the index's tokenizer compares words (FTS5 `unicode61 remove_diacritics 2`), and
/// more: compatibility forms unfolded (NFKD: `ﬁ` is `fi`, full-width letters are ASCII),
/// combining marks dropped (`ï` is `i`), lower case, then marks dropped again (`İ` lowers to `i`
/// and a dot). What an operator's argument rule is matched against besides the text as sent.
pub fn fold(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let lower = without_diacritics(text).to_lowercase();
    lower.nfkd().filter(|c| !unicode_normalization::char::is_combining_mark(*c)).collect()
}

/// `text` in compatibility decomposition with its combining marks dropped, case kept: a
/// pattern's letters as [`fold`] leaves them (its syntax is ASCII, which this leaves alone).
fn without_diacritics(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    text.nfkd().filter(|c| !unicode_normalization::char::is_combining_mark(*c)).collect()
}

/// The JSON `value` as text with its strings as they are (not escaped): what folding reads.
fn json_text(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(json_text).collect::<Vec<_>>().join(" "),
        Value::Object(fields) => {
            fields.iter().map(|(k, v)| format!("{k}: {}", json_text(v))).collect::<Vec<_>>().join(" ")
        }
        other => other.to_string(),
    }
}

/// A glob over workspace paths as the policy writes them (`docs/internal/**`): `*` stays inside
/// one folder, as in a `.gitignore`; a glob that starts with `./` or `/` could never match,
/// so it is refused.
fn path_glob(glob: &str) -> Result<Glob, PathGlobError> {
    if glob.starts_with("./") || glob.starts_with('/') {
        return Err(PathGlobError::NotRelative { glob: glob.to_string() });
    }
    globset::GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|source| PathGlobError::NotAGlob { glob: glob.to_string(), source })
}

/// What a person is asked about for a call a rule asks about: its path as the policy reads it
/// (`read_file docs/internal/x.md`), or the tool and its arguments, clipped.
pub fn target(tool: &str, arguments: &str) -> String {
    let tool = crate::guard::clip(tool, 40);
    match call_path(arguments) {
        Some(path) => format!("{tool} {path}"),
        None => format!("{tool} {}", crate::guard::clip(arguments, 200)),
    }
}

/// The `path` argument of a call, as the workspace policy reads it (`./docs//a.md` →
/// `docs/a.md`), when the call has one the policy accepts.
fn call_path(arguments: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let raw = value.get("path")?.as_str()?;
    crate::workspace::policy::check_read(raw)
        .or_else(|_| crate::workspace::policy::check_write(raw))
        .ok()
        .map(|path| path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of a table: the input, which error it must give, and that error's message.
    type Row<'a> = (&'a str, fn(&HooksError) -> bool, &'a str);

    /// `[hooks]` read from `toml` and compiled; the TOML reader's or the compiler's message.
    fn hooks(toml: &str) -> Result<Hooks, Box<dyn std::error::Error>> {
        let config: HooksConfig = toml::from_str(toml)?;
        Ok(Hooks::compile(&config)?)
    }

    /// An argument rule catches every spelling the index finds the same: accents, Unicode
    /// case (the Turkish dotted capital I), compatibility forms, JSON escapes; not another word.
    #[test]
    fn an_argument_rule_matches_the_arguments_folded_as_the_index_folds_them() {
        let hooks = hooks(
            r#"[[pre_tool]]
               name = "no-bluebird"
               arguments = "(?i)bluebird"
               decision = "deny"
               reason = "Project Bluebird is confidential."
               [[pre_tool]]
               name = "no-cafe"
               tool = "search_docs"
               arguments = "café"
               decision = "deny"
               reason = "no"
            "#,
        )
        .expect("compiles");
        for query in [
            "bluebird",
            "BLUEBIRD",
            "bluebïrd",
            "BLUEBİRD",
            "blúébírd",
            "ｂｌｕｅｂｉｒｄ",
            "blue\\u0062ird",
            "Bluebi\\u0308rd",
        ] {
            let arguments = format!(r#"{{"query": "plans for {query}"}}"#);
            let ruled = hooks.before("search_docs", &arguments);
            assert_eq!(ruled.map(|r| r.rule), Some("no-bluebird".to_string()), "{query}");
        }
        for query in ["cafe", "CAFÉ", "café", "cafe\\u0301"] {
            let arguments = format!(r#"{{"query": "{query} menu"}}"#);
            assert_eq!(hooks.before("search_docs", &arguments).map(|r| r.rule), Some("no-cafe".into()), "{query}");
        }
        let stems = super::tests::hooks(
            "[[pre_tool]]\nname = \"no-restructuring\"\narguments = \"(?i)restructuring\"\ndecision = \"deny\"\nreason = \"r\"\n",
        )
        .expect("compiles");
        for query in ["restructure", "Restructured", "RESTRUCTURES", "restructur\\u0065d"] {
            let arguments = format!(r#"{{"query": "the {query} teams"}}"#);
            let ruled = stems.before("search_docs", &arguments).map(|r| r.rule);
            assert_eq!(ruled, Some("no-restructuring".into()), "a form the index stems alike: {query}");
        }
        assert_eq!(stems.before("search_docs", r#"{"query": "the structure"}"#), None);
        for query in ["blue bird", "a blackbird, a blue jay", "caffeine"] {
            let arguments = format!(r#"{{"query": "{query}"}}"#);
            assert_eq!(hooks.before("search_docs", &arguments), None, "{query}");
        }
        assert_eq!(fold("Ｂｌｕｅｂİｒｄ ﬁne Straße"), "bluebird fine straße");
    }

    #[test]
    fn the_first_matching_rule_decides_on_the_path_the_policy_reads() {
        let h = hooks(
            r#"
            [[pre_tool]]
            name = "public-internal"
            path = "docs/internal/public.md"
            decision = "allow"
            [[pre_tool]]
            name = "no-internal"
            tool = "read_file"
            path = "docs/internal/**"
            decision = "deny"
            reason = "internal docs are not for answers"
            [[pre_tool]]
            name = "no-passwords"
            arguments = "(?i)password"
            decision = "deny"
            reason = "no searching for passwords"
            "#,
        )
        .expect("compiles");
        let ruled = |tool: &str, args: &str| h.before(tool, args).map(|r| (r.rule, r.decision));
        assert_eq!(
            ruled("read_file", r#"{"path":"docs/internal/x.md"}"#),
            Some(("no-internal".into(), RuleDecision::Deny))
        );
        // The same file however the model writes its path.
        assert_eq!(
            ruled("read_file", r#"{"path":"./docs//internal/x.md"}"#),
            Some(("no-internal".into(), RuleDecision::Deny))
        );
        assert_eq!(ruled("read_file", r#"{"path":"docs/internal/public.md"}"#).map(|r| r.1), Some(RuleDecision::Allow));
        assert_eq!(ruled("read_file", r#"{"path":"docs/refunds.md"}"#), None);
        assert_eq!(ruled("search_docs", r#"{"query":"admin PASSWORD"}"#).map(|r| r.0), Some("no-passwords".into()));
        assert_eq!(ruled("search_docs", r#"{"query":"refunds"}"#), None);
        // A JSON escape is read as the toolbox reads it.
        assert_eq!(
            ruled("search_docs", r#"{"query":"admin \u0070assword"}"#).map(|r| r.0),
            Some("no-passwords".into())
        );
    }

    #[test]
    fn a_star_stays_inside_one_folder_and_globs_start_with_an_area() {
        let h = hooks("[[pre_tool]]\nname = \"top\"\npath = \"docs/*\"\ndecision = \"deny\"\nreason = \"r\"\n")
            .expect("compiles");
        assert!(h.before("read_file", r#"{"path":"docs/a.md"}"#).is_some());
        assert!(h.before("read_file", r#"{"path":"docs/internal/a.md"}"#).is_none(), "* is one folder");
        let dotted = hooks("[[pre_tool]]\nname = \"d\"\npath = \"./docs/**\"\ndecision = \"deny\"\nreason = \"r\"\n");
        assert!(dotted.is_err_and(|e| e.to_string().contains("must start with an area")));
    }

    /// Each way `[hooks]` fails to compile: the error `compile` returns for the rule that
    /// causes it, and its message word for word.
    #[test]
    fn each_compile_error_names_its_rule() {
        let tools = crate::tools::names().join(", ");
        let unknown_tool = format!("hooks.pre_tool[0] (x): no tool is named `rm`; the tools are {tools}");
        #[rustfmt::skip]
        let cases: Vec<Row<'_>> = vec![
            ("[[pre_tool]]\nname = \" \"\ndecision = \"allow\"\n",
             |e| matches!(e, HooksError::Unnamed { index: 0 }),
             "hooks.pre_tool[0] needs a name, recorded with each decision it makes"),
            ("[[pre_tool]]\nname = \"x\"\ntool = \"rm\"\ndecision = \"allow\"\n",
             |e| matches!(e, HooksError::UnknownTool { .. }), &unknown_tool),
            ("[[pre_tool]]\nname = \"x\"\npath = \"/etc/*\"\ndecision = \"allow\"\n",
             |e| matches!(e, HooksError::RulePath { source: PathGlobError::NotRelative { .. }, .. }),
             "hooks.pre_tool[0] (x): path `/etc/*` must start with an area, as docs/… (paths are workspace-relative)"),
            ("[[pre_tool]]\nname = \"x\"\npath = \"docs/[\"\ndecision = \"allow\"\n",
             |e| matches!(e, HooksError::RulePath { source: PathGlobError::NotAGlob { .. }, .. }),
             "hooks.pre_tool[0] (x): path `docs/[` is not a glob ("),
            ("[[pre_tool]]\nname = \"x\"\narguments = \"(\"\ndecision = \"allow\"\n",
             |e| matches!(e, HooksError::RuleArguments { .. }),
             "hooks.pre_tool[0] (x): arguments `(` is not a pattern ("),
            ("[[pre_tool]]\nname = \"ok\"\ndecision = \"allow\"\n[[pre_tool]]\nname = \"x\"\ndecision = \"deny\"\n",
             |e| matches!(e, HooksError::DenyWithoutReason { .. }),
             "hooks.pre_tool[1] (x): a deny rule needs a reason, which the model is shown"),
            ("[post_tool]\nredact = [\"(\"]\n", |e| matches!(e, HooksError::RedactPattern { .. }),
             "hooks.post_tool.redact[0]: `(` is not a pattern ("),
            ("[post_tool]\nredact = [\"x\", \"a*\"]\n", |e| matches!(e, HooksError::RedactMatchesEmpty { .. }),
             "hooks.post_tool.redact[1]: `a*` matches empty text; it must match something"),
            ("[stop]\nrequire_citation_from = [\"./docs/**\"]\n", |e| matches!(e, HooksError::CitationGlob(_)),
             "hooks.stop.require_citation_from: path `./docs/**` must start with an area, as docs/… (paths are workspace-relative)"),
        ];
        for (toml, is, message) in cases {
            let config: HooksConfig = toml::from_str(toml).expect(toml);
            let error = Hooks::compile(&config).expect_err(toml);
            assert!(is(&error), "{toml}: {error:?}");
            let shown = error.to_string();
            // A parser's own words end some messages: the part before them is exact.
            if message.ends_with('(') {
                assert!(shown.starts_with(message), "{shown}");
            } else {
                assert_eq!(shown, message);
            }
        }
    }

    #[test]
    fn bad_rules_are_named() {
        let tool = hooks("[[pre_tool]]\nname = \"x\"\ntool = \"rm\"\ndecision = \"deny\"\nreason = \"r\"\n");
        assert!(tool.is_err_and(|e| e.to_string().contains("hooks.pre_tool[0] (x): no tool is named `rm`")));
        let glob = hooks("[[pre_tool]]\nname = \"x\"\npath = \"docs/[\"\ndecision = \"allow\"\n");
        assert!(glob.is_err_and(|e| e.to_string().contains("path `docs/[` is not a glob")));
        let reason = hooks("[[pre_tool]]\nname = \"x\"\ndecision = \"deny\"\n");
        assert!(reason.is_err_and(|e| e.to_string().contains("needs a reason")));
        let empty = hooks("[post_tool]\nredact = [\"a*\"]\n");
        assert!(empty.is_err_and(|e| e.to_string().contains("matches empty text")));
        let unknown = hooks("[[pre_tool]]\nname = \"x\"\ndecision = \"maybe\"\n");
        assert!(unknown.is_err(), "allow, deny or ask");
        assert!(hooks("[[pre_tool]]\nname = \"x\"\ndecision = \"ask\"\n").is_ok());
    }

    #[test]
    fn results_are_redacted_and_cut_and_each_change_is_named() {
        let h = hooks("[post_tool]\nredact = [\"ACME-[0-9]{6}\"]\nmax_result_bytes = 40\n").expect("compiles");
        let trimmed = h.after("customer ACME-123456 and ACME-654321 are in the refund window of 14 days");
        assert!(!trimmed.text.contains("ACME-1") && trimmed.text.contains("[REDACTED:hook]"), "{}", trimmed.text);
        assert!(trimmed.text.ends_with("[cut at 40 bytes by hooks.post_tool.max_result_bytes]"));
        assert_eq!(trimmed.changes.len(), 2, "{:?}", trimmed.changes);
        assert!(h.after("nothing to do").changes.is_empty());
    }

    #[test]
    fn an_answer_must_cite_where_the_stop_rules_say() {
        let cite = |path: &'static str, verified: bool| (path, verified);
        let any = hooks("[stop]\nrequire_citation = true\n").expect("compiles");
        assert!(any.lacking([]).is_some());
        assert!(any.lacking([cite("docs/refunds.md", false)]).is_some(), "an unverified citation is not enough");
        assert_eq!(any.lacking([cite("docs/refunds.md", true)]), None);
        let from = hooks("[stop]\nrequire_citation_from = [\"docs/policies/**\"]\n").expect("compiles");
        let lacking = from.lacking([cite("docs/refunds.md", true)]);
        assert!(
            lacking.is_some_and(
                |(rule, text)| rule.ends_with("require_citation_from") && text.contains("docs/policies/**")
            )
        );
        assert_eq!(from.lacking([cite("docs/policies/refunds.md", true)]), None);
        assert!(!Hooks::default().checks_stop());
    }
}
