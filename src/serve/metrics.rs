//! `/metrics`' request counts: every request counted by its route pattern. The counters and
//! their Prometheus text are the service's (`service::metrics`).

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::AppState;

/// Middleware: counts every request by its route pattern (never the raw path, which holds ids).
pub async fn track(State(state): State<std::sync::Arc<AppState>>, request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    state.metrics.request(&route, response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}
