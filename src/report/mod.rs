//! What the session log says about the docs: [`gaps`], the questions they could not answer.
//! `docs-agent report gaps` prints it; `GET /v1/reports/gaps` gives it to an admin.

pub mod gaps;
