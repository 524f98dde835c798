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
        if let Some(path) = &settings.ca_file {
            for cert in read_certificates(path)? {
                roots
                    .add(cert)
                    .map_err(|e| TlsConfigError::BadCertificate {
                        path: path.clone(),
                        reason: e.to_string(),
                    })?;
            }
        }
        builder.with_root_certificates(roots)
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
