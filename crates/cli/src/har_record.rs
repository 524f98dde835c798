//! `barrage record`: a recording proxy. Clients talk to `--listen` (HTTP/1.1 or HTTP/2,
//! cleartext or over TLS with `--tls`/`--tls-cert`); every request goes on to `--upstream`
//! (HTTP/1.1, or HTTP/2 with `--upstream-h2c`; an https upstream over TLS by the proxy's own
//! client, `barrage_http`'s, in HTTP/2 when the upstream offers h2 by ALPN) and the exchange
//! is appended to a HAR 1.2 file as its response body ends. Bodies stream through; only their
//! first `--max-body-size` bytes are kept. SIGINT/SIGTERM close the file.

use crate::usage::usage;
use crate::values;
use anyhow::Context;
use barrage_body::{BodySink, ContentCoding};
use barrage_har::{CapturedBody, Exchange, HarWriter};
use barrage_http::{Alpn, TlsClient, TlsSettings};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::{Request, Response, Uri};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};
use tokio_rustls::TlsAcceptor;

/// How long exchanges still under way at SIGINT/SIGTERM get to finish before the file closes.
const DRAIN: Duration = Duration::from_secs(2);

#[derive(Debug, clap::Args)]
pub struct RecordHarArgs {
    /// Where clients connect (loopback, e.g. 127.0.0.1:8081; port 0 picks a free one)
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// Where requests go on to: http://host:port (a path is put before the requests' paths)
    #[arg(long, value_name = "URL")]
    upstream: String,
    /// Speak cleartext HTTP/2 (prior knowledge) to the upstream
    #[arg(long, conflicts_with_all = ["upstream_cacert", "upstream_insecure"])]
    upstream_h2c: bool,
    /// Trust the certificates in this PEM file too (an https upstream)
    #[arg(long, value_name = "FILE")]
    upstream_cacert: Option<PathBuf>,
    /// Accept any certificate of an https upstream
    #[arg(long)]
    upstream_insecure: bool,
    /// Speak HTTP/1.1 to an https upstream (by default h2 is offered by ALPN and used when
    /// the upstream takes it)
    #[arg(long)]
    upstream_http1: bool,
    /// Serve the listener over TLS with a generated self-signed certificate for localhost and
    /// the loopback addresses; the second line printed names its PEM file (for a client's CA
    /// option) and fingerprint
    #[arg(long, conflicts_with = "tls_cert")]
    tls: bool,
    /// Serve the listener over TLS with this certificate chain (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM)
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Write the recording here (HAR 1.2)
    #[arg(short = 'o', long = "output", value_name = "FILE.har")]
    output: PathBuf,
    /// Keep at most this many bytes of each body (the rest streams through, the entry is
    /// marked `_truncated`)
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20, value_parser = max_body_size)]
    max_body_size: usize,
}

fn max_body_size(text: &str) -> Result<usize, String> {
    values::integer(text, 0, 1 << 30)
}

/// Where requests go: the upstream's scheme, authority and path prefix.
#[derive(Debug, Clone)]
struct Upstream {
    authority: hyper::http::uri::Authority,
    prefix: String,
    h2c: bool,
    /// An https upstream's TLS client (h2 and HTTP/1.1 offered by ALPN, or HTTP/1.1 only).
    tls: Option<TlsClient>,
}

impl Upstream {
    fn parse(text: &str, args: &RecordHarArgs) -> anyhow::Result<Self> {
        let bad = |why: &str| usage(format!("--upstream `{text}`: {why}"));
        let uri: Uri = text.parse().map_err(|_| bad("not a URL"))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(bad("give an http:// or https:// URL")),
        };
        let authority = uri.authority().cloned().ok_or_else(|| bad("no host"))?;
        if authority.host().is_empty() {
            return Err(bad("no host"));
        }
        if !https && (args.upstream_cacert.is_some() || args.upstream_insecure) {
            return Err(bad(
                "--upstream-cacert and --upstream-insecure are for https upstreams",
            ));
        }
        if !https && args.upstream_http1 {
            return Err(bad(
                "--upstream-http1 is for https upstreams (an http:// one is HTTP/1.1 unless --upstream-h2c)",
            ));
        }
        if https && args.upstream_h2c {
            return Err(bad(
                "--upstream-h2c is cleartext HTTP/2; give an http:// URL",
            ));
        }
        let tls = if https {
            let settings = TlsSettings {
                ca_file: args.upstream_cacert.clone(),
                insecure: args.upstream_insecure,
                alpn: if args.upstream_http1 {
                    Alpn::Http1
                } else {
                    Alpn::Both
                },
                ..TlsSettings::default()
            };
            let host = authority
                .host()
                .trim_start_matches('[')
                .trim_end_matches(']');
            Some(
                TlsClient::new(&settings, host)
                    .map_err(|e| usage(format!("--upstream-cacert: {e}")))?,
            )
        } else {
            None
        };
        Ok(Self {
            authority,
            prefix: uri.path().trim_end_matches('/').to_string(),
            h2c: args.upstream_h2c,
            tls,
        })
    }

    fn connect_addr(&self) -> String {
        format!(
            "{}:{}",
            self.authority.host(),
            self.authority
                .port_u16()
                .unwrap_or(if self.tls.is_some() { 443 } else { 80 })
        )
    }

    fn url(&self, path_and_query: &str) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!(
            "{scheme}://{}{}{}",
            self.authority, self.prefix, path_and_query
        )
    }
}

/// What every connection shares: the upstream, the file, the count of exchanges under way.
struct Recorder {
    upstream: Upstream,
    limit: usize,
    writer: Mutex<Option<HarWriter<BufWriter<std::fs::File>>>>,
    in_flight: AtomicUsize,
    failed: AtomicUsize,
    write_error: Mutex<Option<String>>,
}

impl Recorder {
    fn write(&self, exchange: &Exchange) {
        let mut writer = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = writer.as_mut() {
            if let Err(e) = w.entry(exchange) {
                *self.write_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            }
        }
    }
}

pub fn record_command(args: &RecordHarArgs) -> anyhow::Result<i32> {
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        usage(format!(
            "--listen: `{}` is not an address like 127.0.0.1:8081",
            args.listen
        ))
    })?;
    let upstream = Upstream::parse(&args.upstream, args)?;
    let file = std::fs::File::create(&args.output)
        .with_context(|| format!("-o: cannot create {}", args.output.display()))?;
    let writer = HarWriter::start(BufWriter::new(file), "barrage", env!("CARGO_PKG_VERSION"))
        .with_context(|| format!("-o: cannot write {}", args.output.display()))?;
    let recorder = Arc::new(Recorder {
        upstream,
        limit: args.max_body_size,
        writer: Mutex::new(Some(writer)),
        in_flight: AtomicUsize::new(0),
        failed: AtomicUsize::new(0),
        write_error: Mutex::new(None),
    });
    let listener_tls = ListenerTls::new(args)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the proxy's runtime")?;
    runtime.block_on(serve(listen, &listener_tls, Arc::clone(&recorder)))?;
    // Tasks still holding a connection are dropped with the runtime; the file closes here.
    drop(runtime);
    let writer = recorder
        .writer
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let entries = writer.as_ref().map_or(0, HarWriter::entries);
    if let Some(writer) = writer {
        writer
            .finish()
            .and_then(|mut out| out.flush())
            .with_context(|| format!("-o: cannot write {}", args.output.display()))?;
    }
    if let Some(error) = recorder
        .write_error
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
    {
        anyhow::bail!("-o: cannot write {}: {error}", args.output.display());
    }
    let failed = recorder.failed.load(Ordering::Relaxed);
    let unfinished = recorder.in_flight.load(Ordering::Relaxed);
    eprintln!(
        "barrage record: {entries} exchanges written to {} ({failed} not answered by the upstream, {unfinished} unfinished at the stop)",
        args.output.display()
    );
    Ok(crate::usage::exit::OK)
}

/// The listener's TLS, when clients connect over TLS: the acceptor and, for a generated
/// certificate, its file (removed when the proxy stops) and fingerprint.
struct ListenerTls {
    acceptor: Option<TlsAcceptor>,
    generated: Option<(crate::RemoveOnDrop, String)>,
}

impl ListenerTls {
    fn new(args: &RecordHarArgs) -> anyhow::Result<Self> {
        let protocols = barrage_target::Protocols::Any;
        if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
            let acceptor = barrage_target::acceptor_from_pem_files(cert, key, protocols)
                .map_err(|e| usage(format!("--tls-cert/--tls-key: {e}")))?;
            return Ok(Self {
                acceptor: Some(acceptor),
                generated: None,
            });
        }
        if !args.tls {
            return Ok(Self {
                acceptor: None,
                generated: None,
            });
        }
        let cert = barrage_target::SelfSigned::generate().context("generating the certificate")?;
        let path = std::env::temp_dir().join(format!("barrage-record-{}.pem", std::process::id()));
        std::fs::write(&path, &cert.cert_pem)
            .with_context(|| format!("--tls: cannot write {}", path.display()))?;
        let generated = crate::RemoveOnDrop(path);
        Ok(Self {
            acceptor: Some(cert.acceptor(protocols)?),
            generated: Some((generated, cert.fingerprint())),
        })
    }
}

async fn serve(
    listen: SocketAddr,
    tls: &ListenerTls,
    recorder: Arc<Recorder>,
) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("--listen: cannot listen on {listen}"))?;
    let local = listener.local_addr()?;
    println!("barrage record listening on {local}");
    if let Some((file, fingerprint)) = &tls.generated {
        println!(
            "barrage record certificate {} {fingerprint}",
            file.0.display()
        );
    }
    eprintln!(
        "barrage record: forwarding to {}; stop with Ctrl-C",
        recorder.upstream.url("")
    );
    let _ = std::io::stdout().flush();
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let recorder = Arc::clone(&recorder);
                let acceptor = tls.acceptor.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        forward(Arc::clone(&recorder), req)
                    });
                    // HTTP/1.1 or HTTP/2 by the client's preface (over TLS, as ALPN chose).
                    let builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    match acceptor {
                        Some(acceptor) => {
                            let Ok(stream) = acceptor.accept(stream).await else { return };
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                        None => {
                            let _ = builder
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                });
            }
            _ = interrupt.recv() => break,
            _ = terminate.recv() => break,
        }
    }
    drop(listener);
    let deadline = Instant::now() + DRAIN;
    while recorder.in_flight.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// Headers that belong to one connection, not to the exchange: never forwarded.
fn hop_by_hop(name: &str) -> bool {
    matches!(
        name,
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
    )
}

fn header_pairs(headers: &hyper::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn version_name(version: hyper::Version) -> &'static str {
    match version {
        hyper::Version::HTTP_2 => "HTTP/2",
        hyper::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    }
}

fn bad_gateway(message: String) -> Response<ProxyBody> {
    let mut response = Response::new(
        Full::new(Bytes::from(message))
            .map_err(|never| match never {})
            .boxed(),
    );
    *response.status_mut() = hyper::StatusCode::BAD_GATEWAY;
    response
}

/// Forwards one request and returns the upstream's response, whose body records the exchange
/// when it ends.
async fn forward(
    recorder: Arc<Recorder>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, std::convert::Infallible> {
    let started = SystemTime::now();
    let clock = Instant::now();
    recorder.in_flight.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = req.into_parts();
    let upstream = &recorder.upstream;
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let url = upstream.url(&path_and_query);
    // The absolute URL: `exchange` makes it origin-form for HTTP/1.1 once the upstream's
    // protocol is known.
    let mut builder = Request::builder().method(parts.method.clone()).uri(&url);
    for (name, value) in &parts.headers {
        if !hop_by_hop(name.as_str()) && name != hyper::header::HOST {
            builder = builder.header(name, value);
        }
    }
    let request_body = Arc::new(Mutex::new(CapturedBody::default()));
    let tee = Tee::new(body, recorder.limit, {
        let request_body = Arc::clone(&request_body);
        move |captured, _complete, _decoded_len| {
            *request_body.lock().unwrap_or_else(|e| e.into_inner()) = captured
        }
    });
    let outgoing = match builder.body(tee) {
        Ok(r) => r,
        Err(e) => return Ok(failed(&recorder, format!("cannot forward: {e}"))),
    };
    let mut request_headers = header_pairs(outgoing.headers());
    let response = match send(upstream, outgoing).await {
        Ok(r) => r,
        Err(e) => return Ok(failed(&recorder, format!("upstream: {e}"))),
    };
    if response.version() != hyper::Version::HTTP_2 {
        request_headers.insert(0, ("host".to_string(), upstream.authority.to_string()));
    }
    let wait = clock.elapsed();
    let (mut head, body) = response.into_parts();
    let mut exchange = Exchange {
        started,
        method: parts.method.as_str().to_string(),
        url,
        http_version: version_name(head.version).to_string(),
        request_headers,
        request_body: CapturedBody::default(),
        status: head.status.as_u16(),
        status_text: head.status.canonical_reason().unwrap_or("").to_string(),
        response_headers: header_pairs(&head.headers),
        response_body: CapturedBody::default(),
        response_body_decoded: true,
        response_wire_size: 0,
        response_compressed: false,
        wait,
        total: wait,
    };
    let names: Vec<_> = head.headers.keys().cloned().collect();
    for name in names {
        if hop_by_hop(name.as_str()) {
            head.headers.remove(&name);
        }
    }
    head.version = parts.version;
    let recorder_at_end = Arc::clone(&recorder);
    let limit = recorder.limit;
    let coding = content_coding(&exchange.response_headers);
    let mut tee = Tee::new(
        body,
        recorder.limit,
        move |captured, complete, decoded_len| {
            exchange.request_body =
                std::mem::take(&mut *request_body.lock().unwrap_or_else(|e| e.into_inner()));
            exchange.response_wire_size = captured.size;
            let (mut body, decoded) = decoded(coding, captured, limit);
            // A body cut by the limit is not decoded, but its decoded size was counted whole.
            if let Some(len) = decoded_len {
                body.size = len;
            }
            exchange.response_compressed = decoded_len.is_some();
            exchange.response_body = body;
            exchange.response_body_decoded = decoded;
            exchange.total = clock.elapsed();
            if complete {
                recorder_at_end.write(&exchange);
            } else {
                recorder_at_end.failed.fetch_add(1, Ordering::Relaxed);
            }
            recorder_at_end.in_flight.fetch_sub(1, Ordering::Relaxed);
        },
    );
    tee.count_decoded(coding);
    Ok(Response::from_parts(head, tee.boxed()))
}

/// The coding of a body by its `Content-Encoding` header.
fn content_coding(headers: &[(String, String)]) -> ContentCoding {
    headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-encoding"))
        .map_or(ContentCoding::Identity, |(_, value)| {
            ContentCoding::parse(value.as_bytes())
        })
}

/// The response body as HAR holds it, decoded from its `Content-Encoding`, and whether it
/// could be: only a body kept whole, in a coding barrage knows, decoding within the limit.
fn decoded(coding: ContentCoding, raw: CapturedBody, limit: usize) -> (CapturedBody, bool) {
    if coding == ContentCoding::Identity {
        return (raw, true);
    }
    if raw.truncated() || coding == ContentCoding::Other {
        return (raw, false);
    }
    let mut sink = BodySink::default();
    sink.start(true, limit);
    sink.set_coding(coding);
    // Whole in memory already (up to --max-body-size): decoded at once.
    match sink.push_all(&raw.kept).ok().and_then(|()| sink.body()) {
        Some(body) => (
            CapturedBody {
                kept: body.to_vec(),
                size: body.len() as u64,
            },
            true,
        ),
        None => (raw, false),
    }
}

fn failed(recorder: &Recorder, message: String) -> Response<ProxyBody> {
    recorder.failed.fetch_add(1, Ordering::Relaxed);
    recorder.in_flight.fetch_sub(1, Ordering::Relaxed);
    eprintln!("barrage record: {message}");
    bad_gateway(message)
}

/// One request on a fresh connection to the upstream (a recording proxy is not on a hot path).
async fn send(upstream: &Upstream, request: Request<Tee>) -> anyhow::Result<Response<Incoming>> {
    let stream = TcpStream::connect(upstream.connect_addr())
        .await
        .with_context(|| format!("cannot connect to {}", upstream.connect_addr()))?;
    match &upstream.tls {
        Some(tls) => {
            let stream = tls.handshake(stream).await.map_err(|kind| {
                anyhow::anyhow!("TLS with {} failed: {kind:?}", upstream.connect_addr())
            })?;
            let h2 = stream.alpn_is_h2();
            exchange(TokioIo::new(stream), h2, &upstream.authority, request).await
        }
        None => {
            exchange(
                TokioIo::new(stream),
                upstream.h2c,
                &upstream.authority,
                request,
            )
            .await
        }
    }
}

/// Sends `request` (its URI absolute) over `io` in HTTP/2 when `h2`, else in HTTP/1.1 with
/// an origin-form target and a `Host` header.
async fn exchange<IO>(
    io: IO,
    h2: bool,
    authority: &hyper::http::uri::Authority,
    mut request: Request<Tee>,
) -> anyhow::Result<Response<Incoming>>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    if h2 {
        *request.version_mut() = hyper::Version::HTTP_2;
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), io).await?;
        tokio::spawn(connection);
        Ok(sender.send_request(request).await?)
    } else {
        let origin_form: Uri = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()?;
        *request.uri_mut() = origin_form;
        request
            .headers_mut()
            .insert(hyper::header::HOST, authority.as_str().parse()?);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
        tokio::spawn(connection);
        Ok(sender.send_request(request).await?)
    }
}

type OnEnd = Box<dyn FnOnce(CapturedBody, bool, Option<u64>) + Send + Sync>;

/// A body passed through as it is, its first bytes kept; `on_end` gets them, whether the
/// body ended rather than broke off, and (with [`Tee::count_decoded`]) the size it decoded
/// to, once, at its end or when it is dropped.
struct Tee {
    inner: Incoming,
    captured: CapturedBody,
    limit: usize,
    ended: bool,
    /// Decodes a content-encoded body as it passes, keeping nothing, to count its size.
    decoder: Option<Mutex<BodySink>>,
    on_end: Option<OnEnd>,
}

impl Tee {
    fn new(
        inner: Incoming,
        limit: usize,
        on_end: impl FnOnce(CapturedBody, bool, Option<u64>) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner,
            captured: CapturedBody::default(),
            limit,
            ended: false,
            decoder: None,
            on_end: Some(Box::new(on_end)),
        }
    }

    /// Counts the decoded size of a body in `coding` (one barrage decodes) as it passes.
    fn count_decoded(&mut self, coding: ContentCoding) {
        if coding.decodes() {
            let mut sink = BodySink::default();
            sink.start(false, 0);
            sink.set_coding(coding);
            self.decoder = Some(Mutex::new(sink));
        }
    }

    fn finish(&mut self) {
        if let Some(on_end) = self.on_end.take() {
            let complete = self.ended || self.inner.is_end_stream();
            let decoded_len = self
                .decoder
                .as_mut()
                .and_then(|d| d.get_mut().unwrap_or_else(|e| e.into_inner()).decoded_len());
            on_end(std::mem::take(&mut self.captured), complete, decoded_len);
        }
    }
}

impl Body for Tee {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.captured.push(data, this.limit);
                    if let Some(decoder) = this.decoder.as_mut() {
                        let sink = decoder.get_mut().unwrap_or_else(|e| e.into_inner());
                        // A body that does not decode has no decoded size; it still passes.
                        let _ = sink.push_all(data);
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.ended = true;
                this.finish();
                Poll::Ready(None)
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Tee {
    fn drop(&mut self) {
        self.finish();
    }
}
