//! PDFs are read in processes of their own, so that a PDF the parser panics on (the release
//! build aborts), loops on, overflows its stack on or runs out of memory on costs that PDF, not
//! the process that reads the docs.
//!
//! [`start`] forks [`READERS`] *zygotes* right after a command enters its sandbox, while it
//! still runs one thread (forking a process with other threads could leave a lock held forever
//! in the child). They are a pool (`pool`): for each PDF, [`extract`] takes a free zygote,
//! waiting while all are reading, and sends it the bytes; the zygote forks a worker: the worker
//! limits its memory, gives up every file and network right (a Landlock ruleset that grants
//! nothing; it reads only the bytes it was sent), parses, writes the result back and exits.
//! The zygote waits at most the time limit (`index.pdf_seconds`, [`set_time_limit`]; 60 s by
//! default), kills a worker that takes longer, reaps it, and answers with the result or what
//! happened. So up to [`READERS`] PDFs are read at once, from as many threads, and a PDF that runs to the time limit holds one zygote, not all.
//! The zygotes die with the process, and each worker with its zygote (`PR_SET_PDEATHSIG`).
//! A zygote holds no other zygote's socket.
//!
//! A zygote that could not be forked is one fewer in the pool. One that does not answer within
//! the time limit and 10 s more is given up (its socket closed, which ends it); when all have
//! been given up, a PDF is refused ([`PdfError::Crashed`]) rather than parsed in this process.
//! Without any zygote (tests, which run many threads and unwind; a platform without `fork`; no
//! zygote could be forked), [`extract`] parses in the calling process.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{Extracted, PdfError, READERS};

mod pool;

/// Longest a worker may take over one PDF, unless the configuration says otherwise.
pub const TIME_LIMIT: Duration = Duration::from_secs(60);

/// The time limit of this process's PDFs, in seconds (`index.pdf_seconds`): sent with each PDF,
/// so the zygote, forked before the configuration may have been read, applies it.
static SECONDS: AtomicU64 = AtomicU64::new(TIME_LIMIT.as_secs());

/// Sets the time limit each PDF read from now on gets (`index.pdf_seconds`, read once by the
/// command line with the configuration).
pub fn set_time_limit(limit: Duration) {
    SECONDS.store(limit.as_secs().max(1), Ordering::Relaxed);
}
/// Most memory (address space) a worker may map.
const MEMORY_LIMIT: u64 = 1024 * 1024 * 1024;
/// Largest reply a worker may send (a PDF's text, as JSON), whatever the text allowed.
const MAX_REPLY: usize = 256 * 1024 * 1024;

/// The largest reply for `max_text` bytes of text: JSON writes a control character in 6 bytes,
/// plus room for the pages' and entries' framing.
fn reply_limit(max_text: u64) -> usize {
    usize::try_from(max_text.saturating_mul(6).saturating_add(1 << 20)).unwrap_or(MAX_REPLY).min(MAX_REPLY)
}

/// The zygotes, once started (none when not one could be forked).
static POOL: OnceLock<pool::Pool> = OnceLock::new();

/// What a PDF is told when every zygote has been given up.
const NO_READER_LEFT: &str =
    "no PDF reader is left (each stopped answering; see the PDFs skipped before this one): run the command again";

/// What the zygote answers.
#[derive(serde::Serialize, serde::Deserialize)]
enum Reply {
    /// The worker's result.
    Done(Result<Extracted, PdfError>),
    /// The worker died (a signal, or an exit without a reply).
    Crashed(String),
}

/// Forks the [`READERS`] zygotes. Call once, right after the sandbox is entered and before any
/// thread starts; a second call does nothing. An error says what failed and what follows: PDFs
/// read in this process (not one zygote started), or fewer at a time.
pub fn start() -> Result<(), String> {
    if POOL.get().is_some() {
        return Ok(());
    }
    let mut sockets = Vec::with_capacity(READERS);
    let mut failed = None;
    while sockets.len() < READERS && failed.is_none() {
        match fork_zygote(&mut sockets) {
            Ok(socket) => sockets.push(socket),
            Err(e) => failed = Some(e),
        }
    }
    let started = sockets.len();
    if started > 0 {
        let _ = POOL.set(pool::Pool::new(sockets));
    }
    match failed {
        None => Ok(()),
        Some(e) if started == 0 => Err(format!("{e}; PDFs are read in this process")),
        Some(e) => Err(format!("{e}; only {started} of {READERS} PDF readers run, so fewer PDFs are read at once")),
    }
}

/// Forks one zygote: its socket. The zygote closes `earlier`, the sockets of the zygotes forked
/// before it: neither it nor its workers may read or write another zygote's messages, and
/// closing a socket here must end its zygote.
fn fork_zygote(earlier: &mut Vec<UnixStream>) -> Result<UnixStream, String> {
    let (parent, child) = UnixStream::pair().map_err(|e| format!("cannot make a PDF reader's socket: {e}"))?;
    // SAFETY: the caller runs one thread (the sandbox refuses to start otherwise), so the
    // child holds no lock another thread held; it runs only `zygote`, which never returns.
    match unsafe { libc::fork() } {
        -1 => Err(format!("cannot start a PDF reader: {}", std::io::Error::last_os_error())),
        0 => {
            drop(parent);
            earlier.clear();
            zygote(child)
        }
        _ => {
            drop(child);
            Ok(parent)
        }
    }
}

/// The pages and outline of the PDF `bytes` (at most `max_text` bytes of text): in a worker
/// process, through the first zygote free, when the zygotes run; else here. A worker that
/// crashes or runs out of time is [`PdfError::Crashed`]. The reply is no larger than the text
/// allowed (and its JSON).
pub fn extract(bytes: &[u8], max_text: u64) -> Result<Extracted, PdfError> {
    extract_then(bytes, max_text, || {})
}

/// Debug builds only: [`extract`], calling `taken` as soon as the PDF holds a zygote (with no
/// zygote, before it is parsed here). A test waits for it before it sends a second PDF, to
/// see that one read at once with this one.
#[cfg(debug_assertions)]
pub fn extract_telling(bytes: &[u8], max_text: u64, taken: impl FnOnce()) -> Result<Extracted, PdfError> {
    extract_then(bytes, max_text, taken)
}

/// [`extract`], calling `taken` once the PDF holds a zygote.
fn extract_then(bytes: &[u8], max_text: u64, taken: impl FnOnce()) -> Result<Extracted, PdfError> {
    let Some(pool) = POOL.get() else {
        taken();
        return super::extract(bytes, max_text);
    };
    let Some(mut slot) = pool.take() else { return Err(PdfError::Crashed(NO_READER_LEFT.into())) };
    taken();
    let limit = time_limit();
    let asked = slot.ask(
        &[&max_text.to_le_bytes(), &limit.as_secs().to_le_bytes(), bytes],
        limit + Duration::from_secs(10),
        reply_limit(max_text),
    );
    // The zygote is free again (or given up) before its reply is read.
    drop(slot);
    let reply = asked.map_err(|e| PdfError::Crashed(format!("the PDF reader did not answer ({e})")))?;
    match serde_json::from_slice::<Reply>(&reply) {
        Ok(Reply::Done(result)) => result,
        Ok(Reply::Crashed(why)) => Err(PdfError::Crashed(why)),
        Err(e) => Err(PdfError::Crashed(format!("the PDF reader's reply did not read ({e})"))),
    }
}

/// The zygote: one PDF at a time, each in a worker of its own.
fn zygote(mut parent: UnixStream) -> ! {
    // SAFETY: a plain system call on this process. (Elsewhere than Linux the zygote ends when
    // it finds the socket closed.)
    #[cfg(target_os = "linux")]
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL)
    };
    while let Ok(asked) = receive(&mut parent, usize::MAX) {
        let Some((max_text, rest)) = asked.split_first_chunk::<8>() else { break };
        let Some((seconds, bytes)) = rest.split_first_chunk::<8>() else { break };
        let limit = Duration::from_secs(u64::from_le_bytes(*seconds).max(1));
        let reply = serde_json::to_vec(&work(&parent, bytes, u64::from_le_bytes(*max_text), limit)).unwrap_or_default();
        if send(&mut parent, &reply).is_err() {
            break;
        }
    }
    // SAFETY: ends this forked process without running the parent's exit handlers.
    unsafe { libc::_exit(0) }
}

/// One worker for `bytes`, given `limit` to answer: its reply, or how it ended. The worker
/// keeps only its own socket: the zygote's to the command (`command`) is closed in it, so a
/// worker a PDF took over cannot answer the command in the zygote's place.
fn work(command: &UnixStream, bytes: &[u8], max_text: u64, limit: Duration) -> Reply {
    let Ok((mine, theirs)) = UnixStream::pair() else { return Reply::Crashed("no socket for the worker".into()) };
    // SAFETY: a plain system call.
    let zygote = unsafe { libc::getpid() };
    // SAFETY: the zygote runs one thread.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        drop(mine);
        // SAFETY: closes this forked child's copy of the zygote's socket; the child never
        // returns from `worker`, so nothing uses or closes that descriptor again.
        unsafe { libc::close(std::os::fd::AsRawFd::as_raw_fd(command)) };
        worker(theirs, bytes, max_text, zygote)
    }
    drop(theirs);
    if pid < 0 {
        return Reply::Crashed(format!("cannot start a worker: {}", std::io::Error::last_os_error()));
    }
    let mut mine = mine;
    let answer = mine.set_read_timeout(Some(limit)).and_then(|()| receive(&mut mine, reply_limit(max_text)));
    if answer.is_err() {
        // SAFETY: `pid` is this process's own child, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let mut status = 0;
    // SAFETY: reaps the child forked above.
    unsafe { libc::waitpid(pid, &raw mut status, 0) };
    match answer {
        Ok(reply) => serde_json::from_slice(&reply)
            .unwrap_or_else(|e| Reply::Crashed(format!("the worker's reply did not read ({e})"))),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
            Reply::Crashed(format!("the PDF reader took longer than {} s on it (index.pdf_seconds)", limit.as_secs()))
        }
        Err(_) if libc::WIFSIGNALED(status) => Reply::Crashed(signal(libc::WTERMSIG(status))),
        Err(e) => Reply::Crashed(format!("the worker ended without a reply ({e})")),
    }
}

/// A worker: limits itself, parses, answers, exits. It dies with the zygote `zygote`, as the
/// zygote dies with the command: a worker left looping on a PDF when the command ends (Ctrl-C,
/// or a command done while a PDF was still being read) would otherwise go on alone.
fn worker(mut parent: UnixStream, bytes: &[u8], max_text: u64, zygote: libc::pid_t) -> ! {
    let limit = libc::rlimit { rlim_cur: MEMORY_LIMIT, rlim_max: MEMORY_LIMIT };
    // SAFETY: plain system calls on this process.
    unsafe {
        #[cfg(target_os = "linux")]
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        // The zygote may have died before the line above: then nobody waits for this one.
        if libc::getppid() != zygote {
            libc::_exit(0);
        }
        libc::setrlimit(libc::RLIMIT_AS, &raw const limit);
    }
    // No file and no network from here on (where Landlock is available): the bytes are all it reads.
    let _ = crate::sandbox::enter(&crate::sandbox::Plan::nothing(), crate::sandbox::Mode::Auto);
    #[cfg(debug_assertions)]
    let result = test_failures(bytes).unwrap_or_else(|| super::extract(bytes, max_text));
    #[cfg(not(debug_assertions))]
    let result = super::extract(bytes, max_text);
    let reply = serde_json::to_vec(&Reply::Done(result)).unwrap_or_default();
    let _ = send(&mut parent, &reply);
    // SAFETY: ends this forked process without running the parent's exit handlers.
    unsafe { libc::_exit(0) }
}

/// Debug builds only: bytes that make the worker fail as a hostile PDF could make the parser
/// fail, so the tests see each failure contained; and `%docs-agent-test: probe KIND:TARGET`, an
/// attempt (`sandbox::probe`: `read:PATH`, `connect:ADDR`...) made from inside the worker's own
/// sandbox, answered as the PDF's error (`probe {json}`), so the tests see what it may do. (A
/// release build has no such bytes.)
#[cfg(debug_assertions)]
fn test_failures(bytes: &[u8]) -> Option<Result<Extracted, PdfError>> {
    #[cfg(target_os = "linux")]
    if let Some(spec) = bytes.strip_prefix(b"%docs-agent-test: probe ") {
        use crate::sandbox::probe::{Attempt, no_new_privs};
        let spec = String::from_utf8_lossy(spec);
        let mut said = Attempt::parse(&spec).map_or_else(|e| serde_json::json!({"error": e.to_string()}), |a| a.run());
        said["no_new_privs"] = no_new_privs().into();
        return Some(Err(PdfError::Crashed(format!("probe {said}"))));
    }
    match bytes {
        // How many sockets the worker holds (`fstat` needs no file right): its own only.
        b"%docs-agent-test: sockets" => {
            let sockets = (0..1024)
                .filter(|&fd| {
                    // SAFETY: `fstat` on a descriptor number, into a zeroed struct it fills.
                    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
                    unsafe { libc::fstat(fd, &raw mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFSOCK }
                })
                .count();
            Some(Err(PdfError::Crashed(format!("holds {sockets} sockets"))))
        }
        b"%docs-agent-test: abort" => std::process::abort(),
        b"%docs-agent-test: loop" => loop {
            std::hint::spin_loop();
        },
        b"%docs-agent-test: memory" => {
            let mut held: Vec<Vec<u8>> = Vec::new();
            loop {
                held.push(vec![1u8; 64 << 20]);
            }
        }
        _ => None,
    }
}

/// The time limit, as set ([`set_time_limit`]).
fn time_limit() -> Duration {
    Duration::from_secs(SECONDS.load(Ordering::Relaxed))
}

/// What a signal that ended a worker means.
fn signal(number: i32) -> String {
    match number {
        libc::SIGABRT => "the PDF reader gave up on it (it aborted: a panic, a stack overflow or no memory)".into(),
        libc::SIGSEGV => "the PDF reader crashed on it (SIGSEGV)".into(),
        libc::SIGKILL => "the PDF reader was killed (out of time or memory)".into(),
        n => format!("the PDF reader ended on signal {n}"),
    }
}

/// Sends `bytes`, length first.
fn send(socket: &mut UnixStream, bytes: &[u8]) -> std::io::Result<()> {
    send_parts(socket, &[bytes])
}

/// Sends `parts` as one message (what [`receive`] reads as their concatenation), without
/// copying them into one buffer first.
fn send_parts(socket: &mut UnixStream, parts: &[&[u8]]) -> std::io::Result<()> {
    let length = u64::try_from(parts.iter().map(|p| p.len()).sum::<usize>()).unwrap_or(u64::MAX);
    socket.write_all(&length.to_le_bytes())?;
    parts.iter().try_for_each(|part| socket.write_all(part))
}

/// Receives what [`send`] sent, refusing more than `max` bytes.
fn receive(socket: &mut UnixStream, max: usize) -> std::io::Result<Vec<u8>> {
    let mut length = [0u8; 8];
    socket.read_exact(&mut length)?;
    let length = usize::try_from(u64::from_le_bytes(length)).unwrap_or(usize::MAX);
    if length > max {
        return Err(std::io::Error::other(format!("a message of {length} bytes is over {max}")));
    }
    let mut bytes = vec![0u8; length];
    socket.read_exact(&mut bytes)?;
    Ok(bytes)
}
