//! How a capacity search grows the load from one step to the next (`--step x1.5` or `+50`).

use serde::{Deserialize, Serialize};

/// The growth rule between steps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "rule", content = "by", rename_all = "snake_case")]
pub enum Growth {
    /// `x1.5` (also `×1.5`, `*1.5`): each step is the last times this factor (> 1).
    Multiply(f64),
    /// `+50`: each step is the last plus this much (> 0).
    Add(f64),
}

impl Growth {
    pub fn parse(text: &str) -> Result<Growth, String> {
        let text = text.trim();
        let bad = || {
            format!(
                "`{text}`: expected a factor like x1.5 (also ×1.5, *1.5) or an increment like +50"
            )
        };
        let number = |digits: &str| {
            digits
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(bad)
        };
        if let Some(rest) = ["x", "×", "*"].iter().find_map(|p| text.strip_prefix(p)) {
            let factor = number(rest)?;
            if factor <= 1.0 {
                return Err(format!("`{text}`: the factor must be greater than 1"));
            }
            return Ok(Growth::Multiply(factor));
        }
        if let Some(rest) = text.strip_prefix('+') {
            let increment = number(rest)?;
            if increment <= 0.0 {
                return Err(format!("`{text}`: the increment must be greater than 0"));
            }
            return Ok(Growth::Add(increment));
        }
        Err(bad())
    }

    /// The step after `load`; whole virtual users grow by one at least.
    pub fn next(self, load: f64, whole: bool) -> f64 {
        let next = match self {
            Growth::Multiply(f) => load * f,
            Growth::Add(n) => load + n,
        };
        if whole {
            next.round().max(load + 1.0)
        } else {
            next
        }
    }

    pub fn label(self) -> String {
        match self {
            Growth::Multiply(f) => format!("x{f}"),
            Growth::Add(n) => format!("+{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_and_grow() {
        assert_eq!(Growth::parse("x1.5"), Ok(Growth::Multiply(1.5)));
        assert_eq!(Growth::parse("×2"), Ok(Growth::Multiply(2.0)));
        assert_eq!(Growth::parse("*3"), Ok(Growth::Multiply(3.0)));
        assert_eq!(Growth::parse("+50"), Ok(Growth::Add(50.0)));
        assert_eq!(Growth::Multiply(1.5).next(100.0, false), 150.0);
        assert_eq!(Growth::Multiply(1.1).next(2.0, true), 3.0);
        assert_eq!(Growth::Add(5.0).next(10.0, true), 15.0);
        for (text, says) in [
            ("x1", "greater than 1"),
            ("x0.5", "greater than 1"),
            ("+0", "greater than 0"),
            ("+-3", "greater than 0"),
            ("1.5", "expected a factor"),
            ("xfast", "expected a factor"),
            ("+inf", "expected a factor"),
        ] {
            let err = Growth::parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
