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
    /// TLS handshake or certificate failure.
    Tls,
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
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Dns,
        ErrorKind::Refused,
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Timeout,
        ErrorKind::Reset,
        ErrorKind::Closed,
        ErrorKind::Malformed,
        ErrorKind::Io,
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
            ErrorKind::Timeout => "timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Closed => "closed",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Io => "io",
        }
    }

    /// A sentence for humans reading an error distribution.
    pub fn description(self) -> &'static str {
        match self {
            ErrorKind::Dns => "DNS lookup failed",
            ErrorKind::Refused => "connection refused",
            ErrorKind::Connect => "connect failed",
            ErrorKind::Tls => "TLS failure",
            ErrorKind::Timeout => "request timed out",
            ErrorKind::Reset => "connection reset by peer",
            ErrorKind::Closed => "connection closed before a complete response",
            ErrorKind::Malformed => "malformed HTTP response",
            ErrorKind::Io => "I/O error",
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
