//! The Streamable HTTP transport, both eras, on reqwest (rustls).
//!
//! Every client message is one POST with `Accept: application/json,
//! text/event-stream`. An answer is plain JSON or SSE-framed JSON (events with
//! empty `data`, such as priming events, and comment lines are skipped); server
//! requests and notifications that arrive on a POST's stream are served under
//! the shared server-request rules and answered with a separate POST (202). A
//! message (a JSON body or one SSE event) may be at most
//! `HTTP_BODY_MAX_BYTES`; more fails that request.
//!
//! Legacy era: `Mcp-Session-Id` from `initialize` is echoed on every later
//! request, `MCP-Protocol-Version` once negotiated; a 404 on a request that
//! carried a session id means the session expired, so the transport
//! re-initializes once and retries; a stream that ends without the response is
//! resumed with GET + `Last-Event-ID` after the server's `retry` delay; a GET
//! stream carries the server's own messages; teardown DELETEs the session; a
//! cancelled request sends `notifications/cancelled`.
//!
//! Modern era (a request whose `_meta` names a protocol version): no session;
//! the headers `MCP-Protocol-Version` (equal to `_meta`), `Mcp-Method`,
//! `Mcp-Name` (`tools/call`, `prompts/get`, `resources/read`) and
//! `Mcp-Param-*` from the tool's `x-mcp-header` properties (a tool with an
//! invalid declaration is dropped from the listing); a cancel closes the
//! response stream.
//!
//! Its parts: `sse.rs` (reading event streams), `headers.rs` (modern headers).
//!
//! With OAuth (`HttpSpec::auth`, `crate::auth`), every request carries the
//! server's token, and a 401 or a 403 `insufficient_scope` is answered by the
//! authorizer (refresh, login, step-up) and the request sent again, at most
//! `AUTH_ATTEMPTS_MAX` times; the time spent authorizing does not count
//! against the request's timeout.
//!
//! Redirects are followed only to the same origin. Configured headers are sent
//! and never written anywhere: errors name the status and a short body, not the
//! request.

mod headers;
pub(crate) mod sse;

use headers::header_value_of;
pub use headers::{encode_header_value, tool_header_params};
use sse::{Resume, bounded};

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::Eventsource as _;
use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthError, Authorizer, Challenge};
use crate::error::ClientError;
use crate::jsonrpc::{Message, RequestId, WireError, encode, parse};
use crate::limits::{
    AUTH_ATTEMPTS_MAX, CLOSE_GRACE, HTTP_BODY_MAX_BYTES, HTTP_CONNECT_TIMEOUT, HTTP_ERROR_BODY_MAX_BYTES,
    HTTP_ERROR_TEXT_MAX_CHARS, HTTP_GET_STREAM_DEFAULT_RETRY, HTTP_ONE_WAY_TIMEOUT, HTTP_SSE_DEFAULT_RETRY,
    HTTP_SSE_RESUMES_MAX,
};
use crate::lock;
use crate::transport::{ServerRequests, Transport, dispatch_request, inbound_limit};

/// Where a remote server is.
#[derive(Clone)]
pub struct HttpSpec {
    pub url: String,
    /// Sent with every request; kept only in memory.
    pub headers: Vec<(String, String)>,
    /// OAuth for this server: its token goes on every request, and a 401 or a
    /// 403 `insufficient_scope` is answered by refreshing or logging in.
    pub auth: Option<Arc<Authorizer>>,
}

impl std::fmt::Debug for HttpSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("HttpSpec")
            .field("url", &self.url)
            .field("header_names", &names)
            .field("oauth", &self.auth.is_some())
            .finish()
    }
}

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The per-connection state the requests share.
#[derive(Default)]
struct State {
    session_id: Option<String>,
    /// The negotiated legacy version (sent as a header once known).
    legacy_version: Option<String>,
    /// The params of the `initialize` that opened the session (to re-open an expired one).
    initialize_params: Option<Value>,
    /// The session is in the modern era.
    modern: bool,
    /// Modern: per tool, the `(property, header)` pairs of its `x-mcp-header` declarations.
    tool_headers: HashMap<String, Vec<(String, String)>>,
}

struct Inner {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    handler: Arc<dyn ServerRequests>,
    in_flight: Arc<Semaphore>,
    next_id: AtomicI64,
    state: Mutex<State>,
    closed: Mutex<Option<String>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Held while an expired session is re-opened.
    reopening: tokio::sync::Mutex<()>,
    /// The configured header values (and their tokens), scrubbed from error text.
    secrets: Vec<String>,
    auth: Option<Arc<Authorizer>>,
}

/// The time one request spent on its server's authorization (a login in a
/// browser, token requests): it does not count against the request's timeout,
/// so a login the first request of a session needs is not cut short by it.
#[derive(Clone, Default)]
struct AuthClock(Arc<Mutex<AuthTime>>);

#[derive(Default)]
struct AuthTime {
    spent: Duration,
    since: Option<std::time::Instant>,
    /// What the request's deadline was already moved by.
    credited: Duration,
}

impl AuthClock {
    fn start(&self) {
        lock(&self.0).since = Some(std::time::Instant::now());
    }

    fn stop(&self) {
        let mut time = lock(&self.0);
        if let Some(since) = time.since.take() {
            time.spent += since.elapsed();
        }
    }

    /// Authorization time (ongoing included) the deadline was not moved by yet.
    fn uncredited(&self) -> Duration {
        let mut time = lock(&self.0);
        let total = time.spent + time.since.map_or(Duration::ZERO, |since| since.elapsed());
        let extra = total.saturating_sub(time.credited);
        time.credited = total;
        extra
    }
}

tokio::task_local! {
    /// The clock of the request this task is exchanging (none in background tasks).
    static AUTH_CLOCK: AuthClock;
}

/// One connection to a Streamable HTTP server.
pub struct HttpConnection {
    inner: Arc<Inner>,
}

/// reqwest's error with its causes. Its text names the URL, never headers
/// or bodies; a timeout says so in words.
pub(crate) fn error_text(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() { format!("{e} (no answer in time)") } else { e.to_string() };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

fn http_error(e: reqwest::Error) -> ClientError {
    ClientError::Http(error_text(&e))
}

impl HttpConnection {
    /// A connection to `spec.url`; nothing is sent yet.
    pub fn new(spec: &HttpSpec, handler: Arc<dyn ServerRequests>) -> Result<HttpConnection, ClientError> {
        let url = reqwest::Url::parse(&spec.url)
            .map_err(|e| ClientError::Http(format!("the url {:?} is not valid: {e}", spec.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError::Http(format!("the url must be http or https, not {}", url.scheme())));
        }
        let mut headers = HeaderMap::new();
        let mut secrets = Vec::new();
        for (_, value) in &spec.headers {
            secrets.push(value.clone());
            secrets.extend(value.split_whitespace().filter(|word| word.len() >= 8).map(str::to_string));
        }
        secrets.retain(|s| s.len() >= 4);
        for (name, value) in &spec.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ClientError::Http(format!("the header name {name:?} is not valid")))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| ClientError::Http(format!("the value of header {name} is not valid")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let origin = url.origin();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= 5 {
                attempt.error("too many redirects")
            } else if attempt.url().origin() == origin {
                attempt.follow()
            } else {
                attempt.stop()
            }
        });
        let client = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(HTTP_CONNECT_TIMEOUT)
            .build()
            .map_err(http_error)?;
        Ok(HttpConnection {
            inner: Arc::new(Inner {
                client,
                url,
                headers,
                handler,
                in_flight: inbound_limit(),
                next_id: AtomicI64::new(0),
                state: Mutex::default(),
                closed: Mutex::default(),
                tasks: Mutex::default(),
                reopening: tokio::sync::Mutex::new(()),
                secrets,
                auth: spec.auth.clone(),
            }),
        })
    }

    /// Open the server's own stream (legacy: a GET after the handshake) for its
    /// requests and notifications; a server without one answers 405 and that is
    /// fine. Returns once the server answered the GET (at most `CLOSE_GRACE`),
    /// so what the server sends on it from then on is heard.
    pub async fn open_server_stream(&self) {
        let inner = Arc::clone(&self.inner);
        let (opened, answered) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move { inner.listen(opened).await });
        lock(&self.inner.tasks).push(task);
        let _ = tokio::time::timeout(CLOSE_GRACE, answered).await;
    }
}

enum Streamed {
    Answer(Result<Value, WireError>),
    /// The stream ended without the answer; resume from this event id after `retry`.
    Ended {
        last_event_id: Option<String>,
        retry: Option<Duration>,
    },
}

impl Inner {
    fn is_closed(&self) -> Option<String> {
        lock(&self.closed).clone()
    }

    /// Send the request `build` makes, with the server's token when it has
    /// OAuth; a 401 (or a 403 asking for more scope) is answered by the
    /// authorizer and the request sent again, at most `AUTH_ATTEMPTS_MAX` times.
    async fn send(&self, build: impl Fn() -> reqwest::RequestBuilder) -> Result<reqwest::Response, ClientError> {
        let Some(auth) = &self.auth else {
            return build().send().await.map_err(http_error);
        };
        let mut attempts = 0;
        loop {
            let mut builder = build();
            let bearer = auth.bearer().await;
            if let Some((_, value)) = &bearer
                && let Ok(mut value) = HeaderValue::from_str(value)
            {
                value.set_sensitive(true);
                builder = builder.header(reqwest::header::AUTHORIZATION, value);
            }
            let response = builder.send().await.map_err(http_error)?;
            let status = response.status().as_u16();
            let challenge = Challenge::from_headers(response.headers());
            if status != 401 && !(status == 403 && challenge.is_insufficient_scope()) {
                return Ok(response);
            }
            let failed = |error: AuthError| ClientError::Auth { server: auth.server().to_string(), error };
            if attempts >= AUTH_ATTEMPTS_MAX {
                return Err(failed(AuthError::StillRefused { status }));
            }
            attempts += 1;
            let clock = AUTH_CLOCK.try_with(AuthClock::clone).ok();
            if let Some(clock) = &clock {
                clock.start();
            }
            let authorized = auth.challenged(bearer.map(|(generation, _)| generation), status, &challenge).await;
            if let Some(clock) = &clock {
                clock.stop();
            }
            authorized.map_err(failed)?;
        }
    }

    /// A failure status as an error; a server that echoes a configured header
    /// value (a bad key) never gets it into the error's text.
    async fn status_error(&self, response: reqwest::Response) -> ClientError {
        status_error(response, |text| {
            self.secrets.iter().fold(text, |text, secret| text.replace(secret.as_str(), "[REDACTED]"))
        })
        .await
    }

    /// Build a POST for one message, with the era's headers.
    fn post(&self, message: &Message) -> reqwest::RequestBuilder {
        let mut builder = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json");
        let (method, params) = match message {
            Message::Request { method, params, .. } | Message::Notification { method, params } => {
                (Some(method.as_str()), params.as_ref())
            }
            _ => (None, None),
        };
        let modern_version = params.and_then(|p| p.pointer("/_meta")).and_then(|m| m.get(META_VERSION));
        if let (Some(method), Some(version)) = (method, modern_version.and_then(Value::as_str)) {
            builder = builder.header(VERSION_HEADER, version).header("mcp-method", method);
            if matches!(method, "tools/call" | "prompts/get" | "resources/read")
                && let Some(name) = params.and_then(|p| p.get("name").or_else(|| p.get("uri"))).and_then(Value::as_str)
            {
                builder = builder.header("mcp-name", encode_header_value(name));
            }
            if method == "tools/call"
                && let Some(params) = params
            {
                let name = params.get("name").and_then(Value::as_str).unwrap_or_default();
                let declared = lock(&self.state).tool_headers.get(name).cloned().unwrap_or_default();
                for (property, header) in declared {
                    let value = params.get("arguments").and_then(|a| a.get(&property)).and_then(header_value_of);
                    if let Some(value) = value {
                        builder = builder.header(format!("mcp-param-{header}"), value);
                    }
                }
            }
        } else {
            let state = lock(&self.state);
            // A new session starts without the old id (and only `initialize` starts one).
            if let Some(session) = state.session_id.as_ref().filter(|_| method != Some("initialize")) {
                builder = builder.header(SESSION_HEADER, session);
            }
            if let Some(version) = &state.legacy_version {
                builder = builder.header(VERSION_HEADER, version);
            }
        }
        builder.body(encode(message))
    }

    /// POST a message that expects no answer (a notification, our response): 2xx.
    async fn send_one_way(&self, message: &Message) -> Result<(), ClientError> {
        let response = self.send(|| self.post(message).timeout(HTTP_ONE_WAY_TIMEOUT)).await?;
        if response.status().is_success() { Ok(()) } else { Err(self.status_error(response).await) }
    }

    /// Serve a server request from a stream (the answer stream of the request
    /// tagged `related`, if any); the answer is POSTed back.
    fn serve(self: &Arc<Self>, id: RequestId, method: String, params: Option<Value>, related: Option<u64>) {
        let inner = Arc::clone(self);
        dispatch_request(&self.handler, &self.in_flight, id, method, params, related, move |response| {
            Box::pin(async move {
                if let Err(e) = inner.send_one_way(&response).await {
                    tracing::warn!("answering a server request failed: {e}");
                }
            })
        });
    }

    /// Read an SSE stream: serve what the server asks (as related to the
    /// request tagged `tag`), and return the answer to `id`.
    async fn read_stream(
        self: &Arc<Self>,
        response: reqwest::Response,
        id: Option<&RequestId>,
        tag: Option<u64>,
    ) -> Result<Streamed, ClientError> {
        let resume = Arc::new(Mutex::new(Resume::default()));
        let mut events = bounded(response.bytes_stream(), Arc::clone(&resume)).eventsource();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(eventsource_stream::EventStreamError::Transport(e)) if e.starts_with("an event of more") => {
                    return Err(ClientError::Protocol(format!("the server sent {e}")));
                }
                Err(e) => {
                    tracing::debug!("the event stream broke: {e}");
                    break;
                }
            };
            if event.data.trim().is_empty() {
                continue;
            }
            match parse(event.data.as_bytes()) {
                Ok(Message::Response { id: rid, result }) if Some(&rid) == id => return Ok(Streamed::Answer(result)),
                Ok(Message::Response { id: rid, .. }) => {
                    tracing::debug!("a response for {rid} on another stream was ignored")
                }
                Ok(Message::Request { method, .. }) if lock(&self.state).modern => {
                    tracing::warn!(
                        "ignoring a {method} request on a modern stream: 2026-07-28 servers ask with input_required"
                    );
                }
                Ok(Message::Request { id, method, params }) => self.serve(id, method, params, tag),
                Ok(Message::Notification { method, params }) => self.handler.notification(&method, params.as_ref()),
                Ok(Message::OrphanError(e)) => tracing::warn!("the server sent an error without an id: {e}"),
                Err(e) => tracing::warn!("ignoring a malformed event from the server: {e}"),
            }
        }
        let Resume { last_event_id, retry } = lock(&resume).clone();
        Ok(Streamed::Ended { last_event_id, retry })
    }

    /// Resume a stream with GET + `Last-Event-ID`.
    async fn resume(&self, last_event_id: &str) -> Result<reqwest::Response, ClientError> {
        let build = || {
            let mut builder = self
                .client
                .get(self.url.clone())
                .headers(self.headers.clone())
                .header(ACCEPT, "text/event-stream")
                .header("last-event-id", last_event_id);
            let state = lock(&self.state);
            if let Some(session) = &state.session_id {
                builder = builder.header(SESSION_HEADER, session);
            }
            if let Some(version) = &state.legacy_version {
                builder = builder.header(VERSION_HEADER, version);
            }
            builder
        };
        let response = self.send(build).await?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        Ok(response)
    }

    /// The answer to one request from its HTTP response (JSON or SSE, resumed if it breaks).
    async fn answer(
        self: &Arc<Self>,
        id: &RequestId,
        tag: Option<u64>,
        method: &str,
        response: reqwest::Response,
    ) -> Result<Value, ClientError> {
        let status = response.status();
        if status == reqwest::StatusCode::ACCEPTED {
            return Err(ClientError::Protocol(format!("the server accepted {method} (202) without answering it")));
        }
        if !status.is_success() {
            return Err(self.status_error(response).await);
        }
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        if content_type.starts_with("application/json") {
            let body = read_body(response, HTTP_BODY_MAX_BYTES).await?;
            return match parse(&body) {
                Ok(Message::Response { id: rid, result }) if &rid == id => result.map_err(ClientError::Wire),
                Ok(Message::OrphanError(e)) => Err(ClientError::Wire(e)),
                Ok(_) => Err(ClientError::Protocol(format!("the answer to {method} is not its response"))),
                Err(e) => Err(ClientError::Protocol(format!("the answer to {method} is not JSON-RPC: {e}"))),
            };
        }
        if !content_type.starts_with("text/event-stream") {
            return Err(ClientError::Protocol(format!(
                "the answer to {method} has content type {content_type:?}, not JSON or an event stream"
            )));
        }
        let mut streamed = self.read_stream(response, Some(id), tag).await?;
        let mut resumes = 0;
        loop {
            match streamed {
                Streamed::Answer(result) => return result.map_err(ClientError::Wire),
                Streamed::Ended { last_event_id: Some(last), retry }
                    if resumes < HTTP_SSE_RESUMES_MAX && !lock(&self.state).modern =>
                {
                    resumes += 1;
                    tokio::time::sleep(retry.unwrap_or(HTTP_SSE_DEFAULT_RETRY)).await;
                    let response = self.resume(&last).await?;
                    streamed = match self.read_stream(response, Some(id), tag).await? {
                        Streamed::Ended { last_event_id: None, retry: r } => {
                            Streamed::Ended { last_event_id: Some(last), retry: r.or(retry) }
                        }
                        other => other,
                    };
                }
                Streamed::Ended { .. } => {
                    return Err(ClientError::Protocol(format!(
                        "the event stream for {method} ended without a response"
                    )));
                }
            }
        }
    }

    /// Send one request and wait for its answer; an expired legacy session is re-opened once.
    async fn exchange(
        self: &Arc<Self>,
        id: RequestId,
        tag: Option<u64>,
        method: &str,
        params: Option<Value>,
    ) -> Result<Value, ClientError> {
        let message = Message::Request { id: id.clone(), method: method.into(), params: params.clone() };
        let mut reopened = false;
        loop {
            let sent_session = lock(&self.state).session_id.clone();
            let response = self.send(|| self.post(&message)).await?;
            if response.status() == reqwest::StatusCode::NOT_FOUND
                && sent_session.is_some()
                && !reopened
                && method != "initialize"
            {
                // One reopen for all the requests that met the expired session at once.
                let _reopening = self.reopening.lock().await;
                if lock(&self.state).session_id == sent_session {
                    tracing::info!("the server's session expired (404); opening a new one");
                    self.reopen_session().await?;
                }
                reopened = true;
                continue;
            }
            if method == "initialize"
                && let Some(session) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())
            {
                lock(&self.state).session_id = Some(session.to_string());
            }
            let result = self.answer(&id, tag, method, response).await;
            if method == "initialize" && result.is_ok() {
                lock(&self.state).initialize_params = params;
            }
            return result;
        }
    }

    /// A new session after a 404: initialize again (no session id), then `initialized`.
    async fn reopen_session(self: &Arc<Self>) -> Result<(), ClientError> {
        let params = lock(&self.state)
            .initialize_params
            .clone()
            .ok_or_else(|| ClientError::Protocol("the session expired before it was initialized".into()))?;
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let message = Message::Request { id: id.clone(), method: "initialize".into(), params: Some(params) };
        let response = self.send(|| self.post(&message)).await?;
        if let Some(session) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            lock(&self.state).session_id = Some(session.to_string());
        }
        self.answer(&id, None, "initialize", response).await?;
        self.send_one_way(&Message::Notification { method: "notifications/initialized".into(), params: None }).await?;
        // The server's own stream belonged to the old session: open it again.
        let (opened, _) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(Arc::clone(self).listen(opened));
        lock(&self.tasks).push(task);
        Ok(())
    }

    /// The server's own stream (legacy GET): serve its messages; reconnect after `retry`, a few times.
    async fn listen(self: Arc<Self>, opened: tokio::sync::oneshot::Sender<()>) {
        let mut opened = Some(opened);
        let mut last_event_id: Option<String> = None;
        // A server may close the stream and ask to reconnect (SEP-1699) for as long as it likes;
        // only streams that carried nothing count against the bound.
        let mut empty_streams = 0;
        while empty_streams <= HTTP_SSE_RESUMES_MAX {
            let build = || {
                let mut builder =
                    self.client.get(self.url.clone()).headers(self.headers.clone()).header(ACCEPT, "text/event-stream");
                let state = lock(&self.state);
                if let Some(session) = &state.session_id {
                    builder = builder.header(SESSION_HEADER, session);
                }
                if let Some(version) = &state.legacy_version {
                    builder = builder.header(VERSION_HEADER, version);
                }
                if let Some(last) = &last_event_id {
                    builder = builder.header("last-event-id", last);
                }
                builder
            };
            let sent = self.send(build).await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            let Ok(response) = sent else { return };
            let is_stream = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/event-stream"));
            if !response.status().is_success() || !is_stream {
                return;
            }
            match self.read_stream(response, None, None).await {
                Ok(Streamed::Ended { last_event_id: last, retry }) => {
                    if last.is_none() && retry.is_none() {
                        return;
                    }
                    if last.is_none() || last == last_event_id {
                        empty_streams += 1;
                    } else {
                        empty_streams = 0;
                    }
                    last_event_id = last.or(last_event_id);
                    tokio::time::sleep(retry.unwrap_or(HTTP_GET_STREAM_DEFAULT_RETRY)).await;
                }
                _ => return,
            }
        }
    }
}

/// Why a body could not be read whole.
pub(crate) enum BodyError {
    /// It is longer than the limit it was read with.
    TooLarge(usize),
    Broken(reqwest::Error),
}

/// Read a body, failing past `limit` bytes (the transport's answers, and the
/// authorization steps' in `auth/http.rs`).
pub(crate) async fn read_limited(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n as usize > limit) {
        return Err(BodyError::TooLarge(limit));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(BodyError::Broken)?;
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A server's body, failing past `limit` bytes.
async fn read_body(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ClientError> {
    read_limited(response, limit).await.map_err(|e| match e {
        BodyError::TooLarge(limit) => {
            ClientError::Protocol(format!("the server sent a body of more than {limit} bytes"))
        }
        BodyError::Broken(e) => http_error(e),
    })
}

/// A non-success status: the JSON-RPC error in its body if there is one, else the status and a short body.
async fn status_error(response: reqwest::Response, scrub: impl Fn(String) -> String) -> ClientError {
    let status = response.status();
    if status.is_redirection() {
        let to = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| reqwest::Url::parse(l).ok())
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| "another host".into());
        return ClientError::Http(format!(
            "the server redirected to {to}; CLAT follows redirects only to the same origin"
        ));
    }
    let body = read_body(response, HTTP_ERROR_BODY_MAX_BYTES).await.unwrap_or_default();
    if let Ok(Message::Response { result: Err(mut e), .. } | Message::OrphanError(mut e)) = parse(&body) {
        e.message = scrub(e.message);
        return ClientError::Wire(e);
    }
    let text: String = scrub(String::from_utf8_lossy(&body).chars().take(HTTP_ERROR_TEXT_MAX_CHARS).collect());
    let hint = match status.as_u16() {
        401 | 403 => " (check the credentials in the configured headers)",
        _ => "",
    };
    ClientError::Http(format!(
        "{status}{hint}{}",
        if text.trim().is_empty() { String::new() } else { format!(": {}", text.trim()) }
    ))
}

#[async_trait]
impl Transport for HttpConnection {
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        tag: Option<u64>,
    ) -> Result<Value, ClientError> {
        if let Some(reason) = self.inner.is_closed() {
            return Err(ClientError::Closed { reason });
        }
        let id = RequestId::Number(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let modern = params.as_ref().and_then(|p| p.pointer("/_meta")).and_then(|m| m.get(META_VERSION)).is_some();
        // Ending without the answer (timeout, cancel, this future dropped, a broken stream) closes
        // the stream, which is the modern cancel; a legacy server also gets `notifications/cancelled`.
        let mut guard =
            CancelOnDrop { inner: Arc::clone(&self.inner), id: id.clone(), armed: !modern && method != "initialize" };
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        let clock = AuthClock::default();
        let exchange = AUTH_CLOCK.scope(clock.clone(), self.inner.exchange(id, tag, method, params));
        tokio::pin!(exchange);
        let mut deadline = tokio::time::Instant::now() + timeout;
        loop {
            tokio::select! {
                r = &mut exchange => {
                    if matches!(r, Ok(_) | Err(ClientError::Wire(_))) {
                        guard.armed = false;
                    }
                    return r;
                }
                _ = tokio::time::sleep_until(deadline) => {
                    // Time spent authorizing moves the deadline; past it the request times out.
                    let extra = clock.uncredited();
                    if extra.is_zero() {
                        return Err(ClientError::Timeout { method: method.into(), after: timeout });
                    }
                    deadline += extra;
                }
                _ = cancel.cancelled() => return Err(ClientError::Cancelled { method: method.into() }),
            }
        }
    }

    async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        if let Some(reason) = self.inner.is_closed() {
            return Err(ClientError::Closed { reason });
        }
        self.inner.send_one_way(&Message::Notification { method: method.into(), params }).await
    }

    fn closed_reason(&self) -> Option<String> {
        self.inner.is_closed()
    }

    fn handler(&self) -> &Arc<dyn ServerRequests> {
        &self.inner.handler
    }

    async fn close(&self) {
        {
            let mut closed = lock(&self.inner.closed);
            if closed.is_none() {
                *closed = Some("closed by the client".into());
            }
        }
        for task in lock(&self.inner.tasks).drain(..) {
            task.abort();
        }
        let (session, version) = {
            let state = lock(&self.inner.state);
            (state.session_id.clone(), state.legacy_version.clone())
        };
        if let Some(session) = session {
            let mut delete = self
                .inner
                .client
                .delete(self.inner.url.clone())
                .headers(self.inner.headers.clone())
                .header(SESSION_HEADER, session);
            // Every request after initialize carries the negotiated version, the DELETE too.
            if let Some(version) = version {
                delete = delete.header(VERSION_HEADER, version);
            }
            // The current token, if any; closing never starts a login.
            if let Some(auth) = &self.inner.auth
                && let Some((_, bearer)) = auth.bearer().await
                && let Ok(mut value) = HeaderValue::from_str(&bearer)
            {
                value.set_sensitive(true);
                delete = delete.header(reqwest::header::AUTHORIZATION, value);
            }
            let _ = tokio::time::timeout(CLOSE_GRACE, delete.send()).await;
        }
    }

    fn negotiated(&self, version: &str) {
        let mut state = lock(&self.inner.state);
        if version == crate::client::MODERN_VERSION {
            state.modern = true;
        } else {
            state.legacy_version = Some(version.to_string());
        }
    }

    async fn session_opened(&self) {
        let modern = lock(&self.inner.state).modern;
        if !modern {
            self.open_server_stream().await;
        }
    }

    fn learn_tools(&self, tools: &mut Vec<Value>) -> Vec<String> {
        let mut dropped = Vec::new();
        let mut state = lock(&self.inner.state);
        if !state.modern {
            return dropped;
        }
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            match tool_header_params(tool) {
                Ok(declared) => {
                    if !declared.is_empty() {
                        state.tool_headers.insert(name, declared);
                    }
                    true
                }
                Err(why) => {
                    tracing::warn!("dropping tool {name:?}: {why}");
                    dropped.push(format!("tool {name} was dropped: {why}"));
                    false
                }
            }
        });
        dropped
    }
}

/// Tells a legacy server that a request ended without its answer, once, whatever ended it.
struct CancelOnDrop {
    inner: Arc<Inner>,
    id: RequestId,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed || self.inner.is_closed().is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let inner = Arc::clone(&self.inner);
        let note = Message::Notification {
            method: "notifications/cancelled".into(),
            params: Some(json!({ "requestId": self.id, "reason": "cancelled by the client" })),
        };
        runtime.spawn(async move {
            let _ = inner.send_one_way(&note).await;
        });
    }
}

impl Drop for HttpConnection {
    fn drop(&mut self) {
        for task in lock(&self.inner.tasks).iter() {
            task.abort();
        }
    }
}
