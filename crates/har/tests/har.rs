//! HAR front end end to end: fixture recordings (a browser page load, a login flow, a
//! token-then-pings flow) read, converted into DSL test cases compared with committed
//! snapshots (`UPDATE_SNAPSHOTS=1` rewrites them), and those scripts compiled into plans.

#[path = "har/convert.rs"]
mod convert;
#[path = "har/read.rs"]
mod read;
#[path = "har/replay.rs"]
mod replay;

use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture(name: &str) -> barrage_har::Har {
    barrage_har::read_har(&fixtures().join(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// Compares `actual` with the committed file `name` (`UPDATE_SNAPSHOTS=1` rewrites it).
pub fn compare_snapshot(name: &str, actual: &[u8]) {
    let path = fixtures().join("snapshots").join(name);
    if std::env::var("UPDATE_SNAPSHOTS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_SNAPSHOTS=1 to create it)",
            path.display()
        )
    });
    assert!(
        actual == expected.as_slice(),
        "{name} differs from {} (UPDATE_SNAPSHOTS=1 rewrites it):\n{}",
        path.display(),
        String::from_utf8_lossy(actual)
    );
}
