//! Property tests over every numeric flag, through the real command line: a value in range
//! is accepted; anything else (out of range, negative, huge, garbage) is one usage line
//! naming the flag, never a panic. The flags are parsed and applied the way each command
//! does before it sends load (nothing is run here).

use super::*;
use crate::{Cli, Command};
use barrage_plan::TestOptions;
use clap::Parser;
use proptest::prelude::*;

/// What a command line gives before any load: `Ok` or the one error line the user sees.
fn outcome(argv: &[&str]) -> Result<(), String> {
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        text.lines().next().unwrap_or("").to_string()
    })?;
    let checked = match &cli.command {
        Command::Quick(args) => crate::quick::quick_plan(args).map(drop),
        Command::Run(args) => args.overrides.resolve().and_then(|o| {
            o.protocol.apply(&mut TestOptions::default())?;
            Ok(())
        }),
        _ => Ok(()),
    };
    checked.map_err(|e| {
        assert!(
            e.downcast_ref::<crate::usage::UsageError>().is_some(),
            "not a usage error: {e}"
        );
        e.to_string()
    })
}

/// The command line with `flag value` put in: quick and run flags on their command, the
/// others on theirs.
fn argv<'a>(command: &'a [&'a str], flag: &'a str, value: &'a str) -> Vec<&'a str> {
    let mut argv = vec!["barrage"];
    argv.extend_from_slice(command);
    argv.push(flag);
    argv.push(value);
    argv
}

const QUICK: &[&str] = &["quick", "http://127.0.0.1:1/"];
const RUN: &[&str] = &["run", "script.js"];
const TARGET: &[&str] = &["target"];
const DEMO: &[&str] = &["demo"];
const HISTORY: &[&str] = &["history"];

/// Every whole-number flag: where it is given, its name, its range.
const INTEGER_FLAGS: &[(&[&str], &str, u64, u64)] = &[
    (QUICK, "-n", 1, MAX_COUNT),
    (QUICK, "-c", 1, MAX_CLIENTS),
    (QUICK, "--threads", 1, MAX_THREADS as u64),
    (QUICK, "--cpus", 1, MAX_THREADS as u64),
    (QUICK, "--pool-size", 1, MAX_POOL_SIZE as u64),
    (QUICK, "--max-streams", 1, MAX_H2_WINDOW as u64),
    (QUICK, "--h2-window", 1, MAX_H2_WINDOW as u64),
    (QUICK, "--h2-connection-window", 1, MAX_H2_WINDOW as u64),
    (RUN, "--threads", 1, MAX_THREADS as u64),
    (RUN, "--vus", 1, MAX_CLIENTS),
    (RUN, "--iterations", 1, MAX_COUNT),
    (RUN, "--pool-size", 1, MAX_POOL_SIZE as u64),
    (RUN, "--max-streams", 1, MAX_H2_WINDOW as u64),
    (RUN, "--h2-window", 1, MAX_H2_WINDOW as u64),
    (RUN, "--h2-connection-window", 1, MAX_H2_WINDOW as u64),
    (RUN, "--seed", 0, u64::MAX),
    (TARGET, "--threads", 1, MAX_THREADS as u64),
    (DEMO, "-c", 1, MAX_CLIENTS),
    (HISTORY, "--last", 1, MAX_HISTORY_ROWS as u64),
];

/// Every duration flag: where, name, whether a bare number is seconds, whether 0 is allowed.
const DURATION_FLAGS: &[(&[&str], &str, bool, bool)] = &[
    (QUICK, "-z", false, false),
    (QUICK, "-t", true, true),
    (QUICK, "--dns-ttl", true, true),
    (QUICK, "--grace", false, true),
    (RUN, "--duration", true, false),
    (RUN, "--duration-limit", false, false),
    (RUN, "--dns-ttl", true, true),
    (DEMO, "--duration", false, false),
];

/// Every fractional flag: where, name, upper bound (the lower one is "above 0").
const NUMBER_FLAGS: &[(&[&str], &str, f64)] = &[
    (QUICK, "--rate", MAX_RATE),
    (RUN, "--rate-factor", MAX_RATE_FACTOR),
];

fn all_flags() -> Vec<(&'static [&'static str], &'static str)> {
    let mut flags: Vec<_> = INTEGER_FLAGS.iter().map(|f| (f.0, f.1)).collect();
    flags.extend(DURATION_FLAGS.iter().map(|f| (f.0, f.1)));
    flags.extend(NUMBER_FLAGS.iter().map(|f| (f.0, f.1)));
    // -q is per worker: its range is the run's rate over -c (checked with the plan).
    flags.push((QUICK, "-q"));
    flags
}

/// The error names the flag: clap's "invalid value '…' for '--flag <N>'", or ours "--flag: …".
fn names_flag(line: &str, flag: &str) -> bool {
    !line.contains('\n')
        && (line.starts_with(&format!("{flag}:"))
            || line.starts_with(&format!("{flag} "))
            || line.contains(&format!("'{flag} ")))
}

/// Flags a value needs beside it to be valid on its own: -n below -c is refused for another
/// reason (so -c 1 with -n), and so is -c above the default -n (so a duration with -c).
fn companions(flag: &str) -> &'static [&'static str] {
    match flag {
        "-n" => &["-c", "1"],
        "-c" => &["-z", "1s"],
        _ => &[],
    }
}

fn check_rejected(command: &[&str], flag: &str, value: &str) {
    match outcome(&argv(command, flag, value)) {
        Ok(()) => panic!("{flag} {value} was accepted"),
        Err(line) => assert!(names_flag(&line, flag), "{flag} {value}: {line}"),
    }
}

#[test]
fn each_integer_flag_accepts_its_bounds_and_rejects_beyond_them() {
    for &(command, flag, min, max) in INTEGER_FLAGS {
        let extra = companions(flag);
        for value in [min, max] {
            let value = value.to_string();
            let mut line = argv(command, flag, &value);
            line.extend_from_slice(extra);
            assert_eq!(outcome(&line), Ok(()), "{flag} {value}");
        }
        if min > 0 {
            check_rejected(command, flag, &(min - 1).to_string());
        }
        if let Some(above) = max.checked_add(1) {
            check_rejected(command, flag, &above.to_string());
        }
        for bad in ["-1", "18446744073709551616", "1e20", "", "x", "1.5"] {
            check_rejected(command, flag, bad);
        }
    }
}

#[test]
fn the_crashes_and_silent_values_of_issue_12_are_usage_lines() {
    // Each once panicked, aborted, allocated gigabytes, or meant something else.
    check_rejected(QUICK, "-t", "1e20");
    check_rejected(QUICK, "-t", "18446744073709551615");
    check_rejected(QUICK, "-t", "0.0000000001");
    check_rejected(QUICK, "--pool-size", "4294967295");
    check_rejected(QUICK, "--h2-window", "0");
    check_rejected(QUICK, "--h2-window", "2147483648");
    check_rejected(QUICK, "--h2-connection-window", "0");
    check_rejected(RUN, "--vus", "-1");
    let vus = outcome(&argv(RUN, "--vus", "-1")).unwrap_err();
    assert!(vus.contains("from 1 to 1000000"), "{vus}");
    let z = outcome(&argv(QUICK, "-z", "10")).unwrap_err();
    assert!(z.contains("10s?"), "{z}");
    // A pool of 16,777,216 is accepted and allocates nothing until used (engine's pool).
    assert_eq!(outcome(&argv(QUICK, "--pool-size", "16777216")), Ok(()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn integers_in_range_are_accepted(pick in any::<prop::sample::Index>(), at in 0.0..=1.0f64) {
        let &(command, flag, min, max) = pick.get(INTEGER_FLAGS);
        let value = min + ((max - min) as f64 * at) as u64;
        let value = value.clamp(min, max).to_string();
        let mut line = argv(command, flag, &value);
        line.extend_from_slice(companions(flag));
        prop_assert_eq!(outcome(&line), Ok(()), "{} {}", flag, value);
    }

    #[test]
    fn integers_out_of_range_name_the_flag(pick in any::<prop::sample::Index>(), beyond in 1u128..=u128::MAX / 2, below in any::<bool>()) {
        let &(command, flag, _, max) = pick.get(INTEGER_FLAGS);
        let value = if below {
            format!("-{beyond}")
        } else {
            (u128::from(max) + beyond).to_string()
        };
        let result = outcome(&argv(command, flag, &value));
        prop_assert!(result.is_err(), "{} {} accepted", flag, value);
        let line = result.unwrap_err();
        prop_assert!(names_flag(&line, flag), "{} {}: {}", flag, value, line);
    }

    #[test]
    fn any_text_on_any_numeric_flag_is_accepted_or_one_line_naming_it(pick in any::<prop::sample::Index>(), value in "\\PC{0,12}|[-+0-9.eE]{1,24}|[0-9]{1,30}(ns|us|µs|ms|s|m|h|d)?") {
        let flags = all_flags();
        let &(command, flag) = pick.get(&flags);
        let mut line = argv(command, flag, &value);
        line.extend_from_slice(companions(flag));
        if let Err(line) = outcome(&line) {
            prop_assert!(names_flag(&line, flag), "{} {:?}: {}", flag, value, line);
        }
    }

    #[test]
    fn durations_in_range_are_accepted(pick in any::<prop::sample::Index>(), ms in 1u64..=365 * 24 * 3600 * 1000) {
        let &(command, flag, _, _) = pick.get(DURATION_FLAGS);
        let max = if flag == "-t" { MAX_TIMEOUT } else { MAX_DURATION };
        let ms = ms.min(max.as_millis() as u64);
        let value = format!("{ms}ms");
        prop_assert_eq!(outcome(&argv(command, flag, &value)), Ok(()), "{} {}", flag, value);
    }

    #[test]
    fn numbers_in_range_are_accepted(pick in any::<prop::sample::Index>(), at in 1e-9..=1.0f64) {
        let &(command, flag, max) = pick.get(NUMBER_FLAGS);
        let value = format!("{}", max * at);
        prop_assert_eq!(outcome(&argv(command, flag, &value)), Ok(()), "{} {}", flag, value);
    }
}

#[test]
fn duration_flags_reject_negative_huge_and_unitless_values() {
    for &(command, flag, bare_is_seconds, zero_ok) in DURATION_FLAGS {
        for bad in [
            "-1s",
            "1e20",
            "18446744073709551615s",
            "400d",
            "10x",
            "",
            "NaN",
            "inf",
        ] {
            check_rejected(command, flag, bad);
        }
        if !bare_is_seconds {
            check_rejected(command, flag, "10");
        }
        let zero = outcome(&argv(command, flag, "0s"));
        assert_eq!(zero.is_ok(), zero_ok, "{flag} 0s: {zero:?}");
    }
}

/// The value parsers under the fuzz driver (crates/fuzz): no text panics any of them, and
/// what they accept is in range.
#[test]
fn fuzz_cli_value_parsers() {
    barrage_fuzz::fuzz("cli_values", |input| {
        let text = String::from_utf8_lossy(input);
        let text = text.as_ref();
        if let Ok(n) = clients(text) {
            assert!((1..=MAX_CLIENTS).contains(&n));
        }
        if let Ok(n) = count(text) {
            assert!((1..=MAX_COUNT).contains(&n));
        }
        for parse in [rate, rate_factor] {
            if let Ok(x) = parse(text) {
                assert!(x > 0.0 && x.is_finite());
            }
        }
        let _ = (
            threads(text),
            pool_size(text),
            seed(text),
            history_rows(text),
        );
        if let Ok(n) = h2_size(text) {
            assert!((1..=MAX_H2_WINDOW).contains(&n));
        }
        for bare in [false, true] {
            if let Ok(d) = duration_value(text, bare) {
                assert!(d <= MAX_DURATION);
            }
        }
        if let Ok(t) = timeout(text) {
            assert!(t.is_zero() || (MIN_TIMEOUT..=MAX_TIMEOUT).contains(&t));
        }
        let _ = crate::vu_overrides::VuOverrides::parse(None, None, Some(text), None);
        let _ = crate::vu_overrides::VuOverrides::parse(Some(text), Some(text), None, Some(text));
        let outputs = crate::output_flags::OutputArgs {
            summary_trend_stats: Some(text.to_string()),
            ..Default::default()
        };
        let _ = outputs.trend_stats();
    });
}

#[test]
fn rates_too_low_to_schedule_are_rejected() {
    // The gap after a rate of 1e-300 per second is no duration a clock can keep.
    for value in ["1e-300", "1e-7"] {
        check_rejected(QUICK, "--rate", value);
        check_rejected(QUICK, "-q", value);
    }
    assert_eq!(outcome(&argv(QUICK, "--rate", "1e-6")), Ok(()));
}
