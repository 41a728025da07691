//! Sessions over Streamable HTTP, on one endpoint, `MCP_PATH`. A request whose
//! `MCP-Protocol-Version` is not a legacy one, or that carries the modern
//! envelope and no session, is a 2026-07-28 request: its headers are checked
//! against its body, it is served by a stateless session of its own, its
//! envelope and method errors get 400 and 404, and closing its response
//! cancels it. The rest is the 2025-11-25 transport.
//!
//! A POST carries one message: an `initialize` without a session opens one (its id in `Mcp-Session-Id`, at most `SERVE_HTTP_SESSIONS_MAX`
//! live, past it 503); everything after names its session (400 without, 404
//! for one that ended). A request is answered on its own response — plain
//! JSON when the answer is all there is, else an event stream carrying what
//! the call asks the client first (forms, sampling), then the answer; a
//! notification or an answer to our request gets 202. DELETE ends a session;
//! GET gets 405 (nothing is said outside a request's stream). A session
//! unused for `HttpServeOptions::session_idle` with nothing in flight ends.
//!
//! Before any of that, every request passes the same checks: `Host` and
//! `Origin` must name loopback when the server is bound to loopback (DNS
//! rebinding), and must agree otherwise; a server off loopback needs a bearer
//! token and every request must carry it (401); a body is at most
//! `SERVE_HTTP_BODY_MAX_BYTES` (413); a connection has
//! `SERVE_HTTP_HEADER_READ_TIMEOUT` to send its headers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use serde_json::Value;

use super::{Outlet, ServedTools, ServerInfo, Session, modern};
use crate::jsonrpc::{
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, Message, PARSE_ERROR, RequestId, SERVER_BUSY, WireError, encode,
    parse,
};
use crate::limits::{
    SERVE_HTTP_BODY_MAX_BYTES, SERVE_HTTP_CONNECTIONS_MAX, SERVE_HTTP_HEADER_READ_TIMEOUT, SERVE_HTTP_SESSION_IDLE,
    SERVE_HTTP_SESSIONS_MAX, WRITER_QUEUE,
};
use crate::protocol::{
    HEADER_MISMATCH, LEGACY_VERSIONS, MISSING_REQUIRED_CLIENT_CAPABILITY, MODERN_VERSION, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::sync::lock;

/// The one endpoint.
pub const MCP_PATH: &str = "/mcp";

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// How an HTTP server serves.
#[derive(Debug, Clone)]
pub struct HttpServeOptions {
    /// The bearer token every request must carry (`Authorization: Bearer …`); required off loopback.
    pub token: Option<String>,
    /// A session unused this long, with nothing in flight, ends (default `SERVE_HTTP_SESSION_IDLE`).
    pub session_idle: Duration,
    /// How long a connection may take to send a request's headers (default `SERVE_HTTP_HEADER_READ_TIMEOUT`).
    pub header_read_timeout: Duration,
}

impl Default for HttpServeOptions {
    fn default() -> Self {
        HttpServeOptions {
            token: None,
            session_idle: SERVE_HTTP_SESSION_IDLE,
            header_read_timeout: SERVE_HTTP_HEADER_READ_TIMEOUT,
        }
    }
}

/// Why an HTTP server could not serve.
#[derive(Debug, thiserror::Error)]
pub enum HttpServeError {
    #[error("{0} is not a loopback address: serving on it needs a bearer token (--token-file)")]
    TokenRequired(SocketAddr),
    #[error("the bearer token is empty")]
    EmptyToken,
    #[error("cannot serve: {0}")]
    Io(#[from] std::io::Error),
}

/// Serve sessions on `listener` until `stop` fires; then every session ends.
pub async fn serve_http(
    listener: TcpListener,
    options: HttpServeOptions,
    info: ServerInfo,
    tools: Arc<dyn ServedTools>,
    stop: CancellationToken,
) -> Result<(), HttpServeError> {
    let local = listener.local_addr()?;
    check_bind(local, options.token.as_deref())?;
    let loopback = local.ip().is_loopback();
    let sweep_every = (options.session_idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
    let info = Arc::new(info);
    let modern = Session::stateless(Arc::clone(&info), Arc::clone(&tools));
    let served = Arc::new(Served { info, tools, options, loopback, sessions: Mutex::new(HashMap::new()), modern });
    let mut connections = tokio::task::JoinSet::new();
    let mut sweep = tokio::time::interval(sweep_every);
    loop {
        tokio::select! {
            // Past the bound no connection is accepted until one ends: clients that send and never read hold
            // at most this many bodies and queues.
            accepted = listener.accept(), if connections.len() < SERVE_HTTP_CONNECTIONS_MAX => match accepted {
                Ok((stream, _)) => {
                    let served = Arc::clone(&served);
                    connections.spawn(connection(served, stream));
                }
                Err(e) => {
                    // Out of descriptors, a connection reset before accept: wait a little, go on.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = sweep.tick() => served.end_idle_sessions(),
            _ = stop.cancelled() => break,
        }
        while connections.try_join_next().is_some() {}
    }
    let mut sessions: Vec<_> = lock(&served.sessions).drain().map(|(_, live)| live.session).collect();
    sessions.push(Arc::clone(&served.modern));
    futures_util::future::join_all(sessions.iter().map(|s| s.end())).await;
    connections.shutdown().await;
    Ok(())
}

/// Off loopback, a server needs a (non-empty) bearer token.
pub fn check_bind(local: SocketAddr, token: Option<&str>) -> Result<(), HttpServeError> {
    match token {
        Some("") => Err(HttpServeError::EmptyToken),
        None if !local.ip().is_loopback() => Err(HttpServeError::TokenRequired(local)),
        _ => Ok(()),
    }
}

async fn connection(served: Arc<Served>, stream: tokio::net::TcpStream) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(served.options.header_read_timeout);
    let service = hyper::service::service_fn(move |request| {
        let served = Arc::clone(&served);
        async move { Ok::<_, Infallible>(served.handle(request).await) }
    });
    if let Err(e) = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service).await {
        tracing::debug!("an HTTP connection ended: {e}");
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// A live session and when the client last used it.
struct Live {
    session: Arc<Session>,
    last_seen: Instant,
}

struct Served {
    info: Arc<ServerInfo>,
    tools: Arc<dyn ServedTools>,
    options: HttpServeOptions,
    loopback: bool,
    sessions: Mutex<HashMap<String, Live>>,
    /// Where every modern request is served: no lifecycle, calls parked between rounds kept here.
    modern: Arc<Session>,
}

/// A refusal: its status and a JSON-RPC error saying why.
struct Refusal(StatusCode, WireError);

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Refusal {
        let code = if status == StatusCode::SERVICE_UNAVAILABLE { SERVER_BUSY } else { INVALID_REQUEST };
        Refusal(status, WireError::new(code, message))
    }

    fn response(self) -> Response<Body> {
        let mut response = json_response(self.0, &Message::OrphanError(self.1));
        if self.0 == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        }
        if self.0 == StatusCode::METHOD_NOT_ALLOWED {
            response.headers_mut().insert(header::ALLOW, header::HeaderValue::from_static("POST, DELETE"));
        }
        response
    }
}

impl Served {
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        match self.route(request).await {
            Ok(response) => response,
            Err(refusal) => refusal.response(),
        }
    }

    async fn route(&self, request: Request<Incoming>) -> Result<Response<Body>, Refusal> {
        if request.uri().path() != MCP_PATH {
            return Err(Refusal::new(StatusCode::NOT_FOUND, format!("the MCP endpoint is {MCP_PATH}")));
        }
        self.check_origin(request.headers())?;
        self.check_token(request.headers())?;
        match *request.method() {
            Method::POST => self.post(request).await,
            Method::DELETE => {
                let id = session_id(request.headers())?;
                let live = lock(&self.sessions).remove(&id);
                let live = live.ok_or_else(|| Refusal::new(StatusCode::NOT_FOUND, "no such session"))?;
                live.session.end().await;
                Ok(empty(StatusCode::NO_CONTENT))
            }
            _ => Err(Refusal::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "this server says everything on the stream of the request it concerns: POST a message, DELETE a session",
            )),
        }
    }

    /// DNS rebinding: on loopback, `Host` and any `Origin` must name loopback; elsewhere any `Origin` must be the `Host`.
    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let forbidden = |what: &str| Refusal::new(StatusCode::FORBIDDEN, format!("{what} is not allowed here"));
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let host_name = host.and_then(|h| url::Url::parse(&format!("http://{h}")).ok()).and_then(|u| {
            let name = u.host_str()?.to_ascii_lowercase();
            Some((name, u.port_or_known_default()))
        });
        if self.loopback && !host_name.as_ref().is_some_and(|(name, _)| is_loopback_name(name)) {
            return Err(forbidden(&format!("Host {}", host.unwrap_or("(none)"))));
        }
        let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
        let origin_text = origin.to_str().unwrap_or("(not text)");
        let parsed = url::Url::parse(origin_text).ok();
        let origin_name = parsed.as_ref().and_then(|u| u.host_str()).map(str::to_ascii_lowercase);
        let allowed = match (&origin_name, &host_name) {
            (Some(name), _) if self.loopback => is_loopback_name(name),
            (Some(name), Some((host, _))) => name == host,
            _ => false,
        };
        if allowed { Ok(()) } else { Err(forbidden(&format!("Origin {origin_text}"))) }
    }

    fn check_token(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(expected) = &self.options.token else { return Ok(()) };
        let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let token = given.and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")));
        match token {
            Some(token) if same_secret(token.trim().as_bytes(), expected.as_bytes()) => Ok(()),
            Some(_) => Err(Refusal::new(StatusCode::UNAUTHORIZED, "the bearer token is not this server's")),
            None => Err(Refusal::new(StatusCode::UNAUTHORIZED, "this server needs Authorization: Bearer TOKEN")),
        }
    }

    async fn post(&self, request: Request<Incoming>) -> Result<Response<Body>, Refusal> {
        let headers = request.headers().clone();
        let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
        if !content_type.to_ascii_lowercase().starts_with("application/json") {
            let why = format!("a message is application/json, not {content_type:?}");
            return Err(Refusal::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, why));
        }
        let body = read_body(request).await?;
        if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return Err(Refusal::new(StatusCode::BAD_REQUEST, "one message per POST: batches are not accepted"));
        }
        let message = match parse(&body) {
            Ok(message) => message,
            Err(malformed) => {
                let error = Message::OrphanError(WireError::new(PARSE_ERROR, malformed.to_string()));
                return Ok(json_response(StatusCode::BAD_REQUEST, &error));
            }
        };
        // The era: a version header we know from the legacy lifecycle, or none on a request that carries a
        // session or no envelope, is legacy; anything else is a modern request, answered on its own.
        let version = headers.get(VERSION_HEADER).map(|v| v.to_str().unwrap_or_default());
        let modern = match version {
            Some(version) => !LEGACY_VERSIONS.contains(&version),
            None => {
                !headers.contains_key(SESSION_HEADER)
                    && matches!(&message, Message::Request { method, params, .. }
                        if method != "initialize" && modern::speaks_modern(method, params.as_ref()))
            }
        };
        if modern {
            return self.modern_post(message, &headers).await;
        }
        let opens = matches!(&message, Message::Request { method, .. } if method == "initialize")
            && !headers.contains_key(SESSION_HEADER);
        let (id, session) = if opens { self.open()? } else { self.session(&headers)? };
        let Message::Request { id: request_id, .. } = &message else {
            // A notification, or the client's answer to one of our requests: nothing to say back here.
            let (outlet, _) = Outlet::new(1);
            session.receive(message, &outlet).await;
            return Ok(empty(StatusCode::ACCEPTED));
        };
        let request_id = request_id.clone();
        // A call may take long and ask the client things first: its stream starts at once, when the client takes one.
        let streams = matches!(&message, Message::Request { method, .. } if method == "tools/call")
            && headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("text/event-stream"));
        let (outlet, said) = Outlet::new(WRITER_QUEUE);
        session.receive(message, &outlet).await;
        drop(outlet);
        let mut response = answer(said, request_id, streams, |_| StatusCode::OK, None).await;
        if opens {
            let value = header::HeaderValue::from_str(&id).expect("a uuid is a header value");
            response.headers_mut().insert(SESSION_HEADER, value);
        }
        Ok(response)
    }

    /// A modern request: its headers must agree with its body (`-32020`), then it is served by the modern
    /// session, on its own response; closing that response before its answer cancels it.
    async fn modern_post(&self, message: Message, headers: &HeaderMap) -> Result<Response<Body>, Refusal> {
        let (id, method, params) = match message {
            Message::Request { id, method, params } => (id, method, params),
            // Nothing to act on: over HTTP, closing a request's stream is its cancel.
            Message::Notification { .. } => return Ok(empty(StatusCode::ACCEPTED)),
            Message::Response { .. } | Message::OrphanError(_) => {
                let why = format!("a {MODERN_VERSION} client is sent no requests, so it posts no answers");
                return Err(Refusal::new(StatusCode::BAD_REQUEST, why));
            }
        };
        if let Err(mismatch) = check_headers(headers, &method, params.as_ref()) {
            return Ok(json_response(StatusCode::BAD_REQUEST, &Message::Response { id, result: Err(mismatch) }));
        }
        let (outlet, said) = Outlet::new(WRITER_QUEUE);
        let closed = outlet.closed.clone();
        self.modern.receive(Message::Request { id: id.clone(), method, params }, &outlet).await;
        drop(outlet);
        Ok(answer(said, id, false, modern_status, Some(closed)).await)
    }

    /// A new session, when there is room for one.
    fn open(&self) -> Result<(String, Arc<Session>), Refusal> {
        let mut sessions = lock(&self.sessions);
        if sessions.len() >= SERVE_HTTP_SESSIONS_MAX {
            let why = format!("{SERVE_HTTP_SESSIONS_MAX} sessions are open: end one (DELETE) or try again later");
            return Err(Refusal::new(StatusCode::SERVICE_UNAVAILABLE, why));
        }
        let id = uuid::Uuid::new_v4().simple().to_string();
        let session = Session::new(Arc::clone(&self.info), Arc::clone(&self.tools));
        sessions.insert(id.clone(), Live { session: Arc::clone(&session), last_seen: Instant::now() });
        Ok((id, session))
    }

    /// The session a request names, marked as used now.
    fn session(&self, headers: &HeaderMap) -> Result<(String, Arc<Session>), Refusal> {
        let id = session_id(headers)?;
        let mut sessions = lock(&self.sessions);
        let live = sessions.get_mut(&id).ok_or_else(|| {
            Refusal::new(StatusCode::NOT_FOUND, "no such session (it ended, or expired): initialize a new one")
        })?;
        live.last_seen = Instant::now();
        Ok((id, Arc::clone(&live.session)))
    }

    fn end_idle_sessions(&self) {
        let idle = self.options.session_idle;
        let ended: Vec<_> = {
            let mut sessions = lock(&self.sessions);
            let expired: Vec<String> = sessions
                .iter()
                .filter(|(_, live)| live.last_seen.elapsed() >= idle && live.session.is_quiet())
                .map(|(id, _)| id.clone())
                .collect();
            expired.iter().filter_map(|id| sessions.remove(id)).collect()
        };
        for live in ended {
            tracing::debug!("a session unused for {} s ended", idle.as_secs());
            // Off the accept loop: ending waits for what is still running (nothing, normally) up to the grace.
            tokio::spawn(async move { live.session.end().await });
        }
    }
}

fn session_id(headers: &HeaderMap) -> Result<String, Refusal> {
    let id = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok());
    id.map(str::to_string)
        .ok_or_else(|| Refusal::new(StatusCode::BAD_REQUEST, "Mcp-Session-Id is missing: initialize first"))
}

/// The status of a modern request's error: 400 for a request that is not one (its envelope, its headers, a
/// version or capability), 404 for a method not served here.
fn modern_status(error: &WireError) -> StatusCode {
    match error.code {
        METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        INVALID_PARAMS | HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION => {
            StatusCode::BAD_REQUEST
        }
        _ => StatusCode::OK,
    }
}

/// A modern request's headers must say what its body says: `MCP-Protocol-Version` the envelope's version,
/// `Mcp-Method` the method, `Mcp-Name` the tool, prompt or resource (plain, or `=?base64?…?=`).
fn check_headers(headers: &HeaderMap, method: &str, params: Option<&Value>) -> Result<(), WireError> {
    let named = |name: &str| headers.get(name).map(|v| v.to_str().unwrap_or_default());
    let mismatch = |header: &str, given: &str, body: &str| {
        WireError::new(
            HEADER_MISMATCH,
            format!("Header mismatch: {header} header value '{given}' does not match body value '{body}'"),
        )
    };
    if let (Some(given), Some(body)) = (named(VERSION_HEADER), modern::declared_version(params))
        && given != body
    {
        return Err(mismatch("MCP-Protocol-Version", given, body));
    }
    if let Some(given) = named("mcp-method")
        && given != method
    {
        return Err(mismatch("Mcp-Method", given, method));
    }
    let body_name = match method {
        "tools/call" | "prompts/get" => params.and_then(|p| p["name"].as_str()),
        "resources/read" => params.and_then(|p| p["uri"].as_str()),
        _ => None,
    };
    if let (Some(given), Some(body)) = (named("mcp-name"), body_name)
        && crate::http::decode_header_value(given) != body
    {
        return Err(mismatch("Mcp-Name", given, body));
    }
    Ok(())
}

fn is_loopback_name(name: &str) -> bool {
    name == "localhost" || name == "[::1]" || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// Compare secrets in time that does not depend on where they differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

async fn read_body(request: Request<Incoming>) -> Result<Bytes, Refusal> {
    let too_large = || {
        let why = format!("a message is at most {SERVE_HTTP_BODY_MAX_BYTES} bytes");
        Refusal::new(StatusCode::PAYLOAD_TOO_LARGE, why)
    };
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > SERVE_HTTP_BODY_MAX_BYTES as u64) {
        return Err(too_large());
    }
    match Limited::new(request.into_body(), SERVE_HTTP_BODY_MAX_BYTES).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(Refusal::new(StatusCode::BAD_REQUEST, format!("reading the body failed: {e}"))),
    }
}

/// Fires `closed` when dropped before the answer went out: the client closed the response.
struct CloseGuard {
    closed: Option<CancellationToken>,
    answered: bool,
}

impl Drop for CloseGuard {
    fn drop(&mut self) {
        if let (false, Some(closed)) = (self.answered, &self.closed) {
            closed.cancel();
        }
    }
}

/// The response to request `id`: an event stream of everything said until
/// the answer when `streams`, or when something comes before the answer;
/// else the answer alone, as JSON, with the status `status` gives its error.
/// `closed` fires if the client goes before the answer (a modern call's cancel).
async fn answer(
    mut said: tokio::sync::mpsc::Receiver<Message>,
    id: RequestId,
    streams: bool,
    status: fn(&WireError) -> StatusCode,
    closed: Option<CancellationToken>,
) -> Response<Body> {
    let mut guard = CloseGuard { closed, answered: false };
    let first = if streams { None } else { said.recv().await };
    if let Some(message @ Message::Response { result, .. }) = &first {
        guard.answered = true;
        return json_response(result.as_ref().err().map_or(StatusCode::OK, status), message);
    }
    // Said before the answer (a form, a sampling request), or nothing at all (a cancelled call).
    let events = futures_util::stream::unfold((first, said, guard), move |(first, mut said, mut guard)| {
        let id = id.clone();
        async move {
            if guard.answered {
                return None;
            }
            let message = match first {
                Some(message) => message,
                None => said.recv().await?,
            };
            guard.answered = matches!(&message, Message::Response { id: answered, .. } if *answered == id);
            let event = format!("event: message\ndata: {}\n\n", encode(&message));
            Some((Ok::<_, Infallible>(Frame::data(Bytes::from(event))), (None, said, guard)))
        }
    });
    let mut response = Response::new(StreamBody::new(events).boxed());
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/event-stream"));
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-cache"));
    response
}

fn json_response(status: StatusCode, message: &Message) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(encode(message))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests;
