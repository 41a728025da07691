//! Sessions in both eras. `Session::connect` (`open.rs`) probes the modern era
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
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::inbound::Link;
use crate::jsonrpc::Message;
use crate::limits::{INPUT_REQUIRED_MAX_ROUNDS, TOOLS_LIST_MAX_PAGES, TOOLS_LIST_PAGE_TIMEOUT, TOOLS_PER_SERVER_MAX};
use crate::protocol::LOG_LEVEL_KEY;
pub use crate::protocol::{
    ClientInfo, Era, HEADER_MISMATCH, LEGACY_VERSIONS, MISSING_REQUIRED_CLIENT_CAPABILITY, MODERN_VERSION,
    UNSUPPORTED_PROTOCOL_VERSION,
};

mod open;

use open::offers_our_version;
pub use open::{Opening, Target};

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

    /// Any request in this session's era (the `_meta` envelope when modern),
    /// e.g. `resources/list`; `input_required` is returned as an unsupported error.
    pub async fn send(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, ClientError> {
        self.request(method, params, timeout, None).await
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
