//! ES module imports of a test case (`import x from "./scenarios/x.js"`): relative paths
//! only, read from disk next to the importing file, each named by its path so that errors
//! inside it name it.

use crate::error::Location;
use crate::ScriptError;
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{Ctx, Error, Module};
use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

/// The largest module file read.
const MODULE_LIMIT: u64 = 16 << 20;

#[derive(Default)]
struct State {
    /// The main script, then every module in the order it was loaded.
    files: Vec<String>,
    /// The importing file of each resolved module, for errors.
    importers: Vec<(String, String, String)>,
    /// The first import problem, already located.
    problem: Option<ScriptError>,
}

/// Shared between the runtime's resolver and loader and the evaluation.
#[derive(Clone)]
pub(crate) struct Modules(Rc<RefCell<State>>);

impl Modules {
    pub(crate) fn new(main: &str) -> Self {
        Self(Rc::new(RefCell::new(State {
            files: vec![main.to_string()],
            ..State::default()
        })))
    }

    pub(crate) fn resolver(&self) -> ModuleResolver {
        ModuleResolver(self.clone())
    }

    pub(crate) fn loader(&self) -> ModuleLoader {
        ModuleLoader(self.clone())
    }

    /// The test case's files: the main script first.
    pub(crate) fn files(&self) -> Vec<String> {
        self.0.borrow().files.clone()
    }

    /// The import problem that stopped evaluation, if one did.
    pub(crate) fn problem(&self) -> Option<ScriptError> {
        self.0.borrow_mut().problem.take()
    }

    fn fail(&self, importer: &str, message: String) {
        self.fail_at(importer, None, message);
    }

    /// Records the first problem, at `file`'s line and column when known.
    pub(crate) fn fail_at(&self, file: &str, at: Option<(u32, u32)>, message: String) {
        let mut state = self.0.borrow_mut();
        if state.problem.is_none() {
            let location = Location {
                line: at.map(|(line, _)| line),
                column: at.map(|(_, column)| column),
                ..Location::file(file)
            };
            state.problem = Some(ScriptError::dsl(&location, message));
        }
    }

    /// The path of `name` imported from `base`: relative paths only, resolved next to the
    /// importing file (remembered, for errors while loading it).
    pub(crate) fn resolve(&self, base: &str, name: &str) -> Result<String, String> {
        if !(name.starts_with("./") || name.starts_with("../")) {
            return Err(format!("cannot import \"{name}\": a test case imports its own files by relative path (\"./...\" or \"../...\")"));
        }
        let dir = Path::new(base).parent().unwrap_or_else(|| Path::new(""));
        let resolved = normalize(&dir.join(name)).to_string_lossy().into_owned();
        self.0
            .borrow_mut()
            .importers
            .push((resolved.clone(), base.to_string(), name.to_string()));
        Ok(resolved)
    }

    /// The text of the module at `path` (resolved), counted among the test case's files; an
    /// unreadable or too large file is the recorded problem, named by its importer.
    pub(crate) fn read(&self, path: &str) -> Result<String, ()> {
        let (importer, written) = self
            .0
            .borrow()
            .importers
            .iter()
            .find(|(resolved, _, _)| resolved == path)
            .map(|(_, base, name)| (base.clone(), name.clone()))
            .unwrap_or_else(|| (path.to_string(), path.to_string()));
        let source = match std::fs::metadata(path) {
            Ok(meta) if meta.len() > MODULE_LIMIT => Err(format!(
                "{} bytes is more than a module may have",
                meta.len()
            )),
            Ok(_) => std::fs::read_to_string(path).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match source {
            Ok(source) => {
                self.0.borrow_mut().files.push(path.to_string());
                Ok(source)
            }
            Err(reason) => {
                self.fail(
                    &importer,
                    format!("cannot import \"{written}\" (looked for {path}): {reason}"),
                );
                Err(())
            }
        }
    }
}

/// `dir/a/../b/./c.js` → `dir/b/c.js`, without touching the file system (names stay as
/// the user wrote them, so errors read naturally).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

pub(crate) struct ModuleResolver(Modules);

impl Resolver for ModuleResolver {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        self.0.resolve(base, name).map_err(|message| {
            self.0.fail(base, message);
            Error::new_resolving(base, name)
        })
    }
}

pub(crate) struct ModuleLoader(Modules);

impl Loader for ModuleLoader {
    fn load<'js>(
        &mut self,
        ctx: &Ctx<'js>,
        path: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js>> {
        let source = self.0.read(path).map_err(|()| Error::new_loading(path))?;
        Module::declare(ctx.clone(), path, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalized_lexically() {
        assert_eq!(
            normalize(Path::new("dir/scenarios/../components/./a.js")),
            PathBuf::from("dir/components/a.js")
        );
        assert_eq!(
            normalize(Path::new("../x/../y.js")),
            PathBuf::from("../y.js")
        );
    }
}
