//! The httpbin-style endpoints: response shapes, redirects with `Location`, cookies, basic auth.

use super::{get, request, shared};

#[test]
fn get_and_anything_describe_the_request_as_httpbin_does() {
    let r = request(
        shared(),
        "GET",
        "/get?a=1&b=2&b=3",
        &[("X-Custom-Header", "v")],
        b"",
    );
    assert_eq!(r.status, 200);
    let json = r.json();
    assert_eq!(json["args"], serde_json::json!({"a": "1", "b": ["2", "3"]}));
    assert_eq!(json["headers"]["X-Custom-Header"], "v");
    assert_eq!(json["url"], "http://test/get?a=1&b=2&b=3");
    assert!(json.get("data").is_none(), "GET describes no body: {json}");
    let body = br#"{"k":[1,2]}"#;
    let headers = [("Content-Type", "application/json")];
    let json = request(shared(), "PATCH", "/anything/x", &headers, body).json();
    assert_eq!(json["method"], "PATCH");
    assert_eq!(json["json"], serde_json::json!({"k": [1, 2]}));
    assert_eq!(json["data"], r#"{"k":[1,2]}"#);
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let json = request(shared(), "POST", "/post", &form, b"x=1&y=a+b").json();
    assert_eq!(json["form"], serde_json::json!({"x": "1", "y": "a b"}));
    assert_eq!(request(shared(), "POST", "/get", &[], b"").status, 405);
    for method in ["PUT", "DELETE"] {
        let path = format!("/{}", method.to_ascii_lowercase());
        assert_eq!(request(shared(), method, &path, &[], b"").status, 200);
    }
    assert_eq!(get("/headers").json()["headers"]["Host"], "test");
}

#[test]
fn redirects_carry_a_location() {
    let r = get("/redirect/3");
    assert_eq!(r.status, 302);
    assert_eq!(r.header("location"), Some("/redirect/2"));
    assert_eq!(get("/redirect/1").header("location"), Some("/get"));
    assert_eq!(
        get("/absolute-redirect/2").header("location"),
        Some("http://test/absolute-redirect/1")
    );
    for code in [301, 302, 303, 307, 308] {
        let r = get(&format!("/status/{code}"));
        assert_eq!(r.status, code);
        assert_eq!(r.header("location"), Some("/redirect/1"));
    }
    assert_eq!(get("/status/200").header("location"), None);
    let r = get("/redirect-to?url=/json&status_code=307");
    assert_eq!((r.status, r.header("location")), (307, Some("/json")));
    assert_eq!(get("/redirect/0").status, 400);
}

#[test]
fn cookies_are_set_echoed_and_deleted() {
    let r = get("/cookies/set?a=1&b=two");
    assert_eq!((r.status, r.header("location")), (302, Some("/cookies")));
    let set: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n == "set-cookie")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(set, ["a=1; Path=/", "b=two; Path=/"]);
    let r = request(
        shared(),
        "GET",
        "/cookies",
        &[("Cookie", "a=1; b=two")],
        b"",
    );
    assert_eq!(
        r.json(),
        serde_json::json!({"cookies": {"a": "1", "b": "two"}})
    );
    let r = get("/cookies/delete?a");
    assert!(r.header("set-cookie").unwrap().contains("Max-Age=0"));
}

#[test]
fn basic_auth_accepts_the_right_pair_and_challenges_otherwise() {
    let good = [("Authorization", "Basic dTpw")];
    let r = request(shared(), "GET", "/basic-auth/u/p", &good, b"");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json(),
        serde_json::json!({"authenticated": true, "user": "u"})
    );
    let r = get("/basic-auth/u/p");
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("www-authenticate"),
        Some("Basic realm=\"Fake Realm\"")
    );
    let wrong = [("Authorization", "Basic dTpx")];
    assert_eq!(
        request(shared(), "GET", "/basic-auth/u/p", &wrong, b"").status,
        401
    );
    assert_eq!(
        get("/status/401").header("www-authenticate"),
        Some("Basic realm=\"Fake Realm\"")
    );
}

#[test]
fn base64_html_and_json_documents() {
    let r = get("/base64/SFRUUEJJTiBpcyBhd2Vzb21l");
    assert_eq!(r.body, b"HTTPBIN is awesome");
    assert!(r.header("content-type").unwrap().starts_with("text/html"));
    let html = get("/html");
    assert!(String::from_utf8_lossy(&html.body).contains("<h1>Herman Melville - Moby-Dick</h1>"));
    assert_eq!(
        get("/json").json()["slideshow"]["title"],
        "Sample Slide Show"
    );
}
