//! HTTP semantics a test can ask for beyond one request and one response: credentials for
//! basic authentication and the debug printout of exchanges. (Redirect limits, cookie jars and
//! proxies are plain fields of [`crate::TestOptions`].)

use serde::{Deserialize, Serialize};

/// How many redirects hey, k6 and browsers follow by default.
pub const DEFAULT_MAX_REDIRECTS: u32 = 10;

/// The redirects Go's client (hey) follows: it sends at most 10 requests per chain, and a
/// 10th response that still redirects is the error "stopped after 10 redirects" (see
/// [`crate::TestOptions::too_many_redirects_is_error`]).
pub const GO_CLIENT_MAX_REDIRECTS: u32 = 9;

/// A user name and password for `Authorization: Basic` (RFC 7617).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl Credentials {
    /// The credentials in a URL's `user:pass@`, percent-decoded; `None` when it has none or
    /// is not a URL.
    pub fn from_url(url: &str) -> Option<Credentials> {
        let parsed = url::Url::parse(url).ok()?;
        if parsed.username().is_empty() && parsed.password().is_none() {
            return None;
        }
        let decode = |text: &str| {
            percent_encoding::percent_decode_str(text)
                .decode_utf8_lossy()
                .into_owned()
        };
        Some(Credentials {
            username: decode(parsed.username()),
            password: decode(parsed.password().unwrap_or("")),
        })
    }

    /// Parses hey's `-a user:password` (the first `:` separates them).
    pub fn parse_pair(text: &str) -> Option<Credentials> {
        let (username, password) = text.split_once(':')?;
        Some(Credentials {
            username: username.to_string(),
            password: password.to_string(),
        })
    }

    /// The `Authorization` header value: `Basic base64(user:pass)`.
    pub fn basic_header_value(&self) -> String {
        use base64::Engine as _;
        let pair = format!("{}:{}", self.username, self.password);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }
}

/// An HTTP proxy every request goes through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proxy {
    /// The proxy's address (`http://` only).
    pub target: crate::Target,
    /// From `user:pass@` in the proxy URL: sent as `Proxy-Authorization: Basic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Credentials>,
}

impl Proxy {
    /// Parses `http://[user:pass@]host:port`, or hey's `host:port`.
    pub fn parse(text: &str) -> Result<Proxy, String> {
        let url = if text.contains("://") {
            text.to_string()
        } else {
            format!("http://{text}")
        };
        let target = crate::Target::parse(&url).map_err(|e| e.to_string())?;
        if target.scheme != crate::Scheme::Http {
            return Err(format!(
                "`{text}`: only http:// proxies are supported (https:// targets go through them with CONNECT)"
            ));
        }
        Ok(Proxy {
            target,
            credentials: Credentials::from_url(&url),
        })
    }

    /// The `Proxy-Authorization` value, when the proxy URL has credentials.
    pub fn authorization(&self) -> Option<String> {
        self.credentials
            .as_ref()
            .map(Credentials::basic_header_value)
    }
}

/// What `--http-debug` prints of each of the first exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HttpDebug {
    /// Request and response lines and headers.
    Headers,
    /// Headers and bodies.
    Full,
}

impl HttpDebug {
    /// Parses the flag's value: none (headers) or `full`.
    pub fn parse(value: Option<&str>) -> Option<HttpDebug> {
        match value {
            None | Some("") | Some("headers") => Some(HttpDebug::Headers),
            Some("full") => Some(HttpDebug::Full),
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_from_userinfo_percent_decoded() {
        let c = Credentials::from_url("http://us%40er:p%3Ass@127.0.0.1:8/x").unwrap();
        assert_eq!(
            (c.username.as_str(), c.password.as_str()),
            ("us@er", "p:ss")
        );
        assert_eq!(Credentials::from_url("http://127.0.0.1/"), None);
        let only_user = Credentials::from_url("http://u@h/").unwrap();
        assert_eq!(only_user.password, "");
        assert_eq!(
            Credentials::parse_pair("u:p").unwrap().basic_header_value(),
            "Basic dTpw"
        );
        assert_eq!(Credentials::parse_pair("nocolon"), None);
    }

    #[test]
    fn proxies_parse_with_or_without_a_scheme() {
        let p = Proxy::parse("127.0.0.1:3128").unwrap();
        assert_eq!((p.target.host.as_str(), p.target.port), ("127.0.0.1", 3128));
        assert_eq!(p.authorization(), None);
        let p = Proxy::parse("http://u:pw@[::1]:8080").unwrap();
        assert_eq!(p.target.host, "::1");
        assert_eq!(p.authorization().as_deref(), Some("Basic dTpwdw=="));
        assert!(Proxy::parse("https://p:1")
            .unwrap_err()
            .contains("only http://"));
        assert!(Proxy::parse("not a proxy").is_err());
    }

    #[test]
    fn debug_levels_parse() {
        assert_eq!(HttpDebug::parse(None), Some(HttpDebug::Headers));
        assert_eq!(HttpDebug::parse(Some("full")), Some(HttpDebug::Full));
        assert_eq!(HttpDebug::parse(Some("loud")), None);
    }
}
