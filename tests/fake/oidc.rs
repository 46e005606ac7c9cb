//! A fake OpenID provider on 127.0.0.1, started by the test itself: its discovery document, its
//! keys (JWKS), an authorize endpoint that signs the configured person in at once (and records
//! the `state`, nonce and PKCE challenge it was sent), and a token endpoint that checks the code
//! and its PKCE verifier and answers with an RS256-signed ID token. The test can spoil the next
//! ID tokens (another nonce, none, another audience, expired, another issuer, another key), each
//! still well formed, so only the claim under test is wrong.
//!
//! Its RSA keys come from the `openssl` command line ([`keys`]).

#![allow(dead_code)]

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Form, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openidconnect::core::{
    CoreGenderClaim, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey,
};
use openidconnect::{
    AdditionalClaims, Audience, EndUserEmail, EndUserUsername, IdToken, IdTokenClaims, IssuerUrl, JsonWebKeyId, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, PrivateSigningKey, StandardClaims, SubjectIdentifier,
};
use serde_json::json;

/// The id of the provider's one published key.
const KID: &str = "fake-oidc-1";

/// Who the provider signs in, as its ID tokens name them.
#[derive(Debug, Clone)]
pub struct Person {
    /// `sub`.
    pub sub: String,
    /// `upn`, a claim beyond the standard ones (the test's `name_claim`).
    pub upn: String,
    /// `email`, verified.
    pub email: String,
    /// `preferred_username`.
    pub username: String,
    /// `groups`.
    pub groups: Vec<String>,
}

/// How the next ID tokens are spoiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spoil {
    /// Not at all.
    Nothing,
    /// This nonce (or none at all) instead of the one the sign-in sent.
    Nonce(Option<String>),
    /// Issued for another client.
    Audience,
    /// Expired an hour ago.
    Expired,
    /// Issued by another issuer.
    Issuer,
    /// Signed with another key under the published key's id.
    Signature,
}

/// One request to the authorize endpoint, as the provider received it.
#[derive(Debug, Clone)]
pub struct Authorize {
    /// `state`.
    pub state: String,
    /// `nonce`.
    pub nonce: String,
    /// `code_challenge`.
    pub challenge: String,
    /// `code_challenge_method`.
    pub method: String,
    /// `redirect_uri`.
    pub redirect_uri: String,
    /// `scope`.
    pub scope: String,
}

/// The claims beyond the standard ones.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Extra {
    upn: String,
    groups: Vec<String>,
}
impl AdditionalClaims for Extra {}

type FakeIdToken = IdToken<Extra, CoreGenderClaim, CoreJweContentEncryptionAlgorithm, CoreJwsSigningAlgorithm>;

/// The provider, running.
pub struct Provider {
    /// Its issuer URL, `http://127.0.0.1:PORT`.
    pub issuer: String,
    shared: Arc<Shared>,
}

struct Shared {
    issuer: OnceLock<String>,
    client_id: String,
    /// The key its JWKS publishes.
    key: CoreRsaPrivateSigningKey,
    /// A key it does not publish, for [`Spoil::Signature`].
    impostor: CoreRsaPrivateSigningKey,
    books: Mutex<Books>,
}

/// What the provider knows and has seen.
struct Books {
    /// The one redirect URI registered for the client.
    redirect_uri: String,
    person: Person,
    spoil: Spoil,
    authorized: Vec<Authorize>,
    /// Codes not yet exchanged: what was asked for, and who signed in.
    codes: HashMap<String, (Authorize, Person)>,
    /// ID tokens issued.
    issued: usize,
    next: u64,
}

/// Two RSA keys in PKCS#1 PEM, made once per test binary with the `openssl` command line; `None`
/// when it does not run.
pub fn keys() -> Option<&'static (String, String)> {
    static KEYS: OnceLock<Option<(String, String)>> = OnceLock::new();
    KEYS.get_or_init(|| Some((rsa_pem()?, rsa_pem()?))).as_ref()
}

/// A fresh 2048-bit RSA key, PKCS#1 PEM (OpenSSL 3 needs `-traditional` for it; 1.1 makes it
/// without).
fn rsa_pem() -> Option<String> {
    [&["genrsa", "-traditional", "2048"][..], &["genrsa", "2048"][..]].iter().find_map(|args| {
        let out = Command::new("openssl").args(*args).stderr(std::process::Stdio::null()).output().ok()?;
        let pem = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && pem.starts_with("-----BEGIN RSA PRIVATE KEY-----")).then_some(pem)
    })
}

impl Provider {
    /// Starts the provider for `client_id` (a public client: PKCE alone), signing in `person`.
    /// `None` when no keys can be made ([`keys`]).
    pub fn start(client_id: &str, person: Person) -> Option<Provider> {
        let (pem, other) = keys()?;
        let key = CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new(KID.into()))).ok()?;
        let impostor = CoreRsaPrivateSigningKey::from_pem(other, Some(JsonWebKeyId::new(KID.into()))).ok()?;
        let books = Books {
            redirect_uri: String::new(),
            person,
            spoil: Spoil::Nothing,
            authorized: Vec::new(),
            codes: HashMap::new(),
            issued: 0,
            next: 0,
        };
        let shared = Arc::new(Shared {
            issuer: OnceLock::new(),
            client_id: client_id.to_string(),
            key,
            impostor,
            books: Mutex::new(books),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(shared.clone());
        let issuer = format!("http://{}", crate::common::serve_app(app));
        let _ = shared.issuer.set(issuer.clone());
        Some(Provider { issuer, shared })
    }

    /// Registers the client's redirect URI (the only one the authorize endpoint takes).
    pub fn register(&self, redirect_uri: &str) {
        self.books().redirect_uri = redirect_uri.to_string();
    }

    /// Signs in `person` from now on.
    pub fn sign_in_as(&self, person: Person) {
        self.books().person = person;
    }

    /// Spoils the next ID tokens so.
    pub fn spoil(&self, spoil: Spoil) {
        self.books().spoil = spoil;
    }

    /// Every authorize request received, in order.
    pub fn authorized(&self) -> Vec<Authorize> {
        self.books().authorized.clone()
    }

    /// How many ID tokens the token endpoint issued.
    pub fn issued(&self) -> usize {
        self.books().issued
    }

    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.shared.books.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Shared {
    fn issuer(&self) -> &str {
        self.issuer.get().map(String::as_str).unwrap_or_default()
    }

    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn discovery(State(shared): State<Arc<Shared>>) -> Response {
    let issuer = shared.issuer();
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "code_challenge_methods_supported": ["S256"],
        "scopes_supported": ["openid", "profile", "email", "groups"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
    .into_response()
}

async fn jwks(State(shared): State<Arc<Shared>>) -> Response {
    Json(json!({ "keys": [shared.key.as_verification_key()] })).into_response()
}

/// Signs the configured person in at once, and sends the browser back with a code.
async fn authorize(State(shared): State<Arc<Shared>>, Query(asked): Query<HashMap<String, String>>) -> Response {
    let field = |name: &str| asked.get(name).cloned().unwrap_or_default();
    let request = Authorize {
        state: field("state"),
        nonce: field("nonce"),
        challenge: field("code_challenge"),
        method: field("code_challenge_method"),
        redirect_uri: field("redirect_uri"),
        scope: field("scope"),
    };
    let mut books = shared.books();
    books.authorized.push(request.clone());
    let refused = if field("client_id") != shared.client_id {
        Some("unknown client_id")
    } else if request.redirect_uri.is_empty() || request.redirect_uri != books.redirect_uri {
        Some("redirect_uri is not the registered one")
    } else if field("response_type") != "code" {
        Some("response_type must be code")
    } else if request.method != "S256" || request.challenge.is_empty() {
        Some("PKCE with S256 is required")
    } else if request.state.is_empty() || request.nonce.is_empty() {
        Some("state and nonce are required")
    } else if !request.scope.split(' ').any(|s| s == "openid") {
        Some("the openid scope is required")
    } else {
        None
    };
    if let Some(refused) = refused {
        return (StatusCode::BAD_REQUEST, refused).into_response();
    }
    books.next += 1;
    let code = format!("code-{}-{}", books.next, request.nonce.len());
    let person = books.person.clone();
    books.codes.insert(code.clone(), (request.clone(), person));
    let Ok(mut back) = url::Url::parse(&request.redirect_uri) else {
        return (StatusCode::BAD_REQUEST, "redirect_uri is not a URL").into_response();
    };
    back.query_pairs_mut().append_pair("code", &code).append_pair("state", &request.state);
    (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
}

/// Exchanges a code (once, with its PKCE verifier) for an ID token.
async fn token(State(shared): State<Arc<Shared>>, Form(form): Form<HashMap<String, String>>) -> Response {
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    let refuse = |error: &str, description: &str| {
        (StatusCode::BAD_REQUEST, Json(json!({ "error": error, "error_description": description }))).into_response()
    };
    if field("grant_type") != "authorization_code" {
        return refuse("unsupported_grant_type", "only authorization_code");
    }
    if field("client_id") != shared.client_id {
        return refuse("invalid_client", "unknown client_id");
    }
    let mut books = shared.books();
    let Some((asked, person)) = books.codes.remove(&field("code")) else {
        return refuse("invalid_grant", "unknown or used code");
    };
    if field("redirect_uri") != asked.redirect_uri {
        return refuse("invalid_grant", "redirect_uri differs from the authorize request's");
    }
    let verifier = PkceCodeVerifier::new(field("code_verifier"));
    if PkceCodeChallenge::from_code_verifier_sha256(&verifier).as_str() != asked.challenge {
        return refuse("invalid_grant", "the PKCE verifier does not match the challenge");
    }
    let spoil = books.spoil.clone();
    let Some(id_token) = id_token(&shared, &person, &asked.nonce, &spoil) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "signing failed").into_response();
    };
    books.issued += 1;
    let number = books.issued;
    Json(json!({
        "access_token": format!("access-{number}"),
        "token_type": "Bearer",
        "expires_in": 600,
        "id_token": id_token,
    }))
    .into_response()
}

/// `person`'s ID token for the sign-in that sent `nonce`, spoiled as `spoil` says.
fn id_token(shared: &Shared, person: &Person, nonce: &str, spoil: &Spoil) -> Option<serde_json::Value> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    let (issued_at, expires) = if *spoil == Spoil::Expired { (now - 7200, now - 3600) } else { (now, now + 600) };
    let issuer = if *spoil == Spoil::Issuer { "http://127.0.0.1:9/another-issuer" } else { shared.issuer() };
    let audience = if *spoil == Spoil::Audience { "another-app" } else { shared.client_id.as_str() };
    let nonce = match spoil {
        Spoil::Nonce(other) => other.clone(),
        _ => Some(nonce.to_string()),
    };
    let standard = StandardClaims::new(SubjectIdentifier::new(person.sub.clone()))
        .set_email(Some(EndUserEmail::new(person.email.clone())))
        .set_email_verified(Some(true))
        .set_preferred_username(Some(EndUserUsername::new(person.username.clone())));
    let claims = IdTokenClaims::new(
        IssuerUrl::new(issuer.to_string()).ok()?,
        vec![Audience::new(audience.to_string())],
        chrono::DateTime::from_timestamp(expires, 0)?,
        chrono::DateTime::from_timestamp(issued_at, 0)?,
        standard,
        Extra { upn: person.upn.clone(), groups: person.groups.clone() },
    )
    .set_nonce(nonce.map(Nonce::new));
    let key = if *spoil == Spoil::Signature { &shared.impostor } else { &shared.key };
    let token = FakeIdToken::new(claims, key, CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, None, None).ok()?;
    serde_json::to_value(&token).ok()
}
