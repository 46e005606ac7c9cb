//! OpenID Connect sign-in, on the `openidconnect` crate: the provider's discovery document,
//! the authorization code flow with PKCE (S256), and the ID token checked (the provider's
//! signature, issuer, audience, expiry, nonce) before anything in it is believed. The crate calls
//! the provider through our reqwest client, with redirects off and replies capped.

use std::time::Duration;

use axum::http;
use openidconnect::core::{
    CoreAuthDisplay, CoreAuthPrompt, CoreAuthenticationFlow, CoreErrorResponseType, CoreGenderClaim, CoreJsonWebKey,
    CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreProviderMetadata, CoreRevocableToken,
    CoreRevocationErrorResponse, CoreTokenIntrospectionResponse, CoreTokenType,
};
use openidconnect::{
    AdditionalClaims, AuthorizationCode, ClaimsVerificationError, Client, ClientId, ClientSecret, CsrfToken,
    EmptyExtraTokenFields, EndpointMaybeSet, EndpointNotSet, EndpointSet, IdTokenFields, IssuerUrl, Nonce,
    OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, StandardErrorResponse,
    StandardTokenResponse, SubjectIdentifier,
};
use serde::{Deserialize, Serialize};

use super::cookies::{NoRandom, Pending, now, random_hex};
use crate::config::OidcConfig;

/// The longest reply read from the provider (a discovery document, its keys, a token).
const MAX_REPLY_BYTES: usize = 1024 * 1024;
/// How long one call to the provider may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the provider's discovery document and keys are kept before they are read again
/// (a key the provider rotates is taken within this time; a flood of sign-ins costs the
/// provider nothing more).
const METADATA_FOR: Duration = Duration::from_secs(300);

/// The claims beyond the standard ones (the groups claim, a custom name claim), as they came.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Extra(serde_json::Map<String, serde_json::Value>);
impl AdditionalClaims for Extra {}

type TokenResponse = StandardTokenResponse<
    IdTokenFields<
        Extra,
        EmptyExtraTokenFields,
        CoreGenderClaim,
        CoreJweContentEncryptionAlgorithm,
        CoreJwsSigningAlgorithm,
    >,
    CoreTokenType,
>;
type ProviderClient = Client<
    Extra,
    CoreAuthDisplay,
    CoreGenderClaim,
    CoreJweContentEncryptionAlgorithm,
    CoreJsonWebKey,
    CoreAuthPrompt,
    StandardErrorResponse<CoreErrorResponseType>,
    TokenResponse,
    CoreTokenIntrospectionResponse,
    CoreRevocableToken,
    CoreRevocationErrorResponse,
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why a sign-in failed, written for the person at the browser (and the operator's log).
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The provider could not be reached or answered nonsense.
    #[error(
        "the identity provider at {issuer} could not be asked ({detail}); try again shortly, or tell whoever runs docs-agent"
    )]
    Provider {
        /// `serve.oidc.issuer`.
        issuer: String,
        /// What went wrong, with its causes.
        detail: String,
    },
    /// The provider refused the code (used twice, too old, another client's).
    #[error("the identity provider refused to finish this sign-in ({0}); sign in again")]
    Refused(String),
    /// The ID token is not for this service.
    #[error(
        "the identity provider's ID token was not issued for this service (its audience is not serve.oidc.client_id); tell whoever runs docs-agent"
    )]
    Audience,
    /// The ID token's time is up.
    #[error(
        "the identity provider's ID token has expired (if this repeats, this server's clock or the provider's is wrong); sign in again"
    )]
    Expired,
    /// Another check of the ID token failed (signature, issuer, nonce).
    #[error("the identity provider's ID token did not pass its checks ({0}); sign in again")]
    Token(String),
    /// The email that names the person is not verified by the provider.
    #[error("the identity provider says your email address is not verified; verify it there, then sign in again")]
    Unverified,
    /// The name claim is missing.
    #[error(
        "the identity provider did not say who you are: its answer has no `{0}` claim (serve.oidc.name_claim); tell whoever runs docs-agent"
    )]
    NoName(String),
    /// No random numbers.
    #[error(transparent)]
    NoRandom(#[from] NoRandom),
}

/// Who the provider says signed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Person {
    /// From `serve.oidc.name_claim`.
    pub name: String,
    /// From `serve.oidc.groups_claim` (none when the provider lists none).
    pub groups: Vec<String>,
}

/// The provider, as configured.
pub struct Oidc {
    config: OidcConfig,
    http: reqwest::Client,
    /// The discovery document and keys last read, and when.
    metadata: tokio::sync::Mutex<Option<(std::time::Instant, CoreProviderMetadata)>>,
}

impl Oidc {
    /// For `config`; fails only when the TLS stack cannot start.
    pub fn new(config: &OidcConfig) -> Result<Oidc, String> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            // A provider's reply that redirects elsewhere is not followed (the crate's advice:
            // no request to a place the provider did not name).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .connect_timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| format!("starting the HTTP client for the identity provider: {e}"))?;
        if !config.client_secret.is_empty() {
            crate::guard::redact::remember(&config.client_secret);
        }
        Ok(Oidc { config: config.clone(), http, metadata: tokio::sync::Mutex::new(None) })
    }

    /// Where to send the browser to sign in, and what to keep for the callback.
    pub async fn begin(&self) -> Result<(String, Pending), SignInError> {
        let client = self.client().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let state = random_hex(32)?;
        let nonce = random_hex(32)?;
        let (state_out, nonce_out) = (state.clone(), nonce.clone());
        let mut request = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                move || CsrfToken::new(state_out),
                move || Nonce::new(nonce_out),
            )
            .set_pkce_challenge(challenge);
        for scope in self.config.scopes.iter().map(|s| s.trim()).filter(|s| !s.is_empty() && *s != "openid") {
            request = request.add_scope(Scope::new(scope.to_string()));
        }
        let (url, _, _) = request.url();
        Ok((url.to_string(), Pending { state, verifier: verifier.secret().clone(), nonce, started: now() }))
    }

    /// Finishes the sign-in `pending` began, with the `code` the provider sent back: the code
    /// exchanged (with the PKCE verifier), the ID token checked, the person read from it (and
    /// from the userinfo endpoint for a claim the token lacks).
    pub async fn finish(&self, code: String, pending: Pending) -> Result<Person, SignInError> {
        let client = self.client().await?;
        let http = self.caller();
        let exchange = client.exchange_code(AuthorizationCode::new(code)).map_err(|e| self.unreachable(e))?;
        let response =
            exchange.set_pkce_verifier(PkceCodeVerifier::new(pending.verifier)).request_async(&http).await.map_err(
                |e| match e {
                    openidconnect::RequestTokenError::ServerResponse(r) => SignInError::Refused(r.to_string()),
                    other => self.unreachable(other),
                },
            )?;
        let id_token = openidconnect::TokenResponse::id_token(&response)
            .ok_or_else(|| SignInError::Token("the provider sent no ID token; is `openid` among the scopes?".into()))?;
        let checked = id_token.claims(&client.id_token_verifier(), &Nonce::new(pending.nonce));
        if let Err(ClaimsVerificationError::SignatureVerification(_)) = &checked {
            // Perhaps a key the provider rotated since its keys were read: read them again next time.
            *self.metadata.lock().await = None;
        }
        let claims = checked.map_err(|e| match e {
            ClaimsVerificationError::InvalidAudience(_) => SignInError::Audience,
            ClaimsVerificationError::Expired(_) => SignInError::Expired,
            other => SignInError::Token(other.to_string()),
        })?;
        let mut found = Found::default();
        found.read(
            &self.config,
            claims.subject(),
            claims.email(),
            claims.email_verified(),
            claims.preferred_username(),
            &claims.additional_claims().0,
        );
        if found.name.is_none() || found.groups.is_none() {
            // Some providers put only the standard claims in the ID token and the rest behind
            // userinfo (oidc-provider by default; Entra ID's groups with optional claims).
            if let Ok(request) = client.user_info(response.access_token().clone(), Some(claims.subject().clone())) {
                let info = request.request_async::<Extra, _, CoreGenderClaim>(&http).await;
                if let Ok(info) = info {
                    let standard = info.standard_claims();
                    found.read(
                        &self.config,
                        standard.subject(),
                        standard.email(),
                        standard.email_verified(),
                        standard.preferred_username(),
                        &info.additional_claims().0,
                    );
                }
            }
        }
        let name = match found.name {
            Some(name) => name,
            None if found.unverified => return Err(SignInError::Unverified),
            None => return Err(SignInError::NoName(self.config.name_claim.clone())),
        };
        Ok(Person { name, groups: found.groups.unwrap_or_default() })
    }

    /// The client for the provider as its discovery document describes it (read again after
    /// [`METADATA_FOR`]).
    async fn client(&self) -> Result<ProviderClient, SignInError> {
        let metadata = {
            let mut kept = self.metadata.lock().await;
            match kept.as_ref() {
                Some((read, metadata)) if read.elapsed() < METADATA_FOR => metadata.clone(),
                _ => {
                    let issuer =
                        IssuerUrl::new(self.config.issuer.trim().to_string()).map_err(|e| self.unreachable(e))?;
                    let metadata = CoreProviderMetadata::discover_async(issuer, &self.caller())
                        .await
                        .map_err(|e| self.unreachable(e))?;
                    *kept = Some((std::time::Instant::now(), metadata.clone()));
                    metadata
                }
            }
        };
        let secret =
            Some(self.config.client_secret.trim()).filter(|s| !s.is_empty()).map(|s| ClientSecret::new(s.to_string()));
        let redirect =
            RedirectUrl::new(self.config.redirect_url.trim().to_string()).map_err(|e| self.unreachable(e))?;
        Ok(ProviderClient::from_provider_metadata(
            metadata,
            ClientId::new(self.config.client_id.trim().to_string()),
            secret,
        )
        .set_redirect_uri(redirect))
    }

    /// The HTTP caller the crate uses: our client, redirects off, replies capped.
    fn caller(&self) -> impl Fn(openidconnect::HttpRequest) -> CallFuture + use<> {
        let client = self.http.clone();
        move |request| Box::pin(call(client.clone(), request))
    }

    fn unreachable(&self, error: impl std::error::Error) -> SignInError {
        let mut detail = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            detail.push_str(": ");
            detail.push_str(&cause.to_string());
            source = cause.source();
        }
        SignInError::Provider { issuer: self.config.issuer.clone(), detail }
    }
}

/// What was found of the person so far.
#[derive(Default)]
struct Found {
    name: Option<String>,
    groups: Option<Vec<String>>,
    /// The name would have been an email the provider says is not verified.
    unverified: bool,
}

impl Found {
    /// Fills what is still missing from one set of claims.
    fn read(
        &mut self,
        config: &OidcConfig,
        subject: &SubjectIdentifier,
        email: Option<&openidconnect::EndUserEmail>,
        email_verified: Option<bool>,
        username: Option<&openidconnect::EndUserUsername>,
        extra: &serde_json::Map<String, serde_json::Value>,
    ) {
        if self.name.is_none() {
            self.name = match config.name_claim.trim() {
                "sub" => Some(subject.to_string()),
                // An email is believed as a name only if the provider has not said it is
                // unverified (some let people type any address; Entra ID sends no such claim).
                "email" if email.is_some() && email_verified == Some(false) => {
                    self.unverified = true;
                    None
                }
                "email" => email.map(|e| e.to_string()),
                "preferred_username" => username.map(|u| u.to_string()),
                other => extra.get(other).and_then(|v| v.as_str()).map(str::to_string),
            }
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty());
        }
        if self.groups.is_none() {
            self.groups = match extra.get(config.groups_claim.trim()) {
                Some(serde_json::Value::Array(items)) => {
                    Some(items.iter().filter_map(|v| v.as_str()).map(str::to_string).collect())
                }
                Some(serde_json::Value::String(one)) => Some(vec![one.clone()]),
                _ => None,
            };
        }
    }
}

type CallFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<openidconnect::HttpResponse, CallError>> + Send>>;

/// A call to the provider that failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The request failed (connection, timeout, TLS).
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The reply was too long to be a provider's.
    #[error("its reply is longer than {MAX_REPLY_BYTES} bytes")]
    TooLong,
    /// The reply could not be handed on.
    #[error("{0}")]
    Shape(#[from] http::Error),
}

async fn call(
    client: reqwest::Client,
    request: openidconnect::HttpRequest,
) -> Result<openidconnect::HttpResponse, CallError> {
    let (parts, body) = request.into_parts();
    let mut response =
        client.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body).send().await?;
    let mut reply = http::Response::builder().status(response.status());
    for (name, value) in response.headers() {
        reply = reply.header(name, value);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > MAX_REPLY_BYTES {
            return Err(CallError::TooLong);
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(reply.body(bytes)?)
}
