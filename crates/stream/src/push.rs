//! Sends encoded batches to an HTTP endpoint from a thread of its own, through a bounded
//! queue: the run never waits on the endpoint. A full queue drops its oldest batch (every
//! batch carries cumulative values, so the newest supersedes it); a batch the endpoint
//! refuses or never answers is counted as failed. At the end the queue gets a bounded time
//! to drain, then whatever is left is counted as dropped.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Batches waiting at most; older ones are dropped past this.
pub const QUEUE_LIMIT: usize = 8;
/// How long one request may take before it counts as failed.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the end of the run waits for the queue to drain.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Where to send, and how.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: url::Url,
    pub headers: &'static [(&'static str, &'static str)],
    /// The TLS client of an `https://` endpoint.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

/// What happened to the batches, for the end-of-run warning.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushReport {
    pub sent: u64,
    /// Dropped unsent: the queue was full, or the run ended before they could go.
    pub dropped: u64,
    /// Sent but refused, failed or timed out.
    pub failed: u64,
    /// The last failure, to name in the warning.
    pub last_error: Option<String>,
    /// Batches offering a richer form with a fallback (remote write's native histograms):
    /// whether the endpoint took the richer form (`None`: never answered one).
    pub rich_accepted: Option<bool>,
    /// The endpoint's answer when it refused the richer form.
    pub rich_refusal: Option<String>,
}

/// One batch: its body, and for a richer form the server may refuse, the plain body to send
/// instead (then and for the rest of the run).
struct Batch {
    body: Vec<u8>,
    fallback: Option<Vec<u8>>,
}

/// Why a POST failed: the endpoint answered with an error status, or never answered.
enum Failure {
    Refused(String),
    Unreachable(String),
}

impl Failure {
    fn text(self) -> String {
        match self {
            Failure::Refused(text) | Failure::Unreachable(text) => text,
        }
    }
}

#[derive(Default)]
struct Queue {
    batches: VecDeque<Batch>,
    closing_by: Option<Instant>,
    report: PushReport,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running sender.
pub struct Pusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Pusher {
    /// Starts the sender thread.
    pub fn start(endpoint: Endpoint) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("barrage-push".into())
                .spawn(move || send_loop(&shared, &endpoint))?
        };
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// Queues a batch without waiting; drops the oldest when the queue is full.
    pub fn push(&self, body: Vec<u8>) {
        self.queue(Batch {
            body,
            fallback: None,
        });
    }

    /// Queues a batch in a richer form with the plain form to send when the endpoint refuses
    /// the richer one (it is then sent plain for the rest of the run).
    pub fn push_with_fallback(&self, body: Vec<u8>, fallback: Vec<u8>) {
        self.queue(Batch {
            body,
            fallback: Some(fallback),
        });
    }

    fn queue(&self, batch: Batch) {
        let mut queue = self.shared.lock();
        if queue.batches.len() >= QUEUE_LIMIT {
            queue.batches.pop_front();
            queue.report.dropped += 1;
        }
        queue.batches.push_back(batch);
        drop(queue);
        self.shared.ready.notify_one();
    }

    /// Lets the queue drain for at most `DRAIN_TIMEOUT`, then stops the thread.
    pub fn finish(mut self) -> PushReport {
        self.shared.lock().closing_by = Some(Instant::now() + DRAIN_TIMEOUT);
        self.shared.ready.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        std::mem::take(&mut self.shared.lock().report)
    }
}

fn send_loop(shared: &Shared, endpoint: &Endpoint) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let mut queue = shared.lock();
            queue.report.last_error = Some(format!("cannot start the sender: {e}"));
            return;
        }
    };
    loop {
        let (batch, deadline) = {
            let mut queue = shared.lock();
            loop {
                if let Some(by) = queue.closing_by {
                    if Instant::now() >= by {
                        let left = queue.batches.len() as u64;
                        queue.report.dropped += left;
                        queue.batches.clear();
                        return;
                    }
                }
                if let Some(batch) = queue.batches.pop_front() {
                    break (batch, queue.closing_by);
                }
                if queue.closing_by.is_some() {
                    return;
                }
                queue = shared.ready.wait(queue).unwrap_or_else(|p| p.into_inner());
            }
        };
        let timeout = deadline.map_or(REQUEST_TIMEOUT, |by| {
            by.saturating_duration_since(Instant::now())
                .min(REQUEST_TIMEOUT)
        });
        let refused_before = shared.lock().report.rich_accepted == Some(false);
        let (outcome, rich) = runtime.block_on(async {
            tokio::time::timeout(timeout, send_batch(endpoint, batch, refused_before))
                .await
                .unwrap_or_else(|_| {
                    (
                        Err(Failure::Unreachable(format!(
                            "no answer within {timeout:?}"
                        ))),
                        None,
                    )
                })
        });
        let mut queue = shared.lock();
        match rich {
            Some(Ok(())) => queue.report.rich_accepted = Some(true),
            Some(Err(refusal)) => {
                queue.report.rich_accepted = Some(false);
                queue.report.rich_refusal = Some(refusal);
            }
            None => {}
        }
        match outcome {
            Ok(()) => queue.report.sent += 1,
            Err(e) => {
                queue.report.failed += 1;
                queue.report.last_error = Some(e.text());
            }
        }
    }
}

/// Sends one batch: the richer form unless the endpoint refused it before, then the plain
/// form if it refuses it now. Returns the outcome and what became of the richer form
/// (`None`: not tried or not answered).
async fn send_batch(
    endpoint: &Endpoint,
    batch: Batch,
    refused_before: bool,
) -> (Result<(), Failure>, Option<Result<(), String>>) {
    match batch.fallback {
        None => (post(endpoint, batch.body).await, None),
        Some(plain) if refused_before => (post(endpoint, plain).await, None),
        Some(plain) => match post(endpoint, batch.body).await {
            Ok(()) => (Ok(()), Some(Ok(()))),
            Err(Failure::Refused(refusal)) => (post(endpoint, plain).await, Some(Err(refusal))),
            Err(unreachable) => (Err(unreachable), None),
        },
    }
}

/// One POST over a fresh HTTP/1.1 connection (TLS for `https://`); `Ok` on a 2xx answer.
async fn post(endpoint: &Endpoint, body: Vec<u8>) -> Result<(), Failure> {
    connect_and_post(endpoint, body)
        .await
        .map_err(|(answered, text)| {
            if answered {
                Failure::Refused(text)
            } else {
                Failure::Unreachable(text)
            }
        })
}

/// The POST; an error says whether the endpoint answered (with an error status).
async fn connect_and_post(endpoint: &Endpoint, body: Vec<u8>) -> Result<(), (bool, String)> {
    let unanswered = |text: String| (false, text);
    let url = &endpoint.url;
    let host = url
        .host_str()
        .ok_or((false, "the URL has no host".to_string()))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let bare_host = host.trim_matches(['[', ']']);
    let stream = tokio::net::TcpStream::connect((bare_host, port))
        .await
        .map_err(|e| unanswered(format!("cannot connect to {host}:{port}: {e}")))?;
    match &endpoint.tls {
        None => send(endpoint, TokioIo::new(stream), body).await,
        Some(config) => {
            let name = rustls::pki_types::ServerName::try_from(bare_host.to_string())
                .map_err(|e| unanswered(format!("`{host}`: {e}")))?;
            let stream = tokio_rustls::TlsConnector::from(config.clone())
                .connect(name, stream)
                .await
                .map_err(|e| unanswered(format!("TLS handshake with {host}:{port}: {e}")))?;
            send(endpoint, TokioIo::new(stream), body).await
        }
    }
}

/// The POST itself, over a connected (and, for `https://`, TLS) stream.
async fn send<S>(endpoint: &Endpoint, io: TokioIo<S>, body: Vec<u8>) -> Result<(), (bool, String)>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let url = &endpoint.url;
    let unanswered = |e: &dyn std::fmt::Display| (false, e.to_string());
    let host = url
        .host_str()
        .ok_or_else(|| unanswered(&"the URL has no host"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| unanswered(&e))?;
    tokio::spawn(connection);
    let path = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_string(),
    };
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    let mut request = hyper::Request::post(path).header("host", authority);
    for (name, value) in endpoint.headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| unanswered(&e))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| unanswered(&e))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if status.is_success() {
        Ok(())
    } else {
        let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
        Err((true, format!("HTTP {}: {}", status.as_u16(), text.trim())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_endpoint_never_blocks_and_counts_every_batch() {
        // A port nothing listens on: bind, note it, close.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let pusher = Pusher::start(Endpoint {
            url: url::Url::parse(&format!("http://127.0.0.1:{port}/write")).unwrap(),
            headers: &[],
            tls: None,
        })
        .unwrap();
        for _ in 0..(QUEUE_LIMIT * 3) {
            pusher.push(vec![0; 16]);
        }
        let report = pusher.finish();
        assert_eq!(report.sent, 0);
        assert_eq!(report.dropped + report.failed, (QUEUE_LIMIT * 3) as u64);
        assert!(report.last_error.unwrap().contains("cannot connect"));
    }

    /// A loopback HTTPS receiver (a self-signed certificate for `localhost`) that answers
    /// 204 and hands each request's path and body length to the test.
    fn tls_receiver() -> (u16, String, std::sync::mpsc::Receiver<(String, usize)>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((tcp, _)) = listener.accept().await {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        continue;
                    };
                    let seen = seen.clone();
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let seen = seen.clone();
                            async move {
                                let path = request.uri().path().to_string();
                                let body = request.into_body().collect().await?.to_bytes();
                                let _ = seen.send((path, body.len()));
                                let mut answer = hyper::Response::new(Full::new(Bytes::new()));
                                *answer.status_mut() = hyper::StatusCode::NO_CONTENT;
                                Ok::<_, hyper::Error>(answer)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                }
            });
        });
        (port, cert.pem(), received)
    }

    #[test]
    fn batches_reach_an_https_endpoint_that_a_given_ca_vouches_for() {
        let (port, pem, received) = tls_receiver();
        let ca = std::env::temp_dir().join(format!("barrage-push-ca-{}.pem", std::process::id()));
        std::fs::write(&ca, pem).unwrap();
        let url = url::Url::parse(&format!("https://localhost:{port}/api/v1/write")).unwrap();
        let tls = |ca_file: Option<std::path::PathBuf>| {
            barrage_http::client_config(&barrage_http::TlsSettings {
                ca_file,
                alpn: barrage_http::Alpn::Http1,
                ..barrage_http::TlsSettings::default()
            })
            .unwrap()
        };
        let pusher = Pusher::start(Endpoint {
            url: url.clone(),
            headers: &[],
            tls: Some(tls(Some(ca.clone()))),
        })
        .unwrap();
        pusher.push(vec![7; 100]);
        pusher.push(vec![8; 50]);
        let report = pusher.finish();
        assert_eq!(
            (report.sent, report.failed, report.dropped),
            (2, 0, 0),
            "{report:?}"
        );
        let got: Vec<_> = received.try_iter().collect();
        assert_eq!(
            got,
            vec![
                ("/api/v1/write".to_string(), 100),
                ("/api/v1/write".to_string(), 50)
            ]
        );
        // Without the CA the certificate is refused: counted as failed, the error named.
        let pusher = Pusher::start(Endpoint {
            url,
            headers: &[],
            tls: Some(tls(None)),
        })
        .unwrap();
        pusher.push(vec![1; 10]);
        let report = pusher.finish();
        let _ = std::fs::remove_file(&ca);
        assert_eq!((report.sent, report.failed), (0, 1), "{report:?}");
        assert!(
            report
                .last_error
                .as_deref()
                .unwrap()
                .contains("TLS handshake"),
            "{report:?}"
        );
    }

    /// A loopback HTTP receiver that refuses bodies starting with byte 1 (400) and takes
    /// the others (204); it hands each body's first byte to the test.
    fn picky_receiver() -> (u16, std::sync::mpsc::Receiver<u8>) {
        use std::io::{BufRead, BufReader, Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen, received) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten().take(100) {
                let mut reader = BufReader::new(stream);
                let (mut line, mut length) = (String::new(), 0);
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = value.trim().parse().unwrap_or(0);
                    }
                    line.clear();
                }
                let mut body = vec![0; length];
                if reader.read_exact(&mut body).is_err() || body.is_empty() {
                    continue;
                }
                let _ = seen.send(body[0]);
                let answer: &[u8] = if body[0] == 1 {
                    b"HTTP/1.1 400 Bad Request\r\ncontent-length: 8\r\nconnection: close\r\n\r\nrefused!"
                } else {
                    b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n"
                };
                let _ = reader.get_mut().write_all(answer);
            }
        });
        (port, received)
    }

    #[test]
    fn a_refused_richer_form_is_sent_plain_then_and_for_the_rest_of_the_run() {
        let (port, received) = picky_receiver();
        let pusher = Pusher::start(Endpoint {
            url: url::Url::parse(&format!("http://127.0.0.1:{port}/write")).unwrap(),
            headers: &[],
            tls: None,
        })
        .unwrap();
        pusher.push_with_fallback(vec![1; 10], vec![2; 10]);
        pusher.push_with_fallback(vec![1; 10], vec![2; 10]);
        let report = pusher.finish();
        assert_eq!(
            (report.sent, report.failed, report.dropped),
            (2, 0, 0),
            "{report:?}"
        );
        assert_eq!(report.rich_accepted, Some(false));
        assert!(report.rich_refusal.unwrap().contains("HTTP 400: refused!"));
        // The rich form once, then plain: the second batch is not offered rich again.
        assert_eq!(received.try_iter().collect::<Vec<_>>(), vec![1, 2, 2]);
        // A server that takes the rich form gets only that.
        let (port, received) = picky_receiver();
        let pusher = Pusher::start(Endpoint {
            url: url::Url::parse(&format!("http://127.0.0.1:{port}/write")).unwrap(),
            headers: &[],
            tls: None,
        })
        .unwrap();
        pusher.push_with_fallback(vec![3; 10], vec![2; 10]);
        let report = pusher.finish();
        assert_eq!(report.rich_accepted, Some(true));
        assert_eq!(received.try_iter().collect::<Vec<_>>(), vec![3]);
    }
}
