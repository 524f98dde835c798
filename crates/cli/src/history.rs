//! The run history: one SQLite row per run (headline figures, verdict, results-file path),
//! `barrage history` to list them, and run ids for `barrage compare`. The schema is versioned
//! (`PRAGMA user_version`) and older databases are migrated when opened.

use crate::usage::usage;
use anyhow::Context;
use barrage_report::Summary;
use barrage_results::ResultsFile;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

/// Environment variable naming the default database (tests point it elsewhere).
pub const HISTORY_ENV: &str = "BARRAGE_HISTORY";

/// Schema migrations, in order; the database's `user_version` counts those applied.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at_unix_s INTEGER NOT NULL,
        script TEXT,
        target TEXT NOT NULL,
        requests INTEGER NOT NULL,
        rps REAL NOT NULL,
        p95_ms REAL NOT NULL,
        passed INTEGER NOT NULL,
        results_path TEXT
    );",
    // 2: name, command, overrides, errors, more percentiles and the duration; lookups by script.
    "ALTER TABLE runs ADD COLUMN name TEXT NOT NULL DEFAULT '';
     ALTER TABLE runs ADD COLUMN command TEXT NOT NULL DEFAULT '';
     ALTER TABLE runs ADD COLUMN overrides TEXT NOT NULL DEFAULT '{}';
     ALTER TABLE runs ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;
     ALTER TABLE runs ADD COLUMN p50_ms REAL;
     ALTER TABLE runs ADD COLUMN p99_ms REAL;
     ALTER TABLE runs ADD COLUMN duration_s REAL;
     CREATE INDEX runs_by_script ON runs (script);",
    // 3: the generator self-check's verdict (NULL for runs recorded before it).
    "ALTER TABLE runs ADD COLUMN trustworthy INTEGER;",
    // 4: a capacity search's knee, its load as text (NULL for other runs).
    "ALTER TABLE runs ADD COLUMN knee TEXT;",
];

/// The database to use: `--history`, else `$BARRAGE_HISTORY`, else the user's data directory.
pub fn path(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(HISTORY_ENV) {
        return Ok(PathBuf::from(p));
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .ok_or_else(|| {
            usage("no data directory (HOME and XDG_DATA_HOME unset): pass --history PATH")
        })?;
    Ok(data.join("barrage").join("history.db"))
}

/// Opens (creating) the database and brings its schema up to date.
pub fn open(path: &Path) -> anyhow::Result<Connection> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if !path.exists() {
        // Owner-only, like every file a run leaves behind (SQLite keeps the mode).
        barrage_results::open_private(path)
            .with_context(|| format!("creating {}", path.display()))?;
    }
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    migrate(&mut conn).map_err(|e| usage(format!("{}: {e}", path.display())))?;
    Ok(conn)
}

fn migrate(conn: &mut Connection) -> anyhow::Result<()> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .context("not a barrage history database")?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        anyhow::bail!(
            "history schema version {version} is newer than this barrage knows ({known})"
        );
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

/// The figures a row shows: a run's totals, or the knee of a capacity search (its load,
/// throughput and percentiles — what the search found, not its steps added up).
struct Headline {
    requests: u64,
    errors: u64,
    rps: f64,
    p50_ms: f64,
    p95_ms: f64,
    p99_ms: f64,
    duration_s: f64,
    passed: bool,
    knee: Option<String>,
}

impl Headline {
    fn of(results: &ResultsFile, summary: &Summary) -> Headline {
        let ms = |p: f64| summary.latency.percentile(p).unwrap_or(0) as f64 / 1e3;
        let run = Headline {
            requests: summary.requests,
            errors: summary.errors,
            rps: summary.requests_per_second,
            p50_ms: ms(50.0),
            p95_ms: ms(95.0),
            p99_ms: ms(99.0),
            duration_s: summary.total_s,
            passed: barrage_report::passed(results, summary),
            knee: None,
        };
        let Some(Ok(search)) = barrage_capacity::file::of(results) else {
            return run;
        };
        let passed = crate::capacity_cmd::exit_code(&search) == crate::usage::exit::OK;
        match search.knee_level() {
            Some(knee) => {
                let k = &knee.merged;
                Headline {
                    requests: k.requests,
                    errors: k.failed,
                    rps: k.throughput,
                    p50_ms: k.p50_us as f64 / 1e3,
                    p95_ms: k.p95_us as f64 / 1e3,
                    p99_ms: k.p99_us as f64 / 1e3,
                    duration_s: (search.config.window.measure_s as usize * knee.runs.len()) as f64,
                    passed,
                    knee: Some(search.config.kind.text(knee.load)),
                }
            }
            None => Headline {
                passed,
                knee: Some("none".into()),
                ..run
            },
        }
    }
}

/// Records one run; returns its id.
pub fn record(
    path: &Path,
    results: &ResultsFile,
    summary: &Summary,
    results_path: Option<&Path>,
) -> anyhow::Result<i64> {
    let conn = open(path)?;
    let meta = &results.meta;
    let row = Headline::of(results, summary);
    conn.execute(
        "INSERT INTO runs (started_at_unix_s, script, target, requests, rps, p95_ms, passed,
                           results_path, name, command, overrides, errors, p50_ms, p99_ms, duration_s,
                           trustworthy, knee)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        params![
            (meta.started_at_unix_ns / 1_000_000_000) as i64,
            meta.script,
            meta.target,
            row.requests as i64,
            row.rps,
            row.p95_ms,
            row.passed,
            results_path.map(|p| p.display().to_string()),
            meta.name,
            meta.command,
            serde_json::to_string(&meta.overrides)?,
            row.errors as i64,
            row.p50_ms,
            row.p99_ms,
            row.duration_s,
            summary.trustworthy,
            row.knee,
        ],
    )?;
    Ok(conn.last_insert_rowid())
}

/// One row of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: i64,
    pub started_at_unix_s: i64,
    pub name: String,
    pub script: Option<String>,
    pub target: String,
    pub requests: i64,
    pub errors: i64,
    pub rps: f64,
    pub p50_ms: Option<f64>,
    pub p95_ms: f64,
    pub p99_ms: Option<f64>,
    pub passed: bool,
    pub results_path: Option<String>,
    /// The generator self-check's verdict (`None`: recorded before it was kept).
    pub trustworthy: Option<bool>,
    /// A capacity search's knee (its load; "none" when no step met the SLO); the row's
    /// figures are then the knee's.
    pub knee: Option<String>,
}

const COLUMNS: &str = "id, started_at_unix_s, name, script, target, requests, errors, rps, \
                       p50_ms, p95_ms, p99_ms, passed, results_path, trustworthy, knee";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Run> {
    Ok(Run {
        id: r.get(0)?,
        started_at_unix_s: r.get(1)?,
        name: r.get(2)?,
        script: r.get(3)?,
        target: r.get(4)?,
        requests: r.get(5)?,
        errors: r.get(6)?,
        rps: r.get(7)?,
        p50_ms: r.get(8)?,
        p95_ms: r.get(9)?,
        p99_ms: r.get(10)?,
        passed: r.get(11)?,
        results_path: r.get(12)?,
        trustworthy: r.get(13)?,
        knee: r.get(14)?,
    })
}

/// The last `last` runs (oldest first), of one script (matched by file name or path) if given.
pub fn list(conn: &Connection, last: usize, script: Option<&str>) -> anyhow::Result<Vec<Run>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM runs
         WHERE ?1 IS NULL OR script = ?1 OR script LIKE '%/' || ?1 OR name = ?1
         ORDER BY id DESC LIMIT ?2"
    );
    let mut statement = conn.prepare(&sql)?;
    let mut runs = statement
        .query_map(params![script, last as i64], row)?
        .collect::<Result<Vec<_>, _>>()?;
    runs.reverse();
    Ok(runs)
}

pub fn get(conn: &Connection, id: i64) -> anyhow::Result<Option<Run>> {
    let sql = format!("SELECT {COLUMNS} FROM runs WHERE id = ?1");
    Ok(conn.query_row(&sql, [id], row).optional()?)
}

/// `barrage history` as text.
pub fn render(runs: &[Run]) -> String {
    if runs.is_empty() {
        return "no runs recorded\n".into();
    }
    // Capacity searches show their knee, and the knee's figures in the columns after it.
    let knees = runs.iter().any(|r| r.knee.is_some());
    let header = [
        "id",
        "started (UTC)",
        "name",
        "script",
        "knee",
        "requests",
        "rate/s",
        "errors",
        "p50",
        "p95",
        "p99",
        "verdict",
        "trust",
        "results",
    ];
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}ms"));
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for r in runs {
        let (y, mo, d, h, mi, s) = barrage_results::utc_parts(r.started_at_unix_s.max(0) as u64);
        rows.push(vec![
            r.id.to_string(),
            format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}"),
            r.name.clone(),
            r.script.clone().unwrap_or_else(|| "-".into()),
            r.knee.clone().unwrap_or_else(|| "-".into()),
            r.requests.to_string(),
            format!("{:.1}", r.rps),
            r.errors.to_string(),
            ms(r.p50_ms),
            ms(Some(r.p95_ms)),
            ms(r.p99_ms),
            if r.passed { "pass" } else { "FAIL" }.into(),
            match r.trustworthy {
                Some(true) => "ok",
                Some(false) => "UNTRUSTED",
                None => "-",
            }
            .into(),
            r.results_path.clone().unwrap_or_else(|| "-".into()),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let knee_column = header.iter().position(|h| *h == "knee");
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .filter(|(c, _)| knees || Some(*c) != knee_column)
            .map(|(c, cell)| format!("{cell:<w$}", w = widths[c]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("barrage-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        path
    }

    #[test]
    fn an_older_schema_is_migrated_on_open_and_keeps_its_rows() {
        let path = scratch("v1.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO runs (started_at_unix_s, script, target, requests, rps, p95_ms, passed, results_path)
                 VALUES (1795423660, 'old.js', 'http://127.0.0.1:1', 10, 5.0, 2.5, 1, NULL)",
                [],
            )
            .unwrap();
        }
        let conn = open(&path).unwrap();
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let runs = list(&conn, 10, Some("old.js")).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].requests, runs[0].p95_ms), (10, 2.5));
        assert_eq!((runs[0].p50_ms, runs[0].errors), (None, 0));
        assert!(render(&runs).contains("old.js"));
        // Opening again applies nothing twice.
        drop(conn);
        open(&path).unwrap();
    }

    #[test]
    fn a_newer_schema_or_a_non_database_is_refused_in_one_line() {
        let path = scratch("v9.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 9)
            .unwrap();
        let e = open(&path).unwrap_err().to_string();
        assert!(e.contains("newer than this barrage knows"), "{e}");
        let junk = scratch("junk.db");
        std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
        let e = open(&junk).unwrap_err().to_string();
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn the_knee_column_shows_only_when_a_capacity_search_is_listed() {
        let run = Run {
            id: 1,
            started_at_unix_s: 1795423660,
            name: "plain".into(),
            script: None,
            target: "http://127.0.0.1:1".into(),
            requests: 10,
            errors: 0,
            rps: 5.0,
            p50_ms: Some(1.0),
            p95_ms: 2.0,
            p99_ms: Some(3.0),
            passed: true,
            results_path: None,
            trustworthy: Some(true),
            knee: None,
        };
        assert!(!render(std::slice::from_ref(&run)).contains("knee"));
        let search = Run {
            id: 2,
            name: "capacity".into(),
            knee: Some("200/s".into()),
            rps: 199.5,
            ..run.clone()
        };
        let text = render(&[run, search]);
        let cells: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        // id, date, time, name, script, knee, requests, rate/s
        assert_eq!(cells[0][4..7], ["script", "knee", "requests"], "{text}");
        assert_eq!(cells[1][5..8], ["-", "10", "5.0"], "{text}");
        assert_eq!(cells[2][5..8], ["200/s", "10", "199.5"], "{text}");
    }
}
