//! barrage's HTTP/2 client protocol without IO: the caller owns the socket, copies what the
//! peer sent into [`Connection::read_space`] and calls [`Connection::receive`], sends
//! [`Connection::output`] and reports it with [`Connection::wrote`], and wakes whatever
//! waits on the streams [`Connection::events`] names. Nothing here touches a socket, a
//! runtime or the clock, so every byte a server can send is testable (and fuzzed) in-process.
//!
//! Requests arrive as the HTTP/1.1 bytes the HTTP/1.1 path writes and become HEADERS
//! (`request.rs`), so every request source works over both protocols. `frame.rs` is the wire
//! format, `hpack.rs` the static table and the request encoder, `hpack_decoder.rs` and
//! `huffman.rs` decode responses, `state.rs` holds a connection's streams, flow control and
//! frame processing. Failures use barrage's classification ([`ErrorKind`]).

pub mod frame;
mod hpack;
mod hpack_decoder;
mod huffman;
mod request;
mod state;

pub use barrage_metrics::ErrorKind;
pub use hpack_decoder::{DecodeError, Decoder};
pub use huffman::{decode as huffman_decode, HuffmanError};
pub use request::Started;
pub use state::{Connection, Events, KeepBody, Phase, Slot};
