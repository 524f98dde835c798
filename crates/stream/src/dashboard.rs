//! The live dashboard server (`--dashboard [ADDR]`): one self-contained page (no CDN),
//! server-sent events carrying the caller's JSON frames (the latest one first, then each new
//! one), and the final HTML report at `/report` once the run has ended.

use bytes::Bytes;
use http_body_util::{channel::Channel, BodyExt, Full};
use hyper::body::Frame;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::watch;

/// k6's web dashboard port, on loopback.
pub const DEFAULT_ADDR: &str = "127.0.0.1:5665";

const PAGE: &str = include_str!("dashboard.html");

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Frames kept for pages opened mid-run (an hour at one a second).
const HISTORY_LIMIT: usize = 3600;

struct State {
    frames: watch::Sender<String>,
    /// Every frame so far (bounded), replayed to a page when it connects.
    history: Mutex<std::collections::VecDeque<String>>,
    report: Mutex<Option<String>>,
    /// Times `/report` was served, so the end of the run can wait for open pages to fetch it.
    reports_served: std::sync::atomic::AtomicUsize,
}

/// How long the end of the run waits for open pages to fetch the final report.
pub const REPORT_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// A running dashboard server.
pub struct Dashboard {
    pub addr: SocketAddr,
    state: Arc<State>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into()).boxed()
}

fn respond(status: u16, content_type: &str, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    if let Ok(value) = content_type.parse() {
        response.headers_mut().insert("content-type", value);
    }
    response
}

async fn serve(request: Request<hyper::body::Incoming>, state: Arc<State>) -> Response<Body> {
    match request.uri().path() {
        "/" => respond(200, "text/html; charset=utf-8", full(PAGE)),
        "/events" => {
            let (mut sender, body) = Channel::<Bytes, Infallible>::new(4);
            let mut frames = state.frames.subscribe();
            frames.borrow_and_update();
            let past: Vec<String> = state
                .history
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned()
                .collect();
            tokio::spawn(async move {
                for frame in past {
                    let event = Bytes::from(format!("data: {frame}\n\n"));
                    if sender.send(Frame::data(event)).await.is_err() {
                        return;
                    }
                }
                if frames.changed().await.is_err() {
                    return;
                }
                loop {
                    let frame = frames.borrow_and_update().clone();
                    if !frame.is_empty() {
                        let event = Bytes::from(format!("data: {frame}\n\n"));
                        if sender.send(Frame::data(event)).await.is_err() {
                            return;
                        }
                    }
                    if frames.changed().await.is_err() {
                        return;
                    }
                }
            });
            let mut response = respond(200, "text/event-stream", body.boxed());
            response.headers_mut().insert(
                "cache-control",
                hyper::header::HeaderValue::from_static("no-cache"),
            );
            response
        }
        "/report" => match state
            .report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            Some(html) => {
                state
                    .reports_served
                    .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                respond(200, "text/html; charset=utf-8", full(html))
            }
            None => respond(
                404,
                "text/plain",
                full("the report is ready when the run ends\n"),
            ),
        },
        _ => respond(404, "text/plain", full("not found\n")),
    }
}

impl Dashboard {
    /// Binds `addr` now (a taken or bad address fails before the run) and serves from a
    /// thread of its own.
    pub fn start(addr: &str) -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (frames, _) = watch::channel(String::new());
        let state = Arc::new(State {
            frames,
            history: Default::default(),
            report: Mutex::new(None),
            reports_served: Default::default(),
        });
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = {
            let state = state.clone();
            std::thread::Builder::new()
                .name("barrage-dashboard".into())
                .spawn(move || {
                    runtime.block_on(async move {
                        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                            return;
                        };
                        loop {
                            tokio::select! {
                                _ = &mut stopped => return,
                                accepted = listener.accept() => {
                                    let Ok((stream, _)) = accepted else { continue };
                                    let state = state.clone();
                                    tokio::spawn(async move {
                                        let service = hyper::service::service_fn(move |request| {
                                            let state = state.clone();
                                            async move { Ok::<_, Infallible>(serve(request, state).await) }
                                        });
                                        let _ = hyper::server::conn::http1::Builder::new()
                                            .serve_connection(TokioIo::new(stream), service)
                                            .await;
                                    });
                                }
                            }
                        }
                    });
                })?
        };
        Ok(Self {
            addr,
            state,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Sends a frame (a JSON object) to every open page.
    pub fn publish(&self, frame: String) {
        {
            let mut history = self.state.history.lock().unwrap_or_else(|p| p.into_inner());
            if history.len() >= HISTORY_LIMIT {
                history.pop_front();
            }
            history.push_back(frame.clone());
        }
        self.state.frames.send_replace(frame);
    }

    /// Offers the final report at `/report`.
    pub fn offer_report(&self, html: String) {
        *self.state.report.lock().unwrap_or_else(|p| p.into_inner()) = Some(html);
    }

    /// The end of the run: offers the report, sends the last frame (which tells the pages to
    /// fetch it and keep it), waits up to `REPORT_WAIT` for every open page to fetch it, stops.
    pub fn finish(self, last_frame: String, report_html: String) {
        self.offer_report(report_html);
        let pages = self.state.frames.receiver_count();
        self.publish(last_frame);
        let started = std::time::Instant::now();
        while self
            .state
            .reports_served
            .load(std::sync::atomic::Ordering::Acquire)
            < pages
            && started.elapsed() < REPORT_WAIT
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        self.stop();
    }

    /// Stops serving.
    pub fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str, want: &str) -> String {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        let mut buf = [0; 4096];
        while !text.contains(want) {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "closed before `{want}`: {text}");
            text.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        text
    }

    #[test]
    fn serves_the_page_events_and_the_report() {
        let dashboard = Dashboard::start("127.0.0.1:0").unwrap();
        let page = get(dashboard.addr, "/", "</html>");
        assert!(page.contains("EventSource"), "the page listens to events");
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "no CDN"
        );
        dashboard.publish(r#"{"t":1}"#.into());
        dashboard.publish(r#"{"t":2}"#.into());
        let replayed = get(dashboard.addr, "/events", r#"data: {"t":2}"#);
        assert!(
            replayed.contains(r#"data: {"t":1}"#),
            "history replayed: {replayed}"
        );
        assert!(get(dashboard.addr, "/report", "\r\n\r\n").starts_with("HTTP/1.1 404"));
        dashboard.offer_report("<html>final</html>".into());
        get(dashboard.addr, "/report", "final");
        dashboard.stop();
    }
}
