//! A throwaway PostgreSQL server for one test: Debian's PostgreSQL binaries, a fresh cluster in
//! a temporary folder, listening on a free port of 127.0.0.1 only, stopped and removed when
//! dropped. As root (CI), the server runs as the `postgres` user, since PostgreSQL refuses root.
//! Trust authentication on loopback: the URL's password is there so tests can check that it is
//! never shown.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The password in every URL (the server does not ask for one).
pub const PASSWORD: &str = "pg-test-password-8c1f3a";

/// A running server.
pub struct Cluster {
    /// Its data folder (removed after the server stops).
    dir: tempfile::TempDir,
    /// The PostgreSQL binaries.
    bin: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

/// The folder of Debian's newest PostgreSQL binaries, when they are installed.
fn installed() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dirs| dirs.flatten().map(|d| d.path().join("bin")).filter(|b| b.join("initdb").exists()).collect())
        .unwrap_or_default();
    found.sort();
    found.pop()
}

/// The folder of Debian's newest PostgreSQL binaries.
fn binaries() -> PathBuf {
    installed().unwrap_or_else(|| {
        panic!("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql (.ci/run does)")
    })
}

/// How to install what these servers need.
const INSTALL: &str = "apt-get install postgresql: Debian's package, which .ci/run installs";

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `program args…` from `bin`, as the `postgres` user when we are root.
fn as_owner(bin: &Path, program: &str, args: &[&str]) -> Command {
    let program = bin.join(program);
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program).args(args);
        command
    } else {
        let mut command = Command::new(program);
        command.args(args);
        command
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The certificates of a cluster that speaks TLS.
pub struct Certs {
    /// The CA that signed the server's certificate (PEM).
    pub ca: PathBuf,
    /// Another CA, which signed nothing the server holds.
    pub other_ca: PathBuf,
}

impl Cluster {
    /// [`Cluster::start`], or `None` when PostgreSQL is not installed: the test is skipped
    /// (`super::available`).
    pub fn start_or_skip() -> Option<Cluster> {
        super::available("PostgreSQL", installed().is_some(), INSTALL).then(Cluster::start)
    }

    /// [`Cluster::start_tls`], or `None` when PostgreSQL or the openssl command (which makes the
    /// certificates) is not installed: the test is skipped.
    pub fn start_tls_or_skip() -> Option<(Cluster, Certs)> {
        let present = super::available("PostgreSQL", installed().is_some(), INSTALL)
            && super::available("the openssl command", super::runs("openssl", "version"), "apt-get install openssl");
        present.then(Cluster::start_tls)
    }

    /// Makes and starts a cluster.
    pub fn start() -> Cluster {
        Cluster::launch(|_, _| String::new())
    }

    /// A cluster that accepts TLS connections only (`hostssl` in pg_hba.conf), with a
    /// certificate for `localhost` (not for 127.0.0.1) signed by a CA of the test's own.
    pub fn start_tls() -> (Cluster, Certs) {
        let mut certs = None;
        let cluster = Cluster::launch(|dir, data| {
            let made = make_certs(dir, data);
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
            )
            .expect("pg_hba.conf");
            certs = Some(made);
            "-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key".to_string()
        });
        (cluster, certs.expect("certificates made"))
    }

    /// Makes a cluster, lets `setup` prepare its folder and data folder (returning more
    /// server options), and starts it.
    fn launch(setup: impl FnOnce(&Path, &Path) -> String) -> Cluster {
        let bin = binaries();
        let dir = tempfile::Builder::new().prefix("docs-agent-pg-").tempdir().expect("a temporary folder");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("the data folder");
        std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).expect("mode");
        if is_root() {
            let (uid, gid) = postgres_ids();
            for path in [dir.path(), data.as_path()] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("hand the folder to postgres");
            }
        }
        let data_s = data.display().to_string();
        let out = as_owner(
            &bin,
            "initdb",
            &["-D", &data_s, "-U", "docs", "-A", "trust", "-N", "-E", "UTF8", "--no-instructions"],
        )
        .output()
        .expect("run initdb");
        assert!(out.status.success(), "initdb failed: {}", String::from_utf8_lossy(&out.stderr));
        let more = setup(dir.path(), &data);
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let options = format!(
                "-k {} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=200 {more}",
                dir.path().display()
            );
            let log = dir.path().join("server.log").display().to_string();
            let out = as_owner(&bin, "pg_ctl", &["-D", &data_s, "-l", &log, "-w", "-t", "30", "-o", &options, "start"])
                .output()
                .expect("run pg_ctl");
            if out.status.success() {
                return Cluster { dir, bin, port };
            }
            last = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        panic!("PostgreSQL did not start: {last}");
    }

    /// A URL for database `postgres` as the superuser `docs`.
    pub fn url(&self) -> String {
        format!("postgres://docs:{PASSWORD}@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs `sql` with psql, returning its output (unaligned, tuples only).
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-A",
                "-t",
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "docs",
                "-d",
                "postgres",
                "-c",
                sql,
            ])
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql `{sql}`: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

/// With openssl: a CA and a server certificate for DNS:localhost it signed (the key in `data`,
/// owned by the server's user, mode 0600 as PostgreSQL requires), and a second, unrelated CA.
fn make_certs(dir: &Path, data: &Path) -> Certs {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl (apt-get install openssl)");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    for name in ["ca", "other-ca"] {
        let (key, pem, subject) = (format!("{name}.key"), format!("{name}.pem"), format!("/CN=docs-agent test {name}"));
        let mut args = vec!["req", "-x509"];
        args.extend(ec);
        args.extend(["-keyout", &key, "-out", &pem, "-days", "2", "-subj", &subject]);
        args.extend([
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        openssl(&args);
    }
    let mut args = vec!["req"];
    args.extend(ec);
    args.extend(["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
    openssl(&args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("server.ext");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-set_serial",
        "2",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "server.crt",
    ]);
    for file in ["server.crt", "server.key"] {
        std::fs::copy(dir.join(file), data.join(file)).expect("into the data folder");
        std::fs::set_permissions(data.join(file), std::fs::Permissions::from_mode(0o600)).expect("mode");
        if is_root() {
            let (uid, gid) = postgres_ids();
            std::os::unix::fs::chown(data.join(file), Some(uid), Some(gid)).expect("hand the file to postgres");
        }
    }
    Certs { ca: dir.join("ca.pem"), other_ca: dir.join("other-ca.pem") }
}

/// The `postgres` user's uid and gid.
fn postgres_ids() -> (u32, u32) {
    let out = Command::new("id").args(["-u", "postgres"]).output().expect("id -u postgres");
    let uid = String::from_utf8_lossy(&out.stdout).trim().parse().expect("a uid for postgres");
    let out = Command::new("id").args(["-g", "postgres"]).output().expect("id -g postgres");
    let gid = String::from_utf8_lossy(&out.stdout).trim().parse().expect("a gid for postgres");
    (uid, gid)
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data").display().to_string();
        let _ = as_owner(&self.bin, "pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]).output();
    }
}
