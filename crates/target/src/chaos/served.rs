//! The chaos cases served through hyper (HTTP/2, and HTTP/1.1 over TLS): streaming bodies
//! that never end, trickle, stall or fail mid-way (a reset stream), header floods, gzip bombs;
//! and, through [`ChaosIo`] around the connection's socket, what hyper would never write:
//! GOAWAY, garbage, a reset or a close instead of the response.

use super::{gzip_bomb, Case, Chaos, EndlessGzip, BAD_GZIP, FILLER};
use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use hyper::{Response, StatusCode};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// What the connection wrapper writes instead of hyper's next bytes, and how it then ends.
#[derive(Debug, Clone)]
struct Takeover {
    bytes: Vec<u8>,
    reset: bool,
}

/// Shared between a connection's service and its [`ChaosIo`]: a takeover armed by a handler.
#[derive(Debug, Default)]
pub(crate) struct ChaosControl {
    armed: AtomicBool,
    takeover: Mutex<Option<Takeover>>,
}

impl ChaosControl {
    fn arm(&self, bytes: Vec<u8>, reset: bool) {
        *self.takeover.lock().expect("not poisoned") = Some(Takeover { bytes, reset });
        self.armed.store(true, Ordering::Release);
    }
}

/// A socket that can be closed with a reset (zero linger).
pub(crate) trait Resettable {
    fn reset_on_close(&self);
}

impl Resettable for tokio::net::TcpStream {
    fn reset_on_close(&self) {
        let _ = self.set_zero_linger();
    }
}

impl Resettable for tokio_rustls::server::TlsStream<tokio::net::TcpStream> {
    fn reset_on_close(&self) {
        let _ = self.get_ref().0.set_zero_linger();
    }
}

/// A connection's socket as hyper sees it; once a handler arms a takeover, the next write
/// sends the takeover's bytes instead and fails, so hyper drops the connection.
pub(crate) struct ChaosIo<S> {
    inner: S,
    control: Arc<ChaosControl>,
    takeover: Option<(Takeover, usize)>,
}

impl<S> ChaosIo<S> {
    pub(crate) fn new(inner: S, control: Arc<ChaosControl>) -> Self {
        Self {
            inner,
            control,
            takeover: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ChaosIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Resettable + Unpin> AsyncWrite for ChaosIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.takeover.is_none() && this.control.armed.load(Ordering::Acquire) {
            let armed = this.control.takeover.lock().expect("not poisoned").take();
            this.takeover = armed.map(|t| (t, 0));
        }
        let Some((takeover, sent)) = this.takeover.as_mut() else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        while *sent < takeover.bytes.len() {
            match Pin::new(&mut this.inner).poll_write(cx, &takeover.bytes[*sent..]) {
                Poll::Ready(Ok(n)) if n > 0 => *sent += n,
                Poll::Ready(Ok(_)) => break,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        if takeover.reset {
            this.inner.reset_on_close();
        } else if Pin::new(&mut this.inner).poll_shutdown(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(Err(io::Error::other("chaos: connection taken over")))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// 4 KiB of pseudo-random bytes (no valid HTTP/1.1 status line, no valid HTTP/2 frame).
pub(crate) fn garbage() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8 | 0x80
        })
        .collect()
}

/// A GOAWAY frame (last stream 0, PROTOCOL_ERROR): every stream was refused.
fn goaway() -> Vec<u8> {
    let mut frame = vec![0, 0, 8, 7, 0, 0, 0, 0, 0];
    frame.extend_from_slice(&0u32.to_be_bytes());
    frame.extend_from_slice(&1u32.to_be_bytes());
    frame
}

/// A failed body: hyper resets the HTTP/2 stream (or drops the HTTP/1.1 connection).
#[derive(Debug)]
pub(crate) struct BodyFailed;

impl std::fmt::Display for BodyFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("chaos: body failed on purpose")
    }
}

impl std::error::Error for BodyFailed {}

/// What a chaos body does after its first bytes.
enum Then {
    End,
    Fail,
    Stall(Pin<Box<Sleep>>),
    Endless {
        gzip: bool,
        deadline: Instant,
    },
    Trickle {
        left: u64,
        per_tick: u64,
        tick: Pin<Box<Sleep>>,
    },
}

/// The body of a chaos response served by hyper.
pub(crate) struct ChaosBody {
    first: Option<Bytes>,
    then: Then,
}

impl ChaosBody {
    fn full(bytes: impl Into<Bytes>) -> Self {
        Self {
            first: Some(bytes.into()),
            then: Then::End,
        }
    }
}

impl Body for ChaosBody {
    type Data = Bytes;
    type Error = BodyFailed;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyFailed>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        match &mut self.then {
            Then::End => Poll::Ready(None),
            Then::Fail => Poll::Ready(Some(Err(BodyFailed))),
            Then::Stall(sleep) => sleep.as_mut().poll(cx).map(|()| None),
            Then::Endless { gzip, deadline } => {
                if Instant::now() >= *deadline {
                    return Poll::Ready(None);
                }
                let piece = if *gzip {
                    Bytes::from_static(EndlessGzip::next())
                } else {
                    Bytes::from(FILLER.clone())
                };
                Poll::Ready(Some(Ok(Frame::data(piece))))
            }
            Then::Trickle {
                left,
                per_tick,
                tick,
            } => {
                if *left == 0 {
                    return Poll::Ready(None);
                }
                if tick.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                tick.as_mut()
                    .reset(Instant::now() + Duration::from_millis(100));
                let n = (*left).min(*per_tick);
                *left -= n;
                let piece: Vec<u8> = FILLER.iter().copied().cycle().take(n as usize).collect();
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(piece)))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && matches!(self.then, Then::End)
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.first, &self.then) {
            (Some(first), Then::End) => SizeHint::with_exact(first.len() as u64),
            (None, Then::End) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}

fn sleep(limit: Duration) -> Pin<Box<Sleep>> {
    Box::pin(tokio::time::sleep(limit))
}

/// Answers a chaos request on a hyper connection (`h2`: whether it is HTTP/2).
pub(crate) async fn respond(chaos: Chaos, control: &ChaosControl, h2: bool) -> Response<ChaosBody> {
    let partial = Bytes::copy_from_slice(&FILLER[..1000]);
    let limit = chaos.limit;
    let body = match chaos.case {
        Case::Reset | Case::Close => {
            control.arm(Vec::new(), chaos.case == Case::Reset);
            ChaosBody::full(Bytes::new())
        }
        Case::Garbage => {
            control.arm(garbage(), false);
            ChaosBody::full(Bytes::new())
        }
        Case::GoAway if h2 => {
            control.arm(goaway(), false);
            ChaosBody::full(Bytes::new())
        }
        Case::ResetMid | Case::LyingLength => ChaosBody {
            first: Some(partial),
            then: if chaos.case == Case::ResetMid {
                Then::Fail
            } else {
                Then::End
            },
        },
        Case::Stall => {
            tokio::time::sleep(limit).await;
            ChaosBody::full(Bytes::new())
        }
        Case::StallBody => ChaosBody {
            first: Some(partial),
            then: Then::Stall(sleep(limit)),
        },
        Case::SlowBody { size, rate } => ChaosBody {
            first: None,
            then: Then::Trickle {
                left: size,
                per_tick: (rate / 10).max(1),
                tick: sleep(Duration::ZERO),
            },
        },
        Case::Endless | Case::EndlessChunked | Case::HugeLength | Case::EndlessGzip => {
            let gzip = chaos.case == Case::EndlessGzip;
            ChaosBody {
                first: gzip.then(|| Bytes::from_static(EndlessGzip::first())),
                then: Then::Endless {
                    gzip,
                    deadline: Instant::now() + limit,
                },
            }
        }
        Case::GzipBomb { size } => ChaosBody::full(gzip_bomb(size).to_vec()),
        Case::BadGzip => ChaosBody::full(BAD_GZIP.clone()),
        Case::ManyHeaders { .. } | Case::HugeHeader { .. } => ChaosBody::full("ok"),
        Case::MalformedStatus | Case::BadChunk | Case::GoAway => {
            let mut response = Response::new(ChaosBody::full(
                "this chaos case needs cleartext HTTP/1.1 (goaway: HTTP/2)",
            ));
            *response.status_mut() = StatusCode::NOT_IMPLEMENTED;
            return response;
        }
    };
    let mut builder = Response::builder().status(StatusCode::OK);
    match chaos.case {
        Case::EndlessGzip | Case::GzipBomb { .. } | Case::BadGzip => {
            builder = builder.header("content-encoding", "gzip");
        }
        Case::HugeLength => builder = builder.header("content-length", "1000000000000000000"),
        Case::LyingLength => builder = builder.header("content-length", "100000"),
        Case::ManyHeaders { n } => {
            for i in 0..n {
                builder = builder.header(format!("x-chaos-{i}"), i.to_string());
            }
        }
        Case::HugeHeader { size } => {
            builder = builder.header("x-chaos", "a".repeat(size));
        }
        _ => {}
    }
    builder.body(body).unwrap_or_else(|_| {
        let mut response = Response::new(ChaosBody::full("bad chaos response"));
        *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        response
    })
}
