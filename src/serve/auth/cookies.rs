//! Sign-in sessions kept in the browser: one cookie, encrypted and authenticated with the
//! server's key (AES-256-GCM, through axum-extra's private cookie jar), holding who signed in,
//! their roles, when the sign-in ends and its CSRF token. Nothing of it is readable or forgeable
//! without the key; replicas that share `serve.cookie_secret` read each other's cookies.
//!
//! A second cookie, scoped to `/auth`, carries a sign-in in progress (its state, PKCE verifier
//! and nonce) from `/auth/login` to `/auth/callback`, binding the provider's answer to the
//! browser that asked for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use axum_extra::extract::cookie::{Cookie, Key, PrivateCookieJar, SameSite};
use serde::{Deserialize, Serialize};

use crate::config::Role;

/// The sign-in session's cookie; over https `__Host-` prefixed, so no sibling subdomain can
/// plant one (browsers take such a cookie only Secure, from this host, for path `/`).
pub const SESSION: &str = "docs_agent_session";
const SESSION_SECURE: &str = "__Host-docs_agent_session";
/// The cookie of a sign-in in progress (path `/auth`); over https `__Host-` prefixed (path `/`,
/// as the prefix requires), so a sibling subdomain cannot plant one and sign the victim in as
/// somebody else (login CSRF; a `__Secure-` cookie may be set by any subdomain: issue 51,
/// finding 11).
pub const LOGIN: &str = "docs_agent_login";
const LOGIN_SECURE: &str = "__Host-docs_agent_login";
/// How long a sign-in in progress may take at the provider.
pub const LOGIN_SECS: u64 = 600;

/// Someone signed in, as their cookie holds them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignIn {
    /// This sign-in's own id (a signed-out one is refused by it).
    pub id: String,
    /// Who: their sessions belong to this name.
    pub name: String,
    /// What they may do, from their groups when they signed in.
    pub roles: Vec<Role>,
    /// The collections they read, from their groups when they signed in (none in a cookie
    /// made before: they sign in again to read any).
    #[serde(default)]
    pub collections: Vec<String>,
    /// When the sign-in ends, in seconds since the epoch.
    pub expires: u64,
    /// What a state-changing request must carry in `X-CSRF-Token`.
    pub csrf: String,
}

/// A sign-in in progress: what `/auth/callback` checks the provider's answer against.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    /// The `state` sent to the provider, which must come back unchanged.
    pub state: String,
    /// The PKCE verifier of the challenge sent.
    pub verifier: String,
    /// The nonce the ID token must carry.
    pub nonce: String,
    /// When it began, in seconds since the epoch.
    pub started: u64,
}

/// The key, the cookies' attributes, and the sign-ins ended early (signed out) by this process.
pub struct SignIns {
    key: Key,
    secure: bool,
    hours: u64,
    /// Signed-out sign-ins, by id, with when they would have ended (then forgotten).
    ended: Arc<Mutex<HashMap<String, u64>>>,
    /// Counts sign-outs, so an open stream learns of its own.
    signed_out: tokio::sync::watch::Sender<u64>,
}

impl SignIns {
    /// With the key derived from `secret` (at least 32 bytes; empty: a random key for this
    /// process), cookies `Secure` when the service is reached over https, and sign-ins that
    /// last `hours`.
    pub fn new(secret: &str, secure: bool, hours: u64) -> SignIns {
        let secret = secret.trim();
        let key = if secret.len() >= crate::config::MIN_COOKIE_SECRET {
            Key::derive_from(secret.as_bytes())
        } else {
            Key::generate()
        };
        SignIns {
            key,
            secure,
            hours,
            ended: Arc::new(Mutex::new(HashMap::new())),
            signed_out: tokio::sync::watch::Sender::new(0),
        }
    }

    /// A new sign-in for `name` with `roles` reading `collections`, and the jar that sets its
    /// cookie.
    pub fn begin(
        &self,
        jar: PrivateCookieJar,
        name: String,
        roles: Vec<Role>,
        collections: Vec<String>,
    ) -> Result<(SignIn, PrivateCookieJar), NoRandom> {
        let sign_in = SignIn {
            id: random_hex(16)?,
            name,
            roles,
            collections,
            expires: now().saturating_add(self.hours.saturating_mul(3600)),
            csrf: random_hex(32)?,
        };
        let value = serde_json::to_string(&sign_in).unwrap_or_default();
        let jar = self.forget_pending(jar).add(self.cookie(self.session(), value, "/"));
        Ok((sign_in, jar))
    }

    /// The sign-in whose cookie `headers` carry, while it lasts and was not signed out.
    pub fn current(&self, headers: &HeaderMap) -> Option<SignIn> {
        let cookie = self.jar(headers).get(self.session())?;
        let sign_in: SignIn = serde_json::from_str(cookie.value()).ok()?;
        let ended = self.ended.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&sign_in.id);
        (sign_in.expires > now() && !ended).then_some(sign_in)
    }

    /// Ends `sign_in` here (its cookie is refused from now on, even a copy) and clears the cookie.
    pub fn end(&self, sign_in: &SignIn, jar: PrivateCookieJar) -> PrivateCookieJar {
        {
            let mut ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
            let now = now();
            ended.retain(|_, expires| *expires > now);
            ended.insert(sign_in.id.clone(), sign_in.expires);
        }
        self.signed_out.send_modify(|n| *n = n.wrapping_add(1));
        jar.remove(self.cookie(self.session(), String::new(), "/"))
    }

    /// Resolves when `sign_in` ends: its time is up, or it was signed out.
    pub fn ended(&self, sign_in: &SignIn) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut signed_out = self.signed_out.subscribe();
        let left = Duration::from_secs(sign_in.expires.saturating_sub(now()));
        let id = sign_in.id.clone();
        let ended = self.ended.clone();
        async move {
            let deadline = tokio::time::sleep(left);
            tokio::pin!(deadline);
            loop {
                if ended.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&id) {
                    return;
                }
                tokio::select! {
                    () = &mut deadline => return,
                    changed = signed_out.changed() => if changed.is_err() { deadline.as_mut().await; return; },
                }
            }
        }
    }

    /// The jar that sets the cookie of a sign-in in progress.
    pub fn pending(&self, jar: PrivateCookieJar, pending: &Pending) -> PrivateCookieJar {
        let value = serde_json::to_string(pending).unwrap_or_default();
        jar.add(self.cookie(self.login(), value, self.login_path()))
    }

    /// The sign-in in progress `headers` carry, if it is still within its time.
    pub fn pending_of(&self, headers: &HeaderMap) -> Option<Pending> {
        let pending: Pending = serde_json::from_str(self.jar(headers).get(self.login())?.value()).ok()?;
        (now().saturating_sub(pending.started) <= LOGIN_SECS).then_some(pending)
    }

    /// A MAC of `text` under this key, in hex (empty, so never matching, if HMAC refused the key).
    pub fn mac(&self, text: &str) -> String {
        use hmac::{Hmac, Mac};
        let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(self.key.signing()) else { return String::new() };
        mac.update(text.as_bytes());
        mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// `jar` without the sign-in in progress: it is used once.
    pub fn forget_pending(&self, jar: PrivateCookieJar) -> PrivateCookieJar {
        jar.remove(self.cookie(self.login(), String::new(), self.login_path()))
    }

    fn session(&self) -> &'static str {
        if self.secure { SESSION_SECURE } else { SESSION }
    }

    fn login(&self) -> &'static str {
        if self.secure { LOGIN_SECURE } else { LOGIN }
    }

    /// Where the sign-in in progress is sent: `/auth`, or `/` for a `__Host-` cookie.
    fn login_path(&self) -> &'static str {
        if self.secure { "/" } else { "/auth" }
    }

    /// The jar of the cookies `headers` carry, read with this key.
    pub fn jar(&self, headers: &HeaderMap) -> PrivateCookieJar {
        PrivateCookieJar::from_headers(headers, self.key.clone())
    }

    fn cookie(&self, name: &'static str, value: String, path: &'static str) -> Cookie<'static> {
        Cookie::build((name, value)).path(path).http_only(true).same_site(SameSite::Lax).secure(self.secure).build()
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// The system's random source failed: nothing that needs a secret can start.
#[derive(Debug, thiserror::Error)]
#[error("the system's random source failed ({0}); sign-ins cannot start until it works")]
pub struct NoRandom(String);

/// `bytes` random bytes in hex.
pub fn random_hex(bytes: usize) -> Result<String, NoRandom> {
    let mut random = vec![0u8; bytes];
    getrandom::fill(&mut random).map_err(|e| NoRandom(e.to_string()))?;
    Ok(random.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::response::IntoResponse;

    /// The `Cookie` header a browser would send back after `jar`'s response.
    fn sent_back(jar: PrivateCookieJar) -> HeaderMap {
        let response = (jar, ()).into_response();
        let pairs: Vec<String> = response
            .headers()
            .get_all(axum::http::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter(|v| !v.contains("Max-Age=0"))
            .filter_map(|v| v.split(';').next().map(str::to_string))
            .collect();
        let mut headers = HeaderMap::new();
        headers.insert(axum::http::header::COOKIE, pairs.join("; ").parse().unwrap());
        headers
    }

    fn sign_ins() -> SignIns {
        SignIns::new("a cookie secret that is long enough to use", false, 8)
    }

    #[test]
    fn a_sign_in_reads_back_only_with_the_key_and_only_until_signed_out() {
        let signs = sign_ins();
        let (sign_in, jar) =
            signs.begin(signs.jar(&HeaderMap::new()), "ana@acme.test".into(), vec![Role::Ask], Vec::new()).unwrap();
        let headers = sent_back(jar);
        let cookie = headers.get(axum::http::header::COOKIE).unwrap().to_str().unwrap().to_string();
        assert!(!cookie.contains("ana"), "the cookie hides who it is: {cookie}");
        assert_eq!(signs.current(&headers), Some(sign_in.clone()));
        assert_eq!(sign_in.csrf.len(), 64);
        // Another key (another deployment, or a forged cookie) reads nothing.
        let other = SignIns::new("another cookie secret, long enough as well", false, 8);
        assert_eq!(other.current(&headers), None);
        // The same secret (a replica) reads it.
        assert!(
            sign_ins().current(&headers).is_some(),
            "replicas sharing serve.cookie_secret read each other's cookies"
        );
        // A changed byte is refused.
        let tampered = cookie.replacen("=", "=A", 1);
        let mut changed = HeaderMap::new();
        changed.insert(axum::http::header::COOKIE, tampered.parse().unwrap());
        assert_eq!(signs.current(&changed), None);
        // Signed out: refused, even a copy of the cookie kept elsewhere.
        let _ = signs.end(&sign_in, signs.jar(&headers));
        assert_eq!(signs.current(&headers), None);
    }

    #[test]
    fn an_ended_sign_in_is_refused() {
        let signs = SignIns::new("a cookie secret that is long enough to use", false, 0);
        let (_, jar) = signs.begin(signs.jar(&HeaderMap::new()), "ana".into(), vec![Role::Ask], Vec::new()).unwrap();
        assert_eq!(signs.current(&sent_back(jar)), None, "a sign-in of 0 hours is over at once");
    }

    #[test]
    fn a_sign_in_in_progress_is_bound_to_its_browser_and_its_time() {
        let signs = sign_ins();
        let pending = Pending { state: "s".into(), verifier: "v".into(), nonce: "n".into(), started: now() };
        let headers = sent_back(signs.pending(signs.jar(&HeaderMap::new()), &pending));
        assert_eq!(signs.pending_of(&headers).map(|p| p.state), Some("s".to_string()));
        let old = Pending { started: now() - LOGIN_SECS - 1, ..pending };
        let headers = sent_back(signs.pending(signs.jar(&HeaderMap::new()), &old));
        assert!(signs.pending_of(&headers).is_none(), "older than {LOGIN_SECS} s: refused");
    }

    /// Over https both cookies are `__Host-` cookies (Secure, path `/`, no domain), which a
    /// sibling subdomain cannot set: no login CSRF.
    #[test]
    fn over_https_no_cookie_can_be_planted_by_a_sibling_subdomain() {
        let signs = SignIns::new("a cookie secret that is long enough to use", true, 8);
        let pending = Pending { state: "s".into(), verifier: "v".into(), nonce: "n".into(), started: now() };
        let (_, session) =
            signs.begin(signs.jar(&HeaderMap::new()), "ana".into(), vec![Role::Ask], Vec::new()).unwrap();
        for jar in [signs.pending(signs.jar(&HeaderMap::new()), &pending), session] {
            let response = (jar, ()).into_response();
            let set = response.headers().get(axum::http::header::SET_COOKIE).and_then(|v| v.to_str().ok());
            let set = set.expect("a cookie is set").to_string();
            assert!(set.starts_with("__Host-"), "{set}");
            assert!(set.contains("Path=/;") || set.ends_with("Path=/"), "{set}");
            assert!(set.contains("Secure") && !set.contains("Domain"), "{set}");
        }
        let headers = sent_back(signs.pending(signs.jar(&HeaderMap::new()), &pending));
        assert_eq!(signs.pending_of(&headers).map(|p| p.state), Some("s".to_string()), "it reads back");
    }

    /// Over https a sign-in in progress is read only from its `__Host-` cookie: one under a name
    /// a sibling subdomain may set (`__Secure-`, or no prefix), even a value this server made
    /// (the attacker's own sign-in, planted in the victim's browser), is not taken.
    #[test]
    fn over_https_a_sign_in_in_progress_a_sibling_could_plant_is_not_read() {
        let signs = SignIns::new("a cookie secret that is long enough to use", true, 8);
        let pending = Pending { state: "s".into(), verifier: "v".into(), nonce: "n".into(), started: now() };
        let value = serde_json::to_string(&pending).unwrap();
        for name in ["__Secure-docs_agent_login", LOGIN] {
            let planted = signs.jar(&HeaderMap::new()).add(Cookie::build((name, value.clone())).path("/").build());
            assert!(signs.pending_of(&sent_back(planted)).is_none(), "{name} is read over https");
        }
    }

    #[tokio::test]
    async fn a_stream_learns_its_sign_in_was_signed_out() {
        use futures_util::FutureExt;
        let signs = sign_ins();
        let (sign_in, jar) =
            signs.begin(signs.jar(&HeaderMap::new()), "ana".into(), vec![Role::Ask], Vec::new()).unwrap();
        let (other, _) = signs.begin(signs.jar(&HeaderMap::new()), "bo".into(), vec![Role::Ask], Vec::new()).unwrap();
        let mut ended = Box::pin(signs.ended(&sign_in));
        assert!(ended.as_mut().now_or_never().is_none());
        let _ = signs.end(&other, signs.jar(&HeaderMap::new()));
        tokio::task::yield_now().await;
        assert!(ended.as_mut().now_or_never().is_none(), "another's sign-out leaves it be");
        let _ = signs.end(&sign_in, jar);
        assert_eq!(ended.as_mut().now_or_never(), Some(()), "its own sign-out ends it");
    }
}
