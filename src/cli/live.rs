//! What a terminal shows while a turn runs (`docs-agent "question"` and `chat`):
//! - a progress line on stderr while the model reads its prompt and writes (the step, the
//!   prompt tokens it reads or the tokens written so far, the seconds since the call began),
//!   redrawn every second and cleared before anything else is written to stderr ([`Stderr`]);
//! - the answer on stdout as the model writes it, a paragraph at a time, each guarded as in
//!   `serve` ([`StreamGuard`]): nothing leaves before its paragraph is whole and clean.
//!
//! The answer is the harness's, not the stream's. The last paragraph of a reply is held until
//! the turn says it is the answer (checked and guarded). A draft the harness sent back, or that
//! went on to tool calls, is marked as not the answer on stderr; an answer that does not
//! continue what was shown is printed whole under a note. Text that reads as a tool call is
//! never shown. Off a terminal (or with `--stream never`) only the final answer is printed, once.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::StreamWhen;
use crate::guard::stream::StreamGuard;
use crate::session::event::CorrectionKind;
use crate::session::progress::TurnEvent;
use crate::session::verify::Citation;
use crate::tools::{self, Tool};

/// How often the progress line's seconds are redrawn.
const TICK: Duration = Duration::from_secs(1);
/// The least time between two redraws for streamed tokens.
const REDRAW_EVERY: Duration = Duration::from_millis(100);
/// Erases the line the cursor is on and returns to its start.
const ERASE_LINE: &[u8] = b"\r\x1b[2K";

/// The progress line and what stderr holds: one per process, as stderr is.
static SCREEN: Mutex<Screen> =
    Mutex::new(Screen { progress: None, drawn: false, err_mid_line: false, drawn_at: None, pending: Vec::new() });
/// Wakes the ticker when the view ends.
static WAKE: Condvar = Condvar::new();

/// The state of stderr's last line.
struct Screen {
    /// What the progress line says, when one is shown.
    progress: Option<Progress>,
    /// The progress line is on the screen now.
    drawn: bool,
    /// Text written to stderr has not ended its line: the progress line waits.
    err_mid_line: bool,
    /// When the line was last drawn.
    drawn_at: Option<Instant>,
    /// What [`Stderr`] was given after its last line break: held until the line is whole.
    pending: Vec<u8>,
}

impl Screen {
    /// Takes `buf` and gives back every whole line held so far, if a line ended: the sink
    /// redacts each write alone, so a line a formatter writes in pieces must reach it whole.
    fn whole_lines(&mut self, buf: &[u8]) -> Option<Vec<u8>> {
        self.pending.extend_from_slice(buf);
        let end = self.pending.iter().rposition(|&b| b == b'\n')?;
        Some(self.pending.drain(..=end).collect())
    }

    /// Erases the progress line, if it is drawn.
    fn clear(&mut self, err: &mut impl Write) {
        if self.drawn {
            let _ = err.write_all(ERASE_LINE);
            self.drawn = false;
        }
    }

    /// Draws the progress line as of `now`, unless stderr is mid-line.
    fn draw(&mut self, err: &mut impl Write, now: Instant) {
        let Some(progress) = &self.progress else { return self.clear(err) };
        if self.err_mid_line {
            return;
        }
        let line = progress.render(now);
        let _ = err.write_all(ERASE_LINE);
        let _ = err.write_all(line.as_bytes());
        let _ = err.flush();
        self.drawn = true;
        self.drawn_at = Some(now);
    }
}

fn screen() -> MutexGuard<'static, Screen> {
    SCREEN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Stderr for everything else the CLI writes during a turn (the trace, notes): the progress
/// line is erased first and drawn again below a finished line.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stderr;

impl Write for Stderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut screen = screen();
        let Some(lines) = screen.whole_lines(buf) else { return Ok(buf.len()) };
        let mut err = crate::guard::sink::stderr();
        screen.clear(&mut err);
        err.write_all(&lines)?;
        screen.err_mid_line = false;
        if screen.progress.is_some() {
            screen.draw(&mut err, Instant::now());
        }
        Ok(buf.len())
    }

    /// Writes what is held of an unfinished line too.
    fn flush(&mut self) -> std::io::Result<()> {
        let mut screen = screen();
        let rest = std::mem::take(&mut screen.pending);
        let mut err = crate::guard::sink::stderr();
        if !rest.is_empty() {
            screen.clear(&mut err);
            err.write_all(&rest)?;
            screen.err_mid_line = true;
        }
        err.flush()
    }
}

/// What the model is doing, for the progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading its prompt (prefill): about this many tokens.
    Reading {
        /// The harness's estimate of the prompt.
        estimate: u64,
    },
    /// Writing: this many pieces (about one token each) so far.
    Writing {
        /// Streamed pieces.
        pieces: u64,
    },
    /// A tool the model asked for runs.
    Running(Tool),
}

/// The progress line's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Progress {
    /// The model call in the turn.
    step: u32,
    /// What happens.
    phase: Phase,
    /// When the model call (or the tool) began.
    since: Instant,
}

impl Progress {
    /// The line as of `now`.
    fn render(&self, now: Instant) -> String {
        let secs = now.saturating_duration_since(self.since).as_secs();
        let step = self.step;
        match self.phase {
            Phase::Reading { estimate } => {
                format!("step {step}: the model reads its prompt (about {} tokens)... {secs} s", thousands(estimate))
            }
            Phase::Writing { pieces } => {
                let tokens = if pieces == 1 { "token" } else { "tokens" };
                format!("step {step}: the model writes... {pieces} {tokens}, {secs} s")
            }
            Phase::Running(tool) => {
                let doing = match tool {
                    Tool::SearchDocs => "searching the docs",
                    Tool::ReadFile => "reading a file",
                    Tool::LoadSkill => "loading a skill",
                    Tool::WriteFile => "writing a note",
                };
                format!("step {step}: {doing}... {secs} s")
            }
        }
    }
}

/// `1250` as `1,250`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What the terminal has shown of one model call's text.
#[derive(Debug, Default)]
struct Draft {
    /// Lets out guarded paragraphs.
    guard: StreamGuard,
    /// The call's text so far.
    raw: String,
    /// What was shown of it.
    printed: String,
    /// It reads as a tool call: none of it is shown.
    held: bool,
}

/// How a finished answer meets what was shown.
#[derive(Debug, PartialEq, Eq)]
enum Ending<'a> {
    /// The answer continues what was shown: print the rest.
    Rest(&'a str),
    /// It does not: say so, and print it whole.
    Replaced(&'a str),
}

impl Draft {
    /// A draft letting links to `hosts` through.
    fn new(hosts: &[String]) -> Draft {
        Draft { guard: StreamGuard::new(hosts), ..Draft::default() }
    }

    /// Takes a piece of the reply; returns what to show now: a whole, guarded paragraph, unless
    /// the text reads as a tool call.
    fn push(&mut self, delta: &str) -> Option<String> {
        self.raw.push_str(delta);
        let piece = self.guard.push(delta)?;
        let names = tools::names();
        if self.held
            || crate::model::textcall::parse(&self.raw, &names).is_some()
            || crate::model::textcall::unreadable(&self.raw, &names).is_some()
        {
            self.held = true;
            return None;
        }
        self.printed.push_str(&piece);
        Some(piece)
    }

    /// How the shown draft ends, given the whole answer `full`.
    fn ending<'a>(&self, full: &'a str) -> Ending<'a> {
        match full.strip_prefix(self.printed.as_str()) {
            Some(rest) => Ending::Rest(rest),
            None => Ending::Replaced(full),
        }
    }
}

/// Stops the ticker when dropped.
struct Ticker {
    /// Set when the view ends.
    stop: Arc<AtomicBool>,
    /// The thread.
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start() -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("progress".into())
            .spawn(move || {
                let mut screen = screen();
                while !flag.load(Ordering::Relaxed) {
                    screen = WAKE.wait_timeout(screen, TICK).unwrap_or_else(|p| p.into_inner()).0;
                    if !flag.load(Ordering::Relaxed) && screen.progress.is_some() {
                        screen.draw(&mut crate::guard::sink::stderr(), Instant::now());
                    }
                }
            })
            .ok();
        Ticker { stop, thread }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        WAKE.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The terminal's view of one turn: listen with [`Live::hear`], end with [`Live::answered`]
/// (or just drop it when the turn stopped without an answer).
pub struct Live {
    /// Show the answer as it is written.
    stream: bool,
    /// Show the progress line.
    progress: bool,
    /// Hosts links may point to.
    hosts: Vec<String>,
    /// The current model call's text.
    draft: Draft,
    /// Redraws the progress line's seconds.
    _ticker: Option<Ticker>,
}

impl Live {
    /// The view `when` asks for; links to `hosts` are let through.
    pub fn new(when: StreamWhen, hosts: &[String]) -> Live {
        let (stream, progress) = match when {
            StreamWhen::Auto => (crate::guard::sink::stdout_is_terminal(), crate::guard::sink::stderr_is_terminal()),
            StreamWhen::Always => (true, true),
            StreamWhen::Never => (false, false),
        };
        Live {
            stream,
            progress,
            hosts: hosts.to_vec(),
            draft: Draft::new(hosts),
            _ticker: progress.then(Ticker::start),
        }
    }

    /// True when the progress line is shown.
    pub fn shows_progress(&self) -> bool {
        self.progress
    }

    /// Shows what the turn tells.
    pub fn hear(&mut self, event: &TurnEvent<'_>) {
        match event {
            TurnEvent::ModelCall { step, estimate } => {
                self.draft = Draft::new(&self.hosts);
                self.show(Some(Progress {
                    step: *step,
                    phase: Phase::Reading { estimate: *estimate },
                    since: Instant::now(),
                }));
            }
            TurnEvent::TextDelta(delta) => {
                self.count_piece();
                if self.stream
                    && let Some(piece) = self.draft.push(delta)
                {
                    print_out(&piece);
                }
            }
            TurnEvent::SentBack(kind) => self.withdraw(match kind {
                CorrectionKind::Unverified => {
                    "the harness could not verify its citations in the docs it retrieved, and asks the model again"
                }
                CorrectionKind::ToolCall => {
                    "it reads as a tool call the harness could not read, and the model is asked again"
                }
                CorrectionKind::Copied => "it copies the evidence instead of answering, and the model is asked again",
            }),
            TurnEvent::ToolCall(call) => {
                self.withdraw("the model went on to use tools");
                // A write is asked about on the terminal: no progress line over the question.
                let progress = Tool::from_name(call.name)
                    .filter(|tool| *tool != Tool::WriteFile)
                    .map(|tool| Progress { step: call.step, phase: Phase::Running(tool), since: Instant::now() });
                self.show(progress);
            }
            // The trace says why, in the model's words; the terminal says what happened.
            TurnEvent::Replaced(why) if why.starts_with(crate::session::verify::invented::NOT_COVERED) => {
                self.withdraw("it names what the docs never mention: they do not cover the question")
            }
            TurnEvent::Replaced(_) => {
                self.withdraw("the harness could not verify it against the evidence, which is quoted instead")
            }
            // The trace shows a hook's decision; the progress line stays.
            TurnEvent::Hook { .. } | TurnEvent::Searched(_) => {}
            TurnEvent::ModelReplied { .. }
            | TurnEvent::ToolResult { .. }
            | TurnEvent::ApprovalRequired { .. }
            | TurnEvent::Answer(_)
            | TurnEvent::Stopped { .. } => self.show(None),
        }
    }

    /// Prints the answer and its sources: what was not shown yet, or all of it.
    pub fn answered(&mut self, answer: &str, citations: &[Citation]) {
        self.show(None);
        let full = super::with_sources(answer, citations);
        if !self.stream || self.draft.printed.is_empty() {
            return print_out(&format!("{full}\n"));
        }
        match self.draft.ending(&full) {
            Ending::Rest(rest) => print_out(&format!("{rest}\n")),
            Ending::Replaced(full) => {
                note("(the text above is not the answer: the harness changed it; the answer follows)");
                print_out(&format!("{full}\n"));
            }
        }
        self.draft = Draft::new(&self.hosts);
    }

    /// The shown draft is not the answer: say why, and start afresh.
    fn withdraw(&mut self, why: &str) {
        if !self.draft.printed.is_empty() {
            note(&format!("(the text above is not the answer: {why})"));
        }
        self.draft = Draft::new(&self.hosts);
    }

    /// One more streamed piece on the progress line.
    fn count_piece(&mut self) {
        if !self.progress {
            return;
        }
        let mut screen = screen();
        let now = Instant::now();
        let Some(progress) = screen.progress.as_mut() else { return };
        progress.phase = match progress.phase {
            Phase::Writing { pieces } => Phase::Writing { pieces: pieces + 1 },
            _ => Phase::Writing { pieces: 1 },
        };
        let due = screen.drawn_at.is_none_or(|at| now.duration_since(at) >= REDRAW_EVERY);
        if due {
            screen.draw(&mut crate::guard::sink::stderr(), now);
        }
    }

    /// Shows `progress` on the progress line (or none).
    fn show(&mut self, progress: Option<Progress>) {
        if !self.progress {
            return;
        }
        let mut screen = screen();
        screen.progress = progress;
        let mut err = crate::guard::sink::stderr();
        match progress {
            Some(_) => screen.draw(&mut err, Instant::now()),
            None => screen.clear(&mut err),
        }
        let _ = err.flush();
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.show(None);
    }
}

/// Writes `text` to stdout, the progress line out of the way. A closed stdout (`| head`) is
/// not an error here: the answer has nowhere to go.
fn print_out(text: &str) {
    let mut screen = screen();
    screen.clear(&mut crate::guard::sink::stderr());
    let mut out = crate::guard::sink::stdout();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    if text.ends_with('\n') && screen.progress.is_some() {
        screen.draw(&mut crate::guard::sink::stderr(), Instant::now());
    }
}

/// A line on stderr about what was shown.
fn note(text: &str) {
    let _ = writeln!(Stderr, "{text}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(draft: &mut Draft, pieces: &[&str]) -> String {
        pieces.iter().filter_map(|p| draft.push(p)).collect()
    }

    #[test]
    fn a_draft_shows_whole_paragraphs_and_holds_the_last() {
        let mut draft = Draft::new(&[]);
        let out = shown(&mut draft, &["Refunds take", " 14 days.\n", "\nAsk support ", "within them."]);
        assert_eq!(out, "Refunds take 14 days.\n\n", "the last paragraph waits for the harness");
        let full = "Refunds take 14 days.\n\nAsk support within them. [docs/refunds.md#window]";
        assert_eq!(draft.ending(full), Ending::Rest("Ask support within them. [docs/refunds.md#window]"));
        assert_eq!(draft.ending("Retrieval-only answer: ..."), Ending::Replaced("Retrieval-only answer: ..."));
    }

    #[test]
    fn a_draft_never_shows_a_secret_or_a_tool_call() {
        let mut draft = Draft::new(&[]);
        let out = shown(&mut draft, &["key: sk_live_4eC39Hq", "LyjWDarjtT1zdp7dc\n\n", "done"]);
        assert!(out.contains("[REDACTED]") && !out.contains("LyjWDarjtT1zdp7dc"), "{out}");
        for call in [
            "```json\n{\"name\": \"search_docs\", \"arguments\": {\"query\": \"refunds\"}}\n```\n\nmore",
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"docs/refunds.md\"}}\n</tool_call>\n\n",
            "{\"function\": \"search_docs\", \"parameters\": \"{\\\"query\\\": \\\"x\\\"}\"}\n\n",
        ] {
            let mut draft = Draft::new(&[]);
            let out = shown(&mut draft, &[call]);
            assert_eq!(out, "", "a tool call written as text is not shown: {call}");
            assert!(draft.printed.is_empty());
        }
    }

    #[test]
    fn the_progress_line_says_what_the_model_does_with_tokens_and_seconds() {
        let since = Instant::now();
        let later = since + Duration::from_secs(8);
        let reading = Progress { step: 1, phase: Phase::Reading { estimate: 1250 }, since };
        assert_eq!(reading.render(later), "step 1: the model reads its prompt (about 1,250 tokens)... 8 s");
        let writing = Progress { step: 2, phase: Phase::Writing { pieces: 31 }, since };
        assert_eq!(writing.render(later), "step 2: the model writes... 31 tokens, 8 s");
        let running = Progress { step: 2, phase: Phase::Running(Tool::SearchDocs), since };
        assert_eq!(running.render(since), "step 2: searching the docs... 0 s");
        let one = Progress { step: 1, phase: Phase::Writing { pieces: 1 }, since };
        assert_eq!(one.render(since), "step 1: the model writes... 1 token, 0 s");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn stderr_passes_on_whole_lines_only() {
        let mut screen =
            Screen { progress: None, drawn: false, err_mid_line: false, drawn_at: None, pending: Vec::new() };
        assert_eq!(screen.whole_lines(b"{\"result\":\"-----BEGIN "), None, "half a line is held");
        assert_eq!(screen.whole_lines(b"PRIVATE KEY-----"), None);
        let lines = screen.whole_lines(b"\"}\nnext").expect("a line ended");
        assert_eq!(lines, b"{\"result\":\"-----BEGIN PRIVATE KEY-----\"}\n".to_vec(), "the line, whole");
        assert_eq!(screen.pending, b"next".to_vec(), "what follows waits for its line break");
    }

    #[test]
    fn the_progress_line_is_erased_before_other_text_and_waits_for_a_finished_line() {
        let mut screen =
            Screen { progress: None, drawn: false, err_mid_line: false, drawn_at: None, pending: Vec::new() };
        let mut err = Vec::new();
        let now = Instant::now();
        screen.progress = Some(Progress { step: 1, phase: Phase::Reading { estimate: 10 }, since: now });
        screen.draw(&mut err, now);
        assert!(String::from_utf8_lossy(&err).ends_with("step 1: the model reads its prompt (about 10 tokens)... 0 s"));
        screen.clear(&mut err);
        assert!(err.ends_with(ERASE_LINE) && !screen.drawn);
        err.clear();
        screen.err_mid_line = true;
        screen.draw(&mut err, now);
        assert!(err.is_empty(), "a half-written line is not drawn over");
        screen.progress = None;
        screen.err_mid_line = false;
        screen.draw(&mut err, now);
        assert!(err.is_empty() && !screen.drawn, "nothing to show, nothing drawn");
    }
}
