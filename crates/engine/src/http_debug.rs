//! `--http-debug`: the first exchanges of a run printed to stderr, request as sent (head, and
//! body with `full`) and response (status, every header, and body with `full`). Exchanges are
//! claimed from one counter shared by the workers; once it runs out nothing is captured or
//! printed, and a run without the option never gets here.

use barrage_http::Captured;
use barrage_metrics::ErrorKind;
use barrage_plan::HttpDebug;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

/// How many exchanges a run prints.
pub(crate) const DEBUG_EXCHANGES: u32 = 20;
/// Bodies are cut after this many bytes.
const MAX_BODY: usize = 16 * 1024;

/// The run's debug printer.
#[derive(Debug)]
pub(crate) struct DebugPrinter {
    level: HttpDebug,
    left: AtomicU32,
}

impl DebugPrinter {
    pub(crate) fn new(level: HttpDebug) -> DebugPrinter {
        DebugPrinter {
            level,
            left: AtomicU32::new(DEBUG_EXCHANGES),
        }
    }

    /// Claims the printing of one exchange; `None` once the run has printed its share.
    pub(crate) fn claim(&self) -> Option<HttpDebug> {
        self.left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .ok()
            .map(|_| self.level)
    }
}

/// The response headers capture list for a debug exchange: the request's own, then `*`.
pub(crate) fn capture_list(own: &[String]) -> Vec<String> {
    let mut list = own.to_vec();
    list.push("*".into());
    list
}

fn push_body(out: &mut String, body: &[u8]) {
    let shown = &body[..body.len().min(MAX_BODY)];
    out.push_str(&String::from_utf8_lossy(shown));
    if body.len() > MAX_BODY {
        out.push_str(&format!("\n[... {} more bytes]", body.len() - MAX_BODY));
    }
    out.push('\n');
}

/// Headers whose values are credentials: shown as `[redacted]`.
const SECRET_HEADERS: [&str; 2] = ["authorization", "proxy-authorization"];

/// A response as the printout shows it: status, the captured header lines (at `headers`)
/// and the body, decoded.
pub(crate) struct Shown<'a> {
    pub status: u16,
    pub captured: &'a Captured,
    pub headers: usize,
    pub body: &'a [u8],
}

/// Renders one exchange: the request bytes as sent, then the response or the error.
pub(crate) fn render(
    level: HttpDebug,
    request: &[u8],
    response: Result<Shown<'_>, ErrorKind>,
) -> String {
    let head_end = request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(request.len(), |p| p + 4);
    let mut out = String::from("Request:\n");
    for line in String::from_utf8_lossy(&request[..head_end]).split("\r\n") {
        let name = line.split(':').next().unwrap_or("");
        if line.contains(':') && SECRET_HEADERS.iter().any(|s| name.eq_ignore_ascii_case(s)) {
            out.push_str(name);
            out.push_str(": [redacted]\n");
        } else if !line.is_empty() {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push('\n');
    if level == HttpDebug::Full && head_end < request.len() {
        push_body(&mut out, &request[head_end..]);
    }
    match response {
        Ok(shown) => {
            out.push_str(&format!("\nResponse:\nHTTP/1.1 {}\n", shown.status));
            for line in shown.captured.header_values(shown.headers) {
                out.push_str(&String::from_utf8_lossy(line));
                out.push('\n');
            }
            if level == HttpDebug::Full && !shown.body.is_empty() {
                out.push('\n');
                push_body(&mut out, shown.body);
            }
        }
        Err(kind) => out.push_str(&format!(
            "\nResponse: none ({}: {})\n",
            kind.name(),
            kind.description()
        )),
    }
    out.push('\n');
    out
}

/// Prints a rendered exchange to stderr in one write.
pub(crate) fn print(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_prints_only_its_share_of_exchanges() {
        let printer = DebugPrinter::new(HttpDebug::Headers);
        let claimed = (0..DEBUG_EXCHANGES + 5)
            .filter(|_| printer.claim().is_some())
            .count();
        assert_eq!(claimed as u32, DEBUG_EXCHANGES);
    }

    #[test]
    fn failed_exchanges_name_their_error_and_bodies_show_only_in_full() {
        let request =
            b"POST /x HTTP/1.1\r\nHost: h\r\nAuthorization: Basic dTpw\r\n\r\nsecret-body";
        let text = render(HttpDebug::Headers, request, Err(ErrorKind::Refused));
        assert!(
            text.starts_with("Request:\nPOST /x HTTP/1.1\nHost: h\nAuthorization: [redacted]\n"),
            "{text}"
        );
        assert!(!text.contains("dTpw"), "credentials never print: {text}");
        assert!(text.contains("Response: none (refused"), "{text}");
        assert!(!text.contains("secret-body"));
        let text = render(HttpDebug::Full, request, Err(ErrorKind::Refused));
        assert!(text.contains("secret-body"), "{text}");
    }
}
