//! The TLS client: a rustls configuration built once per run from the test's TLS options
//! (roots, `--insecure`, client certificate, versions, ALPN, resumption), the handshake over a
//! connected socket, and the classification of handshake failures into error kinds.

use crate::classify::classify_io_error;
use crate::stream::Stream;
use barrage_metrics::ErrorKind;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// Which application protocols to offer by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    /// `http/1.1` only.
    Http1,
    /// `h2` only.
    Http2,
    /// `h2` preferred, `http/1.1` accepted.
    Both,
}

/// What the TLS client is asked to do; paths are read when the configuration is built.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// PEM file of extra trusted roots.
    pub ca_file: Option<PathBuf>,
    /// Accept any certificate.
    pub insecure: bool,
    /// Client certificate chain and private key (PEM files).
    pub client_cert: Option<(PathBuf, PathBuf)>,
    pub tls12: bool,
    pub tls13: bool,
    pub resumption: bool,
    pub alpn: Alpn,
    /// SNI and verified name; the target host when `None`.
    pub server_name: Option<String>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            ca_file: None,
            insecure: false,
            client_cert: None,
            tls12: true,
            tls13: true,
            resumption: true,
            alpn: Alpn::Both,
            server_name: None,
        }
    }
}

/// Why a TLS configuration could not be built; names the file or setting at fault.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("cannot read `{path}`: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("`{0}` holds no PEM certificate")]
    NoCertificate(PathBuf),
    #[error("`{path}`: {reason}")]
    BadCertificate { path: PathBuf, reason: String },
    #[error("client certificate rejected: {0}")]
    ClientAuth(String),
    #[error("no TLS version left to offer (TLS 1.2 and 1.3 are both off)")]
    NoVersion,
    #[error("`{0}` is not a valid TLS server name")]
    BadServerName(String),
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let read_error = |e: rustls::pki_types::pem::Error| TlsConfigError::Read {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(read_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read_error)?;
    if certs.is_empty() {
        return Err(TlsConfigError::NoCertificate(path.to_path_buf()));
    }
    Ok(certs)
}

/// Builds the client configuration. System roots are loaded unless verification is off;
/// unreadable system roots are skipped (a `--cacert` may be all the run needs).
pub fn client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, TlsConfigError> {
    let provider = provider();
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (settings.tls13, &rustls::version::TLS13),
        (settings.tls12, &rustls::version::TLS12),
    ]
    .into_iter()
    .filter_map(|(on, version)| on.then_some(version))
    .collect();
    if versions.is_empty() {
        return Err(TlsConfigError::NoVersion);
    }
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| TlsConfigError::ClientAuth(e.to_string()))?;
    let builder = if settings.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        let mut given = Vec::new();
        if let Some(path) = &settings.ca_file {
            for cert in read_certificates(path)? {
                roots
                    .add(cert.clone())
                    .map_err(|e| TlsConfigError::BadCertificate {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?;
                given.push(cert);
            }
        }
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::clone(&provider),
        )
        .build()
        .map_err(|e| TlsConfigError::ClientAuth(e.to_string()))?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(TrustGivenCertificates { webpki, given }))
    };
    let mut config = match &settings.client_cert {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = read_certificates(cert)?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsConfigError::Read {
                path: key.clone(),
                reason: e.to_string(),
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsConfigError::ClientAuth(e.to_string()))?
        }
    };
    config.alpn_protocols = match settings.alpn {
        Alpn::Http1 => vec![b"http/1.1".to_vec()],
        Alpn::Http2 => vec![b"h2".to_vec()],
        Alpn::Both => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    if !settings.resumption {
        config.resumption = Resumption::disabled();
    }
    Ok(Arc::new(config))
}

/// Everything a worker needs to put TLS over a new socket: the shared configuration (and
/// with it the session cache resumption draws on) and the name to present.
#[derive(Clone)]
pub struct TlsClient {
    connector: TlsConnector,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsClient")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl TlsClient {
    /// `host` is the target host, used when the settings name no server.
    pub fn new(settings: &TlsSettings, host: &str) -> Result<TlsClient, TlsConfigError> {
        let config = client_config(settings)?;
        let name = settings.server_name.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_string())
            .map_err(|_| TlsConfigError::BadServerName(name.to_string()))?;
        Ok(TlsClient {
            connector: TlsConnector::from(config),
            server_name,
        })
    }

    /// The same configuration (and session cache) presenting `host` instead: for a
    /// connection to another origin than the target (a cross-origin redirect).
    pub fn for_host(&self, host: &str) -> Result<TlsClient, TlsConfigError> {
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|_| TlsConfigError::BadServerName(host.to_string()))?;
        Ok(TlsClient {
            connector: self.connector.clone(),
            server_name,
        })
    }

    /// Runs the handshake over `tcp`.
    pub async fn handshake(&self, tcp: TcpStream) -> Result<Stream, ErrorKind> {
        match self.connector.connect(self.server_name.clone(), tcp).await {
            Ok(tls) => Ok(Stream::Tls(Box::new(tls))),
            Err(e) => Err(classify_tls_error(&e)),
        }
    }
}

/// Maps a failed handshake to its kind: certificate problems by cause, transport failures as
/// the I/O kinds they are, everything else as a generic TLS failure.
pub fn classify_tls_error(error: &io::Error) -> ErrorKind {
    let rustls_error = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match rustls_error {
        Some(rustls::Error::InvalidCertificate(cert)) => match cert {
            CertificateError::UnknownIssuer => ErrorKind::TlsUnknownCa,
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                ErrorKind::TlsBadName
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => ErrorKind::TlsExpired,
            _ => ErrorKind::TlsBadCertificate,
        },
        Some(_) => ErrorKind::Tls,
        None => match error.kind() {
            io::ErrorKind::InvalidData | io::ErrorKind::Other => ErrorKind::Tls,
            _ => classify_io_error(error, false),
        },
    }
}

/// The usual web PKI checks, and, like curl, a certificate given with `--cacert` is trusted
/// for itself even when the chain checks reject it (a self-signed CA:TRUE certificate used
/// as the server's own, as `openssl req -x509` makes): its name must still match.
#[derive(Debug)]
struct TrustGivenCertificates {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    given: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for TrustGivenCertificates {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verified {
            // Only the chain-shape rejections (webpki's CaUsedAsEndEntity and kin come as
            // `Other`); expiry, names and signatures keep their verdicts.
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(_)))
                if self.given.iter().any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `--insecure`: every certificate is accepted; signatures are still checked so the
/// handshake itself stays well-formed.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
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
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::pki_types::PrivatePkcs8KeyDer;
    use rustls::ServerConfig;
    use std::net::SocketAddr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    struct Cert {
        pem: String,
        der: CertificateDer<'static>,
        key: Vec<u8>,
        key_pem: String,
    }

    fn cert(expired: bool) -> Cert {
        cert_with(expired, false)
    }

    fn cert_with(expired: bool, is_ca: bool) -> Cert {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        if is_ca {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        if expired {
            params.not_before = rcgen::date_time_ymd(2001, 1, 1);
            params.not_after = rcgen::date_time_ymd(2002, 1, 1);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Cert {
            pem: cert.pem(),
            der: cert.der().clone(),
            key: key.serialize_der(),
            key_pem: key.serialize_pem(),
        }
    }

    /// A TLS server that answers every request with `200 ok`, or requires a client
    /// certificate signed by `client_root` first.
    async fn serve(cert: &Cert, client_root: Option<CertificateDer<'static>>) -> SocketAddr {
        let provider = provider();
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match client_root {
            None => builder.with_no_client_auth(),
            Some(root) => {
                let mut roots = RootCertStore::empty();
                roots.add(root).unwrap();
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider,
                )
                .build()
                .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
        };
        let config = builder
            .with_single_cert(
                vec![cert.der.clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key.clone())),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = tls.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                        let _ = tls
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .await;
                        let _ = tls.flush().await;
                    }
                });
            }
        });
        addr
    }

    fn pem_file(name: &str, pem: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!("barrage-http-{}-{name}", std::process::id()));
        std::fs::write(&path, pem).unwrap();
        path
    }

    /// Handshakes (and, when it succeeds, one GET) against `addr`.
    async fn get(addr: SocketAddr, settings: &TlsSettings) -> Result<u16, ErrorKind> {
        let client = TlsClient::new(settings, "localhost").unwrap();
        let tcp = crate::connect(&[addr]).await?;
        let stream = client.handshake(tcp).await?;
        let mut connection = crate::Connection::new(stream);
        let request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
        let buffers = crate::ReadBuffers::new();
        Ok(connection
            .exchange(&buffers, request, true, None)
            .await?
            .status)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_self_signed_ca_certificate_given_with_cacert_is_trusted_for_itself() {
        let own = cert_with(false, true);
        let addr = serve(&own, None).await;
        let trusted = TlsSettings {
            ca_file: Some(pem_file("own-ca.pem", &own.pem)),
            ..TlsSettings::default()
        };
        assert_eq!(get(addr, &trusted).await, Ok(200));
        let wrong_name = TlsSettings {
            server_name: Some("other.example".into()),
            ..trusted.clone()
        };
        assert_eq!(get(addr, &wrong_name).await, Err(ErrorKind::TlsBadName));
        let other = cert_with(false, true);
        let untrusted = TlsSettings {
            ca_file: Some(pem_file("other-ca.pem", &other.pem)),
            ..TlsSettings::default()
        };
        assert!(get(addr, &untrusted).await.is_err());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn verifies_certificates_and_classifies_each_failure() {
        let good = cert(false);
        let addr = serve(&good, None).await;
        let trusted = TlsSettings {
            ca_file: Some(pem_file("good.pem", &good.pem)),
            ..TlsSettings::default()
        };
        assert_eq!(get(addr, &trusted).await, Ok(200));
        assert_eq!(
            get(addr, &TlsSettings::default()).await,
            Err(ErrorKind::TlsUnknownCa)
        );
        let wrong_name = TlsSettings {
            server_name: Some("other.example".into()),
            ..trusted.clone()
        };
        assert_eq!(get(addr, &wrong_name).await, Err(ErrorKind::TlsBadName));
        let insecure = TlsSettings {
            insecure: true,
            ..TlsSettings::default()
        };
        assert_eq!(get(addr, &insecure).await, Ok(200));
        for (tls12, tls13) in [(true, false), (false, true)] {
            let pinned = TlsSettings {
                tls12,
                tls13,
                ..trusted.clone()
            };
            assert_eq!(
                get(addr, &pinned).await,
                Ok(200),
                "tls12 {tls12} tls13 {tls13}"
            );
        }

        let old = cert(true);
        let addr = serve(&old, None).await;
        let trusted_old = TlsSettings {
            ca_file: Some(pem_file("old.pem", &old.pem)),
            ..TlsSettings::default()
        };
        assert_eq!(get(addr, &trusted_old).await, Err(ErrorKind::TlsExpired));
    }

    /// Whether a fresh connection's handshake resumed an earlier session.
    async fn resumed(addr: SocketAddr, client: &TlsClient) -> bool {
        let tcp = crate::connect(&[addr]).await.unwrap();
        let Stream::Tls(mut tls) = client.handshake(tcp).await.unwrap() else {
            panic!("a TLS stream");
        };
        // TLS 1.3 tickets arrive after the handshake: one exchange makes sure they are read.
        tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 256];
        let _ = tls.read(&mut buf).await.unwrap();
        tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn sessions_resume_unless_switched_off() {
        let good = cert(false);
        let addr = serve(&good, None).await;
        let trusted = TlsSettings {
            ca_file: Some(pem_file("resume.pem", &good.pem)),
            ..TlsSettings::default()
        };
        let client = TlsClient::new(&trusted, "localhost").unwrap();
        assert!(
            !resumed(addr, &client).await,
            "the first handshake is a full one"
        );
        assert!(resumed(addr, &client).await, "the second resumes");
        let off = TlsSettings {
            resumption: false,
            ..trusted
        };
        let client = TlsClient::new(&off, "localhost").unwrap();
        assert!(!resumed(addr, &client).await);
        assert!(
            !resumed(addr, &client).await,
            "no resumption when switched off"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn presents_a_client_certificate_when_asked() {
        let server = cert(false);
        let client = cert(false);
        let addr = serve(&server, Some(client.der.clone())).await;
        let ca = pem_file("server.pem", &server.pem);
        let client_cert = pem_file("client.pem", &client.pem);
        let client_key = pem_file("client.key", &client.key_pem);
        let with_cert = TlsSettings {
            ca_file: Some(ca.clone()),
            client_cert: Some((client_cert, client_key)),
            ..TlsSettings::default()
        };
        assert_eq!(get(addr, &with_cert).await, Ok(200));
        let without = TlsSettings {
            ca_file: Some(ca),
            ..TlsSettings::default()
        };
        assert!(get(addr, &without).await.is_err());
    }

    #[test]
    fn unreadable_files_and_no_versions_are_config_errors() {
        let missing = TlsSettings {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsSettings::default()
        };
        let error = client_config(&missing).unwrap_err().to_string();
        assert!(error.contains("/nonexistent/ca.pem"), "{error}");
        let none = TlsSettings {
            tls12: false,
            tls13: false,
            ..TlsSettings::default()
        };
        assert!(matches!(
            client_config(&none),
            Err(TlsConfigError::NoVersion)
        ));
    }
}
