//! What every context of a run shares, across worker threads: the files `open()` read (read
//! once, relative to the script), the `SharedArray`s (built once by the first context that
//! declares them, each element kept as its JSON text and parsed on access, as k6 does), the
//! test-wide iteration counter (`k6/execution`'s `scenario.iterationInTest`) and
//! `test.abort()`'s reason and the run's stop signal. Locks here are taken in init contexts
//! only; per iteration there is one relaxed atomic add.

use barrage_engine::StopSignal;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A `SharedArray`'s elements as JSON texts.
pub(crate) type SharedElements = Arc<Vec<Box<str>>>;

#[derive(Debug, Default)]
pub(crate) struct RunShared {
    /// The directory `open()` paths are relative to.
    dir: PathBuf,
    files: Mutex<HashMap<PathBuf, Arc<Vec<u8>>>>,
    arrays: Mutex<HashMap<String, SharedElements>>,
    iterations: AtomicU64,
    aborted: Mutex<Option<String>>,
    stop: OnceLock<Arc<StopSignal>>,
    /// What `setup()` returned, as JSON (k6 hands every VU and `teardown` a copy).
    setup_data: OnceLock<String>,
    /// Why `setup()` or `teardown()` threw (k6 exits 107).
    stage_error: Mutex<Option<String>>,
    /// `options.maxRedirects` (set once the init context at start has read it).
    max_redirects: OnceLock<u32>,
}

impl RunShared {
    /// State for the script at `file` (its directory anchors `open()`).
    pub fn new(file: &str) -> Self {
        Self {
            dir: Path::new(file)
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            ..Self::default()
        }
    }

    /// The contents of `path` (relative to the script unless absolute), read once.
    pub fn open(&self, path: &str) -> Result<Arc<Vec<u8>>, String> {
        let full = self.dir.join(path);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bytes) = files.get(&full) {
            return Ok(Arc::clone(bytes));
        }
        let bytes =
            Arc::new(std::fs::read(&full).map_err(|e| format!("open(): {}: {e}", full.display()))?);
        files.insert(full, Arc::clone(&bytes));
        Ok(bytes)
    }

    /// The shared array `name`, if some context built it already.
    pub fn array(&self, name: &str) -> Option<SharedElements> {
        let arrays = self.arrays.lock().unwrap_or_else(|e| e.into_inner());
        arrays.get(name).cloned()
    }

    /// Keeps `elements` as shared array `name`; a context that built it concurrently wins,
    /// and every context gets the one kept.
    pub fn keep_array(&self, name: &str, elements: Vec<Box<str>>) -> SharedElements {
        let mut arrays = self.arrays.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            arrays
                .entry(name.to_string())
                .or_insert_with(|| Arc::new(elements)),
        )
    }

    /// The next test-wide iteration number (0-based).
    pub fn next_iteration(&self) -> u64 {
        self.iterations.fetch_add(1, Ordering::Relaxed)
    }

    /// `test.abort(reason)`: the first reason is kept and the run is told to stop.
    pub fn abort(&self, reason: String) {
        let mut aborted = self.aborted.lock().unwrap_or_else(|e| e.into_inner());
        aborted.get_or_insert(reason);
        if let Some(stop) = self.stop.get() {
            stop.stop();
        }
    }

    /// Why the test was aborted, if it was.
    pub fn aborted(&self) -> Option<String> {
        self.aborted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether `test.abort()` was called.
    pub fn is_aborted(&self) -> bool {
        self.aborted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Sets `options.maxRedirects` for every context's requests.
    pub fn set_max_redirects(&self, max: u32) {
        let _ = self.max_redirects.set(max);
    }

    /// The redirects a request follows unless its `redirects` param says otherwise.
    pub fn max_redirects(&self) -> u32 {
        self.max_redirects
            .get()
            .copied()
            .unwrap_or(crate::options::DEFAULT_MAX_REDIRECTS)
    }

    /// Keeps `setup()`'s return value (JSON text).
    pub fn keep_setup_data(&self, json: String) {
        let _ = self.setup_data.set(json);
    }

    /// `setup()`'s return value as JSON, if it returned one.
    pub fn setup_data(&self) -> Option<&str> {
        self.setup_data.get().map(String::as_str)
    }

    /// `setup()` or `teardown()` threw: the first reason is kept and the run is told to stop.
    pub fn fail_stage(&self, reason: String) {
        let mut failed = self.stage_error.lock().unwrap_or_else(|e| e.into_inner());
        failed.get_or_insert(reason);
        if let Some(stop) = self.stop.get() {
            stop.stop();
        }
    }

    /// Why `setup()` or `teardown()` threw, if one did.
    pub fn stage_error(&self) -> Option<String> {
        self.stage_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The run's stop signal, which `test.abort()` pulls.
    pub fn attach(&self, stop: Arc<StopSignal>) {
        let _ = self.stop.set(stop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_read_relative_to_the_script_and_once() {
        let dir = std::env::temp_dir().join(format!("k6-shared-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("users.csv"), "a,b\n").unwrap();
        let shared = RunShared::new(dir.join("script.js").to_str().unwrap());
        let first = shared.open("users.csv").unwrap();
        assert_eq!(first.as_slice(), b"a,b\n");
        std::fs::write(dir.join("users.csv"), "changed").unwrap();
        assert!(Arc::ptr_eq(&first, &shared.open("users.csv").unwrap()));
        let missing = shared.open("nope.txt").unwrap_err();
        assert!(missing.contains("nope.txt"), "{missing}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_first_array_and_the_first_abort_reason_are_kept() {
        let shared = RunShared::new("s.js");
        assert!(shared.array("a").is_none());
        let kept = shared.keep_array("a", vec!["1".into()]);
        let again = shared.keep_array("a", vec!["2".into()]);
        assert!(Arc::ptr_eq(&kept, &again));
        assert_eq!(&*shared.array("a").unwrap()[0], "1");
        assert_eq!((shared.next_iteration(), shared.next_iteration()), (0, 1));
        assert!(!shared.is_aborted());
        shared.abort("first".into());
        shared.abort("second".into());
        assert_eq!(shared.aborted().as_deref(), Some("first"));
    }
}
