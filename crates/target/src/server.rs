//! Runtime construction, listening socket setup and the accept loop that serves each connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpSocket};
use tokio::runtime::Runtime;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};

use crate::chaos::served::{ChaosBody, ChaosControl, ChaosIo};
use crate::chaos::{self, Chaos};
use crate::routes::{self, State};
use crate::{Protocols, TargetConfig, TargetError};
use tokio_rustls::TlsAcceptor;

/// Listen backlog asked from the kernel (it is capped by `net.core.somaxconn`).
const BACKLOG: u32 = 8192;

/// How long shutting the runtime down may wait for its worker threads.
pub(crate) const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Pause after a failed `accept` (e.g. out of file descriptors) before retrying.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(10);

/// Builds the multi-threaded tokio runtime; `None` threads means one per available core.
pub(crate) fn build_runtime(threads: Option<usize>) -> Result<Runtime, TargetError> {
    let threads = threads
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .max(1);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("barrage-target-worker")
        .enable_io()
        .enable_time()
        .build()
        .map_err(TargetError::Runtime)
}

/// Creates the listening socket (SO_REUSEADDR, large backlog). Must run inside the runtime.
pub(crate) fn bind(addr: SocketAddr) -> Result<TcpListener, TargetError> {
    let bind_err = |source| TargetError::Bind { addr, source };
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(bind_err)?;
    socket.set_reuseaddr(true).map_err(bind_err)?;
    socket.bind(addr).map_err(bind_err)?;
    socket.listen(BACKLOG).map_err(bind_err)
}

/// Fresh shared server state (token store, stall counter).
pub(crate) fn new_state() -> Arc<State> {
    Arc::new(State::new())
}

/// How accepted connections are served: TLS or not, and which HTTP versions.
#[derive(Clone)]
pub(crate) struct Serving {
    tls: Option<TlsAcceptor>,
    protocols: Protocols,
}

impl Serving {
    pub(crate) fn new(config: &TargetConfig) -> Result<Serving, TargetError> {
        let tls = match &config.tls {
            Some(cert) => Some(cert.acceptor(config.protocols)?),
            None => None,
        };
        Ok(Serving {
            tls,
            protocols: config.protocols,
        })
    }
}

/// Accepts connections forever, serving each on its own task.
pub(crate) async fn accept_loop(listener: TcpListener, state: Arc<State>, serving: Serving) {
    let builder = Arc::new(connection_builder(serving.protocols));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(_) => {
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        let builder = Arc::clone(&builder);
        let tls = serving.tls.clone();
        let protocols = serving.protocols;
        tokio::spawn(async move {
            let control = Arc::new(ChaosControl::default());
            let service = {
                let control = Arc::clone(&control);
                service_fn(move |req| dispatch(Arc::clone(&state), Arc::clone(&control), req))
            };
            // Errors here are client disconnects, failed handshakes, protocol errors or a
            // deliberate `close=1`; the connection is simply gone either way.
            match tls {
                None => {
                    if protocols != Protocols::Http2Only && first_request_is_chaos(&stream).await {
                        chaos::raw::serve(stream).await;
                        return;
                    }
                    let io = ChaosIo::new(stream, control);
                    let _ = builder.serve_connection(TokioIo::new(io), service).await;
                }
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let io = ChaosIo::new(stream, control);
                        let _ = builder.serve_connection(TokioIo::new(io), service).await;
                    }
                }
            }
        });
    }
}

/// A response body of either kind: the endpoints' whole bodies, or a chaos body.
type AnyBody = Either<Full<Bytes>, ChaosBody>;

/// Chaos paths to the chaos responder, everything else to the routes.
async fn dispatch(
    state: Arc<State>,
    control: Arc<ChaosControl>,
    req: Request<Incoming>,
) -> Result<Response<AnyBody>, routes::CloseConnection> {
    if let Some(chaos) = Chaos::parse(req.uri().path(), req.uri().query()) {
        let h2 = req.version() == hyper::Version::HTTP_2;
        return Ok(chaos::served::respond(chaos, &control, h2)
            .await
            .map(Either::Right));
    }
    routes::handle(state, req)
        .await
        .map(|response| response.map(Either::Left))
}

/// Whether a cleartext connection's first request is for a chaos path (then the raw
/// HTTP/1.1 chaos responder serves it). Peeks, so hyper still reads every byte otherwise.
async fn first_request_is_chaos(stream: &tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 32];
    for _ in 0..50 {
        let n = match stream.peek(&mut buf).await {
            Ok(n) if n > 0 => n,
            _ => return false,
        };
        match chaos::raw::is_chaos_request(&buf[..n]) {
            Some(yes) => return yes,
            None if n == buf.len() => return false,
            // A request line split across segments: wait for the rest (rare).
            None => tokio::time::sleep(Duration::from_millis(2)).await,
        }
    }
    false
}

/// HTTP/1.1 with keep-alive, plus HTTP/2 detected from its preface (h2c prior knowledge, or
/// h2 after ALPN), unless one version only is asked for.
fn connection_builder(protocols: Protocols) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().keep_alive(true);
    // Clients of a load test open many streams per connection; hyper's default of 200 would
    // make the server, not the client, the limit.
    builder.http2().max_concurrent_streams(1000);
    match protocols {
        Protocols::Any => builder,
        Protocols::Http1Only => builder.http1_only(),
        Protocols::Http2Only => builder.http2_only(),
    }
}
