//! Opening connections the way a test asks: TCP (from a chosen source address), TLS when the
//! target is https, then HTTP/1.1 or HTTP/2 by the version asked for and what ALPN
//! negotiated. A connection of either protocol sits behind one type.

use crate::buffers::ReadBuffers;
use crate::capture::Capture;
use crate::connection::{Connection, Exchange};
use crate::framing::DEFAULT_MAX_HEADERS;
use crate::h2::{H2Connection, H2Settings};
use crate::stream::{connect_from, Stream};
use crate::tls::TlsClient;
use crate::tunnel::{open_tunnel, Tunnel};
use barrage_metrics::ErrorKind;
use std::cell::Cell;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The HTTP version a connector speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Version {
    Http1,
    /// HTTP/2: prior knowledge on plain TCP, ALPN `h2` over TLS (required).
    Http2,
    /// HTTP/1.1 on plain TCP; over TLS whichever ALPN picked.
    #[default]
    Auto,
}

/// A connection of either protocol.
pub enum AnyConnection {
    Http1(Connection),
    Http2(H2Connection),
}

impl AnyConnection {
    pub fn is_h2(&self) -> bool {
        matches!(self, AnyConnection::Http2(_))
    }

    pub fn exchanges(&self) -> u64 {
        match self {
            AnyConnection::Http1(c) => c.exchanges(),
            AnyConnection::Http2(c) => c.exchanges(),
        }
    }

    /// See [`Connection::response_started`]: false means a failure is safe to retry.
    pub fn response_started(&self) -> bool {
        match self {
            AnyConnection::Http1(c) => c.response_started(),
            AnyConnection::Http2(c) => c.response_started(),
        }
    }

    /// Sends `request` (encoded HTTP/1.1 bytes) and reads the whole response, adding the
    /// response bytes to `received` as they arrive (they count also when the caller drops
    /// the exchange at its timeout).
    #[inline]
    pub async fn exchange(
        &mut self,
        buffers: &ReadBuffers,
        request: &[u8],
        expects_body: bool,
        capture: Option<&mut Capture<'_>>,
        received: &Cell<u64>,
    ) -> Result<Exchange, ErrorKind> {
        match self {
            AnyConnection::Http1(c) => {
                c.exchange_counted(buffers, request, expects_body, capture, received)
                    .await
            }
            // Not boxed: the HTTP/2 exchange's state (224 bytes) is smaller than the
            // HTTP/1.1 one's (296), so inline it costs HTTP/1.1 clients nothing and saves an
            // allocation per request.
            AnyConnection::Http2(c) => {
                c.exchange_counted(request, expects_body, capture, received)
                    .await
            }
        }
    }
}

/// A freshly opened connection and how long its setup phases took.
pub struct Opened {
    pub connection: AnyConnection,
    /// TCP connect.
    pub connect: Duration,
    /// TLS handshake, for TLS connections.
    pub tls: Option<Duration>,
}

/// Opens connections for one run; cheap to clone into every worker.
#[derive(Debug, Clone)]
pub struct Connector {
    pub tls: Option<TlsClient>,
    pub version: Version,
    pub h2: H2Settings,
    /// Through an HTTP proxy to an `https://` target: the tunnel to ask it for.
    pub tunnel: Option<Tunnel>,
    /// The most header fields an HTTP/1.1 response head may carry.
    pub max_headers: usize,
}

impl Default for Connector {
    fn default() -> Self {
        Self {
            tls: None,
            version: Version::default(),
            h2: H2Settings::default(),
            max_headers: DEFAULT_MAX_HEADERS,
            tunnel: None,
        }
    }
}

impl Connector {
    /// Connects to the first of `addrs` that accepts (from `local` when given), asks a proxy
    /// there for a tunnel when one is configured, then runs TLS and the HTTP/2 handshake as
    /// configured.
    pub async fn open(
        &self,
        addrs: &[SocketAddr],
        local: Option<IpAddr>,
    ) -> Result<Opened, ErrorKind> {
        let started = Instant::now();
        let mut tcp = connect_from(addrs, local).await?;
        if let Some(tunnel) = &self.tunnel {
            open_tunnel(&mut tcp, tunnel).await?;
        }
        let connect = started.elapsed();
        let (stream, tls) = match &self.tls {
            None => (Stream::Plain(tcp), None),
            Some(client) => {
                let started = Instant::now();
                let stream = client.handshake(tcp).await?;
                (stream, Some(started.elapsed()))
            }
        };
        let h2 = match self.version {
            Version::Http1 => false,
            Version::Auto => stream.alpn_is_h2(),
            Version::Http2 if stream.is_tls() && !stream.alpn_is_h2() => {
                return Err(ErrorKind::H2NotOffered)
            }
            Version::Http2 => true,
        };
        let connection = if h2 {
            AnyConnection::Http2(H2Connection::handshake(stream, &self.h2).await?)
        } else {
            AnyConnection::Http1(Connection::new(stream).with_max_headers(self.max_headers))
        };
        Ok(Opened {
            connection,
            connect,
            tls,
        })
    }
}
