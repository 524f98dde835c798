//! Redirect hops: whether a response redirects, where to (any http(s) URL: a hop to
//! another origin goes through [`crate::origins`]), and the next request's bytes, rewritten
//! from the last one's as Go's client (hey, k6) does: 301/302/303 turn a request other than
//! GET or HEAD into a GET without a body (other headers kept); 307/308 resend method and
//! body; every hop names the URL it came from in `Referer` (not from https to http); an
//! absolute `Location` sets `Host` to its authority; a hop to a host that is neither the last
//! one nor its subdomain drops `Authorization`, `Cookie` and their kin.

use crate::origins::path_and_query;

/// The plan target's origin (`http://host:port`), that request paths resolve against.
#[derive(Debug, Clone)]
pub(crate) struct Origin(url::Url);

impl Origin {
    pub(crate) fn new(target: &barrage_plan::Target) -> Option<Origin> {
        url::Url::parse(&target.to_string()).ok().map(Origin)
    }

    /// The absolute URL of `path` (a request line's target) on this origin.
    pub(crate) fn url(&self, path: &str) -> Option<url::Url> {
        self.0.join(path).ok()
    }

    /// Whether `url` is on this origin (same scheme, host and port).
    pub(crate) fn holds(&self, url: &url::Url) -> bool {
        url.origin() == self.0.origin()
    }
}

/// Where a redirect goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Next {
    pub url: url::Url,
    /// The `Location` was an absolute URL (the next `Host` is its authority).
    pub absolute: bool,
}

/// The URL `location` points to from `current`, when it is an http(s) URL.
pub(crate) fn resolve(current: &url::Url, location: &[u8]) -> Option<Next> {
    let location = std::str::from_utf8(location).ok()?.trim();
    let url = current.join(location).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    Some(Next {
        absolute: url::Url::parse(location).is_ok(),
        url,
    })
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

/// `host[:port]` of `url` as a `Host` header writes it (the port only when not the
/// scheme's default).
pub(crate) fn authority(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

/// Go's `isDomainOrSubdomain`: `sub` is `parent` or a name under it.
fn is_domain_or_subdomain(sub: &str, parent: &str) -> bool {
    sub.eq_ignore_ascii_case(parent)
        || (!sub.contains([':', '%'])
            && sub.len() > parent.len()
            && sub.as_bytes()[sub.len() - parent.len() - 1] == b'.'
            && sub[sub.len() - parent.len()..].eq_ignore_ascii_case(parent))
}

/// How the request after a redirect differs from the last one besides its method and body.
pub(crate) struct Hop<'a> {
    /// The request line's target (a path, or through a plain proxy the whole URL).
    pub target: &'a str,
    /// The `Host` to send instead of the last one's (an absolute `Location`).
    pub host: Option<&'a str>,
    pub referer: Option<&'a str>,
    /// Drop `Authorization`, `Www-Authenticate`, `Cookie` and `Cookie2` (a hop to a host
    /// that is not the last one or under it).
    pub drop_credentials: bool,
    /// The `Proxy-Authorization` this hop sends (absolute form through a proxy); any the
    /// last one sent is dropped.
    pub proxy_authorization: Option<&'a str>,
}

impl Hop<'_> {
    /// The facts of the hop from `from` to `next`; `target` as in [`Hop::target`].
    pub(crate) fn between<'a>(
        from: &url::Url,
        next: &Next,
        target: &'a str,
        host: Option<&'a str>,
        referer: &'a str,
        proxy_authorization: Option<&'a str>,
    ) -> Hop<'a> {
        let to_plain = from.scheme() == "https" && next.url.scheme() == "http";
        Hop {
            target,
            host: host.filter(|_| next.absolute),
            referer: (!to_plain).then_some(referer),
            drop_credentials: !is_domain_or_subdomain(
                next.url.host_str().unwrap_or(""),
                from.host_str().unwrap_or(""),
            ),
            proxy_authorization,
        }
    }
}

/// The Referer value for a request to `url`: the URL without credentials or fragment.
pub(crate) fn referer_of(url: &url::Url) -> String {
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.set_fragment(None);
    url.to_string()
}

/// Writes into `out` the request that follows `previous` after a `status` redirect.
pub(crate) fn next_request(previous: &[u8], status: u16, hop: &Hop<'_>, out: &mut Vec<u8>) {
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
    out.extend_from_slice(hop.target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let headers = head.get(line_end + 2..).unwrap_or(&[]);
    for line in headers.split_inclusive(|&b| b == b'\n') {
        let name = line.split(|&b| b == b':').next().unwrap_or(b"");
        let is = |n: &[u8]| name.eq_ignore_ascii_case(n);
        let credential =
            is(b"authorization") || is(b"www-authenticate") || is(b"cookie") || is(b"cookie2");
        let dropped = is(b"referer")
            || is(b"proxy-authorization")
            || (hop.drop_credentials && credential)
            || (becomes_get && is(b"content-length"));
        if let (true, Some(host)) = (is(b"host"), hop.host) {
            push_header(out, "Host", host);
        } else if !dropped {
            out.extend_from_slice(line);
        }
    }
    if let Some(referer) = hop.referer.filter(|r| !r.is_empty()) {
        push_header(out, "Referer", referer);
    }
    if let Some(value) = hop.proxy_authorization {
        push_header(out, "Proxy-Authorization", value);
    }
    out.extend_from_slice(b"\r\n");
    if !becomes_get {
        out.extend_from_slice(body);
    }
}

fn push_header(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// The request target for `url` on the plan target: its path and query, after the proxy
/// prefix when requests go through a plain proxy.
pub(crate) fn target_path(url: &url::Url, prefix: Option<&str>) -> String {
    match prefix {
        Some(prefix) => format!("{prefix}{}", path_and_query(url)),
        None => path_and_query(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(u: &str) -> url::Url {
        url::Url::parse(u).unwrap()
    }

    #[test]
    fn locations_resolve_against_the_current_url_to_any_http_origin() {
        let here = url("http://127.0.0.1:8080/a/b");
        let to = |l: &[u8]| resolve(&here, l).map(|n| (n.url.to_string(), n.absolute));
        assert_eq!(
            to(b"/c?x=1"),
            Some(("http://127.0.0.1:8080/c?x=1".into(), false))
        );
        assert_eq!(to(b"c"), Some(("http://127.0.0.1:8080/a/c".into(), false)));
        assert_eq!(
            to(b"https://example.com/d"),
            Some(("https://example.com/d".into(), true))
        );
        assert_eq!(to(b"ftp://example.com/d"), None);
        let origin =
            Origin::new(&barrage_plan::Target::parse("http://127.0.0.1:8080").unwrap()).unwrap();
        assert!(origin.holds(&url("http://127.0.0.1:8080/x")));
        assert!(!origin.holds(&url("https://127.0.0.1:8080/x")));
        assert!(!origin.holds(&url("http://localhost:8080/x")));
        assert_eq!(authority(&url("https://h.test:443/")), "h.test");
        assert_eq!(authority(&url("http://h.test:81/")), "h.test:81");
        assert_eq!(referer_of(&url("http://u:p@h.test/a#f")), "http://h.test/a");
    }

    #[test]
    fn credentials_stay_on_the_host_and_its_subdomains_as_in_go() {
        assert!(is_domain_or_subdomain("a.test", "a.test"));
        assert!(is_domain_or_subdomain("sub.a.test", "a.test"));
        assert!(!is_domain_or_subdomain("bba.test", "a.test"));
        assert!(!is_domain_or_subdomain("localhost", "127.0.0.1"));
        let from = url("https://a.test/x");
        let next = |u: &str, absolute| Next {
            url: url(u),
            absolute,
        };
        let hop = Hop::between(
            &from,
            &next("http://b.test/y", true),
            "/y",
            Some("b.test"),
            "https://a.test/x",
            None,
        );
        assert!(hop.drop_credentials && hop.referer.is_none() && hop.host == Some("b.test"));
        let hop = Hop::between(
            &from,
            &next("https://a.test/y", false),
            "/y",
            Some("a.test"),
            "https://a.test/x",
            None,
        );
        assert!(!hop.drop_credentials && hop.referer.is_some() && hop.host.is_none());
    }

    #[test]
    fn a_post_redirected_by_302_becomes_a_get_without_its_body() {
        let post = b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\n\r\nhi";
        let mut out = Vec::new();
        let hop = |target| Hop {
            target,
            host: None,
            referer: Some("http://h/a"),
            drop_credentials: false,
            proxy_authorization: None,
        };
        next_request(post, 302, &hop("/b"), &mut out);
        assert_eq!(
            out,
            b"GET /b HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nX-A: 1\r\nReferer: http://h/a\r\n\r\n"
        );
        next_request(post, 307, &hop("/b"), &mut out);
        assert_eq!(
            out,
            b"POST /b HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nX-A: 1\r\nReferer: http://h/a\r\n\r\nhi"
        );
        assert_eq!(request_path(post), "/a");
        let head = b"HEAD /a HTTP/1.1\r\nHost: h\r\nReferer: http://h/z\r\n\r\n";
        next_request(head, 303, &hop("/c"), &mut out);
        assert_eq!(
            out,
            b"HEAD /c HTTP/1.1\r\nHost: h\r\nReferer: http://h/a\r\n\r\n"
        );
        assert!(is_redirect(308) && !is_redirect(304) && !is_redirect(300));
    }

    #[test]
    fn a_hop_to_another_host_rewrites_host_and_drops_credentials() {
        let get = b"GET /a HTTP/1.1\r\nHost: h\r\nAuthorization: Basic eA==\r\nCookie: a=1\r\nProxy-Authorization: Basic cA==\r\nX-A: 1\r\n\r\n";
        let mut out = Vec::new();
        let hop = Hop {
            target: "/b",
            host: Some("o.test:81"),
            referer: None,
            drop_credentials: true,
            proxy_authorization: Some("Basic cQ=="),
        };
        next_request(get, 302, &hop, &mut out);
        assert_eq!(
            out,
            b"GET /b HTTP/1.1\r\nHost: o.test:81\r\nX-A: 1\r\nProxy-Authorization: Basic cQ==\r\n\r\n"
        );
    }
}
