//! Protocol flags shared by `barrage quick` and `barrage run`: HTTP version, TLS, HTTP/2
//! settings and the connection model. Each flag given overrides the plan's option; flags not
//! given leave the plan (or its defaults) alone.

use crate::usage::usage;
use crate::values;
use barrage_plan::{
    parse_addr_range, ConnectionModel, HttpDebug, HttpVersion, ResponseLimits, TestOptions,
    TlsVersion,
};
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Clone, Default, PartialEq, Eq, Args)]
pub struct ProtocolArgs {
    /// Use HTTP/2 (h2c prior knowledge on http://, ALPN h2 on https://; required)
    #[arg(long, conflicts_with = "http1")]
    pub h2: bool,
    /// Use HTTP/1.1 only (no h2 even when the TLS server offers it)
    #[arg(long = "http1.1")]
    pub http1: bool,
    /// Trust the certificates in this PEM file (on top of the system roots)
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify the server's certificate
    #[arg(long, short = 'k')]
    pub insecure: bool,
    /// Client certificate (PEM) for mutual TLS
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// Private key (PEM) of --cert
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Server name for SNI and certificate checks (default: the URL's host)
    #[arg(long, value_name = "NAME")]
    pub sni: Option<String>,
    /// Lowest TLS version to offer: 1.2 or 1.3
    #[arg(long, value_name = "VERSION")]
    pub tls_min: Option<String>,
    /// Highest TLS version to offer: 1.2 or 1.3
    #[arg(long, value_name = "VERSION")]
    pub tls_max: Option<String>,
    /// Do not resume TLS sessions (every handshake is a full one)
    #[arg(long)]
    pub no_tls_resumption: bool,
    /// How clients map to connections: per-client, shared or new-per-request
    #[arg(long, value_name = "MODEL")]
    pub connection_model: Option<String>,
    /// Connections per worker thread in the shared model
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = values::pool_size)]
    pub pool_size: Option<u32>,
    /// HTTP/2 streams used at once per connection
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = values::h2_size)]
    pub max_streams: Option<u32>,
    /// HTTP/2 initial stream window, bytes (1 to 2147483647)
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true, value_parser = values::h2_size)]
    pub h2_window: Option<u32>,
    /// HTTP/2 initial connection window, bytes (1 to 2147483647)
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true, value_parser = values::h2_size)]
    pub h2_connection_window: Option<u32>,
    /// Resolve the target's name again after this long (default: once per run)
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub dns_ttl: Option<String>,
    /// Source addresses for new connections, e.g. 127.0.0.1-127.0.0.50 (comma-separated list)
    #[arg(long, value_name = "RANGE")]
    pub local_addrs: Option<String>,
    /// Print the run's first 20 requests and responses to stderr: headers, and bodies too
    /// with =full
    #[arg(
        long,
        value_name = "full",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "headers"
    )]
    pub http_debug: Option<String>,
    /// Most of a response body kept for an extraction, e.g. 16MiB (default 4MiB); a longer
    /// one fails as body_too_large. Bodies nothing reads are never kept.
    #[arg(long, value_name = "SIZE")]
    pub max_body: Option<String>,
    /// Most header fields a response may carry (default 256)
    #[arg(long, value_name = "N")]
    pub max_headers: Option<u32>,
}

fn tls_version(flag: &str, value: &str) -> anyhow::Result<TlsVersion> {
    TlsVersion::parse(value).ok_or_else(|| {
        usage(format!(
            "{flag}: `{value}` is not a TLS version (use 1.2 or 1.3)"
        ))
    })
}

fn path_text(path: &std::path::Path) -> String {
    path.to_string_lossy().into_owned()
}

impl ProtocolArgs {
    /// Writes the flags given into `options`.
    pub fn apply(&self, options: &mut TestOptions) -> anyhow::Result<()> {
        if let Some(level) = &self.http_debug {
            options.http_debug = Some(HttpDebug::parse(Some(level)).ok_or_else(|| {
                usage(format!(
                    "--http-debug: `{level}` is not a level (give none, or =full)"
                ))
            })?);
        }
        if self.h2 {
            options.http = HttpVersion::Http2;
        }
        if self.http1 {
            options.http = HttpVersion::Http1;
        }
        let tls = &mut options.tls;
        if let Some(path) = &self.cacert {
            tls.ca_file = Some(path_text(path));
        }
        tls.insecure |= self.insecure;
        if let (Some(cert), Some(key)) = (&self.cert, &self.key) {
            tls.client_cert = Some(path_text(cert));
            tls.client_key = Some(path_text(key));
        }
        if let Some(name) = &self.sni {
            tls.server_name = Some(name.clone());
        }
        if let Some(v) = &self.tls_min {
            tls.min_version = Some(tls_version("--tls-min", v)?);
        }
        if let Some(v) = &self.tls_max {
            tls.max_version = Some(tls_version("--tls-max", v)?);
        }
        if let (Some(min), Some(max)) = (tls.min_version, tls.max_version) {
            if min > max {
                return Err(usage("--tls-min is above --tls-max"));
            }
        }
        if self.no_tls_resumption {
            tls.session_resumption = false;
        }
        let connections = &mut options.connections;
        if let Some(model) = &self.connection_model {
            connections.model = ConnectionModel::parse(model).ok_or_else(|| {
                usage(format!(
                    "--connection-model: `{model}` is not a model (use per-client, shared or new-per-request)"
                ))
            })?;
        }
        if let Some(size) = self.pool_size {
            connections.pool_size = size;
        }
        if let Some(ttl) = &self.dns_ttl {
            connections.dns_ttl = Some(values::duration_flag("--dns-ttl", ttl, true)?);
        }
        if let Some(list) = &self.local_addrs {
            let mut addrs = Vec::new();
            for part in list.split(',') {
                addrs.extend(
                    parse_addr_range(part).map_err(|e| usage(format!("--local-addrs: {e}")))?,
                );
            }
            connections.local_addrs = addrs;
        }
        if let Some(n) = self.max_streams {
            options.http2.max_concurrent_streams = Some(n);
        }
        if let Some(bytes) = self.h2_window {
            options.http2.initial_window_size = Some(bytes);
        }
        if let Some(bytes) = self.h2_connection_window {
            options.http2.initial_connection_window_size = Some(bytes);
        }
        if let Some(size) = &self.max_body {
            options.limits.max_body = ResponseLimits::parse_max_body(size)
                .map_err(|e| usage(format!("--max-body: {e}")))?;
        }
        if let Some(n) = self.max_headers {
            if !ResponseLimits::MAX_HEADERS_RANGE.contains(&n) {
                return Err(usage(format!(
                    "--max-headers: {n} is out of range (1 to 65536)"
                )));
            }
            options.limits.max_headers = n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_only_what_they_name() {
        let mut options = TestOptions::default();
        let args = ProtocolArgs {
            h2: true,
            insecure: true,
            connection_model: Some("shared".into()),
            pool_size: Some(8),
            local_addrs: Some("127.0.0.1-127.0.0.3,127.0.0.9".into()),
            ..ProtocolArgs::default()
        };
        args.apply(&mut options).unwrap();
        assert_eq!(options.http, HttpVersion::Http2);
        assert!(options.tls.insecure && options.tls.session_resumption);
        assert_eq!(options.connections.model, ConnectionModel::Shared);
        assert_eq!(options.connections.pool_size, 8);
        assert_eq!(options.connections.local_addrs.len(), 4);
        assert_eq!(options.tls.ca_file, None);
    }

    #[test]
    fn bad_values_name_their_flag() {
        let mut options = TestOptions::default();
        for (args, flag) in [
            (
                ProtocolArgs {
                    connection_model: Some("pooled".into()),
                    ..Default::default()
                },
                "--connection-model",
            ),
            (
                ProtocolArgs {
                    max_body: Some("0".into()),
                    ..Default::default()
                },
                "--max-body",
            ),
            (
                ProtocolArgs {
                    max_headers: Some(0),
                    ..Default::default()
                },
                "--max-headers",
            ),
            (
                ProtocolArgs {
                    tls_min: Some("1.1".into()),
                    ..Default::default()
                },
                "--tls-min",
            ),
            (
                ProtocolArgs {
                    local_addrs: Some("127.0.0.5-127.0.0.1".into()),
                    ..Default::default()
                },
                "--local-addrs",
            ),
        ] {
            let error = args.apply(&mut options).unwrap_err().to_string();
            assert!(error.starts_with(flag), "{error}");
        }
    }
}
