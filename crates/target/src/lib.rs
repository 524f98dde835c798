//! Public API of `barrage-target`, the bundled HTTP test server: configuration, lifecycle and errors.
//!
//! The server answers a small set of endpoints that a load test can aim at
//! (`/`, `/health`, `/random/get_token`, `/ping`, `/delay/<ms>`, `/status/<code>`,
//! `/bytes/<n>`, `/echo`) and understands behaviour-changing query parameters on
//! every endpoint (`delay`, `status`, `size`, `fail`, `close`, `stall`/`stall_every`,
//! `capacity`: a known capacity of R requests per second, queueing beyond it).
//! See [`routes`](crate::routes) and [`params`](crate::params) for the exact behaviour.
//! Under `/chaos/` it misbehaves on purpose (resets, stalls, endless bodies, broken
//! framing, gzip bombs, HTTP/2 GOAWAY and garbage): see [`chaos`](crate::chaos).
//!
//! Two entry points:
//! - [`spawn`] runs the server on its own background threads and tokio runtime and
//!   returns a [`RunningTarget`] handle (used by `barrage demo` and tests);
//! - [`serve_blocking`] runs it on the calling thread until Ctrl-C (used by `barrage target`).

mod capacity;
mod chaos;
mod echo;
mod httpbin;
mod params;
mod respond;
mod routes;
mod server;
mod tls;
mod tokens;

pub use tls::{acceptor_from_pem_files, SelfSigned};

use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// How to run the test server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetConfig {
    /// Address to listen on; port 0 picks a free port (see [`RunningTarget::addr`]).
    pub listen: SocketAddr,
    /// Number of tokio worker threads; `None` means `std::thread::available_parallelism`.
    pub threads: Option<usize>,
    /// Serve HTTPS with this certificate (ALPN per `protocols`).
    pub tls: Option<SelfSigned>,
    /// HTTP versions accepted. Cleartext HTTP/2 (h2c, prior knowledge) is recognised by its
    /// preface unless HTTP/1.1 only is asked for.
    pub protocols: Protocols,
}

/// Which HTTP versions the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocols {
    /// HTTP/1.1 and HTTP/2 (by ALPN over TLS, by preface in cleartext).
    #[default]
    Any,
    Http1Only,
    Http2Only,
}

impl Default for TargetConfig {
    fn default() -> Self {
        TargetConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            threads: None,
            tls: None,
            protocols: Protocols::Any,
        }
    }
}

/// Errors that prevent the server from starting.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The listening socket could not be created, bound or put into listening state.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// The tokio runtime or its threads could not be started.
    #[error("cannot start the server runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The certificate could not be generated or loaded.
    #[error("TLS setup failed: {0}")]
    Tls(String),
}

/// A server running on its own background threads with its own tokio runtime.
///
/// Call [`RunningTarget::shutdown`] to stop it and wait for its threads. Dropping the
/// handle instead also stops the server, but without waiting (it never hangs).
pub struct RunningTarget {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for RunningTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningTarget")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RunningTarget {
    /// The bound address (the real port when port 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting connections, ends the runtime (dropping open connections and
    /// in-flight requests) and joins the server threads.
    pub fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RunningTarget {
    fn drop(&mut self) {
        // Signal only: the owner thread shuts the runtime down by itself, and
        // joining here could block an async caller.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Binds `config.listen` synchronously and starts serving on background threads.
///
/// Returns once the socket is listening, so requests can be sent immediately.
pub fn spawn(config: TargetConfig) -> Result<RunningTarget, TargetError> {
    let serving = server::Serving::new(&config)?;
    let (bound_tx, bound_rx) = mpsc::sync_channel::<Result<SocketAddr, TargetError>>(1);
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("barrage-target".into())
        .spawn(move || {
            let runtime = match server::build_runtime(config.threads) {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = bound_tx.send(Err(e));
                    return;
                }
            };
            runtime.block_on(async move {
                let listener = match server::bind(config.listen) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = bound_tx.send(Err(e));
                        return;
                    }
                };
                let addr = listener.local_addr().unwrap_or(config.listen);
                let accept =
                    tokio::spawn(server::accept_loop(listener, server::new_state(), serving));
                let _ = bound_tx.send(Ok(addr));
                // Either an explicit stop or the handle being dropped ends the server.
                let _ = stop_rx.await;
                accept.abort();
            });
            runtime.shutdown_timeout(server::SHUTDOWN_GRACE);
        })
        .map_err(TargetError::Runtime)?;

    match bound_rx.recv() {
        Ok(Ok(addr)) => Ok(RunningTarget {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => {
            let _ = thread.join();
            Err(TargetError::Runtime(std::io::Error::other(
                "server thread exited before binding",
            )))
        }
    }
}

/// Runs the server on the calling thread until Ctrl-C, SIGTERM or SIGHUP.
///
/// `on_bound` is called with the bound address right after the socket is listening.
pub fn serve_blocking(
    config: TargetConfig,
    on_bound: impl FnOnce(SocketAddr),
) -> Result<(), TargetError> {
    use tokio::signal::unix::{signal, SignalKind};
    let serving = server::Serving::new(&config)?;
    let runtime = server::build_runtime(config.threads)?;
    let result = runtime.block_on(async move {
        let listener = server::bind(config.listen)?;
        let addr = listener.local_addr().unwrap_or(config.listen);
        // The handlers are registered before the address is announced, so a signal that
        // follows the announcement is never missed.
        let mut interrupt = signal(SignalKind::interrupt()).map_err(TargetError::Runtime)?;
        let mut terminate = signal(SignalKind::terminate()).map_err(TargetError::Runtime)?;
        let mut hangup = signal(SignalKind::hangup()).map_err(TargetError::Runtime)?;
        let accept = tokio::spawn(server::accept_loop(listener, server::new_state(), serving));
        on_bound(addr);
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
        accept.abort();
        Ok(())
    });
    runtime.shutdown_timeout(server::SHUTDOWN_GRACE);
    result
}
