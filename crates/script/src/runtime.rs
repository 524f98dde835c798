//! QuickJS runtime setup shared by the JavaScript front ends (this DSL and `crates/k6`): a
//! memory-bounded runtime whose evaluation an interrupt stops at a deadline (an endless loop),
//! evaluation options, and a thrown exception described as its innermost script location
//! and message.

use crate::error::Location;
use rquickjs::context::EvalOptions;
use rquickjs::convert::Coerced;
use rquickjs::Runtime;
use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

/// When evaluation must stop, and whether it was stopped for being late.
#[derive(Debug, Clone, Default)]
pub struct Deadline {
    at: Rc<Cell<Option<Instant>>>,
    hit: Rc<Cell<bool>>,
}

impl Deadline {
    /// Stops evaluation at `at` (`None`: never).
    pub fn set(&self, at: Option<Instant>) {
        self.at.set(at);
        self.hit.set(false);
    }

    /// Whether the interrupt stopped evaluation since the last [`Deadline::set`].
    pub fn hit(&self) -> bool {
        self.hit.get()
    }
}

/// A runtime limited to `memory_limit` bytes of heap, interrupted at `deadline`.
pub fn bounded_runtime(memory_limit: usize, deadline: &Deadline) -> rquickjs::Result<Runtime> {
    let runtime = Runtime::new()?;
    runtime.set_memory_limit(memory_limit);
    let deadline = deadline.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        let late = deadline.at.get().is_some_and(|at| Instant::now() >= at);
        deadline.hit.set(deadline.hit.get() || late);
        late
    })));
    Ok(runtime)
}

/// Options to evaluate a script named `file` as a global, sloppy-mode script.
pub fn script_options(file: &str) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    options.filename = Some(file.to_string());
    options
}

/// What a thrown value says: its location in the innermost frame of one of `files` (the
/// first is the script; from the stack of an `Error`, else the script alone), and its
/// `name: message` text.
pub fn describe_thrown(thrown: &rquickjs::Value<'_>, files: &[&str]) -> (Location, String) {
    let file = files.first().copied().unwrap_or("?");
    let Some(object) = thrown.as_object().filter(|_| thrown.is_error()) else {
        let text = thrown
            .get::<Coerced<String>>()
            .map_or_else(|_| "?".to_string(), |c| c.0);
        return (Location::file(file), format!("uncaught exception: {text}"));
    };
    let text = |key: &str| -> String {
        object
            .get::<_, Option<Coerced<String>>>(key)
            .ok()
            .flatten()
            .map_or_else(String::new, |c| c.0)
    };
    let location = Location::from_stack(files, &text("stack"));
    let message = text("message");
    let name = text("name");
    if name.is_empty() {
        (location, message)
    } else {
        (location, format!("{name}: {message}"))
    }
}
