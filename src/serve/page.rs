//! The web page at `/`: one HTML file, its modules and a style sheet, all served from the
//! binary, nothing from anywhere else. A strict Content-Security-Policy forbids every outside
//! resource (so a Markdown image pointing elsewhere cannot leak anything) and inline script; the
//! page builds answers from safe nodes, never from HTML.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};

/// The policy every page response carries.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                       img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Every file of the page: where it is served, its type and its text.
pub const ASSETS: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("page/index.html")),
    ("/app.js", "text/javascript; charset=utf-8", include_str!("page/app.js")),
    ("/api.js", "text/javascript; charset=utf-8", include_str!("page/api.js")),
    ("/render.js", "text/javascript; charset=utf-8", include_str!("page/render.js")),
    ("/panels.js", "text/javascript; charset=utf-8", include_str!("page/panels.js")),
    ("/turns.js", "text/javascript; charset=utf-8", include_str!("page/turns.js")),
    ("/copy.js", "text/javascript; charset=utf-8", include_str!("page/copy.js")),
    ("/history.js", "text/javascript; charset=utf-8", include_str!("page/history.js")),
    ("/suggest.js", "text/javascript; charset=utf-8", include_str!("page/suggest.js")),
    ("/app.css", "text/css; charset=utf-8", include_str!("page/app.css")),
];

fn page(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_SECURITY_POLICY, CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

/// A route for every file of the page, public (the page asks for a token itself).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Vec<(&'static str, MethodRouter<S>)> {
    ASSETS
        .iter()
        .map(|&(path, content_type, body)| (path, get(move || async move { page(content_type, body) })))
        .collect()
}
