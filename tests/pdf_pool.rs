//! The pool of PDF readers (`pdf::worker`), with real zygotes: they are forked while the
//! process runs one thread, as every command forks them (`cli::sandbox`), so this test has no
//! harness (`harness = false` in Cargo.toml: libtest runs each test on a thread of its own).
//! `main` starts the zygotes, then runs each check, and says what passed as libtest does.
//! Debug builds read the bytes `%docs-agent-test: loop` as a PDF whose reader loops until the
//! time limit (`pdf::worker`).

use std::sync::mpsc;

use docs_agent::pdf::{fixtures, worker};

/// The default `index.max_file_bytes`.
const LIMIT: u64 = 4 << 20;

fn main() {
    use std::io::Write;
    if let Err(e) = worker::start() {
        let _ = writeln!(docs_agent::guard::sink::stderr(), "the zygotes did not start: {e}");
        std::process::exit(1);
    }
    let checks: [(&str, fn()); 1] = [("a_pdf_is_read_beside_one_that_loops", a_pdf_is_read_beside_one_that_loops)];
    let mut failed = 0;
    for (name, check) in checks {
        let passed = std::panic::catch_unwind(check).is_ok();
        let _ = writeln!(docs_agent::guard::sink::stdout(), "test {name} ... {}", if passed { "ok" } else { "FAILED" });
        failed += usize::from(!passed);
    }
    let verdict = if failed == 0 { "ok" } else { "FAILED" };
    let _ = writeln!(
        docs_agent::guard::sink::stdout(),
        "\ntest result: {verdict}. {} passed; {failed} failed",
        checks.len() - failed
    );
    std::process::exit(i32::from(failed > 0));
}

/// While a PDF that loops holds one zygote (until the time limit, 60 s), another PDF, sent from
/// another thread once the first holds its zygote, is read by another zygote and answered
/// while the first still runs. Were PDFs read one at a time, the second would wait for the
/// first to run out of time, and be answered after it.
fn a_pdf_is_read_beside_one_that_loops() {
    let (taken, held) = mpsc::channel();
    let (done, looped) = mpsc::channel();
    std::thread::spawn(move || {
        let result = worker::extract_telling(b"%docs-agent-test: loop", LIMIT, || {
            let _ = taken.send(());
        });
        let _ = done.send(result);
    });
    held.recv().expect("the looping PDF takes a zygote");
    let read = worker::extract(&fixtures::manual(true), LIMIT).expect("the manual is read");
    assert_eq!(read.pages.len(), 3);
    match looped.try_recv() {
        Err(mpsc::TryRecvError::Empty) => {} // still looping: the two were read at once
        other => panic!("the manual was answered only after the looping PDF ({other:?}): one PDF at a time"),
    }
}
