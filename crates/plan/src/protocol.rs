//! Protocol options of a test: HTTP version, TLS settings, HTTP/2 settings and how clients map
//! to connections (connection model, pool size, DNS caching, source addresses).

use serde::{Deserialize, Serialize};
use std::net::IpAddr;
use std::time::Duration;

/// Which HTTP version requests use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1 only (ALPN offers only `http/1.1` over TLS).
    #[serde(rename = "1.1")]
    Http1,
    /// HTTP/2 only: prior knowledge (h2c) on `http://`, ALPN `h2` on `https://`; a server
    /// that does not offer it is an error.
    #[serde(rename = "2")]
    Http2,
    /// HTTP/1.1 on `http://`; over TLS, whatever the server picks by ALPN (h2 preferred).
    #[default]
    #[serde(rename = "auto")]
    Auto,
}

impl HttpVersion {
    pub fn parse(text: &str) -> Option<HttpVersion> {
        match text {
            "1.1" | "1" | "http1.1" => Some(HttpVersion::Http1),
            "2" | "h2" | "http2" => Some(HttpVersion::Http2),
            "auto" => Some(HttpVersion::Auto),
            _ => None,
        }
    }
}

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TlsVersion {
    #[serde(rename = "1.2")]
    Tls12,
    #[serde(rename = "1.3")]
    Tls13,
}

impl TlsVersion {
    pub fn parse(text: &str) -> Option<TlsVersion> {
        match text {
            "1.2" => Some(TlsVersion::Tls12),
            "1.3" => Some(TlsVersion::Tls13),
            _ => None,
        }
    }
}

/// TLS client settings for `https://` targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsOptions {
    /// Extra trusted roots (PEM file), on top of the system's.
    pub ca_file: Option<String>,
    /// Skip certificate verification entirely.
    pub insecure: bool,
    /// Client certificate chain (PEM) and its private key (PEM), for mutual TLS.
    pub client_cert: Option<String>,
    pub client_key: Option<String>,
    /// Name sent as SNI and verified against the certificate, instead of the target host.
    pub server_name: Option<String>,
    /// Lowest and highest TLS version offered (default: 1.2 to 1.3).
    pub min_version: Option<TlsVersion>,
    pub max_version: Option<TlsVersion>,
    /// Resume sessions (tickets / session ids) on new connections to the same server.
    pub session_resumption: bool,
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            ca_file: None,
            insecure: false,
            client_cert: None,
            client_key: None,
            server_name: None,
            min_version: None,
            max_version: None,
            session_resumption: true,
        }
    }
}

/// HTTP/2 settings; `None` keeps the protocol defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Http2Options {
    /// Streams used at once per connection (also capped by the server's limit).
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE (per stream) in bytes.
    pub initial_window_size: Option<u32>,
    /// The connection-level receive window in bytes.
    pub initial_connection_window_size: Option<u32>,
}

/// Bounds on what a response may bring before it counts as an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResponseLimits {
    /// The most body bytes kept (decoded) for an extraction; a longer body is
    /// `body_too_large`. Bodies nothing reads are counted, never kept, whatever their size.
    pub max_body: u64,
    /// The most header fields an HTTP/1.1 response head may carry.
    pub max_headers: u32,
}

impl ResponseLimits {
    pub const DEFAULT_MAX_BODY: u64 = 4 * 1024 * 1024;
    pub const DEFAULT_MAX_HEADERS: u32 = 256;
    /// The range `max_body` may take: a kept body lives in memory for the whole exchange.
    pub const MAX_BODY_RANGE: std::ops::RangeInclusive<u64> = 1..=(1 << 30);
    pub const MAX_HEADERS_RANGE: std::ops::RangeInclusive<u32> = 1..=65_536;

    /// Parses a body size: bytes, or a number with `KB`/`MB`/`GB` (powers of 1000) or
    /// `KiB`/`MiB`/`GiB` (powers of 1024), and checks it is within [`Self::MAX_BODY_RANGE`].
    pub fn parse_max_body(text: &str) -> Result<u64, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "kb" | "k" => 1_000,
            "mb" | "m" => 1_000_000,
            "gb" | "g" => 1_000_000_000,
            "kib" => 1 << 10,
            "mib" => 1 << 20,
            "gib" => 1 << 30,
            other => {
                return Err(format!(
                    "`{other}` is not a size unit (use B, KB, MB, KiB, MiB...)"
                ))
            }
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("`{text}` is not a size (e.g. 4MiB, 500KB, 1048576)"))?;
        let bytes = value * scale as f64;
        let (low, high) = (*Self::MAX_BODY_RANGE.start(), *Self::MAX_BODY_RANGE.end());
        if !bytes.is_finite() || bytes < low as f64 || bytes > high as f64 {
            return Err(format!("`{text}` is out of range (1 B to 1 GiB)"));
        }
        Ok(bytes as u64)
    }

    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

impl Default for ResponseLimits {
    fn default() -> Self {
        Self {
            max_body: Self::DEFAULT_MAX_BODY,
            max_headers: Self::DEFAULT_MAX_HEADERS,
        }
    }
}

#[cfg(test)]
mod limit_tests {
    use super::ResponseLimits;

    #[test]
    fn body_sizes_parse_with_units_and_ranges() {
        assert_eq!(ResponseLimits::parse_max_body("4MiB"), Ok(4 << 20));
        assert_eq!(ResponseLimits::parse_max_body("500 KB"), Ok(500_000));
        assert_eq!(ResponseLimits::parse_max_body("1048576"), Ok(1 << 20));
        assert_eq!(ResponseLimits::parse_max_body("1.5k"), Ok(1500));
        for bad in ["0", "2GiB", "", "lots", "5 parsecs", "1e400"] {
            assert!(ResponseLimits::parse_max_body(bad).is_err(), "{bad}");
        }
    }
}

/// How clients map to connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConnectionModel {
    /// Each client owns its connection, closed when its session ends (like real devices).
    #[default]
    PerClient,
    /// A pool of `pool_size` connections per worker thread; HTTP/2 streams of many clients
    /// multiplex over them, HTTP/1.1 clients borrow an idle one per request.
    Shared,
    /// A new connection for every request (connection-churn tests).
    NewPerRequest,
}

impl ConnectionModel {
    pub fn parse(text: &str) -> Option<ConnectionModel> {
        match text {
            "per-client" => Some(ConnectionModel::PerClient),
            "shared" => Some(ConnectionModel::Shared),
            "new-per-request" => Some(ConnectionModel::NewPerRequest),
            _ => None,
        }
    }
}

/// Connection model and the socket-level settings around it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnectionOptions {
    pub model: ConnectionModel,
    /// Connections per worker thread in the `shared` model.
    pub pool_size: u32,
    /// Re-resolve the target's name this often; `None` resolves once per run.
    #[serde(with = "crate::duration_ms::option")]
    pub dns_ttl: Option<Duration>,
    /// Source addresses new connections bind to, in turn (empty: the kernel picks).
    pub local_addrs: Vec<IpAddr>,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            model: ConnectionModel::PerClient,
            pool_size: 8,
            dns_ttl: None,
            local_addrs: Vec::new(),
        }
    }
}

/// Parses `127.0.0.1-127.0.0.50` (an inclusive IPv4 range) or one address into addresses.
pub fn parse_addr_range(text: &str) -> Result<Vec<IpAddr>, String> {
    let parse = |s: &str| {
        s.trim()
            .parse::<IpAddr>()
            .map_err(|_| format!("`{s}` is not an IP address"))
    };
    let Some((from, to)) = text.split_once('-') else {
        return Ok(vec![parse(text)?]);
    };
    match (parse(from)?, parse(to)?) {
        (IpAddr::V4(from), IpAddr::V4(to)) => {
            let (from, to) = (u32::from(from), u32::from(to));
            if from > to || to - from >= 65_536 {
                return Err(format!(
                    "`{text}`: the range must go upwards and hold at most 65536 addresses"
                ));
            }
            Ok((from..=to)
                .map(|n| IpAddr::V4(std::net::Ipv4Addr::from(n)))
                .collect())
        }
        _ => Err(format!(
            "`{text}`: ranges are IPv4 only; list IPv6 addresses one by one"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_models_parse_and_serialise_as_written() {
        assert_eq!(HttpVersion::parse("2"), Some(HttpVersion::Http2));
        assert_eq!(HttpVersion::parse("1.1"), Some(HttpVersion::Http1));
        assert_eq!(HttpVersion::parse("3"), None);
        assert_eq!(
            serde_json::to_string(&HttpVersion::Http1).unwrap(),
            "\"1.1\""
        );
        assert_eq!(
            serde_json::to_string(&ConnectionModel::NewPerRequest).unwrap(),
            "\"new-per-request\""
        );
        assert_eq!(TlsVersion::parse("1.3"), Some(TlsVersion::Tls13));
        assert!(TlsVersion::Tls12 < TlsVersion::Tls13);
    }

    #[test]
    fn address_ranges_expand_inclusively() {
        let addrs = parse_addr_range("127.0.0.1-127.0.0.3").unwrap();
        assert_eq!(addrs.len(), 3);
        assert_eq!(addrs[2].to_string(), "127.0.0.3");
        assert_eq!(parse_addr_range("::1").unwrap().len(), 1);
        assert!(parse_addr_range("127.0.0.9-127.0.0.1").is_err());
        assert!(parse_addr_range("nope").is_err());
    }
}
