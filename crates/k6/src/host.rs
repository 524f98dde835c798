//! The natives a k6 script's modules call (`globalThis.__k6`): requests and sleeps that
//! suspend the VU's coroutine, checks and metric samples recorded as engine events, custom
//! metric declarations, console output, `open()`, `SharedArray` elements, `k6/execution`'s
//! iteration number and `test.abort()`. In the init context requests and sleeps are errors;
//! outside it `open()` is, as in k6.

use crate::shared::{RunShared, SharedElements};
use barrage_engine::{JarRequest, ResponseVerdict, ScriptRequest, ScriptResponse, VuEvent, VuStep};
use barrage_plan::{limits, MetricDecl, MetricKind};
use rquickjs::class::{JsClass, Readable, Trace, Tracer};
use rquickjs::{
    ArrayBuffer, Class, Constructor, Ctx, Exception, Function, JsLifetime, Object, Value,
};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// What an exception thrown by `test.abort()` says (the VU tells it from script errors).
const ABORTED: &str = "test aborted";

/// Where the natives send what the script asks for.
pub(crate) trait Host {
    /// Suspends the VU until the step is done; `None`: the iteration is being cut off.
    fn suspend(&self, step: VuStep) -> Option<ScriptResponse>;
    /// Whether requests and sleeps are possible (not in the init context).
    fn may_suspend(&self) -> bool;
    fn record(&self, event: VuEvent);
    /// The index of custom metric `name` of `kind` (declaring it at start).
    fn metric(&self, name: &str, kind: MetricKind) -> Result<usize, String>;
    /// The VU number console lines are prefixed with (0 in the init context at start).
    fn vu(&self) -> u64;
    /// What the run's contexts share.
    fn run(&self) -> &RunShared;
    /// Whether the init context is running (`open()` is allowed).
    fn in_init(&self) -> bool;
    /// The test-wide number of the running iteration.
    fn iteration_in_test(&self) -> u64;
}

/// The init context evaluated once at start: collects custom metric declarations.
#[derive(Debug)]
pub(crate) struct InitHost {
    pub declared: RefCell<Vec<MetricDecl>>,
    pub run: Arc<RunShared>,
}

impl Host for InitHost {
    fn suspend(&self, _step: VuStep) -> Option<ScriptResponse> {
        None
    }
    fn may_suspend(&self) -> bool {
        false
    }
    fn record(&self, _event: VuEvent) {}
    fn metric(&self, name: &str, kind: MetricKind) -> Result<usize, String> {
        let mut declared = self.declared.borrow_mut();
        if let Some(i) = declared.iter().position(|d| d.name == name) {
            if declared[i].kind != kind {
                return Err(format!(
                    "metric `{name}` was already declared as a {}",
                    declared[i].kind.name()
                ));
            }
            return Ok(i);
        }
        declared.push(MetricDecl {
            name: name.to_string(),
            kind,
        });
        Ok(declared.len() - 1)
    }
    fn vu(&self) -> u64 {
        0
    }
    fn run(&self) -> &RunShared {
        &self.run
    }
    fn in_init(&self) -> bool {
        true
    }
    fn iteration_in_test(&self) -> u64 {
        0
    }
}

fn throw<T>(ctx: &Ctx<'_>, message: &str) -> rquickjs::Result<T> {
    Err(Exception::throw_message(ctx, message))
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Installs `globalThis.__k6` with natives calling `host`.
pub(crate) fn install<'js, H: Host + 'static>(
    ctx: &Ctx<'js>,
    host: std::rc::Rc<H>,
) -> rquickjs::Result<()> {
    let natives = Object::new(ctx.clone())?;
    // This context's `http.expectedStatuses(...)` callbacks: a request names one by index, so
    // sending it allocates nothing. Scripts often build one inline per request
    // (`{responseCallback: http.expectedStatuses(200, 404)}` in the default function), so an
    // equal callback gets the index it already has: the table holds each distinct one once.
    let callbacks: Rc<RefCell<Vec<ResponseVerdict>>> = Rc::default();
    let table = callbacks.clone();
    natives.set(
        "expectedStatuses",
        Function::new(ctx.clone(), move |ranges: Vec<f64>| -> f64 {
            let status = |n: f64| n.clamp(0.0, f64::from(u16::MAX)) as u16;
            let ranges: Vec<(u16, u16)> = ranges
                .chunks_exact(2)
                .map(|pair| (status(pair[0]), status(pair[1])))
                .collect();
            let mut table = table.borrow_mut();
            let known = table
                .iter()
                .position(|v| matches!(v, ResponseVerdict::Expected(r) if **r == *ranges));
            let index = known.unwrap_or_else(|| {
                table.push(ResponseVerdict::Expected(ranges.into()));
                table.len() - 1
            });
            index as f64
        })?,
    )?;
    let h = host.clone();
    natives.set(
        "request",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  proto: Object<'js>,
                  method: String,
                  url: String,
                  body: String,
                  headers: Vec<String>,
                  limits: Vec<f64>|
                  -> rquickjs::Result<Class<'js, ResponseData>> {
                if !h.may_suspend() {
                    return throw(
                        &ctx,
                        "Making HTTP requests in the init context is not supported",
                    );
                }
                // `[timeout ms, redirects, request tag, response callback]`, the first two
                // negative when not given; the callback -1 for k6's default, -2 for none,
                // else an index from `expectedStatuses`.
                let (timeout, redirects, tag, callback) = match limits[..] {
                    [timeout, redirects, tag, callback] => (timeout, redirects, tag, callback),
                    _ => (-1.0, -1.0, 0.0, -1.0),
                };
                let verdict = match callback {
                    -2.0 => ResponseVerdict::Off,
                    n if n >= 0.0 => callbacks
                        .borrow()
                        .get(n as usize)
                        .cloned()
                        .unwrap_or_default(),
                    _ => ResponseVerdict::Default,
                };
                let mut pairs = Vec::with_capacity(headers.len() / 2);
                let mut headers = headers.into_iter();
                while let (Some(name), Some(value)) = (headers.next(), headers.next()) {
                    pairs.push((name, value));
                }
                // The response object names its request.
                let (kept_method, kept_url) = (method.clone(), url.clone());
                // Negative: not given (the run's timeout). Otherwise milliseconds, which
                // must make a timeout barrage can keep (1ms to 24h).
                let timeout = if timeout < 0.0 {
                    None
                } else {
                    let asked = Duration::try_from_secs_f64(timeout / 1000.0);
                    match limits::check_timeout(asked.unwrap_or(Duration::MAX)) {
                        Ok(timeout) => Some(timeout),
                        Err(e) => return throw(&ctx, &format!("params.timeout: {e}")),
                    }
                };
                // Negative: not given (`options.maxRedirects`).
                let redirects = if redirects >= 0.0 {
                    redirects.min(f64::from(u32::MAX)) as u32
                } else {
                    h.run().max_redirects()
                };
                let request = ScriptRequest {
                    method,
                    url,
                    headers: pairs,
                    body: body.into_bytes(),
                    timeout,
                    redirects,
                    tag: tag as usize,
                    verdict,
                };
                let Some(response) = h.suspend(VuStep::Request(request)) else {
                    return throw(&ctx, "the test ended during this iteration");
                };
                Class::instance_proto(
                    ResponseData {
                        response,
                        method: kept_method,
                        url: kept_url,
                    },
                    proto,
                )
            },
        )?,
    )?;
    natives.set("field", Function::new(ctx.clone(), response_field)?)?;
    let h = host.clone();
    natives.set(
        "jar",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, op: String, args: Vec<String>| -> rquickjs::Result<Vec<String>> {
                if !h.may_suspend() {
                    return throw(&ctx, "the cookie jar is not available in the init context");
                }
                let mut args = args.into_iter();
                let url = args.next().unwrap_or_default();
                let request = match op.as_str() {
                    "set" => JarRequest::Set {
                        url,
                        name: args.next().unwrap_or_default(),
                        value: args.next().unwrap_or_default(),
                        attributes: args.next().unwrap_or_default(),
                    },
                    _ => JarRequest::ForUrl { url },
                };
                let Some(answer) = h.suspend(VuStep::Jar(request)) else {
                    return throw(&ctx, "the test ended during this iteration");
                };
                Ok(answer
                    .headers
                    .into_iter()
                    .flat_map(|(name, value)| [name, value])
                    .collect())
            },
        )?,
    )?;
    let h = host.clone();
    natives.set(
        "sleep",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, seconds: f64| -> rquickjs::Result<()> {
                if !h.may_suspend() {
                    return throw(&ctx, "sleep() is not available in the init context");
                }
                let seconds = if seconds.is_finite() && seconds > 0.0 {
                    seconds.min(86_400.0)
                } else {
                    0.0
                };
                match h.suspend(VuStep::Sleep(Duration::from_secs_f64(seconds))) {
                    Some(_) => Ok(()),
                    None => throw(&ctx, "the test ended during this iteration"),
                }
            },
        )?,
    )?;
    let h = host.clone();
    natives.set(
        "check",
        Function::new(ctx.clone(), move |name: String, passed: bool| {
            h.record(VuEvent::Check { name, passed });
        })?,
    )?;
    let h = host.clone();
    natives.set(
        "metric",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, name: String, kind: String| -> rquickjs::Result<f64> {
                let kind = MetricKind::parse(&kind).unwrap_or(MetricKind::Trend);
                match h.metric(&name, kind) {
                    Ok(index) => Ok(index as f64),
                    Err(problem) => throw(&ctx, &problem),
                }
            },
        )?,
    )?;
    let h = host.clone();
    natives.set(
        "add",
        Function::new(ctx.clone(), move |index: f64, value: f64| {
            h.record(VuEvent::Metric {
                index: index as usize,
                value,
            });
        })?,
    )?;
    install_shared(ctx, &natives, host.clone())?;
    crate::encoding::install(ctx, &natives)?;
    crate::crypto::install(ctx, &natives)?;
    let h = host;
    natives.set(
        "log",
        Function::new(ctx.clone(), move |level: String, text: String| {
            eprintln!("{level}[VU {}] {text}", h.vu());
        })?,
    )?;
    natives.set(
        "durationMillis",
        Function::new(
            ctx.clone(),
            |ctx: Ctx<'js>, text: String| -> rquickjs::Result<f64> {
                match barrage_plan::parse_duration(&text) {
                    Ok(d) => Ok(millis(d)),
                    Err(e) => throw(&ctx, &format!("invalid duration `{text}`: {e}")),
                }
            },
        )?,
    )?;
    ctx.globals().set("__k6", natives)?;
    Ok(())
}

/// The natives of `open()`, `SharedArray` (handles into this context's table of the run's
/// shared arrays), `k6/execution` and `test.abort()`.
fn install_shared<'js, H: Host + 'static>(
    ctx: &Ctx<'js>,
    natives: &Object<'js>,
    host: Rc<H>,
) -> rquickjs::Result<()> {
    let h = host.clone();
    natives.set(
        "open",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, path: String, mode: String| -> rquickjs::Result<Value<'js>> {
                if !h.in_init() {
                    return throw(
                        &ctx,
                        "open() is only available in the init context (the top level of the script), as in k6",
                    );
                }
                let bytes = match h.run().open(&path) {
                    Ok(bytes) => bytes,
                    Err(problem) => return throw(&ctx, &problem),
                };
                if mode == "b" {
                    Ok(ArrayBuffer::new_copy(ctx.clone(), bytes.as_slice())?.into_value())
                } else {
                    let text = String::from_utf8_lossy(&bytes);
                    Ok(rquickjs::String::from_str(ctx.clone(), &text)?.into_value())
                }
            },
        )?,
    )?;
    let arrays: Rc<RefCell<Vec<SharedElements>>> = Rc::default();
    let (h, table) = (host.clone(), arrays.clone());
    natives.set(
        "sharedArray",
        Function::new(ctx.clone(), move |name: String| -> f64 {
            match h.run().array(&name) {
                Some(elements) => {
                    let mut table = table.borrow_mut();
                    table.push(elements);
                    (table.len() - 1) as f64
                }
                None => -1.0,
            }
        })?,
    )?;
    let (h, table) = (host.clone(), arrays.clone());
    natives.set(
        "keepSharedArray",
        Function::new(
            ctx.clone(),
            move |name: String, elements: Vec<String>| -> f64 {
                let elements = elements.into_iter().map(String::into_boxed_str).collect();
                let mut table = table.borrow_mut();
                table.push(h.run().keep_array(&name, elements));
                (table.len() - 1) as f64
            },
        )?,
    )?;
    let table = arrays.clone();
    natives.set(
        "sharedLength",
        Function::new(ctx.clone(), move |handle: usize| -> usize {
            table.borrow().get(handle).map_or(0, |a| a.len())
        })?,
    )?;
    let table = arrays;
    natives.set(
        "sharedElement",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, handle: usize, index: usize| -> rquickjs::Result<Value<'js>> {
                let table = table.borrow();
                match table.get(handle).and_then(|a| a.get(index)) {
                    Some(text) => Ok(rquickjs::String::from_str(ctx.clone(), text)?.into_value()),
                    None => Ok(Value::new_undefined(ctx.clone())),
                }
            },
        )?,
    )?;
    let h = host.clone();
    natives.set(
        "iterationInTest",
        Function::new(ctx.clone(), move || h.iteration_in_test() as f64)?,
    )?;
    let h = host;
    natives.set(
        "abort",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, reason: String| -> rquickjs::Result<()> {
                let message = if reason.is_empty() {
                    ABORTED.to_string()
                } else {
                    format!("{ABORTED}: {reason}")
                };
                h.run().abort(message.clone());
                throw(&ctx, &message)
            },
        )?,
    )?;
    Ok(())
}

/// A response as a script sees it: an object of the http module's `Response` class (its
/// prototype) holding what the engine answered; the class's getters read each field from
/// here when the script first asks for it (see [`response_field`]), so a response nobody
/// reads costs one object, not a dozen strings and objects.
pub(crate) struct ResponseData {
    response: ScriptResponse,
    method: String,
    url: String,
}

impl<'js> Trace<'js> for ResponseData {
    fn trace<'a>(&self, _tracer: Tracer<'a, 'js>) {}
}

// SAFETY: `ResponseData` holds no JavaScript values, so it is the same type for every
// lifetime.
#[allow(unsafe_code)]
unsafe impl<'js> JsLifetime<'js> for ResponseData {
    type Changed<'to> = ResponseData;
}

impl<'js> JsClass<'js> for ResponseData {
    const NAME: &'static str = "Response";
    type Mutable = Readable;

    fn constructor(_ctx: &Ctx<'js>) -> rquickjs::Result<Option<Constructor<'js>>> {
        Ok(None)
    }
}

/// Field `index` of a response (the order `js/http.js` names them in): status, body,
/// headers, timings, error, url, method.
fn response_field<'js>(
    ctx: Ctx<'js>,
    this: Class<'js, ResponseData>,
    index: u32,
) -> rquickjs::Result<Value<'js>> {
    let data = this.borrow();
    let response = &data.response;
    let text = |text: &str| rquickjs::String::from_str(ctx.clone(), text).map(|s| s.into_value());
    match index {
        0 => Ok(Value::new_int(ctx.clone(), i32::from(response.status))),
        1 => match std::str::from_utf8(&response.body) {
            Ok(body) => text(body),
            Err(_) => text(&String::from_utf8_lossy(&response.body)),
        },
        2 => {
            let headers = Object::new(ctx.clone())?;
            for (name, value) in &response.headers {
                headers.set(name.as_str(), value.as_str())?;
            }
            Ok(headers.into_value())
        }
        3 => {
            let t = response.timings;
            let timings = Object::new(ctx.clone())?;
            timings.set("blocked", 0.0)?;
            timings.set("connecting", millis(t.connecting))?;
            timings.set("tls_handshaking", millis(t.tls_handshaking))?;
            timings.set("sending", millis(t.sending))?;
            timings.set("waiting", millis(t.waiting))?;
            timings.set("receiving", millis(t.receiving))?;
            timings.set("duration", millis(t.duration))?;
            Ok(timings.into_value())
        }
        4 => text(&response.error),
        5 => text(response.url.as_deref().unwrap_or(&data.url)),
        6 => text(&data.method),
        _ => Ok(Value::new_undefined(ctx.clone())),
    }
}
