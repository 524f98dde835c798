//! The target: scheme, host and port that every request of a plan goes to.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// Where requests go. Paths live on the request steps; the target is only the origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub scheme: Scheme,
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    pub port: u16,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TargetError {
    #[error("`{url}` is not a valid URL: {reason}")]
    Invalid { url: String, reason: String },
    #[error("`{url}`: unsupported scheme `{scheme}` (barrage speaks http:// and https://)")]
    UnsupportedScheme { url: String, scheme: String },
    #[error("`{url}` has no host")]
    NoHost { url: String },
}

impl Target {
    /// Parses an origin (`http://host:port`); any path in `url` is ignored here, use
    /// [`Target::split_url`] to keep it.
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        Self::split_url(url).map(|(target, _)| target)
    }

    /// Splits a full URL into its origin and its path-and-query (always starting with `/`).
    pub fn split_url(url: &str) -> Result<(Target, String), TargetError> {
        let parsed = url::Url::parse(url).map_err(|e| TargetError::Invalid {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        let scheme = match parsed.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(TargetError::UnsupportedScheme {
                    url: url.to_string(),
                    scheme: other.to_string(),
                })
            }
        };
        let host = match parsed.host() {
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            Some(host) => host.to_string(),
            None => {
                return Err(TargetError::NoHost {
                    url: url.to_string(),
                })
            }
        };
        let port = parsed
            .port_or_known_default()
            .unwrap_or(scheme.default_port());
        let mut path = parsed.path().to_string();
        if let Some(query) = parsed.query() {
            path.push('?');
            path.push_str(query);
        }
        Ok((Target { scheme, host, port }, path))
    }

    /// The value of the `Host` header: the port is omitted when it is the scheme's default.
    /// Whether the target speaks TLS.
    pub fn is_https(&self) -> bool {
        self.scheme == Scheme::Https
    }

    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.scheme.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.scheme.as_str(), self.authority())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_origin_and_path_with_query() {
        let (t, path) = Target::split_url("http://127.0.0.1:9000/a/b?x=1&y=2").unwrap();
        assert_eq!(t.host, "127.0.0.1");
        assert_eq!(t.port, 9000);
        assert_eq!(path, "/a/b?x=1&y=2");
        assert_eq!(t.authority(), "127.0.0.1:9000");
    }

    #[test]
    fn default_port_and_root_path() {
        let (t, path) = Target::split_url("http://localhost").unwrap();
        assert_eq!((t.port, path.as_str()), (80, "/"));
        assert_eq!(t.to_string(), "http://localhost");
    }

    #[test]
    fn ipv6_literal_is_bracketed_in_authority() {
        let t = Target::parse("http://[::1]:8080/").unwrap();
        assert_eq!(t.host, "::1");
        assert_eq!(t.authority(), "[::1]:8080");
    }

    #[test]
    fn https_has_its_own_default_port() {
        let (t, path) = Target::split_url("https://example.test/x").unwrap();
        assert_eq!(
            (t.scheme, t.port, path.as_str()),
            (Scheme::Https, 443, "/x")
        );
        assert_eq!(t.to_string(), "https://example.test");
        let t = Target::parse("https://127.0.0.1:8443").unwrap();
        assert_eq!(t.to_string(), "https://127.0.0.1:8443");
    }

    #[test]
    fn rejects_bad_urls_and_schemes() {
        assert!(matches!(
            Target::parse("not a url"),
            Err(TargetError::Invalid { .. })
        ));
        assert!(matches!(
            Target::parse("ftp://host/"),
            Err(TargetError::UnsupportedScheme { .. })
        ));
    }
}
