//! A hyper client for the endpoint tests over every transport the target speaks: HTTP/1.1,
//! HTTP/1.1 over TLS and h2 over TLS (each asked for by ALPN, and checked), and h2c.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};

use super::client::Resp;

/// How a [`Client`] reaches the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Http1,
    Http1Tls,
    H2Tls,
    /// Cleartext HTTP/2 with prior knowledge.
    H2c,
}

impl Transport {
    pub fn tls(self) -> bool {
        matches!(self, Transport::Http1Tls | Transport::H2Tls)
    }

    pub fn h2(self) -> bool {
        matches!(self, Transport::H2Tls | Transport::H2c)
    }

    /// What `/echo` reports as the request's version.
    pub fn echo_version(self) -> &'static str {
        if self.h2() {
            "HTTP/2.0"
        } else {
            "HTTP/1.1"
        }
    }
}

enum Sender {
    Http1(hyper::client::conn::http1::SendRequest<Full<Bytes>>),
    Http2(hyper::client::conn::http2::SendRequest<Full<Bytes>>),
}

/// One connection to the target, reused for every request sent on it.
pub struct Client {
    sender: Sender,
    transport: Transport,
    authority: String,
}

impl Client {
    /// Connects (and for TLS, handshakes trusting `ca_pem` and asks for the transport's
    /// protocol by ALPN, failing unless the server agreed).
    pub async fn connect(
        addr: SocketAddr,
        transport: Transport,
        ca_pem: Option<&str>,
    ) -> Result<Client, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| e.to_string())?;
        let authority = format!("localhost:{}", addr.port());
        let sender = if transport.tls() {
            let ca = ca_pem.expect("a TLS transport needs the target's certificate");
            let alpn: &[u8] = if transport.h2() { b"h2" } else { b"http/1.1" };
            let tls = tls_connect(tcp, ca, alpn).await?;
            let negotiated = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
            if negotiated.as_deref() != Some(alpn) {
                return Err(format!("ALPN: asked {alpn:?}, got {negotiated:?}"));
            }
            handshake(tls, transport.h2()).await?
        } else {
            handshake(tcp, transport.h2()).await?
        };
        Ok(Client {
            sender,
            transport,
            authority,
        })
    }

    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Sends one request and reads the whole response; `Err` when the request got no answer.
    pub async fn send(
        &mut self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Resp, String> {
        // HTTP/2 takes the scheme and authority from the URI; HTTP/1.1 the Host header.
        let uri = if self.transport.h2() {
            let scheme = if self.transport.tls() {
                "https"
            } else {
                "http"
            };
            format!("{scheme}://{}{target}", self.authority)
        } else {
            target.to_owned()
        };
        let mut builder = hyper::Request::builder().method(method).uri(uri);
        if !self.transport.h2() {
            builder = builder.header("host", &self.authority);
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .body(Full::new(Bytes::copy_from_slice(body)))
            .map_err(|e| e.to_string())?;
        let response = match &mut self.sender {
            Sender::Http1(sender) => {
                sender.ready().await.map_err(|e| e.to_string())?;
                sender.send_request(request).await
            }
            Sender::Http2(sender) => sender.send_request(request).await,
        }
        .map_err(|e| e.to_string())?;
        let expected = if self.transport.h2() {
            hyper::Version::HTTP_2
        } else {
            hyper::Version::HTTP_11
        };
        assert_eq!(response.version(), expected, "{:?}", self.transport);
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_owned(), value)
            })
            .collect();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes()
            .to_vec();
        Ok(Resp {
            status,
            headers,
            body,
        })
    }
}

async fn tls_connect(
    tcp: tokio::net::TcpStream,
    ca_pem: &str,
    alpn: &[u8],
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).map_err(|e| e.to_string())?;
    roots.add(ca).map_err(|e| e.to_string())?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let name = ServerName::try_from("localhost").unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())
}

async fn handshake<T>(io: T, h2: bool) -> Result<Sender, String>
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = TokioIo::new(io);
    if h2 {
        let (sender, connection) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        Ok(Sender::Http2(sender))
    } else {
        let (sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        Ok(Sender::Http1(sender))
    }
}
