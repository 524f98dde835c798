//! One HTTP/2 connection (h2c by prior knowledge or h2 negotiated over TLS) on the `h2` crate.
//! Requests arrive as the same HTTP/1.1 bytes the HTTP/1.1 path writes (pre-encoded or
//! rendered) and are turned into HTTP/2 header blocks here, so every request source works
//! over both protocols; HTTP/1.1-only headers (Host, Connection...) are mapped or dropped.
//! The connection's frames are driven by a task of its own; clones of the handle share it.

use crate::capture::Capture;
use crate::classify::classify_io_error;
use crate::connection::Exchange;
use crate::stream::Stream;
use barrage_metrics::ErrorKind;
use bytes::Bytes;
use h2::client::SendRequest;
use http::uri::{Authority, Scheme};
use http::{HeaderName, HeaderValue, Method, Request, Uri};
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// HTTP/2 settings the client announces; `None` keeps the protocol default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H2Settings {
    pub initial_window_size: Option<u32>,
    pub initial_connection_window_size: Option<u32>,
}

/// Headers of the request's head that HTTP/2 forbids (RFC 9113 §8.2.2) or carries
/// otherwise (`Host` becomes `:authority`).
fn is_connection_specific(name: &[u8]) -> bool {
    [
        &b"host"[..],
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
        b"te",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// Maps an `h2` failure to its kind.
pub fn classify_h2_error(error: &h2::Error) -> ErrorKind {
    if let Some(io) = error.get_io() {
        return classify_io_error(io, false);
    }
    if error.is_go_away() {
        return ErrorKind::H2GoAway;
    }
    if error.is_reset() {
        return if error.reason() == Some(h2::Reason::REFUSED_STREAM) {
            ErrorKind::H2StreamLimit
        } else {
            ErrorKind::H2StreamReset
        };
    }
    ErrorKind::H2Protocol
}

/// The identity of an HTTP/2 connection; equal for every handle on the same connection.
#[derive(Debug, Clone)]
pub struct H2Id(Arc<AtomicBool>);

impl PartialEq for H2Id {
    fn eq(&self, other: &H2Id) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for H2Id {}

/// A handle on an HTTP/2 connection. Cloning it gives another handle on the same
/// connection (streams multiplex); the connection closes when every handle is gone.
#[derive(Clone)]
pub struct H2Connection {
    send: SendRequest<Bytes>,
    scheme: Scheme,
    /// The last `Host` value seen and its parsed form: requests of one target repeat it.
    authority: Option<(Bytes, Authority)>,
    exchanges: u64,
    /// Whether the last exchange opened its stream; one that failed before was refused by a
    /// connection the server had already closed, and is safe to retry.
    stream_opened: bool,
    /// Set by the connection's task when the server ended it with GOAWAY: `h2` reports the
    /// streams it cut as broken pipes, this tells them apart from a plain disconnect.
    went_away: Arc<AtomicBool>,
}

impl H2Connection {
    /// Runs the HTTP/2 handshake over `stream` and spawns the task that drives the
    /// connection (on the current runtime).
    pub async fn handshake(
        stream: Stream,
        settings: &H2Settings,
    ) -> Result<H2Connection, ErrorKind> {
        let scheme = if stream.is_tls() {
            Scheme::HTTPS
        } else {
            Scheme::HTTP
        };
        let mut builder = h2::client::Builder::new();
        builder.enable_push(false);
        if let Some(size) = settings.initial_window_size {
            builder.initial_window_size(size);
        }
        if let Some(size) = settings.initial_connection_window_size {
            builder.initial_connection_window_size(size);
        }
        let (send, connection) = builder
            .handshake(stream)
            .await
            .map_err(|e| classify_h2_error(&e))?;
        let went_away = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&went_away);
        tokio::spawn(async move {
            // Its end (GOAWAY, reset, close) reaches the streams as their errors.
            if let Err(e) = connection.await {
                if e.is_go_away() {
                    flag.store(true, Ordering::Relaxed);
                }
            }
        });
        Ok(H2Connection {
            send,
            scheme,
            authority: None,
            exchanges: 0,
            stream_opened: false,
            went_away,
        })
    }

    pub fn exchanges(&self) -> u64 {
        self.exchanges
    }

    /// Identifies the connection behind this handle (cheaper to keep than a handle: no
    /// reference on the connection's stream state).
    pub fn id(&self) -> H2Id {
        H2Id(Arc::clone(&self.went_away))
    }

    /// Whether this handle is on the connection `id` names.
    pub fn is(&self, id: &H2Id) -> bool {
        Arc::ptr_eq(&self.went_away, &id.0)
    }

    fn classify(&self, error: h2::Error) -> ErrorKind {
        match classify_h2_error(&error) {
            ErrorKind::Reset | ErrorKind::Closed if self.went_away.load(Ordering::Relaxed) => {
                ErrorKind::H2GoAway
            }
            // Prior knowledge sent to a server without h2c: it answers the preface with an
            // HTTP/1.1 error or a close before any stream ever completed.
            ErrorKind::Reset | ErrorKind::Closed | ErrorKind::H2Protocol
                if self.scheme == Scheme::HTTP && self.exchanges == 0 =>
            {
                ErrorKind::H2NotOffered
            }
            kind => kind,
        }
    }

    pub fn response_started(&self) -> bool {
        self.stream_opened
    }

    /// Converts `request` (an encoded HTTP/1.1 request) into an HTTP/2 request and its body.
    fn convert(&mut self, request: &[u8]) -> Result<(Request<()>, Bytes), ErrorKind> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut parsed = httparse::Request::new(&mut headers);
        let head_len = match parsed.parse(request) {
            Ok(httparse::Status::Complete(len)) => len,
            _ => return Err(ErrorKind::Malformed),
        };
        let method = Method::from_bytes(parsed.method.unwrap_or("GET").as_bytes())
            .map_err(|_| ErrorKind::Malformed)?;
        let host = parsed
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("host"))
            .map_or(&b""[..], |h| h.value);
        let authority = match &self.authority {
            Some((seen, parsed)) if seen[..] == *host => parsed.clone(),
            _ => {
                let parsed = Authority::try_from(host).map_err(|_| ErrorKind::Malformed)?;
                self.authority = Some((Bytes::copy_from_slice(host), parsed.clone()));
                parsed
            }
        };
        let uri = Uri::builder()
            .scheme(self.scheme.clone())
            .authority(authority)
            .path_and_query(parsed.path.unwrap_or("/"))
            .build()
            .map_err(|_| ErrorKind::Malformed)?;
        let mut out = Request::new(());
        *out.method_mut() = method;
        *out.uri_mut() = uri;
        *out.version_mut() = http::Version::HTTP_2;
        let map = out.headers_mut();
        for header in parsed.headers.iter() {
            if is_connection_specific(header.name.as_bytes()) {
                continue;
            }
            let name =
                HeaderName::from_bytes(header.name.as_bytes()).map_err(|_| ErrorKind::Malformed)?;
            let mut value =
                HeaderValue::from_bytes(header.value).map_err(|_| ErrorKind::Malformed)?;
            if name.as_str() == "x-request-id" {
                // Unique per request: never worth a slot in the HPACK table (indexing it
                // would evict useful entries and cost a table search every time).
                value.set_sensitive(true);
            }
            map.append(name, value);
        }
        let body = &request[head_len..];
        let body = if body.is_empty() {
            Bytes::new()
        } else {
            Bytes::copy_from_slice(body)
        };
        Ok((out, body))
    }

    /// Sends `request` on a new stream and reads the whole response. Byte counts: the
    /// response head is counted at its decoded size (HPACK makes the wire smaller), the body
    /// as its DATA payload.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        expects_body: bool,
        mut capture: Option<&mut Capture<'_>>,
    ) -> Result<Exchange, ErrorKind> {
        self.stream_opened = false;
        if let Some(capture) = capture.as_deref_mut() {
            capture.start();
        }
        let (head, body) = self.convert(request)?;
        poll_fn(|cx| self.send.poll_ready(cx))
            .await
            .map_err(|e| self.classify(e))?;
        let end_of_stream = body.is_empty();
        let (response, mut send_body) = self
            .send
            .send_request(head, end_of_stream)
            .map_err(|e| self.classify(e))?;
        self.stream_opened = true;
        if !end_of_stream {
            send_body
                .send_data(body, true)
                .map_err(|e| self.classify(e))?;
        }
        let written_at = Instant::now();
        let response = response.await.map_err(|e| self.classify(e))?;
        let first_byte_at = Instant::now();
        let status = response.status().as_u16();
        // ":status: NNN\r\n" and "name: value\r\n" per header, as a text head would count.
        let mut received = 14u64;
        for (name, value) in response.headers() {
            received += (name.as_str().len() + value.len() + 4) as u64;
            if let Some(capture) = capture.as_deref_mut() {
                capture.header(name.as_str(), value.as_bytes());
            }
        }
        let mut body_bytes = 0u64;
        let mut recv = response.into_body();
        while let Some(data) = recv.data().await {
            let data = data.map_err(|e| self.classify(e))?;
            let _ = recv.flow_control().release_capacity(data.len());
            if expects_body {
                if let Some(sink) = capture.as_deref_mut().and_then(Capture::body_sink) {
                    sink.extend_from_slice(&data);
                }
            }
            body_bytes += data.len() as u64;
        }
        self.exchanges += 1;
        Ok(Exchange {
            status,
            keep_alive: true,
            bytes_received: received + body_bytes,
            body_bytes,
            written_at,
            first_byte_at,
            done_at: Instant::now(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Captured;
    use crate::request::RequestSpec;
    use std::net::SocketAddr;

    /// What the test server does with each stream.
    #[derive(Clone, Copy)]
    enum Behaviour {
        /// Echo the request body back, with the method in `x-method`.
        Echo,
        Reset(h2::Reason),
        GoAway,
    }

    async fn serve(behaviour: Behaviour) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let mut connection = h2::server::handshake(tcp).await.unwrap();
            while let Some(Ok((request, mut respond))) = connection.accept().await {
                match behaviour {
                    Behaviour::Reset(reason) => respond.send_reset(reason),
                    Behaviour::GoAway => {
                        connection.abrupt_shutdown(h2::Reason::INTERNAL_ERROR);
                    }
                    Behaviour::Echo => {
                        let method = request.method().to_string();
                        let mut body = request.into_body();
                        let mut data = Vec::new();
                        while let Some(Ok(chunk)) = body.data().await {
                            let _ = body.flow_control().release_capacity(chunk.len());
                            data.extend_from_slice(&chunk);
                        }
                        let response = http::Response::builder()
                            .header("x-method", method)
                            .body(())
                            .unwrap();
                        let mut send = respond.send_response(response, false).unwrap();
                        send.send_data(Bytes::from(data), true).unwrap();
                    }
                }
            }
            // Closing at once could reset the socket before the client reads the GOAWAY.
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            drop(connection);
        });
        addr
    }

    async fn open(addr: SocketAddr) -> H2Connection {
        let tcp = crate::connect(&[addr]).await.unwrap();
        H2Connection::handshake(Stream::Plain(tcp), &H2Settings::default())
            .await
            .unwrap()
    }

    fn request(method: &str, body: Option<&[u8]>) -> Vec<u8> {
        RequestSpec {
            method,
            authority: "localhost:1",
            path: "/echo?x=1",
            headers: &[],
            body,
            keep_alive: true,
            accept_gzip: false,
        }
        .encode()
        .unwrap()
        .as_bytes()
        .to_vec()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn sends_http1_bytes_as_http2_and_captures_the_response() {
        let addr = serve(Behaviour::Echo).await;
        let mut connection = open(addr).await;
        let names = vec!["x-method".to_string()];
        let mut captured = Captured::default();
        let mut capture = Capture {
            headers: &names,
            body: true,
            encoded_body: false,
            into: &mut captured,
        };
        let exchange = connection
            .exchange(&request("POST", Some(b"hello")), true, Some(&mut capture))
            .await
            .unwrap();
        assert_eq!((exchange.status, exchange.body_bytes), (200, 5));
        assert_eq!(captured.body(), b"hello");
        assert_eq!(captured.header(0), Some(&b"POST"[..]));
        let again = connection
            .exchange(&request("GET", None), true, None)
            .await
            .unwrap();
        assert_eq!((again.status, again.body_bytes), (200, 0));
        assert_eq!(connection.exchanges(), 2);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn resets_and_goaway_are_counted_by_kind() {
        for (behaviour, kind) in [
            (
                Behaviour::Reset(h2::Reason::REFUSED_STREAM),
                ErrorKind::H2StreamLimit,
            ),
            (
                Behaviour::Reset(h2::Reason::INTERNAL_ERROR),
                ErrorKind::H2StreamReset,
            ),
            (Behaviour::GoAway, ErrorKind::H2GoAway),
        ] {
            let addr = serve(behaviour).await;
            let mut connection = open(addr).await;
            let result = connection.exchange(&request("GET", None), true, None).await;
            assert_eq!(result.unwrap_err(), kind);
        }
    }
}
