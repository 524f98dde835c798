//! Conditions of checks, asserts and `if` blocks: both sides evaluated per client, compared
//! numerically when both parse as (finite) numbers, else as text; `=~` is a regular
//! expression (compiled with the plan when the pattern is fixed, else cached per worker),
//! `contains` a substring test.

use super::program::Scope;
use super::values::{CValue, Eval};
use super::SessionProblem;
use barrage_plan::{CompareOp, Condition};
use regex::Regex;
use std::cmp::Ordering;
use std::collections::HashMap;

/// Dynamic patterns a worker keeps compiled before it starts over.
const REGEX_CACHE_LIMIT: usize = 256;

#[derive(Debug, Clone)]
pub(crate) struct CompiledCondition {
    left: CValue,
    op: CompareOp,
    right: CValue,
    /// The `=~` pattern, when it is fixed.
    pattern: Option<Regex>,
}

/// A check step: its condition, its slot in the run's check counters, whether it is an assert,
/// whether its failing values are kept beside its counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompiledCheck {
    pub condition: u32,
    pub metric: usize,
    pub fatal: bool,
    pub keep_failed_values: bool,
}

/// A worker's buffers for evaluating conditions, and its cache of dynamic patterns.
#[derive(Debug, Default)]
pub(crate) struct CheckScratch {
    left: String,
    right: String,
    /// Pattern text → compiled pattern (`None`: invalid, the comparison fails).
    patterns: HashMap<String, Option<Regex>>,
}

impl CompiledCondition {
    pub(crate) fn compile(
        condition: &Condition,
        scope: &mut Scope,
    ) -> Result<Self, SessionProblem> {
        let right = CValue::compile(&condition.expected, scope)?;
        let pattern = match (condition.op, right.constant()) {
            (CompareOp::Matches, Some(pattern)) => {
                Some(Regex::new(pattern).map_err(|e| SessionProblem::Regex {
                    pattern: pattern.to_string(),
                    reason: e.to_string(),
                })?)
            }
            _ => None,
        };
        Ok(Self {
            left: CValue::compile(&condition.value, scope)?,
            op: condition.op,
            right,
            pattern,
        })
    }

    /// Whether the condition holds for this client now.
    pub(crate) fn holds(&self, cx: Eval<'_>, scratch: &mut CheckScratch) -> bool {
        let CheckScratch {
            left,
            right,
            patterns,
        } = scratch;
        left.clear();
        self.left.write(cx, left);
        if let Some(pattern) = &self.pattern {
            return pattern.is_match(left);
        }
        right.clear();
        self.right.write(cx, right);
        if self.op == CompareOp::Matches {
            if !patterns.contains_key(right.as_str()) {
                if patterns.len() >= REGEX_CACHE_LIMIT {
                    patterns.clear();
                }
                patterns.insert(right.clone(), Regex::new(right).ok());
            }
            return patterns
                .get(right.as_str())
                .and_then(Option::as_ref)
                .is_some_and(|p| p.is_match(left));
        }
        compare(self.op, left, right)
    }

    /// The expected (right) and actual (left) sides of the condition that [`Self::holds`]
    /// just found false, for the check's kept failing values.
    pub(crate) fn failed_sides<'s>(
        &self,
        cx: Eval<'_>,
        scratch: &'s mut CheckScratch,
    ) -> (&'s str, &'s str) {
        if self.pattern.is_some() {
            // A fixed pattern was matched without writing the right side.
            scratch.right.clear();
            self.right.write(cx, &mut scratch.right);
        }
        (&scratch.right, &scratch.left)
    }
}

/// A side as a number, when it is one.
fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|n| n.is_finite())
}

/// `left op right` for every operator but `=~` (which needs a pattern).
pub(crate) fn compare(op: CompareOp, left: &str, right: &str) -> bool {
    let ordering = match (number(left), number(right)) {
        (Some(l), Some(r)) => l.partial_cmp(&r),
        _ => Some(left.cmp(right)),
    };
    match op {
        CompareOp::Eq => ordering == Some(Ordering::Equal),
        CompareOp::Ne => ordering != Some(Ordering::Equal),
        CompareOp::Lt => ordering == Some(Ordering::Less),
        CompareOp::Le => matches!(ordering, Some(Ordering::Less | Ordering::Equal)),
        CompareOp::Gt => ordering == Some(Ordering::Greater),
        CompareOp::Ge => matches!(ordering, Some(Ordering::Greater | Ordering::Equal)),
        CompareOp::Contains => left.contains(right),
        CompareOp::Matches => Regex::new(right).is_ok_and(|p| p.is_match(left)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::state::SessionState;
    use barrage_plan::Value;

    #[test]
    fn numbers_compare_as_numbers_and_text_as_text() {
        assert!(compare(CompareOp::Eq, "200", "200.0"));
        assert!(
            compare(CompareOp::Lt, "9", "10"),
            "numeric, not lexicographic"
        );
        assert!(compare(CompareOp::Gt, "b", "a"));
        assert!(
            compare(CompareOp::Lt, "10", "9x"),
            "text when one side is not a number"
        );
        assert!(compare(CompareOp::Ne, "abc", ""));
        assert!(!compare(CompareOp::Ne, "", ""));
        assert!(compare(CompareOp::Ge, "3", "3"));
        assert!(compare(CompareOp::Le, " 2 ", "3"));
        assert!(
            compare(CompareOp::Eq, "NaN", "NaN"),
            "NaN is compared as text"
        );
        assert!(compare(CompareOp::Contains, "hello world", "o w"));
        assert!(compare(CompareOp::Matches, "abc123", "^[a-c]+\\d+$"));
        assert!(
            !compare(CompareOp::Matches, "x", "("),
            "an invalid pattern fails"
        );
    }

    fn condition(value: Value, op: CompareOp, expected: Value) -> Condition {
        Condition {
            value,
            op,
            expected,
        }
    }

    #[test]
    fn fixed_patterns_compile_with_the_plan_and_dynamic_ones_are_cached() {
        let mut scope = Scope::new(&[], &[]).unwrap();
        let bad = condition(Value::text("x"), CompareOp::Matches, Value::text("("));
        let e = CompiledCondition::compile(&bad, &mut scope).unwrap_err();
        assert!(e.to_string().contains("`(`"), "{e}");

        let var = scope.var("p");
        let dynamic = condition(
            Value::text("token-42"),
            CompareOp::Matches,
            Value::Var { name: "p".into() },
        );
        let compiled = CompiledCondition::compile(&dynamic, &mut scope).unwrap();
        let mut state = SessionState::default();
        state.reset(scope.var_count());
        state.set_text(var).push_str("^token-\\d+$");
        let mut scratch = CheckScratch::default();
        fn cx(state: &SessionState) -> Eval<'_> {
            Eval { state, data: &[] }
        }
        assert!(compiled.holds(cx(&state), &mut scratch));
        assert!(compiled.holds(cx(&state), &mut scratch));
        assert_eq!(scratch.patterns.len(), 1);
        state.set_text(var).push('(');
        assert!(!compiled.holds(cx(&state), &mut scratch));

        let status = condition(
            Value::LastStatus,
            CompareOp::Lt,
            Value::Number { value: 400.0 },
        );
        let compiled = CompiledCondition::compile(&status, &mut scope).unwrap();
        state.last_status = 200;
        assert!(compiled.holds(cx(&state), &mut scratch));
        state.last_status = 404;
        assert!(!compiled.holds(cx(&state), &mut scratch));
    }
}
