//! Signing in without a token: an authenticating proxy's header, believed only from the proxy's
//! addresses, through a real `docs-agent serve` on 127.0.0.1 and clients bound to two loopback
//! addresses (127.0.0.2 plays the proxy; 127.0.0.1 anyone else); roles from groups, the CSRF
//! token a browser's state-changing request needs, and the settings checked at start. The
//! OpenID sign-in: tests/oidc.rs against a fake provider, and in Chromium against a real one
//! (tests/browser/signin.mjs).

mod common;

use common::{run, sample_workspace};
use serde_json::{Value, json};

const TOKEN: &str = "a-token-for-the-signin-test-0123456789";

/// A client whose connections come from `from` (a loopback address).
fn client(from: &str) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let address: std::net::IpAddr = from.parse().expect("an address");
    reqwest::Client::builder().local_address(address).build().expect("a client")
}

/// `method` `url` with `headers`; the status and the JSON body (or null).
async fn send(
    client: &reqwest::Client,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = client.request(method.parse().expect("a method"), url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    match request.send().await {
        Ok(reply) => (reply.status().as_u16(), reply.json().await.unwrap_or(Value::Null)),
        Err(e) => panic!("{method} {url}: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_names_people_only_from_its_own_addresses() {
    let ws = sample_workspace();
    common::serve_config(
        ws.path(),
        &[("ops", TOKEN, &["admin"])],
        "[serve.proxy]\ntrusted = [\"127.0.0.2\"]\n[serve.groups]\nask = [\"support\"]\napprove = [\"leads\"]\n",
    );
    let (child, url, _stderr) = common::spawn_serve(ws.path(), &[("LLM_MODEL", "scripted")]);
    // Killed however the test ends, a failed assertion included.
    let _serve = common::KillOnDrop(child);
    let (proxy, elsewhere) = (client("127.0.0.2"), client("127.0.0.1"));
    let ana = [("X-Forwarded-Email", "ana@acme.test"), ("X-Forwarded-Groups", "support,leads")];

    let (status, me) = send(&proxy, "GET", &format!("{url}/v1/me"), &ana, None).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["principal"], "ana@acme.test");
    assert_eq!(me["signed_in_with"], "proxy");
    assert_eq!(me["may"], json!({ "ask": true, "approve": true, "admin": false }), "roles from the groups: {me}");
    let csrf = me["csrf"].as_str().unwrap_or_default().to_string();
    assert_eq!(csrf.len(), 64, "a CSRF token for the browser: {me}");

    // The same header from any other address is refused, and says why.
    let (status, refused) = send(&elsewhere, "GET", &format!("{url}/v1/me"), &ana, None).await;
    assert_eq!(status, 401, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("serve.proxy.trusted") && message.contains("127.0.0.1"), "{message}");

    // A person none of whose groups has a role is refused, told their groups.
    let carol = [("X-Forwarded-Email", "carol@acme.test"), ("X-Forwarded-Groups", "marketing")];
    let (status, refused) = send(&proxy, "GET", &format!("{url}/v1/me"), &carol, None).await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "no_role");
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("marketing"), "{refused}");

    // A state-changing request needs the CSRF token; a read does not.
    let ask = json!({ "question": "how long is the refund window" });
    let (status, refused) = send(&proxy, "POST", &format!("{url}/v1/ask"), &ana, Some(ask.clone())).await;
    assert_eq!((status, refused["error"]["code"].clone()), (403, json!("csrf")), "{refused}");
    let wrong = [ana[0], ana[1], ("X-CSRF-Token", "0000")];
    let (status, _) = send(&proxy, "POST", &format!("{url}/v1/ask"), &wrong, Some(ask.clone())).await;
    assert_eq!(status, 403, "a wrong token is no token");
    let with = [ana[0], ana[1], ("X-CSRF-Token", csrf.as_str())];
    let (status, answered) = send(&proxy, "POST", &format!("{url}/v1/ask"), &with, Some(ask.clone())).await;
    assert_eq!(status, 200, "{answered}");
    assert!(answered["answer"].as_str().unwrap_or_default().contains("14 days"), "{answered}");
    // Another person's CSRF token is not theirs.
    let bo =
        [("X-Forwarded-Email", "bo@acme.test"), ("X-Forwarded-Groups", "support"), ("X-CSRF-Token", csrf.as_str())];
    let (status, _) = send(&proxy, "POST", &format!("{url}/v1/ask"), &bo, Some(ask.clone())).await;
    assert_eq!(status, 403, "a CSRF token belongs to its person");

    // Sessions belong to the name the proxy gives.
    let (status, created) = send(&proxy, "POST", &format!("{url}/v1/sessions"), &with, None).await;
    assert_eq!(status, 201, "{created}");
    let (_, listed) = send(&proxy, "GET", &format!("{url}/v1/sessions"), &ana, None).await;
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1), "{listed}");
    let bo_reads = [("X-Forwarded-Email", "bo@acme.test"), ("X-Forwarded-Groups", "support")];
    let (_, theirs) = send(&proxy, "GET", &format!("{url}/v1/sessions"), &bo_reads, None).await;
    assert_eq!(theirs["sessions"].as_array().map(Vec::len), Some(0), "bo sees none of ana's: {theirs}");

    // A bearer token works from anywhere, needs no CSRF token, and decides alone.
    let bearer = format!("Bearer {TOKEN}");
    let (status, me) =
        send(&elsewhere, "GET", &format!("{url}/v1/me"), &[("Authorization", &bearer), ana[0]], None).await;
    assert_eq!((status, me["principal"].clone()), (200, json!("ops")), "{me}");
    let (status, _) =
        send(&elsewhere, "POST", &format!("{url}/v1/ask"), &[("Authorization", &bearer)], Some(ask)).await;
    assert_eq!(status, 200);
    let (status, _) =
        send(&proxy, "GET", &format!("{url}/v1/me"), &[("Authorization", "Bearer wrong"), ana[0], ana[1]], None).await;
    assert_eq!(status, 401, "a wrong token is not rescued by the proxy's header");

    // A header sent twice (a client's value beside the proxy's) names nobody; another scheme of
    // Authorization (oauth2-proxy's Basic) is passed over, not refused.
    let twice = [ana[0], ana[1], ("X-Forwarded-Groups", "docs-admins")];
    let (status, refused) = send(&proxy, "GET", &format!("{url}/v1/me"), &twice, None).await;
    assert_eq!(status, 401, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("more than once"), "{refused}");
    let spoofed = [("X-Forwarded-Email", "ceo@acme.test"), ana[0], ana[1]];
    let (status, _) = send(&proxy, "GET", &format!("{url}/v1/me"), &spoofed, None).await;
    assert_eq!(status, 401, "the client's name beside the proxy's is believed for neither");
    let basic = [("Authorization", "Basic YW5hOng="), ana[0], ana[1]];
    let (status, me) = send(&proxy, "GET", &format!("{url}/v1/me"), &basic, None).await;
    assert_eq!((status, me["principal"].clone()), (200, json!("ana@acme.test")), "{me}");

    // Nothing at all: 401, as before.
    let (status, _) = send(&proxy, "GET", &format!("{url}/v1/me"), &[], None).await;
    assert_eq!(status, 401);
}

#[test]
fn sign_in_settings_are_checked_at_start_naming_the_setting() {
    let ws = sample_workspace();
    let cases: &[(&str, &str)] = &[
        (
            "[serve.proxy]\ntrusted = [\"10.0.0.300\"]\n[serve.groups]\nask = [\"*\"]\n",
            "serve.proxy.trusted: `10.0.0.300`",
        ),
        ("[serve.proxy]\ntrusted = [\"10.0.0.5\"]\n", "serve.groups gives no role"),
        (
            "[serve.oidc]\nissuer = \"http://login.acme.test\"\nclient_id = \"x\"\nredirect_url = \"https://a.acme.test/auth/callback\"\n[serve.groups]\nask = [\"*\"]\n",
            "serve.oidc.issuer (DOCS_AGENT_OIDC_ISSUER) must be an https URL",
        ),
        (
            "[serve.oidc]\nissuer = \"https://login.acme.test\"\nclient_id = \"x\"\nredirect_url = \"https://a.acme.test/callback\"\n[serve.groups]\nask = [\"*\"]\n",
            "must end in /auth/callback",
        ),
        (
            "[serve.oidc]\nissuer = \"https://login.acme.test\"\nredirect_url = \"https://a.acme.test/auth/callback\"\n[serve.groups]\nask = [\"*\"]\n",
            "serve.oidc.client_id (DOCS_AGENT_OIDC_CLIENT_ID) is empty",
        ),
    ];
    for (extra, expected) in cases {
        common::serve_config(ws.path(), &[("ops", TOKEN, &["admin"])], extra);
        let failed = run(ws.path(), &[("LLM_MODEL", "scripted")], &["serve"]);
        assert_eq!(failed.code, 2, "{extra}: {}", failed.stderr);
        assert!(failed.stderr.contains(expected), "{extra}: {}", failed.stderr);
    }
    common::serve_config(ws.path(), &[("ops", TOKEN, &["admin"])], "");
    let failed = run(ws.path(), &[("LLM_MODEL", "scripted"), ("DOCS_AGENT_COOKIE_SECRET", "short")], &["serve"]);
    assert_eq!(failed.code, 2, "{}", failed.stderr);
    assert!(
        failed.stderr.contains("serve.cookie_secret (DOCS_AGENT_COOKIE_SECRET) must be at least 32 bytes"),
        "{}",
        failed.stderr
    );
}
