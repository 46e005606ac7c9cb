//! Human approval for writes, failing closed. [`Approved`] can only be made here, and
//! `Workspace::write_note` takes one, so no code path writes without a decision.

use std::io::{BufRead, IsTerminal, Write};

use super::policy::{Denied, ModelPath};
use crate::config::Config;

/// Proof that a human (or `APPROVE=yes`) allowed one write. Its field is private: only
/// [`Approver::decide`] and [`Approved::from_grant`] make one.
#[derive(Debug)]
pub struct Approved(());

impl Approved {
    /// The proof carried by a durable grant of this call (the session log's `ApprovalGranted`
    /// event), and by nothing else: a write in a session happens only after its grant is in
    /// the log.
    pub fn from_grant(record: &impl Grant, call: &str) -> Option<Approved> {
        (record.granted_call() == Some(call)).then_some(Approved(()))
    }
}

/// A durable record that a person allowed one call. The session log's events are the one
/// kind (`session::event`); the trait keeps this module below the session that logs them.
pub trait Grant {
    /// The call this record allows, if it is a grant.
    fn granted_call(&self) -> Option<&str>;
}

/// How writes are decided for this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approver {
    /// `APPROVE=yes`: every write that passes the path policy is allowed.
    Always,
    /// No `APPROVE=yes`, but a person is at a terminal: ask them.
    AskOnTerminal,
    /// Anything else: deny.
    Never,
    /// A one-shot question over HTTP: nobody can be asked, and writes belong in sessions.
    NotInOneShot,
}

/// Whether a person can be asked: stdin and stderr are both terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    /// A person is at a terminal and can answer a prompt.
    Attached,
    /// Nobody can be asked (a pipe, a file, CI, the eval runner).
    Absent,
}

impl Terminal {
    /// This process's terminal, read from stdin and stderr.
    pub fn detect() -> Terminal {
        if std::io::stdin().is_terminal() && crate::guard::sink::stderr_is_terminal() {
            Terminal::Attached
        } else {
            Terminal::Absent
        }
    }
}

impl Approver {
    /// The approver of a question asked outside the server, as the CLI builds it and the eval
    /// runner too: only `APPROVE=yes` approves; otherwise ask when a person is at the terminal;
    /// otherwise deny.
    pub fn new(config: &Config, terminal: Terminal) -> Approver {
        match (config.approve_all(), terminal) {
            (true, _) => Approver::Always,
            (false, Terminal::Attached) => Approver::AskOnTerminal,
            (false, Terminal::Absent) => Approver::Never,
        }
    }

    /// Decides one write of `content` to `path`.
    pub fn decide(&self, path: &ModelPath, content: &str) -> Result<Approved, Denied> {
        match self {
            Approver::Always => Ok(Approved(())),
            Approver::Never => {
                Err(Denied("write not approved: APPROVE is not `yes` and there is no terminal to ask".into()))
            }
            Approver::NotInOneShot => Err(Denied(
                "write not approved: a one-shot question cannot write; start a session (POST /v1/sessions) to have writes approved".into(),
            )),
            Approver::AskOnTerminal => {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut out = crate::guard::sink::stderr();
                ask(&mut out, &mut input, path, content)
            }
        }
    }
}

impl Approver {
    /// Decides one call that is not a write, which the operator's `rule` asks a person about:
    /// `target` is the tool and its path (or its arguments).
    pub fn decide_call(&self, target: &str, rule: &str) -> Result<Approved, Denied> {
        match self {
            Approver::Always => Ok(Approved(())),
            Approver::Never => Err(Denied(format!(
                "not approved: the rule `{rule}` asks a person first, APPROVE is not `yes` and there is no terminal to ask"
            ))),
            Approver::NotInOneShot => Err(Denied(format!(
                "not approved: the rule `{rule}` asks a person first, and a one-shot question cannot wait for one; \
                 start a session (POST /v1/sessions)"
            ))),
            Approver::AskOnTerminal => {
                let prompt = format!(
                    "\nThe model wants to run {} (the rule `{}` asks you first).\nallow? [y/N] ",
                    crate::guard::scrub(target),
                    crate::guard::scrub(rule)
                );
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                let mut out = crate::guard::sink::stderr();
                answer(&mut out, &mut input, &prompt, "not approved")
            }
        }
    }
}

/// Shows `prompt` and reads `y`/`yes`; anything else denies, the reason starting with `no`
/// (`write not approved`).
fn answer(out: &mut impl Write, input: &mut impl BufRead, prompt: &str, no: &str) -> Result<Approved, Denied> {
    if out.write_all(prompt.as_bytes()).and_then(|()| out.flush()).is_err() {
        return Err(Denied(format!("{no}: could not show the approval prompt")));
    }
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(_) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => Ok(Approved(())),
        Ok(0) => Err(Denied(format!("{no}: no answer (end of input)"))),
        Ok(_) => Err(Denied(format!("{no}: the user declined"))),
        Err(e) => Err(Denied(format!("{no}: could not read the answer ({e})"))),
    }
}

/// Shows the exact path and the redacted content, and reads `y`/`yes`; anything else denies.
pub fn ask(
    out: &mut impl Write,
    input: &mut impl BufRead,
    path: &ModelPath,
    content: &str,
) -> Result<Approved, Denied> {
    let shown = crate::guard::scrub(content);
    let prompt =
        format!("\nThe model wants to write {path} ({} bytes):\n----\n{}\n----\nallow? [y/N] ", shown.len(), shown);
    answer(out, input, &prompt, "write not approved")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::policy::check_write;

    #[test]
    fn only_yes_approves_at_the_prompt() {
        let path = check_write("notes/a.md").expect("valid path");
        for (typed, approved) in [
            ("y\n", true),
            ("YES\n", true),
            (" yes \n", true),
            ("n\n", false),
            ("\n", false),
            ("", false),
            ("maybe\n", false),
            ("yess\n", false),
        ] {
            let mut out = Vec::new();
            let got = ask(&mut out, &mut typed.as_bytes(), &path, "body sk_live_4eC39HqLyjWDarjtT1zdp7dc");
            assert_eq!(got.is_ok(), approved, "typed {typed:?}");
            let shown = String::from_utf8_lossy(&out);
            assert!(shown.contains("notes/a.md"), "prompt names the path: {shown}");
            assert!(!shown.contains("4eC39HqLyjWDarjtT1zdp7dc"), "prompt shows redacted content: {shown}");
        }
    }

    #[test]
    fn never_denies() {
        let path = check_write("notes/a.md").expect("valid path");
        assert!(Approver::Never.decide(&path, "x").is_err());
        assert!(Approver::Always.decide(&path, "x").is_ok());
    }

    /// The approver as the CLI and the eval runner build it, from `APPROVE` as the environment
    /// gives it: without a terminal, anything but exactly `yes` denies.
    #[test]
    fn without_a_terminal_only_approve_yes_allows() {
        let path = check_write("notes/a.md").expect("valid path");
        let cases: &[(Option<&str>, bool)] = &[
            (None, false),
            (Some(""), false),
            (Some("no"), false),
            (Some("YES"), false),
            (Some("Yes"), false),
            (Some("yes "), false),
            (Some(" yes"), false),
            (Some("y"), false),
            (Some("true"), false),
            (Some("1"), false),
            (Some("yes\n"), false),
            (Some("yes"), true),
        ];
        for &(approve, allowed) in cases {
            let config = config_with(approve);
            let approver = Approver::new(&config, Terminal::Absent);
            assert_eq!(approver.decide(&path, "x").is_ok(), allowed, "APPROVE={approve:?} gave {approver:?}");
            let at_terminal = Approver::new(&config, Terminal::Attached);
            let want = if allowed { Approver::Always } else { Approver::AskOnTerminal };
            assert_eq!(at_terminal, want, "APPROVE={approve:?} at a terminal");
        }
    }

    fn config_with(approve: Option<&str>) -> Config {
        let env = approve.map(|v| ("APPROVE".to_string(), v.to_string())).into_iter().collect();
        let sources = crate::config::Sources { file: None, env, flags: vec![("workspace", ".".to_string())] };
        Config::load(&sources).expect("config")
    }
}
