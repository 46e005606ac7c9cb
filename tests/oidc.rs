//! The OpenID Connect sign-in (issue 51) through a real `docs-agent serve` on 127.0.0.1 and a
//! fake provider started by the test (tests/fake/oidc.rs), the redirects followed by hand as a
//! browser would, its cookies carried:
//! - a sign-in finished names the person by `name_claim`, with roles from their groups;
//! - an ID token that is not this sign-in's (another sign-in's nonce, a finished one's, none,
//!   another audience, issuer or key, expired) or a `state` changed on its way back signs nobody in;
//! - a cookie sign-in changes nothing without its CSRF token (`X-CSRF-Token`);
//! - over an http `redirect_url` the cookies have their plain names (the `__Host-` ones of https
//!   are a unit test in `serve::auth::cookies`).
//!
//! The page in Chromium against a certified provider: tests/browser/signin.mjs.

mod common;
#[path = "fake/oidc.rs"]
mod fake_oidc;

use std::time::Duration;

use fake_oidc::{Person, Provider, Spoil};
use serde_json::{Value, json};

/// The client id the agent has at the provider.
const CLIENT_ID: &str = "docs-agent-test";
/// The sign-in cookie over http, and the cookie of a sign-in in progress.
const SESSION: &str = "docs_agent_session";
const LOGIN: &str = "docs_agent_login";

fn person(name: &str, groups: &[&str]) -> Person {
    Person {
        sub: format!("sub-{name}"),
        // `name_claim = "upn"`: the other claims name the person otherwise, so a name read from
        // the wrong claim shows.
        upn: format!("{name}@acme.test"),
        email: format!("{name}.mail@acme.test"),
        username: format!("{name}-username"),
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

/// The provider, signing in `who`; `None` (the test skipped) without the `openssl` command line.
fn provider(who: Person) -> Option<Provider> {
    if !common::available("openssl", common::runs("openssl", "version"), "apt-get install openssl") {
        return None;
    }
    assert!(fake_oidc::keys().is_some(), "openssl runs but made no RSA key (`openssl genrsa -traditional 2048`)");
    Some(Provider::start(CLIENT_ID, who).expect("the fake provider starts"))
}

/// A `docs-agent serve` signing people in at a provider; killed when dropped.
struct Agent {
    _serve: common::KillOnDrop,
    /// `http://127.0.0.1:PORT`.
    url: String,
    /// Its stderr, read as it comes (so its writes never block).
    _log: common::Log,
    _workspace: tempfile::TempDir,
}

/// Starts `serve` with `[serve.oidc]` naming `provider`: the support group asks, docs-admins
/// administer.
fn agent(provider: &Provider) -> Agent {
    let workspace = common::sample_workspace();
    for attempt in 1..=3 {
        // The redirect URL names serve's port, so the port is picked here, free at this moment
        // (as tests/browser/signin.mjs does); taken meanwhile, another is tried.
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let url = format!("http://127.0.0.1:{port}");
        provider.register(&format!("{url}/auth/callback"));
        let toml = format!(
            "[serve]\nlisten = \"127.0.0.1:{port}\"\n\n[serve.oidc]\nissuer = \"{issuer}\"\nclient_id = \"{CLIENT_ID}\"\n\
             redirect_url = \"{url}/auth/callback\"\nscopes = [\"openid\", \"profile\", \"email\", \"groups\"]\n\
             name_claim = \"upn\"\ngroups_claim = \"groups\"\n\n[serve.groups]\nask = [\"support\"]\nadmin = [\"docs-admins\"]\n",
            issuer = provider.issuer,
        );
        std::fs::write(workspace.path().join("docs-agent.toml"), toml).expect("write docs-agent.toml");
        let (child, mut log) = common::spawn_logged(workspace.path(), &[("LLM_MODEL", "scripted")], &["serve"]);
        let serve = common::KillOnDrop(child);
        if log.until("serving on", Duration::from_secs(60)) {
            return Agent { _serve: serve, url, _log: log, _workspace: workspace };
        }
        assert!(attempt < 3 && log.text().contains("cannot listen on"), "serve did not start: {}", log.text());
    }
    unreachable!("the loop returns or fails")
}

/// What came back from one request.
struct Reply {
    status: u16,
    /// `Location`, or empty.
    location: String,
    /// Every `Set-Cookie`.
    set_cookies: Vec<String>,
    body: String,
}

impl Reply {
    /// The `Set-Cookie` that sets (or clears) `name`.
    fn set_cookie(&self, name: &str) -> Option<&str> {
        self.set_cookies.iter().map(String::as_str).find(|c| c.starts_with(&format!("{name}=")))
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// A browser, as far as signing in needs one: no redirect followed on its own, the agent's
/// cookies kept and sent back to the agent where their path says.
struct Browser {
    client: reqwest::Client,
    agent: String,
    /// (name, value, path).
    cookies: Vec<(String, String, String)>,
}

impl Browser {
    fn new(agent: &Agent) -> Browser {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(60))
            .build()
            .expect("a client");
        Browser { client, agent: agent.url.clone(), cookies: Vec::new() }
    }

    async fn send(&mut self, method: &str, url: &str, headers: &[(&str, &str)]) -> Reply {
        let mut request = self.client.request(method.parse().expect("a method"), url);
        let path = url.strip_prefix(&self.agent).map(|p| p.split('?').next().unwrap_or_default().to_string());
        if let Some(path) = &path {
            let sent: Vec<String> = (self.cookies.iter())
                .filter(|(_, _, at)| path_matches(path, at))
                .map(|(name, value, _)| format!("{name}={value}"))
                .collect();
            if !sent.is_empty() {
                request = request.header("cookie", sent.join("; "));
            }
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let reply = request.send().await.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let header = |v: &reqwest::header::HeaderValue| v.to_str().unwrap_or_default().to_string();
        let location = reply.headers().get("location").map(header).unwrap_or_default();
        let set_cookies: Vec<String> = reply.headers().get_all("set-cookie").iter().map(header).collect();
        if path.is_some() {
            set_cookies.iter().for_each(|set| self.keep(set));
        }
        Reply { status: reply.status().as_u16(), location, set_cookies, body: reply.text().await.unwrap_or_default() }
    }

    async fn get(&mut self, url: &str) -> Reply {
        self.send("GET", url, &[]).await
    }

    /// `GET /v1/me`: the status and the JSON.
    async fn me(&mut self) -> (u16, Value) {
        let reply = self.get(&format!("{}/v1/me", self.agent)).await;
        (reply.status, reply.json())
    }

    /// Takes one `Set-Cookie`: kept, replaced, or (empty or `Max-Age=0`) dropped.
    fn keep(&mut self, set: &str) {
        let mut parts = set.split(';').map(str::trim);
        let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else { return };
        let attributes: Vec<(String, String)> = parts
            .map(|a| a.split_once('=').unwrap_or((a, "")))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
            .collect();
        let path = attributes.iter().find(|(k, _)| k == "path").map_or("/".to_string(), |(_, v)| v.clone());
        let gone = value.is_empty() || attributes.iter().any(|(k, v)| k == "max-age" && v == "0");
        self.cookies.retain(|(n, _, p)| !(n == name && *p == path));
        if !gone {
            self.cookies.push((name.to_string(), value.to_string(), path));
        }
    }

    fn has_cookie(&self, name: &str) -> bool {
        self.cookies.iter().any(|(n, _, _)| n == name)
    }
}

/// Whether a cookie of path `cookie` goes with a request for `path` (RFC 6265, 5.1.4).
fn path_matches(path: &str, cookie: &str) -> bool {
    path == cookie || (path.starts_with(cookie) && (cookie.ends_with('/') || path[cookie.len()..].starts_with('/')))
}

/// `GET /auth/login`, then the provider's authorize endpoint: the agent's callback URL the
/// provider sends the browser back to (with its code and the state).
async fn to_callback(browser: &mut Browser, agent: &Agent, provider: &Provider) -> String {
    let login = browser.get(&format!("{}/auth/login", agent.url)).await;
    assert_eq!(login.status, 303, "to the provider: {}", login.body);
    assert!(login.location.starts_with(&format!("{}/authorize?", provider.issuer)), "{}", login.location);
    let back = browser.get(&login.location).await;
    assert_eq!(back.status, 302, "the provider signs in at once: {}", back.body);
    assert!(back.location.starts_with(&format!("{}/auth/callback?", agent.url)), "{}", back.location);
    back.location
}

/// A whole sign-in; the callback's reply (a 303 to the page, the sign-in cookie set).
async fn sign_in(browser: &mut Browser, agent: &Agent, provider: &Provider) -> Reply {
    let callback = to_callback(browser, agent, provider).await;
    let done = browser.get(&callback).await;
    assert_eq!((done.status, done.location.as_str()), (303, "/"), "signed in: {}", done.body);
    assert!(browser.has_cookie(SESSION), "{:?}", done.set_cookies);
    done
}

/// The `state` a callback URL carries.
fn state_of(callback: &str) -> String {
    let url = url::Url::parse(callback).expect("a URL");
    url.query_pairs().find(|(k, _)| k == "state").map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// `callback` with its `state` replaced by `state`.
fn with_state(callback: &str, state: &str) -> String {
    let mut url = url::Url::parse(callback).expect("a URL");
    let pairs: Vec<(String, String)> = url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let mut query = url.query_pairs_mut();
    query.clear();
    for (k, v) in pairs {
        query.append_pair(&k, if k == "state" { state } else { &v });
    }
    drop(query);
    url.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_at_the_provider_names_the_person_by_name_claim_with_roles_from_groups() {
    let Some(provider) = provider(person("ana", &["support", "docs-admins"])) else { return };
    let agent = agent(&provider);
    let mut browser = Browser::new(&agent);
    assert_eq!(browser.me().await.0, 401, "nobody is signed in yet");

    let callback = to_callback(&mut browser, &agent, &provider).await;
    let asked = provider.authorized().pop().expect("the provider was asked");
    assert_eq!(asked.redirect_uri, format!("{}/auth/callback", agent.url));
    assert_eq!(asked.method, "S256", "PKCE");
    assert!(asked.scope.split(' ').any(|s| s == "groups"), "{}", asked.scope);
    assert!(asked.state.len() >= 32 && asked.nonce.len() >= 32, "a fresh state and nonce: {asked:?}");
    assert_eq!(state_of(&callback), asked.state);
    let done = browser.get(&callback).await;
    assert_eq!((done.status, done.location.as_str()), (303, "/"), "{}", done.body);
    assert!(done.set_cookie(SESSION).is_some(), "the sign-in cookie: {:?}", done.set_cookies);
    assert!(!browser.has_cookie(LOGIN), "the sign-in in progress is cleared: {:?}", done.set_cookies);
    assert_eq!(provider.issued(), 1, "the code was exchanged for one ID token");

    let (status, me) = browser.me().await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["principal"], "ana@acme.test", "named by name_claim (upn), not email or username: {me}");
    assert_eq!(me["signed_in_with"], "oidc", "{me}");
    assert_eq!(me["may"], json!({ "ask": true, "approve": false, "admin": true }), "roles from the groups: {me}");
    assert_eq!(me["csrf"].as_str().map(str::len), Some(64), "a CSRF token for the page: {me}");
    assert!(me["ends_ms"].as_u64().is_some_and(|ms| ms > 0), "{me}");

    // The sign-in in progress is used once: the same callback again signs nobody in.
    let mut replay = Browser::new(&agent);
    let again = replay.get(&callback).await;
    assert_eq!(again.status, 400, "no sign-in in progress in this browser: {}", again.body);
    assert!(again.set_cookie(SESSION).is_none() && replay.me().await.0 == 401);

    // Another person, in another browser: a fresh state and nonce, and their own groups' roles.
    provider.sign_in_as(person("bo", &["support"]));
    let mut other = Browser::new(&agent);
    sign_in(&mut other, &agent, &provider).await;
    let second = provider.authorized().pop().expect("asked again");
    assert!(second.state != asked.state && second.nonce != asked.nonce, "{second:?} after {asked:?}");
    let (status, me) = other.me().await;
    assert_eq!((status, me["principal"].clone()), (200, json!("bo@acme.test")), "{me}");
    assert_eq!(me["may"], json!({ "ask": true, "approve": false, "admin": false }), "{me}");
    assert_eq!(browser.me().await.1["principal"], "ana@acme.test", "each browser its own sign-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_token_or_a_state_not_of_this_sign_in_signs_nobody_in() {
    let Some(provider) = provider(person("ana", &["support"])) else { return };
    let agent = agent(&provider);
    // Another sign-in, begun and left at the provider: its nonce and state are another's.
    let mut elsewhere = Browser::new(&agent);
    let theirs = state_of(&to_callback(&mut elsewhere, &agent, &provider).await);
    let their_nonce = provider.authorized().pop().expect("asked").nonce;

    // (what, the ID token spoiled so, the state changed on the way back, status, what the page says)
    let cases: Vec<(&str, Spoil, bool, u16, &str)> = vec![
        ("another sign-in's nonce", Spoil::Nonce(Some(their_nonce)), false, 401, "nonce mismatch"),
        ("no nonce", Spoil::Nonce(None), false, 401, "missing nonce"),
        ("another audience", Spoil::Audience, false, 401, "not issued for this service"),
        ("expired", Spoil::Expired, false, 401, "has expired"),
        ("another issuer", Spoil::Issuer, false, 401, "Invalid issuer"),
        ("signed with another key", Spoil::Signature, false, 401, "Signature verification failed"),
        ("a state changed on its way back", Spoil::Nothing, true, 400, "state does not match"),
    ];
    for (what, spoil, tampered, status, said) in cases {
        provider.spoil(spoil);
        let issued = provider.issued();
        let mut browser = Browser::new(&agent);
        let mut callback = to_callback(&mut browser, &agent, &provider).await;
        if tampered {
            callback = with_state(&callback, &theirs);
        }
        let done = browser.get(&callback).await;
        assert_eq!(done.status, status, "{what}: {}", done.body);
        assert!(done.body.contains(said), "{what}: the page says why ({said}): {}", done.body);
        assert!(done.set_cookie(SESSION).is_none(), "{what}: no sign-in cookie: {:?}", done.set_cookies);
        assert!(!browser.has_cookie(LOGIN), "{what}: the sign-in in progress is used up");
        assert_eq!(browser.me().await.0, 401, "{what}: nobody signed in");
        // The ID token was issued (the refusal is its check's); a changed state is refused
        // before the code is exchanged.
        assert_eq!(provider.issued(), issued + usize::from(!tampered), "{what}");
    }

    // The same provider unspoiled signs the person in: each refusal was that claim's doing.
    provider.spoil(Spoil::Nothing);
    let mut browser = Browser::new(&agent);
    sign_in(&mut browser, &agent, &provider).await;
    assert_eq!(browser.me().await.1["principal"], "ana@acme.test");

    // Someone none of whose groups has a role: a page that names their groups, no sign-in.
    provider.sign_in_as(person("carol", &["marketing"]));
    let mut browser = Browser::new(&agent);
    let callback = to_callback(&mut browser, &agent, &provider).await;
    let done = browser.get(&callback).await;
    assert_eq!(done.status, 403, "{}", done.body);
    assert!(done.body.contains("marketing"), "{}", done.body);
    assert!(done.set_cookie(SESSION).is_none() && browser.me().await.0 == 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_token_with_a_finished_sign_ins_nonce_signs_nobody_in() {
    let Some(provider) = provider(person("ana", &["support"])) else { return };
    let agent = agent(&provider);
    // A sign-in that went through: its nonce is used up.
    let mut first = Browser::new(&agent);
    sign_in(&mut first, &agent, &provider).await;
    let used = provider.authorized().pop().expect("asked").nonce;

    // A later sign-in whose ID token carries that nonce (a token replayed) is refused.
    provider.spoil(Spoil::Nonce(Some(used)));
    let mut later = Browser::new(&agent);
    let callback = to_callback(&mut later, &agent, &provider).await;
    let done = later.get(&callback).await;
    assert_eq!(done.status, 401, "{}", done.body);
    assert!(done.body.contains("nonce mismatch"), "{}", done.body);
    assert!(done.set_cookie(SESSION).is_none(), "{:?}", done.set_cookies);
    assert_eq!(later.me().await.0, 401, "nobody signed in");
    assert_eq!(first.me().await.0, 200, "the first sign-in goes on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_sign_in_changes_nothing_without_its_csrf_token() {
    let Some(provider) = provider(person("ana", &["support"])) else { return };
    let agent = agent(&provider);
    let mut browser = Browser::new(&agent);
    sign_in(&mut browser, &agent, &provider).await;
    let csrf = browser.me().await.1["csrf"].as_str().expect("a CSRF token").to_string();
    // Another person's sign-in, with its own token.
    provider.sign_in_as(person("bo", &["support"]));
    let mut other = Browser::new(&agent);
    sign_in(&mut other, &agent, &provider).await;
    let bos = other.me().await.1["csrf"].as_str().expect("a CSRF token").to_string();
    assert_ne!(csrf, bos);

    let sessions = format!("{}/v1/sessions", agent.url);
    let zeros = "0".repeat(64);
    for (what, sent) in
        [("none", None), ("a wrong one", Some(zeros.as_str())), ("another sign-in's", Some(bos.as_str()))]
    {
        let headers: Vec<(&str, &str)> = sent.map(|t| ("X-CSRF-Token", t)).into_iter().collect();
        let refused = browser.send("POST", &sessions, &headers).await;
        assert_eq!((refused.status, refused.json()["error"]["code"].clone()), (403, json!("csrf")), "{what}");
    }
    let listed = browser.get(&sessions).await;
    assert_eq!(listed.json()["sessions"].as_array().map(Vec::len), Some(0), "nothing was made: {}", listed.body);

    let created = browser.send("POST", &sessions, &[("X-CSRF-Token", &csrf)]).await;
    assert_eq!(created.status, 201, "with its token: {}", created.body);
    let id = created.json()["id"].as_str().expect("a session id").to_string();
    let session = format!("{sessions}/{id}");
    let refused = browser.send("DELETE", &session, &[]).await;
    assert_eq!((refused.status, refused.json()["error"]["code"].clone()), (403, json!("csrf")), "{}", refused.body);
    let closed = browser.send("DELETE", &session, &[("X-CSRF-Token", &csrf)]).await;
    assert_eq!((closed.status, closed.json()["status"].clone()), (200, json!("closed")), "{}", closed.body);

    // Signing out is a change too.
    let logout = format!("{}/auth/logout", agent.url);
    let refused = browser.send("POST", &logout, &[]).await;
    assert_eq!((refused.status, refused.json()["error"]["code"].clone()), (403, json!("csrf")), "{}", refused.body);
    assert_eq!(browser.me().await.0, 200, "still signed in");
    let out = browser.send("POST", &logout, &[("X-CSRF-Token", &csrf)]).await;
    assert_eq!(out.status, 204, "{}", out.body);
    assert_eq!(browser.me().await.0, 401, "signed out");
    assert_eq!(other.me().await.0, 200, "another's sign-in goes on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_an_http_redirect_url_the_sign_in_cookies_have_their_plain_names() {
    let Some(provider) = provider(person("ana", &["support"])) else { return };
    let agent = agent(&provider);
    let mut browser = Browser::new(&agent);
    let login = browser.get(&format!("{}/auth/login", agent.url)).await;
    let attributes = |set: &str| -> Vec<String> { set.split(';').skip(1).map(|a| a.trim().to_lowercase()).collect() };
    let set = login.set_cookie(LOGIN).unwrap_or_else(|| panic!("{LOGIN} is set: {:?}", login.set_cookies));
    let said = attributes(set);
    assert!(said.contains(&"path=/auth".into()) && said.contains(&"httponly".into()), "{set}");
    assert!(said.contains(&"samesite=lax".into()) && !said.contains(&"secure".into()), "{set}");
    assert!(login.set_cookies.iter().all(|c| !c.starts_with("__Host-")), "{:?}", login.set_cookies);

    let callback = browser.get(&login.location).await.location;
    let done = browser.get(&callback).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let set = done.set_cookie(SESSION).unwrap_or_else(|| panic!("{SESSION} is set: {:?}", done.set_cookies));
    let said = attributes(set);
    assert!(said.contains(&"path=/".into()) && said.contains(&"httponly".into()), "{set}");
    assert!(!said.contains(&"secure".into()), "{set}");
    assert!(done.set_cookies.iter().all(|c| !c.starts_with("__Host-")), "{:?}", done.set_cookies);
    assert_eq!(browser.me().await.0, 200);
}
