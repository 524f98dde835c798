//! `handleSummary(data)`: run once after the test in a fresh context (as k6 does, no
//! requests), with k6's summary data; what it returns maps `stdout`, `stderr` or a file path
//! to the text (or `ArrayBuffer`) to write there.

use crate::context::{evaluate, thrown, Script};
use crate::host::InitHost;
use barrage_script::runtime::{bounded_runtime, Deadline};
use rquickjs::{ArrayBuffer, Function, Value};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long `handleSummary` may run (k6's `summaryTimeout` default).
const SUMMARY_LIMIT: Duration = Duration::from_secs(120);
/// Its QuickJS heap limit.
const SUMMARY_MEMORY: usize = 256 << 20;

/// What `handleSummary` returned: each output's name (`stdout`, `stderr`, a file path) and
/// content.
pub type SummaryOutputs = Vec<(String, Vec<u8>)>;

/// Calls the script's `handleSummary` with `data` (k6's summary object as JSON); returns
/// the outputs in the order the script named them.
pub(crate) fn handle_summary(
    script: &Script,
    data: &str,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let deadline = Deadline::default();
    deadline.set(Some(Instant::now() + SUMMARY_LIMIT));
    let file = &script.file;
    let engine = |e: rquickjs::Error| format!("{file}: {e}");
    let runtime = bounded_runtime(SUMMARY_MEMORY, &deadline).map_err(engine)?;
    let context = crate::context::vu_context(&runtime, script).map_err(engine)?;
    let host = Rc::new(InitHost {
        declared: Default::default(),
        run: Arc::clone(&script.run),
    });
    context.with(|ctx| {
        let exports = evaluate(&ctx, script, host, 0).map_err(|e| e.to_string())?;
        let fail = |e| thrown(&ctx, file, e).to_string();
        let handle: Function = exports.get("handleSummary").map_err(fail)?;
        let data = ctx.json_parse(data).map_err(fail)?;
        let returned: Value = handle.call((data,)).map_err(fail)?;
        let Some(outputs) = returned.as_object() else {
            if returned.is_undefined() || returned.is_null() {
                return Ok(Vec::new());
            }
            return Err(format!(
                "{file}: handleSummary() must return an object mapping outputs (stdout, stderr, file paths) to their content"
            ));
        };
        let mut written = Vec::new();
        for entry in outputs.props::<String, Value>() {
            let (name, value) = entry.map_err(fail)?;
            written.push((name, content(&ctx, value).map_err(fail)?));
        }
        Ok(written)
    })
}

/// An output's bytes: an `ArrayBuffer`'s, or the value as text.
fn content<'js>(ctx: &rquickjs::Ctx<'js>, value: Value<'js>) -> rquickjs::Result<Vec<u8>> {
    if let Some(buffer) = value
        .as_object()
        .and_then(|o| ArrayBuffer::from_object(o.clone()))
    {
        // SAFETY: the bytes are copied at once; no JavaScript runs (that could detach or
        // resize the buffer) while the slice lives.
        #[allow(unsafe_code)]
        let bytes = unsafe { buffer.as_bytes() }.unwrap_or_default().to_vec();
        return Ok(bytes);
    }
    let string: Function = ctx.globals().get("String")?;
    let text: String = string.call((value,))?;
    Ok(text.into_bytes())
}
