//! A HAR file read as flows of requests to replay: what `convert` writes as a DSL test case
//! and `replay` compiles into a plan, decided once here (hosts, flows, think times, tags,
//! kept headers, bodies).
//!
//! A flow is a recorded page (entries sharing a `pageref`); entries without a page form one
//! flow together (a proxy's or an API client's recording is one visitor).

use crate::model::{header, Entry, Har, HarError};
use barrage_plan::{Method, Target};
use std::time::Duration;

/// Request headers never replayed: the connection's own (the engine writes them), the
/// cookie header (cookies come from the client's jar) and HTTP/2 pseudo-headers.
pub const DROPPED_HEADERS: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
    "cookie",
    "accept-encoding",
];

/// Gaps shorter than this between requests are a browser's parallelism, not a person's
/// thinking: no wait is written for them.
pub const MIN_THINK_TIME: Duration = Duration::from_millis(20);

/// `--map-host old=new` pairs: recorded host (or `host:port`) → origin to send to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostMap {
    pairs: Vec<(String, Target)>,
    skipped: Vec<String>,
}

impl HostMap {
    /// Adds one `old=new` mapping; `new` is an origin (`http://127.0.0.1:8080`) or `host:port`
    /// (the recorded scheme is kept then).
    pub fn add(&mut self, spec: &str) -> Result<(), String> {
        let (old, new) = spec
            .split_once('=')
            .filter(|(old, new)| !old.is_empty() && !new.is_empty())
            .ok_or_else(|| {
                format!("`{spec}`: expected OLD=NEW, like api.example.com=http://127.0.0.1:8080")
            })?;
        let url = if new.contains("://") {
            new.to_string()
        } else {
            format!("http://{new}")
        };
        let (target, path) = Target::split_url(&url).map_err(|e| format!("`{spec}`: {e}"))?;
        if path != "/" {
            return Err(format!(
                "`{spec}`: the new origin must not have a path (`{path}`)"
            ));
        }
        self.pairs.push((old.to_ascii_lowercase(), target));
        Ok(())
    }

    /// Requests to `host` are left out (third-party hosts of a browser recording).
    pub fn skip(&mut self, host: &str) {
        self.skipped.push(host.to_ascii_lowercase());
    }

    fn is_skipped(&self, recorded: &Target) -> bool {
        self.skipped
            .iter()
            .any(|s| *s == recorded.host || *s == recorded.authority())
    }

    /// Where requests recorded to `recorded` go, if mapped (`host:port` wins over `host`).
    pub fn lookup(&self, recorded: &Target) -> Option<Target> {
        let authority = recorded.authority().to_ascii_lowercase();
        let by_authority = self.pairs.iter().find(|(old, _)| *old == authority);
        let by_host = self.pairs.iter().find(|(old, _)| *old == recorded.host);
        by_authority.or(by_host).map(|(_, target)| target.clone())
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// A response as recorded, for correlation and comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedResponse {
    pub status: u16,
    /// The media type without parameters, lower case (`application/json`).
    pub content_type: String,
    pub body: Option<Vec<u8>>,
    pub location: Option<String>,
}

/// One request of a flow, ready to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Index in `log.entries`, for messages.
    pub entry: usize,
    /// Where it goes when that is not [`Recording::target`] (the first request's origin): a
    /// recording spanning several hosts keeps each one, mapped by `--map-host`.
    pub origin: Option<Target>,
    pub method: Method,
    /// Path and query as recorded (a `:` that would read as a placeholder is `%3A`).
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The recorded `Cookie` header's pairs. Cookies come from the client's jar; replay
    /// sends the recorded ones that carry a JWT only when it re-signs JWTs (`--jwt-alg`).
    pub cookies: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// From the start of the recording.
    pub offset: Duration,
    /// Think time before this request: the recorded gap since the previous request of the
    /// flow ended (zero when under [`MIN_THINK_TIME`] or overlapping).
    pub think: Duration,
    /// How long the recorded exchange took.
    pub recorded_time: Duration,
    pub tag: String,
    /// The static-asset kind (`css`, `js`, `image`, `font`, `media`), by response type.
    pub static_kind: Option<&'static str>,
    pub response: RecordedResponse,
}

impl RecordedRequest {
    /// The path, header values and (UTF-8) body, one a line: where replay looks for the
    /// values it transforms (JWTs, timestamps).
    pub fn text(&self) -> String {
        let mut text = self.path.clone();
        for (_, value) in &self.headers {
            text.push('\n');
            text.push_str(value);
        }
        if let Some(body) = self.body.as_ref().and_then(|b| std::str::from_utf8(b).ok()) {
            text.push('\n');
            text.push_str(body);
        }
        text
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub name: String,
    /// When its first request started, from the start of the recording.
    pub offset: Duration,
    pub requests: Vec<RecordedRequest>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Where requests go (those of the first request's origin; others name their own in
    /// [`RecordedRequest::origin`]): the mapped origin, or the recorded one when nothing is
    /// mapped (`convert` without `--map-host`).
    pub target: Target,
    pub flows: Vec<Flow>,
    /// Entries left out by `--skip-host`.
    pub skipped: usize,
    /// When the first request started.
    pub start: time::OffsetDateTime,
}

impl Recording {
    /// Reads the flows of `har`. With `require_mapping` (replay), every recorded host must be
    /// mapped or skipped: an unmapped one is an error naming its entry, never a send.
    pub fn new(
        file: &str,
        har: &Har,
        hosts: &HostMap,
        require_mapping: bool,
    ) -> Result<Recording, HarError> {
        let start = har
            .log
            .entries
            .iter()
            .map(Entry::started)
            .min()
            .expect("a checked recording has entries");
        let mut target: Option<Target> = None;
        let mut flows: Vec<Flow> = Vec::new();
        let mut skipped = 0;
        let mut order: Vec<usize> = (0..har.log.entries.len()).collect();
        order.sort_by_key(|&i| har.log.entries[i].started());
        for index in order {
            let entry = &har.log.entries[index];
            let at = |field: &str, problem: String| {
                HarError::new(file, format!("log.entries[{index}].{field}: {problem}"))
            };
            let (recorded, path) = Target::split_url(&entry.request.url)
                .map_err(|e| at("request.url", e.to_string()))?;
            if hosts.is_skipped(&recorded) {
                skipped += 1;
                continue;
            }
            let mapped = match hosts.lookup(&recorded) {
                Some(mapped) => mapped,
                None if require_mapping || !hosts.is_empty() => {
                    return Err(at(
                        "request.url",
                        format!(
                            "host `{}` is not mapped: give --map-host {}=http://127.0.0.1:PORT (or --skip-host {})",
                            recorded.authority(),
                            recorded.host,
                            recorded.host
                        ),
                    ))
                }
                None => recorded.clone(),
            };
            // The first request's origin is the plan target; requests to any other keep theirs.
            let origin = match &target {
                None => {
                    target = Some(mapped);
                    None
                }
                Some(first) => (*first != mapped).then_some(mapped),
            };
            let flow_name = entry
                .pageref
                .as_ref()
                .and_then(|id| har.log.pages.iter().find(|p| &p.id == id))
                .map_or_else(
                    || "recording".to_string(),
                    |page| page_name(&page.title, &page.id),
                );
            let offset = since(start, entry);
            let flow = match flows.iter_mut().position(|f| f.name == flow_name) {
                Some(i) => &mut flows[i],
                None => {
                    flows.push(Flow {
                        name: flow_name,
                        offset,
                        requests: Vec::new(),
                    });
                    flows.last_mut().expect("just pushed")
                }
            };
            let think = think_time(flow.requests.last(), offset);
            let method = Method::parse(&entry.request.method).expect("checked method");
            let response = recorded_response(entry);
            let static_kind = static_kind(&response.content_type, &path);
            let body = match &entry.request.post_data {
                Some(post) => Some(
                    post.body()
                        .map_err(|problem| at("request.postData.text", problem))?,
                ),
                None => None,
            }
            .filter(|b| !b.is_empty());
            flow.requests.push(RecordedRequest {
                entry: index,
                origin,
                method,
                tag: tag(method, &path, static_kind),
                path: escape_placeholders(&path),
                headers: kept_headers(entry),
                cookies: recorded_cookies(entry),
                body,
                offset,
                think,
                recorded_time: entry.duration(),
                static_kind,
                response,
            });
        }
        let Some(target) = target else {
            return Err(HarError::new(
                file,
                "log.entries: every request was left out by --skip-host",
            ));
        };
        Ok(Recording {
            target,
            flows,
            skipped,
            start,
        })
    }

    /// Leaves out the requests whose tag matches one of `patterns` (see [`barrage_plan::tag_matches`]);
    /// think times are the gaps to the requests kept. Returns how many were left out.
    pub fn exclude_tags(&mut self, patterns: &[String]) -> Result<usize, String> {
        if patterns.is_empty() {
            return Ok(0);
        }
        let mut excluded = 0;
        for flow in &mut self.flows {
            let before = flow.requests.len();
            let mut kept: Vec<RecordedRequest> = Vec::with_capacity(before);
            for mut request in flow.requests.drain(..) {
                if barrage_plan::excluded_by(&request.tag, patterns) {
                    continue;
                }
                request.think = think_time(kept.last(), request.offset);
                kept.push(request);
            }
            excluded += before - kept.len();
            flow.requests = kept;
            if let Some(first) = flow.requests.first() {
                flow.offset = first.offset;
            }
        }
        self.flows.retain(|f| !f.requests.is_empty());
        if self.flows.is_empty() {
            return Err(format!(
                "every request's tag matches {}: nothing is left to send",
                patterns.join(", ")
            ));
        }
        Ok(excluded)
    }

    /// Sends every request to [`Recording::target`] (`replay --target URL` with no host
    /// mapped: the recorded hosts are never sent to).
    pub fn send_all_to_target(&mut self) {
        for flow in &mut self.flows {
            for request in &mut flow.requests {
                request.origin = None;
            }
        }
    }

    /// The origins requests go to besides [`Recording::target`], in order of first use.
    pub fn other_origins(&self) -> Vec<String> {
        let mut origins: Vec<String> = Vec::new();
        for origin in self.requests().filter_map(|r| r.origin.as_ref()) {
            let origin = origin.to_string();
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        origins
    }

    /// Every request, flow after flow.
    pub fn requests(&self) -> impl Iterator<Item = &RecordedRequest> {
        self.flows.iter().flat_map(|f| f.requests.iter())
    }

    /// From the first request's start to the end of the last exchange.
    pub fn span(&self) -> Duration {
        self.requests()
            .map(|r| r.offset + r.recorded_time)
            .max()
            .unwrap_or_default()
    }
}

/// The think time before a request at `offset`: the gap since `previous` (of its flow) ended,
/// zero when under [`MIN_THINK_TIME`] or overlapping.
fn think_time(previous: Option<&RecordedRequest>, offset: Duration) -> Duration {
    previous.map_or(Duration::ZERO, |prev| {
        let gap = offset.saturating_sub(prev.offset + prev.recorded_time);
        if gap < MIN_THINK_TIME {
            Duration::ZERO
        } else {
            Duration::from_millis(gap.as_millis() as u64)
        }
    })
}

fn since(start: time::OffsetDateTime, entry: &Entry) -> Duration {
    let delta = entry.started() - start;
    Duration::from_micros(delta.whole_microseconds().max(0) as u64)
}

fn page_name(title: &str, id: &str) -> String {
    let title = title.trim();
    if title.is_empty() {
        id.to_string()
    } else {
        title.to_string()
    }
}

fn recorded_response(entry: &Entry) -> RecordedResponse {
    let response = &entry.response;
    let content_type = header(&response.headers, "content-type")
        .unwrap_or(&response.content.mime_type)
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    // What browsers write when a response had no type.
    let content_type = if content_type == "x-unknown" {
        String::new()
    } else {
        content_type
    };
    let location = header(&response.headers, "location")
        .map(str::to_string)
        .or_else(|| (!response.redirect_url.is_empty()).then(|| response.redirect_url.clone()));
    RecordedResponse {
        status: response.status,
        content_type,
        body: response.content.body(),
        location,
    }
}

/// The request headers worth replaying, in recorded order.
/// The pairs of the request's `Cookie` headers, else of its HAR `cookies` list.
fn recorded_cookies(entry: &Entry) -> Vec<(String, String)> {
    let from_headers: Vec<(String, String)> = entry
        .request
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("cookie"))
        .flat_map(|h| h.value.split(';'))
        .filter_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            Some((name.to_string(), value.to_string()))
        })
        .collect();
    if !from_headers.is_empty() {
        return from_headers;
    }
    entry
        .request
        .cookies
        .iter()
        .map(|c| (c.name.clone(), c.value.clone()))
        .collect()
}

fn kept_headers(entry: &Entry) -> Vec<(String, String)> {
    entry
        .request
        .headers
        .iter()
        .filter(|h| !h.name.starts_with(':'))
        .filter(|h| {
            !DROPPED_HEADERS
                .iter()
                .any(|d| h.name.eq_ignore_ascii_case(d))
        })
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect()
}

/// A static asset's kind by its response's content type (the path's extension when the
/// type says nothing).
pub fn static_kind(content_type: &str, path: &str) -> Option<&'static str> {
    let by_type = match content_type {
        "text/css" => Some("css"),
        "application/javascript" | "text/javascript" | "application/x-javascript" => Some("js"),
        t if t.starts_with("image/") => Some("image"),
        t if t.starts_with("font/")
            || t.contains("font-woff")
            || t == "application/vnd.ms-fontobject" =>
        {
            Some("font")
        }
        t if t.starts_with("video/") || t.starts_with("audio/") => Some("media"),
        _ => None,
    };
    by_type.or_else(|| {
        if !content_type.is_empty() && content_type != "application/octet-stream" {
            return None;
        }
        let file = path.split(['?', '#']).next().unwrap_or("");
        let extension = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
        Some(match extension.as_str() {
            "css" => "css",
            "js" | "mjs" => "js",
            "png" | "jpg" | "jpeg" | "gif" | "svg" | "webp" | "ico" | "avif" => "image",
            "woff" | "woff2" | "ttf" | "otf" | "eot" => "font",
            "mp4" | "webm" | "mp3" | "ogg" => "media",
            _ => return None,
        })
    })
}

/// The tag of a request: `static css` for static assets (so they can be told apart and left
/// out), else method and path pattern, ids replaced by `:id` (`GET /orders/:id`).
pub fn tag(method: Method, path: &str, static_kind: Option<&str>) -> String {
    if let Some(kind) = static_kind {
        return format!("static {kind}");
    }
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let pattern: Vec<&str> = path
        .split('/')
        .map(|segment| {
            if looks_like_id(segment) {
                ":id"
            } else {
                segment
            }
        })
        .collect();
    format!("{} {}", method.as_str(), pattern.join("/"))
}

/// A path segment that names one record rather than a resource: a number, a UUID, a long
/// hexadecimal string, or a long mix of letters and digits.
fn looks_like_id(segment: &str) -> bool {
    if segment.is_empty() {
        return false;
    }
    let digits = segment.bytes().filter(u8::is_ascii_digit).count();
    if digits == segment.len() {
        return true;
    }
    let hex_or_dash = segment.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    if hex_or_dash && segment.len() >= 16 && digits > 0 {
        return true;
    }
    segment.len() >= 16
        && digits >= 4
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Percent-encodes a `:` that a plan would read as a placeholder (`:` then a letter or `_`).
pub fn escape_placeholders(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':'
            && chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphabetic() || *n == '_')
        {
            out.push_str("%3A");
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_group_ids_and_static_assets() {
        assert_eq!(tag(Method::Get, "/orders/123?x=1", None), "GET /orders/:id");
        assert_eq!(
            tag(
                Method::Put,
                "/u/3f2b8c1e-9a4d-4c2e-8f1a-0b9c8d7e6f5a/name",
                None
            ),
            "PUT /u/:id/name"
        );
        assert_eq!(tag(Method::Get, "/api/v2/items", None), "GET /api/v2/items");
        assert_eq!(
            tag(Method::Get, "/app.css", static_kind("text/css", "/app.css")),
            "static css"
        );
        assert_eq!(static_kind("", "/img/logo.PNG?v=3"), Some("image"));
        assert_eq!(static_kind("application/json", "/data.js"), None);
    }

    #[test]
    fn colons_that_read_as_placeholders_are_encoded() {
        assert_eq!(
            escape_placeholders("/a:b?t=10:30&x=:y"),
            "/a%3Ab?t=10:30&x=%3Ay"
        );
    }

    #[test]
    fn host_maps_prefer_host_and_port_and_reject_paths() {
        let mut map = HostMap::default();
        map.add("shop.example.com=127.0.0.1:9000").unwrap();
        map.add("shop.example.com:8443=https://127.0.0.1:9443")
            .unwrap();
        let plain = Target::parse("https://shop.example.com").unwrap();
        assert_eq!(map.lookup(&plain).unwrap().authority(), "127.0.0.1:9000");
        let other = Target::parse("https://shop.example.com:8443").unwrap();
        assert_eq!(map.lookup(&other).unwrap().authority(), "127.0.0.1:9443");
        assert!(map.add("a=http://x/y").unwrap_err().contains("path"));
        assert!(map.add("nothing").unwrap_err().contains("OLD=NEW"));
    }
}
