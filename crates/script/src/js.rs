//! Runs the script once in QuickJS (time- and memory-bounded) after the DSL prelude, and
//! copies out the record of DSL calls it made.

use crate::error::{Location, ScriptError};
use crate::jsval::JsVal;
use crate::runtime::{bounded_runtime, describe_thrown, script_options, Deadline};
use rquickjs::convert::Coerced;
use rquickjs::{Context, Ctx, Function, Object, Type, Value};
use std::time::{Duration, Instant};

const PRELUDE: &str = include_str!("prelude.js");
const PRELUDE_FILE: &str = "<barrage-dsl>";
/// QuickJS heap limit: far more than any test definition needs.
const MEMORY_LIMIT: usize = 256 << 20;

/// One recorded DSL call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    pub verb: String,
    pub args: Vec<JsVal>,
    pub loc: Location,
    /// Steps recorded inside a block (`session`, `times`, `if`, `forEver`).
    pub steps: Vec<Call>,
    /// The variable a `pickFrom` or `generate` binds.
    pub var: Option<String>,
}

/// `session.ds.loadStructured(file)`, once per file name; its index is the handle.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Load {
    pub file: String,
    /// The options object (`Null` when none was given).
    pub options: JsVal,
    pub loc: Location,
}

/// `session.getVar(name)` inside the session with this index.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct VarUse {
    pub name: String,
    pub loc: Location,
    pub session: usize,
}

/// `row.get(column)` on the row bound to `var`, picked from load `source`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ColumnUse {
    pub var: String,
    pub source: usize,
    pub column: String,
    pub loc: Location,
}

/// Everything the script did through the DSL, in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Record {
    /// `definition.*` calls; `session` calls carry their steps.
    pub defs: Vec<Call>,
    pub loads: Vec<Load>,
    pub get_vars: Vec<VarUse>,
    pub columns: Vec<ColumnUse>,
}

fn engine(file: &str, error: rquickjs::Error) -> ScriptError {
    ScriptError::Engine {
        location: Location::file(file),
        message: error.to_string(),
    }
}

/// What the command line gives the script besides its source.
#[derive(Debug, Clone, Default)]
pub struct ScriptInputs {
    /// `--define NAME=VALUE`: `NAME` is a global or a dotted path under one
    /// (`defines.env`); VALUE is read as JSON, or else taken as text.
    pub defines: Vec<(String, String)>,
}

/// Evaluates `source` (named `file` in locations), stopping it after `limit`. A `.mjs` file,
/// or one with `import`/`export` statements, is bundled with the relative imports it reads from
/// disk, as StormForger bundles a test case (`bundle.rs`).
#[cfg(test)]
pub(crate) fn evaluate(source: &str, file: &str, limit: Duration) -> Result<Record, ScriptError> {
    evaluate_with(source, file, limit, &ScriptInputs::default())
}

pub(crate) fn evaluate_with(
    source: &str,
    file: &str,
    limit: Duration,
    inputs: &ScriptInputs,
) -> Result<Record, ScriptError> {
    let deadline = Deadline::default();
    deadline.set(Some(Instant::now() + limit));
    let runtime = bounded_runtime(MEMORY_LIMIT, &deadline).map_err(|e| engine(file, e))?;
    let modules = crate::modules::Modules::new(file);
    runtime.set_loader(modules.resolver(), modules.loader());
    let context = Context::full(&runtime).map_err(|e| engine(file, e))?;
    context.with(|ctx| {
        let fail = |error: rquickjs::Error| {
            if let Some(problem) = modules.problem() {
                return problem;
            }
            let files = modules.files();
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            match error {
                rquickjs::Error::Exception => exception(&ctx, &files, deadline.hit(), limit),
                other => engine(file, other),
            }
        };
        let prelude: Function = ctx
            .eval_with_options(PRELUDE, options(PRELUDE_FILE))
            .map_err(fail)?;
        let env = Object::new(ctx.clone()).map_err(fail)?;
        for (name, value) in std::env::vars() {
            env.set(name, value).map_err(fail)?;
        }
        let defines = rquickjs::Array::new(ctx.clone()).map_err(fail)?;
        for (i, (path, value)) in inputs.defines.iter().enumerate() {
            let parsed: Value = match serde_json::from_str::<serde_json::Value>(value) {
                Ok(_) => ctx.json_parse(value.as_str()).map_err(fail)?,
                Err(_) => rquickjs::String::from_str(ctx.clone(), value)
                    .map_err(fail)?
                    .into_value(),
            };
            let pair = rquickjs::Array::new(ctx.clone()).map_err(fail)?;
            pair.set(0, path.as_str()).map_err(fail)?;
            pair.set(1, parsed).map_err(fail)?;
            defines.set(i, pair).map_err(fail)?;
        }
        let record: Object = prelude.call((env, defines)).map_err(fail)?;
        if is_module(file, source) {
            // As StormForger: its files bundled into sloppy scripts (see bundle.rs).
            crate::bundle::evaluate(&ctx, file, source, &modules).map_err(fail)?;
        } else {
            ctx.eval_with_options::<Value, _>(source, options(file))
                .map_err(fail)?;
        }
        if deadline.hit() {
            return Err(ScriptError::Timeout {
                location: Location::file(file),
                limit,
            });
        }
        let files = modules.files();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        let record = copy(record.as_value(), 0).map_err(fail)?;
        Ok(read_record(&record, &files))
    })
}

/// Whether the script is an ES module: by extension, or by a top-level `import`/`export`.
fn is_module(file: &str, source: &str) -> bool {
    file.ends_with(".mjs")
        || source.lines().any(|line| {
            let line = line.trim_start();
            line.starts_with("import ")
                || line.starts_with("import{")
                || line.starts_with("export ")
        })
}

fn options(file: &str) -> rquickjs::context::EvalOptions {
    script_options(file)
}

/// The pending exception as an error located at its innermost frame in the script's files.
fn exception(ctx: &Ctx<'_>, files: &[&str], timed_out: bool, limit: Duration) -> ScriptError {
    let thrown = ctx.catch();
    let (location, message) = describe_thrown(&thrown, files);
    if timed_out {
        return ScriptError::Timeout { location, limit };
    }
    let dsl = thrown.as_object().filter(|_| thrown.is_error());
    if dsl.and_then(|o| o.get::<_, Option<bool>>("barrageDsl").ok().flatten()) == Some(true) {
        // The DSL's own errors carry their message without the `Error: ` name.
        let message = dsl
            .and_then(|o| {
                o.get::<_, Option<Coerced<String>>>("message")
                    .ok()
                    .flatten()
            })
            .map_or(message, |c| c.0);
        return ScriptError::dsl(&location, message);
    }
    ScriptError::js(location, &message)
}

/// Copies a (plain, snapshotted) JavaScript value.
fn copy(value: &Value<'_>, depth: usize) -> rquickjs::Result<JsVal> {
    if depth > 64 {
        return Ok(JsVal::Other("deeply nested value"));
    }
    Ok(match value.type_of() {
        Type::Undefined | Type::Uninitialized => JsVal::Undefined,
        Type::Null => JsVal::Null,
        Type::Bool => JsVal::Bool(value.as_bool().unwrap_or_default()),
        Type::Int | Type::Float => JsVal::Num(value.as_number().unwrap_or(f64::NAN)),
        Type::String => JsVal::Str(value.get::<String>()?),
        Type::Array => {
            let array = value.as_array().expect("type is array");
            let items = array
                .iter::<Value>()
                .collect::<rquickjs::Result<Vec<_>>>()?;
            JsVal::Arr(
                items
                    .iter()
                    .map(|item| copy(item, depth + 1))
                    .collect::<rquickjs::Result<_>>()?,
            )
        }
        Type::Function | Type::Constructor => JsVal::Func,
        Type::Object | Type::Exception => {
            let object = value.as_object().expect("type is object");
            let mut fields = Vec::new();
            for prop in object.props::<String, Value>() {
                let (key, item) = prop?;
                fields.push((key, copy(&item, depth + 1)?));
            }
            JsVal::Obj(fields)
        }
        other => JsVal::Other(other.as_str()),
    })
}

fn string(value: &JsVal) -> String {
    match value {
        JsVal::Str(s) => s.clone(),
        _ => String::new(),
    }
}

fn index(value: &JsVal) -> usize {
    match value {
        JsVal::Num(n) => *n as usize,
        _ => 0,
    }
}

fn list(value: &JsVal) -> &[JsVal] {
    match value {
        JsVal::Arr(items) => items,
        _ => &[],
    }
}

fn read_call(value: &JsVal, files: &[&str]) -> Call {
    Call {
        verb: string(value.get("verb")),
        args: list(value.get("args")).to_vec(),
        loc: Location::from_stack(files, &string(value.get("loc"))),
        steps: list(value.get("steps"))
            .iter()
            .map(|step| read_call(step, files))
            .collect(),
        var: match value.get("var") {
            JsVal::Str(var) => Some(var.clone()),
            _ => None,
        },
    }
}

/// The prelude's record object as Rust data.
fn read_record(record: &JsVal, files: &[&str]) -> Record {
    let loc = |value: &JsVal| Location::from_stack(files, &string(value.get("loc")));
    Record {
        defs: list(record.get("defs"))
            .iter()
            .map(|call| read_call(call, files))
            .collect(),
        loads: list(record.get("loads"))
            .iter()
            .map(|load| Load {
                file: string(load.get("file")),
                options: load.get("options").clone(),
                loc: loc(load),
            })
            .collect(),
        get_vars: list(record.get("getVars"))
            .iter()
            .map(|use_| VarUse {
                name: string(use_.get("name")),
                loc: loc(use_),
                session: index(use_.get("session")),
            })
            .collect(),
        columns: list(record.get("columns"))
            .iter()
            .map(|use_| ColumnUse {
                var: string(use_.get("var")),
                source: index(use_.get("source")),
                column: string(use_.get("column")),
                loc: loc(use_),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(5);

    #[test]
    fn records_calls_with_locations() {
        let source = "definition.setTarget('http://localhost:1');\n\
                      definition.session('s', function (session) {\n  session.get('/a', {tag: 'x'});\n});";
        let record = evaluate(source, "t.js", LIMIT).unwrap();
        assert_eq!(record.defs.len(), 2);
        assert_eq!(record.defs[0].verb, "setTarget");
        assert_eq!(record.defs[0].loc.to_string(), "t.js:1:11");
        let session = &record.defs[1];
        assert_eq!(session.args, vec![JsVal::Str("s".into())]);
        assert_eq!(session.steps[0].verb, "get");
        assert_eq!(session.steps[0].loc.to_string(), "t.js:3:11");
        assert_eq!(
            session.steps[0].args[1],
            JsVal::Obj(vec![("tag".into(), JsVal::Str("x".into()))])
        );
    }

    #[test]
    fn endless_loops_are_stopped() {
        let started = Instant::now();
        let e = evaluate(
            "var i = 0;\nfunction spin() {\n  while (true) { i++; }\n}\nspin();",
            "t.js",
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(matches!(e, ScriptError::Timeout { .. }), "{e}");
        assert!(e.to_string().starts_with("t.js:3:"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn thrown_non_errors_are_reported() {
        let e = evaluate("throw 'oops'", "t.js", LIMIT).unwrap_err();
        assert_eq!(e.to_string(), "t.js: uncaught exception: oops");
    }

    #[test]
    fn arguments_are_copied_when_the_call_is_made() {
        let source = "var o = {tag: 'a'};\ndefinition.session('s', function (s) { s.get('/', o); o.tag = 'b'; });";
        let record = evaluate(source, "t.js", LIMIT).unwrap();
        assert_eq!(
            record.defs[0].steps[0].args[1].get("tag"),
            &JsVal::Str("a".into())
        );
    }
}
