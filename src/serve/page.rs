//! The web page at `/`: one HTML file, a script and a style sheet, all served from the binary,
//! nothing from anywhere else. A strict Content-Security-Policy forbids every outside resource
//! (so a Markdown image pointing elsewhere cannot leak anything) and inline script; the page
//! renders answers as text, never as HTML.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const HTML: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/app.js");
const STYLE: &str = include_str!("page/app.css");

/// The policy every page response carries.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                       img-src 'none'; font-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

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

/// `GET /`
pub async fn index() -> Response {
    page("text/html; charset=utf-8", HTML)
}

/// `GET /app.js`
pub async fn script() -> Response {
    page("text/javascript; charset=utf-8", SCRIPT)
}

/// `GET /app.css`
pub async fn style() -> Response {
    page("text/css; charset=utf-8", STYLE)
}
