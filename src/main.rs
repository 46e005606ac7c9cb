//! The `docs-agent` binary: parses the command line, runs it (`cli::run`), prints any error
//! once and exits with its code. All logic lives in the library.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use docs_agent::cli::{self, Cli};
use docs_agent::guard;

fn main() -> ExitCode {
    let code = match cli::run(Cli::parse()) {
        Ok(code) => code,
        Err((code, message)) => {
            let _ = writeln!(guard::sink::stderr(), "docs-agent: {}", guard::scrub(&message));
            code
        }
    };
    ExitCode::from(code as u8)
}
