//! URLs in answers: where a link leads (`Target`) and whether the allowlist lets it stay.
//!
//! URLs are read by the `url` crate, the WHATWG URL parser that browsers follow. Every place
//! where a reader of our own disagreed with the browser (`\` read as `/`, tabs inside a scheme,
//! hosts in Unicode, percent-escapes or `0x7f.1`) would be a way past the allowlist.

use std::sync::LazyLock;
use url::{Host, ParseError, Url};

/// What a relative URL is resolved against, to tell a link that stays on the site (`a.md`,
/// `/docs/a.md`, `?q`, `#a`) from a protocol-relative one (`//evil.example/x`), which names
/// a host. Names under `.invalid` never resolve (RFC 6761), so a link that writes this host
/// out (`//same-origin.invalid/x`) and is taken as local fetches nothing.
static BASE: LazyLock<Url> =
    LazyLock::new(|| Url::parse("https://same-origin.invalid/").expect("the base is a valid constant URL"));

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
    /// An `http`/`https` or protocol-relative URL to this host, as the browser would look it
    /// up: lower case, punycode, an IPv4 address in dotted decimal, no trailing dot.
    Host(String),
    /// Another scheme, or anything that cannot be read with certainty.
    Refused,
}

/// Reads the target of a URL the way a browser would, erring towards `Refused`.
pub(super) fn classify(url: &str) -> Target {
    match Url::parse(url) {
        Ok(absolute) => scheme_target(&absolute),
        Err(ParseError::RelativeUrlWithoutBase) => relative(url),
        Err(_) => Target::Refused,
    }
}

/// A URL without a scheme. A colon before the first `/`, `?` or `#` is refused although the
/// browser reads `a b:c` or `java\0script:x` as a path: a less careful reader may take what
/// comes before it for a scheme, and no link to the docs needs one there.
fn relative(url: &str) -> Target {
    if url.find([':', '/', '?', '#']).is_some_and(|i| url[i..].starts_with(':')) {
        return Target::Refused;
    }
    match BASE.join(url) {
        Ok(resolved) if resolved.host() == BASE.host() => Target::Local,
        Ok(resolved) => scheme_target(&resolved),
        Err(_) => Target::Refused,
    }
}

/// The target of a parsed URL: a host for `http`/`https`, `Mail` for `mailto:` without a
/// query (a query can fill in a body), `Refused` for any other scheme.
fn scheme_target(url: &Url) -> Target {
    match url.scheme() {
        "http" | "https" => url.host().and_then(host_key).map_or(Target::Refused, Target::Host),
        "mailto" if url.query().is_none() => Target::Mail,
        _ => Target::Refused,
    }
}

/// Normalises an allowlist entry the way a URL's host is: `Bücher.Example.` and
/// `xn--bcher-kva.example` are one host. An IPv6 address may be written with or without
/// brackets. `None` for an entry that is not a host.
fn normalize_host(entry: &str) -> Option<String> {
    let bracketed;
    let entry = if entry.contains(':') && !entry.starts_with('[') {
        bracketed = format!("[{entry}]");
        &bracketed
    } else {
        entry
    };
    Host::parse(entry).ok().and_then(host_key)
}

/// The form hosts are compared in. One trailing dot is dropped (`example.com.` is the same
/// name); a name that starts with a dot or is empty is no host.
fn host_key<S: AsRef<str>>(host: Host<S>) -> Option<String> {
    match host {
        Host::Domain(name) => {
            let name = name.as_ref();
            let name = name.strip_suffix('.').unwrap_or(name);
            (!name.is_empty() && !name.starts_with('.')).then(|| name.to_string())
        }
        Host::Ipv4(address) => Some(address.to_string()),
        Host::Ipv6(address) => Some(address.to_string()),
    }
}
