//! `[serve.oidc]`, `[serve.proxy]`, `[serve.groups]` and `serve.cookie_secret` checked: each
//! error names the setting and says what to put there.

use super::{Config, ConfigError, ProxyConfig};

/// The shortest cookie key taken: 32 bytes, as the cookie encryption derives its keys from.
pub const MIN_COOKIE_SECRET: usize = 32;

impl ProxyConfig {
    /// The proxy's addresses as networks (`10.0.0.5` is `10.0.0.5/32`), or the entry that is
    /// neither an address nor a network.
    pub fn networks(&self) -> Result<Vec<ipnet::IpNet>, ConfigError> {
        self.trusted
            .iter()
            .map(|entry| {
                let entry = entry.trim();
                entry
                    .parse::<ipnet::IpNet>()
                    .or_else(|_| entry.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| {
                        ConfigError(format!(
                            "serve.proxy.trusted: `{entry}` is neither an IP address nor a network; \
                             write the proxy's address (`10.0.0.5`) or its network (`10.0.0.0/24`)"
                        ))
                    })
            })
            .collect()
    }
}

impl Config {
    pub(super) fn validate_sign_in(&self) -> Result<(), ConfigError> {
        let serve = &self.serve;
        let secret = serve.cookie_secret.trim();
        if !secret.is_empty() && secret.len() < MIN_COOKIE_SECRET {
            return Err(ConfigError(format!(
                "serve.cookie_secret (DOCS_AGENT_COOKIE_SECRET) must be at least {MIN_COOKIE_SECRET} bytes, got {}; \
                 `openssl rand -hex 32` makes one",
                secret.len()
            )));
        }
        let oidc = &serve.oidc;
        if oidc.enabled() {
            let issuer = url::Url::parse(oidc.issuer.trim()).map_err(|e| {
                ConfigError(format!("serve.oidc.issuer (DOCS_AGENT_OIDC_ISSUER) is not a URL ({e}): `{}`", oidc.issuer))
            })?;
            plain_http_only_on_loopback("serve.oidc.issuer (DOCS_AGENT_OIDC_ISSUER)", &issuer)?;
            if oidc.client_id.trim().is_empty() {
                return Err(ConfigError(
                    "serve.oidc.client_id (DOCS_AGENT_OIDC_CLIENT_ID) is empty: set the client id this service has at the \
                     provider"
                        .into(),
                ));
            }
            let redirect = url::Url::parse(oidc.redirect_url.trim()).map_err(|_| {
                ConfigError(format!(
                    "serve.oidc.redirect_url (DOCS_AGENT_OIDC_REDIRECT_URL) must be this service's public URL and \
                     /auth/callback (`https://docs-agent.acme.com/auth/callback`), got `{}`",
                    oidc.redirect_url
                ))
            })?;
            if redirect.path() != "/auth/callback" || redirect.query().is_some() || redirect.fragment().is_some() {
                return Err(ConfigError(format!(
                    "serve.oidc.redirect_url (DOCS_AGENT_OIDC_REDIRECT_URL) must end in /auth/callback, the route that \
                     finishes a sign-in, got `{}`",
                    oidc.redirect_url
                )));
            }
            plain_http_only_on_loopback("serve.oidc.redirect_url (DOCS_AGENT_OIDC_REDIRECT_URL)", &redirect)?;
            for (key, claim) in
                [("serve.oidc.name_claim", &oidc.name_claim), ("serve.oidc.groups_claim", &oidc.groups_claim)]
            {
                if claim.trim().is_empty() {
                    return Err(ConfigError(format!("{key} is empty: name the claim (`email`, `groups`)")));
                }
            }
            if oidc.session_hours == 0 || oidc.session_hours > 24 * 30 {
                return Err(ConfigError(format!(
                    "serve.oidc.session_hours must be from 1 to 720 (30 days), got {}",
                    oidc.session_hours
                )));
            }
        }
        let proxy = &serve.proxy;
        proxy.networks()?;
        if proxy.enabled() {
            for (key, header) in
                [("serve.proxy.user_header", &proxy.user_header), ("serve.proxy.groups_header", &proxy.groups_header)]
            {
                if axum::http::HeaderName::from_bytes(header.trim().as_bytes()).is_err() {
                    return Err(ConfigError(format!("{key} is not a header name: `{header}`")));
                }
            }
        }
        let groups = &serve.groups;
        let mapped =
            [&groups.ask, &groups.approve, &groups.admin].iter().any(|g| g.iter().any(|g| !g.trim().is_empty()));
        if (oidc.enabled() || proxy.enabled()) && !mapped {
            return Err(ConfigError(
                "serve.groups gives no role to any group, so nobody who signs in could do anything: \
                 map groups to roles (`[serve.groups] ask = [\"support\"]`; `\"*\"` is everyone who signs in)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// A URL of the sign-in that may be plain `http` only on this machine (a test's provider);
/// anywhere else codes and tokens would cross the network readable.
fn plain_http_only_on_loopback(key: &str, url: &url::Url) -> Result<(), ConfigError> {
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        scheme => Err(ConfigError(format!(
            "{key} must be an https URL (plain http only on this machine's loopback), got {scheme}://{}",
            url.host_str().unwrap_or("")
        ))),
    }
}
