//! Compiles a JavaScript test definition (StormForger-style DSL) into a [`barrage_plan::Plan`].
//!
//! The script is evaluated ONCE, at compile time, in QuickJS. The DSL (`definition`, the
//! `session` object, `session.ds`) only records what the script asks for; per-client values
//! (`session.getVar`, `row.get`, `session.ds.generate`, `session.lastHttpStatus`) become plan
//! [`barrage_plan::Value`] expressions, so no JavaScript runs while load is generated.
//!
//! ```js
//! definition.setTarget("http://127.0.0.1:8080");
//! definition.setArrivalPhases([{ duration: 10, rate: 100 }]);
//! definition.session("browse", function (session) {
//!   session.get("/items/:id", { params: { id: 7 }, tag: "item" });
//!   session.waitExp(0.5);
//! });
//! ```

mod bundle;
mod data;
mod definition;
mod error;
mod js;
mod jsval;
mod metrics;
mod modules;
mod nfr;
mod protocol;
mod request;
pub mod runtime;
mod steps;
mod value;
mod workload;

pub use definition::Compiled;
pub use error::{Location, ScriptError};
pub use js::ScriptInputs;
pub use nfr::{load_nfr, parse_nfr, NfrError, Requirements};

use barrage_plan::Plan;
use std::path::Path;
use std::time::Duration;

/// How long the script may run at compile time before it is stopped (an endless loop).
pub const EVALUATION_LIMIT: Duration = Duration::from_secs(5);

/// Reads and compiles the script at `path`; data files are looked up next to it, and the
/// plan is named after the file stem.
pub fn compile_file(path: &Path) -> Result<Plan, ScriptError> {
    compile_file_with(path, &ScriptInputs::default()).map(|compiled| compiled.plan)
}

/// [`compile_file`] with the command line's inputs (`--define`), keeping the warnings.
pub fn compile_file_with(path: &Path, inputs: &ScriptInputs) -> Result<Compiled, ScriptError> {
    let source = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let base_dir = path.parent().unwrap_or_else(|| Path::new("."));
    compile_with(
        &source,
        &path.display().to_string(),
        base_dir,
        EVALUATION_LIMIT,
        inputs,
    )
}

/// Compiles `source`, named `file_name` in error locations (its stem names the plan); data
/// files are looked up relative to `base_dir`.
pub fn compile_source(source: &str, file_name: &str, base_dir: &Path) -> Result<Plan, ScriptError> {
    compile_with_limit(source, file_name, base_dir, EVALUATION_LIMIT)
}

fn compile_with_limit(
    source: &str,
    file_name: &str,
    base_dir: &Path,
    limit: Duration,
) -> Result<Plan, ScriptError> {
    compile_with(source, file_name, base_dir, limit, &ScriptInputs::default())
        .map(|compiled| compiled.plan)
}

fn compile_with(
    source: &str,
    file_name: &str,
    base_dir: &Path,
    limit: Duration,
    inputs: &ScriptInputs,
) -> Result<Compiled, ScriptError> {
    let record = js::evaluate_with(source, file_name, limit, inputs)?;
    let name = Path::new(file_name).file_stem().map_or_else(
        || file_name.to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    definition::build(&record, &name, file_name, base_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(source: &str) -> Result<Plan, ScriptError> {
        compile_with_limit(source, "dir/t.js", Path::new("."), Duration::from_secs(5))
    }

    const HEAD: &str = "definition.setTarget('http://localhost:8080');\ndefinition.setArrivalPhases([{duration: 1, rate: 1}]);\n";

    #[test]
    fn a_minimal_definition_compiles() {
        let plan = compile(&format!(
            "{HEAD}definition.session('s', function (session) {{ session.get('/x'); }});"
        ))
        .unwrap();
        assert_eq!(plan.name, "t");
        assert_eq!(plan.tags, vec!["GET /x"]);
        assert_eq!(plan.sessions[0].weight, 1);
    }

    #[test]
    fn per_client_values_in_paths_become_placeholders() {
        let plan = compile(&format!(
            "{HEAD}definition.session('s', function (session) {{\n  var n = session.ds.generate('uuid');\n  session.get('/u/' + n + '/x');\n}});"
        ))
        .unwrap();
        let json = serde_json::to_string(&plan.sessions[0].steps[1]).unwrap();
        assert!(json.contains(r#""path":"/u/:_p1/x""#), "{json}");
        assert_eq!(plan.tags, vec!["GET /u/:_gen1/x"]);
    }

    #[test]
    fn missing_pieces_are_reported_for_the_file() {
        let e = compile("definition.setArrivalPhases([{duration: 1, rate: 1}]);").unwrap_err();
        assert!(e.to_string().starts_with("dir/t.js: no target"), "{e}");
        let e = compile("definition.setTarget('http://localhost:8080');").unwrap_err();
        assert!(e.to_string().contains("definition.setVirtualUsers"), "{e}");
        let e = compile(HEAD).unwrap_err();
        assert!(e.to_string().starts_with("dir/t.js: no sessions"), "{e}");
    }
}
