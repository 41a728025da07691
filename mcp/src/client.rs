//! Sessions in both eras. `Session::connect` probes the modern era
//! (`server/discover` at 2026-07-28, 3 s) in a first subprocess; if the server
//! is modern it keeps that process, otherwise it discards it and runs the
//! legacy handshake in a fresh one: `initialize` offering 2025-11-25, accepting
//! a counter-offer of 2025-06-18, 2025-03-26 or 2024-11-05, refusing anything
//! else, then `notifications/initialized`; the caller bounds `initialize`
//! (`LEGACY_HANDSHAKE_TIMEOUT` unless it raises it for a slow first start).
//! The discarded probe process's stderr is dropped, so a server's output
//! appears once, not once per process. Modern requests carry the `_meta`
//! envelope (protocol version, client identity, capabilities); modern results
//! must declare `resultType` (missing = complete; anything else unknown a
//! protocol violation). A `tools/call` answered `input_required` (multi
//! round-trip requests) has its input requests fulfilled by the session's
//! `ServerRequests` handler — the same one that serves legacy server requests
//! (`inbound.rs`),
//! so it serves the same methods (for CLAT: sampling, elicitation, and its host
//! services for servers that opted in) — and is retried with a new id, the
//! original params, `inputResponses` and the unchanged `requestState`, at most
//! `INPUT_REQUIRED_MAX_ROUNDS` times; an input request the handler refuses is an
//! explicit unsupported-feature error. Then `tools/list`
//! with the spec's pagination limits and `tools/call` with a deadline and
//! cancellation.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::http::{HttpConnection, HttpSpec};
use crate::inbound::{Link, ServerRequests};
use crate::jsonrpc::{Message, WireError};
use crate::limits::{
    INPUT_REQUIRED_MAX_ROUNDS, LEGACY_HANDSHAKE_TIMEOUT, MODERN_PROBE_TIMEOUT, PROBE_STDERR_HELD_MAX_BYTES,
    TOOLS_LIST_MAX_PAGES, TOOLS_LIST_PAGE_TIMEOUT, TOOLS_PER_SERVER_MAX,
};
use crate::protocol::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY};
pub use crate::protocol::{
    ClientInfo, Era, HEADER_MISMATCH, LEGACY_VERSIONS, MISSING_REQUIRED_CLIENT_CAPABILITY, MODERN_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::stdio::{Connection, StderrSink, StdioSpec};
use crate::transport::Transport;

/// Where a session's server is.
#[derive(Debug, Clone)]
pub enum Target {
    /// A subprocess speaking over its stdio.
    Stdio(StdioSpec),
    /// A Streamable HTTP endpoint.
    Http(HttpSpec),
}

/// How a session opens: who serves the server's requests, where a
/// subprocess's stderr goes, who we are and what we can do, the legacy
/// handshake's bound, and whether the server's era is already known.
pub struct Opening {
    pub handler: Arc<dyn ServerRequests>,
    /// A subprocess's stderr; none: dropped (unused over HTTP).
    pub stderr: Option<Arc<dyn StderrSink>>,
    pub client: ClientInfo,
    pub capabilities: Value,
    /// The bound of the legacy `initialize`.
    pub handshake: Duration,
    /// The server is known to speak the legacy era: no modern probe first.
    pub known_legacy: bool,
}

impl Opening {
    /// Open as `client` with `capabilities`, the server's requests served by
    /// `handler`; stderr dropped, `LEGACY_HANDSHAKE_TIMEOUT`, the era probed.
    pub fn new(handler: Arc<dyn ServerRequests>, client: ClientInfo, capabilities: Value) -> Opening {
        Opening {
            handler,
            stderr: None,
            client,
            capabilities,
            handshake: LEGACY_HANDSHAKE_TIMEOUT,
            known_legacy: false,
        }
    }

    /// A subprocess's stderr goes to `sink`.
    pub fn stderr(mut self, sink: Arc<dyn StderrSink>) -> Opening {
        self.stderr = Some(sink);
        self
    }

    /// The legacy `initialize` may take `handshake` (a slow first start).
    pub fn handshake(mut self, handshake: Duration) -> Opening {
        self.handshake = handshake;
        self
    }

    /// The server is known to be legacy: the legacy handshake alone.
    pub fn known_legacy(mut self, known: bool) -> Opening {
        self.known_legacy = known;
        self
    }
}

/// The stderr of a subprocess nobody asked to see.
struct DroppedStderr;

impl StderrSink for DroppedStderr {
    fn write(&self, _bytes: &[u8]) {}
}

/// An initialized session.
pub struct Session {
    /// The transport, and what serves the server's requests; the host reaches
    /// them only through the session's methods.
    link: Link,
    pub era: Era,
    /// The negotiated protocol version.
    pub protocol_version: String,
    pub server_info: Value,
    pub server_capabilities: Value,
    /// What a modern request's `_meta` carries (unused in the legacy era).
    meta: Value,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("era", &self.era)
            .field("protocol_version", &self.protocol_version)
            .field("server_info", &self.server_info)
            .finish_non_exhaustive()
    }
}

/// A modern result: complete, or asking for input first.
enum Answer {
    Complete(Value),
    InputRequired(Value),
}

/// What the modern probe learned.
enum Probe {
    Modern(Value),
    Legacy(String),
}

fn modern_meta(client: &ClientInfo, capabilities: &Value) -> Value {
    json!({
        PROTOCOL_VERSION_KEY: MODERN_VERSION,
        CLIENT_INFO_KEY: { "name": client.name, "version": client.version },
        CLIENT_CAPABILITIES_KEY: capabilities,
    })
}

async fn probe(connection: &dyn Transport, client: &ClientInfo, capabilities: &Value) -> Result<Probe, ClientError> {
    let params = json!({ "_meta": modern_meta(client, capabilities) });
    let mut answer =
        connection.request("server/discover", Some(params.clone()), MODERN_PROBE_TIMEOUT, None, None).await;
    if let Err(ClientError::Wire(e)) = &answer
        && offers_our_version(e)
    {
        // Rejected although it supports our version: retry once, with a new id.
        answer = connection.request("server/discover", Some(params), MODERN_PROBE_TIMEOUT, None, None).await;
    }
    match answer {
        Ok(result) => {
            let versions: Vec<&str> = result
                .get("supportedVersions")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if versions.contains(&MODERN_VERSION) {
                Ok(Probe::Modern(result))
            } else {
                Ok(Probe::Legacy(format!("server/discover lists {versions:?}, not {MODERN_VERSION}")))
            }
        }
        // A modern server that also speaks a legacy version we speak: the legacy era, then.
        Err(ClientError::Wire(WireError { code: UNSUPPORTED_PROTOCOL_VERSION, data, .. }))
            if data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|s| s.as_str().is_some_and(|s| LEGACY_VERSIONS.contains(&s)))) =>
        {
            Ok(Probe::Legacy("the server offers a legacy version CLAT speaks".into()))
        }
        // A recognized modern error means modern: never fall back.
        Err(ClientError::Wire(WireError { code: UNSUPPORTED_PROTOCOL_VERSION, data, .. })) => {
            let supported = data.as_ref().and_then(|d| d.get("supported")).cloned().unwrap_or(Value::Null);
            Err(ClientError::Unsupported(format!(
                "the server speaks the modern era but none of its versions ({supported}); CLAT speaks {MODERN_VERSION}"
            )))
        }
        // An authorization that failed fails the legacy handshake too.
        Err(e @ ClientError::Auth { .. }) => Err(e),
        Err(other) => Ok(Probe::Legacy(other.to_string())),
    }
}

/// The stderr of the probe's process: held until the probe decides whether
/// that process is kept (then passed on, and everything after it) or
/// discarded (then dropped: the fresh process writes its own).
struct ProbeStderr {
    sink: Arc<dyn StderrSink>,
    /// `Some`: undecided, the bytes so far; `None`: decided.
    held: std::sync::Mutex<Option<Vec<u8>>>,
    kept: std::sync::atomic::AtomicBool,
}

impl ProbeStderr {
    fn new(sink: Arc<dyn StderrSink>) -> ProbeStderr {
        ProbeStderr { sink, held: std::sync::Mutex::new(Some(Vec::new())), kept: false.into() }
    }

    /// Pass on what was held, and everything from now on.
    fn keep(&self) {
        let mut held = crate::sync::lock(&self.held);
        self.kept.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(bytes) = held.take()
            && !bytes.is_empty()
        {
            self.sink.write(&bytes);
        }
    }

    /// Drop what was held, and everything from now on.
    fn discard(&self) {
        crate::sync::lock(&self.held).take();
    }
}

impl StderrSink for ProbeStderr {
    fn write(&self, bytes: &[u8]) {
        let mut held = crate::sync::lock(&self.held);
        match held.as_mut() {
            // Bounded: a server that floods stderr before answering loses its oldest lines.
            Some(buffer) => {
                buffer.extend_from_slice(bytes);
                if buffer.len() > PROBE_STDERR_HELD_MAX_BYTES {
                    let over = buffer.len() - PROBE_STDERR_HELD_MAX_BYTES;
                    let line_end = buffer[over..].iter().position(|&b| b == b'\n').map_or(over, |i| over + i + 1);
                    buffer.drain(..line_end);
                }
            }
            None if self.kept.load(std::sync::atomic::Ordering::SeqCst) => {
                drop(held);
                self.sink.write(bytes);
            }
            None => {}
        }
    }
}

/// A `-32022` whose `data.supported` lists the version we speak: the request may be retried once.
fn offers_our_version(error: &WireError) -> bool {
    error.code == UNSUPPORTED_PROTOCOL_VERSION
        && error
            .data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|s| s == MODERN_VERSION))
}

/// The least severe log level a tagged call asks a modern server for.
const CALL_LOG_LEVEL: &str = "info";

/// The params of `tools/call` (or `prompts/get`): the arguments are moved in,
/// not copied (`json!` would serialize them into a new value).
fn call_params(name: &str, arguments: Value) -> Value {
    let mut params = serde_json::Map::with_capacity(2);
    params.insert("name".into(), Value::String(name.into()));
    params.insert("arguments".into(), arguments);
    Value::Object(params)
}

/// The tools a server listed, within the limits.
#[derive(Debug, Clone, Default)]
pub struct ToolListing {
    /// Tool objects as the server sent them (at most `TOOLS_PER_SERVER_MAX`).
    pub tools: Vec<Value>,
    /// How many tools past the cap were dropped.
    pub dropped: usize,
    pub pages: usize,
    /// Tools the transport cannot call and left out, with why (HTTP: an invalid `x-mcp-header`).
    pub unusable: Vec<String>,
}

impl Session {
    /// Send a notification to the server.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError> {
        self.link.connection.send(Message::Notification { method: method.into(), params }).await
    }

    /// Why the connection closed, if it did (a server that exited, a broken stream).
    pub fn closed_reason(&self) -> Option<String> {
        self.link.connection.closed_reason()
    }

    /// The server's process group, for a subprocess.
    pub fn process_group(&self) -> Option<i32> {
        self.link.connection.process_group()
    }

    /// Close the connection and release everything it holds (a subprocess: its
    /// stdin, a grace, its group killed and reaped; HTTP: the session's DELETE).
    pub async fn close(&self) {
        self.link.connection.close().await;
    }

    /// Open a session with `target` in whichever era it speaks.
    ///
    /// A subprocess: the modern probe in a first process, kept if modern;
    /// otherwise a fresh process for the legacy handshake (a strict legacy
    /// server never sees the probe followed by `initialize`). The probe
    /// process's stderr reaches `opening.stderr` only if that process is kept
    /// or the probe's failure is the answer.
    ///
    /// Streamable HTTP: a modern request first (`server/discover`); a
    /// recognized modern error means modern without a fallback; anything else
    /// means legacy, so `initialize` on the same URL.
    ///
    /// A server the caller knows to be legacy (`Opening::known_legacy`) gets
    /// the legacy handshake alone, in one process. `initialize` is bounded by
    /// `opening.handshake` either way.
    pub async fn connect(target: &Target, opening: Opening) -> Result<Session, ClientError> {
        let Opening { handler, stderr, client, capabilities, handshake, known_legacy } = opening;
        let stderr = stderr.unwrap_or_else(|| Arc::new(DroppedStderr));
        match target {
            Target::Stdio(spec) if known_legacy => {
                let link = Link::new(Arc::new(Connection::spawn(spec, stderr).await?), handler);
                Session::handshake(link, &client, capabilities, handshake).await
            }
            Target::Stdio(spec) => {
                let probe_stderr = Arc::new(ProbeStderr::new(Arc::clone(&stderr)));
                let first =
                    Link::new(Arc::new(Connection::spawn(spec, probe_stderr.clone()).await?), Arc::clone(&handler));
                match probe(first.connection.as_ref(), &client, &capabilities).await {
                    Ok(Probe::Modern(discover)) => {
                        probe_stderr.keep();
                        Ok(Session::modern(first, discover, &client, &capabilities))
                    }
                    Ok(Probe::Legacy(why)) => {
                        tracing::debug!(
                            "{}: not modern ({why}); starting a fresh process for the legacy handshake",
                            spec.command
                        );
                        probe_stderr.discard();
                        first.connection.close().await;
                        let fresh = Link::new(Arc::new(Connection::spawn(spec, stderr).await?), handler);
                        Session::handshake(fresh, &client, capabilities, handshake).await
                    }
                    Err(e) => {
                        probe_stderr.keep();
                        first.connection.close().await;
                        Err(e)
                    }
                }
            }
            Target::Http(spec) => {
                let link = Link::new(Arc::new(HttpConnection::new(spec)?), handler);
                if known_legacy {
                    return Session::handshake(link, &client, capabilities, handshake).await;
                }
                match probe(link.connection.as_ref(), &client, &capabilities).await? {
                    Probe::Modern(discover) => Ok(Session::modern(link, discover, &client, &capabilities)),
                    Probe::Legacy(why) => {
                        tracing::debug!("{}: not modern ({why}); initializing", spec.url);
                        Session::handshake(link, &client, capabilities, handshake).await
                    }
                }
            }
        }
    }

    /// Any request in this session's era (the `_meta` envelope when modern),
    /// e.g. `resources/list`; `input_required` is returned as an unsupported error.
    pub async fn send(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, ClientError> {
        self.request(method, params, timeout, None).await
    }

    fn modern(link: Link, discover: Value, client: &ClientInfo, capabilities: &Value) -> Session {
        Session {
            link,
            era: Era::Modern,
            protocol_version: MODERN_VERSION.into(),
            server_info: discover.get("_meta").and_then(|m| m.get(SERVER_INFO_KEY)).cloned().unwrap_or(Value::Null),
            server_capabilities: discover.get("capabilities").cloned().unwrap_or(Value::Null),
            meta: modern_meta(client, capabilities),
        }
    }

    /// Run the legacy handshake on a fresh connection, `initialize` bounded by
    /// `handshake`; `handler` serves the server's requests from now on.
    pub async fn initialize<T: Transport + 'static>(
        connection: T,
        handler: Arc<dyn ServerRequests>,
        client: &ClientInfo,
        capabilities: Value,
        handshake: Duration,
    ) -> Result<Session, ClientError> {
        Session::handshake(Link::new(Arc::new(connection), handler), client, capabilities, handshake).await
    }

    /// The legacy handshake: `initialize`, then `notifications/initialized`.
    async fn handshake(
        link: Link,
        client: &ClientInfo,
        capabilities: Value,
        timeout: Duration,
    ) -> Result<Session, ClientError> {
        let connection = link.connection.as_ref();
        let params = json!({
            "protocolVersion": LEGACY_VERSIONS[0],
            "capabilities": capabilities,
            "clientInfo": { "name": client.name, "version": client.version },
        });
        let initialized = async {
            let result = connection.request("initialize", Some(params), timeout, None, None).await?;
            let version = result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .ok_or_else(|| ClientError::Protocol("the initialize result has no protocolVersion".into()))?
                .to_string();
            if !LEGACY_VERSIONS.contains(&version.as_str()) {
                return Err(ClientError::Unsupported(format!(
                    "the server answered with protocol version {version:?}; CLAT speaks {}",
                    LEGACY_VERSIONS.join(", ")
                )));
            }
            connection.send(Message::Notification { method: "notifications/initialized".into(), params: None }).await?;
            Ok((version, result))
        };
        let (version, result) = match initialized.await {
            Ok(initialized) => initialized,
            Err(e) => {
                // Closed, not dropped (as after a failed probe): its last stderr lines reach the sink first.
                connection.close().await;
                return Err(e);
            }
        };
        Ok(Session {
            link,
            era: Era::Legacy,
            meta: Value::Null,
            protocol_version: version,
            server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
            server_capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
        })
    }

    /// A request in this session's era: modern requests carry the `_meta`
    /// envelope and their results must declare a known `resultType`.
    async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ClientError> {
        match self.request_rounds(method, params, timeout, cancel, None).await? {
            Answer::Complete(result) => Ok(result),
            Answer::InputRequired(_) => Err(ClientError::Unsupported(format!(
                "{method} returned input_required, which only tools/call may ask for"
            ))),
        }
    }

    /// One request (tagged `tag` for the transport); a modern `input_required`
    /// result is handed back to the caller.
    async fn request_rounds(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        tag: Option<u64>,
    ) -> Result<Answer, ClientError> {
        if self.era == Era::Legacy {
            // Nothing is retried in the legacy era: the params move to the wire as they are.
            return Ok(Answer::Complete(
                self.link.connection.request(method, Some(params), timeout, cancel, tag).await?,
            ));
        }
        let mut params = params;
        // The modern envelope, beside what the request's own `_meta` carries (a progress token).
        match params.get_mut("_meta").and_then(Value::as_object_mut) {
            Some(own) => own.extend(self.meta.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone()))),
            None => params["_meta"] = self.meta.clone(),
        }
        let mut result = self.link.connection.request(method, Some(params.clone()), timeout, cancel, tag).await;
        if let Err(ClientError::Wire(e)) = &result
            && offers_our_version(e)
        {
            result = self.link.connection.request(method, Some(params), timeout, cancel, tag).await;
        }
        let result = result?;
        if self.era == Era::Modern {
            match result.get("resultType").and_then(Value::as_str) {
                None | Some("complete") => {}
                Some("input_required") => return Ok(Answer::InputRequired(result)),
                Some(other) => {
                    return Err(ClientError::Protocol(format!("{method} returned an unknown resultType {other:?}")));
                }
            }
        }
        Ok(Answer::Complete(result))
    }

    /// Fulfil one `input_required` result's input requests through the
    /// session's handler (as related to the call tagged `tag`); returns
    /// the params of the retry.
    async fn fulfil_input(&self, original: &Value, answer: &Value, tag: Option<u64>) -> Result<Value, ClientError> {
        let mut retry = original.clone();
        if let Some(requests) = answer.get("inputRequests") {
            let requests =
                requests.as_object().ok_or_else(|| ClientError::Protocol("inputRequests is not an object".into()))?;
            let mut responses = serde_json::Map::new();
            for (key, request) in requests {
                let method = request.get("method").and_then(Value::as_str).unwrap_or_default();
                // The same handler as every other server request decides what it serves
                // (the host: sampling, elicitation, and its own methods for servers that
                // opted in); anything else is refused there, and so unsupported here.
                // A question the host forwards to a modern client of `clat serve` keeps this key.
                let fulfilment = self.link.handler.handle(method, request.get("params").cloned(), tag);
                let response = crate::inbound::forwarding_key(key, fulfilment).await.map_err(|e| {
                    ClientError::Unsupported(format!("input {key:?} ({method}) was not fulfilled: {e}"))
                })?;
                responses.insert(key.clone(), response);
            }
            retry["inputResponses"] = Value::Object(responses);
        }
        match answer.get("requestState") {
            None => {}
            // Passed back unchanged: the same string, byte for byte.
            Some(Value::String(state)) => retry["requestState"] = Value::String(state.clone()),
            Some(_) => return Err(ClientError::Protocol("requestState is not a string".into())),
        }
        if answer.get("inputRequests").is_none() && answer.get("requestState").is_none() {
            return Err(ClientError::Protocol("input_required without inputRequests or requestState".into()));
        }
        Ok(retry)
    }

    /// `tools/list`, page by page: each page within its timeout, at most
    /// `TOOLS_LIST_MAX_PAGES` pages, a repeated cursor aborts, and tools past
    /// `TOOLS_PER_SERVER_MAX` are dropped and counted.
    pub async fn list_tools(&self) -> Result<ToolListing, ClientError> {
        let (mut tools, dropped, pages) = self.list_all("tools/list", "tools", TOOLS_PER_SERVER_MAX).await?;
        // What a transport needs of a listing is modern (HTTP's `x-mcp-header`).
        let unusable = if self.era == Era::Modern { self.link.connection.learn_tools(&mut tools) } else { Vec::new() };
        Ok(ToolListing { tools, dropped, pages, unusable })
    }

    /// `prompts/list`, with the same paging rules as `tools/list`; every prompt is kept
    /// (the caller picks and bounds the ones it wants).
    pub async fn list_prompts(&self) -> Result<Vec<Value>, ClientError> {
        Ok(self.list_all("prompts/list", "prompts", usize::MAX).await?.0)
    }

    /// `prompts/get` for one prompt with its arguments (string values).
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        let params = call_params(name, arguments);
        self.request("prompts/get", params, TOOLS_LIST_PAGE_TIMEOUT, None).await
    }

    /// A paginated list: each page within `TOOLS_LIST_PAGE_TIMEOUT`, at most
    /// `TOOLS_LIST_MAX_PAGES` pages, a repeated cursor aborts; items past `keep`
    /// are counted, not kept. Returns (items, dropped, pages).
    async fn list_all(&self, method: &str, key: &str, keep: usize) -> Result<(Vec<Value>, usize, usize), ClientError> {
        let (mut items, mut dropped, mut pages) = (Vec::new(), 0, 0);
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            if pages == TOOLS_LIST_MAX_PAGES {
                return Err(ClientError::Protocol(format!(
                    "{method} still had more after {TOOLS_LIST_MAX_PAGES} pages; listing aborted"
                )));
            }
            let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
            let page = self.request(method, params, TOOLS_LIST_PAGE_TIMEOUT, None).await?;
            pages += 1;
            let page_items = page
                .get(key)
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Protocol(format!("a {method} page has no `{key}` array")))?;
            for item in page_items {
                if items.len() < keep {
                    items.push(item.clone());
                } else {
                    dropped += 1;
                }
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                None => return Ok((items, dropped, pages)),
                Some(next) => {
                    if !seen.insert(next.to_string()) {
                        return Err(ClientError::Protocol(format!(
                            "{method} repeated the cursor {next:?}; listing aborted"
                        )));
                    }
                    cursor = Some(next.to_string());
                }
            }
        }
    }

    /// `tools/call` within `timeout`; `cancel` ends the wait at once.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ClientError> {
        self.call_tool_tagged(name, arguments, timeout, cancel, None).await
    }

    /// `tools/call` as `call_tool`, tagged: the server requests the transport
    /// can relate to this call reach the handler with `tag`, so the host can
    /// tell which of its calls (and runs) asked.
    pub async fn call_tool_tagged(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        tag: Option<u64>,
    ) -> Result<Value, ClientError> {
        let mut original = call_params(name, arguments);
        // A tagged call asks for progress under its tag (the host relates `notifications/progress` by it),
        // and in the modern era for log lines from `info` up (sent only to a request that asks for them).
        if let Some(tag) = tag {
            original["_meta"] = json!({ "progressToken": tag });
            if self.era == Era::Modern {
                original["_meta"][LOG_LEVEL_KEY] = json!(CALL_LOG_LEVEL);
            }
        }
        if self.era == Era::Legacy {
            // One round, never retried (input_required and header checks are modern).
            return match self.request_rounds("tools/call", original, timeout, cancel, tag).await? {
                Answer::Complete(result) | Answer::InputRequired(result) => Ok(result),
            };
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let mut params = original.clone();
        let mut relisted = false;
        for round in 0..=INPUT_REQUIRED_MAX_ROUNDS {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            // Each round is a new request, with a new id.
            let answer = match self.request_rounds("tools/call", params.clone(), left, cancel, tag).await {
                // Modern HTTP: the headers did not match the server's view of the tool
                // (its x-mcp-header declarations changed): list again, then retry once.
                Err(ClientError::Wire(e)) if e.code == HEADER_MISMATCH && self.era == Era::Modern && !relisted => {
                    relisted = true;
                    self.list_tools().await?;
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    self.request_rounds("tools/call", params, left, cancel, tag).await?
                }
                other => other?,
            };
            match answer {
                Answer::Complete(result) => return Ok(result),
                // No question is asked, and no model called, for a round that could not be retried.
                Answer::InputRequired(_) if round == INPUT_REQUIRED_MAX_ROUNDS => break,
                Answer::InputRequired(answer) => {
                    let fulfil = self.fulfil_input(&original, &answer, tag);
                    let never = CancellationToken::new();
                    params = tokio::select! {
                        p = fulfil => p?,
                        _ = cancel.unwrap_or(&never).cancelled() => {
                            return Err(ClientError::Cancelled { method: "tools/call".into() });
                        }
                        _ = tokio::time::sleep_until(deadline) => {
                            return Err(ClientError::Timeout { method: "tools/call".into(), after: timeout });
                        }
                    };
                }
            }
        }
        Err(ClientError::Protocol(format!(
            "tools/call still asked for input after {INPUT_REQUIRED_MAX_ROUNDS} rounds; the call was abandoned"
        )))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Collected(Mutex<Vec<u8>>);

    impl StderrSink for Collected {
        fn write(&self, bytes: &[u8]) {
            self.0.lock().unwrap().extend_from_slice(bytes);
        }
    }

    #[test]
    fn the_probe_s_stderr_is_held_bounded_then_kept_or_dropped() {
        let sink = Arc::new(Collected::default());
        let held = ProbeStderr::new(sink.clone());
        for i in 0..2_000 {
            held.write(format!("line {i:04} of the probe's process: {}\n", "x".repeat(40)).as_bytes());
        }
        assert!(sink.0.lock().unwrap().is_empty(), "nothing passes before the probe decides");
        held.keep();
        held.write(b"after the probe\n");
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(text.len() <= PROBE_STDERR_HELD_MAX_BYTES + "after the probe\n".len(), "{}", text.len());
        assert!(text.starts_with("line "), "the oldest lines go whole, never half a line");
        assert!(text.contains("line 1999 ") && text.ends_with("after the probe\n"));

        let sink = Arc::new(Collected::default());
        let dropped = ProbeStderr::new(sink.clone());
        dropped.write(b"the probe's process\n");
        dropped.discard();
        dropped.write(b"still the probe's process, closing\n");
        assert!(sink.0.lock().unwrap().is_empty(), "a discarded process writes nothing");
    }
}
