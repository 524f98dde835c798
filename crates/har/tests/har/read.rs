//! Reading recordings: fixtures of browsers and proxies parse, flows and think times come out
//! as recorded, and bad recordings are one line naming the entry and field.

use super::fixture;
use barrage_har::{HostMap, Recording};
use std::time::Duration;

#[test]
fn a_browser_export_reads_as_one_flow_per_page() {
    let har = fixture("browser_page_load.har");
    let mut hosts = HostMap::default();
    hosts.skip("www.google-analytics.com");
    let recording = Recording::new("browser_page_load.har", &har, &hosts, false).unwrap();
    assert_eq!(recording.skipped, 1);
    assert_eq!(recording.target.to_string(), "https://www.recorded.test");
    let names: Vec<&str> = recording.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["Shop – Home", "Shop – Product 1234567"]);
    assert_eq!(recording.flows[1].offset, Duration::from_millis(4200));
    let home = &recording.flows[0].requests;
    let tags: Vec<&str> = home.iter().map(|r| r.tag.as_str()).collect();
    assert_eq!(
        tags,
        [
            "GET /html",
            "static css",
            "static js",
            "static image",
            "static font",
            "GET /json"
        ]
    );
    // Pseudo-headers, cookies and accept-encoding are the client's own business.
    let names: Vec<&str> = home[0].headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["accept", "accept-language", "user-agent"]);
    // The JSON request starts 400 ms in; the last request before it ended at 179 ms.
    assert_eq!(home[5].think, Duration::from_millis(221));
    assert_eq!(
        home[1].think,
        Duration::ZERO,
        "parallel assets wait nothing"
    );
}

#[test]
fn a_chromium_export_made_by_playwright_reads_as_its_page() {
    let har = fixture("chromium_playwright.har");
    assert_eq!(har.log.creator.as_ref().unwrap().name, "Playwright");
    assert_eq!(har.log.browser.as_ref().unwrap().name, "chromium");
    let recording =
        Recording::new("chromium_playwright.har", &har, &HostMap::default(), false).unwrap();
    let names: Vec<&str> = recording.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["Token and pings"]);
    let tags: Vec<&str> = recording.requests().map(|r| r.tag.as_str()).collect();
    assert_eq!(
        tags,
        [
            "GET /base64/:id",
            "GET /anything/app.css",
            "GET /random/get_token",
            "GET /ping",
            "GET /ping"
        ]
    );
    // Browser headers are kept; HTTP/2 pseudo-headers and cookies are not.
    let first = &recording.flows[0].requests[0];
    assert!(first.headers.iter().any(|(n, _)| n == "User-Agent"));
    assert!(first.headers.iter().all(|(n, _)| !n.starts_with(':')));
    assert_eq!(first.response.content_type, "text/html");
}

#[test]
fn excluded_tags_leave_static_assets_out_and_think_times_follow() {
    let har = fixture("browser_page_load.har");
    let mut hosts = HostMap::default();
    hosts.skip("www.google-analytics.com");
    let mut recording = Recording::new("browser_page_load.har", &har, &hosts, false).unwrap();
    let all = recording.requests().count();
    let excluded = recording.exclude_tags(&["static".to_string()]).unwrap();
    assert!(excluded >= 4, "{excluded}");
    assert_eq!(recording.requests().count(), all - excluded);
    assert!(recording.requests().all(|r| r.static_kind.is_none()));
    let home = &recording.flows[0].requests;
    let tags: Vec<&str> = home.iter().map(|r| r.tag.as_str()).collect();
    assert_eq!(tags, ["GET /html", "GET /json"]);
    // The JSON request now follows the page itself: the gap since the page ended.
    let gap = home[1].offset - (home[0].offset + home[0].recorded_time);
    assert_eq!(home[1].think, Duration::from_millis(gap.as_millis() as u64));
    assert!(home[1].think > Duration::from_millis(221));
    // A tag's first words match, not a prefix of a word; nothing left is an error.
    assert!(barrage_plan::tag_matches("static css", "static"));
    assert!(!barrage_plan::tag_matches("GET /json", "GET /js"));
    let error = recording.exclude_tags(&["GET".to_string()]).unwrap_err();
    assert!(error.contains("nothing is left to send"), "{error}");
}

#[test]
fn replay_refuses_unmapped_hosts_naming_the_entry() {
    let har = fixture("browser_page_load.har");
    let mut hosts = HostMap::default();
    hosts.add("www.recorded.test=127.0.0.1:9").unwrap();
    let error = Recording::new("b.har", &har, &hosts, true)
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "b.har: log.entries[5].request.url: host `www.google-analytics.com` is not mapped: give --map-host www.google-analytics.com=http://127.0.0.1:PORT (or --skip-host www.google-analytics.com)"
    );
    let error = Recording::new("b.har", &har, &HostMap::default(), true)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "b.har: log.entries[0].request.url: host `www.recorded.test` is not mapped"
        ),
        "{error}"
    );
    // Both mapped: each request keeps its own origin; the first one's is the target.
    hosts.add("www.google-analytics.com=127.0.0.1:10").unwrap();
    let recording = Recording::new("b.har", &har, &hosts, true).unwrap();
    assert_eq!(recording.target.authority(), "127.0.0.1:9");
    let elsewhere: Vec<(usize, String)> = recording
        .requests()
        .filter_map(|r| Some((r.entry, r.origin.as_ref()?.to_string())))
        .collect();
    assert_eq!(elsewhere, [(5, "http://127.0.0.1:10".to_string())]);
    assert_eq!(
        recording.other_origins(),
        ["http://127.0.0.1:10".to_string()]
    );
}

#[test]
fn every_fixture_parses() {
    // The last one is mitmproxy 11.0.2's own export (`mitmdump --set hardump=FILE`) of curl
    // through the proxy to the bundled target.
    for name in [
        "browser_page_load.har",
        "login_flow.har",
        "token_pings.har",
        "jwt_api.har",
        "mitmproxy_token_pings.har",
    ] {
        let har = fixture(name);
        assert!(!har.log.entries.is_empty(), "{name}");
    }
}
