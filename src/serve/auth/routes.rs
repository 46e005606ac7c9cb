//! The sign-in routes, public (they are how one gets a credential):
//! - `GET /auth/methods`: which sign-ins the page offers;
//! - `GET /auth/login`: off to the OpenID provider, with a fresh state, nonce and PKCE challenge
//!   kept in a cookie scoped to `/auth`;
//! - `GET /auth/callback`: back from the provider; the state checked against the cookie's, the
//!   code exchanged, the ID token checked, the person's groups mapped to roles; then the sign-in
//!   cookie, and back to the page. Every failure is a small page that says why;
//! - `POST /auth/logout`: the sign-in ended (its CSRF token required), the cookie cleared.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{MethodRouter, get, post};

use super::oidc::SignInError;
use super::{AppState, Via, authenticate, check_csrf, groups};

/// The sign-in routes, for the public router.
pub fn routes() -> Vec<(&'static str, MethodRouter<Arc<AppState>>)> {
    vec![
        ("/auth/methods", get(methods)),
        ("/auth/login", get(login)),
        ("/auth/callback", get(callback)),
        ("/auth/logout", post(logout)),
    ]
}

/// What `GET /auth/methods` answers.
#[derive(serde::Serialize)]
struct Methods {
    /// The page offers "Sign in with your company account" (`/auth/login`).
    oidc: bool,
    /// An authenticating proxy signs people in before they reach the page.
    proxy: bool,
}

async fn methods(State(state): State<Arc<AppState>>) -> Response {
    let setup = &state.sign_in;
    axum::Json(Methods { oidc: setup.oidc.is_some(), proxy: setup.proxy.is_some() }).into_response()
}

async fn login(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let Some(oidc) = &state.sign_in.oidc else {
        return page(
            StatusCode::NOT_FOUND,
            "Sign-in with an identity provider is not set up here ([serve.oidc]); sign in with a token.",
        );
    };
    match oidc.begin().await {
        Ok((url, pending)) => {
            let jar = state.sign_in.cookies.pending(state.sign_in.cookies.jar(&headers), &pending);
            (jar, Redirect::to(&url)).into_response()
        }
        Err(e) => failed(e),
    }
}

/// What the provider sends the browser back with.
#[derive(serde::Deserialize)]
struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

async fn callback(State(state): State<Arc<AppState>>, headers: HeaderMap, Query(back): Query<Callback>) -> Response {
    let cookies = &state.sign_in.cookies;
    // The sign-in in progress is used once, whatever happens next.
    let jar = cookies.forget_pending(cookies.jar(&headers));
    let Some(oidc) = &state.sign_in.oidc else {
        return page(StatusCode::NOT_FOUND, "Sign-in with an identity provider is not set up here ([serve.oidc]).");
    };
    let Some(pending) = cookies.pending_of(&headers) else {
        let text = "This browser has no sign-in in progress to finish (it began in another browser, took longer than \
                    10 minutes, or was finished already). Nobody was signed in; sign in again.";
        return (jar, page(StatusCode::BAD_REQUEST, text)).into_response();
    };
    // The state first: what the provider is said to have answered is shown only for the
    // sign-in this browser began (no page of someone else's words behind a link).
    let sent = back.state.unwrap_or_default();
    if !super::constant_time_eq(sent.as_bytes(), pending.state.as_bytes()) {
        tracing::warn!("a sign-in came back with a state that does not match the browser's; refused");
        let text = "This sign-in's state does not match the one this browser sent to the identity provider (the link \
                    was altered, or came from somewhere else). Nobody was signed in; sign in again.";
        return (jar, page(StatusCode::BAD_REQUEST, text)).into_response();
    }
    if let Some(error) = back.error {
        let said = back.error_description.map(|d| format!(": {}", crate::guard::clip(&d, 200))).unwrap_or_default();
        tracing::info!("the identity provider did not sign someone in: {error}{said}");
        let text = format!("The identity provider did not sign you in ({}{said}).", crate::guard::clip(&error, 60));
        return (jar, page(StatusCode::UNAUTHORIZED, &text)).into_response();
    }
    let Some(code) = back.code.filter(|c| !c.is_empty()) else {
        return (jar, page(StatusCode::BAD_REQUEST, "The identity provider sent no code back; sign in again."))
            .into_response();
    };
    let person = match oidc.finish(code, pending).await {
        Ok(person) => person,
        Err(e) => return (jar, failed(e)).into_response(),
    };
    let roles = groups::roles(&state.sign_in.groups, &person.groups);
    if roles.is_empty() {
        tracing::info!(principal = %person.name, "signed in at the provider, but no group has a role");
        return (jar, page(StatusCode::FORBIDDEN, &groups::no_role(&person.name, &person.groups))).into_response();
    }
    let roles_said = roles.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ");
    let collections = groups::collections(&state.sign_in.collections, &person.groups);
    match cookies.begin(jar, person.name, roles, collections) {
        Ok((sign_in, jar)) => {
            tracing::info!(principal = %sign_in.name, roles = %roles_said, "signed in through the OpenID provider");
            (jar, Redirect::to("/")).into_response()
        }
        Err(e) => (cookies.forget_pending(cookies.jar(&headers)), failed(e.into())).into_response(),
    }
}

async fn logout(State(state): State<Arc<AppState>>, request: axum::extract::Request) -> Response {
    let jar = state.sign_in.cookies.jar(request.headers());
    // Nobody signed in: nothing to end, and no cookie is touched (a form on another site must
    // not be able to clear one).
    let credential = match authenticate(&state, request.headers(), request.extensions()) {
        Ok(credential) => credential,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = check_csrf(&state, &credential, &Method::POST, request.headers()) {
        return refusal.into_response();
    }
    match &credential.via {
        Via::SignIn(sign_in) => {
            tracing::info!(principal = %sign_in.name, "signed out");
            (state.sign_in.cookies.end(sign_in, jar), StatusCode::NO_CONTENT).into_response()
        }
        Via::Token { .. } | Via::Proxy => super::super::error::ApiError::bad_request(
            "only a sign-in through the identity provider is signed out here: a token is forgotten by the page, a \
             proxy's sign-in ends at the proxy",
        )
        .into_response(),
    }
}

/// The page for a sign-in that failed, with the log line its kind deserves.
fn failed(error: SignInError) -> Response {
    let status = match &error {
        SignInError::Provider { .. } => StatusCode::BAD_GATEWAY,
        SignInError::NoRandom(_) => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::UNAUTHORIZED,
    };
    tracing::warn!("a sign-in failed: {error}");
    // What went wrong between this server and the provider (addresses, network errors) is the
    // operator's to read, in the log; the person is told what to do.
    let said = match &error {
        SignInError::Provider { .. } => "The identity provider could not be reached or answered something unusable; \
                                         try again shortly. If it goes on, tell whoever runs docs-agent (its log says why)."
            .to_string(),
        other => capitalised(&other.to_string()) + ".",
    };
    page(status, &said)
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// A small page that says what happened, with a way back; `data-status` carries the status.
fn page(status: StatusCode, text: &str) -> Response {
    let title = if status.is_success() { "Signed in" } else { "Not signed in" };
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n<title>docs-agent: {title}</title>\n\
         <link rel=\"stylesheet\" href=\"/app.css\">\n</head>\n<body data-status=\"{code}\">\n\
         <main class=\"auth-result\">\n<h1>{title}</h1>\n<p>{text}</p>\n\
         <p><a href=\"/\">Back to docs-agent</a></p>\n</main>\n</body>\n</html>\n",
        code = status.as_u16(),
        // What the provider said (an error description, group names) leaves redacted, and is
        // never markup here.
        text = crate::guard::fence::escape_attr(&crate::guard::redact::redact(text)),
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, crate::serve::page::CSP),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failure_page_has_its_status_and_shows_what_the_provider_said_inert_and_redacted() {
        let key = format!("sk_live_{}", "4eC39HqLyjWDarjtT1zdp7dc");
        let shown = page(StatusCode::FORBIDDEN, &format!("<script>alert(1)</script> & co, groups {key}"));
        assert_eq!(shown.status(), StatusCode::FORBIDDEN);
        let body = axum::body::to_bytes(shown.into_body(), 1 << 20).await.unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(body.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; co"), "{body}");
        assert!(!body.contains("<script>"), "{body}");
        assert!(!body.contains(&key) && body.contains("REDACTED"), "a secret the provider echoed is redacted: {body}");
        assert_eq!(capitalised("the state"), "The state");
    }
}
