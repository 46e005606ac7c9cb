//! The path policy: every path the model names is checked here, lexically, before any file is
//! touched. Only this module makes a [`ModelPath`], so a tool cannot open a path it did not check.
//! Confinement on disk (symlinks, hard links) is the job of `workspace::fs`, which opens a
//! `ModelPath` through a capability handle for its area.

use std::fmt;

/// Longest path the model may name, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;
/// Longest single file or folder name, in bytes (the common filesystem limit).
pub const MAX_NAME_BYTES: usize = 255;

/// Which part of the workspace a path lies in; each has its own directory handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// `docs/`: the documentation, read-only.
    Docs,
    /// `notes/`: the one writable folder.
    Notes,
    /// `skills/`: skill bodies, read-only.
    Skills,
    /// `AGENTS.md`: the project's rules, read-only.
    AgentsMd,
}

impl Area {
    /// The workspace-relative name of the area.
    pub fn prefix(self) -> &'static str {
        match self {
            Area::Docs => "docs",
            Area::Notes => "notes",
            Area::Skills => "skills",
            Area::AgentsMd => "AGENTS.md",
        }
    }
}

/// A path the policy accepted: an area and the components inside it, all plain names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelPath {
    area: Area,
    /// Components inside the area; empty only for `AGENTS.md`.
    inner: Vec<String>,
}

impl ModelPath {
    /// The area this path is in.
    pub fn area(&self) -> Area {
        self.area
    }

    /// The path inside the area's folder, `/`-joined (empty for `AGENTS.md`).
    pub fn inner(&self) -> String {
        self.inner.join("/")
    }

    /// The workspace-relative path, as the model and the trace see it.
    pub fn display(&self) -> String {
        if self.inner.is_empty() {
            self.area.prefix().to_string()
        } else {
            format!("{}/{}", self.area.prefix(), self.inner())
        }
    }
}

impl fmt::Display for ModelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// Why a path was refused; shown to the model after `DENIED: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied(pub String);

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn deny<T>(reason: impl Into<String>) -> Result<T, Denied> {
    Err(Denied(reason.into()))
}

/// Characters that render like a slash or a dot-dot and would fool a reader of the path.
const LOOKALIKES: &[char] =
    &['\u{FF0F}', '\u{2215}', '\u{2044}', '\u{29F8}', '\u{FF3C}', '\u{FE68}', '\u{2024}', '\u{FF0E}'];

/// Checks a path the model wants to read.
pub fn check_read(raw: &str) -> Result<ModelPath, Denied> {
    let parts = lexical(raw)?;
    let Some((first, rest)) = parts.split_first() else {
        return deny("empty path: name a file such as docs/refunds.md");
    };
    let area = match first.as_str() {
        "docs" => Area::Docs,
        "notes" => Area::Notes,
        "skills" => Area::Skills,
        "AGENTS.md" if rest.is_empty() => Area::AgentsMd,
        _ => {
            return deny(format!(
                "`{}` is outside the readable areas (docs/, notes/, skills/, AGENTS.md)",
                crate::guard::clip(raw, 120)
            ));
        }
    };
    if area != Area::AgentsMd && rest.is_empty() {
        return deny(format!("`{}` is a folder; name a file inside it", crate::guard::clip(raw, 120)));
    }
    Ok(ModelPath { area, inner: rest.to_vec() })
}

/// Checks a path the model wants to write: only plain names under `notes/`.
pub fn check_write(raw: &str) -> Result<ModelPath, Denied> {
    let parts = lexical(raw)?;
    match parts.first().map(String::as_str) {
        Some("notes") => {}
        Some("docs") | Some("skills") | Some("AGENTS.md") => {
            return deny(format!(
                "`{}` is read-only: writes are allowed only under notes/",
                crate::guard::clip(raw, 120)
            ));
        }
        _ => {
            return deny(format!(
                "`{}` is outside notes/: writes are allowed only under notes/",
                crate::guard::clip(raw, 120)
            ));
        }
    }
    let inner = &parts[1..];
    if inner.is_empty() {
        return deny("notes/ is a folder; name a file such as notes/summary.md");
    }
    for name in inner {
        if name.starts_with('.') {
            return deny(format!("`{name}`: hidden names (starting with a dot) are not writable"));
        }
        if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))) {
            return deny(format!(
                "`{}`: character {:?} is not allowed in a note name (use letters, digits, `.`, `_`, `-`)",
                crate::guard::clip(raw, 120),
                bad
            ));
        }
    }
    Ok(ModelPath { area: Area::Notes, inner: inner.to_vec() })
}

/// The checks every path passes: returns its plain components.
fn lexical(raw: &str) -> Result<Vec<String>, Denied> {
    if raw.trim().is_empty() {
        return deny("empty path: name a file such as docs/refunds.md");
    }
    if raw.len() > MAX_PATH_BYTES {
        return deny(format!("path is {} bytes long; the limit is {MAX_PATH_BYTES}", raw.len()));
    }
    if raw.contains('\0') {
        return deny("path contains a NUL byte");
    }
    if raw.contains('\\') {
        return deny(format!("`{}` contains a backslash; use `/` between names", crate::guard::clip(raw, 120)));
    }
    if has_percent_escape(raw) {
        return deny(format!("`{}` contains percent-encoding; name the file literally", crate::guard::clip(raw, 120)));
    }
    if let Some(c) = raw.chars().find(|c| c.is_control()) {
        return deny(format!("path contains the control character {c:?}"));
    }
    if let Some(c) = raw.chars().find(|c| LOOKALIKES.contains(c)) {
        return deny(format!("`{}` contains {c:?}, which looks like a slash or dot", crate::guard::clip(raw, 120)));
    }
    if raw.starts_with('/') {
        return deny(format!("`{}` is absolute; use a path relative to the workspace", crate::guard::clip(raw, 120)));
    }
    if raw.starts_with('~') {
        return deny(format!(
            "`{}` points into a home folder; use a path relative to the workspace",
            crate::guard::clip(raw, 120)
        ));
    }
    let mut parts = Vec::new();
    for name in raw.split('/') {
        match name {
            "" | "." => continue,
            ".." => {
                return deny(format!(
                    "`{}` contains `..`; paths may not leave their folder",
                    crate::guard::clip(raw, 120)
                ));
            }
            _ if name.len() > MAX_NAME_BYTES => {
                return deny(format!("a name in the path is {} bytes long; the limit is {MAX_NAME_BYTES}", name.len()));
            }
            _ if name.contains(':') && parts.is_empty() => {
                return deny(format!(
                    "`{}` looks like a drive or URL; use a workspace path",
                    crate::guard::clip(raw, 120)
                ));
            }
            _ => parts.push(name.to_string()),
        }
    }
    Ok(parts)
}

fn has_percent_escape(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.windows(3).any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(path, Ok(display) | Err(fragment of the reason))`
    fn check(f: fn(&str) -> Result<ModelPath, Denied>, cases: &[(&str, Result<&str, &str>)]) {
        for (input, expected) in cases {
            let got = f(input);
            match (expected, &got) {
                (Ok(display), Ok(path)) => assert_eq!(&path.display(), display, "input {input:?}"),
                (Err(fragment), Err(Denied(reason))) => {
                    assert!(reason.contains(fragment), "input {input:?}: reason {reason:?} lacks {fragment:?}")
                }
                _ => panic!("input {input:?}: expected {expected:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn read_paths() {
        let long = "a".repeat(300);
        let long_path = format!("docs/{long}");
        let huge = "docs/".to_string() + &"a/".repeat(600);
        check(
            check_read,
            &[
                ("docs/refunds.md", Ok("docs/refunds.md")),
                ("./docs//admin/roles.md", Ok("docs/admin/roles.md")),
                ("AGENTS.md", Ok("AGENTS.md")),
                ("skills/save-note/SKILL.md", Ok("skills/save-note/SKILL.md")),
                ("notes/a.md", Ok("notes/a.md")),
                ("docs/ünïcode.md", Ok("docs/ünïcode.md")),
                ("", Err("empty path")),
                ("docs", Err("is a folder")),
                ("../etc/passwd", Err("`..`")),
                ("docs/../../etc/passwd", Err("`..`")),
                ("/etc/passwd", Err("absolute")),
                ("~/.ssh/id_rsa", Err("home folder")),
                ("docs/a\0b", Err("NUL")),
                ("docs\\..\\secret", Err("backslash")),
                ("docs/%2e%2e/x", Err("percent-encoding")),
                ("docs%2Fx", Err("percent-encoding")),
                ("docs\u{FF0F}x", Err("looks like a slash")),
                ("docs/\u{1b}[31mx", Err("control character")),
                (&long_path, Err("limit is 255")),
                (&huge, Err("limit is 1024")),
                ("C:/Windows/x", Err("drive or URL")),
                ("file:///etc/passwd", Err("drive or URL")),
                (".env", Err("outside the readable areas")),
                ("target/x", Err("outside the readable areas")),
                ("AGENTS.md/x", Err("outside the readable areas")),
            ],
        );
    }

    #[test]
    fn write_paths() {
        check(
            check_write,
            &[
                ("notes/summary.md", Ok("notes/summary.md")),
                ("notes/2026/refunds_v2.txt", Ok("notes/2026/refunds_v2.txt")),
                ("notes/leak.txt", Ok("notes/leak.txt")),
                ("notes", Err("is a folder")),
                ("notes/../docs/refunds.md", Err("`..`")),
                ("docs/refunds.md", Err("read-only")),
                ("AGENTS.md", Err("read-only")),
                ("skills/x/SKILL.md", Err("read-only")),
                ("leak.txt", Err("outside notes/")),
                ("/tmp/x", Err("absolute")),
                ("~/x", Err("home folder")),
                ("notes/.hidden", Err("hidden")),
                ("notes/a b.md", Err("not allowed")),
                ("notes/é.md", Err("not allowed")),
                ("notes%2F..%2Fdocs", Err("percent-encoding")),
                ("notes\\..\\docs", Err("backslash")),
                ("notes\u{FF0F}..\u{FF0F}docs", Err("looks like a slash")),
                ("notes/a\0.md", Err("NUL")),
            ],
        );
    }
}
