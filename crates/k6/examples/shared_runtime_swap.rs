//! An experiment behind `docs/k6-vu-memory.md`, not used by barrage: VUs' contexts in ONE
//! QuickJS runtime, each on its own corosensei coroutine, suspending inside a native as k6 VUs
//! do, with `JSRuntime::current_stack_frame` (at byte 1280 in rquickjs-sys 0.14.0's default
//! build; checked below: inside a native it must point into the running coroutine's stack)
//! saved and cleared at every suspension and restored at every resume, and the stack limit
//! recomputed for the resumed coroutine.
//!
//! `cargo run --release -p barrage-k6 --example shared_runtime_swap` — passes: VU B's error
//!   backtrace holds only B's frames and its deep recursion is a `RangeError` on its own stack.
//! `... --example shared_runtime_swap -- noswap` — fails: without the swap B's backtrace shows
//!   another VU's frames (the dangling frame chain the note describes).
#![allow(unsafe_code)]
use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rquickjs::{qjs, Context, Ctx, Function, Runtime, Value};
use std::cell::Cell;

const OFFSET: usize = 1280;
thread_local! {
    static YIELDER: Cell<*const Yielder<(), ()>> = const { Cell::new(std::ptr::null()) };
    static SWAP: Cell<bool> = const { Cell::new(true) };
    static STACK: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

unsafe fn slot(ctx: &Ctx<'_>) -> *mut *mut std::ffi::c_void {
    let rt = qjs::JS_GetRuntime(ctx.as_raw().as_ptr());
    (rt as *mut u8).add(OFFSET) as *mut *mut std::ffi::c_void
}

fn install(ctx: &Ctx<'_>) {
    let f = Function::new(ctx.clone(), |ctx: Ctx<'_>| unsafe {
        let s = slot(&ctx);
        let saved = *s;
        let (lo, hi) = STACK.with(|c| c.get());
        assert!(
            !saved.is_null() && (saved as usize) > lo && (saved as usize) < hi,
            "self-check: {saved:?} not in [{lo:#x},{hi:#x})"
        );
        if SWAP.with(|c| c.get()) {
            *s = std::ptr::null_mut();
        }
        let y = YIELDER.with(|c| c.get());
        (*y).suspend(());
        if SWAP.with(|c| c.get()) {
            *s = saved;
        }
        let rt = qjs::JS_GetRuntime(ctx.as_raw().as_ptr());
        qjs::JS_UpdateStackTop(rt);
        qjs::JS_SetMaxStackSize(rt, 128 << 10);
    })
    .unwrap();
    ctx.globals().set("suspend", f).unwrap();
}

fn vu(
    context: &Context,
    code: &'static str,
) -> (Coroutine<(), (), String, DefaultStack>, (usize, usize)) {
    let raw = context.as_raw();
    let stack = DefaultStack::new(256 << 10).unwrap();
    let bounds = (stack.limit().get(), stack.base().get());
    (
        Coroutine::with_stack(stack, move |y: &Yielder<(), ()>, ()| {
            YIELDER.with(|c| c.set(y));
            STACK.with(|c| c.set(bounds));
            let ctx = unsafe { Ctx::from_raw(raw) };
            unsafe {
                let rt = qjs::JS_GetRuntime(raw.as_ptr());
                qjs::JS_UpdateStackTop(rt);
                qjs::JS_SetMaxStackSize(rt, 128 << 10);
            }
            let r: rquickjs::Result<Value> = ctx.eval(code);
            match r {
                Ok(v) => v
                    .as_string()
                    .map(|s| s.to_string().unwrap())
                    .unwrap_or_else(|| format!("{v:?}")),
                Err(_) => format!("exception: {:?}", ctx.catch()),
            }
        }),
        bounds,
    )
}

fn resume(
    name: &str,
    co: &mut Coroutine<(), (), String, DefaultStack>,
    bounds: (usize, usize),
) -> Option<String> {
    STACK.with(|c| c.set(bounds));
    match co.resume(()) {
        CoroutineResult::Yield(()) => {
            println!("{name}: suspended");
            None
        }
        CoroutineResult::Return(s) => {
            println!("{name}: returned {s}");
            Some(s)
        }
    }
}

fn main() {
    SWAP.with(|c| c.set(std::env::args().nth(1).as_deref() != Some("noswap")));
    let rt = Runtime::new().unwrap();
    let a = Context::full(&rt).unwrap();
    let b = Context::full(&rt).unwrap();
    a.with(|c| install(&c));
    b.with(|c| install(&c));
    assert!(unsafe { (*slot(&Ctx::from_raw(a.as_raw()))).is_null() });
    let code_a = "function fa(){ suspend(); return 'A done'; } fa()";
    let code_b = "function gb(){ suspend(); function r(n){ return n ? r(n-1)+1 : 0 } let deep; try { r(1e6); deep='no overflow' } catch(e) { deep = e.name } try { throw new Error('x') } catch(e) { return deep + ' | ' + e.stack.replace(/\\n/g,' / ') } } gb()";
    let (mut ca, ba) = vu(&a, code_a);
    let (mut cb, bb) = vu(&b, code_b);
    let (mut ca2, ba2) = vu(
        &a,
        "function again(){ let x = [1,2,3].map(v => v * 2); suspend(); return 'A2 ' + x } again()",
    );
    resume("A", &mut ca, ba);
    resume("B", &mut cb, bb);
    resume("A", &mut ca, ba);
    resume("A2", &mut ca2, ba2);
    let b_result = resume("B", &mut cb, bb).unwrap_or_default();
    resume("A2", &mut ca2, ba2);
    assert!(
        b_result.starts_with("RangeError")
            && b_result.contains("at gb")
            && !b_result.contains("again"),
        "VU B's recursion or backtrace is wrong: {b_result}"
    );
    assert!(
        unsafe { (*slot(&Ctx::from_raw(a.as_raw()))).is_null() },
        "the frame chain is not back to null"
    );
    rt.run_gc();
    println!("ok");
}
