//! `session.log_url`, parsed once: the connection settings, and how the log is named in
//! messages and logs, never with its password.

use std::str::FromStr;

use tokio_postgres::config::Host;

use super::tls::{Tls, TlsParamsError};

/// PostgreSQL's port when the URL names none.
const DEFAULT_PORT: u16 = 5432;

/// Why `session.log_url` cannot be used. Each message follows "session.log_url " and never
/// repeats the URL, which may hold a password.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Another scheme than `postgres://` or `postgresql://`.
    #[error("it must be a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)")]
    NotPostgres,
    /// An `@` in the user or password that is not percent-encoded.
    #[error("its user or password holds a bare `@`: percent-encode it as %40")]
    BareAt,
    /// `tokio-postgres` cannot read it (a bad port, an unknown option).
    #[error("it is not a valid postgres:// URL ({0}); the form is postgres://USER:PASSWORD@HOST:PORT/DATABASE")]
    Invalid(#[source] tokio_postgres::Error),
    /// No host.
    #[error("it names no host (postgres://USER:PASSWORD@HOST:PORT/DATABASE)")]
    NoHost,
    /// No user.
    #[error("it names no user (postgres://USER:PASSWORD@HOST:PORT/DATABASE)")]
    NoUser,
    /// An option's key or value is not UTF-8 once percent-decoded.
    #[error("its option {key} is not UTF-8 once percent-decoded")]
    OptionNotUtf8 {
        /// The option's key, as written.
        key: String,
    },
    /// `sslcert` or `sslkey`: client certificates.
    #[error("it names {key}: client certificates are not supported; log in with a password (scram-sha-256)")]
    ClientCertificate {
        /// `sslcert` or `sslkey`.
        key: String,
    },
    /// `sslmode` and `sslrootcert` do not go together.
    #[error(transparent)]
    Tls(#[from] TlsParamsError),
}

/// A PostgreSQL server and database to keep sessions in.
#[derive(Clone)]
pub struct Target {
    /// The connection settings.
    config: tokio_postgres::Config,
    /// `postgres://user@host:port/db`: the URL without its password or options.
    shown: String,
    /// TLS to the server (`sslmode`, `sslrootcert`).
    tls: Tls,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Target {
    /// Parses a `postgres://` (or `postgresql://`) URL; the error never repeats the URL,
    /// which may hold a password.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let url = url.trim();
        if !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
            return Err(TargetError::NotPostgres);
        }
        let rest = url.split_once("://").map_or("", |(_, rest)| rest);
        let hosts = &rest[hosts_start(rest)..];
        if hosts.split(['/', '?']).next().unwrap_or_default().contains('@') {
            return Err(TargetError::BareAt);
        }
        let (url, tls) = split_tls(url)?;
        let mut config = tokio_postgres::Config::from_str(&url).map_err(TargetError::Invalid)?;
        if config.get_hosts().is_empty() {
            return Err(TargetError::NoHost);
        }
        if config.get_user().is_none() {
            return Err(TargetError::NoUser);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        config.application_name("docs-agent");
        config.ssl_mode(tls.mode().wire());
        let hosts: Vec<String> = config
            .get_hosts()
            .iter()
            .enumerate()
            .map(|(i, host)| {
                let port = config.get_ports().get(i).or(config.get_ports().first()).copied().unwrap_or(DEFAULT_PORT);
                match host {
                    Host::Tcp(name) => format!("{name}:{port}"),
                    Host::Unix(dir) => format!("{}:{port}", dir.display()),
                }
            })
            .collect();
        let shown = format!(
            "postgres://{}@{}/{}",
            config.get_user().unwrap_or_default(),
            hosts.join(","),
            config.get_dbname().unwrap_or(config.get_user().unwrap_or_default())
        );
        Ok(Target { config, shown, tls })
    }

    /// TLS to the server.
    pub fn tls(&self) -> &Tls {
        &self.tls
    }

    /// The connection settings.
    pub fn config(&self) -> &tokio_postgres::Config {
        &self.config
    }

    /// The URL without its password: what messages name.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The TCP ports a replica connects to (what its kernel sandbox allows).
    pub fn ports(&self) -> Vec<u16> {
        let ports = self.config.get_ports();
        if ports.is_empty() { vec![DEFAULT_PORT] } else { ports.to_vec() }
    }

    /// True when a host is a Unix socket folder (the sandbox then needs that folder).
    pub fn unix_folders(&self) -> Vec<std::path::PathBuf> {
        self.config
            .get_hosts()
            .iter()
            .filter_map(|h| match h {
                Host::Unix(dir) => Some(dir.clone()),
                Host::Tcp(_) => None,
            })
            .collect()
    }
}

/// Takes `sslmode` and `sslrootcert` out of the URL's options (libpq's names, which
/// `tokio-postgres` would refuse or read otherwise) and reads them; the rest of the URL is kept.
fn split_tls(url: &str) -> Result<(String, Tls), TargetError> {
    let scheme_end = url.find("://").map_or(0, |i| i + 3);
    let from = scheme_end + hosts_start(&url[scheme_end..]);
    let Some((base, query)) = url[from..].find('?').map(|i| (&url[..from + i], &url[from + i + 1..])) else {
        return Ok((url.to_string(), Tls::from_params(None, None)?));
    };
    let (mut mode, mut root, mut kept) = (None, None, Vec::new());
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |text: &str| {
            percent_encoding::percent_decode_str(text)
                .decode_utf8()
                .map(|v| v.into_owned())
                .map_err(|_| TargetError::OptionNotUtf8 { key: key.to_string() })
        };
        // Keys decoded as tokio-postgres decodes them: `ssl%6Dode` is sslmode too.
        let key = decode(key)?;
        let decoded = || decode(value);
        match key.as_str() {
            "sslmode" => mode = Some(decoded()?),
            "sslrootcert" => root = Some(decoded()?),
            "sslcert" | "sslkey" => {
                return Err(TargetError::ClientCertificate { key });
            }
            _ => kept.push(pair),
        }
    }
    let tls = Tls::from_params(mode.as_deref(), root.as_deref())?;
    let url = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    Ok((url, tls))
}

/// Where the hosts begin in a URL after its `://`: after the user and password, which end, as
/// libpq reads them, at the first `@` before any `/` (a password may hold a raw `?`).
fn hosts_start(rest: &str) -> usize {
    match rest.find(['@', '/']) {
        Some(at) if rest[at..].starts_with('@') => at + 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::{Target, TargetError};

    /// One row of a table: the input, which error it must give, and that error's message.
    type Row<'a> = (&'a str, fn(&TargetError) -> bool, &'a str);

    /// A URL is shown without its password, and a bad one is refused without repeating it.
    #[test]
    fn the_password_is_never_shown() {
        let target = Target::parse("postgres://agent:s3cret-pw@db.internal:6543/sessions").expect("parses");
        assert_eq!(target.shown(), "postgres://agent@db.internal:6543/sessions");
        assert_eq!(format!("{target:?}"), "postgres://agent@db.internal:6543/sessions");
        assert_eq!(target.ports(), vec![6543]);
        let error =
            Target::parse("postgres://agent:s3cret-pw@db.internal:notaport/x").expect_err("bad port").to_string();
        assert!(!error.contains("s3cret-pw"), "{error}");
        let error = Target::parse("postgres://agent:s3c@ret-pw@db.internal/x").expect_err("a bare @").to_string();
        assert!(error.contains("%40") && !error.contains("ret-pw"), "{error}");
        let encoded = Target::parse("postgres://agent:s3c%40ret-pw@db.internal/x").expect("percent-encoded");
        assert_eq!(encoded.shown(), "postgres://agent@db.internal:5432/x");
        let error = Target::parse("mysql://agent:s3cret-pw@db/x").expect_err("not postgres").to_string();
        assert!(error.contains("postgres://") && !error.contains("s3cret-pw"), "{error}");
    }

    /// sslmode and sslrootcert are read as libpq reads them, and the other options kept.
    #[test]
    fn tls_options_are_taken_out_and_read() {
        use super::super::tls::SslMode;
        let target = Target::parse("postgres://agent:pw@db/x?sslmode=verify-full&connect_timeout=3").expect("parses");
        assert_eq!(target.tls().mode(), SslMode::VerifyFull);
        assert_eq!(target.config().get_ssl_mode(), tokio_postgres::config::SslMode::Require);
        assert_eq!(target.config().get_connect_timeout(), Some(&std::time::Duration::from_secs(3)));
        let plain = Target::parse("postgres://agent@db/x").expect("parses");
        assert_eq!(plain.tls().mode(), SslMode::Prefer);
        assert_eq!(plain.config().get_ssl_mode(), tokio_postgres::config::SslMode::Prefer);
        let off = Target::parse("postgres://agent@db/x?sslmode=disable").expect("parses");
        assert_eq!(off.config().get_ssl_mode(), tokio_postgres::config::SslMode::Disable);
        let error = Target::parse("postgres://agent:pw@db/x?sslmode=sometimes").expect_err("bad mode").to_string();
        assert!(error.contains("sslmode=sometimes") && !error.contains("pw@"), "{error}");
        let named = Target::parse("postgres://agent@db/x?sslrootcert=%2Fno%2Fca.pem").expect("read when connecting");
        assert_eq!(named.tls().files(), vec![std::path::PathBuf::from("/no/ca.pem")]);
        assert_eq!(named.tls().mode(), SslMode::VerifyCa);
        // A `?` in the password is the password's (libpq's reading), not the options' start.
        let odd = Target::parse("postgres://agent:pa?ss@db/x?sslmode=require").expect("parses");
        assert_eq!(odd.tls().mode(), SslMode::Require);
        assert_eq!(odd.config().get_password(), Some(&b"pa?ss"[..]));
        assert_eq!(odd.shown(), "postgres://agent@db:5432/x");
        let encoded = Target::parse("postgres://agent@db/x?ssl%6Dode=require").expect("parses");
        assert_eq!(encoded.tls().mode(), SslMode::Require, "a percent-encoded key is the same key");
        let error =
            Target::parse("postgres://agent@db/x?sslcert=c.pem&sslkey=k.pem").expect_err("client certs").to_string();
        assert!(error.contains("client certificates"), "{error}");
    }

    /// No port: PostgreSQL's; no database: the user's name, as libpq does.
    #[test]
    fn defaults_follow_libpq() {
        let target = Target::parse("postgresql://agent@localhost").expect("parses");
        assert_eq!(target.ports(), vec![5432]);
        assert_eq!(target.shown(), "postgres://agent@localhost:5432/agent");
    }

    /// Each way a URL is refused, and its message word for word (none repeats the password).
    #[test]
    fn each_refusal_has_its_error() {
        #[rustfmt::skip]
        let cases: [Row<'_>; 7] = [
            ("mysql://agent:pw@db/x", |e| matches!(e, TargetError::NotPostgres),
             "it must be a postgres:// URL (postgres://USER:PASSWORD@HOST:PORT/DATABASE)"),
            ("postgres://agent:p@w@db/x", |e| matches!(e, TargetError::BareAt),
             "its user or password holds a bare `@`: percent-encode it as %40"),
            ("postgres://agent:pw@/x", |e| matches!(e, TargetError::NoHost),
             "it names no host (postgres://USER:PASSWORD@HOST:PORT/DATABASE)"),
            ("postgres://db/x", |e| matches!(e, TargetError::NoUser),
             "it names no user (postgres://USER:PASSWORD@HOST:PORT/DATABASE)"),
            ("postgres://agent@db/x?sslmode=%FF", |e| matches!(e, TargetError::OptionNotUtf8 { .. }),
             "its option sslmode is not UTF-8 once percent-decoded"),
            ("postgres://agent@db/x?sslkey=k.pem", |e| matches!(e, TargetError::ClientCertificate { .. }),
             "it names sslkey: client certificates are not supported; log in with a password (scram-sha-256)"),
            ("postgres://agent@db/x?sslmode=verify-ca", |e| matches!(e, TargetError::Tls(_)),
             "its sslmode=verify-ca needs the CA to trust: add sslrootcert=/path/ca.pem, or use sslmode=verify-full with the system's CAs"),
        ];
        for (url, is, message) in cases {
            let error = Target::parse(url).expect_err(url);
            assert!(is(&error), "{url}: {error:?}");
            assert_eq!(error.to_string(), message, "{url}");
        }
        let error = Target::parse("postgres://agent:pw@db:notaport/x").expect_err("bad port");
        assert!(matches!(error, TargetError::Invalid(_)), "{error:?}");
        assert!(error.to_string().starts_with("it is not a valid postgres:// URL ("), "{error}");
    }
}
