//! docs-agent: answers questions about a product's Markdown docs with an LLM that may only *ask*
//! for tools. The harness decides, executes and records, and every guarantee (confinement,
//! approval, redaction, fencing, limits) lives in this code, not in the prompt.
//! See ARCHITECTURE.md for the map.

/// An error that is one message, written for the person who meets it: what failed, on which
/// input, what to do. Each module names its own, so callers can tell them apart.
#[macro_export]
macro_rules! message_error {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(pub String);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::error::Error for $name {}
    };
}

pub mod agent;
pub mod approval;
pub mod check;
pub mod cli;
pub mod config;
pub mod eval;
pub mod guard;
pub mod index;
pub mod model;
pub mod prompt;
pub mod runtime;
pub mod serve;
pub mod session;
pub mod skills;
pub mod tools;
pub mod trace;
pub mod workspace;
