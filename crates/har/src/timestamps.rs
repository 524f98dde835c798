//! `replay --shift-timestamps`: the timestamps recorded requests carry — ISO 8601 in UTC
//! (`...Z`) or at an offset (`+01:00`), Unix epoch seconds or milliseconds near the
//! recording's time — found in paths, header values and bodies, and sent moved to the
//! present per client (`shifted_time` bindings), each in its recorded form.

use crate::correlate::FlowCorrelation;
use crate::recording::Flow;
use barrage_plan::{Binding, Step, TimeFormat};
use time::OffsetDateTime;

/// Epoch numbers count as timestamps only this close to the recording's start (a 10- or
/// 13-digit id elsewhere in time stays as it is).
const EPOCH_WINDOW_S: i64 = 7 * 86_400;

/// A timestamp found in recorded text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found<'a> {
    pub text: &'a str,
    /// The instant, in Unix milliseconds.
    pub unix_ms: i64,
    pub fraction_digits: u8,
    pub format: TimeFormat,
}

fn digits_at(bytes: &[u8], at: usize) -> usize {
    bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

/// The ISO 8601 timestamp starting at `at` (`2026-11-20T10:15:00`, then 3 or 6 digits of a
/// second or none, then `Z` or `±hh:mm`), if one does.
fn iso_at(text: &str, at: usize) -> Option<Found<'_>> {
    let bytes = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let fits = bytes.len() >= at + shape.len()
        && shape.iter().enumerate().all(|(i, &s)| match s {
            b'd' => bytes[at + i].is_ascii_digit(),
            other => bytes[at + i] == other,
        });
    if !fits {
        return None;
    }
    let mut end = at + shape.len();
    let mut digits = 0;
    if bytes.get(end) == Some(&b'.') {
        digits = digits_at(bytes, end + 1);
        end += 1 + digits;
    }
    if !matches!(digits, 0 | 3 | 6) {
        return None;
    }
    let format = match bytes.get(end) {
        Some(b'Z') => {
            end += 1;
            TimeFormat::Utc
        }
        Some(&sign @ (b'+' | b'-')) => {
            let offset = text.get(end + 1..end + 6)?;
            let (h, m) = offset.split_once(':')?;
            let (h, m): (i16, i16) = (h.parse().ok()?, m.parse().ok()?);
            if h.to_string().len() > 2 || offset.len() != 5 || h > 23 || m > 59 {
                return None;
            }
            end += 6;
            let minutes = h * 60 + m;
            TimeFormat::Offset {
                minutes: if sign == b'-' { -minutes } else { minutes },
            }
        }
        _ => return None,
    };
    let stamp = &text[at..end];
    let parsed = crate::model::parse_time(stamp).ok()?;
    Some(Found {
        text: stamp,
        unix_ms: (parsed.unix_timestamp_nanos() / 1_000_000) as i64,
        fraction_digits: digits as u8,
        format,
    })
}

/// Every timestamp in `text`; epoch numbers within [`EPOCH_WINDOW_S`] of `start`.
pub fn find_timestamps(text: &str, start: OffsetDateTime) -> Vec<Found<'_>> {
    let bytes = text.as_bytes();
    let start_s = start.unix_timestamp();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !bytes[at].is_ascii_digit() {
            at += 1;
            continue;
        }
        if let Some(iso) = iso_at(text, at) {
            at += iso.text.len();
            found.push(iso);
            continue;
        }
        // A run of digits standing alone: an epoch time when it is one near the recording.
        let run = digits_at(bytes, at);
        let alone = (at == 0 || !bytes[at - 1].is_ascii_alphanumeric())
            && bytes
                .get(at + run)
                .is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'.');
        let value: i64 = text[at..at + run].parse().unwrap_or(-1);
        let near = |seconds: i64| (seconds - start_s).abs() <= EPOCH_WINDOW_S;
        let epoch = match run {
            10 if alone && near(value) => Some((value * 1000, TimeFormat::EpochSeconds)),
            13 if alone && near(value / 1000) => Some((value, TimeFormat::EpochMillis)),
            _ => None,
        };
        if let Some((unix_ms, format)) = epoch {
            found.push(Found {
                text: &text[at..at + run],
                unix_ms,
                fraction_digits: 0,
                format,
            });
        }
        at += run;
    }
    found
}

/// Binds a shifted timestamp per recorded one at the start of the session and substitutes it.
pub fn shift_timestamps(
    flow: &Flow,
    start: OffsetDateTime,
    correlation: &mut FlowCorrelation,
) -> Vec<Step> {
    let start_ms = (start.unix_timestamp_nanos() / 1_000_000) as i64;
    let mut binds = Vec::new();
    let mut vars: Vec<(String, String)> = Vec::new();
    for (i, request) in flow.requests.iter().enumerate() {
        let text = request.text();
        for stamp in find_timestamps(&text, start) {
            let var = match vars.iter().find(|(s, _)| s == stamp.text) {
                Some((_, var)) => var.clone(),
                None => {
                    let var = format!("timestamp_{}", vars.len() + 1);
                    binds.push(Step::Bind {
                        var: var.clone(),
                        binding: Binding::ShiftedTime {
                            offset_ms: stamp.unix_ms - start_ms,
                            fraction_digits: stamp.fraction_digits,
                            format: stamp.format,
                        },
                    });
                    vars.push((stamp.text.to_string(), var.clone()));
                    var
                }
            };
            let subs = &mut correlation.substitutions[i];
            if subs.iter().all(|(value, _)| !value.contains(stamp.text)) {
                subs.push((stamp.text.to_string(), var));
                subs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
            }
        }
    }
    binds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> OffsetDateTime {
        crate::model::parse_time("2026-11-20T10:00:00Z").unwrap()
    }

    fn found(text: &str) -> Vec<(&str, u8, TimeFormat)> {
        find_timestamps(text, start())
            .into_iter()
            .map(|f| (f.text, f.fraction_digits, f.format))
            .collect()
    }

    #[test]
    fn iso_timestamps_in_utc_and_at_offsets_are_found() {
        assert_eq!(
            found(
                r#"{"at":"2026-11-20T10:15:00.250Z","d":"2026-11-20","t":"2026-11-20T10:15:00Z"}"#
            ),
            [
                ("2026-11-20T10:15:00.250Z", 3, TimeFormat::Utc),
                ("2026-11-20T10:15:00Z", 0, TimeFormat::Utc)
            ]
        );
        assert_eq!(
            found("2026-11-20T11:15:00+01:00 2026-11-20T05:15:00.123456-04:30"),
            [
                (
                    "2026-11-20T11:15:00+01:00",
                    0,
                    TimeFormat::Offset { minutes: 60 }
                ),
                (
                    "2026-11-20T05:15:00.123456-04:30",
                    6,
                    TimeFormat::Offset { minutes: -270 }
                )
            ]
        );
        let both = find_timestamps("2026-11-20T11:15:00+01:00 2026-11-20T10:15:00Z", start());
        assert_eq!(both[0].unix_ms, both[1].unix_ms, "the same instant");
        assert!(found("2026-11-20T10:15:00.1Z 2026-11-20T10:15:00+1:00").is_empty());
    }

    #[test]
    fn epoch_seconds_and_millis_near_the_recording_are_found_other_numbers_not() {
        // 2026-11-20T10:15:00Z is 1795169700.
        assert_eq!(
            found("since=1795169700&ts=1795169700250&id=1234567890&n=17951697001"),
            [
                ("1795169700", 0, TimeFormat::EpochSeconds),
                ("1795169700250", 0, TimeFormat::EpochMillis)
            ]
        );
        let f = find_timestamps("1795169700250", start());
        assert_eq!(f[0].unix_ms, 1_795_169_700_250);
        // Part of a longer word or a decimal: not a timestamp.
        assert!(found("v1795169700 1795169700.5 ab1795169700250").is_empty());
    }
}
