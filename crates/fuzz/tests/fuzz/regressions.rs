//! Inputs that once crashed a target, replayed on every run (also in the target's corpus).

use barrage_fuzz::targets::{body, h1, h2, results, values};

/// A target: its corpus name and its function.
type Target = (&'static str, fn(&[u8]));

/// Every corpus entry of every target runs clean (the driver also replays them, with
/// mutations; this is the plain replay, the place the libFuzzer finds land).
#[test]
fn every_corpus_entry_runs_clean() {
    let targets: [Target; 7] = [
        ("http1_response", h1::one_response),
        ("http2_connection", h2::connection_run),
        ("hpack", h2::hpack_run),
        ("results_file", results::read_back),
        ("body", body::one_body),
        ("url", values::url),
        ("duration", values::duration),
    ];
    for (name, run) in targets {
        let corpus = barrage_fuzz::load_corpus(&barrage_fuzz::corpus_dir(name));
        assert!(!corpus.is_empty(), "{name} has a corpus");
        for input in &corpus {
            run(input);
        }
    }
}
