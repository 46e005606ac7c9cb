//! Bearer tokens: each maps to a principal and its roles. Only the SHA-256 of a token is kept
//! (in the configuration and in memory); the token itself is never stored or logged.

use std::collections::HashMap;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::AppState;
use super::error::ApiError;
use crate::config::{Role, TokenConfig};
use crate::service::Principal;

/// The tokens, by the hex SHA-256 of the token; replaced whole when the config file changes
/// (`cli::serve` watches it), so a token added or revoked takes effect without a restart. A
/// watch channel holds them, so a stream already open learns of a revocation ([`Tokens::revoked`]).
pub struct Tokens(tokio::sync::watch::Sender<HashMap<String, Principal>>);

/// The token a request was admitted with (its hash) and whom it names: what a stream that
/// outlives the request checks again when the tokens change.
#[derive(Debug, Clone)]
pub struct Credential {
    digest: String,
    principal: Principal,
}

impl Tokens {
    /// From the configuration.
    pub fn new(tokens: &[TokenConfig]) -> Tokens {
        Tokens(tokio::sync::watch::Sender::new(by_hash(tokens)))
    }

    /// The principal a presented token belongs to.
    pub fn find(&self, token: &str) -> Option<Principal> {
        self.admit(token).map(|c| c.principal)
    }

    /// The credential of a presented token, if it is one.
    fn admit(&self, token: &str) -> Option<Credential> {
        let digest = hash(token);
        let principal = self.0.borrow().get(&digest).cloned()?;
        Some(Credential { digest, principal })
    }

    /// From now on, the tokens of `tokens` and no others; how many there are.
    pub fn replace(&self, tokens: &[TokenConfig]) -> usize {
        let next = by_hash(tokens);
        let count = next.len();
        self.0.send_replace(next);
        count
    }

    /// Resolves once `credential`'s token no longer admits its principal as it did (revoked,
    /// or given to another name or other roles); never while it does. A stream ends on it.
    pub fn revoked(&self, credential: &Credential) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut tokens = self.0.subscribe();
        let Credential { digest, principal } = credential.clone();
        async move {
            loop {
                if tokens.borrow_and_update().get(&digest) != Some(&principal) {
                    return;
                }
                // The sender lives as long as the server: closed, nothing can change any more.
                if tokens.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

fn by_hash(tokens: &[TokenConfig]) -> HashMap<String, Principal> {
    tokens
        .iter()
        .map(|t| (t.sha256.to_ascii_lowercase(), Principal { name: t.principal.clone(), roles: t.roles.clone() }))
        .collect()
}

/// The hex SHA-256 of a token, as the configuration stores it.
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Middleware: a valid bearer token, or 401; then the principal's rate limit, or 429.
pub async fn require_token(
    State(state): State<std::sync::Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let credential = match authenticate(&state, request.headers()) {
        Ok(credential) => credential,
        Err(why) => return unauthorized(why),
    };
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

/// The credential of the bearer token `headers` carry, or why there is none (for a 401: no
/// token, or one that is not valid).
pub fn authenticate(state: &AppState, headers: &axum::http::HeaderMap) -> Result<Credential, &'static str> {
    let presented = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(bearer_token);
    match presented {
        None => Err("no bearer token: send `Authorization: Bearer <token>`"),
        Some(token) => state.tokens.admit(token).ok_or("the bearer token is not valid"),
    }
}

/// The principal whose valid bearer token `headers` carry, if any (for public routes that
/// show more to some callers).
pub fn principal(state: &AppState, headers: &axum::http::HeaderMap) -> Option<Principal> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    state.tokens.find(bearer_token(value)?)
}

/// What `GET /v1/me` answers.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Me {
    /// The principal the token belongs to.
    principal: String,
    /// What it may do.
    may: May,
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

/// `GET /v1/me`: who the token belongs to and what it may do, so a client shows only what the
/// caller can use (the page's approvals and docs-gaps views).
#[utoipa::path(
    get,
    path = "/v1/me",
    summary = "Who the token belongs to and what it may do (a client shows only what the caller can use)",
    responses((status = 200, description = "the caller", body = Me))
)]
pub async fn me(axum::Extension(principal): axum::Extension<Principal>) -> Response {
    axum::Json(Me {
        may: May {
            ask: principal.may(Role::Ask),
            approve: principal.may(Role::Approve),
            admin: principal.may(Role::Admin),
        },
        principal: principal.name,
    })
    .into_response()
}

/// 401 with `WWW-Authenticate: Bearer`, in the one error shape.
pub fn unauthorized(message: &str) -> Response {
    let mut response = ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
    response
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
    fn tokens_are_found_by_their_hash_only() {
        let config = [TokenConfig { principal: "ana".into(), sha256: hash("s3cret-token"), roles: vec![Role::Ask] }];
        let tokens = Tokens::new(&config);
        assert_eq!(tokens.find("s3cret-token").map(|p| p.name), Some("ana".to_string()));
        assert!(tokens.find("s3cret-token ").is_none());
        assert!(tokens.find(&hash("s3cret-token")).is_none(), "the hash itself is not a token");
        assert_eq!(hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        // Replaced whole: the old token stops working, the new one works.
        let next = [TokenConfig { principal: "bo".into(), sha256: hash("other-token"), roles: vec![Role::Ask] }];
        assert_eq!(tokens.replace(&next), 1);
        assert!(tokens.find("s3cret-token").is_none());
        assert_eq!(tokens.find("other-token").map(|p| p.name), Some("bo".to_string()));
    }

    #[tokio::test]
    async fn a_stream_learns_its_token_was_revoked_or_changed() {
        use futures_util::FutureExt;
        let ana = TokenConfig { principal: "ana".into(), sha256: hash("s3cret-token"), roles: vec![Role::Ask] };
        let bo = TokenConfig { principal: "bo".into(), sha256: hash("other-token"), roles: vec![Role::Ask] };
        let tokens = Tokens::new(&[ana.clone(), bo.clone()]);
        let Some(credential) = tokens.admit("s3cret-token") else { panic!("ana's token admits") };
        let mut revoked = Box::pin(tokens.revoked(&credential));
        assert!(revoked.as_mut().now_or_never().is_none(), "valid: the stream goes on");
        // Another caller's change, or the same tokens read again, leave it be.
        tokens.replace(std::slice::from_ref(&ana));
        tokens.replace(&[ana.clone(), bo.clone()]);
        assert!(revoked.as_mut().now_or_never().is_none(), "still valid after other changes");
        tokens.replace(std::slice::from_ref(&bo));
        assert_eq!(revoked.as_mut().now_or_never(), Some(()), "revoked: the stream ends");
        // Fewer roles for the same token end a stream too.
        let tokens = Tokens::new(&[TokenConfig { roles: vec![Role::Ask, Role::Approve], ..ana.clone() }]);
        let Some(credential) = tokens.admit("s3cret-token") else { panic!("admits") };
        let mut changed = Box::pin(tokens.revoked(&credential));
        assert!(changed.as_mut().now_or_never().is_none());
        tokens.replace(&[ana]);
        assert_eq!(changed.as_mut().now_or_never(), Some(()), "its roles changed: the stream ends");
    }

    #[test]
    fn roles_gate_what_a_principal_may_do() {
        let asker = Principal { name: "ana".into(), roles: vec![Role::Ask] };
        assert!(asker.require(Role::Ask).is_ok());
        assert!(asker.require(Role::Approve).is_err());
        let admin = Principal { name: "root".into(), roles: vec![Role::Admin] };
        assert!(admin.require(Role::Ask).is_ok());
        assert!(admin.require(Role::Approve).is_err(), "approving is its own role");
    }
}
