//! The definition as a plan: target, arrival phases or virtual users (read in `workload.rs`),
//! test options, sessions and weights, data sources, and the plan-time checks that variables
//! and columns exist.

use crate::data;
use crate::error::Location;
use crate::js::{Call, Record};
use crate::jsval::{Args, JsVal};
use crate::steps::{SessionBuilder, Tags};
use crate::ScriptError;
use barrage_plan::{
    limits, Credentials, DataSource, Header, Piece, Plan, Session, Stages, Target, TestOptions,
    Workload, PLAN_FORMAT_VERSION,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

const DEFAULT_GRACE_PERIOD: Duration = Duration::from_secs(30);
const TEST_OPTIONS: &[&str] = &[
    "timeout",
    "gracePeriod",
    "maxClients",
    "headers",
    "keepAlive",
    "compression",
    "threads",
    "seed",
    "maxBody",
    "maxResponseHeaders",
    // barrage's own: a cookie jar per client, and redirects followed per request.
    "cookies",
    "maxRedirects",
    "cluster",
    "dumptraffic",
    "exclude_tags",
];
/// The largest integer a JavaScript number holds exactly.
const MAX_SAFE: i64 = (1 << 53) - 1;
/// The most clients a definition may ask for.
const MAX_CLIENTS: i64 = limits::MAX_CLIENTS as i64;

#[derive(Default)]
struct Definition {
    target: Option<(Target, Location)>,
    phases: Option<(Vec<Piece>, Location)>,
    virtual_users: Option<(Workload, Location)>,
    options: TestOptions,
    max_clients: Option<u64>,
    /// The largest `max_users`/`max_clients` of the arrival phases.
    phase_max_clients: Option<u64>,
    grace_period: Option<Duration>,
    weights: Vec<(String, f64, Location)>,
    sessions: Vec<Session>,
    /// Each session's weight or probability as written (a real number; plan weights are
    /// whole numbers, scaled once every session is known).
    probabilities: Vec<f64>,
    /// Origins of requests written as absolute URLs.
    origins: Vec<(Target, Location)>,
    /// Targets added after the first (`definition.addTarget`): requests written as absolute
    /// URLs to them go there.
    other_targets: Vec<Target>,
    warnings: Vec<String>,
    metrics: crate::metrics::MetricDefs,
    /// `exclude_tags` (wherever in the script it is set) and where.
    exclude: Option<(Vec<String>, Location)>,
    /// The tag of every request `exclude_tags` left out.
    excluded: Vec<String>,
}

/// A compiled plan and the warnings its script earned (one line each).
#[derive(Debug)]
pub struct Compiled {
    pub plan: Plan,
    pub warnings: Vec<String>,
}

/// Builds the plan named `name` from what the script recorded.
pub(crate) fn build(
    record: &Record,
    name: &str,
    file: &str,
    base_dir: &Path,
) -> Result<Compiled, ScriptError> {
    let (data_sources, sources) = load_data(record, base_dir)?;
    for use_ in &record.columns {
        let source = &data_sources[sources[use_.source]];
        if source.column_index(&use_.column).is_none() {
            return Err(ScriptError::dsl(
                &use_.loc,
                format!(
                    "`row.get`: column `{}` is not in `{}` (its columns: {})",
                    use_.column,
                    source.name,
                    source.columns.join(", ")
                ),
            ));
        }
    }
    let mut def = Definition::default();
    let mut tags = Tags::default();
    def.options.basic_auth = authentication(record)?;
    def.exclude = exclude_tags(record)?;
    for call in &record.defs {
        let what = format!("`definition.{}`", call.verb);
        let a = Args {
            what: &what,
            loc: &call.loc,
        };
        match call.verb.as_str() {
            "setTarget" | "addTarget" => def.set_target(call, &a)?,
            "setTargets" => {
                a.arity(&call.args, 1, 1)?;
                let JsVal::Arr(urls) = &call.args[0] else {
                    return Err(a.err(format_args!(
                        "expected an array of target URLs, got {}",
                        call.args[0].kind()
                    )));
                };
                if urls.is_empty() {
                    return Err(a.err("give at least one target"));
                }
                for url in urls {
                    let one = Call {
                        args: vec![url.clone()],
                        ..call.clone()
                    };
                    def.set_target(&one, &a)?;
                }
            }
            "setAuthentication" => {}
            "setArrivalPhases" => def.set_phases(call, &a)?,
            "setVirtualUsers" => {
                a.arity(&call.args, 1, 1)?;
                if let Some((_, first)) = &def.virtual_users {
                    return Err(a.err(format_args!(
                        "the virtual users were already set at {first}"
                    )));
                }
                let workload = crate::workload::virtual_users(&call.args[0], &a)?;
                def.virtual_users = Some((workload, call.loc.clone()));
            }
            "setTestOptions" => def.set_options(call, &a)?,
            "setThresholds" => def.metrics.set_thresholds(call, &a)?,
            "metric" => def.metrics.declare(call, &a)?,
            "setSessionWeights" | "setSessionProbabilities" => {
                a.arity(&call.args, 1, 1)?;
                for (session, weight) in a.map(&call.args[0], "weights")? {
                    let weight = a.non_negative(weight, session)?;
                    def.weights
                        .push((session.clone(), weight, call.loc.clone()));
                }
            }
            "session" => {
                let index = def.sessions.len();
                let mut builder = SessionBuilder::new(&mut tags, &sources, base_dir);
                if let Some((exclude, _)) = &def.exclude {
                    builder.exclude = exclude.clone();
                }
                let (session, probability) = session(record, index, call, &a, &mut builder)?;
                def.origins.append(&mut builder.origins);
                def.warnings.append(&mut builder.warnings);
                def.excluded.append(&mut builder.excluded);
                if def.sessions.iter().any(|s| s.name == session.name) {
                    return Err(a.err(format_args!(
                        "there is already a session named `{}`",
                        session.name
                    )));
                }
                def.sessions.push(session);
                def.probabilities.push(probability);
            }
            other => return Err(a.err(format_args!("unknown definition verb `{other}`"))),
        }
    }
    def.into_plan(name, file, tags, data_sources, record)
}

/// Loads every data file once (by resolved path and options); returns the sources and, for
/// each load handle, its source index.
fn load_data(
    record: &Record,
    base_dir: &Path,
) -> Result<(Vec<DataSource>, Vec<usize>), ScriptError> {
    let mut data_sources = Vec::new();
    let mut loaded: Vec<(PathBuf, data::LoadOptions)> = Vec::new();
    let mut sources = Vec::new();
    for load in &record.loads {
        let a = Args {
            what: "`session.ds.loadStructured`",
            loc: &load.loc,
        };
        let options = data::LoadOptions::read(&load.options, &a)?;
        let joined = base_dir.join(&load.file);
        let path = joined.canonicalize().unwrap_or(joined);
        if let Some(i) = loaded.iter().position(|(p, o)| *p == path && *o == options) {
            sources.push(i);
            continue;
        }
        let source = data::load(&load.file, base_dir, &options)
            .map_err(|e| ScriptError::dsl(&load.loc, e.to_string()))?;
        loaded.push((path, options));
        data_sources.push(source);
        sources.push(data_sources.len() - 1);
    }
    Ok((data_sources, sources))
}

/// `definition.setAuthentication({username, password})`, wherever in the script it is: the
/// credentials every request sends (`Authorization: Basic`).
fn authentication(record: &Record) -> Result<Option<Credentials>, ScriptError> {
    let mut found: Option<(Credentials, &Location)> = None;
    for call in record.defs.iter().filter(|c| c.verb == "setAuthentication") {
        let a = Args {
            what: "`definition.setAuthentication`",
            loc: &call.loc,
        };
        a.arity(&call.args, 1, 1)?;
        if let Some((_, first)) = &found {
            return Err(a.err(format_args!("authentication was already set at {first}")));
        }
        let fields = a.options(&call.args[0], &["username", "password"])?;
        let field = |key: &str| -> Result<&str, ScriptError> {
            match fields.iter().find(|(k, _)| k == key) {
                Some((_, v)) => a.string(v, key),
                None => Err(a.err(format_args!("`{key}` is missing"))),
            }
        };
        let username = field("username")?;
        if username.contains(':') {
            return Err(a.err("`username` must not contain `:` (basic authentication joins user and password with it)"));
        }
        let credentials = Credentials {
            username: username.to_string(),
            password: field("password")?.to_string(),
        };
        found = Some((credentials, &call.loc));
    }
    Ok(found.map(|(credentials, _)| credentials))
}

/// StormForger's test option `exclude_tags: ["tag", ...]` (the last `setTestOptions` that
/// sets it, wherever in the script): requests with those tags are left out of the plan.
fn exclude_tags(record: &Record) -> Result<Option<(Vec<String>, Location)>, ScriptError> {
    let mut found = None;
    for call in record.defs.iter().filter(|c| c.verb == "setTestOptions") {
        let Some(JsVal::Obj(fields)) = call.args.first() else {
            continue;
        };
        let Some((_, value)) = fields.iter().find(|(k, _)| k == "exclude_tags") else {
            continue;
        };
        let a = Args {
            what: "`definition.setTestOptions`",
            loc: &call.loc,
        };
        let tags = match value {
            JsVal::Undefined => continue,
            JsVal::Arr(items) => items
                .iter()
                .map(|item| a.string(item, "exclude_tags").map(|t| t.trim().to_string()))
                .collect::<Result<Vec<_>, _>>()?,
            other => {
                return Err(a.err(format_args!(
                    "`exclude_tags` must be a list of request tags, got {}",
                    other.kind()
                )))
            }
        };
        if tags.iter().any(String::is_empty) {
            return Err(a.err("`exclude_tags`: a tag must not be empty"));
        }
        found = Some((tags, call.loc.clone()));
    }
    Ok(found)
}

fn session(
    record: &Record,
    index: usize,
    call: &Call,
    a: &Args,
    builder: &mut SessionBuilder,
) -> Result<(Session, f64), ScriptError> {
    a.arity(&call.args, 1, 2)?;
    let name = a.string(&call.args[0], "name")?.to_string();
    if name.is_empty() {
        return Err(a.err("the session name must not be empty"));
    }
    // StormForger's `session(name, probability, fn)`: a relative share (80 and 20, or 0.3 and
    // 0.7), made whole-number plan weights once every session is known.
    let probability = match call.args.get(1) {
        Some(weight) => a.non_negative(weight, "probability")?,
        None => 1.0,
    };
    let steps = builder.steps(&call.steps)?;
    if steps.is_empty() && !builder.excluded.is_empty() {
        return Err(a.err(format_args!(
            "session `{name}` has no steps left: `exclude_tags` leaves out all its requests"
        )));
    }
    if steps.is_empty() {
        return Err(a.err(format_args!("session `{name}` has no steps")));
    }
    let left_out = |var: &str| builder.excluded_vars.contains(var) && !builder.bound.contains(var);
    if let Some(use_) = record
        .get_vars
        .iter()
        .find(|u| u.session == index && left_out(&u.name))
    {
        return Err(ScriptError::dsl(
            &use_.loc,
            format!(
                "`session.getVar`: variable `{}` is extracted only by requests `exclude_tags` leaves out (session `{name}`)",
                use_.name
            ),
        ));
    }
    if let Some((var, loc)) = builder.uses.iter().find(|(v, _)| left_out(v)) {
        return Err(ScriptError::dsl(
            loc,
            format!("variable `{var}` is extracted only by requests `exclude_tags` leaves out (session `{name}`)"),
        ));
    }
    for use_ in record.get_vars.iter().filter(|u| u.session == index) {
        if !builder.bound.contains(&use_.name) {
            return Err(ScriptError::dsl(
                &use_.loc,
                format!(
                    "`session.getVar`: variable `{}` is never extracted or bound in session `{name}` (extract it from a response with the `extraction` option)",
                    use_.name
                ),
            ));
        }
    }
    if let Some((var, loc)) = builder
        .uses
        .iter()
        .find(|(v, _)| !builder.bound.contains(v))
    {
        let what = if var.starts_with("_row") {
            "a row picked in another session".to_string()
        } else if var.starts_with("_gen") {
            "a value generated in another session".to_string()
        } else {
            format!("variable `{var}`, which is never extracted or bound in this session,")
        };
        return Err(ScriptError::dsl(
            loc,
            format!("session `{name}` uses {what}; values are per session"),
        ));
    }
    Ok((
        Session {
            name,
            weight: 1,
            steps,
        },
        probability,
    ))
}

/// Real-number weights as whole numbers in the same proportions: scaled by the smallest power
/// of ten (up to 10^6) that makes them whole, within what a plan weight holds.
fn whole_weights(weights: &[f64]) -> Vec<u32> {
    let max = weights.iter().copied().fold(0.0, f64::max);
    let fits = |scale: f64| max * scale <= f64::from(u32::MAX);
    let whole = |scale: f64| {
        weights
            .iter()
            .all(|w| ((w * scale).round() - w * scale).abs() < 1e-6)
    };
    let mut scale = 1.0;
    while !whole(scale) && scale < 1e6 && fits(scale * 10.0) {
        scale *= 10.0;
    }
    if !fits(scale) {
        scale = f64::from(u32::MAX) / max;
    }
    weights.iter().map(|w| (w * scale).round() as u32).collect()
}

impl Definition {
    fn set_target(&mut self, call: &Call, a: &Args) -> Result<(), ScriptError> {
        a.arity(&call.args, 1, 1)?;
        let url = a.string(&call.args[0], "url")?;
        // StormForger accepts a bare host (`testapp.example.com`), meaning plain HTTP.
        let full = if url.contains("://") {
            url.to_string()
        } else {
            format!("http://{url}")
        };
        let (target, path) = Target::split_url(&full).map_err(|e| a.err(e))?;
        if let Some((first, _)) = &self.target {
            // StormForger tests may have several targets; requests name theirs by URL.
            if *first != target && !self.other_targets.contains(&target) {
                self.other_targets.push(target);
            }
            return Ok(());
        }
        if path != "/" {
            self.warnings.push(format!(
                "{}: warning: {}: the path `{path}` of the target is not put before request paths; requests go where their own paths (or absolute URLs) say",
                a.loc, a.what
            ));
        }
        if self.options.basic_auth.is_none() {
            // `http://user:pass@host` authenticates every request, as in StormForger.
            self.options.basic_auth = Credentials::from_url(&full);
        }
        self.target = Some((target, call.loc.clone()));
        Ok(())
    }

    fn set_phases(&mut self, call: &Call, a: &Args) -> Result<(), ScriptError> {
        a.arity(&call.args, 1, 1)?;
        if let Some((_, first)) = &self.phases {
            return Err(a.err(format_args!(
                "the arrival phases were already set at {first}"
            )));
        }
        let JsVal::Arr(items) = &call.args[0] else {
            return Err(a.err(format_args!(
                "expected an array of phases [{{duration, rate, rampTo}}], got {}",
                call.args[0].kind()
            )));
        };
        if items.is_empty() {
            return Err(a.err("at least one arrival phase is needed"));
        }
        let mut phases = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let what = format!("arrival phase {}", i + 1);
            let p = Args {
                what: &what,
                loc: a.loc,
            };
            if !matches!(item, JsVal::Obj(_)) {
                return Err(p.err(format_args!(
                    "expected an object {{duration, rate, rampTo}}, got {}",
                    item.kind()
                )));
            }
            let fields = p.options(
                item,
                &["duration", "rate", "rampTo", "max_users", "max_clients"],
            )?;
            for (key, v) in fields.iter().filter(|(k, _)| k.starts_with("max_")) {
                let limit = p.integer(v, key, 1, MAX_CLIENTS)? as u64;
                let previous = self.phase_max_clients.get_or_insert(limit);
                if *previous != limit {
                    self.warnings.push(format!(
                        "{}: warning: {}: `{key}` differs between phases; barrage limits clients once per test, to the largest",
                        p.loc, p.what
                    ));
                    *previous = (*previous).max(limit);
                }
            }
            let required = |key: &str| {
                let value = item.get(key);
                if value.is_missing() {
                    Err(p.err(format_args!("`{key}` is missing")))
                } else {
                    Ok(value)
                }
            };
            let duration = p.duration(required("duration")?, "duration")?;
            if duration.is_zero() {
                return Err(p.err("`duration` must be greater than zero"));
            }
            let rate = p.rate(required("rate")?, "rate")?;
            let ramp_to = match fields.iter().find(|(k, _)| k == "rampTo") {
                Some((_, v)) if !v.is_missing() => Some(p.rate(v, "rampTo")?),
                _ => None,
            };
            phases.push(Piece {
                duration,
                from: rate,
                to: ramp_to.unwrap_or(rate),
            });
        }
        self.phases = Some((phases, call.loc.clone()));
        Ok(())
    }

    fn set_options(&mut self, call: &Call, a: &Args) -> Result<(), ScriptError> {
        a.arity(&call.args, 1, 1)?;
        if !matches!(call.args[0], JsVal::Obj(_)) {
            return Err(a.err(format_args!(
                "expected an options object, got {}",
                call.args[0].kind()
            )));
        }
        let options = &mut self.options;
        let known: Vec<&str> = TEST_OPTIONS
            .iter()
            .chain(crate::protocol::PROTOCOL_OPTIONS)
            .copied()
            .collect();
        for (key, v) in a.options(&call.args[0], &known)? {
            match key.as_str() {
                key if crate::protocol::PROTOCOL_OPTIONS.contains(&key) => {
                    crate::protocol::apply(options, key, v, a)?
                }
                "timeout" => options.request_timeout = a.timeout(v, key)?,
                "gracePeriod" => self.grace_period = Some(a.duration(v, key)?),
                "maxClients" => self.max_clients = Some(a.integer(v, key, 1, MAX_CLIENTS)? as u64),
                "headers" => {
                    options.headers = Vec::new();
                    for (name, value) in a.map(v, key)? {
                        let value = a.string(value, &format!("headers.{name}")).map_err(|_| {
                            a.err(format_args!(
                                "default header `{name}` must be fixed text (per-client values go in a request's `headers`)"
                            ))
                        })?;
                        let header = Header {
                            name: name.clone(),
                            value: value.to_string(),
                        };
                        if let Some(problem) = header.problem() {
                            return Err(a.err(problem));
                        }
                        options.headers.push(header);
                    }
                }
                "keepAlive" => options.keep_alive = a.bool(v, key)?,
                "cookies" => options.cookies = a.bool(v, key)?,
                "maxRedirects" => options.max_redirects = a.integer(v, key, 0, 100)? as u32,
                "compression" => options.compression = a.bool(v, key)?,
                "threads" => {
                    options.threads = Some(a.integer(v, key, 1, limits::MAX_THREADS as i64)? as usize)
                }
                "maxBody" => {
                    options.limits.max_body = match v {
                        JsVal::Str(text) => barrage_plan::ResponseLimits::parse_max_body(text)
                            .map_err(|e| a.err(format_args!("`{key}`: {e}")))?,
                        other => {
                            let range = barrage_plan::ResponseLimits::MAX_BODY_RANGE;
                            a.integer(other, key, *range.start() as i64, *range.end() as i64)?
                                as u64
                        }
                    }
                }
                "maxResponseHeaders" => {
                    options.limits.max_headers = a.integer(v, key, 1, 65_536)? as u32;
                }
                // StormForger's cloud settings: a local run has no cluster to size and no
                // traffic dump; accepted so its test cases plan, and said so.
                "cluster" | "dumptraffic" => self.warnings.push(format!(
                    "{}: warning: {}: `{key}` is a StormForger cloud setting; barrage runs here and ignores it",
                    a.loc, a.what
                )),
                // Read once, before the sessions are built (see `exclude_tags`).
                "exclude_tags" => {}
                _ => options.seed = Some(a.integer(v, key, 0, MAX_SAFE)? as u64),
            }
        }
        Ok(())
    }

    /// Says in the plan (and one note line) how many request definitions `exclude_tags` left
    /// out; warns of a listed tag no request has, and of tags left out by their first words
    /// only (barrage's rule; StormForger documents a request "that has" the tag).
    fn record_exclusion(&mut self) {
        let Some((patterns, loc)) = self.exclude.take() else {
            return;
        };
        let what = "`definition.setTestOptions`";
        for pattern in &patterns {
            let matched: Vec<&String> = self
                .excluded
                .iter()
                .filter(|t| barrage_plan::tag_matches(t, pattern))
                .collect();
            if matched.is_empty() {
                self.warnings.push(format!(
                    "{loc}: warning: {what}: `exclude_tags`: no request is tagged `{pattern}`"
                ));
            }
            let mut by_words: Vec<&str> = matched
                .iter()
                .filter(|t| t.as_str() != pattern)
                .map(|t| t.as_str())
                .collect();
            by_words.sort_unstable();
            by_words.dedup();
            if !by_words.is_empty() {
                self.warnings.push(format!(
                    "{loc}: warning: {what}: `exclude_tags`: `{pattern}` also leaves out the tags that begin with it: {}",
                    by_words.join(", ")
                ));
            }
        }
        if !patterns.is_empty() {
            let n = self.excluded.len();
            self.warnings.push(format!(
                "{loc}: note: {what}: `exclude_tags` leaves out {n} request definition{} (tags: {})",
                if n == 1 { "" } else { "s" },
                patterns.join(", ")
            ));
            self.options.excluded = Some(barrage_plan::Exclusion {
                tags: patterns,
                requests: n,
            });
        }
    }

    fn into_plan(
        mut self,
        name: &str,
        file: &str,
        tags: Tags,
        data_sources: Vec<DataSource>,
        record: &Record,
    ) -> Result<Compiled, ScriptError> {
        self.record_exclusion();
        let whole = Location::file(file);
        for (session, weight, loc) in &self.weights {
            let Some(index) = self.sessions.iter().position(|s| s.name == *session) else {
                let names: Vec<&str> = self.sessions.iter().map(|s| s.name.as_str()).collect();
                return Err(ScriptError::dsl(
                    loc,
                    format!(
                        "`definition.setSessionWeights`: there is no session named `{session}` (sessions: {})",
                        names.join(", ")
                    ),
                ));
            };
            self.probabilities[index] = *weight;
        }
        for (session, weight) in self
            .sessions
            .iter_mut()
            .zip(whole_weights(&self.probabilities))
        {
            session.weight = weight;
        }
        let target = match (self.target, self.origins.first()) {
            (Some((target, _)), _) => target,
            // Requests written as absolute URLs name the target themselves.
            (None, Some((target, _))) => target.clone(),
            (None, None) => {
                return Err(ScriptError::dsl(
                    &whole,
                    "no target: call definition.setTarget(\"http://host:port\")",
                ))
            }
        };
        if let Some((other, loc)) = self
            .origins
            .iter()
            .find(|(o, _)| *o != target && !self.other_targets.contains(o))
        {
            return Err(ScriptError::dsl(
                loc,
                format!(
                    "this request goes to {}://{}, but the test's target is {}://{}; add it with definition.addTarget to send there",
                    other.scheme.as_str(), other.authority(), target.scheme.as_str(), target.authority()
                ),
            ));
        }
        // Requests to the test's target go there as to any target; the others keep theirs.
        for session in &mut self.sessions {
            barrage_plan::walk_steps_mut(&mut session.steps, &mut |step| {
                if let barrage_plan::Step::Request(request) = step {
                    if request.origin.as_ref() == Some(&target) {
                        request.origin = None;
                    }
                }
            });
        }
        let workload = match (self.phases, self.virtual_users) {
            (Some((_, phases_at)), Some((_, vus_at))) => {
                return Err(ScriptError::dsl(
                    &vus_at,
                    format!("`definition.setVirtualUsers`: the definition already has arrival phases (`definition.setArrivalPhases` at {phases_at}); use one workload model, arrival phases or virtual users"),
                ));
            }
            (Some((phases, _)), None) => Workload::open(
                Stages::new(phases),
                self.max_clients.or(self.phase_max_clients),
                self.grace_period.unwrap_or(DEFAULT_GRACE_PERIOD),
            ),
            (None, Some((workload, _))) => workload,
            (None, None) => {
                return Err(ScriptError::dsl(
                    &whole,
                    "no workload: call definition.setArrivalPhases([{duration, rate}]) (open model) or definition.setVirtualUsers({vus, duration}) (closed model)",
                ))
            }
        };
        if self.sessions.is_empty() {
            return Err(ScriptError::dsl(
                &whole,
                "no sessions: define at least one with definition.session(name, function (session) { ... })",
            ));
        }
        let metrics = std::mem::take(&mut self.metrics).finish(record, &tags.names)?;
        let plan = Plan {
            format_version: PLAN_FORMAT_VERSION,
            name: name.to_string(),
            target,
            options: self.options,
            workload,
            tags: tags.names,
            sessions: self.sessions,
            data_sources,
            metrics,
        };
        plan.validate()
            .map_err(|e| ScriptError::dsl(&whole, e.to_string()))?;
        Ok(Compiled {
            plan,
            warnings: self.warnings,
        })
    }
}
