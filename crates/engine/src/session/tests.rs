//! Tests of the session compiler: program layout and jump targets of nested blocks, variable
//! resolution, and the compile errors that name what is wrong.

use super::program::{compile_session, Instr};
use super::request::RequestContext;
use super::*;
use barrage_plan::{
    Binding, Check, CompareOp, Condition, DataSource, Method, RequestStep, Session, Step, Value,
    Wait,
};

fn request(path: &str) -> Step {
    Step::Request(RequestStep::simple(Method::Get, path, 0))
}

fn condition() -> Condition {
    Condition {
        value: Value::LastStatus,
        op: CompareOp::Eq,
        expected: Value::Number { value: 200.0 },
    }
}

fn compile(steps: Vec<Step>) -> Result<CompiledSession, SessionProblem> {
    let data = vec![DataSource {
        name: "d.csv".into(),
        columns: vec!["id".into()],
        rows: vec![vec!["1".into()]],
    }];
    let cx = RequestContext {
        authority: "h",
        keep_alive: true,
        accept_gzip: true,
        headers: &[],
        max_redirects: 0,
        too_many_redirects_is_error: false,
        cookies: false,
        target_prefix: None,
    };
    let session = Session {
        name: "s".into(),
        weight: 1,
        steps,
    };
    compile_session(&session, &data, &cx, &mut Vec::new(), &[])
}

#[test]
fn nested_blocks_compile_to_flat_jumps() {
    let session = compile(vec![
        request("/a"),
        Step::Times {
            count: Value::Number { value: 3.0 },
            steps: vec![
                request("/b"),
                Step::If {
                    condition: condition(),
                    steps: vec![Step::Times {
                        count: Value::Var { name: "n".into() },
                        steps: vec![request("/c")],
                    }],
                },
            ],
        },
        Step::ForEver {
            steps: vec![
                Step::Wait(Wait::Fixed { seconds: 1.0 }),
                Step::If {
                    condition: condition(),
                    steps: vec![],
                },
            ],
        },
    ])
    .unwrap();
    use Instr::{IfNot, Jump, LoopNext, LoopStart, Request};
    assert_eq!(
        session.program,
        vec![
            Request(0),                     // 0
            LoopStart { count: 0, end: 8 }, // 1
            Request(1),                     // 2
            IfNot {
                condition: 0,
                target: 7
            }, // 3
            LoopStart { count: 1, end: 7 }, // 4
            Request(2),                     // 5
            LoopNext { body: 5 },           // 6
            LoopNext { body: 2 },           // 7
            Instr::ForEver,                 // 8
            Instr::Wait(binds::WaitSpec::Fixed(1.0)), // 9
            IfNot {
                condition: 1,
                target: 11
            }, // 10
            Jump(8),                        // 11
        ]
    );
    assert_eq!(session.requests.len(), 3);
    assert_eq!(session.numbers.len(), 2);
    assert_eq!(session.var_count, 1, "`n` is referenced, so it has an id");
}

#[test]
fn variables_get_ids_once_and_columns_resolve_to_indices() {
    let session = compile(vec![
        Step::Bind {
            var: "row".into(),
            binding: Binding::PickRow {
                source: 0,
                sequential: false,
            },
        },
        Step::Bind {
            var: "n".into(),
            binding: Binding::RandomNumber { min: 1, max: 2 },
        },
        Step::Times {
            count: Value::Var { name: "n".into() },
            steps: vec![request("/x?id=:n")],
        },
        Step::Check(Check {
            name: "c".into(),
            condition: Condition {
                value: Value::Column {
                    var: "row".into(),
                    column: "id".into(),
                },
                op: CompareOp::Ne,
                expected: Value::text(""),
            },
            fatal: false,
            keep_failed_values: false,
        }),
    ])
    .unwrap();
    assert_eq!(session.var_count, 2);
    assert_eq!(session.binds[0].var, 0);
    assert_eq!(session.binds[1].var, 1);
    assert_eq!(session.numbers[0], values::CValue::Var(1));
}

#[test]
fn unexecutable_sessions_are_refused_with_the_reason() {
    let spin = compile(vec![Step::ForEver {
        steps: vec![Step::Check(Check {
            name: "c".into(),
            condition: condition(),
            fatal: false,
            keep_failed_values: false,
        })],
    }]);
    assert!(matches!(spin, Err(SessionProblem::SpinningForEver)));
    let mixed = compile(vec![
        Step::Bind {
            var: "r".into(),
            binding: Binding::PickRow {
                source: 0,
                sequential: false,
            },
        },
        Step::Bind {
            var: "r".into(),
            binding: Binding::PickRow {
                source: 1,
                sequential: false,
            },
        },
    ]);
    assert!(matches!(
        mixed,
        Err(SessionProblem::UnknownDataSource { index: 1, .. })
    ));
}
