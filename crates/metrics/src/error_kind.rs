//! The classification of failed requests: every failure is counted under exactly one kind.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a request produced no HTTP response. Failures are data: they are counted by kind
/// and never abort the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The host name did not resolve.
    Dns,
    /// The target actively refused the connection (nothing listening).
    Refused,
    /// Connecting did not finish (unreachable network, or other connect failure).
    Connect,
    /// TLS handshake failure other than a certificate rejection (protocol, version, ALPN).
    Tls,
    /// The server's certificate chains to no trusted root (`--cacert` adds roots).
    TlsUnknownCa,
    /// The server's certificate is not valid for the host name asked for (SNI).
    TlsBadName,
    /// The server's certificate has expired or is not valid yet.
    TlsExpired,
    /// The server's certificate was rejected for another reason (revoked, bad signature...).
    TlsBadCertificate,
    /// HTTP/2 was required but the server did not offer it (ALPN, or no h2c preface answer).
    H2NotOffered,
    /// The server sent GOAWAY before this stream completed.
    H2GoAway,
    /// The server reset this stream (RST_STREAM).
    H2StreamReset,
    /// The stream could not open: the connection's concurrent-stream limit was exhausted.
    H2StreamLimit,
    /// An HTTP/2 protocol or flow-control error.
    H2Protocol,
    /// The request did not complete within its timeout.
    Timeout,
    /// The connection was reset by the peer.
    Reset,
    /// The peer closed the connection before a complete response arrived.
    Closed,
    /// The response was not valid HTTP.
    Malformed,
    /// Any other I/O failure.
    Io,
    /// Still open when the run ended (its end, a second stop signal, or a grace period that
    /// ran out): sent, never answered. Kept with the error counts (one storage, one encoding)
    /// but not an error: `TagMetrics::error_count` and `errors_by_kind` leave it out, as hey
    /// and k6 count no error for a request the run's end cut off; `TagMetrics::interrupted`
    /// reads it.
    Interrupted,
    /// A body kept for an extraction or check grew past its limit (`--max-body`).
    BodyTooLarge,
    /// The generator ran out of file descriptors (EMFILE/ENFILE) opening a connection: a
    /// limit of this machine, not the target's fault.
    LocalFdLimit,
    /// Still a redirect after the redirect limit, where the limit is an error (Go's client,
    /// so hey: "stopped after 10 redirects").
    TooManyRedirects,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 22] = [
        ErrorKind::Dns,
        ErrorKind::Refused,
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::TlsUnknownCa,
        ErrorKind::TlsBadName,
        ErrorKind::TlsExpired,
        ErrorKind::TlsBadCertificate,
        ErrorKind::H2NotOffered,
        ErrorKind::H2GoAway,
        ErrorKind::H2StreamReset,
        ErrorKind::H2StreamLimit,
        ErrorKind::H2Protocol,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Malformed,
        ErrorKind::Io,
        ErrorKind::Interrupted,
        ErrorKind::BodyTooLarge,
        ErrorKind::LocalFdLimit,
        ErrorKind::TooManyRedirects,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Dns => "dns",
            ErrorKind::Refused => "refused",
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::TlsUnknownCa => "tls_unknown_ca",
            ErrorKind::TlsBadName => "tls_bad_name",
            ErrorKind::TlsExpired => "tls_expired",
            ErrorKind::TlsBadCertificate => "tls_bad_certificate",
            ErrorKind::H2NotOffered => "h2_not_offered",
            ErrorKind::H2GoAway => "h2_goaway",
            ErrorKind::H2StreamReset => "h2_stream_reset",
            ErrorKind::H2StreamLimit => "h2_stream_limit",
            ErrorKind::H2Protocol => "h2_protocol",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Io => "io",
            ErrorKind::Interrupted => "interrupted",
            ErrorKind::BodyTooLarge => "body_too_large",
            ErrorKind::LocalFdLimit => "local_fd_limit",
            ErrorKind::TooManyRedirects => "too_many_redirects",
        }
    }

    /// A sentence for humans reading an error distribution.
    pub fn description(self) -> &'static str {
        match self {
            ErrorKind::Dns => "DNS lookup failed",
            ErrorKind::Refused => "connection refused",
            ErrorKind::Connect => "connect failed",
            ErrorKind::Tls => "TLS handshake failed",
            ErrorKind::TlsUnknownCa => {
                "TLS: certificate signed by an unknown authority (trust it with --cacert)"
            }
            ErrorKind::TlsBadName => "TLS: certificate not valid for the host name",
            ErrorKind::TlsExpired => "TLS: certificate expired or not yet valid",
            ErrorKind::TlsBadCertificate => "TLS: certificate rejected",
            ErrorKind::H2NotOffered => {
                "HTTP/2 required (http: \"2\") but the server speaks only HTTP/1.1 (no ALPN h2, or h2c prior knowledge refused)"
            }
            ErrorKind::H2GoAway => "HTTP/2 GOAWAY from the server",
            ErrorKind::H2StreamReset => "HTTP/2 stream reset by the server (RST_STREAM)",
            ErrorKind::H2StreamLimit => "HTTP/2 concurrent stream limit exhausted",
            ErrorKind::H2Protocol => "HTTP/2 protocol error",
            ErrorKind::Timeout => "request timed out",
            ErrorKind::Reset => "connection reset by peer",
            ErrorKind::Closed => "connection closed before a complete response",
            ErrorKind::Malformed => "malformed HTTP response",
            ErrorKind::Io => "I/O error",
            ErrorKind::Interrupted => "still open when the run ended (interrupted)",
            ErrorKind::BodyTooLarge => "response body larger than --max-body (kept for an extraction)",
            ErrorKind::LocalFdLimit => {
                "generator out of file descriptors (raise `ulimit -n`, or use fewer clients)"
            }
            ErrorKind::TooManyRedirects => "still a redirect after the redirect limit",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_dense_and_match_all() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(kind.index(), i);
        }
    }
}
