//! What a k6 VU's QuickJS state costs: `cargo run --release -p barrage-k6 --example vu_memory
//! -- SCRIPT VUS LAYOUT` (LAYOUT: bare-runtime, bare-context, runtime-per-vu, shared-runtime;
//! one layout per process, see `barrage_k6::probe`). Used by `bench/k6-vu-memory.sh`.

use barrage_k6::probe::{vu_memory, Layout};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [script, vus, layout] = args.as_slice() else {
        return Err("usage: vu_memory SCRIPT VUS LAYOUT".into());
    };
    let layout = match layout.as_str() {
        "bare-runtime" => Layout::BareRuntime,
        "bare-context" => Layout::BareContext,
        "runtime-per-vu" => Layout::RuntimePerVu,
        "shared-runtime" => Layout::SharedRuntime,
        other => return Err(format!("unknown layout `{other}`").into()),
    };
    let source = std::fs::read_to_string(script)?;
    let memory = vu_memory(&source, script, vus.parse()?, layout)?;
    println!(
        "{layout:?}: QuickJS heap {:.1} KiB per VU, resident {:.1} KiB per VU",
        memory.heap as f64 / 1024.0,
        memory.resident as f64 / 1024.0
    );
    Ok(())
}
