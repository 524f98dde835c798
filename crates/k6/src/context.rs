//! A k6 script's JavaScript context, the same for the init evaluation at start and for every
//! VU: the natives, the globals (`console`, `__ENV`, `__VU`, `__ITER`), the k6 modules, and
//! the script evaluated as an ES module (its init context). The script and the k6 modules are
//! compiled to QuickJS bytecode once at start ([`compile`]); every context loads that
//! bytecode instead of parsing the sources again.

use crate::host::{install, Host};
use crate::shared::RunShared;
use crate::K6Error;
use barrage_script::runtime::{describe_thrown, script_options};
use rquickjs::context::intrinsic;
use rquickjs::module::WriteOptions;
use rquickjs::{Context, Ctx, Module, Object, Runtime, Value};
use std::rc::Rc;
use std::sync::Arc;

const GLOBALS: &str = include_str!("js/globals.js");
/// The k6 modules, by the name scripts import them with.
const MODULES: &[(&str, &str)] = &[
    ("k6", include_str!("js/k6.js")),
    ("k6/http", include_str!("js/http.js")),
    ("k6/metrics", include_str!("js/metrics.js")),
    ("k6/data", include_str!("js/data.js")),
    ("k6/execution", include_str!("js/execution.js")),
    ("k6/encoding", include_str!("js/encoding.js")),
    ("k6/crypto", include_str!("js/crypto.js")),
];

/// What a script is evaluated from.
#[derive(Debug)]
pub(crate) struct Script {
    /// The file name used in error locations.
    pub file: String,
    /// `__ENV`: `-e KEY=VALUE` pairs over the process environment.
    pub env: Vec<(String, String)>,
    /// The scenario's name and executor (`k6/execution`).
    pub scenario: (String, String),
    /// The request tag thresholds filter on, and its values (the plan's tags 1..).
    pub request_tags: crate::request_tags::RequestTags,
    /// What the run's contexts share (`open()`ed files, `SharedArray`s, `test.abort()`).
    pub run: Arc<RunShared>,
    /// Whether VU contexts get typed arrays (see [`crate::detect::uses_typed_arrays`]).
    pub typed_arrays: bool,
    /// The bytecode of the k6 modules the script imports, then of the script (see
    /// [`compile`]).
    pub bytecode: Vec<Vec<u8>>,
}

/// Compiles the k6 modules `source` imports and the script itself (named `file`) to
/// bytecode, with debug information (exceptions keep their file:line). A syntax error is an
/// init error, located.
pub(crate) fn compile(source: &str, file: &str) -> Result<Vec<Vec<u8>>, K6Error> {
    let engine = |e: rquickjs::Error| K6Error::Init(format!("{file}: {e}"));
    let runtime = Runtime::new().map_err(engine)?;
    let context = Context::full(&runtime).map_err(engine)?;
    let imported = crate::detect::imports(source);
    context.with(|ctx| {
        let fail = |e| thrown(&ctx, file, e);
        let mut bytecode = Vec::new();
        for (name, module_source) in MODULES {
            if imported.iter().any(|(_, m)| m == name) {
                let module = Module::declare(ctx.clone(), *name, *module_source).map_err(fail)?;
                bytecode.push(module.write(WriteOptions::default()).map_err(fail)?);
            }
        }
        let module = Module::declare(ctx.clone(), file, source).map_err(fail)?;
        bytecode.push(module.write(WriteOptions::default()).map_err(fail)?);
        Ok(bytecode)
    })
}

/// The intrinsics of every VU context: all of the language k6 scripts use (Date, eval,
/// RegExp, JSON, Proxy, Map/Set, Promise); typed arrays when the script names them;
/// `performance`, WeakRef and DOMException, which k6 (goja) does not have, never.
type VuIntrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::Promise,
);

/// A context for `script` in `runtime` with [`VuIntrinsics`].
pub(crate) fn vu_context(runtime: &Runtime, script: &Script) -> rquickjs::Result<Context> {
    if script.typed_arrays {
        Context::custom::<(VuIntrinsics, intrinsic::TypedArrays)>(runtime)
    } else {
        Context::custom::<VuIntrinsics>(runtime)
    }
}

/// The error a failed evaluation left pending, located in the script.
pub(crate) fn thrown(ctx: &Ctx<'_>, file: &str, error: rquickjs::Error) -> K6Error {
    match error {
        rquickjs::Error::Exception => {
            let value = ctx.catch();
            let (location, message) = describe_thrown(&value, &[file]);
            K6Error::Init(format!("{location}: {message}"))
        }
        other => K6Error::Init(format!("{file}: {other}")),
    }
}

/// Sets up `ctx` for `script` with natives calling `host`, evaluates the script's init
/// context, and returns the module's exports.
pub(crate) fn evaluate<'js, H: Host + 'static>(
    ctx: &Ctx<'js>,
    script: &Script,
    host: Rc<H>,
    vu: u64,
) -> Result<Object<'js>, K6Error> {
    let fail = |e| thrown(ctx, &script.file, e);
    install(ctx, host).map_err(fail)?;
    ctx.eval_with_options::<Value, _>(GLOBALS, script_options("<k6-globals>"))
        .map_err(fail)?;
    let env = Object::new(ctx.clone()).map_err(fail)?;
    for (key, value) in &script.env {
        env.set(key.as_str(), value.as_str()).map_err(fail)?;
    }
    let globals = ctx.globals();
    let natives: Object = globals.get("__k6").map_err(fail)?;
    natives
        .set("scenario", script.scenario.0.as_str())
        .map_err(fail)?;
    natives
        .set("executor", script.scenario.1.as_str())
        .map_err(fail)?;
    match &script.request_tags.key {
        Some(key) => {
            natives.set("tagKey", key.as_str()).map_err(fail)?;
            natives
                .set("tagValues", script.request_tags.values.clone())
                .map_err(fail)?;
        }
        None => natives
            .set("tagKey", Value::new_null(ctx.clone()))
            .map_err(fail)?,
    }
    globals.set("__ENV", env).map_err(fail)?;
    globals.set("__VU", vu as f64).map_err(fail)?;
    let mut module = None;
    for bytecode in &script.bytecode {
        // SAFETY: `compile` wrote these bytes with this same QuickJS build in this process;
        // they are never read from outside.
        #[allow(unsafe_code)]
        let loaded = unsafe { Module::load(ctx.clone(), bytecode) }.map_err(fail)?;
        module = Some(loaded);
    }
    let module = module.ok_or_else(|| K6Error::Init(format!("{}: not compiled", script.file)))?;
    let (module, promise) = module.eval().map_err(fail)?;
    promise.finish::<Value>().map_err(fail)?;
    module.namespace().map_err(fail)
}
