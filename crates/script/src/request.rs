//! Request steps: options, paths and their `:name` placeholders (checked to resolve),
//! headers, bodies, extraction; and the variables any step reads.

use crate::js::Call;
use crate::jsval::{Args, JsVal};
use crate::steps::SessionBuilder;
use crate::value::{self, parts, Part};
use crate::ScriptError;
use barrage_plan::{
    excluded_by, Body, BodyCoding, Extraction, Extractor, Header, HeaderField, JsonTemplate,
    Method, RequestStep, Step, Target, Value,
};

const REQUEST_OPTIONS: &[&str] = &[
    "tag",
    "params",
    "headers",
    "payload",
    "gzip",
    "compress",
    "extraction",
    "abort_on_error",
    "payload_from_file",
];

/// Options StormForger test cases use whose meaning no public source gives (checked:
/// stormforger/cli's source and test data, its gulp-template and example repositories, and
/// public pages): accepted, with one warning per option per test case, and ignored.
pub(crate) fn warn_unknown_meaning(warnings: &mut Vec<String>, a: &Args, option: &str) {
    let marker = format!("`{option}` is accepted and ignored");
    if warnings.iter().any(|w| w.contains(&marker)) {
        return;
    }
    warnings.push(format!(
        "{}: warning: {}: {marker}: barrage knows of no public description of what StormForger does with it",
        a.loc, a.what
    ));
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether `name` can be a variable (and so a placeholder) name.
pub(crate) fn is_var_name(name: &str) -> bool {
    name.starts_with(is_name_start) && name.chars().all(is_name_char)
}

/// Names generated for `pickFrom`/`generate` bindings, which scripts may not extract into.
fn is_reserved(name: &str) -> bool {
    ["_row", "_gen"].iter().any(|prefix| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The `:name` placeholders of a path, in order: `:` then a letter or `_`, then letters,
/// digits and `_`.
pub(crate) fn placeholders(path: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = path;
    while let Some(at) = rest.find(':') {
        let after = &rest[at + 1..];
        let end = after.find(|c| !is_name_char(c)).unwrap_or(after.len());
        if after.starts_with(is_name_start) {
            found.push(&after[..end]);
            rest = &after[end..];
        } else {
            rest = after;
        }
    }
    found
}

impl SessionBuilder<'_> {
    /// The request `call` describes, or `None` when `exclude_tags` leaves it out.
    pub(crate) fn request(
        &mut self,
        method: Method,
        call: &Call,
        a: &Args,
    ) -> Result<Option<RequestStep>, ScriptError> {
        a.arity(&call.args, 1, 2)?;
        let none = JsVal::Undefined;
        let mut request = RequestStep::simple(method, "", 0);
        let mut tag = None;
        let mut accept_gzip = false;
        if let Some(JsVal::Obj(fields)) = call.args.get(1) {
            if fields.iter().any(|(k, _)| k == "exclude_tags") {
                return Err(a.err(
                    "`exclude_tags` is a test option, not a request's: definition.setTestOptions({ exclude_tags: [\"tag\"] }) leaves out the requests with those tags",
                ));
            }
        }
        let given = a.options(call.args.get(1).unwrap_or(&none), REQUEST_OPTIONS)?;
        if given.iter().any(|(k, _)| k == "payload")
            && given.iter().any(|(k, _)| k == "payload_from_file")
        {
            return Err(a.err("give either `payload` or `payload_from_file`, not both"));
        }
        for (key, v) in given {
            match key.as_str() {
                "tag" => {
                    let text = a.string(v, "tag")?;
                    if text.is_empty() {
                        return Err(a.err("`tag` must not be empty"));
                    }
                    tag = Some(text.to_string());
                }
                "params" => request.params = value::pairs(v, a, "params")?,
                "headers" => request.headers = headers(v, a)?,
                "payload" => request.body = Some(self.payload(v, a)?),
                "payload_from_file" => {
                    let file = a.string(v, "payload_from_file")?;
                    let bytes = crate::data::read_raw(file, self.base_dir).map_err(|e| a.err(e))?;
                    request.body = Some(Body::Raw { bytes });
                }
                // StormForger's `gzip: true` asks for a gzip-compressed response; compressing the
                // request body is barrage's `compress: "gzip"`.
                "gzip" => accept_gzip = a.bool(v, "gzip")?,
                "compress" => {
                    let text = a.string(v, "compress")?;
                    request.compress = Some(BodyCoding::parse(text).ok_or_else(|| {
                        a.err(format_args!(
                            "`compress` must be \"gzip\", \"deflate\" or \"br\", got \"{text}\""
                        ))
                    })?);
                }
                "extraction" => request.extraction = extraction(v, a)?,
                _ => request.abort_on_error = a.bool(v, "abort_on_error")?,
            }
        }
        let asks_encoding = request
            .headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case("accept-encoding"));
        if accept_gzip && !asks_encoding {
            request.headers.push(HeaderField {
                name: "Accept-Encoding".into(),
                value: Value::text("gzip"),
            });
        }
        if request.compress.is_some() && request.body.is_none() {
            return Err(a.err("`compress` needs a `payload` to compress"));
        }
        // Left out before its URL is read: an excluded request may go to another origin
        // (a CDN asset), which the test never contacts.
        if let Some(tag) = tag.as_ref().filter(|t| excluded_by(t, &self.exclude)) {
            self.excluded.push(tag.clone());
            self.excluded_vars
                .extend(request.extraction.iter().map(|e| e.var.clone()));
            return Ok(None);
        }
        let path_text = match &call.args[0] {
            JsVal::Str(text) => text,
            other => return Err(a.err(format_args!("the path must be text, got {}", other.kind()))),
        };
        let (path_text, origin) = self.strip_origin(path_text, a)?;
        // Kept only when it is another target than the test's (decided once they are known).
        request.origin = origin;
        let display = self.path(&path_text, &mut request, a)?;
        if !request.path.starts_with('/') {
            return Err(a.err(format_args!(
                "the path `{display}` must start with `/` (the target is set with definition.setTarget)"
            )));
        }
        self.check_placeholders(&mut request, a)?;
        request.tag = self
            .tags
            .intern(&tag.unwrap_or_else(|| format!("{} {display}", method.as_str())));
        for extraction in &request.extraction {
            self.bound.insert(extraction.var.clone());
        }
        Ok(Some(request))
    }

    /// Sets the request's path; per-client values in it become generated `:_pN` placeholders
    /// with params. Returns the path as shown in the default tag (`:var` for each value).
    fn path(&self, text: &str, request: &mut RequestStep, a: &Args) -> Result<String, ScriptError> {
        let pieces = parts(text);
        let mut display = String::new();
        for (i, piece) in pieces.iter().enumerate() {
            match piece {
                Part::Text(text) => {
                    request.path.push_str(text);
                    display.push_str(text);
                }
                Part::Value(value) => {
                    if let Some(Part::Text(next)) = pieces.get(i + 1) {
                        if next.starts_with(is_name_char) {
                            return Err(a.err(format_args!(
                                "a per-client value in the path is followed by `{}`, which would continue its placeholder name; use a `:name` placeholder with `params` instead",
                                next.chars().next().unwrap_or_default()
                            )));
                        }
                    }
                    let name = (1..)
                        .map(|n| format!("_p{n}"))
                        .find(|name| {
                            request.params.iter().all(|(p, _)| p != name)
                                && !placeholders(text).contains(&name.as_str())
                        })
                        .expect("an unused name exists");
                    request.path.push(':');
                    request.path.push_str(&name);
                    request.params.push((name, value.clone()));
                    display.push(':');
                    display.push_str(&match value {
                        Value::Var { name } => name.clone(),
                        Value::Column { column, .. } => column.clone(),
                        _ => "status".to_string(),
                    });
                }
                Part::Handle(_) | Part::Row(_) => return Err(a.err(
                    "the path holds a data source or a whole row; use row.get(column) for a column",
                )),
                Part::Timing(_) => {
                    return Err(a.err(
                        "the path holds session.lastResponse(...), which only session.add takes",
                    ))
                }
                Part::RawFile(_) => {
                    return Err(a.err(
                        "the path holds session.ds.getRawFile(...), which only `payload` takes",
                    ))
                }
            }
        }
        Ok(display)
    }

    /// The body of `payload`: a raw file from `session.ds.getRawFile` is sent as its bytes.
    fn payload(&self, v: &JsVal, a: &Args) -> Result<Body, ScriptError> {
        if let JsVal::Str(text) = v {
            if let [Part::RawFile(file)] = parts(text).as_slice() {
                let bytes = crate::data::read_raw(file, self.base_dir).map_err(|e| a.err(e))?;
                return Ok(Body::Raw { bytes });
            }
        }
        value::body(v, a)
    }

    /// An absolute URL (`http://host/path`, as StormForger test cases often write) is split
    /// into its path and its origin, which must be one of the test's targets (checked once
    /// they are known).
    fn strip_origin(
        &mut self,
        text: &str,
        a: &Args,
    ) -> Result<(String, Option<Target>), ScriptError> {
        let Some(scheme_end) = ["http://", "https://"]
            .iter()
            .find(|s| {
                text.get(..s.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(s))
            })
            .map(|s| s.len())
        else {
            return Ok((text.to_string(), None));
        };
        let end = text[scheme_end..]
            .find(['/', '?'])
            .map_or(text.len(), |i| scheme_end + i);
        let origin = &text[..end];
        if value::has_marker(origin) {
            return Err(a.err(format_args!(
                "the host of the URL `{origin}` is a per-client value; a request goes to one of the test's targets, named as written"
            )));
        }
        let (target, _) = Target::split_url(origin).map_err(|e| a.err(e))?;
        self.origins.push((target.clone(), a.loc.clone()));
        let rest = &text[end..];
        let path = if rest.starts_with('?') {
            format!("/{rest}")
        } else if rest.is_empty() {
            "/".to_string()
        } else {
            rest.to_string()
        };
        Ok((path, Some(target)))
    }

    /// Every placeholder resolves (params, or a variable bound before this request). A param
    /// that fills no placeholder is dropped with a warning: StormForger ran such scripts.
    fn check_placeholders(
        &mut self,
        request: &mut RequestStep,
        a: &Args,
    ) -> Result<(), ScriptError> {
        let names: Vec<String> = placeholders(&request.path)
            .into_iter()
            .map(str::to_string)
            .collect();
        for (i, (param, _)) in request.params.iter().enumerate() {
            if request.params[..i].iter().any(|(p, _)| p == param) {
                return Err(a.err(format_args!("param `{param}` is given twice")));
            }
        }
        let path = request.path.clone();
        request.params.retain(|(param, _)| {
            let used = names.contains(param);
            if !used {
                self.warnings.push(format!(
                    "{}: warning: {}: param `{param}` is not used (the path `{path}` has no `:{param}` placeholder); it is ignored",
                    a.loc, a.what
                ));
            }
            used
        });
        for name in &names {
            let in_params = request.params.iter().any(|(p, _)| p == name);
            if !in_params && !self.bound.contains(name) {
                return Err(a.err(format_args!(
                    "placeholder `:{name}` can never be filled: it is not in `params`, and no earlier step of the session extracts or binds a variable `{name}`"
                )));
            }
        }
        Ok(())
    }
}

fn headers(js: &JsVal, a: &Args) -> Result<Vec<HeaderField>, ScriptError> {
    let fields = value::pairs(js, a, "headers")?;
    fields
        .into_iter()
        .map(|(name, value)| {
            let fixed = match &value {
                Value::Text { value } => value.clone(),
                _ => String::new(),
            };
            let header = Header {
                name: name.clone(),
                value: fixed,
            };
            match header.problem() {
                Some(problem) => Err(a.err(problem)),
                None => Ok(HeaderField { name, value }),
            }
        })
        .collect()
}

fn extraction(js: &JsVal, a: &Args) -> Result<Vec<Extraction>, ScriptError> {
    let mut extractions: Vec<Extraction> = Vec::new();
    for (kind, map) in a.options(js, &["jsonpath", "regexp", "header", "xpath"])? {
        for (var, expression) in a.map(map, &format!("extraction.{kind}"))? {
            let field = format!("extraction.{kind}.{var}");
            if !is_var_name(var) {
                return Err(a.err(format_args!(
                    "`{var}` is not a variable name (letters, digits and _, not starting with a digit)"
                )));
            }
            if is_reserved(var) {
                return Err(a.err(format_args!(
                    "`{var}` is reserved for generated variables; pick another name"
                )));
            }
            if extractions.iter().any(|e| e.var == *var) {
                return Err(a.err(format_args!("variable `{var}` is extracted twice")));
            }
            let text = a.string(expression, &field)?;
            if text.is_empty() {
                return Err(a.err(format_args!("`{field}` must not be empty")));
            }
            // StormForger's JSONPaths may leave out the root: `token` means `$.token`.
            let rooted;
            let text = if kind == "jsonpath" && !text.starts_with('$') {
                rooted = if text.starts_with('[') {
                    format!("${text}")
                } else {
                    format!("$.{text}")
                };
                rooted.as_str()
            } else {
                text
            };
            let extractor = match kind.as_str() {
                "jsonpath" => {
                    // Checked here, so a typo is the script's error at its line, not the run's.
                    if let Err(e) = serde_json_path::JsonPath::parse(text) {
                        return Err(a.err(format_args!(
                            "`{field}`: invalid JSONPath `{text}`: {}",
                            one_line(&e.to_string())
                        )));
                    }
                    Extractor::JsonPath { path: text.into() }
                }
                "regexp" => {
                    // The engine's own regex flavour (bytes), so what passes here compiles there.
                    if let Err(e) = regex::bytes::Regex::new(text) {
                        return Err(a.err(format_args!(
                            "`{field}`: invalid regular expression `{text}`: {}",
                            one_line(&e.to_string())
                        )));
                    }
                    Extractor::Regexp {
                        pattern: text.into(),
                    }
                }
                "xpath" => {
                    match sxd_xpath::Factory::new().build(text) {
                        Ok(Some(_)) => {}
                        Ok(None) => return Err(a.err(format_args!("`{field}` is empty"))),
                        Err(e) => {
                            return Err(
                                a.err(format_args!("`{field}`: invalid XPath `{text}`: {e}"))
                            )
                        }
                    }
                    Extractor::XPath {
                        expression: text.into(),
                    }
                }
                _ => Extractor::Header { name: text.into() },
            };
            extractions.push(Extraction {
                var: var.clone(),
                extractor,
            });
        }
    }
    Ok(extractions)
}

/// A parser's message on one line: the regex crate draws the pattern with a caret over
/// several lines and names the problem on its last `error:` line.
fn one_line(message: &str) -> String {
    message
        .lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix("error: "))
        .map(str::to_owned)
        .unwrap_or_else(|| message.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn template_values<'v>(template: &'v JsonTemplate, out: &mut Vec<&'v Value>) {
    match template {
        JsonTemplate::Literal { .. } => {}
        JsonTemplate::Value { value } => out.push(value),
        JsonTemplate::Array { items } => items.iter().for_each(|t| template_values(t, out)),
        JsonTemplate::Object { fields } => fields.iter().for_each(|(_, t)| template_values(t, out)),
    }
}

/// The variables a step reads itself (not those of the steps nested in it).
pub(crate) fn step_vars(step: &Step) -> Vec<String> {
    let mut values: Vec<&Value> = Vec::new();
    match step {
        Step::Request(request) => {
            values.extend(request.params.iter().map(|(_, v)| v));
            values.extend(request.headers.iter().map(|h| &h.value));
            match &request.body {
                Some(Body::Text { value }) => values.push(value),
                Some(Body::Json { template }) => template_values(template, &mut values),
                Some(Body::Form { fields }) => values.extend(fields.iter().map(|(_, v)| v)),
                Some(Body::Raw { .. }) | None => {}
            }
        }
        Step::Check(check) => values.extend([&check.condition.value, &check.condition.expected]),
        Step::If { condition, .. } => values.extend([&condition.value, &condition.expected]),
        Step::Times { count, .. } => values.push(count),
        Step::Wait(barrage_plan::Wait::PerClient { seconds }) => values.push(seconds),
        Step::Add(sample) => match &sample.input {
            barrage_plan::SampleInput::Value { value } => values.push(value),
            barrage_plan::SampleInput::Condition { condition } => {
                values.extend([&condition.value, &condition.expected])
            }
            barrage_plan::SampleInput::LastResponse { .. } => {}
        },
        Step::Wait(_) | Step::Bind { .. } | Step::ForEver { .. } => {}
    }
    values
        .into_iter()
        .flat_map(Value::vars)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_placeholders() {
        assert_eq!(
            placeholders("/a/:id/b?x=:_tok2&t=12:30&y=:"),
            vec!["id", "_tok2"]
        );
        assert!(placeholders("/plain").is_empty());
    }

    #[test]
    fn names_and_reserved_names() {
        assert!(is_var_name("token_2"));
        assert!(!is_var_name("2x"));
        assert!(!is_var_name(""));
        assert!(is_reserved("_row12"));
        assert!(!is_reserved("_rowing"));
        assert!(!is_reserved("_gen"));
    }
}
