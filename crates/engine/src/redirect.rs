//! Redirect hops: whether a response redirects, where to (same origin only: the worker's
//! connections all go to the plan's target), and the next request's bytes, rewritten from
//! the last one's as Go's client (hey, k6) does: 301/302/303 turn a request other than GET or
//! HEAD into a GET without a body (other headers kept); 307/308 resend method and body; every
//! hop names the URL it came from in `Referer`.

/// The origin redirects are resolved against and must stay on (`http://host:port`).
#[derive(Debug, Clone)]
pub(crate) struct Origin(url::Url);

impl Origin {
    pub(crate) fn new(target: &barrage_plan::Target) -> Option<Origin> {
        url::Url::parse(&target.to_string()).ok().map(Origin)
    }

    /// The absolute URL of `path` on this origin (a redirect's `Referer`).
    pub(crate) fn url_of(&self, path: &str) -> String {
        self.0
            .join(path)
            .map_or_else(|_| String::new(), String::from)
    }

    /// The same, parsed (what a cookie jar matches against).
    pub(crate) fn url(&self, path: &str) -> Option<url::Url> {
        self.0.join(path).ok()
    }

    /// The path and query `location` points to, when it stays on this origin.
    pub(crate) fn resolve(&self, current_path: &str, location: &[u8]) -> Option<String> {
        let location = std::str::from_utf8(location).ok()?.trim();
        let base = self.0.join(current_path).ok()?;
        let next = base.join(location).ok()?;
        if next.origin() != self.0.origin() {
            return None;
        }
        let mut path = next.path().to_string();
        if let Some(query) = next.query() {
            path.push('?');
            path.push_str(query);
        }
        Some(path)
    }
}

/// Whether `status` is a redirect a client follows.
pub(crate) fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The request line's path of HTTP/1.1 request bytes.
pub(crate) fn request_path(request: &[u8]) -> &str {
    let line_end = request
        .iter()
        .position(|&b| b == b'\r')
        .unwrap_or(request.len());
    let line = std::str::from_utf8(&request[..line_end]).unwrap_or("");
    line.split(' ').nth(1).unwrap_or("/")
}

/// Writes into `out` the request that follows `previous` to `path` after a `status`
/// redirect, coming from `referer`.
pub(crate) fn next_request(
    previous: &[u8],
    status: u16,
    path: &str,
    referer: &str,
    out: &mut Vec<u8>,
) {
    out.clear();
    let head_end = previous
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(previous.len(), |p| p + 2);
    let (head, body) = (
        &previous[..head_end],
        &previous[(head_end + 2).min(previous.len())..],
    );
    let line_end = head.iter().position(|&b| b == b'\r').unwrap_or(head.len());
    let method = head[..line_end]
        .split(|&b| b == b' ')
        .next()
        .unwrap_or(b"GET");
    let becomes_get =
        matches!(status, 301..=303) && method != b"GET".as_slice() && method != b"HEAD".as_slice();
    out.extend_from_slice(if becomes_get { b"GET" } else { method });
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let headers = head.get(line_end + 2..).unwrap_or(&[]);
    for line in headers.split_inclusive(|&b| b == b'\n') {
        let name = line.split(|&b| b == b':').next().unwrap_or(b"");
        let dropped = name.eq_ignore_ascii_case(b"referer")
            || (becomes_get && name.eq_ignore_ascii_case(b"content-length"));
        if !dropped {
            out.extend_from_slice(line);
        }
    }
    if !referer.is_empty() {
        out.extend_from_slice(b"Referer: ");
        out.extend_from_slice(referer.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    if !becomes_get {
        out.extend_from_slice(body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use barrage_plan::Target;

    fn origin() -> Origin {
        Origin::new(&Target::parse("http://127.0.0.1:8080").unwrap()).unwrap()
    }

    #[test]
    fn locations_resolve_relative_to_the_current_path_on_the_same_origin_only() {
        let o = origin();
        assert_eq!(o.resolve("/a/b", b"/c?x=1").as_deref(), Some("/c?x=1"));
        assert_eq!(o.resolve("/a/b", b"c").as_deref(), Some("/a/c"));
        assert_eq!(
            o.resolve("/", b"http://127.0.0.1:8080/d").as_deref(),
            Some("/d")
        );
        assert_eq!(o.resolve("/", b"http://example.com/d"), None);
        assert_eq!(o.resolve("/", b"https://127.0.0.1:8080/d"), None);
    }

    #[test]
    fn a_post_redirected_by_302_becomes_a_get_without_its_body() {
        let post = b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nhi";
        let mut out = Vec::new();
        next_request(post, 302, "/b", "http://h/a", &mut out);
        assert_eq!(
            out,
            b"GET /b HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nX-A: 1\r\nReferer: http://h/a\r\n\r\n"
        );
        next_request(post, 307, "/b", "http://h/a", &mut out);
        assert_eq!(
            out,
            b"POST /b HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\nReferer: http://h/a\r\n\r\nhi"
        );
        assert_eq!(request_path(post), "/a");
        let head = b"HEAD /a HTTP/1.1\r\nHost: h\r\nReferer: http://h/z\r\n\r\n";
        next_request(head, 303, "/c", "http://h/a", &mut out);
        assert_eq!(
            out,
            b"HEAD /c HTTP/1.1\r\nHost: h\r\nReferer: http://h/a\r\n\r\n"
        );
        assert_eq!(origin().url_of("/x?y=1"), "http://127.0.0.1:8080/x?y=1");
        assert!(is_redirect(308) && !is_redirect(304) && !is_redirect(300));
    }
}
