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
}

#[derive(Default)]
struct Queue {
    batches: VecDeque<Vec<u8>>,
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
    pub fn push(&self, batch: Vec<u8>) {
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
        let outcome = runtime.block_on(async {
            tokio::time::timeout(timeout, post(endpoint, batch))
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {timeout:?}")))
        });
        let mut queue = shared.lock();
        match outcome {
            Ok(()) => queue.report.sent += 1,
            Err(e) => {
                queue.report.failed += 1;
                queue.report.last_error = Some(e);
            }
        }
    }
}

/// One POST over a fresh HTTP/1.1 connection; `Ok` on a 2xx answer.
async fn post(endpoint: &Endpoint, body: Vec<u8>) -> Result<(), String> {
    let url = &endpoint.url;
    let host = url.host_str().ok_or("the URL has no host")?;
    let port = url.port_or_known_default().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
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
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
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
        Err(format!("HTTP {}: {}", status.as_u16(), text.trim()))
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
}
