//! Measures what a VU's QuickJS state costs in memory (`bench/k6-vu-memory.sh`): N contexts
//! of a script, each after its init context and a collection, either each in its own
//! runtime (what `vu.rs` does) or all in one runtime (the layout `docs/k6-vu-memory.md`
//! weighs). Reports QuickJS's own heap count and the process's resident growth per VU; the
//! two differ by what QuickJS's allocator does not count (its part-filled arenas).

use crate::context::{compile, evaluate, vu_context, Script};
use crate::host::InitHost;
use crate::K6Error;
use rquickjs::{Context, Runtime};
use std::rc::Rc;
use std::sync::Arc;

/// Where the probed contexts live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// An empty runtime per VU, no context.
    BareRuntime,
    /// A runtime per VU with a context that evaluated nothing.
    BareContext,
    /// A runtime per VU with the script's init context evaluated (today's VUs).
    RuntimePerVu,
    /// One runtime, a context per VU with the script's init context evaluated.
    SharedRuntime,
}

/// Memory per VU, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct VuMemory {
    /// Growth of QuickJS's `malloc_size` per VU (the shared runtime's own share excluded).
    pub heap: i64,
    /// Growth of the process's resident set per VU.
    pub resident: i64,
}

fn resident_bytes() -> Result<i64, K6Error> {
    let statm = std::fs::read_to_string("/proc/self/statm").map_err(|source| K6Error::Read {
        path: "/proc/self/statm".into(),
        source,
    })?;
    let pages: i64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| K6Error::Init("/proc/self/statm: no resident size".into()))?;
    Ok(pages * 4096)
}

/// Creates `vus` contexts of `source` (named `file`) in `layout` and returns the memory each
/// costs. Run it in a fresh process: memory freed earlier would be reused and hide growth.
pub fn vu_memory(
    source: &str,
    file: &str,
    vus: usize,
    layout: Layout,
) -> Result<VuMemory, K6Error> {
    let engine = |e: rquickjs::Error| K6Error::Init(format!("{file}: {e}"));
    let script = Script {
        file: file.to_string(),
        env: Vec::new(),
        scenario: ("default".into(), String::new()),
        request_tags: Default::default(),
        run: Arc::new(crate::shared::RunShared::new(file)),
        typed_arrays: crate::detect::uses_typed_arrays(source),
        bytecode: compile(source, file)?,
    };
    let shared = Runtime::new().map_err(engine)?;
    let shared_base = shared.memory_usage().malloc_size;
    let mut runtimes: Vec<Runtime> = Vec::new();
    let mut contexts: Vec<Context> = Vec::new();
    let mut heap = 0;
    let before = resident_bytes()?;
    for _ in 0..vus {
        let runtime = match layout {
            Layout::SharedRuntime => shared.clone(),
            _ => Runtime::new().map_err(engine)?,
        };
        if layout != Layout::BareRuntime {
            let context = vu_context(&runtime, &script).map_err(engine)?;
            if layout != Layout::BareContext {
                let host = Rc::new(InitHost {
                    declared: Default::default(),
                    run: Arc::clone(&script.run),
                });
                context.with(|ctx| {
                    evaluate(&ctx, &script, host, 1)?;
                    ctx.run_gc();
                    Ok::<_, K6Error>(())
                })?;
            }
            contexts.push(context);
        }
        if layout != Layout::SharedRuntime {
            heap += runtime.memory_usage().malloc_size;
            runtimes.push(runtime);
        }
    }
    let resident = resident_bytes()? - before;
    if layout == Layout::SharedRuntime {
        heap = shared.memory_usage().malloc_size - shared_base;
    }
    let vus = vus.max(1) as i64;
    Ok(VuMemory {
        heap: heap / vus,
        resident: resident / vus,
    })
}
