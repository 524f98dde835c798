//! Connections to origins other than the plan target (a redirect to another host, port or
//! scheme): where such an origin is (resolved when a client first goes there), how to
//! connect to it (the run's TLS options and session cache with the origin's own server name,
//! its HTTP version, its proxy: a CONNECT tunnel for https, absolute-form requests for
//! http), and the one connection a client keeps to the last such origin, reused while
//! keep-alive allows.
//!
//! For other front ends (k6's `http.*` requests to any URL can use the same path): call
//! [`Client::route_to_other`] with the absolute URL, write the request line with
//! [`OtherOrigin::request_target`], and send with [`crate::exchange::attempt`] on
//! `other.connection`, giving `other.addrs` and `other.connector` in
//! [`crate::exchange::Wanted`] (as `exchange.rs` does for a redirect hop).

use crate::client::Client;
use crate::worker::Worker;
use barrage_http::{AnyConnection, Connector, Tunnel};
use barrage_metrics::ErrorKind;
use std::net::SocketAddr;

/// A client's way to one origin that is not the plan target.
pub(crate) struct OtherOrigin {
    /// `scheme://host:port`, what a new URL is compared against.
    key: String,
    /// Where connections go: the origin's addresses, or the proxy's.
    pub(crate) addrs: Vec<SocketAddr>,
    pub(crate) connector: Connector,
    /// Through a plain-HTTP proxy: requests name their whole URL (absolute form).
    absolute_form: bool,
    /// The open connection, when there is one.
    pub(crate) connection: Option<AnyConnection>,
}

impl OtherOrigin {
    /// The request line's target for `url` on this origin: its path and query, or through a
    /// plain proxy the whole URL.
    pub(crate) fn request_target(&self, url: &url::Url) -> String {
        if self.absolute_form {
            let mut whole = url.clone();
            whole.set_fragment(None);
            return whole.to_string();
        }
        path_and_query(url)
    }
}

/// `url`'s path and query, as an origin-form request target.
pub(crate) fn path_and_query(url: &url::Url) -> String {
    let mut target = url.path().to_string();
    if let Some(query) = url.query() {
        target.push('?');
        target.push_str(query);
    }
    target
}

/// `scheme://host:port` of `url` (the port always written), `None` for a URL that is not
/// http(s) or has no host.
pub(crate) fn origin_key(url: &url::Url) -> Option<String> {
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = url.host_str()?;
    Some(format!(
        "{scheme}://{host}:{}",
        url.port_or_known_default()?
    ))
}

/// `host:port` as a CONNECT request and the connection's addresses name it.
fn host_port(url: &url::Url) -> Option<(String, u16)> {
    let host = url.host_str()?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Some((host, url.port_or_known_default()?))
}

impl Client {
    /// Points the client's other-origin connection at `url`'s origin (which is not the
    /// plan target): kept when it already goes there, else closed and replaced (resolving
    /// the host, building TLS for its name). Fails as the request's error kind would: `dns`
    /// for a name that does not resolve, `tls` when no TLS could be set up for https.
    pub(crate) async fn route_to_other(
        &mut self,
        worker: &Worker,
        url: &url::Url,
    ) -> Result<&mut OtherOrigin, ErrorKind> {
        let key = origin_key(url).ok_or(ErrorKind::Connect)?;
        if self.other_origin.as_ref().is_some_and(|o| o.key == key) {
            return Ok(self.other_origin.as_mut().expect("checked above"));
        }
        self.other_origin = None;
        let settings = &worker.run.connection;
        let (host, port) = host_port(url).ok_or(ErrorKind::Connect)?;
        let https = url.scheme() == "https";
        let mut connector = settings.connector.clone();
        connector.tls = if https {
            let tls = settings.other_origin_tls.as_ref().ok_or(ErrorKind::Tls)?;
            Some(tls.for_host(&host).map_err(|_| ErrorKind::Tls)?)
        } else {
            None
        };
        connector.tunnel = (settings.proxied && https).then(|| Tunnel {
            authority: if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            },
            proxy_authorization: settings.proxy_authorization.clone(),
        });
        let absolute_form = settings.proxied && !https;
        if absolute_form {
            // Cleartext HTTP/2 does not go through a proxy.
            connector.version = barrage_http::Version::Http1;
        }
        let addrs = if settings.proxied {
            worker
                .run
                .addrs
                .as_ref()
                .as_ref()
                .map_err(|kind| *kind)?
                .clone()
        } else {
            barrage_http::resolve(&host, port).await?
        };
        Ok(self.other_origin.insert(Box::new(OtherOrigin {
            key,
            addrs,
            connector,
            absolute_form,
            connection: None,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_keyed_by_scheme_host_and_port() {
        let url = |u: &str| url::Url::parse(u).unwrap();
        assert_eq!(
            origin_key(&url("http://a.test/x")).as_deref(),
            Some("http://a.test:80")
        );
        assert_eq!(
            origin_key(&url("https://a.test:8443/x?y")).as_deref(),
            Some("https://a.test:8443")
        );
        assert_eq!(origin_key(&url("ftp://a.test/")), None);
        assert_eq!(path_and_query(&url("http://a/b/c?d=1#e")), "/b/c?d=1");
        assert_eq!(
            host_port(&url("http://[::1]:9/")),
            Some(("::1".to_string(), 9))
        );
    }
}
