//! Who is calling, three ways, in this order:
//! - a bearer token (`tokens`): API clients and the page's token sign-in;
//! - an authenticating proxy's header (`proxy`), believed only from its addresses;
//! - a sign-in cookie (`cookies`) from the company's OpenID provider (`oidc`, routes in
//!   `routes`).
//!
//! A person signed in through the proxy or OIDC gets roles from their groups (`groups`). A
//! browser's cookie or proxy sign-in is sent by the browser on its own, so every state-changing
//! request made with one must also carry the CSRF token `GET /v1/me` gives (`X-CSRF-Token`),
//! which a page elsewhere cannot read; a bearer token needs none.

pub mod cookies;
pub mod groups;
pub mod oidc;
pub mod proxy;
pub mod routes;
pub mod tokens;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Extensions, HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::ApiError;
use crate::config::{GroupRoles, Role, ServeConfig};
use crate::service::Principal;
pub use tokens::{Tokens, hash};

/// The header a cookie or proxy sign-in's state-changing request carries its CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// How people sign in besides tokens: the cookie keys and sign-ins, the OpenID provider, the
/// proxy, and the roles their groups give.
pub struct SignInSetup {
    /// Sign-in cookies.
    pub cookies: cookies::SignIns,
    /// The OpenID provider, when `[serve.oidc]` names one.
    pub oidc: Option<oidc::Oidc>,
    /// The authenticating proxy, when `[serve.proxy]` names its addresses.
    pub proxy: Option<proxy::Proxy>,
    /// `[serve.groups]`.
    pub groups: GroupRoles,
    /// Each collection's name and the groups that read it (`[[collections]]`'s `groups`).
    pub collections: Vec<(String, Vec<String>)>,
}

impl SignInSetup {
    /// From the `serve` section. An OpenID provider whose HTTP client cannot start is logged
    /// and left out, so the page offers no sign-in that would fail.
    pub fn new(serve: &ServeConfig, collections: &[crate::config::CollectionConfig]) -> SignInSetup {
        let secure = serve.oidc.redirect_url.trim().starts_with("https://");
        let oidc = serve
            .oidc
            .enabled()
            .then(|| oidc::Oidc::new(&serve.oidc))
            .and_then(|made| made.map_err(|e| tracing::error!("OpenID sign-in is off: {e}")).ok());
        if !serve.cookie_secret.trim().is_empty() {
            crate::guard::redact::remember(serve.cookie_secret.trim());
        }
        SignInSetup {
            cookies: cookies::SignIns::new(&serve.cookie_secret, secure, serve.oidc.session_hours),
            oidc,
            proxy: proxy::Proxy::new(&serve.proxy),
            groups: serve.groups.clone(),
            collections: collections.iter().map(|c| (c.name.clone(), c.groups.clone())).collect(),
        }
    }
}

/// How a request was admitted.
#[derive(Debug, Clone)]
pub enum Via {
    /// A bearer token.
    Token {
        /// The token's SHA-256, in hex.
        digest: String,
    },
    /// An OpenID sign-in's cookie.
    SignIn(cookies::SignIn),
    /// The authenticating proxy's header.
    Proxy,
}

/// Whom a request was admitted as, and how: what a stream that outlives the request checks
/// again (a revoked token, a sign-in that ended).
#[derive(Debug, Clone)]
pub struct Credential {
    /// Who.
    pub principal: Principal,
    /// How.
    pub via: Via,
}

/// A request refused before any handler: 401 (nobody, or a credential that is not valid) or
/// 403 (someone without a role, a missing CSRF token).
#[derive(Debug)]
pub struct Refusal {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Refusal {
    fn unauthorized(message: impl Into<String>) -> Refusal {
        Refusal { status: StatusCode::UNAUTHORIZED, code: "unauthorized", message: message.into() }
    }

    fn forbidden(code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal { status: StatusCode::FORBIDDEN, code, message: message.into() }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = ApiError::new(self.status, self.code, self.message).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Middleware: a caller (token, proxy or sign-in cookie), or 401/403; a cookie or proxy
/// caller's state-changing request with its CSRF token, or 403; then the principal's rate
/// limit, or 429.
pub async fn require_token(
    State(state): State<std::sync::Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let credential = match authenticate(&state, request.headers(), request.extensions()) {
        Ok(credential) => credential,
        Err(refusal) => return refusal.into_response(),
    };
    if let Err(refusal) = check_csrf(&state, &credential, request.method(), request.headers()) {
        return refusal.into_response();
    }
    let principal = credential.principal.clone();
    if let Err(wait) = state.rate.check(&principal.name) {
        return ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("{} sent more than serve.rate_per_minute requests; wait {wait} s", principal.name),
        )
        .retry_after(wait)
        .into_response();
    }
    request.extensions_mut().insert(principal);
    request.extensions_mut().insert(credential);
    next.run(request).await
}

/// Whom a request with `headers` (and the connection's `extensions`, which hold its peer's
/// address) is admitted as, or why it is not.
pub fn authenticate(state: &AppState, headers: &HeaderMap, extensions: &Extensions) -> Result<Credential, Refusal> {
    let mut credential = admit(state, headers, extensions)?;
    // Without [[collections]], the one collection is everyone's.
    if state.sign_in.collections.is_empty() {
        credential.principal.collections = vec![crate::config::ALL_COLLECTIONS.to_string()];
    }
    Ok(credential)
}

/// [`authenticate`]'s credential, before the collections of a single-workspace service.
fn admit(state: &AppState, headers: &HeaderMap, extensions: &Extensions) -> Result<Credential, Refusal> {
    // A bearer token, when one is sent, decides alone: a wrong one is never rescued by a cookie.
    // Another scheme (a proxy's `Basic`) is not ours to judge, and is passed over.
    if let Some(token) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer_token) {
        return match state.tokens.admit(token) {
            Some(credential) => Ok(credential),
            None => Err(Refusal::unauthorized("the bearer token is not valid")),
        };
    }
    let setup = &state.sign_in;
    if let Some(proxy) = &setup.proxy {
        let peer = extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
        match proxy.said(peer, headers) {
            proxy::Said::Nothing => {}
            proxy::Said::Untrusted { header, from } => {
                let from = from.map_or("an unknown address".to_string(), |ip| ip.to_string());
                tracing::warn!("refused a {header} header from {from}, which is not in serve.proxy.trusted");
                return Err(Refusal::unauthorized(format!(
                    "the {header} header is believed only from the proxy's addresses (serve.proxy.trusted); this \
                     request came from {from}"
                )));
            }
            proxy::Said::Unusable { header } => {
                tracing::warn!("refused a request whose {header} header is empty or comes more than once");
                return Err(Refusal::unauthorized(format!(
                    "the proxy's {header} header is empty or comes more than once; the proxy must set it, once"
                )));
            }
            proxy::Said::Person { name, groups } => {
                let roles = groups::roles(&setup.groups, &groups);
                if roles.is_empty() {
                    return Err(Refusal::forbidden("no_role", groups::no_role(&name, &groups)));
                }
                let collections = groups::collections(&setup.collections, &groups);
                return Ok(Credential { principal: Principal { name, roles, collections }, via: Via::Proxy });
            }
        }
    }
    if let Some(sign_in) = setup.cookies.current(headers) {
        let principal = Principal {
            name: sign_in.name.clone(),
            roles: sign_in.roles.clone(),
            collections: sign_in.collections.clone(),
        };
        return Ok(Credential { principal, via: Via::SignIn(sign_in) });
    }
    let signed_out =
        headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok()).any(|v| v.contains(cookies::SESSION));
    Err(Refusal::unauthorized(match (signed_out, setup.oidc.is_some()) {
        (true, _) => "your sign-in has ended; sign in again",
        (false, true) => "not signed in: sign in on the page, or send `Authorization: Bearer <token>`",
        (false, false) => "no bearer token: send `Authorization: Bearer <token>`",
    }))
}

/// A cookie or proxy caller's state-changing request must carry its CSRF token; a token
/// caller's needs none (a browser never sends a bearer token on its own).
fn check_csrf(state: &AppState, credential: &Credential, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let Some(expected) = csrf_token(state, credential) else { return Ok(()) };
    let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if constant_time_eq(sent.as_bytes(), expected.as_bytes()) {
        return Ok(());
    }
    Err(Refusal::forbidden(
        "csrf",
        "a signed-in browser's request that changes something must carry the X-CSRF-Token header that GET /v1/me \
         gives; this one did not (a page elsewhere may have sent it). Reload the page and try again",
    ))
}

/// The CSRF token of a cookie or proxy caller (none for a token caller): the sign-in's own, or
/// for the proxy a MAC of the name under the cookie key (the same for all of a person's tabs).
fn csrf_token(state: &AppState, credential: &Credential) -> Option<String> {
    match &credential.via {
        Via::Token { .. } => None,
        Via::SignIn(sign_in) => Some(sign_in.csrf.clone()),
        Via::Proxy => Some(state.sign_in.cookies.mac(&format!("proxy-csrf\0{}", credential.principal.name))),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && !a.is_empty() && bool::from(a.ct_eq(b))
}

/// Resolves when `credential` no longer admits its principal as it did: a token revoked or
/// changed, a sign-in ended or signed out. A proxy's caller is asked again on every request,
/// so its streams end only with the connection.
pub fn revoked(
    state: &AppState,
    credential: &Credential,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    match &credential.via {
        Via::Token { digest } => Box::pin(state.tokens.revoked(digest, &credential.principal)),
        Via::SignIn(sign_in) => Box::pin(state.sign_in.cookies.ended(sign_in)),
        Via::Proxy => Box::pin(std::future::pending()),
    }
}

/// The principal whose valid bearer token `headers` carry, if any (for public routes that
/// show more to some callers).
pub fn principal(state: &AppState, headers: &HeaderMap) -> Option<Principal> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    state.tokens.find(bearer_token(value)?)
}
/// What `GET /v1/me` answers.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Me {
    /// The principal the caller is.
    principal: String,
    /// What it may do.
    may: May,
    /// How the caller signed in.
    signed_in_with: SignedInWith,
    /// For a browser signed in by cookie or proxy: what each state-changing request must send in
    /// `X-CSRF-Token`. Absent for a bearer token, which needs none.
    #[serde(skip_serializing_if = "Option::is_none")]
    csrf: Option<String>,
    /// When an OpenID sign-in ends, in milliseconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    ends_ms: Option<u64>,
    /// Whether this deployment can write at all (a collection's workspace has `notes/`):
    /// without, there are never pending writes to show.
    writes: bool,
    /// The collections the caller reads, in order (the first is read when a request names
    /// none); one, `default`, without `[[collections]]`.
    collections: Vec<CollectionSeen>,
}

/// A collection as a caller sees it.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct CollectionSeen {
    /// Its name, for `?collection=` (and the model name of `/v1/chat/completions`).
    name: String,
    /// The commit its docs come from, for a git source.
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<String>,
}

/// How a caller signed in.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SignedInWith {
    /// A bearer token.
    Token,
    /// The company's OpenID provider (a cookie).
    Oidc,
    /// An authenticating proxy in front.
    Proxy,
}

/// A principal's roles, as a client asks about them.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct May {
    /// Ask questions and hold sessions.
    ask: bool,
    /// Decide pending writes.
    approve: bool,
    /// Metrics, the gaps report, closing anyone's session.
    admin: bool,
}

/// `GET /v1/me`: who the caller is, what it may do and how it signed in, so a client shows only
/// what the caller can use (the page's approvals and docs-gaps views) and a browser learns its
/// CSRF token.
#[utoipa::path(
    get,
    path = "/v1/me",
    summary = "Who the caller is, what it may do, how it signed in (and a browser's CSRF token)",
    responses((status = 200, description = "the caller", body = Me))
)]
pub async fn me(
    State(state): State<std::sync::Arc<AppState>>,
    axum::Extension(credential): axum::Extension<Credential>,
) -> Response {
    let csrf = csrf_token(&state, &credential);
    let (signed_in_with, ends_ms) = match &credential.via {
        Via::Token { .. } => (SignedInWith::Token, None),
        Via::SignIn(sign_in) => (SignedInWith::Oidc, Some(sign_in.expires.saturating_mul(1000))),
        Via::Proxy => (SignedInWith::Proxy, None),
    };
    let principal = credential.principal;
    let readable: Vec<_> = state.collections.readable(&principal).collect();
    let writes = readable.iter().any(|c| c.harness.workspace.has_notes());
    let collections = readable
        .iter()
        .map(|c| CollectionSeen { name: c.name.clone(), revision: c.harness.index.current().revision() })
        .collect();
    axum::Json(Me {
        may: May {
            ask: principal.may(Role::Ask),
            approve: principal.may(Role::Approve),
            admin: principal.may(Role::Admin),
        },
        principal: principal.name,
        signed_in_with,
        csrf,
        ends_ms,
        writes,
        collections,
    })
    .into_response()
}

/// The token of an `Authorization` value with the Bearer scheme, matched case-insensitively
/// (RFC 7235: `Bearer`, `bearer` and `BEARER` are the same scheme).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once([' ', '\t'])?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_gate_what_a_principal_may_do() {
        let asker = Principal { name: "ana".into(), roles: vec![Role::Ask], collections: Vec::new() };
        assert!(asker.require(Role::Ask).is_ok());
        assert!(asker.require(Role::Approve).is_err());
        let admin = Principal { name: "root".into(), roles: vec![Role::Admin], collections: Vec::new() };
        assert!(admin.require(Role::Ask).is_ok());
        assert!(admin.require(Role::Approve).is_err(), "approving is its own role");
    }

    #[test]
    fn csrf_tokens_compare_whole_and_never_empty() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"", b""), "an empty token never matches");
    }

    /// A cookie sign-in's request that changes something carries its own CSRF token or is
    /// refused; a read needs none, nor does a bearer token's request.
    #[test]
    fn a_sign_in_cookies_change_needs_its_own_csrf_token() {
        use crate::config::{Config, Sources};
        use crate::session::store::{Location, Store};
        let dir = tempfile::tempdir().expect("temp dir");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).expect("mkdir");
        std::fs::write(workspace.join("refunds.md"), "# Refunds\n\n14 days.\n").expect("write");
        let flags = vec![
            ("workspace", workspace.display().to_string()),
            ("index.path", "memory".to_string()),
            ("llm.model", "scripted".to_string()),
        ];
        let config = Config::load(&Sources { file: None, env: Default::default(), flags }).expect("config");
        let harness = crate::agent::Harness::open(&config).expect("harness");
        let store = Store::open(&Location::File(dir.path().join("log.db"))).expect("log");
        let state = AppState::new(config, harness, store);

        let sign_in = cookies::SignIn {
            id: "sign-in-1".into(),
            name: "ana".into(),
            roles: vec![Role::Ask],
            collections: Vec::new(),
            expires: u64::MAX,
            csrf: "c".repeat(64),
        };
        let principal = Principal { name: "ana".into(), roles: vec![Role::Ask], collections: Vec::new() };
        let cookie = Credential { principal: principal.clone(), via: Via::SignIn(sign_in) };
        let with = |token: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(CSRF_HEADER, token.parse().expect("a header value"));
            headers
        };
        let refused = |result: Result<(), Refusal>| result.is_err();
        assert!(refused(check_csrf(&state, &cookie, &Method::POST, &HeaderMap::new())), "no token");
        assert!(refused(check_csrf(&state, &cookie, &Method::DELETE, &with(&"0".repeat(64)))), "a wrong one");
        assert!(refused(check_csrf(&state, &cookie, &Method::POST, &with(&"c".repeat(63)))), "a part of it");
        assert!(check_csrf(&state, &cookie, &Method::POST, &with(&"c".repeat(64))).is_ok(), "its own");
        assert!(check_csrf(&state, &cookie, &Method::GET, &HeaderMap::new()).is_ok(), "a read needs none");
        let token = Credential { principal, via: Via::Token { digest: "d".repeat(64) } };
        assert!(check_csrf(&state, &token, &Method::POST, &HeaderMap::new()).is_ok(), "a bearer token needs none");
    }
}
