//! The init context evaluated once at start (as k6 does before any VU): the script's
//! `options`, its custom metric declarations, and the functions it exports.

use crate::context::{evaluate, thrown, Script};
use crate::host::InitHost;
use crate::K6Error;
use barrage_plan::MetricDecl;
use barrage_script::runtime::{bounded_runtime, Deadline};
use rquickjs::Value;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the init context may run at start (an endless loop is stopped).
pub const INIT_LIMIT: Duration = Duration::from_secs(5);
/// QuickJS heap limit of the init evaluation at start.
const INIT_MEMORY: usize = 256 << 20;

/// What the init context exported and declared.
#[derive(Debug)]
pub(crate) struct Exported {
    /// `options` as JSON (`null` when not exported).
    pub options: serde_json::Value,
    pub metrics: Vec<MetricDecl>,
    /// The names of the functions the script exports (`setup`, `teardown`,
    /// `handleSummary`, scenarios' `exec` functions).
    pub functions: Vec<String>,
}

pub(crate) fn evaluate_init(script: &Script) -> Result<Exported, K6Error> {
    let deadline = Deadline::default();
    deadline.set(Some(Instant::now() + INIT_LIMIT));
    let engine = |e: rquickjs::Error| K6Error::Init(format!("{}: {e}", script.file));
    let runtime = bounded_runtime(INIT_MEMORY, &deadline).map_err(engine)?;
    let context = crate::context::vu_context(&runtime, script).map_err(engine)?;
    let host = Rc::new(InitHost {
        declared: Default::default(),
        run: Arc::clone(&script.run),
    });
    let mut functions = Vec::new();
    let options = context.with(|ctx| {
        let exports = evaluate(&ctx, script, Rc::clone(&host), 0).map_err(|e| {
            if deadline.hit() {
                K6Error::Init(format!(
                    "{}: the init context ran longer than {}s (an endless loop?) and was stopped",
                    script.file,
                    INIT_LIMIT.as_secs()
                ))
            } else {
                e
            }
        })?;
        for entry in exports.props::<String, Value>() {
            let (name, value) = entry.map_err(|e| thrown(&ctx, &script.file, e))?;
            if value.is_function() {
                functions.push(name);
            }
        }
        let options: Value = exports
            .get("options")
            .map_err(|e| thrown(&ctx, &script.file, e))?;
        if options.is_undefined() || options.is_null() {
            return Ok(serde_json::Value::Null);
        }
        let text = ctx
            .json_stringify(options)
            .map_err(|e| thrown(&ctx, &script.file, e))?
            .map(|s| s.to_string())
            .transpose()
            .map_err(|e| thrown(&ctx, &script.file, e))?
            .unwrap_or_else(|| "null".into());
        serde_json::from_str(&text)
            .map_err(|e| K6Error::Options(format!("{}: `options`: {e}", script.file)))
    })?;
    let metrics = host.declared.take();
    Ok(Exported {
        options,
        metrics,
        functions,
    })
}
