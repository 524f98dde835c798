//! Runtime construction, listening socket setup and the accept loop that serves each connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpSocket};
use tokio::runtime::Runtime;

use crate::routes::{self, State};
use crate::TargetError;

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

/// Accepts connections forever, serving each on its own task.
pub(crate) async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    let builder = Arc::new(connection_builder());
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
        tokio::spawn(async move {
            let service = service_fn(move |req| routes::handle(Arc::clone(&state), req));
            // Errors here are client disconnects, protocol errors or a deliberate
            // `close=1`; the connection is simply gone either way.
            let _ = builder
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// HTTP/1.1 with keep-alive, plus HTTP/2 with prior knowledge (h2c) detected from the preface.
fn connection_builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().keep_alive(true);
    builder
}
