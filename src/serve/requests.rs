//! A span per HTTP request, with its request id: the parent of every turn, model call and tool
//! call the request starts (`session::spans`), and one log line as it ends.
//!
//! The id is the client's `x-request-id` when it is a plain token (1 to 64 letters, digits,
//! `.`, `_` or `-`), else a fresh one; either way it is sent back in `x-request-id`, so a
//! person can quote it and an operator can find the request's lines. Only the method, the
//! matched route and the path are recorded: never the query (a search's words) or a body.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use tracing::field::Empty;

/// The header that carries a request's id, both ways.
pub const REQUEST_ID: &str = "x-request-id";

/// The longest client-chosen id kept.
const ID_CHARS: usize = 64;

/// Wraps the request in its span and logs its end.
pub async fn traced(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| plain(v))
        .map_or_else(fresh_id, str::to_string);
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_string();
    let method = request.method().as_str().to_string();
    let span = tracing::info_span!(
        "request",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        http.request.method = %method,
        http.route = %route,
        url.path = %crate::guard::clip(request.uri().path(), 200),
        request_id = %id,
        http.response.status_code = Empty,
    );
    if let Ok(value) = HeaderValue::from_str(&id) {
        request.headers_mut().insert(REQUEST_ID, value.clone());
    }
    let started = Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    span.record("http.response.status_code", status);
    let ms = started.elapsed().as_millis() as u64;
    span.in_scope(|| tracing::info!(status, ms, "request done"));
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

/// A client's id worth keeping: short, and only characters that need no escaping anywhere.
fn plain(id: &str) -> bool {
    (1..=ID_CHARS).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// A new id: this process's random prefix and a counter (`r-1f2e3d4c-2a`), unique within the
/// process and unlikely to repeat across processes.
fn fresh_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let prefix = PREFIX.get_or_init(|| {
        let mut bytes = [0u8; 4];
        // Without a random source the ids are still unique within the process.
        let _ = getrandom::fill(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    });
    format!("r-{prefix}-{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_short_ids_are_kept() {
        assert!(plain("abc-123_x.y"));
        assert!(!plain(""));
        assert!(!plain(&"a".repeat(65)));
        assert!(!plain("a b"));
        assert!(!plain("a\"b"));
        assert!(!plain("naïve"));
    }

    #[test]
    fn fresh_ids_differ() {
        let (a, b) = (fresh_id(), fresh_id());
        assert_ne!(a, b);
        assert!(a.starts_with("r-") && plain(&a), "{a}");
    }
}
