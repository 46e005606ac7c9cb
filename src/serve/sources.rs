//! `POST /v1/sources/{name}/sync`: a forge's push webhook asks for a git source's sync at once.
//! No bearer token (a forge cannot send one): the request proves itself with the source's
//! webhook secret, as GitHub signs (`X-Hub-Signature-256: sha256=HMAC-SHA256(secret, body)`) or
//! as GitLab sends it (`X-Gitlab-Token: secret`), compared in constant time. A source without a
//! secret has no webhook.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use super::AppState;
use super::error::{ApiError, ErrorBody};
use crate::service::sources::WakeRefused;

/// What the webhook answers.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Queued {
    /// The source.
    source: String,
    /// `queued`: a sync starts at once, or right after the one running.
    sync: &'static str,
}

/// True when `path` is a webhook route of a source that has a secret: its body is read without
/// a token, for the signature.
pub fn is_webhook(path: &str) -> bool {
    path.strip_prefix("/v1/sources/")
        .and_then(|rest| rest.strip_suffix("/sync"))
        .is_some_and(|name| !name.contains('/'))
}

/// The one refusal of a webhook call: the same for a source that does not exist, one without a
/// secret, and a call not signed with the secret, so nobody can list the sources' names by
/// calling (issue 51, finding 13).
fn refused() -> Response {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "bad_signature",
        "the request is not signed with the webhook secret of a source by this name \
         (X-Hub-Signature-256 or X-Gitlab-Token)",
    )
    .into_response()
}

/// True when the request carries the secret: GitHub's signature of the body, or GitLab's token.
fn signed(secret: &str, headers: &HeaderMap, body: &[u8]) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(signature) = header("x-hub-signature-256").and_then(|s| s.strip_prefix("sha256=")) {
        let Some(signature) = hex(signature) else { return false };
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else { return false };
        mac.update(body);
        return mac.verify_slice(&signature).is_ok();
    }
    if let Some(token) = header("x-gitlab-token") {
        // Both sides through one keyed hash, so the comparison takes the same time wherever they differ.
        let digest = |text: &str| {
            let mut mac = Hmac::<Sha256>::new_from_slice(b"docs-agent webhook").ok()?;
            mac.update(text.as_bytes());
            Some(mac)
        };
        let (Some(theirs), Some(ours)) = (digest(token), digest(secret)) else { return false };
        return theirs.verify(&ours.finalize().into_bytes()).is_ok();
    }
    false
}

fn hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// `POST /v1/sources/{name}/sync`
#[utoipa::path(
    post,
    path = "/v1/sources/{name}/sync",
    summary = "A forge's push webhook: sync a git source now",
    description = "No bearer token: the request carries the source's webhook secret, as GitHub signs it \
                   (`X-Hub-Signature-256`) or as GitLab sends it (`X-Gitlab-Token`). A source with no \
                   webhook secret has no webhook (404).",
    security(()),
    params(("name" = String, Path, description = "The source's name in `[[sources]]`")),
    request_body(content = String, description = "The forge's event, as it sends it (only its signature is read)"),
    responses(
        (status = 202, description = "a sync is queued", body = Queued),
        (status = 401, description = "not signed with the secret of a source by this name (also when there is no \
                                      such source, or it has no webhook secret: the answer is the same)", body = ErrorBody),
    )
)]
pub async fn sync(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(sources) = state.collections.sources_with(&name) else { return refused() };
    let Some(secret) = sources.source(&name).and_then(|s| s.webhook_secret()) else { return refused() };
    if !signed(secret, &headers, &body) {
        return refused();
    }
    match sources.wake(&name) {
        Ok(()) => (StatusCode::ACCEPTED, axum::Json(Queued { source: name, sync: "queued" })).into_response(),
        Err(WakeRefused::Unknown | WakeRefused::NoSecret) => refused(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_signatures_and_gitlab_tokens_are_checked() {
        let body = br#"{"ref":"refs/heads/main"}"#;
        let mut mac = Hmac::<Sha256>::new_from_slice(b"the-secret").expect("a key");
        mac.update(body);
        let good: String = mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
        let headers = |name: &'static str, value: &str| {
            let mut h = HeaderMap::new();
            h.insert(name, value.parse().expect("a header"));
            h
        };
        assert!(signed("the-secret", &headers("x-hub-signature-256", &format!("sha256={good}")), body));
        assert!(!signed("the-secret", &headers("x-hub-signature-256", &format!("sha256={good}")), b"{}"));
        assert!(!signed("another", &headers("x-hub-signature-256", &format!("sha256={good}")), body));
        assert!(!signed("the-secret", &headers("x-hub-signature-256", "sha256=zz"), body));
        assert!(!signed("the-secret", &headers("x-hub-signature-256", &good), body), "the sha256= prefix");
        assert!(signed("the-secret", &headers("x-gitlab-token", "the-secret"), body));
        assert!(!signed("the-secret", &headers("x-gitlab-token", "the-secre"), body));
        assert!(!signed("the-secret", &HeaderMap::new(), body));
    }
}
