//! Compiles a session's nested steps, once, into a flat instruction list with jumps; resolves
//! variable names to ids ([`Scope`]) so nothing hashes a name while load runs.
//!
//! Layout of the blocks (`pc` = index of the next instruction):
//! - `times n { body }` → `LoopStart{count, end}` · body · `LoopNext{body}` · *end*:
//!   `LoopStart` evaluates `n` once and jumps to *end* when it is 0, else pushes `n` on the
//!   client's loop stack; `LoopNext` decrements the top and jumps back while it is non-zero.
//! - `if c { body }` → `IfNot{condition, target}` · body · *target*.
//! - `for_ever { body }` → *start*: `ForEver` · body · `Jump(start)`: `ForEver` marks the
//!   client as running until the test ends, and ends the session once the test has (a
//!   session that cannot finish never holds the run through a grace period).

use super::binds::{CompiledBind, WaitSpec};
use super::checks::{CompiledCheck, CompiledCondition};
use super::custom::CompiledSample;
use super::extract::Extractions;
use super::request::{CompiledRequest, RequestContext};
use super::values::{CValue, VarId};
use super::{CompiledSession, SessionProblem};
use barrage_plan::{walk_steps, Binding, DataSource, MetricDecl, Session, Step, Value};

/// One instruction of a compiled session; operands index the session's tables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Instr {
    Request(u32),
    Wait(WaitSpec),
    /// A think time of a per-client number of seconds (index into the session's numbers).
    WaitFor(u32),
    Check(u32),
    Bind(u32),
    LoopStart {
        count: u32,
        end: u32,
    },
    LoopNext {
        body: u32,
    },
    IfNot {
        condition: u32,
        target: u32,
    },
    Jump(u32),
    /// The head of a `for_ever` loop (see the module docs).
    ForEver,
    /// Adds a sample to a custom metric (index into the session's samples).
    Add(u32),
}

/// The variables of one session: names to ids, and which data source a row variable holds.
#[derive(Debug)]
pub(crate) struct Scope<'a> {
    data: &'a [DataSource],
    names: Vec<String>,
    /// Per variable: the data source its `pick_row` bindings pick from.
    rows: Vec<Option<usize>>,
    /// Per variable: whether a step binds or extracts it (a path `:name` may then mean it).
    bound: Vec<bool>,
}

impl<'a> Scope<'a> {
    /// Declares every variable `steps` bind or extract.
    pub(crate) fn new(steps: &[Step], data: &'a [DataSource]) -> Result<Self, SessionProblem> {
        let mut scope = Scope {
            data,
            names: Vec::new(),
            rows: Vec::new(),
            bound: Vec::new(),
        };
        let mut problem = None;
        walk_steps(steps, &mut |step| {
            let result = match step {
                Step::Bind { var, binding } => scope.bind(var, binding),
                Step::Request(request) => {
                    for extraction in &request.extraction {
                        let id = scope.var(&extraction.var);
                        scope.bound[id as usize] = true;
                    }
                    Ok(())
                }
                _ => Ok(()),
            };
            if let Err(e) = result {
                problem.get_or_insert(e);
            }
        });
        match problem {
            Some(problem) => Err(problem),
            None => Ok(scope),
        }
    }

    fn bind(&mut self, var: &str, binding: &Binding) -> Result<(), SessionProblem> {
        let id = self.var(var) as usize;
        self.bound[id] = true;
        if let Binding::PickRow { source, .. } = binding {
            if *source >= self.data.len() {
                return Err(SessionProblem::UnknownDataSource {
                    var: var.to_string(),
                    index: *source,
                });
            }
            match self.rows[id] {
                Some(first) if first != *source => {
                    return Err(SessionProblem::MixedSources {
                        var: var.to_string(),
                        first,
                        second: *source,
                    })
                }
                _ => self.rows[id] = Some(*source),
            }
        }
        Ok(())
    }

    /// The id of variable `name`, declared on first use (an unbound variable reads as "").
    pub(crate) fn var(&mut self, name: &str) -> VarId {
        if let Some(id) = self.names.iter().position(|n| n == name) {
            return id as VarId;
        }
        self.names.push(name.to_string());
        self.rows.push(None);
        self.bound.push(false);
        (self.names.len() - 1) as VarId
    }

    /// The id of `name` if some step binds or extracts it.
    pub(crate) fn bound(&self, name: &str) -> Option<VarId> {
        self.names
            .iter()
            .position(|n| n == name)
            .filter(|&id| self.bound[id])
            .map(|id| id as VarId)
    }

    /// Column `column` of the rows `var` picks, resolved to indices.
    pub(crate) fn column(&mut self, var: &str, column: &str) -> Result<CValue, SessionProblem> {
        let id = self.var(var);
        let Some(source) = self.rows[id as usize] else {
            return Err(SessionProblem::NotARow {
                var: var.to_string(),
                column: column.to_string(),
            });
        };
        let data = &self.data[source];
        let Some(index) = data.column_index(column) else {
            return Err(SessionProblem::UnknownColumn {
                data_source: data.name.clone(),
                column: column.to_string(),
                columns: data.columns.join(", "),
            });
        };
        Ok(CValue::Column {
            var: id,
            source,
            column: index,
        })
    }

    pub(crate) fn var_count(&self) -> usize {
        self.names.len()
    }
}

/// Whether `steps` can ever await (a request or a wait, at any depth).
fn awaits(steps: &[Step]) -> bool {
    let mut found = false;
    walk_steps(steps, &mut |step| {
        found |= matches!(step, Step::Request(_) | Step::Wait(_));
    });
    found
}

/// Builds one session's program and tables.
pub(crate) struct Compiler<'a, 'c> {
    pub scope: Scope<'a>,
    pub request_cx: &'c RequestContext<'c>,
    /// The plan's check list, `(name, fatal)`: checks are counted by their index in it.
    pub plan_checks: &'c mut Vec<(String, bool)>,
    /// The plan's custom metrics: samples refer to them by index.
    pub custom: &'c [MetricDecl],
    pub out: CompiledSession,
}

impl Compiler<'_, '_> {
    fn pc(&self) -> u32 {
        self.out.program.len() as u32
    }

    fn emit(&mut self, instr: Instr) -> usize {
        self.out.program.push(instr);
        self.out.program.len() - 1
    }

    fn condition(&mut self, condition: &barrage_plan::Condition) -> Result<u32, SessionProblem> {
        let compiled = CompiledCondition::compile(condition, &mut self.scope)?;
        self.out.conditions.push(compiled);
        Ok((self.out.conditions.len() - 1) as u32)
    }

    /// Compiles a number read at run time into the session's numbers; its index.
    fn number(&mut self, value: &Value) -> Result<u32, SessionProblem> {
        let value = CValue::compile(value, &mut self.scope)?;
        self.out.numbers.push(value);
        Ok((self.out.numbers.len() - 1) as u32)
    }

    /// Compiles `steps` in order, appending to the program.
    pub(crate) fn block(&mut self, steps: &[Step]) -> Result<(), SessionProblem> {
        for step in steps {
            match step {
                Step::Request(request) => {
                    let compiled = CompiledRequest::compile(
                        request,
                        self.request_cx,
                        Extractions::compile(&request.extraction, &mut self.scope)?,
                        &mut self.scope,
                    )?;
                    self.out.requests.push(compiled);
                    self.emit(Instr::Request((self.out.requests.len() - 1) as u32));
                }
                Step::Wait(wait) => {
                    let instr = match WaitSpec::planned(wait) {
                        Ok(spec) => Instr::Wait(spec),
                        Err(seconds) => Instr::WaitFor(self.number(seconds)?),
                    };
                    self.emit(instr);
                }
                Step::Check(check) => {
                    let condition = self.condition(&check.condition)?;
                    // Checks of one name (and kind) count together, as k6 counts them: a
                    // replay's "GET /x: status 200 as recorded" adds up over its requests.
                    let key = (check.name.clone(), check.fatal);
                    let metric = match self.plan_checks.iter().position(|c| *c == key) {
                        Some(metric) => metric,
                        None => {
                            self.plan_checks.push(key);
                            self.plan_checks.len() - 1
                        }
                    };
                    self.out.checks.push(CompiledCheck {
                        condition,
                        metric,
                        fatal: check.fatal,
                        keep_failed_values: check.keep_failed_values,
                    });
                    self.emit(Instr::Check((self.out.checks.len() - 1) as u32));
                }
                Step::Bind { var, binding } => {
                    let var = self.scope.var(var);
                    let bind = match binding {
                        barrage_plan::Binding::Jwt(resign) => CompiledBind::jwt(
                            var,
                            binding,
                            super::jwt::CompiledJwt::compile(resign, &mut self.scope)?,
                        ),
                        other => CompiledBind::new(var, other),
                    };
                    self.out.binds.push(bind);
                    self.emit(Instr::Bind((self.out.binds.len() - 1) as u32));
                }
                Step::Times { count, steps } => {
                    let count = self.number(count)?;
                    let start = self.emit(Instr::LoopStart { count, end: 0 });
                    let body = self.pc();
                    self.block(steps)?;
                    self.emit(Instr::LoopNext { body });
                    let end = self.pc();
                    self.out.program[start] = Instr::LoopStart { count, end };
                }
                Step::If { condition, steps } => {
                    let condition = self.condition(condition)?;
                    let at = self.emit(Instr::IfNot {
                        condition,
                        target: 0,
                    });
                    self.block(steps)?;
                    let target = self.pc();
                    self.out.program[at] = Instr::IfNot { condition, target };
                }
                Step::Add(sample) => {
                    let conditions = &mut self.out.conditions;
                    let compiled = CompiledSample::compile(
                        sample,
                        self.custom,
                        &mut self.scope,
                        |c, scope| {
                            conditions.push(CompiledCondition::compile(c, scope)?);
                            Ok((conditions.len() - 1) as u32)
                        },
                    )?;
                    self.out.samples.push(compiled);
                    self.emit(Instr::Add((self.out.samples.len() - 1) as u32));
                }
                Step::ForEver { steps } => {
                    if !awaits(steps) {
                        return Err(SessionProblem::SpinningForEver);
                    }
                    let start = self.emit(Instr::ForEver) as u32;
                    self.block(steps)?;
                    self.emit(Instr::Jump(start));
                }
            }
        }
        Ok(())
    }
}

/// Compiles `session` (see the module docs for the program layout).
pub(crate) fn compile_session(
    session: &Session,
    data: &[DataSource],
    request_cx: &RequestContext<'_>,
    plan_checks: &mut Vec<(String, bool)>,
    custom: &[MetricDecl],
) -> Result<CompiledSession, SessionProblem> {
    let scope = Scope::new(&session.steps, data)?;
    let mut compiler = Compiler {
        scope,
        request_cx,
        plan_checks,
        custom,
        out: CompiledSession::default(),
    };
    compiler.block(&session.steps)?;
    let mut out = compiler.out;
    out.var_count = compiler.scope.var_count();
    out.endless = out.program.contains(&Instr::ForEver);
    Ok(out)
}
