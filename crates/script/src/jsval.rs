//! A JavaScript value copied out of QuickJS, and typed readers for DSL arguments that report
//! misuse as errors naming what was expected and where.

use crate::error::{Location, ScriptError};
use std::time::Duration;

/// A plain copy of a JavaScript value (objects keep their key order).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsVal {
    Undefined,
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<JsVal>),
    Obj(Vec<(String, JsVal)>),
    Func,
    /// Anything else (symbol, bigint ...), by type name.
    Other(&'static str),
}

impl JsVal {
    /// How the value is described in error messages.
    pub(crate) fn kind(&self) -> String {
        match self {
            JsVal::Undefined => "undefined".into(),
            JsVal::Null => "null".into(),
            JsVal::Bool(b) => format!("{b}"),
            JsVal::Num(n) => format!("the number {}", fmt_num(*n)),
            JsVal::Str(s) if crate::value::has_marker(s) => "a per-client value".into(),
            JsVal::Str(s) => format!("the text {s:?}"),
            JsVal::Arr(_) => "an array".into(),
            JsVal::Obj(_) => "an object".into(),
            JsVal::Func => "a function".into(),
            JsVal::Other(kind) => format!("a {kind}"),
        }
    }

    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, JsVal::Undefined | JsVal::Null)
    }

    /// A property of an object (`Undefined` when absent or not an object).
    pub(crate) fn get(&self, key: &str) -> &JsVal {
        match self {
            JsVal::Obj(fields) => fields
                .iter()
                .find(|(k, _)| k == key)
                .map_or(&JsVal::Undefined, |(_, v)| v),
            _ => &JsVal::Undefined,
        }
    }
}

/// Formats a number as JavaScript would for integers (`3`, not `3.0`).
pub(crate) fn fmt_num(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// Reads the arguments of one DSL call; errors start with `what` (e.g. "`session.get`") and
/// point at `loc`.
pub(crate) struct Args<'a> {
    pub what: &'a str,
    pub loc: &'a Location,
}

impl Args<'_> {
    pub(crate) fn err(&self, message: impl std::fmt::Display) -> ScriptError {
        ScriptError::dsl(self.loc, format!("{}: {message}", self.what))
    }

    /// Checks the argument count.
    pub(crate) fn arity(&self, args: &[JsVal], min: usize, max: usize) -> Result<(), ScriptError> {
        if args.len() < min || args.len() > max {
            let expected = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(self.err(format_args!(
                "expected {expected} argument{}, got {}",
                if max == 1 { "" } else { "s" },
                args.len()
            )));
        }
        Ok(())
    }

    /// The fields of an options object, checked against the keys it may have; those set to
    /// `undefined` are left out.
    pub(crate) fn options<'v>(
        &self,
        value: &'v JsVal,
        allowed: &[&str],
    ) -> Result<Vec<&'v (String, JsVal)>, ScriptError> {
        let fields = match value {
            JsVal::Undefined | JsVal::Null => return Ok(Vec::new()),
            JsVal::Obj(fields) => fields,
            other => {
                return Err(self.err(format_args!(
                    "expected an options object, got {}",
                    other.kind()
                )))
            }
        };
        if let Some((key, _)) = fields.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            return Err(self.err(format_args!(
                "unknown option `{key}` (known: {})",
                allowed.join(", ")
            )));
        }
        // Like JSON, an option set to `undefined` is an option not given.
        Ok(fields
            .iter()
            .filter(|(_, v)| *v != JsVal::Undefined)
            .collect())
    }

    /// An object used as a map (`{name: value}`).
    pub(crate) fn map<'v>(
        &self,
        value: &'v JsVal,
        name: &str,
    ) -> Result<&'v [(String, JsVal)], ScriptError> {
        match value {
            JsVal::Obj(fields) => Ok(fields),
            other => Err(self.err(format_args!(
                "`{name}` must be an object ({{name: value}}), got {}",
                other.kind()
            ))),
        }
    }

    pub(crate) fn string<'v>(&self, value: &'v JsVal, name: &str) -> Result<&'v str, ScriptError> {
        match value {
            JsVal::Str(s) if !crate::value::has_marker(s) => Ok(s),
            other => Err(self.err(format_args!(
                "`{name}` must be fixed text, got {}",
                other.kind()
            ))),
        }
    }

    pub(crate) fn bool(&self, value: &JsVal, name: &str) -> Result<bool, ScriptError> {
        match value {
            JsVal::Bool(b) => Ok(*b),
            other => Err(self.err(format_args!(
                "`{name}` must be true or false, got {}",
                other.kind()
            ))),
        }
    }

    /// A finite number.
    pub(crate) fn number(&self, value: &JsVal, name: &str) -> Result<f64, ScriptError> {
        match value {
            JsVal::Num(n) if n.is_finite() => Ok(*n),
            JsVal::Num(n) if n.is_nan() => Err(self.err(format_args!(
                "`{name}` is NaN (per-client values such as getVar or row.get cannot take part in arithmetic at compile time)"
            ))),
            other => Err(self.err(format_args!(
                "`{name}` must be a finite number, got {}",
                other.kind()
            ))),
        }
    }

    /// A finite, non-negative number.
    pub(crate) fn non_negative(&self, value: &JsVal, name: &str) -> Result<f64, ScriptError> {
        let n = self.number(value, name)?;
        if n < 0.0 {
            return Err(self.err(format_args!(
                "`{name}` must not be negative, got {}",
                fmt_num(n)
            )));
        }
        Ok(n)
    }

    /// A rate: a finite number from 0 to [`barrage_plan::limits::MAX_RATE`].
    pub(crate) fn rate(&self, value: &JsVal, name: &str) -> Result<f64, ScriptError> {
        let n = self.non_negative(value, name)?;
        barrage_plan::limits::check_rate(n).map_err(|e| self.err(format_args!("`{name}`: {e}")))
    }

    /// A number of seconds (a wait): finite, from 0 to 365 days.
    pub(crate) fn seconds(&self, value: &JsVal, name: &str) -> Result<f64, ScriptError> {
        let n = self.non_negative(value, name)?;
        barrage_plan::limits::check_seconds(n).map_err(|e| self.err(format_args!("`{name}`: {e}")))
    }

    /// A request timeout: a duration from 1ms to 24h.
    pub(crate) fn timeout(&self, value: &JsVal, name: &str) -> Result<Duration, ScriptError> {
        let timeout = self.duration(value, name)?;
        barrage_plan::limits::check_timeout(timeout)
            .map_err(|e| self.err(format_args!("`{name}`: {e}")))
    }

    /// A whole number within `min..=max`.
    pub(crate) fn integer(
        &self,
        value: &JsVal,
        name: &str,
        min: i64,
        max: i64,
    ) -> Result<i64, ScriptError> {
        let n = self.number(value, name)?;
        if n.fract() != 0.0 || n < min as f64 || n > max as f64 {
            return Err(self.err(format_args!(
                "`{name}` must be a whole number from {min} to {max}, got {}",
                fmt_num(n)
            )));
        }
        Ok(n as i64)
    }

    /// A duration: a number of seconds, or text such as `"500ms"` or `"2m"`; at most
    /// [`barrage_plan::limits::MAX_DURATION`].
    pub(crate) fn duration(&self, value: &JsVal, name: &str) -> Result<Duration, ScriptError> {
        let checked = match value {
            JsVal::Str(text) if !crate::value::has_marker(text) => {
                barrage_plan::parse_duration(text)
                    .map_err(|e| e.to_string())
                    .and_then(barrage_plan::limits::check_duration)
            }
            other => {
                let seconds = self.non_negative(other, name)?;
                barrage_plan::limits::duration_from_secs(seconds)
            }
        };
        checked.map_err(|e| self.err(format_args!("`{name}`: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(loc: &Location) -> Args<'_> {
        Args { what: "t", loc }
    }

    #[test]
    fn options_reject_unknown_keys_by_name() {
        let loc = Location::file("x.js");
        let opts = JsVal::Obj(vec![("tga".into(), JsVal::Str("a".into()))]);
        let e = args(&loc).options(&opts, &["tag", "params"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.js: t: unknown option `tga` (known: tag, params)"
        );
        let unset = JsVal::Obj(vec![("tag".into(), JsVal::Undefined)]);
        assert!(args(&loc).options(&unset, &["tag"]).unwrap().is_empty());
        assert!(args(&loc)
            .options(&JsVal::Undefined, &["tag"])
            .unwrap()
            .is_empty());
    }

    #[test]
    fn numbers_are_checked() {
        let loc = Location::file("x.js");
        let a = args(&loc);
        assert_eq!(a.non_negative(&JsVal::Num(2.5), "n").unwrap(), 2.5);
        assert!(a.non_negative(&JsVal::Num(-1.0), "n").is_err());
        assert!(a.number(&JsVal::Num(f64::INFINITY), "n").is_err());
        assert!(a
            .number(&JsVal::Num(f64::NAN), "n")
            .unwrap_err()
            .to_string()
            .contains("NaN"));
        assert!(a.integer(&JsVal::Num(1.5), "n", 0, 10).is_err());
        assert_eq!(a.integer(&JsVal::Num(7.0), "n", 0, 10).unwrap(), 7);
        assert_eq!(
            a.duration(&JsVal::Str("1.5s".into()), "d").unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            a.duration(&JsVal::Num(2.0), "d").unwrap(),
            Duration::from_secs(2)
        );
    }
}
