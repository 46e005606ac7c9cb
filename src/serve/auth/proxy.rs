//! Trusted proxy sign-in: an authenticating proxy in front (oauth2-proxy, or nginx with
//! auth_request) has signed the person in and names them in a header. The header is believed
//! only on connections from the proxy's own addresses (`serve.proxy.trusted`); from anywhere
//! else it is refused, never ignored, so a misrouted request is seen.

use std::net::{IpAddr, SocketAddr};

use axum::http::{HeaderMap, HeaderName};

use crate::config::ProxyConfig;

/// The longest name taken from the proxy's header.
const MAX_NAME_CHARS: usize = 256;

/// The proxy, as configured.
pub struct Proxy {
    networks: Vec<ipnet::IpNet>,
    user: HeaderName,
    groups: HeaderName,
}

/// What a request says through the proxy's headers.
#[derive(Debug, PartialEq, Eq)]
pub enum Said {
    /// No identity header: not a proxy sign-in.
    Nothing,
    /// The identity header, on a connection not from a trusted address (or none known).
    Untrusted {
        /// The header's name.
        header: String,
        /// Where the connection came from, when known.
        from: Option<IpAddr>,
    },
    /// The identity header is present but unusable (empty, not text, too long), or a header
    /// comes more than once (a client's value beside the proxy's, when a proxy appends).
    Unusable {
        /// The header's name.
        header: String,
    },
    /// Someone the proxy signed in, and their groups.
    Person {
        /// Who, as the proxy names them.
        name: String,
        /// Their groups.
        groups: Vec<String>,
    },
}

impl Proxy {
    /// For `config`, when it names trusted addresses (already checked by the configuration).
    pub fn new(config: &ProxyConfig) -> Option<Proxy> {
        if !config.enabled() {
            return None;
        }
        Some(Proxy {
            networks: config.networks().ok()?,
            user: HeaderName::from_bytes(config.user_header.trim().as_bytes()).ok()?,
            groups: HeaderName::from_bytes(config.groups_header.trim().as_bytes()).ok()?,
        })
    }

    /// Who the request from `peer` with `headers` is, as the proxy says.
    pub fn said(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Said {
        let Some(value) = headers.get(&self.user) else { return Said::Nothing };
        let from = peer.map(|p| p.ip().to_canonical());
        if !from.is_some_and(|ip| self.networks.iter().any(|net| net.contains(&ip))) {
            return Said::Untrusted { header: self.user.to_string(), from };
        }
        // One value each, or none believed: a proxy that appends to a header the client sent
        // (rather than replacing it) would otherwise let the client's value through.
        for header in [&self.user, &self.groups] {
            if headers.get_all(header).iter().count() > 1 {
                return Said::Unusable { header: header.to_string() };
            }
        }
        let name = value.to_str().map(str::trim).unwrap_or_default();
        if name.is_empty() || name.chars().count() > MAX_NAME_CHARS {
            return Said::Unusable { header: self.user.to_string() };
        }
        let groups = headers
            .get(&self.groups)
            .and_then(|v| v.to_str().ok())
            .into_iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
            .collect();
        Said::Person { name: name.to_string(), groups }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy() -> Proxy {
        let config = ProxyConfig {
            trusted: vec!["10.0.0.5".into(), "192.168.1.0/24".into()],
            user_header: "X-Forwarded-Email".into(),
            groups_header: "X-Forwarded-Groups".into(),
        };
        Proxy::new(&config).unwrap()
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(HeaderName::from_bytes(name.as_bytes()).unwrap(), value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn the_header_is_believed_only_from_the_proxy() {
        let said = |peer: &str, pairs: &[(&str, &str)]| proxy().said(peer.parse().ok(), &headers(pairs));
        let ana = [("x-forwarded-email", "ana@acme.test"), ("x-forwarded-groups", "support, leads")];
        assert_eq!(
            said("10.0.0.5:5000", &ana),
            Said::Person { name: "ana@acme.test".into(), groups: vec!["support".into(), "leads".into()] }
        );
        // A header twice (the client's value beside the proxy's) is believed for neither.
        let twice = [("x-forwarded-email", "ceo@acme.test"), ("x-forwarded-email", "ana@acme.test")];
        assert!(matches!(said("10.0.0.5:1", &twice), Said::Unusable { .. }));
        let groups_twice = [ana[0], ana[1], ("x-forwarded-groups", "docs-admins")];
        assert!(matches!(said("10.0.0.5:1", &groups_twice), Said::Unusable { .. }));
        assert!(matches!(said("192.168.1.77:1", &ana), Said::Person { .. }), "any address of a trusted network");
        assert!(
            matches!(said("[::ffff:10.0.0.5]:1", &ana), Said::Person { .. }),
            "an IPv4 proxy seen on an IPv6 socket"
        );
        assert_eq!(
            said("10.0.0.6:5000", &ana),
            Said::Untrusted { header: "x-forwarded-email".into(), from: "10.0.0.6".parse().ok() }
        );
        assert!(
            matches!(proxy().said(None, &headers(&ana)), Said::Untrusted { from: None, .. }),
            "no peer known: not trusted"
        );
        assert_eq!(
            said("10.0.0.5:1", &[("x-forwarded-groups", "support")]),
            Said::Nothing,
            "no name: not a proxy sign-in"
        );
        assert!(matches!(said("10.0.0.5:1", &[("x-forwarded-email", "  ")]), Said::Unusable { .. }));
        let off = ProxyConfig { trusted: vec![], user_header: "a".into(), groups_header: "b".into() };
        assert!(Proxy::new(&off).is_none(), "no trusted address: no proxy sign-in");
    }
}
