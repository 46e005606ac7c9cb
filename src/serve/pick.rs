//! `?collection=NAME`: which collection a request reads, on every route that reads the docs
//! (`/v1/ask`, `/v1/search`, `/v1/sections`, `/v1/suggestions`, `POST /v1/sessions`, `/mcp`).
//! Without it, the first collection the caller reads; a session's routes read the collection
//! the session started in.

use serde::Deserialize;

use super::AppState;
use crate::service::collections::{Collection, Which};
use crate::service::{Principal, Refused};

/// The query parameter that picks a collection.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Pick {
    /// The collection to read (`[[collections]]`' names; `GET /v1/me` lists the caller's).
    /// Without it: the first one the caller reads. A collection the caller may not read is
    /// 404, as one that does not exist.
    pub collection: Option<String>,
}

impl Pick {
    /// The collection `principal` reads through this request, or why not.
    pub fn chosen<'a>(&self, state: &'a AppState, principal: &Principal) -> Result<(Which, &'a Collection), Refused> {
        let which = state.collections.chosen(principal, self.collection.as_deref())?;
        Ok((which, state.collections.get(which)))
    }
}
