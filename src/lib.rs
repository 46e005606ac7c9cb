//! docs-agent: answers questions about a product's Markdown docs with an LLM that may only *ask*
//! for tools. The harness decides, executes and records, and every guarantee (confinement,
//! approval, redaction, fencing, limits) lives in this code, not in the prompt.
//! See ARCHITECTURE.md for the map.

pub mod agent;
pub mod approval;
pub mod check;
pub mod cli;
pub mod config;
pub mod guard;
pub mod index;
pub mod model;
pub mod prompt;
pub mod skills;
pub mod tools;
pub mod trace;
pub mod workspace;
