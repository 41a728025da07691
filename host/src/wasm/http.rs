//! Outbound HTTP for WASM guests: the host side of `wasi:http/outgoing-handler`,
//! linked only for plugins whose manifest declares `[capabilities] http`.
//! Every request is checked against the plugin's grant (scheme, host, port)
//! before any connection and again on every redirect the host follows; a
//! granted host *name* must resolve to public addresses only (unless it is
//! `localhost`), so DNS cannot rebind a grant onto the machine's own network;
//! an IP literal must be granted as itself. Requests are allowed only inside a
//! tool call, bounded (requests per call, request and response body bytes,
//! redirects, the call's deadline) and dropped with the call when the run is
//! cancelled. Each one is a `http_request` run event: method, scheme, host,
//! port, the path without its query, status, bytes and duration — never
//! headers or bodies. A refusal is an HTTP error the guest can handle
//! (`HTTP-request-denied`, `destination-IP-prohibited`, …) and the event says
//! why. Sockets and `wasi:sockets` name lookup stay off for guests; the host
//! resolves names itself (`NameLookup`, replaceable by an embedder).

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use bytes::Bytes;
use http_body::Frame;
use http_body_util::BodyExt;
use tokio_util::sync::CancellationToken;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use crate::limits::{
    WASM_HTTP_CONNECT_TIMEOUT, WASM_HTTP_REDIRECTS_MAX, WASM_HTTP_REQUEST_BODY_MAX_BYTES, WASM_HTTP_REQUESTS_PER_CALL,
    WASM_HTTP_RESPONSE_BODY_MAX_BYTES,
};
use crate::run::{RunContext, RunEventKind};
use crate::supply::capabilities::{
    Host, HttpPattern, HttpScheme, canonical_host, grant_allows, is_internal_address, is_localhost,
};

/// How the host turns a granted host name into addresses.
pub trait NameLookup: Send + Sync {
    fn lookup(&self, host: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;
}

/// The system resolver (getaddrinfo, through tokio).
pub struct SystemLookup;

impl NameLookup for SystemLookup {
    fn lookup(&self, host: &str) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let host = host.to_string();
        Box::pin(async move { Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a| a.ip()).collect()) })
    }
}

/// A granted name resolved to an address a name grant may not reach.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {address}, an internal address; a grant of a host name reaches public addresses only")]
struct InternalAddress {
    host: String,
    address: IpAddr,
}

/// A name that could not be resolved.
#[derive(Debug, thiserror::Error)]
#[error("cannot resolve {host}: {reason}")]
struct LookupFailed {
    host: String,
    reason: String,
}

/// A redirect the host would not follow.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RedirectRefused(String);

/// The resolver the host's HTTP client uses: it refuses internal addresses for names.
struct CheckedResolver(Arc<dyn NameLookup>);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (host, lookup) = (name.as_str().to_string(), Arc::clone(&self.0));
        Box::pin(async move {
            let addresses = lookup
                .lookup(&host)
                .await
                .map_err(|e| Box::new(LookupFailed { host: host.clone(), reason: e.to_string() }))?;
            if addresses.is_empty() {
                return Err(Box::new(LookupFailed { host, reason: "no addresses".into() }) as _);
            }
            let local = is_localhost(&host);
            let refused = addresses.iter().find(|ip| if local { !ip.is_loopback() } else { is_internal_address(**ip) });
            if let Some(address) = refused {
                return Err(Box::new(InternalAddress { host, address: *address }) as _);
            }
            let addresses: Vec<SocketAddr> = addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)).collect();
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Where a request goes, as the grant sees it.
#[derive(Debug, Clone)]
struct Target {
    scheme: HttpScheme,
    host: String,
    port: u16,
    /// The path without its query (for events).
    path: String,
}

impl Target {
    /// The target of a guest's request, its host in canonical form (the grant
    /// and the HTTP client see `2130706433` as 127.0.0.1; so do events).
    fn of_uri(uri: &http::Uri) -> Option<Target> {
        let scheme = HttpScheme::parse(uri.scheme_str()?)?;
        let host = match canonical_host(uri.host()?).ok()? {
            Host::Address(IpAddr::V6(ip)) => format!("[{ip}]"),
            Host::Address(ip) => ip.to_string(),
            Host::Name(name) => name,
        };
        Some(Target { scheme, port: uri.port_u16().unwrap_or(scheme.default_port()), host, path: uri.path().into() })
    }

    fn of_url(url: &reqwest::Url) -> Option<Target> {
        let scheme = HttpScheme::parse(url.scheme())?;
        let host = url.host_str()?.to_ascii_lowercase();
        Some(Target { scheme, port: url.port().unwrap_or(scheme.default_port()), host, path: url.path().into() })
    }

    fn origin(&self) -> String {
        format!("{}://{}:{}", self.scheme.as_str(), self.host, self.port)
    }
}

/// One plugin's outbound HTTP: its grant, and a client (built on first use)
/// whose resolver and redirect policy enforce it.
pub struct Egress {
    plugin: String,
    grant: Arc<Vec<HttpPattern>>,
    lookup: Arc<dyn NameLookup>,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl Egress {
    /// `grant` empty: every request is refused (the grant was revoked or never given).
    pub fn new(plugin: &str, grant: Vec<HttpPattern>, lookup: Arc<dyn NameLookup>) -> Arc<Egress> {
        Arc::new(Egress { plugin: plugin.to_string(), grant: Arc::new(grant), lookup, client: OnceLock::new() })
    }

    pub fn has_grant(&self) -> bool {
        !self.grant.is_empty()
    }

    fn client(&self) -> Result<reqwest::Client, String> {
        let built = self.client.get_or_init(|| {
            let grant = Arc::clone(&self.grant);
            let policy = reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > WASM_HTTP_REDIRECTS_MAX {
                    let why = format!("more than {WASM_HTTP_REDIRECTS_MAX} redirects");
                    return attempt.error(RedirectRefused(why));
                }
                match Target::of_url(attempt.url()) {
                    Some(t) if grant_allows(&grant, t.scheme, &t.host, t.port) => attempt.follow(),
                    Some(t) => {
                        attempt.error(RedirectRefused(format!("a redirect to {} is outside the grant", t.origin())))
                    }
                    None => attempt.error(RedirectRefused("a redirect to a URL that is not http(s)".into())),
                }
            });
            reqwest::Client::builder()
                .redirect(policy)
                .referer(false)
                .no_proxy()
                .connect_timeout(WASM_HTTP_CONNECT_TIMEOUT)
                .dns_resolver(Arc::new(CheckedResolver(Arc::clone(&self.lookup))))
                .build()
                .map_err(|e| format!("the HTTP client could not be built: {e}"))
        });
        built.clone()
    }

    fn refusal(&self, target: &Target) -> Option<String> {
        if self.grant.is_empty() {
            return Some(format!(
                "plugin {} holds no http grant (never given, or revoked): `clat plugin grant {}` grants what it declares",
                self.plugin, self.plugin
            ));
        }
        if grant_allows(&self.grant, target.scheme, &target.host, target.port) {
            return None;
        }
        let granted: Vec<String> = self.grant.iter().map(|p| p.to_string()).collect();
        Some(format!("{} is not in plugin {}'s http grant ({})", target.origin(), self.plugin, granted.join(", ")))
    }

    async fn send(
        self: Arc<Self>,
        request: http::Request<WasiBody>,
        mut report: Report,
        deadline: Instant,
    ) -> Result<http::Response<WasiBody>, (HttpError, String, Report)> {
        let client = match self.client() {
            Ok(client) => client,
            Err(why) => return Err((HttpError::ConfigurationError, why, report)),
        };
        let (parts, mut body) = request.into_parts();
        let mut sent = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = match frame {
                Ok(frame) => frame,
                Err(e) => return Err((e, "the guest's request body failed".into(), report)),
            };
            if let Ok(data) = frame.into_data() {
                if sent.len() + data.len() > WASM_HTTP_REQUEST_BODY_MAX_BYTES {
                    let why = format!("the request body is over {WASM_HTTP_REQUEST_BODY_MAX_BYTES} bytes");
                    let size = Some((sent.len() + data.len()) as u64);
                    return Err((HttpError::HttpRequestBodySize(size), why, report));
                }
                sent.extend_from_slice(&data);
            }
        }
        let Some(remaining) = deadline.checked_duration_since(Instant::now()) else {
            return Err((HttpError::ConnectionTimeout, "the call's deadline has passed".into(), report));
        };
        let mut headers = parts.headers;
        headers.remove(http::header::HOST);
        let response = client
            .request(parts.method, parts.uri.to_string())
            .headers(headers)
            .body(sent)
            .timeout(remaining)
            .send()
            .await;
        let response = match response {
            Ok(response) => response,
            Err(e) => {
                let (code, why) = classify(&e);
                return Err((code, why, report));
            }
        };
        report.status = Some(response.status().as_u16());
        if let Some(length) = response.content_length()
            && length > WASM_HTTP_RESPONSE_BODY_MAX_BYTES
        {
            let why = format!("the response body is {length} bytes, over {WASM_HTTP_RESPONSE_BODY_MAX_BYTES}");
            return Err((HttpError::HttpResponseBodySize(Some(length)), why, report));
        }
        let response: http::Response<reqwest::Body> = response.into();
        let (parts, body) = response.into_parts();
        let body = MeteredBody { inner: Box::pin(body), read: 0, done: false, report: Some(report) };
        Ok(http::Response::from_parts(parts, body.boxed_unsync()))
    }
}

/// The error code the guest sees and the reason the event records, for a failed request.
fn classify(error: &reqwest::Error) -> (HttpError, String) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(internal) = e.downcast_ref::<InternalAddress>() {
            return (HttpError::DestinationIpProhibited, internal.to_string());
        }
        if let Some(redirect) = e.downcast_ref::<RedirectRefused>() {
            return (HttpError::HttpRequestDenied, redirect.to_string());
        }
        if let Some(lookup) = e.downcast_ref::<LookupFailed>() {
            let code = HttpError::DnsError { rcode: Some(lookup.reason.clone()), info_code: None };
            return (code, lookup.to_string());
        }
        source = e.source();
    }
    let why = crate::redact::redact(&format!("{:#}", WithoutUrl(error)));
    if error.is_timeout() {
        (HttpError::ConnectionTimeout, "no answer within the call's deadline".into())
    } else if error.is_connect() {
        (HttpError::ConnectionRefused, why)
    } else if error.is_body() || error.is_decode() {
        (HttpError::HttpResponseIncomplete, why)
    } else {
        tracing::debug!("wasi:http request failed: {}", WithoutUrl(error));
        (HttpError::HttpProtocolError, why)
    }
}

/// A reqwest error's text and causes, without the URL (which may carry a query).
struct WithoutUrl<'a>(&'a reqwest::Error);

impl std::fmt::Display for WithoutUrl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = String::new();
        let mut source = std::error::Error::source(self.0);
        while let Some(e) = source {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&e.to_string());
            source = e.source();
        }
        let kind = if self.0.is_connect() { "cannot connect" } else { "the request failed" };
        if text.is_empty() { write!(f, "{kind}") } else { write!(f, "{kind}: {text}") }
    }
}

/// What the run event of one request says, filled in as it goes.
struct Report {
    run: RunContext,
    source: String,
    method: String,
    target: Option<Target>,
    status: Option<u16>,
    started: Instant,
}

impl Report {
    fn emit(self, bytes: u64, error: Option<String>) {
        let target = self.target.as_ref();
        self.run.emit(RunEventKind::HttpRequest {
            source: self.source,
            method: self.method,
            scheme: target.map_or_else(String::new, |t| t.scheme.as_str().to_string()),
            host: target.map_or_else(String::new, |t| t.host.clone()),
            port: target.map_or(0, |t| t.port),
            path: target.map_or_else(String::new, |t| crate::redact::redact(&t.path)),
            status: self.status,
            bytes,
            duration_ms: self.started.elapsed().as_millis() as u64,
            error: error.map(|e| crate::redact::redact(&e)),
        });
    }
}

/// A response body delivered to the guest: bounded, counted, and reported
/// (once) when it ends, fails or is dropped.
struct MeteredBody {
    inner: Pin<Box<reqwest::Body>>,
    read: u64,
    done: bool,
    report: Option<Report>,
}

impl MeteredBody {
    fn finish(&mut self, error: Option<String>) {
        self.done = true;
        if let Some(report) = self.report.take() {
            report.emit(self.read, error);
        }
    }
}

impl Drop for MeteredBody {
    fn drop(&mut self) {
        self.finish(None);
    }
}

impl http_body::Body for MeteredBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match ready!(this.inner.as_mut().poll_frame(cx)) {
            None => {
                this.finish(None);
                Poll::Ready(None)
            }
            Some(Err(e)) => {
                let (code, why) = classify(&e);
                let code =
                    if matches!(code, HttpError::ConnectionTimeout) { HttpError::HttpResponseTimeout } else { code };
                this.finish(Some(why));
                Poll::Ready(Some(Err(code)))
            }
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.read += data.len() as u64;
                    if this.read > WASM_HTTP_RESPONSE_BODY_MAX_BYTES {
                        let read = this.read;
                        this.finish(Some(format!(
                            "the response body is over {WASM_HTTP_RESPONSE_BODY_MAX_BYTES} bytes"
                        )));
                        return Poll::Ready(Some(Err(HttpError::HttpResponseBodySize(Some(read)))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (http::Response<WasiBody>, Box<dyn Future<Output = Result<(), HttpError>> + Send>),
                HttpError,
            >,
        > + Send,
>;

/// The `wasi:http` hooks of one guest call's store.
pub struct GuestHttp {
    egress: Option<Arc<Egress>>,
    run: Option<RunContext>,
    source: String,
    deadline: Instant,
    requests: u32,
    /// Why every request of this call is refused (the tool does not use `http`).
    refused: Option<String>,
}

impl GuestHttp {
    pub fn new(egress: Option<Arc<Egress>>, run: Option<RunContext>, source: &str, deadline: Instant) -> GuestHttp {
        GuestHttp { egress, run, source: source.to_string(), deadline, requests: 0, refused: None }
    }

    /// The hooks of a call whose every request is refused, for `why`.
    pub fn refusing(self, why: String) -> GuestHttp {
        GuestHttp { refused: Some(why), ..self }
    }

    /// Refuse a request: its event now; the guest's answer once it has
    /// finished writing the body (read and dropped, bounded), so the guest
    /// sees the refusal rather than a body stream closed under it.
    fn refuse(report: Option<Report>, code: HttpError, why: String, mut body: WasiBody) -> SendFuture {
        if let Some(report) = report {
            report.emit(0, Some(why));
        } else {
            tracing::debug!("wasi:http request refused outside a run: {why}");
        }
        Box::new(async move {
            let mut read = 0usize;
            while let Some(Ok(frame)) = body.frame().await {
                read += frame.data_ref().map_or(0, |d| d.len());
                if read > WASM_HTTP_REQUEST_BODY_MAX_BYTES {
                    break;
                }
            }
            Err(code)
        })
    }
}

impl WasiHttpHooks for GuestHttp {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let target = Target::of_uri(request.uri());
        let Some(run) = self.run.clone() else {
            let why = format!("{}: HTTP requests are allowed only inside a tool call", self.source);
            return Self::refuse(None, HttpError::HttpRequestDenied, why, request.into_body());
        };
        let report = Report {
            run: run.clone(),
            source: self.source.clone(),
            method: request.method().to_string(),
            target: target.clone(),
            status: None,
            started: Instant::now(),
        };
        let Some(egress) = self.egress.clone() else {
            let why = format!("{} may not make HTTP requests", self.source);
            return Self::refuse(Some(report), HttpError::HttpRequestDenied, why, request.into_body());
        };
        if let Some(why) = self.refused.clone() {
            return Self::refuse(Some(report), HttpError::HttpRequestDenied, why, request.into_body());
        }
        let Some(target) = target else {
            let why = "the request's URL is not an http(s) URL with a host".to_string();
            return Self::refuse(Some(report), HttpError::HttpRequestUriInvalid, why, request.into_body());
        };
        self.requests += 1;
        if self.requests > WASM_HTTP_REQUESTS_PER_CALL {
            // One event says the limit was reached; the requests past it are refused quietly.
            let report = (self.requests == WASM_HTTP_REQUESTS_PER_CALL + 1).then_some(report);
            let why = format!("more than {WASM_HTTP_REQUESTS_PER_CALL} HTTP requests in one call");
            return Self::refuse(report, HttpError::ConnectionLimitReached, why, request.into_body());
        }
        if let Some(why) = egress.refusal(&target) {
            return Self::refuse(Some(report), HttpError::HttpRequestDenied, why, request.into_body());
        }
        let (deadline, cancel): (Instant, CancellationToken) = (self.deadline, run.cancel_token().clone());
        Box::new(async move {
            let sent = tokio::select! {
                sent = egress.send(request, report, deadline) => sent,
                () = cancel.cancelled() => return Err(HttpError::ConnectionTerminated),
            };
            match sent {
                Ok(response) => Ok((response, Box::new(async { Ok(()) }) as Box<dyn Future<Output = _> + Send>)),
                Err((code, why, report)) => {
                    report.emit(0, Some(why));
                    Err(code)
                }
            }
        })
    }

    /// The host client sets `Host` from the URL it was checked against.
    fn set_host_header(&mut self) -> bool {
        false
    }
}
