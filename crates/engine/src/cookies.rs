//! A client's cookie jar (RFC 6265, kept by the `cookie_store` crate): the `Set-Cookie` values
//! of every response are stored against the URL asked for, and each request carries the
//! jar's cookies for its URL in its `Cookie` header, spliced into its prepared bytes. Only
//! plans that ask for a jar pay for one.

use cookie_store::CookieStore;
use url::Url;

/// One client's cookies. Cleared when an iteration starts (k6 resets a VU's jar per
/// iteration; a scenario session is one client's visit).
#[derive(Debug, Default)]
pub(crate) struct Jar {
    store: CookieStore,
    /// The `name=value; ...` list being built (reused).
    pairs: String,
}

impl Jar {
    pub(crate) fn clear(&mut self) {
        self.store.clear();
    }

    /// Stores the `Set-Cookie` header values of a response to `url` (unparsable ones are
    /// ignored, as browsers and k6 do).
    pub(crate) fn store<'a>(&mut self, url: &Url, values: impl Iterator<Item = &'a [u8]>) {
        for value in values {
            if let Ok(text) = std::str::from_utf8(value) {
                let _ = self.store.parse(text, url);
            }
        }
    }

    /// Writes `request` into `out` with the jar's cookies for `url` added: to the request's
    /// own `Cookie` header when it has one, else as a header of their own. Returns false,
    /// writing nothing, when the jar has none for `url`.
    pub(crate) fn add_to(&mut self, url: &Url, request: &[u8], out: &mut Vec<u8>) -> bool {
        self.pairs.clear();
        for (name, value) in self.store.get_request_values(url) {
            if !self.pairs.is_empty() {
                self.pairs.push_str("; ");
            }
            self.pairs.push_str(name);
            self.pairs.push('=');
            self.pairs.push_str(value);
        }
        if self.pairs.is_empty() {
            return false;
        }
        out.clear();
        let head_end = request
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(request.len(), |p| p + 2);
        match own_cookie_line_end(&request[..head_end]) {
            Some(line_end) => {
                out.extend_from_slice(&request[..line_end]);
                out.extend_from_slice(b"; ");
                out.extend_from_slice(self.pairs.as_bytes());
                out.extend_from_slice(&request[line_end..]);
            }
            None => {
                out.extend_from_slice(&request[..head_end]);
                out.extend_from_slice(b"Cookie: ");
                out.extend_from_slice(self.pairs.as_bytes());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(&request[head_end..]);
            }
        }
        true
    }
}

impl Jar {
    /// Sets a cookie for `url` as a `Set-Cookie: name=value<attributes>` from it would
    /// (k6's `jar.set`); `attributes` is `; Domain=...; Path=...` and the like.
    pub(crate) fn set(&mut self, url: &Url, name: &str, value: &str, attributes: &str) {
        let _ = self
            .store
            .parse(&format!("{name}={value}{attributes}"), url);
    }

    /// The cookies a request to `url` would carry, `(name, value)` (k6's `cookiesForURL`).
    pub(crate) fn for_url(&self, url: &Url) -> Vec<(String, String)> {
        self.store
            .get_request_values(url)
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }
}

/// Where the request's own `Cookie` header line ends (before its CRLF), if it has one.
fn own_cookie_line_end(head: &[u8]) -> Option<usize> {
    let mut start = head.iter().position(|&b| b == b'\n')? + 1;
    while start < head.len() {
        let end = head[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(head.len(), |p| start + p);
        let line = &head[start..end];
        if line.len() > 7 && line[..7].eq_ignore_ascii_case(b"cookie:") {
            return Some(end.saturating_sub(1).max(start));
        }
        start = end + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_stored_per_url_and_added_to_matching_requests() {
        let mut jar = Jar::default();
        let site = Url::parse("http://127.0.0.1:8080/cookies/set?a=1").unwrap();
        jar.store(
            &site,
            [&b"a=1; Path=/"[..], b"b=2; Path=/only", b"\xff"].into_iter(),
        );
        let mut out = Vec::new();
        let get = b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n";
        let root = Url::parse("http://127.0.0.1:8080/x").unwrap();
        assert!(jar.add_to(&root, get, &mut out));
        assert_eq!(out, b"GET /x HTTP/1.1\r\nHost: h\r\nCookie: a=1\r\n\r\n");
        let only = Url::parse("http://127.0.0.1:8080/only/y").unwrap();
        let own = b"POST /only/y HTTP/1.1\r\nCookie: z=9\r\nHost: h\r\n\r\nbody";
        assert!(jar.add_to(&only, own, &mut out));
        let text = String::from_utf8(out.clone()).unwrap();
        assert!(
            text.starts_with("POST /only/y HTTP/1.1\r\nCookie: z=9; ")
                && text.ends_with("\r\nHost: h\r\n\r\nbody"),
            "{text:?}"
        );
        assert!(text.contains("a=1") && text.contains("b=2"), "{text:?}");
        let elsewhere = Url::parse("http://other.test/").unwrap();
        assert!(!jar.add_to(&elsewhere, get, &mut out));
        jar.clear();
        assert!(!jar.add_to(&root, get, &mut out));
    }

    #[test]
    fn scripts_set_read_and_remove_cookies_by_url() {
        let mut jar = Jar::default();
        let site = Url::parse("http://127.0.0.1:8080/a/b").unwrap();
        jar.set(&site, "token", "t1", "; Path=/");
        jar.set(&site, "deep", "d", "; Path=/a");
        jar.set(&site, "gone", "g", "; Path=/; Max-Age=0");
        let mut seen = jar.for_url(&site);
        seen.sort();
        assert_eq!(
            seen,
            [("deep".into(), "d".into()), ("token".into(), "t1".into())]
        );
        let root = Url::parse("http://127.0.0.1:8080/").unwrap();
        assert_eq!(jar.for_url(&root), [("token".into(), "t1".into())]);
        // k6 deletes by setting an expired cookie at the URL's default path (`/a` here).
        jar.set(&site, "deep", "", "; Max-Age=-1");
        assert_eq!(jar.for_url(&site), [("token".into(), "t1".into())]);
    }
}
