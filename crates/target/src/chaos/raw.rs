//! The chaos cases over cleartext HTTP/1.1, written by hand on the socket so that the
//! framing itself can lie: resets, closes, stalls, endless and slow bodies, broken status
//! lines and chunk sizes, lying lengths, header floods, gzip bombs, garbage.

use super::{gzip_bomb, Case, Chaos, EndlessGzip, BAD_GZIP, FILLER};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The largest request head read.
const MAX_HEAD: usize = 64 * 1024;
/// Body bytes sent before a mid-response reset, stall or lie.
const PARTIAL: usize = 1000;

/// How a response ends the connection.
enum Next {
    KeepAlive,
    Close,
    Reset,
}

/// Whether `peeked` (the first bytes of a connection) is an HTTP/1.1 request for a chaos
/// path: `Some(true)` yes, `Some(false)` no, `None` not enough bytes to tell yet.
pub(crate) fn is_chaos_request(peeked: &[u8]) -> Option<bool> {
    let Some(space) = peeked.iter().position(|&b| b == b' ') else {
        let token = peeked.iter().all(u8::is_ascii_uppercase);
        return (!token || peeked.len() > 16).then_some(false);
    };
    let target = &peeked[space + 1..];
    let prefix = super::PREFIX.as_bytes();
    if target.len() < prefix.len() {
        return if prefix.starts_with(target) {
            None
        } else {
            Some(false)
        };
    }
    Some(target.starts_with(prefix))
}

/// Serves a connection whose first request is for a chaos path, request by request.
pub(crate) async fn serve(mut stream: TcpStream) {
    let mut buf = vec![0u8; MAX_HEAD];
    let mut filled = 0;
    loop {
        let Some((head_len, path, query, body_len)) =
            read_head(&mut stream, &mut buf, &mut filled).await
        else {
            return;
        };
        // Skip a request body (its bytes in the buffer, then the rest from the socket).
        let in_buf = (filled - head_len).min(body_len);
        let mut rest = body_len - in_buf;
        buf.copy_within(head_len + in_buf..filled, 0);
        filled -= head_len + in_buf;
        while rest > 0 {
            let mut sink = [0u8; 8192];
            let want = rest.min(sink.len());
            match stream.read(&mut sink[..want]).await {
                Ok(0) | Err(_) => return,
                Ok(n) => rest -= n,
            }
        }
        let next = match Chaos::parse(&path, query.as_deref()) {
            Some(chaos) => respond(&mut stream, chaos).await,
            None => {
                let body = format!(
                    r#"{{"error":"not a chaos endpoint","path":"{}"}}"#,
                    path.escape_default()
                );
                let head = format!(
                    "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                );
                send(&mut stream, &[head.as_bytes(), body.as_bytes()]).await
            }
        };
        match next {
            Next::KeepAlive => {}
            Next::Close => {
                let _ = stream.shutdown().await;
                return;
            }
            Next::Reset => {
                let _ = stream.set_zero_linger();
                return;
            }
        }
    }
}

/// Reads one request head: (its length, path, query, body length).
async fn read_head(
    stream: &mut TcpStream,
    buf: &mut [u8],
    filled: &mut usize,
) -> Option<(usize, String, Option<String>, usize)> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&buf[..*filled]) {
            Ok(httparse::Status::Complete(len)) => {
                let target = request.path.unwrap_or("/");
                let (path, query) = match target.split_once('?') {
                    Some((p, q)) => (p.to_string(), Some(q.to_string())),
                    None => (target.to_string(), None),
                };
                let body_len = request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                    .unwrap_or(0);
                return Some((len, path, query, body_len));
            }
            Ok(httparse::Status::Partial) if *filled < buf.len() => {}
            _ => return None,
        }
        match stream.read(&mut buf[*filled..]).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => *filled += n,
        }
    }
}

/// Writes every piece; a write error ends the connection.
async fn send(stream: &mut TcpStream, pieces: &[&[u8]]) -> Next {
    for piece in pieces {
        if stream.write_all(piece).await.is_err() {
            return Next::Close;
        }
    }
    Next::KeepAlive
}

/// Writes `pieces()` until the client goes away or `limit` passes.
async fn stream_until(
    stream: &mut TcpStream,
    limit: Duration,
    mut piece: impl FnMut(u64) -> Vec<u8>,
) -> Next {
    let deadline = Instant::now() + limit;
    let mut n = 0;
    while Instant::now() < deadline {
        let bytes = piece(n);
        n += 1;
        match tokio::time::timeout_at(deadline, stream.write_all(&bytes)).await {
            Ok(Ok(())) => {}
            _ => break,
        }
    }
    Next::Close
}

fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

async fn respond(stream: &mut TcpStream, chaos: Chaos) -> Next {
    let limit = chaos.limit;
    let partial = &FILLER[..PARTIAL];
    match chaos.case {
        Case::Reset => Next::Reset,
        Case::ResetMid => {
            send(
                stream,
                &[
                    b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",
                    partial,
                ],
            )
            .await;
            Next::Reset
        }
        Case::Close => Next::Close,
        Case::Stall => {
            // Read on while stalled, to see the client leave.
            let mut sink = [0u8; 1024];
            let _ = tokio::time::timeout(limit, async {
                while let Ok(n) = stream.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
            })
            .await;
            Next::Close
        }
        Case::StallBody => {
            send(
                stream,
                &[
                    b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n",
                    partial,
                ],
            )
            .await;
            tokio::time::sleep(limit).await;
            Next::Close
        }
        Case::SlowBody { size, rate } => {
            let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
            if let Next::Close = send(stream, &[head.as_bytes()]).await {
                return Next::Close;
            }
            let per_tick = (rate / 10).max(1);
            let mut left = size;
            let deadline = Instant::now() + limit;
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            while left > 0 {
                if tokio::time::timeout_at(deadline, tick.tick())
                    .await
                    .is_err()
                {
                    return Next::Close;
                }
                let n = left.min(per_tick) as usize;
                let piece: Vec<u8> = FILLER.iter().copied().cycle().take(n).collect();
                if let Next::Close = send(stream, &[&piece]).await {
                    return Next::Close;
                }
                left -= n as u64;
            }
            Next::KeepAlive
        }
        Case::Endless | Case::HugeLength => {
            let head: &[u8] = if chaos.case == Case::Endless {
                b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000000\r\n\r\n"
            };
            if let Next::Close = send(stream, &[head]).await {
                return Next::Close;
            }
            stream_until(stream, limit, |_| FILLER.clone()).await
        }
        Case::EndlessChunked | Case::EndlessGzip => {
            let gzip = chaos.case == Case::EndlessGzip;
            let head: &[u8] = if gzip {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Encoding: gzip\r\n\r\n"
            } else {
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            };
            if let Next::Close = send(stream, &[head]).await {
                return Next::Close;
            }
            stream_until(stream, limit, |n| match (gzip, n) {
                (false, _) => chunk(&FILLER),
                (true, 0) => chunk(EndlessGzip::first()),
                (true, _) => chunk(EndlessGzip::next()),
            })
            .await
        }
        Case::LyingLength => {
            send(
                stream,
                &[
                    b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",
                    partial,
                ],
            )
            .await;
            Next::Close
        }
        Case::ManyHeaders { n } => {
            let mut head = String::from("HTTP/1.1 200 OK\r\n");
            for i in 0..n {
                head.push_str(&format!("X-Chaos-{i}: {i}\r\n"));
            }
            head.push_str("Content-Length: 2\r\n\r\nok");
            send(stream, &[head.as_bytes()]).await
        }
        Case::HugeHeader { size } => {
            let value = vec![b'a'; size];
            send(
                stream,
                &[
                    b"HTTP/1.1 200 OK\r\nX-Chaos: ",
                    &value,
                    b"\r\nContent-Length: 2\r\n\r\nok",
                ],
            )
            .await
        }
        Case::MalformedStatus => {
            send(stream, &[b"HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nok"]).await;
            Next::Close
        }
        Case::BadChunk => {
            send(
                stream,
                &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"],
            )
            .await;
            Next::Close
        }
        Case::GzipBomb { size } => {
            let bomb = gzip_bomb(size);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                bomb.len()
            );
            send(stream, &[head.as_bytes(), &bomb[..]]).await
        }
        Case::BadGzip => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
                BAD_GZIP.len()
            );
            send(stream, &[head.as_bytes(), &BAD_GZIP]).await
        }
        Case::Garbage => {
            send(stream, &[&super::served::garbage()]).await;
            Next::Close
        }
        Case::GoAway => {
            let body = "goaway is an HTTP/2 case";
            let head = format!(
                "HTTP/1.1 501 Not Implemented\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            send(stream, &[head.as_bytes(), body.as_bytes()]).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chaos_requests_are_told_from_the_first_bytes() {
        assert_eq!(
            is_chaos_request(b"GET /chaos/reset HTTP/1.1\r\n"),
            Some(true)
        );
        assert_eq!(is_chaos_request(b"POST /chaos/"), Some(true));
        assert_eq!(is_chaos_request(b"GET / HTTP/1.1\r\n"), Some(false));
        assert_eq!(is_chaos_request(b"GET /cha"), None);
        assert_eq!(is_chaos_request(b"GE"), None);
        assert_eq!(is_chaos_request(b"PRI * HTTP/2.0\r\n"), Some(false));
        assert_eq!(is_chaos_request(b"\x16\x03\x01"), Some(false));
    }
}
