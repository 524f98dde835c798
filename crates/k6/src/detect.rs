//! Whether a script is a k6 script, and its imports: every `import ... from "k6..."` is
//! checked at start, so an unsupported module fails naming file:line before any load.

use regex::Regex;
use std::sync::OnceLock;

/// The k6 modules this front end implements.
pub const SUPPORTED_MODULES: &[&str] = &[
    "k6",
    "k6/http",
    "k6/metrics",
    "k6/data",
    "k6/execution",
    "k6/encoding",
    "k6/crypto",
];

fn import_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        Regex::new(r#"(?m)^\s*import\s+(?:[^'";]*?\s+from\s+)?["']([^"']+)["']"#)
            .expect("valid pattern")
    })
}

/// An ES module importing `k6` or `k6/...`, or one with `export default function` that
/// does not use the StormForger DSL (`definition.`: its ES-module test cases export default
/// functions too).
pub fn is_k6_script(source: &str) -> bool {
    imports(source)
        .iter()
        .any(|(_, module)| module == "k6" || module.starts_with("k6/"))
        || (source.contains("export default function") && !source.contains("definition."))
}

/// Every import of `source`: its 1-based line and the module named.
pub fn imports(source: &str) -> Vec<(u32, String)> {
    import_pattern()
        .captures_iter(source)
        .filter_map(|c| {
            let module = c.get(1)?;
            let whole = c.get(0)?;
            // The line of the `import` keyword (the pattern's leading `\s*` spans newlines).
            let keyword = whole.start() + whole.as_str().find("import")?;
            let line = source[..keyword].matches('\n').count() as u32 + 1;
            Some((line, module.as_str().to_string()))
        })
        .collect()
}

/// Whether `source` may use typed arrays (`ArrayBuffer`, `Uint8Array`, ..., `DataView`,
/// binary `open()` or responses): a VU's context then gets them (they cost each VU 18 KiB of
/// QuickJS heap, so scripts that never name them go without).
pub fn uses_typed_arrays(source: &str) -> bool {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN
        .get_or_init(|| {
            Regex::new(
                r#"ArrayBuffer|DataView|Atomics|(?:Uint|Int|Float|BigInt|BigUint)(?:8|16|32|64)(?:Clamped)?Array|["']b["']|binary|k6/encoding|k6/crypto"#,
            )
            .expect("valid pattern")
        })
        .is_match(source)
}

/// The first import of a module this front end does not implement: line and module.
pub fn unsupported_import(source: &str) -> Option<(u32, String)> {
    imports(source)
        .into_iter()
        .find(|(_, module)| !SUPPORTED_MODULES.contains(&module.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn k6_scripts_are_told_from_dsl_definitions() {
        assert!(is_k6_script("import http from 'k6/http';\n"));
        assert!(is_k6_script("import { sleep } from \"k6\";"));
        assert!(is_k6_script("export default function () {}"));
        assert!(!is_k6_script("definition.setTarget('http://x');"));
        assert!(!is_k6_script("import x from 'k6extra';"));
        assert!(!is_k6_script(
            "export default function s(c) { definition.session('s', function () {}); }"
        ));
    }

    #[test]
    fn unsupported_imports_are_named_with_their_line() {
        let source = "import http from 'k6/http';\n\nimport { browser } from 'k6/browser';\n";
        assert_eq!(
            unsupported_import(source),
            Some((3, "k6/browser".to_string()))
        );
        assert_eq!(
            imports("import 'k6';\nimport {a,\n b} from \"k6/metrics\";"),
            vec![(1, "k6".into()), (2, "k6/metrics".into())]
        );
        assert_eq!(unsupported_import("import http from 'k6/http';"), None);
    }

    #[test]
    fn typed_arrays_are_given_to_scripts_that_name_them() {
        assert!(uses_typed_arrays("const b = open('./f.bin', 'b');"));
        assert!(uses_typed_arrays("new Uint8Array(4)"));
        assert!(uses_typed_arrays("x instanceof ArrayBuffer"));
        assert!(uses_typed_arrays("{ responseType: 'binary' }"));
        assert!(!uses_typed_arrays(
            "http.get(`${BASE}/ping`); check(r, {a: 1});"
        ));
    }
}
