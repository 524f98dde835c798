//! Per-client values: marker strings from the DSL (`getVar`, `row.get`, `generate`,
//! `lastHttpStatus`) become plan `Value`s, also inside concatenations; payloads become bodies.

use crate::jsval::{fmt_num, Args, JsVal};
use crate::ScriptError;
use barrage_plan::{Body, JsonTemplate, Value};

const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// Whether `text` holds a per-client value (or a DSL object) marker.
pub(crate) fn has_marker(text: &str) -> bool {
    text.contains(OPEN)
}

/// A piece of a string from the script.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Value(Value),
    /// A data source handle (`loadStructured`'s result) used as text.
    Handle(usize),
    /// A row object (`pickFrom`'s result) used as text, bound to this variable.
    Row(String),
    /// `session.lastResponse(name)`: a timing, for `session.add` only.
    Timing(String),
    /// `session.ds.getRawFile(name)`: a file's bytes, for `payload` only.
    RawFile(String),
}

fn marker(body: &str) -> Option<Part> {
    let (kind, rest) = body.split_once(':').unwrap_or((body, ""));
    Some(match kind {
        "s" if rest.is_empty() => Part::Value(Value::LastStatus),
        "v" => Part::Value(Value::Var {
            name: rest.to_string(),
        }),
        "c" => {
            let (var, column) = rest.split_once(':')?;
            Part::Value(Value::Column {
                var: var.to_string(),
                column: column.to_string(),
            })
        }
        "d" => Part::Handle(rest.parse().ok()?),
        "r" => Part::Row(rest.to_string()),
        "t" => Part::Timing(rest.to_string()),
        "f" => Part::RawFile(rest.to_string()),
        _ => return None,
    })
}

/// Splits `text` into fixed text and markers, in order; adjacent text is merged.
pub(crate) fn parts(text: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut pending = String::new();
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        pending.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len_utf8()..];
        match after
            .find(CLOSE)
            .and_then(|end| Some((end, marker(&after[..end])?)))
        {
            Some((end, part)) => {
                if !pending.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut pending)));
                }
                parts.push(part);
                rest = &after[end + CLOSE.len_utf8()..];
            }
            None => {
                pending.push(OPEN);
                rest = after;
            }
        }
    }
    pending.push_str(rest);
    if !pending.is_empty() || parts.is_empty() {
        parts.push(Part::Text(pending));
    }
    parts
}

/// A string from the script as a value: fixed text, one per-client value, or a concatenation.
pub(crate) fn text_value(text: &str, a: &Args, name: &str) -> Result<Value, ScriptError> {
    let mut values = Vec::new();
    for part in parts(text) {
        values.push(match part {
            Part::Text(text) => Value::text(text),
            Part::Value(value) => value,
            Part::Handle(_) => {
                return Err(a.err(format_args!(
                    "`{name}` is a data source; pick a row with session.ds.pickFrom(...) and use row.get(column)"
                )))
            }
            Part::Row(_) => {
                return Err(a.err(format_args!(
                    "`{name}` is a whole row; use row.get(column) for one of its columns"
                )))
            }
            Part::Timing(_) => {
                return Err(a.err(format_args!(
                    "`{name}`: session.lastResponse(...) can only be given to session.add"
                )))
            }
            Part::RawFile(_) => {
                return Err(a.err(format_args!(
                    "`{name}`: session.ds.getRawFile(...) can only be a request's `payload`"
                )))
            }
        });
    }
    Ok(if values.len() == 1 {
        values.remove(0)
    } else {
        Value::Concat { parts: values }
    })
}

/// A value anywhere the DSL accepts one: text (with markers), a number, or a boolean (as text).
pub(crate) fn value(js: &JsVal, a: &Args, name: &str) -> Result<Value, ScriptError> {
    match js {
        JsVal::Str(text) => text_value(text, a, name),
        JsVal::Num(_) => Ok(Value::Number {
            value: a.number(js, name)?,
        }),
        JsVal::Bool(b) => Ok(Value::text(b.to_string())),
        other => Err(a.err(format_args!(
            "`{name}` must be text or a number, got {}",
            other.kind()
        ))),
    }
}

/// `{name: value, ...}` as ordered pairs.
pub(crate) fn pairs(js: &JsVal, a: &Args, name: &str) -> Result<Vec<(String, Value)>, ScriptError> {
    a.map(js, name)?
        .iter()
        .map(|(key, v)| Ok((key.clone(), value(v, a, &format!("{name}.{key}"))?)))
        .collect()
}

/// A request body from `payload`, as StormForger reads it: text is sent as it is, an object
/// is form-encoded. barrage's extensions have names of their own: `{json: object or array}`
/// sends JSON, `{form: {...}}` is the explicit form.
pub(crate) fn body(payload: &JsVal, a: &Args) -> Result<Body, ScriptError> {
    match payload {
        JsVal::Str(_) | JsVal::Num(_) => Ok(Body::Text {
            value: value(payload, a, "payload")?,
        }),
        JsVal::Obj(fields)
            if fields.len() == 1
                && fields[0].0 == "json"
                && matches!(fields[0].1, JsVal::Obj(_) | JsVal::Arr(_)) =>
        {
            Ok(Body::Json {
                template: json_template(&fields[0].1, a, "payload.json")?,
            })
        }
        JsVal::Obj(fields) if fields.len() == 1 && fields[0].0 == "form" => Ok(Body::Form {
            fields: form_fields(&fields[0].1, a, "payload.form")?,
        }),
        JsVal::Obj(_) => Ok(Body::Form {
            fields: form_fields(payload, a, "payload")?,
        }),
        JsVal::Arr(_) => Err(a.err(
            "`payload` is an array; StormForger sends objects form-encoded, so for a JSON body write `payload: {json: [...]}` (or `payload: JSON.stringify(...)`)",
        )),
        other => Err(a.err(format_args!(
            "`payload` must be text or an object, got {}",
            other.kind()
        ))),
    }
}

/// Form fields: each value is text or a number (a nested object or array has no form
/// encoding, so it is an error rather than `[object Object]` on the wire).
fn form_fields(js: &JsVal, a: &Args, name: &str) -> Result<Vec<(String, Value)>, ScriptError> {
    for (key, v) in a.map(js, name)? {
        if matches!(v, JsVal::Obj(_) | JsVal::Arr(_)) {
            return Err(a.err(format_args!(
                "`{name}.{key}` is {}, which a form cannot hold; for a JSON body write `payload: {{json: {{...}}}}`",
                v.kind()
            )));
        }
    }
    pairs(js, a, name)
}

fn is_static(js: &JsVal) -> bool {
    match js {
        JsVal::Str(s) => !has_marker(s),
        JsVal::Arr(items) => items.iter().all(is_static),
        JsVal::Obj(fields) => fields.iter().all(|(_, v)| is_static(v)),
        _ => true,
    }
}

/// JSON whose per-client leaves become `Value` nodes; fixed subtrees stay literal.
pub(crate) fn json_template(js: &JsVal, a: &Args, path: &str) -> Result<JsonTemplate, ScriptError> {
    if is_static(js) {
        let mut json = String::new();
        literal(js, a, path, &mut json)?;
        return Ok(JsonTemplate::Literal { json });
    }
    Ok(match js {
        JsVal::Str(text) => JsonTemplate::Value {
            value: text_value(text, a, path)?,
        },
        JsVal::Arr(items) => JsonTemplate::Array {
            items: items
                .iter()
                .enumerate()
                .map(|(i, item)| json_template(item, a, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        },
        JsVal::Obj(fields) => JsonTemplate::Object {
            fields: fields
                .iter()
                .map(|(key, v)| Ok((key.clone(), json_template(v, a, &format!("{path}.{key}"))?)))
                .collect::<Result<_, ScriptError>>()?,
        },
        other => unreachable!("non-string leaves are static: {other:?}"),
    })
}

/// Writes a fixed value as JSON text.
fn literal(js: &JsVal, a: &Args, path: &str, out: &mut String) -> Result<(), ScriptError> {
    let quote = |s: &str| serde_json::to_string(s).expect("strings serialise");
    match js {
        JsVal::Null => out.push_str("null"),
        JsVal::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsVal::Num(n) => out.push_str(&fmt_num(a.number(js, path).map(|_| *n)?)),
        JsVal::Str(s) => out.push_str(&quote(s)),
        JsVal::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                literal(item, a, &format!("{path}[{i}]"), out)?;
            }
            out.push(']');
        }
        JsVal::Obj(fields) => {
            out.push('{');
            for (i, (key, v)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&quote(key));
                out.push(':');
                literal(v, a, &format!("{path}.{key}"), out)?;
            }
            out.push('}');
        }
        other => {
            return Err(a.err(format_args!(
                "`{path}` cannot be sent as JSON: it is {}",
                other.kind()
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Location;

    fn var(name: &str) -> String {
        format!("{OPEN}v:{name}{CLOSE}")
    }

    #[test]
    fn markers_split_into_concatenations() {
        let loc = Location::file("t.js");
        let a = Args {
            what: "t",
            loc: &loc,
        };
        let token = format!("Bearer {}", var("token"));
        assert_eq!(
            value(&JsVal::Str(token), &a, "h").unwrap(),
            Value::Concat {
                parts: vec![
                    Value::text("Bearer "),
                    Value::Var {
                        name: "token".into()
                    }
                ]
            }
        );
        assert_eq!(
            value(&JsVal::Str(var("x")), &a, "h").unwrap(),
            Value::Var { name: "x".into() }
        );
        let column = format!("{OPEN}c:_row1:a:b{CLOSE}!");
        assert_eq!(
            parts(&column),
            vec![
                Part::Value(Value::Column {
                    var: "_row1".into(),
                    column: "a:b".into()
                }),
                Part::Text("!".into())
            ]
        );
        assert_eq!(parts(""), vec![Part::Text(String::new())]);
        // A stray marker character is kept as text.
        assert_eq!(parts("a\u{E000}b"), vec![Part::Text("a\u{E000}b".into())]);
        let handle = format!("{OPEN}d:0{CLOSE}");
        assert!(value(&JsVal::Str(handle), &a, "p").is_err());
    }

    #[test]
    fn json_templates_keep_fixed_subtrees_literal() {
        let loc = Location::file("t.js");
        let a = Args {
            what: "t",
            loc: &loc,
        };
        let doc = JsVal::Obj(vec![
            ("n".into(), JsVal::Num(3.0)),
            (
                "fixed".into(),
                JsVal::Arr(vec![
                    JsVal::Str("a\"b".into()),
                    JsVal::Null,
                    JsVal::Num(0.5),
                ]),
            ),
            ("id".into(), JsVal::Str(var("id"))),
        ]);
        let template = json_template(&doc, &a, "payload").unwrap();
        assert_eq!(
            template,
            JsonTemplate::Object {
                fields: vec![
                    ("n".into(), JsonTemplate::Literal { json: "3".into() }),
                    (
                        "fixed".into(),
                        JsonTemplate::Literal {
                            json: r#"["a\"b",null,0.5]"#.into()
                        }
                    ),
                    (
                        "id".into(),
                        JsonTemplate::Value {
                            value: Value::Var { name: "id".into() }
                        }
                    ),
                ]
            }
        );
        let bad = JsVal::Obj(vec![("f".into(), JsVal::Func)]);
        assert!(json_template(&bad, &a, "payload")
            .unwrap_err()
            .to_string()
            .contains("`payload.f` cannot be sent as JSON"));
    }
}
