//! Per-client values: plan [`Value`]s compiled to [`CValue`]s (variables resolved to ids,
//! columns to indices, constants folded), evaluated piece by piece into templates that
//! encode as they write (URL, JSON string, header value).

use super::program::Scope;
use super::state::{SessionState, Slot};
use super::SessionProblem;
use barrage_plan::{DataSource, Value};

/// Index of a session variable in the client's variable vector.
pub(crate) type VarId = u32;

/// A compiled [`Value`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CValue {
    Text(Box<str>),
    /// A number, with its text form computed once.
    Number {
        value: f64,
        text: Box<str>,
    },
    Var(VarId),
    /// A column of the row held by `var` (a row of `data_sources[source]`).
    Column {
        var: VarId,
        source: usize,
        column: usize,
    },
    LastStatus,
    Concat(Box<[CValue]>),
}

/// What a value reads while evaluated: the client's variables, the plan's data, last status.
#[derive(Clone, Copy)]
pub(crate) struct Eval<'a> {
    pub state: &'a SessionState,
    pub data: &'a [DataSource],
}

/// Text of a number the way people write it: `3`, not `3.0`.
pub(crate) fn number_text(value: f64) -> String {
    if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

impl CValue {
    /// Compiles `value` in `scope`; a concatenation of constants becomes one text.
    pub(crate) fn compile(value: &Value, scope: &mut Scope) -> Result<CValue, SessionProblem> {
        Ok(match value {
            Value::Text { value } => CValue::Text(value.as_str().into()),
            Value::Number { value } => CValue::Number {
                value: *value,
                text: number_text(*value).into(),
            },
            Value::Var { name } => CValue::Var(scope.var(name)),
            Value::Column { var, column } => scope.column(var, column)?,
            Value::LastStatus => CValue::LastStatus,
            Value::Concat { parts } => {
                let parts = parts
                    .iter()
                    .map(|p| CValue::compile(p, scope))
                    .collect::<Result<Vec<_>, _>>()?;
                if parts.iter().all(|p| p.constant().is_some()) {
                    let text: String = parts.iter().filter_map(CValue::constant).collect();
                    CValue::Text(text.into())
                } else {
                    CValue::Concat(parts.into())
                }
            }
        })
    }

    /// The value's text, when it is the same for every client.
    pub(crate) fn constant(&self) -> Option<&str> {
        match self {
            CValue::Text(text) | CValue::Number { text, .. } => Some(text),
            _ => None,
        }
    }

    /// Hands the value's text to `out`, piece by piece (no intermediate string).
    pub(crate) fn pieces(&self, cx: Eval<'_>, out: &mut impl FnMut(&str)) {
        match self {
            CValue::Text(text) | CValue::Number { text, .. } => out(text),
            CValue::Var(var) => {
                if let Slot::Text = cx.state.slot(*var) {
                    out(cx.state.text(*var));
                }
            }
            CValue::Column {
                var,
                source,
                column,
            } => {
                if let Slot::Row(row) = cx.state.slot(*var) {
                    let cell = cx.data[*source]
                        .rows
                        .get(row as usize)
                        .and_then(|row| row.get(*column));
                    if let Some(cell) = cell {
                        out(cell);
                    }
                }
            }
            CValue::LastStatus => out(itoa::Buffer::new().format(cx.state.last_status)),
            CValue::Concat(parts) => {
                for part in parts.iter() {
                    part.pieces(cx, out);
                }
            }
        }
    }

    /// Appends the value's text to `out`.
    pub(crate) fn write(&self, cx: Eval<'_>, out: &mut String) {
        self.pieces(cx, &mut |piece| out.push_str(piece));
    }
}

/// How a dynamic piece of a template is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// As it is (text bodies).
    Plain,
    /// Percent-encoded except RFC 3986 unreserved characters (form fields).
    Url,
    /// As written, as StormForger substitutes `:params`: only what a request target cannot
    /// carry (space, control bytes, `#`, non-ASCII) is percent-encoded.
    AsWritten,
    /// The inside of a JSON string (the quotes are literal pieces around it).
    JsonString,
    /// A header value: line breaks and control characters are dropped (no header injection).
    HeaderValue,
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Appends `text` to `out`, percent-encoding every byte `keep` does not keep.
fn percent_encode(text: &str, out: &mut Vec<u8>, keep: fn(u8) -> bool) {
    for &b in text.as_bytes() {
        if keep(b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// Appends `text` to `out` in `encoding`.
pub(crate) fn encode_into(encoding: Encoding, text: &str, out: &mut Vec<u8>) {
    match encoding {
        Encoding::Plain => out.extend_from_slice(text.as_bytes()),
        Encoding::Url => percent_encode(text, out, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
        }),
        Encoding::AsWritten => {
            percent_encode(text, out, |b| (0x21..0x7f).contains(&b) && b != b'#')
        }
        Encoding::JsonString => {
            for &b in text.as_bytes() {
                match b {
                    b'"' => out.extend_from_slice(b"\\\""),
                    b'\\' => out.extend_from_slice(b"\\\\"),
                    b'\n' => out.extend_from_slice(b"\\n"),
                    b'\r' => out.extend_from_slice(b"\\r"),
                    b'\t' => out.extend_from_slice(b"\\t"),
                    0..=0x1f => out.extend_from_slice(&[
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ]),
                    _ => out.push(b),
                }
            }
        }
        Encoding::HeaderValue => out.extend(
            text.bytes()
                .filter(|&b| barrage_http::is_header_value_byte(b)),
        ),
    }
}

/// A piece of a request template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Literal(Box<[u8]>),
    Dynamic(CValue, Encoding),
}

/// Fixed bytes and per-client values, in order; adjacent fixed bytes are merged and constant
/// values are encoded at compile time, so a template without per-client parts is one literal.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    pub(crate) fn literal(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(Piece::Literal(last)) = self.pieces.last_mut() {
            let mut joined = Vec::with_capacity(last.len() + bytes.len());
            joined.extend_from_slice(last);
            joined.extend_from_slice(bytes);
            *last = joined.into();
        } else {
            self.pieces.push(Piece::Literal(bytes.into()));
        }
    }

    pub(crate) fn value(&mut self, value: CValue, encoding: Encoding) {
        if let Some(text) = value.constant() {
            let mut bytes = Vec::with_capacity(text.len());
            encode_into(encoding, text, &mut bytes);
            self.literal(&bytes);
        } else {
            self.pieces.push(Piece::Dynamic(value, encoding));
        }
    }

    /// The bytes, when the template has no per-client part.
    pub(crate) fn constant(&self) -> Option<&[u8]> {
        match self.pieces.as_slice() {
            [] => Some(&[]),
            [Piece::Literal(bytes)] => Some(bytes),
            _ => None,
        }
    }

    /// Appends the template, evaluated for one client, to `out`.
    pub(crate) fn render(&self, cx: Eval<'_>, out: &mut Vec<u8>) {
        for piece in &self.pieces {
            match piece {
                Piece::Literal(bytes) => out.extend_from_slice(bytes),
                Piece::Dynamic(value, encoding) => {
                    value.pieces(cx, &mut |text| encode_into(*encoding, text, out))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::program::Scope;
    use barrage_plan::{Binding, Step};

    fn data() -> Vec<DataSource> {
        vec![DataSource {
            name: "c.csv".into(),
            columns: vec!["id".into(), "name".into()],
            rows: vec![
                vec!["1".into(), "news & weather".into()],
                vec!["2".into(), "sports".into()],
            ],
        }]
    }

    fn steps() -> Vec<Step> {
        vec![Step::Bind {
            var: "row".into(),
            binding: Binding::PickRow {
                source: 0,
                sequential: false,
            },
        }]
    }

    fn text(value: &CValue, state: &SessionState, data: &[DataSource]) -> String {
        let mut out = String::new();
        value.write(Eval { state, data }, &mut out);
        out
    }

    #[test]
    fn concat_of_vars_columns_and_status_evaluates_per_client() {
        let data = data();
        let steps = steps();
        let mut scope = Scope::new(&steps, &data).unwrap();
        let value = Value::Concat {
            parts: vec![
                Value::text("Bearer "),
                Value::Var { name: "tok".into() },
                Value::text("/"),
                Value::Column {
                    var: "row".into(),
                    column: "name".into(),
                },
                Value::text("/"),
                Value::LastStatus,
                Value::Number { value: 2.5 },
            ],
        };
        let compiled = CValue::compile(&value, &mut scope).unwrap();
        let mut state = SessionState::default();
        state.reset(scope.var_count());
        assert_eq!(text(&compiled, &state, &data), "Bearer //02.5");
        let tok = scope.var("tok");
        state.set_text(tok).push_str("abc");
        state.set_row(scope.var("row"), 0);
        state.last_status = 201;
        assert_eq!(
            text(&compiled, &state, &data),
            "Bearer abc/news & weather/2012.5"
        );
    }

    #[test]
    fn constants_fold_and_numbers_print_like_people_write_them() {
        let data = data();
        let mut scope = Scope::new(&[], &data).unwrap();
        let value = Value::Concat {
            parts: vec![Value::text("n="), Value::Number { value: 3.0 }],
        };
        assert_eq!(
            CValue::compile(&value, &mut scope).unwrap(),
            CValue::Text("n=3".into())
        );
        assert_eq!(number_text(-0.5), "-0.5");
        assert_eq!(number_text(1e20), "100000000000000000000");
    }

    #[test]
    fn unknown_columns_and_non_row_vars_are_compile_errors() {
        let data = data();
        let steps = steps();
        let mut scope = Scope::new(&steps, &data).unwrap();
        let bad = Value::Column {
            var: "row".into(),
            column: "nope".into(),
        };
        let e = CValue::compile(&bad, &mut scope).unwrap_err();
        assert!(e.to_string().contains("`nope`"), "{e}");
        let bad = Value::Column {
            var: "other".into(),
            column: "id".into(),
        };
        assert!(CValue::compile(&bad, &mut scope).is_err());
    }

    #[test]
    fn encodings_escape_what_they_must() {
        let mut out = Vec::new();
        encode_into(Encoding::Url, "a b/ü?&=~-._", &mut out);
        assert_eq!(out, b"a%20b%2F%C3%BC%3F%26%3D~-._");
        out.clear();
        encode_into(Encoding::AsWritten, "a b/ü?&=%2F#\r", &mut out);
        assert_eq!(out, b"a%20b/%C3%BC?&=%2F%23%0D");
        out.clear();
        encode_into(Encoding::JsonString, "q\"\\\n\u{1}é", &mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "q\\\"\\\\\\n\\u0001é"
        );
        out.clear();
        encode_into(Encoding::HeaderValue, "a\r\nX-Evil: 1", &mut out);
        assert_eq!(out, b"aX-Evil: 1");
    }

    #[test]
    fn templates_merge_literals_and_render_dynamic_parts_encoded() {
        let data = data();
        let mut scope = Scope::new(&[], &data).unwrap();
        let mut template = Template::default();
        template.literal(b"/a?x=");
        template.value(CValue::Text("b c".into()), Encoding::Url);
        assert_eq!(template.constant(), Some(&b"/a?x=b%20c"[..]));
        let var = scope.var("v");
        template.literal(b"&y=");
        template.value(CValue::Var(var), Encoding::Url);
        assert_eq!(template.constant(), None);
        let mut state = SessionState::default();
        state.reset(scope.var_count());
        state.set_text(var).push_str("1/2");
        let mut out = Vec::new();
        template.render(
            Eval {
                state: &state,
                data: &data,
            },
            &mut out,
        );
        assert_eq!(out, b"/a?x=b%20c&y=1%2F2");
    }
}
