//! The byte stream under a connection: a plain TCP socket or TLS over one. One enum rather
//! than a generic parameter, so a client holds either in the same slot; the plain path costs
//! one branch per read or write.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::client::TlsStream;

use crate::classify::classify_io_error;
use barrage_metrics::ErrorKind;

/// A connected stream, plain or TLS.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// Whether TLS negotiated HTTP/2 by ALPN.
    pub fn alpn_is_h2(&self) -> bool {
        match self {
            Stream::Plain(_) => false,
            Stream::Tls(tls) => tls.get_ref().1.alpn_protocol() == Some(b"h2"),
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }
}

impl From<TcpStream> for Stream {
    fn from(stream: TcpStream) -> Self {
        Stream::Plain(stream)
    }
}

impl AsyncRead for Stream {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }
}

/// Opens a TCP connection to the first of `addrs` that accepts, bound to `local` first when
/// given (to spread connections over source addresses), with Nagle off.
pub async fn connect_from(
    addrs: &[SocketAddr],
    local: Option<IpAddr>,
) -> Result<TcpStream, ErrorKind> {
    let mut last = ErrorKind::Connect;
    for addr in addrs {
        let attempt = match local {
            None => TcpStream::connect(addr).await,
            Some(ip) => bind_and_connect(*addr, ip).await,
        };
        match attempt {
            Ok(stream) => {
                // A request is written in one call; Nagle would only delay it.
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Err(e) => last = classify_io_error(&e, true),
        }
    }
    Err(last)
}

async fn bind_and_connect(addr: SocketAddr, local: IpAddr) -> io::Result<TcpStream> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.bind(SocketAddr::new(local, 0))?;
    socket.connect(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn binds_the_source_address_before_connecting() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let local: IpAddr = "127.0.0.7".parse().unwrap();
        let stream = connect_from(&[addr], Some(local)).await.unwrap();
        assert_eq!(stream.local_addr().unwrap().ip(), local);
        let (_, peer) = listener.accept().await.unwrap();
        assert_eq!(peer.ip(), local);
    }
}
