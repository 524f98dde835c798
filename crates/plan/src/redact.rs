//! What a plan looks like once its secrets are taken out, for everything a run keeps (results
//! file, reports, history): values of sensitive headers, basic-authentication passwords (from
//! `-a`, URL userinfo, `setAuthentication`), URL userinfo, and data-file rows (the file keeps
//! its name, a SHA-256 of its contents and its row count).

use crate::{walk_steps_mut, Plan, Step, Value};

/// What a redacted value reads as.
pub const REDACTED: &str = "REDACTED";

/// Headers whose values are credentials, whatever the user names besides.
pub const SENSITIVE_HEADERS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

/// The headers to redact: [`SENSITIVE_HEADERS`] and those the user names (`--redact`),
/// compared without case.
#[derive(Debug, Clone, Default)]
pub struct Redaction {
    extra: Vec<String>,
}

impl Redaction {
    pub fn new(extra: &[String]) -> Self {
        Self {
            extra: extra
                .iter()
                .map(|h| h.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    pub fn is_sensitive(&self, header: &str) -> bool {
        let header = header.trim();
        SENSITIVE_HEADERS
            .iter()
            .any(|h| h.eq_ignore_ascii_case(header))
            || self.extra.iter().any(|h| h.eq_ignore_ascii_case(header))
    }

    /// A copy of `plan` without secrets.
    pub fn plan(&self, plan: &Plan) -> Plan {
        let mut plan = plan.clone();
        for header in &mut plan.options.headers {
            if self.is_sensitive(&header.name) {
                header.value = REDACTED.into();
            }
        }
        if let Some(credentials) = &mut plan.options.basic_auth {
            credentials.password = REDACTED.into();
        }
        for session in &mut plan.sessions {
            walk_steps_mut(&mut session.steps, &mut |step| {
                if let Step::Bind {
                    binding: crate::Binding::Jwt(jwt),
                    ..
                } = step
                {
                    jwt.key = REDACTED.into();
                    jwt.token = Value::text(REDACTED);
                }
                if let Step::Request(request) = step {
                    for header in &mut request.headers {
                        if self.is_sensitive(&header.name) {
                            header.value = Value::text(REDACTED);
                        }
                    }
                }
            });
        }
        for source in &mut plan.data_sources {
            let rows = std::mem::take(&mut source.rows);
            let digest = content_digest(&source.columns, &rows);
            source.name = format!(
                "{} (contents not kept: {} rows, sha256 {digest})",
                source.name,
                rows.len()
            );
        }
        plan
    }
}

/// `url` without its userinfo (`https://user:pass@host/` → `https://REDACTED@host/`); any
/// other text is returned as is.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let mut clean = parsed.clone();
            let _ = clean.set_password(None);
            let _ = clean.set_username(REDACTED);
            clean.to_string()
        }
        _ => url.to_string(),
    }
}

/// SHA-256 of a data file's columns and rows as parsed (CSV-joined), in hex.
fn content_digest(columns: &[String], rows: &[Vec<String>]) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    for line in std::iter::once(columns).chain(rows.iter().map(Vec::as_slice)) {
        context.update(line.join(",").as_bytes());
        context.update(b"\n");
    }
    context
        .finish()
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataSource, Header, HeaderField, Method, RequestStep, Session};

    #[test]
    fn secrets_leave_and_the_rest_stays() {
        let mut plan = Plan {
            format_version: crate::PLAN_FORMAT_VERSION,
            name: "p".into(),
            target: crate::Target::parse("http://127.0.0.1").unwrap(),
            options: Default::default(),
            workload: crate::Workload::closed(1, None, Some(1)),
            tags: vec!["t".into()],
            sessions: vec![],
            data_sources: vec![],
            metrics: Default::default(),
        };
        plan.options.basic_auth = crate::Credentials::parse_pair("ann:SECRET");
        plan.options.headers = vec![
            Header {
                name: "Cookie".into(),
                value: "sid=SECRET".into(),
            },
            Header {
                name: "Accept".into(),
                value: "text/html".into(),
            },
        ];
        let mut request = RequestStep::simple(Method::Get, "/", 0);
        request.headers = vec![
            HeaderField {
                name: "authorization".into(),
                value: Value::text("Bearer SECRET"),
            },
            HeaderField {
                name: "X-Api-Key".into(),
                value: Value::text("SECRET"),
            },
        ];
        plan.sessions = vec![Session {
            name: "s".into(),
            weight: 1,
            steps: vec![Step::ForEver {
                steps: vec![Step::Request(request)],
            }],
        }];
        plan.data_sources = vec![DataSource {
            name: "users.csv".into(),
            columns: vec!["user".into(), "password".into()],
            rows: vec![vec!["ann".into(), "SECRET".into()]],
        }];
        let redacted = Redaction::new(&["x-api-key".into()]).plan(&plan);
        let text = format!("{redacted:?}");
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("text/html"), "other headers stay");
        assert!(
            redacted.data_sources[0]
                .name
                .starts_with("users.csv (contents not kept: 1 rows, sha256 "),
            "{}",
            redacted.data_sources[0].name
        );
        assert_eq!(
            redact_url("http://me:SECRET@127.0.0.1:8080/x"),
            "http://REDACTED@127.0.0.1:8080/x"
        );
        assert_eq!(redact_url("http://127.0.0.1/"), "http://127.0.0.1/");
        assert_eq!(redact_url("not a url"), "not a url");
    }
}
