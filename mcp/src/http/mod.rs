//! The Streamable HTTP transport, both eras, on reqwest (rustls).
//!
//! Every client message is one POST with `Accept: application/json,
//! text/event-stream`. An answer is plain JSON or SSE-framed JSON (events with
//! empty `data`, such as priming events, and comment lines are skipped); server
//! requests and notifications that arrive on a POST's stream are handed to the
//! session (`Transport::receive`), and its answers go back as a separate POST
//! (202). A
//! message (a JSON body or one SSE event) may be at most
//! `HTTP_BODY_MAX_BYTES`; more fails that request.
//!
//! Legacy era: `Mcp-Session-Id` from `initialize` is echoed on every later
//! request, `MCP-Protocol-Version` once `initialize` answered it; once
//! `notifications/initialized` is sent, a GET stream carries the server's own
//! messages; a 404 on a request that
//! carried a session id means the session expired, so the transport
//! re-initializes once and retries; a stream that ends without the response is
//! resumed with GET + `Last-Event-ID` after the server's `retry` delay;
//! teardown DELETEs the session; a
//! cancelled request sends `notifications/cancelled`.
//!
//! Modern era (a message whose `_meta` names a protocol version): no session;
//! the headers `MCP-Protocol-Version` (equal to `_meta`), `Mcp-Method`,
//! `Mcp-Name` (`tools/call`, `prompts/get`, `resources/read`) and
//! `Mcp-Param-*` from the tool's `x-mcp-header` properties (a tool with an
//! invalid declaration is dropped from the listing); a cancel closes the
//! response stream.
//!
//! Its parts: `authorized.rs` (sending with the server's token), `stream.rs`
//! (answers, resumed streams, the server's GET stream), `sse.rs` (reading one
//! event stream), `body.rs` (bounded bodies, failures as errors),
//! `headers.rs` (modern headers).
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

mod authorized;
mod body;
mod headers;
pub(crate) mod sse;
mod stream;

use authorized::{AUTH_CLOCK, AuthClock};
use body::http_error;
use headers::header_value_of;
pub use headers::{HeaderDeclarationError, decode_header_value, encode_header_value, tool_header_params};

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::auth::Authorizer;
use crate::error::ClientError;
use crate::jsonrpc::{Message, RequestId, encode};
use crate::limits::{CLOSE_GRACE, HTTP_CONNECT_TIMEOUT, HTTP_ONE_WAY_TIMEOUT};
use crate::protocol::{LEGACY_VERSIONS, PROTOCOL_VERSION_KEY};
use crate::sync::lock;
use crate::transport::Transport;
use crate::transport::{Inbox, Incoming, IncomingSender};

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

/// The per-connection state the requests share.
#[derive(Default)]
struct State {
    session_id: Option<String>,
    /// The negotiated legacy version (sent as a header once known).
    legacy_version: Option<String>,
    /// The params of the `initialize` that opened the session (to re-open an expired one).
    initialize_params: Option<Value>,
    /// Modern: per tool, the `(property, header)` pairs of its `x-mcp-header` declarations.
    tool_headers: HashMap<String, Vec<(String, String)>>,
}

struct Inner {
    client: reqwest::Client,
    url: reqwest::Url,
    headers: HeaderMap,
    /// What the server starts on any stream goes here, for the session.
    incoming: IncomingSender,
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

/// One connection to a Streamable HTTP server.
pub struct HttpConnection {
    inner: Arc<Inner>,
    inbox: Inbox,
}

impl HttpConnection {
    /// A connection to `spec.url`; nothing is sent yet.
    pub fn new(spec: &HttpSpec) -> Result<HttpConnection, ClientError> {
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
        let (incoming, inbox) = Inbox::new();
        Ok(HttpConnection {
            inbox,
            inner: Arc::new(Inner {
                client,
                url,
                headers,
                incoming,
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

impl Inner {
    fn is_closed(&self) -> Option<String> {
        lock(&self.closed).clone()
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
        let modern_version = params.and_then(|p| p.pointer("/_meta")).and_then(|m| m.get(PROTOCOL_VERSION_KEY));
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
            builder = self.legacy_session_headers(builder, method == Some("initialize"));
        }
        builder.body(encode(message))
    }

    /// The legacy session's headers: its id (not on an `initialize`: a new
    /// session starts without the old id, and only `initialize` starts one)
    /// and the negotiated version once known.
    fn legacy_session_headers(
        &self,
        mut builder: reqwest::RequestBuilder,
        initialize: bool,
    ) -> reqwest::RequestBuilder {
        let state = lock(&self.state);
        if let Some(session) = state.session_id.as_ref().filter(|_| !initialize) {
            builder = builder.header(SESSION_HEADER, session);
        }
        if let Some(version) = &state.legacy_version {
            builder = builder.header(VERSION_HEADER, version);
        }
        builder
    }

    /// POST a message that expects no answer (a notification, our response): 2xx.
    async fn send_one_way(&self, message: &Message) -> Result<(), ClientError> {
        let response = self.send(|| self.post(message).timeout(HTTP_ONE_WAY_TIMEOUT)).await?;
        if response.status().is_success() { Ok(()) } else { Err(self.status_error(response).await) }
    }

    /// Send one request and wait for its answer; an expired legacy session is re-opened once.
    async fn exchange(
        self: &Arc<Self>,
        id: RequestId,
        tag: Option<u64>,
        method: &str,
        params: Option<Value>,
        modern: bool,
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
            let result = self.answer(&id, tag, method, response, modern).await;
            if method == "initialize"
                && let Ok(answer) = &result
            {
                let mut state = lock(&self.state);
                state.initialize_params = params;
                // The version it answered goes on every later request (the session
                // refuses any other, and closes).
                state.legacy_version = answer
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .filter(|v| LEGACY_VERSIONS.contains(v))
                    .map(str::to_string);
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
        self.answer(&id, None, "initialize", response, false).await?;
        self.send_one_way(&Message::Notification { method: "notifications/initialized".into(), params: None }).await?;
        // The server's own stream belonged to the old session: open it again.
        let (opened, _) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(Arc::clone(self).listen(opened));
        lock(&self.tasks).push(task);
        Ok(())
    }
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
        let modern =
            params.as_ref().and_then(|p| p.pointer("/_meta")).and_then(|m| m.get(PROTOCOL_VERSION_KEY)).is_some();
        // Ending without the answer (timeout, cancel, this future dropped, a broken stream) closes
        // the stream, which is the modern cancel; a legacy server also gets `notifications/cancelled`.
        let mut guard =
            CancelOnDrop { inner: Arc::clone(&self.inner), id: id.clone(), armed: !modern && method != "initialize" };
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        let clock = AuthClock::default();
        let exchange = AUTH_CLOCK.scope(clock.clone(), self.inner.exchange(id, tag, method, params, modern));
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

    async fn send(&self, message: Message) -> Result<(), ClientError> {
        if let Some(reason) = self.inner.is_closed() {
            return Err(ClientError::Closed { reason });
        }
        self.inner.send_one_way(&message).await?;
        if matches!(&message, Message::Notification { method, .. } if method == "notifications/initialized") {
            // The legacy session is open: hear what the server sends on its own stream.
            self.open_server_stream().await;
        }
        Ok(())
    }

    async fn receive(&self) -> Option<Incoming> {
        self.inbox.receive().await
    }

    fn closed_reason(&self) -> Option<String> {
        self.inner.is_closed()
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

    fn learn_tools(&self, tools: &mut Vec<Value>) -> Vec<String> {
        let mut dropped = Vec::new();
        let mut state = lock(&self.inner.state);
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
