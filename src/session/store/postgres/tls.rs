//! TLS to the session database, as libpq's `sslmode` and `sslrootcert` say (rustls, through
//! `tokio-postgres-rustls`): an operations team's server URL means here what it means to `psql`.
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (the default) | when the server offers it | not checked (checked as `verify-ca` with `sslrootcert`) |
//! | `require` | always | not checked (checked as `verify-ca` with `sslrootcert`) |
//! | `verify-ca` | always | signed by the CA of `sslrootcert` (required) |
//! | `verify-full` | always | signed by a trusted CA, and for the host connected to |
//!
//! The trusted CAs are `sslrootcert`'s (a PEM file, read when connecting), else
//! (`verify-full`, or `sslrootcert=system`) the system's store. Even unchecked, a handshake's
//! signatures are verified, and SCRAM's channel binding ties the password exchange to the TLS
//! session (for certificates signed with ECDSA or RSA PKCS#1; not Ed25519 or RSA-PSS).
//! rustls is stricter than libpq's OpenSSL about certificates: the host name must be in the
//! subject alternative names (a name in the CN alone is not read), and a server's own
//! certificate must not be a CA's.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Why a URL's `sslmode` and `sslrootcert` cannot be used together, or at all. Each message
/// follows "session.log_url " and says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsParamsError {
    /// An `sslmode` docs-agent does not take (`allow`, or a typo).
    #[error("its sslmode={mode} is not one docs-agent knows: disable, prefer, require, verify-ca or verify-full")]
    UnknownMode {
        /// The value as written.
        mode: String,
    },
    /// `sslrootcert=system` with a mode weaker than `verify-full`.
    #[error(
        "its sslrootcert=system needs sslmode=verify-full (the system's CAs vouch for names), not sslmode={}",
        mode.name()
    )]
    SystemNeedsVerifyFull {
        /// The mode asked for.
        mode: SslMode,
    },
    /// A CA file with TLS off.
    #[error("it names an sslrootcert with sslmode=disable: drop one of them")]
    RootWithoutTls,
    /// `verify-ca` with no CA file.
    #[error(
        "its sslmode=verify-ca needs the CA to trust: add sslrootcert=/path/ca.pem, or use sslmode=verify-full with the system's CAs"
    )]
    VerifyCaWithoutRoot,
}

/// Why TLS to the database cannot be set up: the CA file, or the system's store, or rustls.
/// Each message follows "session.log_url " (the CA file's) or stands alone.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The CA file cannot be read.
    #[error("its sslrootcert={} cannot be read: {source}", file.display())]
    RootUnreadable {
        /// The file.
        file: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The CA file is not PEM.
    #[error("its sslrootcert={} is not a PEM file of certificates: {source}", file.display())]
    RootNotPem {
        /// The file.
        file: PathBuf,
        /// What the PEM reader said.
        source: rustls::pki_types::pem::Error,
    },
    /// The CA file holds no certificate.
    #[error("its sslrootcert={} holds no certificate (-----BEGIN CERTIFICATE-----)", file.display())]
    RootEmpty {
        /// The file.
        file: PathBuf,
    },
    /// None of the CA file's certificates can be a trust anchor.
    #[error("its sslrootcert holds {refused} certificate(s), none usable as a CA")]
    RootNoCa {
        /// How many were refused.
        refused: usize,
    },
    /// rustls would not build a verifier from the CA file's certificates.
    #[error("cannot use its sslrootcert: {0}")]
    RootUnusable(#[source] rustls::client::VerifierBuilderError),
    /// The system's CA store cannot be read.
    #[error("cannot read the system's CA store: {0}")]
    SystemStore(#[source] rustls::Error),
    /// rustls would not set up the client's protocol versions.
    #[error("cannot set up TLS: {0}")]
    Setup(#[source] rustls::Error),
}

/// libpq's `sslmode`, the values docs-agent takes (`allow`, which tries without TLS first, is
/// refused: `prefer` does what it is used for, with TLS first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// No TLS.
    Disable,
    /// TLS when the server offers it; the certificate is not checked.
    Prefer,
    /// TLS always; the certificate is not checked.
    Require,
    /// TLS always; the certificate chain is checked, not the host name.
    VerifyCa,
    /// TLS always; the certificate chain and the host name are checked.
    VerifyFull,
}

impl SslMode {
    /// Reads a `sslmode` value.
    fn parse(word: &str) -> Result<SslMode, TlsParamsError> {
        match word {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            other => Err(TlsParamsError::UnknownMode { mode: other.to_string() }),
        }
    }

    /// The name, as written in a URL.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// What `tokio-postgres` negotiates: whether TLS is tried, and whether it is a must.
    pub fn wire(self) -> tokio_postgres::config::SslMode {
        match self {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => tokio_postgres::config::SslMode::Require,
        }
    }
}

/// How connections to the database are protected, as the URL says: the mode and the CA file.
/// Parsing reads no file; [`Tls::connector`] reads the CA file (the kernel sandbox lets a
/// process read it: [`Tls::files`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Tls {
    /// The mode in effect (`prefer` or `require` with `sslrootcert` is `verify-ca`, as in libpq).
    mode: SslMode,
    /// The CA file, when one was named.
    root_file: Option<PathBuf>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sslmode={}", self.mode.name())?;
        if let Some(file) = &self.root_file {
            write!(f, " sslrootcert={}", file.display())?;
        }
        Ok(())
    }
}

impl Tls {
    /// From a URL's `sslmode` and `sslrootcert` (each absent or as written). As in libpq,
    /// `sslrootcert=system` means the system's store and `verify-full`; `verify-ca` needs a CA
    /// file (against the system's store, a certificate any public CA issued for any name would
    /// pass).
    pub fn from_params(mode: Option<&str>, root_file: Option<&str>) -> Result<Tls, TlsParamsError> {
        let asked = mode.map(SslMode::parse).transpose()?;
        let root_file = root_file.filter(|f| !f.is_empty());
        if root_file == Some("system") {
            return match asked {
                None | Some(SslMode::VerifyFull) => Ok(Tls { mode: SslMode::VerifyFull, root_file: None }),
                Some(mode) => Err(TlsParamsError::SystemNeedsVerifyFull { mode }),
            };
        }
        let root_file = root_file.map(PathBuf::from);
        let mode = match (asked.unwrap_or(SslMode::Prefer), &root_file) {
            (SslMode::Prefer | SslMode::Require, Some(_)) => SslMode::VerifyCa,
            (SslMode::Disable, Some(_)) => {
                return Err(TlsParamsError::RootWithoutTls);
            }
            (SslMode::VerifyCa, None) => {
                return Err(TlsParamsError::VerifyCaWithoutRoot);
            }
            (mode, _) => mode,
        };
        Ok(Tls { mode, root_file })
    }

    /// The mode in effect.
    pub fn mode(&self) -> SslMode {
        self.mode
    }

    /// The files a connection reads: the CA file, when one is named.
    pub fn files(&self) -> Vec<PathBuf> {
        self.root_file.iter().cloned().collect()
    }

    /// Reads the CA file, when one is named, as a connection will (the configuration's check).
    pub fn check(&self) -> Result<(), TlsSetupError> {
        self.root_file.as_deref().map_or(Ok(()), |file| read_roots(file).map(drop))
    }

    /// The connector for `tokio-postgres`: reads the CA file, or the system's store when
    /// certificates are checked without one.
    pub fn connector(&self) -> Result<MakeRustlsConnect, TlsSetupError> {
        let roots = self.root_file.as_deref().map(read_roots).transpose()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match self.mode {
            SslMode::Disable | SslMode::Prefer | SslMode::Require => Arc::new(Unchecked(provider.clone())),
            SslMode::VerifyCa => Arc::new(ChainOnly(trusted(roots, &provider)?)),
            SslMode::VerifyFull => trusted(roots, &provider)?,
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsSetupError::Setup)?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }

    /// What to do about a connection that failed: a hint when TLS is the cause (rustls's
    /// `UnknownIssuer` and `NotValidForName…`, or a server without TLS), else nothing.
    pub fn hint(&self, detail: &str) -> Option<String> {
        let detail = detail.to_ascii_lowercase();
        if detail.contains("not valid for name") || detail.contains("notvalidforname") {
            let instead = if self.root_file.is_some() { ", or use sslmode=verify-ca" } else { "" };
            Some(format!(
                "the server's certificate is not for the host in session.log_url: connect by the name it was issued for{instead}"
            ))
        } else if detail.contains("unknownissuer") {
            let whose = match &self.root_file {
                Some(file) => format!("sslrootcert={}", file.display()),
                None => "the system's CA store".to_string(),
            };
            Some(format!(
                "the server's certificate is not signed by a CA docs-agent trusts ({whose}): name its CA with sslrootcert=/path/ca.pem in session.log_url"
            ))
        } else if detail.contains("server does not support tls") {
            Some(format!(
                "the server does not offer TLS, and sslmode={} requires it: turn ssl on at the server (a Unix socket has no TLS: sslmode=disable there)",
                self.mode.name()
            ))
        } else {
            None
        }
    }
}

/// The certificates of a PEM file.
fn read_roots(file: &Path) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let bytes =
        std::fs::read(file).map_err(|source| TlsSetupError::RootUnreadable { file: file.to_path_buf(), source })?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsSetupError::RootNotPem { file: file.to_path_buf(), source })?;
    if certs.is_empty() {
        return Err(TlsSetupError::RootEmpty { file: file.to_path_buf() });
    }
    Ok(certs)
}

/// A verifier of the full chain and the host name: against `roots`, or the system's store.
fn trusted(
    roots: Option<Vec<CertificateDer<'static>>>,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, TlsSetupError> {
    match roots {
        Some(certs) => {
            let mut store = RootCertStore::empty();
            let (_, refused) = store.add_parsable_certificates(certs);
            if store.is_empty() {
                return Err(TlsSetupError::RootNoCa { refused });
            }
            let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
                .build()
                .map_err(TlsSetupError::RootUnusable)?;
            Ok(verifier)
        }
        None => {
            let verifier =
                rustls_platform_verifier::Verifier::new(provider.clone()).map_err(TlsSetupError::SystemStore)?;
            Ok(Arc::new(verifier))
        }
    }
}

/// `verify-ca`: the chain is checked as `verify-full` does; a certificate for another host
/// name passes (the name is checked last, after the chain).
#[derive(Debug)]
struct ChainOnly(Arc<dyn ServerCertVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` (libpq's meaning): the certificate is not checked; the handshake's
/// signatures are, so the session is with the holder of the certificate's key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::{SslMode, Tls, TlsParamsError, TlsSetupError};

    /// libpq's modes; `require` with a CA file checks the chain; bad values and files are named.
    #[test]
    fn modes_read_as_libpq_reads_them() {
        assert_eq!(Tls::from_params(None, None).expect("default").mode(), SslMode::Prefer);
        assert_eq!(Tls::from_params(Some("disable"), None).expect("disable").mode(), SslMode::Disable);
        let system = Tls::from_params(Some("verify-full"), None).expect("system roots");
        assert_eq!(system.mode(), SslMode::VerifyFull);
        assert!(system.connector().is_ok() && system.files().is_empty());
        assert_eq!(Tls::from_params(None, Some("system")).expect("libpq's system").mode(), SslMode::VerifyFull);
        let error = Tls::from_params(Some("require"), Some("system")).expect_err("weaker than verify-full").to_string();
        assert!(error.contains("sslrootcert=system needs sslmode=verify-full"), "{error}");
        let error = Tls::from_params(Some("verify-ca"), None).expect_err("any public CA would do").to_string();
        assert!(error.contains("verify-ca needs") && error.contains("sslrootcert="), "{error}");
        let error = Tls::from_params(Some("allow"), None).expect_err("allow").to_string();
        assert!(error.contains("sslmode=allow") && error.contains("verify-full"), "{error}");
        let missing = Tls::from_params(Some("require"), Some("/no/such/ca.pem")).expect("parsed, not read");
        assert_eq!(missing.mode(), SslMode::VerifyCa, "require with a CA file checks the chain");
        assert_eq!(missing.files(), vec![std::path::PathBuf::from("/no/such/ca.pem")]);
        let error = missing.connector().err().expect("missing file").to_string();
        assert!(error.contains("sslrootcert=/no/such/ca.pem cannot be read"), "{error}");
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let error = Tls::from_params(Some("verify-ca"), empty.to_str())
            .expect("parsed")
            .connector()
            .err()
            .expect("none")
            .to_string();
        assert!(error.contains("holds no certificate"), "{error}");
        let error = Tls::from_params(Some("disable"), empty.to_str()).expect_err("both").to_string();
        assert!(error.contains("sslmode=disable"), "{error}");
    }

    /// Each way a URL's sslmode and sslrootcert are refused, and its message word for word.
    #[test]
    fn params_errors_say_what_to_write() {
        #[rustfmt::skip]
        let cases = [
            (Some("allow"), None, TlsParamsError::UnknownMode { mode: "allow".into() },
             "its sslmode=allow is not one docs-agent knows: disable, prefer, require, verify-ca or verify-full"),
            (Some("require"), Some("system"), TlsParamsError::SystemNeedsVerifyFull { mode: SslMode::Require },
             "its sslrootcert=system needs sslmode=verify-full (the system's CAs vouch for names), not sslmode=require"),
            (Some("disable"), Some("/ca.pem"), TlsParamsError::RootWithoutTls,
             "it names an sslrootcert with sslmode=disable: drop one of them"),
            (Some("verify-ca"), None, TlsParamsError::VerifyCaWithoutRoot,
             "its sslmode=verify-ca needs the CA to trust: add sslrootcert=/path/ca.pem, or use sslmode=verify-full with the system's CAs"),
        ];
        for (mode, root, want, message) in cases {
            assert_eq!(Tls::from_params(mode, root).err(), Some(want.clone()), "{mode:?} {root:?}");
            assert_eq!(want.to_string(), message);
        }
    }

    /// A CA file that cannot be read, is not PEM or holds no certificate is refused, naming it.
    #[test]
    fn setup_errors_name_the_ca_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let broken = dir.path().join("broken.pem");
        std::fs::write(&broken, "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
            .expect("write");
        let missing = dir.path().join("missing.pem");
        let check =
            |file: &std::path::Path| Tls::from_params(Some("verify-ca"), file.to_str()).expect("parsed").check();
        let error = check(&missing).expect_err("missing");
        assert!(matches!(error, TlsSetupError::RootUnreadable { .. }), "{error:?}");
        assert!(error.to_string().starts_with(&format!("its sslrootcert={} cannot be read: ", missing.display())));
        let error = check(&broken).expect_err("not PEM");
        assert!(matches!(error, TlsSetupError::RootNotPem { .. }), "{error:?}");
        assert!(
            error
                .to_string()
                .starts_with(&format!("its sslrootcert={} is not a PEM file of certificates: ", broken.display()))
        );
        let error = check(&empty).expect_err("no certificate");
        assert!(matches!(error, TlsSetupError::RootEmpty { .. }), "{error:?}");
        assert_eq!(
            error.to_string(),
            format!("its sslrootcert={} holds no certificate (-----BEGIN CERTIFICATE-----)", empty.display())
        );
        assert_eq!(
            TlsSetupError::RootNoCa { refused: 2 }.to_string(),
            "its sslrootcert holds 2 certificate(s), none usable as a CA"
        );
    }
}
