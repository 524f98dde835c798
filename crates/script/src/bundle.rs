//! A test case with imports runs as StormForger runs it: its files bundled into sloppy-mode
//! scripts, as StormForger's CLI bundles them with esbuild into one CommonJS script. Each file
//! becomes `__sf_define(path, function (exports) { ...its own text... })`, its top-level
//! `import`/`export` statements rewritten in place (oxc_parser finds them), its lines kept, so
//! errors still name the original file:line. A file with `import`/`export` must parse as an ES
//! module (strict-only syntax such as `with` is an error there, as esbuild's), but runs sloppy
//! (an undeclared assignment makes a global, as in StormForger); a file without them is a
//! plain script throughout.

use crate::modules::Modules;
use oxc_allocator::Allocator;
use oxc_ast::ast::{
    Declaration, ExportDefaultDeclaration, ExportDefaultDeclarationKind,
    ImportDeclarationSpecifier, ModuleDeclaration,
};
use oxc_parser::Parser;
use oxc_span::{GetSpan, SourceType, Span};
use rquickjs::{Ctx, Module};
use std::fmt::Write;

/// The module registry every bundled file defines itself into; `__sf_require` runs a file
/// once, its exports object made before it runs (as CommonJS, so a cycle sees it partly
/// filled).
const REGISTRY: &str = "(function (g) {\
  var defined = {}, cache = {};\
  g.__sf_define = function (name, body) { defined[name] = body; };\
  g.__sf_require = function (name) {\
    if (Object.prototype.hasOwnProperty.call(cache, name)) return cache[name];\
    var exports = {}; cache[name] = exports; defined[name](exports); return exports;\
  };\
  g.__sf_export = function (exports, name, get) {\
    Object.defineProperty(exports, name, { get: get, enumerable: true, configurable: true });\
  };\
  g.__sf_star = function (exports, from) {\
    Object.keys(from).forEach(function (k) {\
      if (k !== 'default' && !Object.prototype.hasOwnProperty.call(exports, k))\
        g.__sf_export(exports, k, function () { return from[k]; });\
    });\
  };\
})(globalThis);";

/// One file made a `__sf_define` script, and the files it imports (resolved paths).
pub(crate) struct Bundled {
    pub script: String,
    pub imports: Vec<String>,
    /// The file's text with its `import`/`export` statements rewritten, when it has them:
    /// an ES module, whose syntax is strict (checked by compiling this as a module).
    pub module_body: Option<String>,
}

/// A problem with a file of the test case, at a byte offset of its text.
pub(crate) struct Problem {
    pub offset: Option<u32>,
    pub message: String,
}

fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// `text` with every character but line breaks made a space: removed code that keeps lines.
fn blank(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
        .collect()
}

/// Rewrites `source` (the file `path`) into its `__sf_define` script; `resolve` maps an
/// import specifier to the imported file's path (or says why it cannot).
pub(crate) fn bundle_file(
    path: &str,
    source: &str,
    resolve: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Bundled, Problem> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, SourceType::mjs()).parse();
    let module_error = parsed.diagnostics.errors().next().map(|d| Problem {
        offset: d.labels.first().map(|l| l.span().start),
        message: format!("SyntaxError: {}", d.message),
    });
    let has_module_syntax = parsed
        .program
        .body
        .iter()
        .any(|s| s.as_module_declaration().is_some());
    if module_error.is_some() || parsed.panicked || !has_module_syntax {
        // No import/export (or not a module): a plain sloppy script, as esbuild's CommonJS.
        let script = Parser::new(&allocator, source, SourceType::cjs()).parse();
        let script_ok = !script.diagnostics.has_errors() && !script.panicked;
        if script_ok {
            return Ok(Bundled {
                script: format!(
                    "__sf_define({}, function (exports) {{{source}\n}});",
                    quoted(path)
                ),
                imports: Vec::new(),
                module_body: None,
            });
        }
        return Err(module_error.unwrap_or_else(|| Problem {
            offset: None,
            message: "the file does not parse".into(),
        }));
    }
    let mut rewrite = Rewrite {
        head: String::new(),
        edits: Vec::new(),
        imports: Vec::new(),
        resolve,
    };
    for statement in &parsed.program.body {
        if let Some(declaration) = statement.as_module_declaration() {
            rewrite.declaration(declaration)?;
        }
    }
    let Rewrite {
        head,
        edits,
        imports,
        ..
    } = rewrite;
    let mut body = String::with_capacity(source.len());
    let mut at = 0usize;
    for (span, replacement) in edits {
        let (start, end) = (span.start as usize, span.end as usize);
        body.push_str(&source[at..start]);
        body.push_str(&replacement);
        body.push_str(&blank(&source[start..end]));
        at = end;
    }
    body.push_str(&source[at..]);
    let script = format!(
        "__sf_define({}, function (exports) {{{head}{body}\n}});",
        quoted(path)
    );
    Ok(Bundled {
        script,
        imports,
        module_body: Some(body),
    })
}

/// The rewrite of one file's `import`/`export` statements: what runs first in its wrapper
/// (`head`: requires, import bindings, export getters), the edits to its text, the files
/// it imports.
struct Rewrite<'r> {
    head: String,
    edits: Vec<(Span, String)>,
    imports: Vec<String>,
    resolve: &'r mut dyn FnMut(&str) -> Result<String, String>,
}

impl Rewrite<'_> {
    /// Requires `specifier` first thing in the wrapper; the variable holding its exports.
    fn require(&mut self, specifier: &str, span: Span) -> Result<String, Problem> {
        let resolved = (self.resolve)(specifier).map_err(|message| Problem {
            offset: Some(span.start),
            message,
        })?;
        let var = format!("__sf_m{}", self.imports.len());
        let _ = write!(
            self.head,
            "var {var} = __sf_require({});",
            quoted(&resolved)
        );
        self.imports.push(resolved);
        Ok(var)
    }

    fn declaration(&mut self, declaration: &ModuleDeclaration<'_>) -> Result<(), Problem> {
        let span = declaration.span();
        match declaration {
            ModuleDeclaration::ImportDeclaration(import) => {
                let var = self.require(import.source.value.as_str(), span)?;
                for specifier in import.specifiers.iter().flatten() {
                    let (local, from) = match specifier {
                        ImportDeclarationSpecifier::ImportSpecifier(s) => (
                            s.local.name.as_str(),
                            format!("[{}]", quoted(&s.imported.name())),
                        ),
                        ImportDeclarationSpecifier::ImportDefaultSpecifier(s) => {
                            (s.local.name.as_str(), ".default".to_string())
                        }
                        ImportDeclarationSpecifier::ImportNamespaceSpecifier(s) => {
                            (s.local.name.as_str(), String::new())
                        }
                    };
                    let _ = write!(self.head, "var {local} = {var}{from};");
                }
                self.edits.push((span, String::new()));
            }
            ModuleDeclaration::ExportDeclaration(export) => {
                let names: Vec<String> = match &export.declaration {
                    Declaration::VariableDeclaration(v) => v
                        .declarations
                        .iter()
                        .flat_map(|d| d.id.get_binding_identifiers())
                        .map(|b| b.name.to_string())
                        .collect(),
                    Declaration::FunctionDeclaration(f) => {
                        f.name().map(|n| n.to_string()).into_iter().collect()
                    }
                    Declaration::ClassDeclaration(c) => {
                        c.id.as_ref()
                            .map(|b| b.name.to_string())
                            .into_iter()
                            .collect()
                    }
                    _ => return Err(typescript(span)),
                };
                for name in names {
                    let _ = write!(
                        self.head,
                        "__sf_export(exports, {}, function () {{ return {name}; }});",
                        quoted(&name)
                    );
                }
                let keyword = Span::new(span.start, export.declaration.span().start);
                self.edits.push((keyword, String::new()));
            }
            ModuleDeclaration::ExportNamedDeclaration(export) => {
                for s in &export.specifiers {
                    let _ = write!(
                        self.head,
                        "__sf_export(exports, {}, function () {{ return {}; }});",
                        quoted(&s.exported.name()),
                        s.local.name()
                    );
                }
                self.edits.push((span, String::new()));
            }
            ModuleDeclaration::ExportFromDeclaration(export) => {
                let var = self.require(export.source.value.as_str(), span)?;
                for s in &export.specifiers {
                    let _ = write!(
                        self.head,
                        "__sf_export(exports, {}, function () {{ return {var}[{}]; }});",
                        quoted(&s.exported.name()),
                        quoted(&s.local.name())
                    );
                }
                self.edits.push((span, String::new()));
            }
            ModuleDeclaration::ExportAllDeclaration(export) => {
                let var = self.require(export.source.value.as_str(), span)?;
                match &export.exported {
                    Some(name) => {
                        let _ = write!(
                            self.head,
                            "__sf_export(exports, {}, function () {{ return {var}; }});",
                            quoted(&name.name())
                        );
                    }
                    None => {
                        let _ = write!(self.head, "__sf_star(exports, {var});");
                    }
                }
                self.edits.push((span, String::new()));
            }
            ModuleDeclaration::ExportDefaultDeclaration(export) => self.export_default(export)?,
            _ => return Err(typescript(span)),
        }
        Ok(())
    }

    /// `export default`: a named function or class keeps its name (a getter exports it);
    /// anything else is assigned to `exports.default`.
    fn export_default(&mut self, export: &ExportDefaultDeclaration<'_>) -> Result<(), Problem> {
        let span = export.span;
        let body = export.declaration.span();
        let named = match &export.declaration {
            ExportDefaultDeclarationKind::FunctionDeclaration(f) => f.name().map(|n| n.to_string()),
            ExportDefaultDeclarationKind::ClassDeclaration(c) => {
                c.id.as_ref().map(|b| b.name.to_string())
            }
            ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => {
                return Err(typescript(span))
            }
            _ => None,
        };
        let keyword = Span::new(span.start, body.start);
        match named {
            Some(name) => {
                let _ = write!(
                    self.head,
                    "__sf_export(exports, \"default\", function () {{ return {name}; }});"
                );
                self.edits.push((keyword, String::new()));
            }
            None => self.edits.push((keyword, "exports.default = ".into())),
        }
        Ok(())
    }
}

fn typescript(span: Span) -> Problem {
    Problem {
        offset: Some(span.start),
        message: "TypeScript syntax is not supported in a test case".into(),
    }
}

/// The 1-based line and column of byte `offset` in `source`.
pub(crate) fn line_column(source: &str, offset: u32) -> (u32, u32) {
    let before = &source[..(offset as usize).min(source.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    (line, column)
}

/// Evaluates the test case `file` (`source`) and every file it imports, bundled, sloppy: each
/// file defined as a script named by its path, then the main file required.
pub(crate) fn evaluate(
    ctx: &Ctx<'_>,
    file: &str,
    source: &str,
    modules: &Modules,
) -> rquickjs::Result<()> {
    ctx.eval_with_options::<(), _>(REGISTRY, crate::runtime::script_options("<bundle>"))?;
    let mut pending = vec![(file.to_string(), source.to_string())];
    let mut seen = vec![file.to_string()];
    while let Some((path, text)) = pending.pop() {
        let mut resolve = |specifier: &str| modules.resolve(&path, specifier);
        let bundled = match bundle_file(&path, &text, &mut resolve) {
            Ok(bundled) => bundled,
            Err(problem) => {
                modules.fail_at(
                    &path,
                    problem.offset.map(|o| line_column(&text, o)),
                    problem.message,
                );
                return Err(rquickjs::Error::new_loading(&path));
            }
        };
        if let Some(body) = &bundled.module_body {
            // Strict-only syntax (`with`, octal literals, ...) in an ES module is an error, as
            // esbuild's: QuickJS compiles its body (no imports left) as a module, never run.
            Module::declare(ctx.clone(), path.as_str(), body.as_str())?;
        }
        for import in bundled.imports {
            if seen.contains(&import) {
                continue;
            }
            let text = match modules.read(&import) {
                Ok(text) => text,
                Err(()) => return Err(rquickjs::Error::new_loading(&import)),
            };
            seen.push(import.clone());
            pending.push((import, text));
        }
        ctx.eval_with_options::<(), _>(bundled.script, crate::runtime::script_options(&path))?;
    }
    let main = format!("__sf_require({});", quoted(file));
    ctx.eval_with_options::<(), _>(main, crate::runtime::script_options("<bundle>"))
}
