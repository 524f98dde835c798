//! From the plan's protocol options to the HTTP layer's connector: TLS settings (read once
//! per run), HTTP version, HTTP/2 settings. A TLS configuration that cannot be built (an
//! unreadable `--cacert`) is bad input, found before any worker starts.

use crate::pool::SharedPool;
use barrage_http::{
    Alpn, Connector, H2Settings, TlsClient, TlsConfigError, TlsSettings, Tunnel, Version,
};
use barrage_metrics::ErrorKind;
use barrage_plan::{ConnectionModel, HttpVersion, Plan, Scheme, Target, TlsVersion};
use std::cell::{Cell, RefCell};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `host:port` of a target, as a CONNECT request names it.
fn host_port(target: &Target) -> String {
    if target.host.contains(':') {
        format!("[{}]:{}", target.host, target.port)
    } else {
        format!("{}:{}", target.host, target.port)
    }
}

/// Where connections go: the proxy, when there is one, else the target.
fn destination(plan: &Plan) -> &Target {
    plan.options
        .proxy
        .as_ref()
        .map_or(&plan.target, |proxy| &proxy.target)
}

fn version_of(plan: &Plan) -> Version {
    match plan.options.http {
        HttpVersion::Http1 => Version::Http1,
        HttpVersion::Http2 => Version::Http2,
        HttpVersion::Auto => Version::Auto,
    }
}

/// The plan's TLS options as the HTTP layer's settings.
fn tls_settings(plan: &Plan) -> TlsSettings {
    let tls = &plan.options.tls;
    let min = tls.min_version.unwrap_or(TlsVersion::Tls12);
    let max = tls.max_version.unwrap_or(TlsVersion::Tls13);
    let in_range = |v: TlsVersion| min <= v && v <= max;
    TlsSettings {
        ca_file: tls.ca_file.as_ref().map(PathBuf::from),
        insecure: tls.insecure,
        client_cert: match (&tls.client_cert, &tls.client_key) {
            (Some(cert), Some(key)) => Some((PathBuf::from(cert), PathBuf::from(key))),
            (Some(cert), None) => Some((PathBuf::from(cert), PathBuf::from(cert))),
            _ => None,
        },
        tls12: in_range(TlsVersion::Tls12),
        tls13: in_range(TlsVersion::Tls13),
        resumption: tls.session_resumption,
        alpn: match version_of(plan) {
            Version::Http1 => Alpn::Http1,
            // Offer both even when h2 is required, so a server without it answers
            // with http/1.1 and the failure can say so (rather than a bare alert).
            Version::Http2 | Version::Auto => Alpn::Both,
        },
        server_name: tls.server_name.clone(),
    }
}

/// The connector every worker of `plan`'s run opens connections with.
pub fn connector(plan: &Plan) -> Result<Connector, TlsConfigError> {
    let options = &plan.options;
    let version = version_of(plan);
    let tls = match plan.target.scheme {
        Scheme::Http => None,
        Scheme::Https => Some(TlsClient::new(&tls_settings(plan), &plan.target.host)?),
    };
    // Through a proxy, an https:// target is reached through a CONNECT tunnel.
    let tunnel = match (&options.proxy, plan.target.scheme) {
        (Some(proxy), Scheme::Https) => Some(Tunnel {
            authority: host_port(&plan.target),
            proxy_authorization: proxy.authorization(),
        }),
        _ => None,
    };
    Ok(Connector {
        tunnel,
        tls,
        version,
        h2: H2Settings {
            initial_window_size: options.http2.initial_window_size,
            initial_connection_window_size: options.http2.initial_connection_window_size,
        },
        max_headers: usize::try_from(options.limits.max_headers).unwrap_or(usize::MAX),
    })
}

/// Run-wide connection settings every worker gets.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionSettings {
    pub connector: Connector,
    pub model: ConnectionModel,
    pub pool_size: usize,
    pub max_streams: Option<u32>,
    /// Source addresses to bind new connections to, in turn.
    pub local_addrs: Arc<[IpAddr]>,
    /// Re-resolve the target this often (`None`: once per run).
    pub dns_ttl: Option<Duration>,
    /// The host and port connections go to (the proxy's, through one), for resolving.
    pub host: String,
    pub port: u16,
    /// Decode compressed responses (they were asked for with Accept-Encoding) to count their
    /// decoded size.
    pub decode_responses: bool,
    /// The most body bytes kept (decoded) for extractions; more is `body_too_large`.
    pub max_body: usize,
    /// TLS for `https://` origins other than the target (cross-origin redirects): the
    /// run's TLS options and session cache, presenting each origin's own name. `None` when
    /// they cannot be built for a plain-HTTP target's run (a hop to https then fails as
    /// `tls`).
    pub other_origin_tls: Option<TlsClient>,
    /// The proxy's `Proxy-Authorization`, when requests go through one with credentials.
    pub proxy_authorization: Option<String>,
    /// Whether connections go to a proxy (its addresses are the run's).
    pub proxied: bool,
}

impl ConnectionSettings {
    pub(crate) fn new(plan: &Plan) -> Result<ConnectionSettings, TlsConfigError> {
        let connections = &plan.options.connections;
        let connector = connector(plan)?;
        let other_origin_tls = match &connector.tls {
            Some(tls) => Some(tls.clone()),
            None => TlsClient::new(&tls_settings(plan), "localhost").ok(),
        };
        Ok(ConnectionSettings {
            other_origin_tls,
            proxy_authorization: plan.options.proxy.as_ref().and_then(|p| p.authorization()),
            proxied: plan.options.proxy.is_some(),
            connector,
            model: connections.model,
            pool_size: connections.pool_size.max(1) as usize,
            max_streams: plan.options.http2.max_concurrent_streams,
            local_addrs: connections.local_addrs.clone().into(),
            dns_ttl: connections.dns_ttl,
            // Connections go to the proxy when there is one.
            host: destination(plan).host.clone(),
            port: destination(plan).port,
            decode_responses: plan.options.compression,
            max_body: usize::try_from(plan.options.limits.max_body).unwrap_or(usize::MAX),
        })
    }
}

/// A worker's connection state: the shared pool (in the `shared` model), the next source
/// address, and the target's addresses when they are re-resolved during the run.
pub(crate) struct WorkerConnections {
    pub pool: Option<SharedPool>,
    next_local: Cell<usize>,
    resolved: RefCell<Option<(Instant, Arc<Vec<SocketAddr>>)>>,
}

impl WorkerConnections {
    pub(crate) fn new(settings: &ConnectionSettings) -> Self {
        Self {
            pool: (settings.model == ConnectionModel::Shared)
                .then(|| SharedPool::new(settings.pool_size, settings.max_streams)),
            next_local: Cell::new(0),
            resolved: RefCell::new(None),
        }
    }

    /// The source address for the next connection, in turn.
    pub(crate) fn next_local(&self, settings: &ConnectionSettings) -> Option<IpAddr> {
        if settings.local_addrs.is_empty() {
            return None;
        }
        let i = self.next_local.get();
        self.next_local.set((i + 1) % settings.local_addrs.len());
        Some(settings.local_addrs[i])
    }

    /// The target's addresses when a DNS TTL is set: resolved again once it has passed.
    pub(crate) async fn resolve_with_ttl(
        &self,
        ttl: Duration,
        host: &str,
        port: u16,
    ) -> Result<Arc<Vec<SocketAddr>>, ErrorKind> {
        self.cached_or_resolve(ttl, Instant::now, || barrage_http::resolve(host, port))
            .await
    }

    /// The cached addresses while younger than `ttl` by `now`, else `resolve`'s answer
    /// (cached from when it arrived; a failure is not cached). The clock and the resolver are
    /// parameters so tests can count resolutions.
    async fn cached_or_resolve<F, R>(
        &self,
        ttl: Duration,
        now: impl Fn() -> Instant,
        resolve: R,
    ) -> Result<Arc<Vec<SocketAddr>>, ErrorKind>
    where
        R: FnOnce() -> F,
        F: std::future::Future<Output = Result<Vec<SocketAddr>, ErrorKind>>,
    {
        if let Some((at, addrs)) = &*self.resolved.borrow() {
            if now().saturating_duration_since(*at) < ttl {
                return Ok(Arc::clone(addrs));
            }
        }
        let addrs = Arc::new(resolve().await?);
        *self.resolved.borrow_mut() = Some((now(), Arc::clone(&addrs)));
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker's connection state with a fake clock and a resolver that counts its calls
    /// and answers `127.0.0.1:N` for its N-th call (or fails when `fail_first` is set).
    struct Fixture {
        connections: WorkerConnections,
        clock: Cell<Instant>,
        resolutions: Cell<u16>,
        fail_first: bool,
    }

    impl Fixture {
        fn new(fail_first: bool) -> Self {
            Self {
                connections: WorkerConnections {
                    pool: None,
                    next_local: Cell::new(0),
                    resolved: RefCell::new(None),
                },
                clock: Cell::new(Instant::now()),
                resolutions: Cell::new(0),
                fail_first,
            }
        }

        fn advance(&self, by: Duration) {
            self.clock.set(self.clock.get() + by);
        }

        /// The addresses one new connection would go to.
        async fn connect(&self, ttl: Duration) -> Result<Arc<Vec<SocketAddr>>, ErrorKind> {
            self.connections
                .cached_or_resolve(
                    ttl,
                    || self.clock.get(),
                    || async {
                        let n = self.resolutions.get() + 1;
                        self.resolutions.set(n);
                        if self.fail_first && n == 1 {
                            return Err(ErrorKind::Dns);
                        }
                        Ok(vec![SocketAddr::from(([127, 0, 0, 1], n))])
                    },
                )
                .await
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn connections_within_the_ttl_share_one_resolution() {
        let f = Fixture::new(false);
        let first = f.connect(Duration::from_secs(60)).await.unwrap();
        for _ in 0..1000 {
            f.advance(Duration::from_millis(50));
            let addrs = f.connect(Duration::from_secs(60)).await.unwrap();
            assert!(Arc::ptr_eq(&addrs, &first));
        }
        // 1000 connections over 50 s: one resolution.
        assert_eq!(f.resolutions.get(), 1);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_expired_ttl_resolves_again_and_uses_the_new_answer() {
        let f = Fixture::new(false);
        let ttl = Duration::from_millis(10);
        let port = |addrs: Arc<Vec<SocketAddr>>| addrs[0].port();
        assert_eq!(port(f.connect(ttl).await.unwrap()), 1);
        f.advance(Duration::from_millis(9));
        assert_eq!(port(f.connect(ttl).await.unwrap()), 1, "9 ms old: cached");
        f.advance(Duration::from_millis(1));
        assert_eq!(port(f.connect(ttl).await.unwrap()), 2, "10 ms old: expired");
        f.advance(Duration::from_millis(5));
        assert_eq!(port(f.connect(ttl).await.unwrap()), 2);
        assert_eq!(f.resolutions.get(), 2);

        // A tiny TTL: every connection opened after it passed resolves.
        let tiny = Duration::from_nanos(1);
        for _ in 0..20 {
            f.advance(Duration::from_micros(1));
            f.connect(tiny).await.unwrap();
        }
        assert_eq!(f.resolutions.get(), 22);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_resolution_is_not_cached() {
        let f = Fixture::new(true);
        let ttl = Duration::from_secs(60);
        assert_eq!(f.connect(ttl).await, Err(ErrorKind::Dns));
        // The next connection asks again (within the TTL) and gets an answer.
        assert_eq!(f.connect(ttl).await.unwrap()[0].port(), 2);
        assert_eq!(f.connect(ttl).await.unwrap()[0].port(), 2);
        assert_eq!(f.resolutions.get(), 2);
    }
}
