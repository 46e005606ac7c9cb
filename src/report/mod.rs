//! What the session log says about the docs: [`gaps`], the questions they could not answer
//! (`docs-agent report gaps` prints it; `GET /v1/reports/gaps` gives it to an admin); and
//! [`suggest`], the questions the page suggests on an empty conversation (`GET /v1/suggestions`).

pub mod gaps;
pub mod suggest;
