//! The process's own kernel sandbox (Landlock): after the configuration is read, and before
//! any thread starts, a command gives up everything its [`Plan`] does not name. The kernel then
//! refuses, with `EACCES`, whatever a bug or a hijacked tool might try beyond it: reading
//! `/etc/passwd`, writing outside `notes/` and the data folders, running a program, or opening
//! a TCP connection to any port but the model server's.
//!
//! - [`Plan`]: what a command may touch (paths and how, TCP ports), built by `cli::sandbox`;
//! - [`enter`]: applies it with [`Mode`] (warn without Landlock, require it, or skip it) and
//!   returns the [`Status`] that `docs-agent health` and `/readyz` report;
//! - `data`: which folder a session log or index may be written in (never one that would
//!   open up the workspace or the whole filesystem);
//! - `kernel`: the Landlock ruleset itself (on Linux; elsewhere `kernel_elsewhere`, which
//!   restricts nothing and says so); `probe` (Linux test builds only): the attempts the tests
//!   make from inside a sandboxed process.
//!
//! Landlock restricts the calling thread and the threads it starts later, so [`enter`] refuses
//! to run once a second thread exists: a thread started earlier would stay unrestricted.

pub mod data;
#[cfg(target_os = "linux")]
mod kernel;
#[cfg(not(target_os = "linux"))]
#[path = "kernel_elsewhere.rs"]
mod kernel;
#[cfg(all(debug_assertions, target_os = "linux"))]
pub mod probe;
// Compiled on Linux too when testing, so its report is tested where the tests run.
#[cfg(all(test, target_os = "linux"))]
#[path = "kernel_elsewhere.rs"]
mod kernel_elsewhere;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::json;

/// How a path may be used once the sandbox is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Read files and list folders beneath it.
    Read,
    /// Also create, write, truncate, rename and remove files and folders beneath it.
    Write,
    /// Also make symbolic links (a git source's folder: a link inside a tree's docs folder stays
    /// a link to the file it leads to, so the reading rules see where it leads).
    WriteLinks,
    /// Also make symbolic links and named pipes (the eval's temporary copies, whose setup makes
    /// them to test the workspace's confinement).
    Scratch,
}

/// Whether the last component of a planned path may be a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// It may: the workspace or a data folder the person named, a system file.
    Links,
    /// It may not: `notes/` is granted only as a real folder, so `notes -> /` grants nothing.
    NoLinks,
}

/// One path the sandbox lets through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path, as the process names it (relative to the working folder or absolute).
    pub path: PathBuf,
    /// What may be done beneath it.
    pub grant: Grant,
    /// Whether a link in its last component is followed when the rule is made.
    pub follow: Follow,
}

/// What a command may touch once the sandbox is entered: everything else is refused by the
/// kernel. A path that does not exist when the sandbox is entered is left out (nothing can be
/// created there later).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Paths and what may be done beneath them.
    pub entries: Vec<Entry>,
    /// TCP ports the process may connect to (the model server's).
    pub connect: BTreeSet<u16>,
    /// TCP ports the process may listen on (`serve`'s; 0 means one the kernel picks).
    pub bind: BTreeSet<u16>,
}

/// Files a process that makes network connections reads: host names, the resolver, the CA
/// certificates (`rustls-platform-verifier` reads the system's store when the first HTTPS
/// client starts). Those missing on a system are skipped.
const NETWORK_FILES: &[&str] = &[
    "/etc/hosts",
    "/etc/resolv.conf",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ssl",
    "/etc/pki",
    "/etc/ca-certificates",
    "/usr/share/ca-certificates",
    "/usr/lib/ssl",
    "/usr/local/share/ca-certificates",
];

impl Plan {
    /// Nothing at all: no file, no folder, no port.
    pub fn nothing() -> Plan {
        Plan::default()
    }

    /// Adds `path` with `grant`, following a link in its last component.
    pub fn allow(mut self, path: impl Into<PathBuf>, grant: Grant) -> Plan {
        self.entries.push(Entry { path: path.into(), grant, follow: Follow::Links });
        self
    }

    /// Adds `path` with `grant` only if it is a real folder, not a link to one.
    pub fn allow_folder_not_link(mut self, path: impl Into<PathBuf>, grant: Grant) -> Plan {
        self.entries.push(Entry { path: path.into(), grant, follow: Follow::NoLinks });
        self
    }

    /// Allows TCP connections to `port`, and reading what connecting needs (host names, the
    /// resolver's configuration, CA certificates; `extra_files` adds more, such as
    /// `SSL_CERT_FILE`).
    pub fn connect(mut self, port: u16, extra_files: &[PathBuf]) -> Plan {
        if self.connect.is_empty() {
            for file in NETWORK_FILES {
                self = self.allow(*file, Grant::Read);
            }
        }
        for file in extra_files {
            if !self.entries.iter().any(|e| &e.path == file) {
                self = self.allow(file.clone(), Grant::Read);
            }
        }
        self.connect.insert(port);
        self
    }

    /// Allows listening on TCP `port`.
    pub fn bind(mut self, port: u16) -> Plan {
        self.bind.insert(port);
        self
    }
}

/// Whether a command enters the sandbox, and what happens when the kernel cannot enforce it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Enter it; without Landlock, warn and go on (the container's confinement remains).
    Auto,
    /// Enter it; without Landlock, refuse to run (`--require-sandbox`, set in the image).
    Require,
    /// Do not enter it (`--no-sandbox`, for finding out whether the sandbox is what breaks a
    /// setup).
    Off,
}

/// How much of the sandbox the kernel enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Every restriction asked for: files, programs, TCP ports, signals and abstract sockets.
    Enforced,
    /// Files and programs, but an older kernel lacks some of the rest (see [`Status`]).
    Partial,
    /// The kernel has no Landlock (not built in, not enabled, or blocked by a seccomp filter):
    /// only `no_new_privs` and the container confine the process.
    Unavailable,
    /// `--no-sandbox`: not entered.
    Off,
}

impl State {
    /// The name used in JSON and on the terminal.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Enforced => "enforced",
            State::Partial => "partial",
            State::Unavailable => "unavailable",
            State::Off => "off",
        }
    }
}

/// What the kernel enforces for this process, as `docs-agent health` and `/readyz` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// Enforced, partial, unavailable or off.
    pub state: State,
    /// The Landlock ABI the kernel offers (0 without Landlock).
    pub abi: u8,
    /// Paths beyond the plan are refused, and no program can be run.
    pub filesystem: bool,
    /// TCP connect and bind are limited to the plan's ports (Landlock ABI 4 and later).
    pub network: bool,
    /// Signals to, and abstract sockets of, processes outside the sandbox are refused (ABI 6).
    pub scopes: bool,
    /// `no_new_privs` is set: no program could gain privileges (setuid, file capabilities).
    pub no_new_privs: bool,
    /// Why Landlock is unavailable, or empty.
    pub reason: String,
}

impl Status {
    /// Not entered, for `reason` (`--no-sandbox`; a server state made without a process of
    /// its own, in tests).
    pub fn off(reason: &str) -> Status {
        Status {
            state: State::Off,
            abi: 0,
            filesystem: false,
            network: false,
            scopes: false,
            no_new_privs: false,
            reason: reason.into(),
        }
    }

    /// One line for a person: `enforced (Landlock ABI 7: files, programs, TCP ports, signals)`.
    pub fn describe(&self) -> String {
        let mut covered = Vec::new();
        if self.filesystem {
            covered.push("files and programs");
        }
        if self.network {
            covered.push("TCP ports");
        }
        if self.scopes {
            covered.push("signals and abstract sockets");
        }
        let nnp = if self.no_new_privs { "; no_new_privs set" } else { "" };
        match self.state {
            State::Enforced | State::Partial => {
                format!("{} (Landlock ABI {}: {}){nnp}", self.state.as_str(), self.abi, covered.join(", "))
            }
            State::Unavailable | State::Off => format!("{} ({}){nnp}", self.state.as_str(), self.reason),
        }
    }

    /// The JSON object `/readyz` shows an admin.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "state": self.state.as_str(),
            "landlock_abi": self.abi,
            "filesystem": self.filesystem,
            "network": self.network,
            "scopes": self.scopes,
            "no_new_privs": self.no_new_privs,
            "reason": self.reason,
        })
    }
}

/// Why the sandbox was not entered.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A thread already runs: it would stay outside the sandbox.
    #[error(
        "the kernel sandbox must be entered before any thread starts, and {0} threads already run (a bug in docs-agent; \
         --no-sandbox runs without it)"
    )]
    Threads(usize),
    /// `--require-sandbox`, and the kernel cannot enforce it.
    #[error(
        "the kernel sandbox is required (--require-sandbox or DOCS_AGENT_REQUIRE_SANDBOX) but {0}; run on a Linux \
         kernel with Landlock (5.13 or later, `lsm=landlock` enabled) and a seccomp profile that allows the landlock \
         system calls, or drop the requirement"
    )]
    Required(String),
    /// The ruleset could not be built (a path could not be opened, the kernel refused a rule).
    #[error("cannot build the kernel sandbox: {0}; --no-sandbox runs without it (please report this)")]
    Ruleset(String),
}

/// Enters the sandbox `plan` describes, as `mode` says. Call it on the main thread before any
/// other thread starts (the tokio runtime, the index's workers).
pub fn enter(plan: &Plan, mode: Mode) -> Result<Status, SandboxError> {
    if mode == Mode::Off {
        return Ok(Status::off("--no-sandbox"));
    }
    let threads = threads();
    if threads > 1 {
        return Err(SandboxError::Threads(threads));
    }
    warm_up_random();
    let status = kernel::restrict(plan)?;
    if mode == Mode::Require && status.state == State::Unavailable {
        return Err(SandboxError::Required(status.reason));
    }
    Ok(status)
}

/// Draws from the OS's random source once, so that `getrandom` has settled on how it reads it
/// before the sandbox: in a static glibc build it cannot find the `getrandom` function and
/// falls back to opening `/dev/urandom`, which it keeps open, and which the sandbox would refuse
/// to open later (session ids would fail with EACCES).
fn warm_up_random() {
    let mut byte = [0u8; 1];
    let _ = getrandom::fill(&mut byte);
}

/// The threads this process runs (1 when `/proc` cannot tell).
fn threads() -> usize {
    std::fs::read_dir(Path::new("/proc/self/task")).map_or(1, |tasks| tasks.count())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connecting_brings_the_resolver_and_certificates_once() {
        let plan = Plan::nothing().connect(11434, &[]).connect(443, &[PathBuf::from("/etc/hosts")]);
        assert_eq!(plan.connect, BTreeSet::from([443, 11434]));
        let hosts = plan.entries.iter().filter(|e| e.path == Path::new("/etc/hosts")).count();
        assert_eq!(hosts, 1, "{plan:?}");
        assert!(plan.entries.iter().all(|e| e.grant == Grant::Read));
        assert!(Plan::nothing().bind(8080).entries.is_empty(), "listening reads nothing");
    }

    #[test]
    fn it_is_never_entered_once_a_second_thread_runs() {
        // A thread of our own, alive during the call, so the refusal never depends on how the
        // test harness runs tests (were it entered, this test process would be sandboxed).
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || wait.recv());
        let result = enter(&Plan::nothing(), Mode::Require);
        let _ = stop.send(());
        let _ = other.join();
        assert!(matches!(result, Err(SandboxError::Threads(n)) if n >= 2), "{result:?}");
        assert_eq!(enter(&Plan::nothing(), Mode::Off).ok(), Some(Status::off("--no-sandbox")), "off is never refused");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn without_landlock_the_stand_in_restricts_nothing_and_says_why() {
        let status = kernel_elsewhere::restrict(&Plan::nothing().allow("/etc/hosts", Grant::Read));
        let status = status.ok();
        assert!(status.as_ref().is_some_and(|s| s.state == State::Unavailable && !s.filesystem && !s.network));
        let said = status.map(|s| s.describe()).unwrap_or_default();
        assert!(
            said.starts_with("unavailable (") && said.contains("only Linux has") && said.contains("linux"),
            "{said}"
        );
    }

    #[test]
    fn a_status_says_what_it_covers() {
        let status = Status {
            state: State::Partial,
            abi: 3,
            filesystem: true,
            network: false,
            scopes: false,
            no_new_privs: true,
            reason: String::new(),
        };
        assert_eq!(status.describe(), "partial (Landlock ABI 3: files and programs); no_new_privs set");
        assert_eq!(status.to_json()["state"], "partial");
        assert_eq!(Status::off("--no-sandbox").describe(), "off (--no-sandbox)");
    }
}
