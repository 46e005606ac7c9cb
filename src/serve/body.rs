//! A request's body is read whole within `serve.body_read_timeout_secs`, before the request
//! takes one of the `serve.max_concurrent` slots (and before its own `request_timeout_secs`
//! starts). A client that sends its headers and then trickles its body (a slow POST) is answered
//! 408 (and, over HTTP/1.1, its connection closed); until the first body on a connection is in,
//! the connection counts as half-open (`conn`), so it is the first to go when a real client
//! needs the room. A body over `serve.max_body_bytes` is answered 413 as soon as it is known to
//! be.
//!
//! Only a caller with a valid token gets a body read (401 at once otherwise), and at most
//! `serve.max_connections` bodies are read at once (503 beyond), so the memory bodies take is
//! bounded by `max_connections × max_body_bytes` whatever HTTP/2's streams do. The one public
//! route that takes a body is a git source's webhook (`POST /v1/sources/NAME/sync`, whose
//! signature covers its body): its bodies are read in a pool of their own, at most
//! [`WEBHOOK_BODIES`] at once, so anonymous callers holding unfinished webhook bodies cannot
//! take the slots of the callers with a token (issue 51, finding 2).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, HttpBody};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

use super::AppState;
use super::error::ApiError;

/// Webhook bodies read at once, whoever sends them: a forge sends one per push.
pub const WEBHOOK_BODIES: usize = 8;

/// Set by `conn` on each request, and raised here once the request's body is in: until then the
/// connection counts as half-open and may be closed to make room.
#[derive(Debug, Clone)]
pub struct Arrived(pub Arc<AtomicBool>);

/// Middleware: reads the body whole within the deadline, then runs the request with it.
pub async fn read_within(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let serve = &state.config.serve;
    let (parts, body) = request.into_parts();
    // A body's end is known at once when there is none (no length or a zero one, an HTTP/2
    // stream ended with its headers).
    if body.is_end_stream() {
        return run(parts, Vec::new(), next).await;
    }
    // A git source's webhook proves itself by a signature of its body, not a token.
    let webhook = parts.method == axum::http::Method::POST && super::sources::is_webhook(parts.uri.path());
    if !webhook && let Err(refusal) = super::auth::authenticate(&state, &parts.headers, &parts.extensions) {
        return closing(refusal.into_response());
    }
    let declared = parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > serve.max_body_bytes as u64) {
        return too_large();
    }
    let slots = if webhook { &state.webhook_slots } else { &state.body_slots };
    let Ok(slot) = slots.clone().try_acquire_owned() else {
        let message = if webhook {
            "the server is reading as many webhook bodies as it reads at once; try again shortly"
        } else {
            "the server is reading serve.max_connections request bodies; try again shortly"
        };
        return ApiError::overloaded(message, 1).into_response();
    };
    let deadline = Duration::from_secs(serve.body_read_timeout_secs);
    let bytes = match tokio::time::timeout(deadline, collect(body, serve.max_body_bytes)).await {
        Err(_) => return timed_out(),
        Ok(Err(Unread::TooLarge)) => return too_large(),
        Ok(Err(Unread::Broken)) => {
            return ApiError::bad_request("the request body could not be read (the connection broke)").into_response();
        }
        Ok(Ok(bytes)) => bytes,
    };
    drop(slot);
    run(parts, bytes, next).await
}

/// Marks the connection as arrived and runs the request with its whole body.
async fn run(parts: axum::http::request::Parts, bytes: Vec<u8>, next: Next) -> Response {
    if let Some(Arrived(arrived)) = parts.extensions.get::<Arrived>() {
        arrived.store(true, Ordering::Release);
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

/// Why a body was not read.
enum Unread {
    /// It grew past the limit.
    TooLarge,
    /// The client's stream failed.
    Broken,
}

/// The whole body, refused as soon as it passes `max` bytes.
async fn collect(body: Body, max: usize) -> Result<Vec<u8>, Unread> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| Unread::Broken)?;
        if bytes.len() + chunk.len() > max {
            return Err(Unread::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// 413, closing the connection (the rest of the body is not read).
fn too_large() -> Response {
    let message = "the request body is larger than serve.max_body_bytes";
    closing(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message).into_response())
}

/// 408, closing the connection.
fn timed_out() -> Response {
    let message = "the request body did not arrive within serve.body_read_timeout_secs";
    closing(ApiError::new(StatusCode::REQUEST_TIMEOUT, "body_timeout", message).into_response())
}

/// `response` with `Connection: close`: the client is mid-body, so the connection cannot carry
/// another request (HTTP/2 has no such header: there the stream alone ends).
fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
}
