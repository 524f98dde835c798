//! The protocol keys of `definition.setTestOptions`: `http`, `tls`, `http2` settings and the
//! connection model. Kept apart from the other test options so the DSL surface for
//! protocols lives in one place.

use crate::jsval::{Args, JsVal};
use crate::ScriptError;
use barrage_plan::{parse_addr_range, ConnectionModel, HttpVersion, TestOptions, TlsVersion};

/// The protocol keys `setTestOptions` accepts.
pub(crate) const PROTOCOL_OPTIONS: &[&str] = &[
    "http",
    "tls",
    "connectionModel",
    "poolSize",
    "maxConcurrentStreams",
    "initialWindowSize",
    "initialConnectionWindowSize",
    "dnsTtl",
    "localAddrs",
];

const TLS_OPTIONS: &[&str] = &[
    "caFile",
    "insecure",
    "cert",
    "key",
    "serverName",
    "minVersion",
    "maxVersion",
    "sessionResumption",
];

const WINDOW_MAX: i64 = (1 << 31) - 1;

/// Applies one protocol option; `key` is one of [`PROTOCOL_OPTIONS`].
pub(crate) fn apply(
    options: &mut TestOptions,
    key: &str,
    v: &JsVal,
    a: &Args,
) -> Result<(), ScriptError> {
    match key {
        "http" => {
            let text = a.string(v, key)?;
            options.http = HttpVersion::parse(text).ok_or_else(|| {
                a.err(format_args!(
                    "`http` must be \"1.1\", \"2\" or \"auto\", got \"{text}\""
                ))
            })?;
        }
        "tls" => apply_tls(options, v, a)?,
        "connectionModel" => {
            let text = a.string(v, key)?;
            options.connections.model = ConnectionModel::parse(text).ok_or_else(|| {
                a.err(format_args!(
                    "`connectionModel` must be \"per-client\", \"shared\" or \"new-per-request\", got \"{text}\""
                ))
            })?;
        }
        "poolSize" => options.connections.pool_size = a.integer(v, key, 1, 1 << 20)? as u32,
        "maxConcurrentStreams" => {
            options.http2.max_concurrent_streams = Some(a.integer(v, key, 1, 1 << 20)? as u32)
        }
        "initialWindowSize" => {
            options.http2.initial_window_size = Some(a.integer(v, key, 1, WINDOW_MAX)? as u32)
        }
        "initialConnectionWindowSize" => {
            options.http2.initial_connection_window_size =
                Some(a.integer(v, key, 1, WINDOW_MAX)? as u32)
        }
        "dnsTtl" => options.connections.dns_ttl = Some(a.duration(v, key)?),
        _ => {
            let text = a.string(v, key)?;
            let mut addrs = Vec::new();
            for part in text.split(',') {
                addrs.extend(
                    parse_addr_range(part).map_err(|e| a.err(format_args!("`localAddrs`: {e}")))?,
                );
            }
            options.connections.local_addrs = addrs;
        }
    }
    Ok(())
}

fn tls_version(a: &Args, v: &JsVal, key: &str) -> Result<TlsVersion, ScriptError> {
    let text = a.string(v, key)?;
    TlsVersion::parse(text).ok_or_else(|| {
        a.err(format_args!(
            "`tls.{key}` must be \"1.2\" or \"1.3\", got \"{text}\""
        ))
    })
}

fn apply_tls(options: &mut TestOptions, value: &JsVal, a: &Args) -> Result<(), ScriptError> {
    let tls = &mut options.tls;
    for (key, v) in a.options(value, TLS_OPTIONS)? {
        let name = format!("tls.{key}");
        match key.as_str() {
            "caFile" => tls.ca_file = Some(a.string(v, &name)?.to_string()),
            "insecure" => tls.insecure = a.bool(v, &name)?,
            "cert" => tls.client_cert = Some(a.string(v, &name)?.to_string()),
            "key" => tls.client_key = Some(a.string(v, &name)?.to_string()),
            "serverName" => tls.server_name = Some(a.string(v, &name)?.to_string()),
            "minVersion" => tls.min_version = Some(tls_version(a, v, key)?),
            "maxVersion" => tls.max_version = Some(tls_version(a, v, key)?),
            _ => tls.session_resumption = a.bool(v, &name)?,
        }
    }
    if tls.client_key.is_some() && tls.client_cert.is_none() {
        return Err(a.err("`tls.key` needs `tls.cert`"));
    }
    Ok(())
}
