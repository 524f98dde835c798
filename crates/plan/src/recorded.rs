//! The names of replay's checks against the recording (`GET /x: status 200 as recorded`,
//! `GET /x: content type application/json as recorded`, `GET /x: JSON shape as recorded`):
//! written into replay plans by crates/har, read back by the report to say per tag how the
//! replayed responses differ from the recorded ones; and where two JSON shapes part.

/// What a replay compares a response with, as named in its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison<'a> {
    /// The recorded status.
    Status(u16),
    /// The recorded media type (`application/json`).
    ContentType(&'a str),
    /// The recorded body's [`crate::json_shape`].
    JsonShape,
}

/// `TAG: status STATUS as recorded`.
pub fn status_check_name(tag: &str, status: u16) -> String {
    format!("{tag}: status {status} as recorded")
}

/// `TAG: content type TYPE as recorded`.
pub fn content_type_check_name(tag: &str, media_type: &str) -> String {
    format!("{tag}: content type {media_type} as recorded")
}

/// `TAG: JSON shape as recorded`.
pub fn json_shape_check_name(tag: &str) -> String {
    format!("{tag}: JSON shape as recorded")
}

/// The tag and recorded status of a [`status_check_name`]; `None` for any other check.
pub fn parse_status_check_name(name: &str) -> Option<(&str, u16)> {
    match parse_comparison_check_name(name)? {
        (tag, Comparison::Status(status)) => Some((tag, status)),
        _ => None,
    }
}

/// The tag and comparison of one of replay's checks; `None` for any other check.
pub fn parse_comparison_check_name(name: &str) -> Option<(&str, Comparison<'_>)> {
    let rest = name.strip_suffix(" as recorded")?;
    if let Some(tag) = rest.strip_suffix(": JSON shape") {
        return Some((tag, Comparison::JsonShape));
    }
    if let Some((tag, media_type)) = rest.rsplit_once(": content type ") {
        return Some((tag, Comparison::ContentType(media_type)));
    }
    let (tag, status) = rest.rsplit_once(": status ")?;
    Some((tag, Comparison::Status(status.parse().ok()?)))
}

/// Where a replayed body's shape first parts from the recorded one, in words:
/// "key `id` number recorded, string replayed", "key `user.name` string recorded, missing",
/// "key `extra` not recorded, bool replayed", with "(and N more)" when it is not the only
/// difference; "JSON recorded, no JSON replayed" when the replayed body was not JSON.
/// `None` when the shapes are the same.
pub fn shape_difference(recorded: &str, replayed: &str) -> Option<String> {
    let recorded: serde_json::Value = serde_json::from_str(recorded).ok()?;
    let Ok(replayed) = serde_json::from_str::<serde_json::Value>(replayed) else {
        return Some("JSON recorded, no JSON replayed".to_string());
    };
    let mut found = Vec::new();
    differences("", &recorded, &replayed, &mut found);
    let first = found.first()?;
    Some(match found.len() {
        1 => first.clone(),
        n => format!("{first} (and {} more)", n - 1),
    })
}

/// A shape node's type in words: the leaf's name, or `object` / `array`.
fn kind(shape: &serde_json::Value) -> &str {
    match shape {
        serde_json::Value::Object(_) => "object",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::String(leaf) => leaf,
        _ => "?",
    }
}

fn at(path: &str) -> String {
    if path.is_empty() {
        "the body".to_string()
    } else {
        format!("key `{path}`")
    }
}

fn differences(
    path: &str,
    recorded: &serde_json::Value,
    replayed: &serde_json::Value,
    found: &mut Vec<String>,
) {
    use serde_json::Value;
    let child = |key: &str| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match (recorded, replayed) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                match new.get(key) {
                    Some(other) => differences(&child(key), value, other, found),
                    None => found.push(format!(
                        "{} {} recorded, missing",
                        at(&child(key)),
                        kind(value)
                    )),
                }
            }
            for (key, value) in new.iter().filter(|(key, _)| !old.contains_key(*key)) {
                found.push(format!(
                    "{} not recorded, {} replayed",
                    at(&child(key)),
                    kind(value)
                ));
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            let items = format!("{path}[]");
            match (old.first(), new.first()) {
                (Some(a), Some(b)) => differences(&items, a, b, found),
                (Some(a), None) => found.push(format!(
                    "{} {} recorded, empty array replayed",
                    at(&items),
                    kind(a)
                )),
                (None, Some(b)) => found.push(format!(
                    "{} empty array recorded, {} replayed",
                    at(&items),
                    kind(b)
                )),
                (None, None) => {}
            }
        }
        (a, b) if a != b => found.push(format!(
            "{} {} recorded, {} replayed",
            at(path),
            kind(a),
            kind(b)
        )),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_shape;

    #[test]
    fn names_read_back() {
        let name = status_check_name("POST /orders: v2", 200);
        assert_eq!(
            parse_status_check_name(&name),
            Some(("POST /orders: v2", 200))
        );
        assert_eq!(
            parse_status_check_name("GET /x: JSON shape as recorded"),
            None
        );
        assert_eq!(parse_status_check_name("status is 200"), None);
        assert_eq!(
            parse_comparison_check_name(&json_shape_check_name("GET /x")),
            Some(("GET /x", Comparison::JsonShape))
        );
        assert_eq!(
            parse_comparison_check_name(&content_type_check_name("GET /x", "text/html")),
            Some(("GET /x", Comparison::ContentType("text/html")))
        );
        assert_eq!(parse_comparison_check_name("GET /x is fine"), None);
    }

    fn shape(text: &str) -> String {
        json_shape(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn shape_differences_name_the_first_key_and_count_the_rest() {
        let recorded = shape(r#"{"id":1,"user":{"name":"a"},"tags":["x"]}"#);
        assert_eq!(shape_difference(&recorded, &recorded), None);
        assert_eq!(
            shape_difference(
                &recorded,
                &shape(r#"{"id":"1","user":{"name":"b"},"tags":[]}"#)
            )
            .unwrap(),
            "key `id` number recorded, string replayed (and 1 more)"
        );
        assert_eq!(
            shape_difference(&recorded, &shape(r#"{"id":2,"tags":["y"]}"#)).unwrap(),
            "key `user` object recorded, missing"
        );
        assert_eq!(
            shape_difference(
                &recorded,
                &shape(r#"{"id":2,"user":{"name":"b","admin":true},"tags":["y"]}"#)
            )
            .unwrap(),
            "key `user.admin` not recorded, bool replayed"
        );
        assert_eq!(
            shape_difference(
                &recorded,
                &shape(r#"{"id":2,"user":{"name":1},"tags":[1]}"#)
            )
            .unwrap(),
            "key `tags[]` string recorded, number replayed (and 1 more)"
        );
        assert_eq!(
            shape_difference(&recorded, &shape("[1]")).unwrap(),
            "the body object recorded, array replayed"
        );
        assert_eq!(
            shape_difference(&recorded, "").unwrap(),
            "JSON recorded, no JSON replayed"
        );
    }
}
