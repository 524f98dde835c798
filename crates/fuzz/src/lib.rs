//! A small coverage-blind fuzzer for the stable toolchain: it replays a committed corpus, then
//! mutates corpus entries (bit flips, byte edits, interesting values, splices, repeats) for a
//! bounded time, calling the target with each input and catching panics. A panic fails the
//! run with the input saved (hex) under `target/fuzz-crashes/` and printed, to be turned into
//! a regression test and a corpus entry. `cargo test` runs every target for a short time;
//! `BARRAGE_FUZZ_SECS=N` runs each for N seconds and `BARRAGE_FUZZ_SEED` replays a run.
//!
//! Why not cargo-fuzz or bolero: libFuzzer needs nightly, and the targets must run in plain
//! `cargo test` in CI; this driver needs nothing but `rand`.

pub mod targets;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Seconds per target when `BARRAGE_FUZZ_SECS` is not set (CI: a short bounded run).
pub const DEFAULT_SECONDS: f64 = 2.0;
/// The largest input the mutator builds.
pub const MAX_INPUT: usize = 64 * 1024;

/// What a fuzz run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub target: String,
    pub corpus: usize,
    pub executions: u64,
    pub seed: u64,
}

/// The corpus of `target`: every file in `crates/fuzz/corpus/<target>/`.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target)
}

/// Reads a corpus directory (missing: empty), sorted by name so runs replay.
pub fn load_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

fn budget() -> Duration {
    let seconds = std::env::var("BARRAGE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(DEFAULT_SECONDS);
    Duration::from_secs_f64(seconds.min(24.0 * 3600.0))
}

fn seed() -> u64 {
    std::env::var("BARRAGE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
}

const INTERESTING: &[&[u8]] = &[
    b"\x00",
    b"\xff",
    b"\x7f",
    b"\x80",
    b"\xff\xff\xff\xff",
    b"\x7f\xff\xff\xff",
    b"\x00\x00\x00\x00",
    b"\r\n",
    b"\r\n\r\n",
    b"0",
    b"-1",
    b"18446744073709551615",
    b"18446744073709551616",
    b"4294967296",
    b"1e308",
    b"NaN",
    b"inf",
    b"ffffffffffffffff",
    b":",
    b";",
    b"(",
    b")",
    b"<",
    b">=",
    b"%",
    b"\xc3\xa9",
];

/// One mutation of `input` (the corpus gives `other` for splices).
pub fn mutate(rng: &mut SmallRng, input: &mut Vec<u8>, other: &[u8]) {
    let edits = 1 + rng.gen_range(0..4);
    for _ in 0..edits {
        let len = input.len();
        match rng.gen_range(0..9) {
            0 if len > 0 => {
                let i = rng.gen_range(0..len);
                input[i] ^= 1 << rng.gen_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.gen_range(0..len);
                input[i] = rng.gen();
            }
            2 => {
                let i = rng.gen_range(0..=len);
                input.insert(i, rng.gen());
            }
            3 if len > 0 => {
                let start = rng.gen_range(0..len);
                let end = (start + rng.gen_range(1..=16)).min(len);
                input.drain(start..end);
            }
            4 => {
                let token = INTERESTING[rng.gen_range(0..INTERESTING.len())];
                let i = rng.gen_range(0..=len);
                if rng.gen_bool(0.5) && i + token.len() <= len {
                    input[i..i + token.len()].copy_from_slice(token);
                } else {
                    input.splice(i..i, token.iter().copied());
                }
            }
            5 if !other.is_empty() => {
                // Splice: a piece of another entry.
                let start = rng.gen_range(0..other.len());
                let end = (start + rng.gen_range(1..=64)).min(other.len());
                let i = rng.gen_range(0..=len);
                input.splice(i..i, other[start..end].iter().copied());
            }
            6 if len > 0 => {
                // Repeat a piece (long runs, repeated frames).
                let start = rng.gen_range(0..len);
                let end = (start + rng.gen_range(1..=32)).min(len);
                let piece = input[start..end].to_vec();
                for _ in 0..rng.gen_range(1..8) {
                    input.extend_from_slice(&piece);
                }
            }
            7 if len > 1 => {
                input.truncate(rng.gen_range(0..len));
            }
            8 if len > 0 => {
                // Arithmetic on a byte (lengths, counts, flags).
                let i = rng.gen_range(0..len);
                input[i] = input[i].wrapping_add(rng.gen_range(1..=8)).wrapping_sub(4);
            }
            _ => input.push(rng.gen()),
        }
    }
    input.truncate(MAX_INPUT);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Saves a crashing input and fails with it.
fn crashed(target: &str, input: &[u8], seed: u64, payload: &str) -> ! {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/fuzz-crashes")
        .join(target);
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!("crash-{seed}"));
    let _ = std::fs::write(&file, input);
    panic!(
        "fuzz target `{target}` panicked ({payload}) on input {} (saved to {}; seed {seed}): {:?}",
        hex(input),
        file.display(),
        String::from_utf8_lossy(input)
    );
}

/// Replays the corpus of `target`, then mutates it for the time budget, calling `run` with
/// every input. Panics (with the input) if `run` panics.
pub fn fuzz(target: &str, run: impl Fn(&[u8])) -> Report {
    let corpus = load_corpus(&corpus_dir(target));
    assert!(
        !corpus.is_empty(),
        "fuzz target `{target}` has no corpus in {}",
        corpus_dir(target).display()
    );
    let seed = seed();
    let check = |input: &[u8]| {
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| run(input))) {
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            crashed(target, input, seed, &text);
        }
    };
    // Quiet panics: the driver reports them itself.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut executions = 0u64;
        for entry in &corpus {
            check(entry);
            executions += 1;
        }
        let mut rng = SmallRng::seed_from_u64(seed);
        let deadline = Instant::now() + budget();
        let mut input = Vec::with_capacity(MAX_INPUT);
        while Instant::now() < deadline {
            for _ in 0..64 {
                let base = &corpus[rng.gen_range(0..corpus.len())];
                let other = &corpus[rng.gen_range(0..corpus.len())];
                input.clear();
                input.extend_from_slice(base);
                // Stack several rounds now and then: deeper from the corpus.
                for _ in 0..1 + rng.gen_range(0..3) {
                    mutate(&mut rng, &mut input, other);
                }
                check(&input);
                executions += 1;
            }
        }
        executions
    }));
    std::panic::set_hook(hook);
    let executions = match result {
        Ok(n) => n,
        Err(payload) => std::panic::resume_unwind(payload),
    };
    let report = Report {
        target: target.to_string(),
        corpus: corpus.len(),
        executions,
        seed,
    };
    eprintln!(
        "fuzz {}: {} executions ({} corpus entries), 0 crashes, seed {}",
        report.target, report.executions, report.corpus, report.seed
    );
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_target_is_reported_with_its_input() {
        let dir = corpus_dir("selftest");
        std::fs::create_dir_all(&dir).unwrap();
        let outcome = catch_unwind(|| {
            fuzz("selftest", |input| {
                assert!(!input.contains(&b'!'), "found it");
            })
        });
        let message = outcome
            .err()
            .and_then(|p| p.downcast_ref::<String>().cloned())
            .expect("the target's panic is found");
        assert!(message.contains("found it"), "{message}");
        assert!(message.contains("21"), "the input, in hex: {message}");
    }

    #[test]
    fn mutations_stay_bounded() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut input = vec![0u8; MAX_INPUT];
        for _ in 0..1000 {
            mutate(&mut rng, &mut input, b"abc");
            assert!(input.len() <= MAX_INPUT);
        }
    }
}
