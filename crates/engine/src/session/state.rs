//! One client's session state: variables by id, the loop-counter stack, the last status.
//! Reset (not reallocated) at every session start, so a client keeps its small buffers.

use super::values::VarId;

/// What a variable holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Never bound, or its extraction failed: reads as empty text.
    Unset,
    Text,
    /// A picked row of the data source the variable's `pick_row` names.
    Row(u32),
}

#[derive(Debug, Clone)]
struct Var {
    slot: Slot,
    /// The text of a `Text` variable; kept (cleared) when unset, to reuse its allocation.
    text: String,
}

#[derive(Debug, Default)]
pub(crate) struct SessionState {
    vars: Vec<Var>,
    /// Iterations left in each enclosing `times` loop, innermost last.
    pub loops: Vec<u64>,
    /// Status of the last response; 0 before any, or after a transport error.
    pub last_status: u16,
    /// Timings of the last response (for `session.add`).
    pub last_response: super::custom::LastResponse,
}

impl SessionState {
    /// Starts a session with `var_count` unset variables.
    pub(crate) fn reset(&mut self, var_count: usize) {
        if self.vars.len() != var_count {
            self.vars.resize(
                var_count,
                Var {
                    slot: Slot::Unset,
                    text: String::new(),
                },
            );
        }
        for var in &mut self.vars {
            var.slot = Slot::Unset;
            var.text.clear();
        }
        self.loops.clear();
        self.last_status = 0;
        self.last_response = Default::default();
    }

    #[inline]
    pub(crate) fn slot(&self, var: VarId) -> Slot {
        self.vars[var as usize].slot
    }

    /// The text of a `Text` variable ("" otherwise).
    #[inline]
    pub(crate) fn text(&self, var: VarId) -> &str {
        let var = &self.vars[var as usize];
        match var.slot {
            Slot::Text => &var.text,
            _ => "",
        }
    }

    /// Makes `var` a text variable and returns its (emptied) text to fill.
    pub(crate) fn set_text(&mut self, var: VarId) -> &mut String {
        let var = &mut self.vars[var as usize];
        var.slot = Slot::Text;
        var.text.clear();
        &mut var.text
    }

    pub(crate) fn set_row(&mut self, var: VarId, row: u32) {
        let var = &mut self.vars[var as usize];
        var.slot = Slot::Row(row);
        var.text.clear();
    }

    pub(crate) fn unset(&mut self, var: VarId) {
        let var = &mut self.vars[var as usize];
        var.slot = Slot::Unset;
        var.text.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_unsets_everything_and_keeps_sizes() {
        let mut state = SessionState::default();
        state.reset(2);
        state.set_text(1).push('x');
        state.set_row(0, 4);
        state.loops.push(3);
        state.last_status = 200;
        assert_eq!((state.text(1), state.slot(0)), ("x", Slot::Row(4)));
        state.reset(3);
        assert_eq!(state.slot(1), Slot::Unset);
        assert_eq!(state.text(1), "");
        assert_eq!(state.slot(2), Slot::Unset);
        assert!(state.loops.is_empty());
        assert_eq!(state.last_status, 0);
    }
}
