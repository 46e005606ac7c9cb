//! URLs in answers: where a link leads (`Target`) and whether the allowlist lets it stay.

/// The hosts links may point to, normalised once.
pub(crate) struct Allowlist {
    /// Hosts allowed exactly.
    pub(super) exact: Vec<String>,
    /// Suffixes like `.example.com` from `*.example.com` entries.
    pub(super) suffixes: Vec<String>,
}

impl Allowlist {
    pub(crate) fn new(hosts: &[String]) -> Self {
        let mut list = Allowlist { exact: Vec::new(), suffixes: Vec::new() };
        for entry in hosts {
            let entry = entry.trim();
            match entry.strip_prefix("*.").map(normalize_host) {
                Some(Some(base)) => list.suffixes.push(format!(".{base}")),
                Some(None) => {}
                None => list.exact.extend(normalize_host(entry)),
            }
        }
        list
    }

    pub(super) fn host(&self, host: &str) -> bool {
        self.exact.iter().any(|h| h == host)
            || self.suffixes.iter().any(|s| host.len() > s.len() && host.ends_with(s.as_str()))
    }

    /// True when a link or image to `url` may stay.
    pub(crate) fn url(&self, url: &str) -> bool {
        match classify(url) {
            Target::Local | Target::Mail => true,
            Target::Host(host) => self.host(&host),
            Target::Refused => false,
        }
    }
}

/// Where a URL leads, as far as the guard is concerned.
#[derive(Debug, PartialEq)]
pub(super) enum Target {
    /// A relative URL: same site.
    Local,
    /// `mailto:` without a query.
    Mail,
    /// An `http`/`https` or protocol-relative URL to this (normalised) host.
    Host(String),
    /// Another scheme, or anything that cannot be read with certainty.
    Refused,
}

/// Reads the target of a URL the way a browser would, erring towards `Refused`.
pub(super) fn classify(url: &str) -> Target {
    let cleaned: String =
        url.trim_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    if cleaned.contains('\\') {
        return Target::Refused;
    }
    if let Some(rest) = cleaned.strip_prefix("//") {
        return host_of(rest);
    }
    let Some(colon) = cleaned.find([':', '/', '?', '#']).filter(|&i| cleaned[i..].starts_with(':')) else {
        return Target::Local;
    };
    let (scheme, rest) = (&cleaned[..colon], &cleaned[colon + 1..]);
    if !is_scheme(scheme) {
        return Target::Refused;
    }
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" => host_of(rest),
        "mailto" if !rest.contains('?') => Target::Mail,
        _ => Target::Refused,
    }
}

/// A URL scheme: an ASCII letter, then letters, digits, `+`, `-` or `.`.
pub(super) fn is_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The host of `rest`, the part of a URL after `scheme:` or `//`. Extra slashes are
/// skipped as browsers do; the host is what follows the last `@` of the authority.
pub(super) fn host_of(rest: &str) -> Target {
    let rest = rest.trim_start_matches('/');
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let (host, port) = match host_port.strip_prefix('[') {
        Some(inner) => match inner.split_once(']') {
            Some((host, port)) => (host, port),
            None => return Target::Refused,
        },
        None => host_port.split_at(host_port.find(':').unwrap_or(host_port.len())),
    };
    let port_ok = port.is_empty() || port.strip_prefix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    match normalize_host(host) {
        Some(host) if port_ok => Target::Host(host),
        _ => Target::Refused,
    }
}

/// Lowercases a host, strips IPv6 brackets and one trailing dot, and refuses anything
/// with characters a plain host name or IP address does not have (`%`, non-ASCII, …).
pub(super) fn normalize_host(host: &str) -> Option<String> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let valid = if host.contains(':') {
        host.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    } else {
        host.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    };
    (valid && !host.is_empty() && !host.starts_with('.')).then_some(host)
}
