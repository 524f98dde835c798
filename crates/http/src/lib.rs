//! The client side of HTTP: requests serialised once, connections, response framing, and the
//! classification of every failure into a [`barrage_metrics::ErrorKind`].
//!
//! HTTP/1.1 is implemented here directly on tokio's `TcpStream` with `httparse` for the
//! response head: the engine needs the timing of each phase (write, wait, read) and a
//! response path that allocates nothing per request, neither of which a general client
//! exposes. BENCHMARKS.md records the side-by-side measurement against hyper's client.

mod classify;
mod connection;
mod framing;
mod request;
mod resolve;

pub use classify::classify_io_error;
pub use connection::{connect, Connection, Exchange};
pub use framing::{parse_head, BodyFraming, ChunkedDecoder, FramingError, ResponseHead};
pub use request::{RequestBytes, RequestError, RequestSpec};
pub use resolve::resolve;
