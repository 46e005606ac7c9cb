//! TLS to the PostgreSQL session log (`sslmode`, `sslrootcert` in `session.log_url`), against a
//! real server that accepts TLS connections only, with a certificate for `localhost` signed by a
//! CA of the test's own: a checked connection works and is encrypted; a certificate from another
//! CA, or for another host name, is refused with what to do; the binary keeps its sessions there.

mod common;

use std::path::Path;
use std::time::Duration;

use common::postgres::{Cluster, PASSWORD};
use docs_agent::session::event::Event;
use docs_agent::session::store::postgres::Target;
use docs_agent::session::store::{Location, Store};

/// The log at `host` on the cluster, with `options` after the `?`.
fn url(cluster: &Cluster, host: &str, options: &str) -> String {
    format!("postgres://docs:{PASSWORD}@{host}:{}/postgres?{options}", cluster.port)
}

/// Opens the store at `url`.
fn open(url: &str) -> Result<Store, String> {
    let target = Target::parse(url).map_err(|e| e.to_string())?;
    Store::open(&Location::Postgres { target: Box::new(target), lease: Duration::from_secs(3) })
        .map_err(|e| e.to_string())
}

/// `sslrootcert=` with a path, percent-encoded as a URL wants it.
fn root(path: &Path) -> String {
    format!("sslrootcert={}", path.display().to_string().replace('/', "%2F"))
}

/// How many of docs-agent's connections the server has, and how many of them are over TLS.
fn connections(cluster: &Cluster) -> (u32, u32) {
    let row = cluster.psql(
        "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
         WHERE a.application_name = 'docs-agent'",
    );
    let (all, tls) = row.split_once('|').expect("two counts");
    (all.parse().expect("count"), tls.parse().expect("count"))
}

#[test]
fn a_checked_connection_works_and_is_encrypted() {
    let Some((cluster, certs)) = Cluster::start_tls_or_skip() else { return };
    // The default (prefer) uses TLS when the server offers it: this one refuses plain connections.
    for options in [format!("sslmode=verify-full&{}", root(&certs.ca)), "sslmode=require".into(), String::new()] {
        let store = open(&url(&cluster, "localhost", &options)).unwrap_or_else(|e| panic!("{options}: {e}"));
        let mut log = store.log().expect("log");
        log.append("s-tls", Event::UserMessage { text: "over TLS".into() }).expect("append");
        let (all, tls) = connections(&cluster);
        assert!(all >= 1 && tls == all, "{options}: {tls} of {all} connections over TLS");
    }
    // verify-ca checks the chain, not the name: 127.0.0.1 is not in the certificate.
    let ip = url(&cluster, "127.0.0.1", &format!("sslmode=verify-ca&{}", root(&certs.ca)));
    open(&ip).unwrap_or_else(|e| panic!("verify-ca by address: {e}"));
    assert_eq!(cluster.psql("SELECT count(*) FROM docs_agent_events WHERE session = 's-tls'"), "3");
}

#[test]
fn an_untrusted_or_misnamed_certificate_is_refused_with_what_to_do() {
    let Some((cluster, certs)) = Cluster::start_tls_or_skip() else { return };
    // Signed by a CA the URL does not name (require with sslrootcert checks the chain, as libpq).
    for mode in ["verify-full", "verify-ca", "require"] {
        let error = open(&url(&cluster, "localhost", &format!("sslmode={mode}&{}", root(&certs.other_ca))))
            .err()
            .unwrap_or_else(|| panic!("{mode} with another CA must be refused"));
        assert!(error.contains("not signed by a CA docs-agent trusts") && error.contains("other-ca.pem"), "{error}");
        assert!(!error.contains(PASSWORD), "{error}");
    }
    // verify-ca passes a certificate for another name, never one from an untrusted CA.
    let error = open(&url(&cluster, "127.0.0.1", &format!("sslmode=verify-ca&{}", root(&certs.other_ca))))
        .err()
        .expect("untrusted and misnamed");
    assert!(error.contains("not signed by a CA docs-agent trusts"), "{error}");
    // The system's store does not hold the test's CA.
    let error = open(&url(&cluster, "localhost", "sslmode=verify-full")).err().expect("refused");
    assert!(error.contains("the system's CA store") && error.contains("sslrootcert="), "{error}");
    // The right CA, but the certificate is for localhost, not 127.0.0.1.
    let error =
        open(&url(&cluster, "127.0.0.1", &format!("sslmode=verify-full&{}", root(&certs.ca)))).err().expect("refused");
    assert!(error.contains("not for the host") && error.contains("verify-ca"), "{error}");
    // Without TLS this server refuses, and says so.
    let error = open(&url(&cluster, "localhost", "sslmode=disable")).err().expect("refused");
    assert!(error.contains("no encryption"), "{error}");
    assert_eq!(connections(&cluster).0, 0, "no connection was kept");
}

/// The binary itself: a chat's session is kept on the server over checked TLS, from inside the
/// kernel sandbox (which lets it read the CA file and nothing more of its folder).
#[test]
fn the_binary_keeps_its_sessions_over_checked_tls() {
    let Some((cluster, certs)) = Cluster::start_tls_or_skip() else { return };
    let ws = common::sample_workspace();
    let log_url = url(&cluster, "localhost", &format!("sslmode=verify-full&{}", root(&certs.ca)));
    let env = [("LLM_MODEL", "scripted"), ("DOCS_AGENT_SESSION_LOG_URL", log_url.as_str())];
    let out = common::run_input(ws.path(), &env, &["chat"], "how long is the refund window\n");
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("14 days"), "{}", out.stdout);
    let answers = cluster.psql("SELECT count(*) FROM docs_agent_events WHERE body LIKE '%\"type\":\"answer\"%'");
    assert_eq!(answers, "1", "the answer is in the database");
    // A CA file that cannot be read is named before anything starts.
    let missing = url(&cluster, "localhost", "sslmode=verify-full&sslrootcert=%2Fno%2Fsuch%2Fca.pem");
    let env = [("LLM_MODEL", "scripted"), ("DOCS_AGENT_SESSION_LOG_URL", missing.as_str())];
    let out = common::run_input(ws.path(), &env, &["chat"], "how long is the refund window\n");
    assert_eq!(out.code, 2, "a configuration error: {}", out.stderr);
    assert!(
        out.stderr.contains("sslrootcert=/no/such/ca.pem cannot be read") && !out.stderr.contains(PASSWORD),
        "{}",
        out.stderr
    );
}
