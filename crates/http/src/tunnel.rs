//! HTTP proxies for `https://` targets: a `CONNECT host:port` tunnel (RFC 9110 §9.3.6) opened
//! on the TCP connection to the proxy before the TLS handshake with the target. (Plain
//! `http://` targets go through a proxy as absolute-form requests; see the engine.)

use crate::classify::classify_io_error;
use barrage_metrics::ErrorKind;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest CONNECT response head accepted.
const MAX_HEAD: usize = 16 * 1024;

/// Where a tunnel goes, and the proxy's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tunnel {
    /// The target's `host:port`.
    pub authority: String,
    /// A `Proxy-Authorization` value, when the proxy needs one.
    pub proxy_authorization: Option<String>,
}

/// Asks the proxy on `tcp` for a tunnel; a refusal (a status other than 2xx) is a
/// connect failure, an answer that is not HTTP a malformed one.
pub(crate) async fn open_tunnel(tcp: &mut TcpStream, tunnel: &Tunnel) -> Result<(), ErrorKind> {
    let mut request = format!("CONNECT {0} HTTP/1.1\r\nHost: {0}\r\n", tunnel.authority);
    if let Some(credentials) = &tunnel.proxy_authorization {
        request.push_str("Proxy-Authorization: ");
        request.push_str(credentials);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    tcp.write_all(request.as_bytes())
        .await
        .map_err(|e| classify_io_error(&e, false))?;
    let mut head = Vec::with_capacity(256);
    let mut chunk = [0u8; 512];
    loop {
        let n = tcp
            .read(&mut chunk)
            .await
            .map_err(|e| classify_io_error(&e, false))?;
        if n == 0 {
            return Err(ErrorKind::Closed);
        }
        head.extend_from_slice(&chunk[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            // The target speaks only after our TLS hello: nothing may follow the head.
            if end + 4 != head.len() {
                return Err(ErrorKind::Malformed);
            }
            break;
        }
        if head.len() > MAX_HEAD {
            return Err(ErrorKind::Malformed);
        }
    }
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(&head) {
        Ok(httparse::Status::Complete(_)) => match response.code {
            Some(200..=299) => Ok(()),
            _ => Err(ErrorKind::Connect),
        },
        _ => Err(ErrorKind::Malformed),
    }
}
