//! Data files (`session.ds.loadStructured`): CSV, or TSV by extension, with a header row,
//! loaded at compile time into the plan.

use crate::jsval::{Args, JsVal};
use crate::ScriptError;
use barrage_plan::DataSource;
use std::path::Path;

/// Why a data file could not be used (the caller adds the script location).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DataError {
    #[error("data file `{name}` not found (looked for {path})")]
    Missing { name: String, path: String },
    #[error("data file `{name}`: {message}")]
    Unreadable { name: String, message: String },
    #[error("data file `{name}` has no header row")]
    NoHeader { name: String },
    #[error("data file `{name}` has the column `{column}` twice in its header")]
    DuplicateColumn { name: String, column: String },
    #[error(
        "data file `{name}` has no rows (only a header); a data source needs at least one row"
    )]
    Empty { name: String },
    #[error("`{name}:{line}`: the row has {found} field{}, but the header has {expected}", if *found == 1 { "" } else { "s" })]
    FieldCount {
        name: String,
        line: u64,
        expected: usize,
        found: usize,
    },
}

/// The largest raw file (`payload_from_file`, `getRawFile`) a plan carries.
const RAW_FILE_LIMIT: u64 = 64 << 20;

/// Reads a raw file (a request body) relative to `base_dir`.
pub(crate) fn read_raw(name: &str, base_dir: &Path) -> Result<Vec<u8>, DataError> {
    let path = base_dir.join(name);
    let unreadable = |message: String| DataError::Unreadable {
        name: name.to_string(),
        message,
    };
    let meta = std::fs::metadata(&path).map_err(|_| DataError::Missing {
        name: name.to_string(),
        path: path.display().to_string(),
    })?;
    if !meta.is_file() {
        return Err(unreadable("not a file".into()));
    }
    if meta.len() > RAW_FILE_LIMIT {
        return Err(unreadable(format!(
            "{} bytes is more than the {} MiB a request body from a file may have",
            meta.len(),
            RAW_FILE_LIMIT >> 20
        )));
    }
    std::fs::read(&path).map_err(|e| unreadable(e.to_string()))
}

/// How a structured file is read: StormForger's options of a structured data source.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LoadOptions {
    /// The column delimiter (default: `,`, or a tab for `.tsv`).
    pub delimiter: Option<u8>,
    /// Column names for a file without a header row.
    pub fields: Option<Vec<String>>,
}

impl LoadOptions {
    /// Reads `{delimiter, fields, first_row_headers}`.
    pub(crate) fn read(js: &JsVal, a: &Args) -> Result<Self, ScriptError> {
        let mut options = LoadOptions::default();
        let mut first_row_headers = None;
        for (key, v) in a.options(js, &["delimiter", "fields", "first_row_headers"])? {
            match key.as_str() {
                "delimiter" => {
                    let text = a.string(v, key)?;
                    match text.as_bytes() {
                        [b] if b.is_ascii() && *b != b'"' && *b != b'\n' && *b != b'\r' => {
                            options.delimiter = Some(*b)
                        }
                        _ => {
                            return Err(a.err(format_args!(
                                "`delimiter` must be one ASCII character (not a quote or line break), got {text:?}"
                            )))
                        }
                    }
                }
                "fields" => {
                    let names: Vec<String> = match v {
                        JsVal::Str(text) => text.split(',').map(|f| f.trim().to_string()).collect(),
                        JsVal::Arr(items) => items
                            .iter()
                            .map(|item| a.string(item, "fields").map(str::to_string))
                            .collect::<Result<_, _>>()?,
                        other => {
                            return Err(a.err(format_args!(
                                "`fields` must be a list of column names, got {}",
                                other.kind()
                            )))
                        }
                    };
                    if names.is_empty() || names.iter().any(String::is_empty) {
                        return Err(a.err("`fields` must name every column"));
                    }
                    options.fields = Some(names);
                }
                _ => first_row_headers = Some(a.bool(v, key)?),
            }
        }
        match (first_row_headers, &options.fields) {
            (Some(true), Some(_)) => Err(a.err(
                "`fields` and `first_row_headers: true` exclude each other (the columns are named once)",
            )),
            (Some(false), None) => Err(a.err(
                "`first_row_headers: false` needs `fields` to name the columns",
            )),
            _ => Ok(options),
        }
    }
}

/// Loads `name` (as the script wrote it) relative to `base_dir`.
pub(crate) fn load(
    name: &str,
    base_dir: &Path,
    options: &LoadOptions,
) -> Result<DataSource, DataError> {
    let path = base_dir.join(name);
    if !path.is_file() {
        return Err(DataError::Missing {
            name: name.to_string(),
            path: path.display().to_string(),
        });
    }
    let tsv = path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("tsv"));
    let unreadable = |e: csv::Error| DataError::Unreadable {
        name: name.to_string(),
        message: e.to_string(),
    };
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(options.delimiter.unwrap_or(if tsv { b'\t' } else { b',' }))
        .has_headers(options.fields.is_none())
        .flexible(true)
        .from_path(&path)
        .map_err(unreadable)?;
    let columns: Vec<String> = match &options.fields {
        Some(fields) => fields.clone(),
        None => reader
            .headers()
            .map_err(unreadable)?
            .iter()
            .map(str::to_string)
            .collect(),
    };
    if columns.is_empty() || columns.iter().all(String::is_empty) {
        return Err(DataError::NoHeader {
            name: name.to_string(),
        });
    }
    if let Some((_, column)) = columns
        .iter()
        .enumerate()
        .find(|(i, c)| columns[..*i].contains(c))
    {
        return Err(DataError::DuplicateColumn {
            name: name.to_string(),
            column: column.clone(),
        });
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(unreadable)?;
        if record.len() != columns.len() {
            return Err(DataError::FieldCount {
                name: name.to_string(),
                line: record.position().map_or(0, csv::Position::line),
                expected: columns.len(),
                found: record.len(),
            });
        }
        rows.push(record.iter().map(str::to_string).collect());
    }
    if rows.is_empty() {
        return Err(DataError::Empty {
            name: name.to_string(),
        });
    }
    Ok(DataSource {
        name: name.to_string(),
        columns,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, content: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("barrage-script-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), content).unwrap();
        dir
    }

    #[test]
    fn loads_csv_and_tsv() {
        let dir = scratch("a.csv", "id,name\n1,one\n2,\"t,wo\"\n");
        let source = load("a.csv", &dir, &LoadOptions::default()).unwrap();
        assert_eq!(source.columns, vec!["id", "name"]);
        assert_eq!(source.rows[1], vec!["2", "t,wo"]);
        let dir = scratch("b.TSV", "id\tname\n1\ta,b\n");
        assert_eq!(
            load("b.TSV", &dir, &LoadOptions::default()).unwrap().rows,
            vec![vec!["1", "a,b"]]
        );
    }

    #[test]
    fn delimiter_and_field_names_are_options() {
        let dir = scratch("semi.csv", "1;one\n2;two\n");
        let options = LoadOptions {
            delimiter: Some(b';'),
            fields: Some(vec!["id".into(), "name".into()]),
        };
        let source = load("semi.csv", &dir, &options).unwrap();
        assert_eq!(source.columns, vec!["id", "name"]);
        assert_eq!(source.rows, vec![vec!["1", "one"], vec!["2", "two"]]);
    }

    #[test]
    fn reports_bad_files() {
        let dir = scratch("short.csv", "id,name\n1,one\n2\n");
        assert_eq!(
            load("short.csv", &dir, &LoadOptions::default())
                .unwrap_err()
                .to_string(),
            "`short.csv:3`: the row has 1 field, but the header has 2"
        );
        let dir = scratch("empty.csv", "id,name\n");
        assert!(matches!(
            load("empty.csv", &dir, &LoadOptions::default()),
            Err(DataError::Empty { .. })
        ));
        let dir = scratch("nothing.csv", "");
        assert!(matches!(
            load("nothing.csv", &dir, &LoadOptions::default()),
            Err(DataError::NoHeader { .. })
        ));
        let dir = scratch("dup.csv", "id,id\n1,2\n");
        assert!(matches!(
            load("dup.csv", &dir, &LoadOptions::default()),
            Err(DataError::DuplicateColumn { .. })
        ));
        assert!(matches!(
            load("absent.csv", &dir, &LoadOptions::default()),
            Err(DataError::Missing { .. })
        ));
    }
}
