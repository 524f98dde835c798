//! A k6 script's JavaScript context, the same for the init evaluation at start and for every
//! VU: the natives, the globals (`console`, `__ENV`, `__VU`, `__ITER`), the k6 modules, and
//! the script evaluated as an ES module (its init context).

use crate::host::{install, Host};
use crate::K6Error;
use barrage_script::runtime::{describe_thrown, script_options};
use rquickjs::{Ctx, Module, Object, Value};
use std::rc::Rc;

const GLOBALS: &str = include_str!("js/globals.js");
/// The k6 modules, by the name scripts import them with.
const MODULES: &[(&str, &str)] = &[
    ("k6", include_str!("js/k6.js")),
    ("k6/http", include_str!("js/http.js")),
    ("k6/metrics", include_str!("js/metrics.js")),
];

/// What a script is evaluated from.
#[derive(Debug)]
pub(crate) struct Script {
    pub source: String,
    /// The file name used in error locations.
    pub file: String,
    /// `__ENV`: `-e KEY=VALUE` pairs over the process environment.
    pub env: Vec<(String, String)>,
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
    globals.set("__ENV", env).map_err(fail)?;
    globals.set("__VU", vu as f64).map_err(fail)?;
    for (name, source) in MODULES {
        Module::declare(ctx.clone(), *name, *source).map_err(fail)?;
    }
    let module =
        Module::declare(ctx.clone(), script.file.as_str(), script.source.as_str()).map_err(fail)?;
    let (module, promise) = module.eval().map_err(fail)?;
    promise.finish::<Value>().map_err(fail)?;
    module.namespace().map_err(fail)
}
