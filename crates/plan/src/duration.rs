//! Human durations as scripts and flags write them: `500ms`, `10s`, `2m`, `1h30m`, `1.5s`.

use std::time::Duration;

/// Every unit [`parse_duration`] accepts, for hints.
pub const DURATION_UNITS: &str = "ns, us (or µs), ms, s, m, h or d";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DurationError {
    #[error("`{0}` is not a duration (examples: 500ms, 10s, 2m, 1h30m; units: {DURATION_UNITS})")]
    Malformed(String),
    #[error("`{input}` has unknown unit `{unit}` (use {DURATION_UNITS})")]
    UnknownUnit { input: String, unit: String },
    #[error("`{input}` has no unit ({input}s? units: {DURATION_UNITS})")]
    MissingUnit { input: String },
    #[error("`{0}` is too long a duration")]
    Overflow(String),
}

/// Parses a sequence of `<number><unit>` parts (Go's `time.ParseDuration` style, without
/// signs). Units: `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`, `d`.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let text = input.trim();
    if text.is_empty() {
        return Err(DurationError::Malformed(input.to_string()));
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| DurationError::MissingUnit {
                input: text.to_string(),
            })?;
        let number: f64 = rest[..number_end]
            .parse()
            .map_err(|_| DurationError::Malformed(input.to_string()))?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        let seconds_per_unit = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86_400.0,
            _ => {
                return Err(DurationError::UnknownUnit {
                    input: input.to_string(),
                    unit: unit.to_string(),
                })
            }
        };
        total += number * seconds_per_unit;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| DurationError::Overflow(input.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_compounds() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
    }

    #[test]
    fn rejects_missing_or_unknown_units() {
        assert_eq!(
            parse_duration("10"),
            Err(DurationError::MissingUnit { input: "10".into() })
        );
        assert_eq!(
            parse_duration("1m30").unwrap_err().to_string(),
            "`1m30` has no unit (1m30s? units: ns, us (or µs), ms, s, m, h or d)"
        );
        let unknown = parse_duration("10x").unwrap_err().to_string();
        for unit in ["ns", "us", "µs", "ms", " s,", " m,", " h ", " d)"] {
            assert!(unknown.contains(unit), "{unit} missing from {unknown}");
        }
        assert!(matches!(
            parse_duration("10x"),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration("-5s"),
            Err(DurationError::Malformed(_))
        ));
        assert!(matches!(
            parse_duration(""),
            Err(DurationError::Malformed(_))
        ));
    }
}
