//! `/mcp`: the MCP server (`crate::mcp`) over streamable HTTP, behind the same bearer tokens
//! as the rest of the API and the `ask` role.
//!
//! Stateless: every request is answered on its own, as JSON, by a server made for it (no
//! session is kept in memory, so nothing grows with clients and any replica can answer).
//! `rmcp`'s check of the `Host` header (against DNS rebinding of a server without
//! authentication) is off: a page that rebinds a name to this server still has no token, and
//! the listen address and a proxy in front decide which names reach it.

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::AppState;
use super::error::ApiError;
use crate::config::Role;
use crate::mcp::{DocsServer, Front};
use crate::service::Principal;

/// `POST /mcp` (and the other methods, which the SDK answers as the protocol says).
#[utoipa::path(
    post,
    path = "/mcp",
    operation_id = "mcp",
    summary = "The MCP server over streamable HTTP (stateless, JSON responses): tools search_docs, read_section and ask; the docs' sections as resources (docs-agent://docs/file.md#anchor). Needs the ask role. ?collection=NAME picks the collection its tools read.",
    params(super::pick::Pick),
    request_body(content = Object, description = "A JSON-RPC 2.0 message of the Model Context Protocol"),
    responses(
        (status = 200, description = "the JSON-RPC response", body = Object),
        (status = 202, description = "a notification, accepted"),
        (status = 403, description = "missing role (forbidden)", body = super::error::ErrorBody),
        (status = 404, description = "no_collection: no collection by that name that the caller reads", body = super::error::ErrorBody),
    )
)]
pub async fn handle(
    State(state): State<Arc<AppState>>,
    Extension(principal): Extension<Principal>,
    request: Request,
) -> Response {
    if let Err(e) = principal.require(Role::Ask) {
        return ApiError::from(e).into_response();
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(state.config.serve.max_body_bytes)
        .disable_allowed_hosts();
    // The collection its tools read: `?collection=NAME`, else the first the caller reads.
    let pick = match axum::extract::Query::<super::pick::Pick>::try_from_uri(request.uri()) {
        Ok(axum::extract::Query(pick)) => pick,
        Err(e) => return ApiError::bad_request(format!("{e}; use /mcp?collection=NAME")).into_response(),
    };
    let which = match pick.chosen(&state, &principal) {
        Ok((which, _)) => which,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let front = Arc::new(Front::Serve(state.service.clone(), which));
    let service = StreamableHttpService::new(
        move || Ok(DocsServer::new(front.clone())),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let response = service.handle(request).await;
    let json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/event-stream"));
    if !response.status().is_client_error() || json {
        return response.map(axum::body::Body::new);
    }
    // The SDK refuses a request the protocol does not allow (a GET, a missing Accept, not
    // JSON) in plain text; the API's clients get its one error shape, with the SDK's reason.
    let status = response.status();
    let reason = match axum::body::to_bytes(axum::body::Body::new(response.into_body()), 4096).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
        Err(_) => String::new(),
    };
    let code = match status.as_u16() {
        405 => "method_not_allowed",
        406 => "not_acceptable",
        413 => "too_large",
        415 => "unsupported_media_type",
        _ => "bad_request",
    };
    let reason = if reason.is_empty() { status.canonical_reason().unwrap_or("refused").to_string() } else { reason };
    ApiError::new(status, code, format!("/mcp: {}", crate::guard::clip(&reason, 300))).into_response()
}
