//! hey's command-line spelling for `barrage quick`. hey parses flags with Go's `flag` package:
//! one or two dashes mean the same (`-disable-keepalive`, `--disable-keepalive`, `--n 10`),
//! `-name=value` and `-name value` both give a value (even one starting with `-`), and a bool
//! flag takes `=false`. This rewrites such arguments into the spelling clap reads, using
//! `quick`'s own flag definitions, so every flag means what it means in hey. A single-dash
//! word that is no flag (`-disable-keepalives`) is an error naming it, as in hey, instead of
//! a short flag with the rest of the word as its value.

use clap::Command;
use std::ffi::OsString;

/// What one flag name is, among `quick`'s.
struct Flag {
    /// Spelt `-x` (a short flag) rather than `--name`.
    short: bool,
    takes_value: bool,
    /// Its value is optional and only given with `=` (`--http-debug[=full]`).
    optional_value: bool,
}

fn lookup(quick: &Command, name: &str) -> Option<Flag> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        if let Some(arg) = quick.get_arguments().find(|a| a.get_short() == Some(c)) {
            return Some(Flag {
                short: true,
                takes_value: arg.get_action().takes_values(),
                optional_value: false,
            });
        }
    }
    let arg = quick.get_arguments().find(|a| {
        a.get_long() == Some(name)
            || a.get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name))
    })?;
    let optional_value = arg
        .get_num_args()
        .is_some_and(|range| range.min_values() == 0 && range.takes_values());
    Some(Flag {
        short: false,
        takes_value: arg.get_action().takes_values() && !optional_value,
        optional_value,
    })
}

/// Go's `strconv.ParseBool`, which `-flag=value` uses for bool flags.
fn go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// Whether `-word` reads as a misspelt flag name rather than a short flag glued to its value
/// (`-n1000`, `-HAccept: x`, which clap reads as such).
fn looks_like_a_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && chars.any(|c| c.is_ascii_alphabetic())
}

/// Rewrites `barrage quick ...` arguments from hey's spelling into clap's; other commands
/// pass unchanged. An unknown single-dash word or a bad bool value is an error naming it.
pub fn normalize(args: Vec<OsString>, cli: &Command) -> Result<Vec<OsString>, String> {
    let Some(quick) = cli.find_subcommand("quick") else {
        return Ok(args);
    };
    if args.get(1).and_then(|a| a.to_str()) != Some("quick") {
        return Ok(args);
    }
    let mut out: Vec<OsString> = args[..2].to_vec();
    let mut rest = args.into_iter().skip(2);
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str().map(str::to_owned) else {
            out.push(arg);
            continue;
        };
        if text == "--" {
            out.push(arg);
            out.extend(rest.by_ref());
            break;
        }
        let body = match text.strip_prefix("--").or_else(|| text.strip_prefix('-')) {
            Some(body) if !body.is_empty() => body,
            _ => {
                out.push(arg);
                continue;
            }
        };
        let (name, value) = match body.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (body, None),
        };
        let Some(flag) = lookup(quick, name) else {
            if !text.starts_with("--") && name.len() > 1 && looks_like_a_name(name) {
                return Err(format!(
                    "{text}: unknown flag (barrage quick takes hey's flags, with one or two dashes; see barrage quick --help)"
                ));
            }
            out.push(arg);
            continue;
        };
        let spelt = if flag.short {
            format!("-{name}")
        } else {
            format!("--{name}")
        };
        match (flag.takes_value, value) {
            (true, Some(value)) => out.push(format!("{spelt}={value}").into()),
            (true, None) => match rest.next() {
                // Go takes the next argument as the value, whatever it looks like.
                Some(next) => {
                    let mut joined = OsString::from(format!("{spelt}="));
                    joined.push(next);
                    out.push(joined);
                }
                None => out.push(spelt.into()),
            },
            (false, None) => out.push(spelt.into()),
            (false, Some(value)) if flag.optional_value => {
                out.push(format!("{spelt}={value}").into())
            }
            (false, Some(value)) => match go_bool(value) {
                Some(true) => out.push(spelt.into()),
                Some(false) => {}
                None => {
                    return Err(format!(
                        "{text}: `{value}` is not a boolean (use true or false)"
                    ))
                }
            },
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction, Command};

    fn cli() -> Command {
        Command::new("barrage").subcommand(
            Command::new("quick")
                .arg(Arg::new("url"))
                .arg(Arg::new("n").short('n'))
                .arg(Arg::new("d").short('d'))
                .arg(Arg::new("host").long("host"))
                .arg(
                    Arg::new("disable-keepalive")
                        .long("disable-keepalive")
                        .action(ArgAction::SetTrue),
                )
                .arg(
                    Arg::new("http-debug")
                        .long("http-debug")
                        .num_args(0..=1)
                        .require_equals(true),
                ),
        )
    }

    fn norm(args: &[&str]) -> Result<Vec<String>, String> {
        let mut argv = vec!["barrage", "quick"];
        argv.extend_from_slice(args);
        let argv = argv.into_iter().map(OsString::from).collect();
        normalize(argv, &cli()).map(|out| {
            out.into_iter()
                .skip(2)
                .map(|a| a.into_string().unwrap())
                .collect()
        })
    }

    #[test]
    fn one_or_two_dashes_mean_the_same_flag() {
        assert_eq!(
            norm(&["-disable-keepalive", "u"]).unwrap(),
            ["--disable-keepalive", "u"]
        );
        assert_eq!(norm(&["--n", "10", "u"]).unwrap(), ["-n=10", "u"]);
        assert_eq!(norm(&["-host=h", "u"]).unwrap(), ["--host=h", "u"]);
        assert_eq!(norm(&["-d", "-x", "u"]).unwrap(), ["-d=-x", "u"]);
        assert_eq!(norm(&["-disable-keepalive=false", "u"]).unwrap(), ["u"]);
        assert_eq!(norm(&["-http-debug", "u"]).unwrap(), ["--http-debug", "u"]);
        assert_eq!(
            norm(&["-http-debug=full", "u"]).unwrap(),
            ["--http-debug=full", "u"]
        );
        assert_eq!(norm(&["u", "--", "-x"]).unwrap(), ["u", "--", "-x"]);
        assert_eq!(norm(&["-n1000", "u"]).unwrap(), ["-n1000", "u"]);
    }

    #[test]
    fn misspelt_flags_and_bad_bools_are_errors_naming_them() {
        let e = norm(&["-disable-keepalives", "u"]).unwrap_err();
        assert!(e.starts_with("-disable-keepalives: unknown flag"), "{e}");
        let e = norm(&["-disable-keepalive=maybe", "u"]).unwrap_err();
        assert!(e.starts_with("-disable-keepalive=maybe: `maybe`"), "{e}");
    }

    #[test]
    fn other_commands_pass_unchanged() {
        let argv: Vec<OsString> = ["barrage", "run", "-disable-keepalive"]
            .into_iter()
            .map(OsString::from)
            .collect();
        assert_eq!(normalize(argv.clone(), &cli()).unwrap(), argv);
    }
}
