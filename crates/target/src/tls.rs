//! TLS for the test server: a self-signed certificate generated at start (rcgen) for
//! `localhost` and the loopback addresses, its SHA-256 fingerprint, and the rustls acceptor
//! that offers h2 and http/1.1 by ALPN (or one of them, per [`Protocols`]); the same acceptor
//! for a certificate and key from PEM files (`barrage record --tls-cert`).

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;
use std::path::Path;
use tokio_rustls::TlsAcceptor;

use crate::{Protocols, TargetError};

/// A generated certificate and its key. Clients trust it with `--cacert` (the PEM).
#[derive(Clone, PartialEq, Eq)]
pub struct SelfSigned {
    /// The certificate, PEM-encoded.
    pub cert_pem: String,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

impl std::fmt::Debug for SelfSigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfSigned")
            .field("fingerprint", &self.fingerprint())
            .finish_non_exhaustive()
    }
}

impl SelfSigned {
    /// A certificate valid for `localhost`, `127.0.0.1` and `::1`.
    pub fn generate() -> Result<SelfSigned, TargetError> {
        Self::for_names(&["localhost", "127.0.0.1", "::1"])
    }

    /// A certificate valid for `names` (DNS names or IP literals).
    pub fn for_names(names: &[&str]) -> Result<SelfSigned, TargetError> {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let certified = rcgen::generate_simple_self_signed(names)
            .map_err(|e| TargetError::Tls(e.to_string()))?;
        Ok(SelfSigned {
            cert_pem: certified.cert.pem(),
            cert_der: certified.cert.der().to_vec(),
            key_der: certified.key_pair.serialize_der(),
        })
    }

    /// `sha256:` and the certificate's SHA-256 digest in colon-separated hex.
    pub fn fingerprint(&self) -> String {
        let digest = ring::digest::digest(&ring::digest::SHA256, &self.cert_der);
        let hex: Vec<String> = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
        format!("sha256:{}", hex.join(":"))
    }

    /// The acceptor serving this certificate, offering `protocols` by ALPN.
    pub fn acceptor(&self, protocols: Protocols) -> Result<TlsAcceptor, TargetError> {
        acceptor(
            vec![CertificateDer::from(self.cert_der.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone())),
            protocols,
        )
    }
}

/// An acceptor serving the certificate chain and private key of two PEM files (a
/// certificate the user made, not a generated one), offering `protocols` by ALPN.
pub fn acceptor_from_pem_files(
    cert: &Path,
    key: &Path,
    protocols: Protocols,
) -> Result<TlsAcceptor, TargetError> {
    let named = |path: &Path, e: &dyn std::fmt::Display| {
        TargetError::Tls(format!("{}: {e}", path.display()))
    };
    let chain = CertificateDer::pem_file_iter(cert)
        .map_err(|e| named(cert, &e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| named(cert, &e))?;
    if chain.is_empty() {
        return Err(named(cert, &"holds no PEM certificate"));
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| named(key, &e))?;
    acceptor(chain, key_der, protocols)
}

fn acceptor(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    protocols: Protocols,
) -> Result<TlsAcceptor, TargetError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(chain, key))
        .map_err(|e| TargetError::Tls(e.to_string()))?;
    config.alpn_protocols = match protocols {
        Protocols::Any => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Protocols::Http1Only => vec![b"http/1.1".to_vec()],
        Protocols::Http2Only => vec![b"h2".to_vec()],
    };
    Ok(TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_a_pem_certificate_with_a_stable_fingerprint() {
        let cert = SelfSigned::generate().unwrap();
        assert!(cert.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        let fingerprint = cert.fingerprint();
        assert_eq!(fingerprint, cert.fingerprint());
        assert_eq!(fingerprint.len(), "sha256:".len() + 32 * 3 - 1);
        assert_ne!(fingerprint, SelfSigned::generate().unwrap().fingerprint());
        assert!(cert.acceptor(Protocols::Any).is_ok());
    }
}
