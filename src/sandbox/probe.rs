//! Test builds only (`debug_assertions`): the attempts `docs-agent sandbox-probe` makes from
//! inside a sandboxed process, so tests can show that the kernel, not the harness's path
//! policy, refuses them. Each attempt is the plain system call (`open`, `connect`, `bind`,
//! `execve`), with no docs-agent check in front of it.
//!
//! [`hide_landlock`] installs a seccomp filter under which the Landlock system calls fail with
//! `ENOSYS`, as on a kernel without Landlock (or under an old container seccomp profile), so the
//! warn-and-go-on and `--require-sandbox` paths run on a kernel that has it.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

/// Why a probe attempt cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttemptError {
    /// No `:` between the kind and the target.
    #[error("`{spec}`: expected KIND:TARGET")]
    NoKind {
        /// The attempt as written.
        spec: String,
    },
    /// `connect:` or `bind:` with something that is not an address.
    #[error("`{spec}`: {source}")]
    Address {
        /// The attempt as written.
        spec: String,
        /// What the address parser said.
        source: std::net::AddrParseError,
    },
    /// A kind the probe does not know.
    #[error("`{spec}`: unknown attempt `{kind}` (read, write, connect, bind, exec)")]
    UnknownKind {
        /// The attempt as written.
        spec: String,
        /// The kind.
        kind: String,
    },
}

/// The seccomp filter that hides Landlock could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("cannot install the seccomp filter: {0}")]
pub struct SeccompError(#[source] std::io::Error);

/// One thing the probe tries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Open a file and read it.
    Read(PathBuf),
    /// Create (or open) a file and write to it.
    Write(PathBuf),
    /// Open a TCP connection.
    Connect(SocketAddr),
    /// Listen on a TCP address.
    Bind(SocketAddr),
    /// Run a program with these arguments (its output is read and thrown away).
    Exec(PathBuf, Vec<String>),
}

impl Attempt {
    /// Parses `read:PATH`, `write:PATH`, `connect:ADDR`, `bind:ADDR` or `exec:PATH [ARG...]`.
    pub fn parse(spec: &str) -> Result<Attempt, AttemptError> {
        let (kind, target) = spec.split_once(':').ok_or_else(|| AttemptError::NoKind { spec: spec.to_string() })?;
        let addr =
            || target.parse::<SocketAddr>().map_err(|source| AttemptError::Address { spec: spec.to_string(), source });
        Ok(match kind {
            "read" => Attempt::Read(target.into()),
            "write" => Attempt::Write(target.into()),
            "connect" => Attempt::Connect(addr()?),
            "bind" => Attempt::Bind(addr()?),
            "exec" => {
                let mut words = target.split(' ');
                let program = words.next().unwrap_or_default();
                Attempt::Exec(program.into(), words.map(str::to_string).collect())
            }
            other => return Err(AttemptError::UnknownKind { spec: spec.to_string(), kind: other.to_string() }),
        })
    }

    /// Makes the attempt: `{"attempt", "target", "ok", "errno", "error"}`.
    pub fn run(&self) -> serde_json::Value {
        let (kind, target, result) = match self {
            Attempt::Read(path) => ("read", path.display().to_string(), std::fs::read(path).map(drop)),
            Attempt::Write(path) => (
                "write",
                path.display().to_string(),
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .and_then(|mut f| f.write_all(b"written from inside the sandbox\n")),
            ),
            Attempt::Connect(addr) => {
                ("connect", addr.to_string(), TcpStream::connect_timeout(addr, Duration::from_secs(5)).map(drop))
            }
            Attempt::Bind(addr) => ("bind", addr.to_string(), TcpListener::bind(addr).map(drop)),
            Attempt::Exec(path, args) => {
                // Pipes for all three (opening /dev/null would be refused before the exec).
                let run = std::process::Command::new(path).args(args).stdin(std::process::Stdio::piped()).output();
                ("exec", path.display().to_string(), run.map(drop))
            }
        };
        match result {
            Ok(()) => json!({"attempt": kind, "target": target, "ok": true}),
            Err(e) => json!({
                "attempt": kind,
                "target": target,
                "ok": false,
                "errno": e.raw_os_error(),
                "error": e.to_string(),
            }),
        }
    }
}

/// Whether `no_new_privs` is set on this thread, as the kernel says.
pub fn no_new_privs() -> bool {
    // SAFETY: PR_GET_NO_NEW_PRIVS takes no pointer and only reads the thread's flag.
    unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 }
}

/// Makes the Landlock system calls (444 to 446) fail with `ENOSYS` for this process, as on a
/// kernel without Landlock.
pub fn hide_landlock() -> Result<(), SeccompError> {
    const FIRST: u32 = 444; // landlock_create_ruleset
    const LAST: u32 = 446; // landlock_restrict_self
    let op = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter { code: code as u16, jt, jf, k };
    let mut program = [
        // the system call's number (offset 0 of seccomp_data)
        op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0, 0),
        // below the first: allow
        op(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K, FIRST, 0, 2),
        // above the last: allow
        op(libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K, LAST, 1, 0),
        op(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32, 0, 0),
        op(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW, 0, 0),
    ];
    let prog = libc::sock_fprog { len: program.len() as u16, filter: program.as_mut_ptr() };
    // SAFETY: both calls take plain values or a pointer to `prog`, which outlives them; an
    // unprivileged filter needs no_new_privs first.
    let installed = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog as *const libc::sock_fprog) == 0
    };
    if installed { Ok(()) } else { Err(SeccompError(std::io::Error::last_os_error())) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row of a table: the input, which error it must give, and that error's message.
    type Row<'a> = (&'a str, fn(&AttemptError) -> bool, &'a str);

    #[test]
    fn attempts_parse_with_their_target() {
        assert_eq!(Attempt::parse("read:/etc/passwd"), Ok(Attempt::Read("/etc/passwd".into())));
        assert_eq!(Attempt::parse("connect:127.0.0.1:9"), Ok(Attempt::Connect(([127, 0, 0, 1], 9).into())));
        assert!(Attempt::parse("connect:nowhere").is_err());
        assert_eq!(Attempt::parse("exec:/x -v"), Ok(Attempt::Exec("/x".into(), vec!["-v".into()])));
    }

    /// Each way an attempt is refused: the error, and its message.
    #[test]
    fn bad_attempts_are_named() {
        #[rustfmt::skip]
        let cases: [Row<'_>; 4] = [
            ("read", |e| matches!(e, AttemptError::NoKind { .. }), "`read`: expected KIND:TARGET"),
            ("connect:nowhere", |e| matches!(e, AttemptError::Address { .. }), "`connect:nowhere`: invalid socket address syntax"),
            ("bind:1.2.3.4", |e| matches!(e, AttemptError::Address { .. }), "`bind:1.2.3.4`: invalid socket address syntax"),
            ("delete:/x", |e| matches!(e, AttemptError::UnknownKind { .. }),
             "`delete:/x`: unknown attempt `delete` (read, write, connect, bind, exec)"),
        ];
        for (spec, is, message) in cases {
            let error = Attempt::parse(spec).expect_err(spec);
            assert!(is(&error), "{spec}: {error:?}");
            assert_eq!(error.to_string(), message);
        }
    }
}
