//! The natives a k6 script's modules call (`globalThis.__k6`): requests and sleeps that
//! suspend the VU's coroutine, checks and metric samples recorded as engine events, custom
//! metric declarations, console output. In the init context (evaluating `options` at start)
//! requests and sleeps are errors, as in k6.

use barrage_engine::{ScriptRequest, ScriptResponse, VuEvent, VuStep};
use barrage_plan::{limits, MetricDecl, MetricKind};
use rquickjs::{Ctx, Exception, Function, Object};
use std::cell::RefCell;
use std::time::Duration;

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
}

/// The init context evaluated once at start: collects custom metric declarations.
#[derive(Debug, Default)]
pub(crate) struct InitHost {
    pub declared: RefCell<Vec<MetricDecl>>,
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
    let h = host.clone();
    natives.set(
        "request",
        Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>,
                  method: String,
                  url: String,
                  body: String,
                  headers: Vec<String>,
                  timeout: f64|
                  -> rquickjs::Result<Object<'js>> {
                if !h.may_suspend() {
                    return throw(
                        &ctx,
                        "Making HTTP requests in the init context is not supported",
                    );
                }
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
                let request = ScriptRequest {
                    method,
                    url,
                    headers: headers
                        .chunks_exact(2)
                        .map(|p| (p[0].clone(), p[1].clone()))
                        .collect(),
                    body: body.into_bytes(),
                    timeout,
                };
                let Some(response) = h.suspend(VuStep::Request(request)) else {
                    return throw(&ctx, "the test ended during this iteration");
                };
                response_object(&ctx, response)
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

/// The JavaScript object a k6 `Response` is built from.
fn response_object<'js>(ctx: &Ctx<'js>, response: ScriptResponse) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    object.set("status", response.status)?;
    object.set("body", String::from_utf8_lossy(&response.body).into_owned())?;
    let headers = Object::new(ctx.clone())?;
    for (name, value) in response.headers {
        headers.set(name, value)?;
    }
    object.set("headers", headers)?;
    let t = response.timings;
    let timings = Object::new(ctx.clone())?;
    timings.set("blocked", 0.0)?;
    timings.set("connecting", millis(t.connecting))?;
    timings.set("tls_handshaking", millis(t.tls_handshaking))?;
    timings.set("sending", millis(t.sending))?;
    timings.set("waiting", millis(t.waiting))?;
    timings.set("receiving", millis(t.receiving))?;
    timings.set("duration", millis(t.duration))?;
    object.set("timings", timings)?;
    object.set("error", response.error)?;
    Ok(object)
}
