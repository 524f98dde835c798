//! The client side of HTTP: requests serialised once (and the header rules per-client request
//! builders share), connections (HTTP/1.1 and HTTP/2, plain or TLS), response framing, capture
//! of selected response headers and bodies, read buffers pooled per thread (an idle
//! connection holds none), and the classification of every failure into a
//! [`barrage_metrics::ErrorKind`].
//!
//! HTTP/1.1 is implemented here directly on the socket with `httparse` for the response
//! head: the engine needs the timing of each phase (write, wait, read) and a response path
//! that allocates nothing per request, neither of which a general client exposes.
//! BENCHMARKS.md records the side-by-side measurement against hyper's client. HTTP/2 is our own
//! lean codec too (the sans-IO crate `barrage-h2proto`, driven over the socket by `h2/`),
//! for the same reason (BENCHMARKS.md, issue #6). TLS uses rustls (`tls.rs`).

mod buffers;
mod capture;
mod classify;
mod connection;
mod connector;
mod framing;
mod h2;
mod request;
mod resolve;
mod stream;
mod tls;
mod tunnel;

pub use barrage_body::{BodySink, ContentCoding, Pushed, DEFAULT_MAX_BODY, TURN_BUDGET};
pub use buffers::ReadBuffers;
pub use capture::{Capture, Captured};
pub use classify::classify_io_error;
pub use connection::{connect, Connection, Exchange};
pub use connector::{AnyConnection, Connector, Opened, Version};
pub use framing::{
    parse_head, parse_head_limited, parse_head_with, BodyFraming, ChunkedDecoder, FramingError,
    ResponseHead, DEFAULT_MAX_HEADERS,
};
pub use h2::{H2Connection, H2Id, H2Settings};
pub use request::{
    default_headers, is_clean_path, is_header_value_byte, is_path_byte, is_token,
    method_sends_length, RequestBytes, RequestError, RequestSpec, USER_AGENT,
};
pub use resolve::resolve;
pub use stream::{connect_from, Stream};
pub use tls::{classify_tls_error, client_config, Alpn, TlsClient, TlsConfigError, TlsSettings};
pub use tunnel::Tunnel;
