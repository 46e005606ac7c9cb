//! docs-agent: answers questions about a product's Markdown docs with an LLM that may only *ask*
//! for tools. The harness decides, executes and records, and every guarantee (confinement,
//! approval, redaction, fencing, limits) lives in this code, not in the prompt.
//!
//! # Layout
//!
//! Two front ends over one core (ARCHITECTURE.md has the map and its invariants):
//!
//! - Front ends: [`cli`] (the command line; only it knows exit codes and printing) and
//!   [`serve`] (the HTTP API and web page; only it knows status codes).
//! - The core, along a question's path: [`config`] (read once, passed down) → [`agent`] (the
//!   harness built once, a turn's dependencies, the one-shot question) → [`session`] (the turn
//!   loop over the durable log, and its typed events) → [`model`] and [`tools`] (with
//!   [`approval`]) → [`workspace`], [`index`], [`skills`] → [`guard`] (what text passes at a
//!   boundary).
//! - Around them: [`sandbox`] (the kernel sandbox each command enters before it starts a
//!   thread).
//! - Beside them: [`trace`] (stderr lines, a listener of turn events), [`telemetry`] (the log
//!   subscriber and a turn's spans), [`runtime`], [`prompt`],
//!   [`check`] (`docs-agent check`'s report), [`eval`] (the eval engine), [`report`] (what the
//!   sessions say about the docs: their gaps).

pub mod agent;
pub mod check;
pub mod cli;
pub mod config;
pub mod doc_kind;
pub mod eval;
pub mod git;
pub mod guard;
pub mod hooks;
pub mod index;
pub mod mcp;
pub mod model;
pub mod pdf;
pub mod prompt;
pub mod report;
pub mod runtime;
pub mod sandbox;
pub mod serve;
pub mod service;
pub mod session;
pub mod site;
pub mod skills;
pub mod telemetry;
pub mod tools;
pub mod trace;
pub mod workspace;
