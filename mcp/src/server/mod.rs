//! The server side of MCP, beside the client and on the same wire types and
//! limits: a host serves its tools to an agent. This module owns a session —
//! the legacy lifecycle (`initialize` with the client's version when it is
//! one of `LEGACY_VERSIONS`, else the newest; `ping`; `tools/list`;
//! `tools/call`; `notifications/cancelled`; the empty prompt and resource
//! catalogue, `unserved`), the calls in flight, and the
//! server's own requests to the client (`Peer::request`) waiting for their
//! answers — and the modern era's requests (`modern`), which need none of the
//! lifecycle. Its two transports feed it messages and carry what it says back:
//! `stdio` (one session on a byte stream) and `http` (Streamable HTTP, a
//! session per `Mcp-Session-Id`, a modern request in a session of its own,
//! each request's messages on its own response).
//!
//! Each call (and each listing, which the host may make wait for its tools)
//! runs on its own task, at most `SERVE_IN_FLIGHT_MAX` at once per session
//! (past it a call is refused with `SERVER_BUSY`); a cancelled call ends and is
//! not answered; the end of a session cancels every call still running and
//! gives them `CLOSE_GRACE`. A task holds one of `SERVE_PENDING_ANSWERS_MAX`
//! places until its answer is in the transport's bounded queue: a client that
//! stops reading fills them, and then its session reads no more requests until
//! one is free (back-pressure), so memory stays flat. What the tools are and what a call does is the
//! host's (`ServedTools`).

#[cfg(test)]
mod fixture;
pub mod http;
mod modern;
mod peer;
mod rounds;
mod stdio;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{
    INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, Message, PARSE_ERROR, RequestId, SERVER_BUSY, WireError, parse,
    recover_response_id,
};
use crate::limits::{CLOSE_GRACE, SERVE_IN_FLIGHT_MAX, SERVE_PENDING_ANSWERS_MAX};
use crate::protocol::{ClientInfo, LEGACY_VERSIONS};
use crate::sync::lock;

pub use http::{HttpServeError, HttpServeOptions, serve_http};
pub use peer::Peer;
use peer::client_answer;
pub use stdio::{ServeEnd, ServeInput, ServeOutput, process_stdio, serve};

/// What the host serves.
#[async_trait::async_trait]
pub trait ServedTools: Send + Sync + 'static {
    /// The tools, as MCP `Tool` objects (`name`, `description`, `inputSchema`, `annotations`), as listed to
    /// `session`.
    async fn list(&self, session: &SessionRef) -> Vec<Value>;
    /// Call one tool: a `CallToolResult`, or a wire error (an unknown tool,
    /// bad arguments). `client` is who asked, and how to ask it something
    /// back; `cancelled` fires when the client cancels the call or the
    /// session ends.
    async fn call(
        &self,
        client: &Peer,
        name: &str,
        arguments: Value,
        cancelled: CancellationToken,
    ) -> Result<Value, WireError>;

    /// How long a modern client may keep the `tools/list` answer it was just given (`ttlMs`). None, the
    /// default: `LIST_TTL`. A host whose listing changes with calls (tools loaded on demand) says less, so a
    /// client that caches listings sees what it loaded.
    fn listing_ttl(&self) -> Option<std::time::Duration> {
        None
    }

    /// A signal that the listing changed outside any call (a tool withdrawn while the session runs): each
    /// initialized legacy session on a connection of its own (stdio) is then sent
    /// `notifications/tools/list_changed`. None, the default: the listing changes only in calls.
    fn listing_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// The session a request came in — a stdio connection, an HTTP session (every modern HTTP request shares
/// one) — for what a host keeps per session. Held weakly: it never keeps the session alive.
#[derive(Clone)]
pub struct SessionRef(std::sync::Weak<Session>);

impl SessionRef {
    /// Whether both are the same session.
    pub fn is(&self, other: &SessionRef) -> bool {
        std::sync::Weak::ptr_eq(&self.0, &other.0)
    }

    /// Whether the session has ended.
    pub fn ended(&self) -> bool {
        self.0.strong_count() == 0
    }
}

/// Who the server says it is in `initialize`.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
    /// Its tool listing may change during a session (`tools.listChanged`; `Peer::tools_changed` says when).
    pub tools_change: bool,
}

/// Where what the session says goes: the stdio writer, or the stream of the
/// HTTP response whose request it concerns; `closed` fires when the client
/// closes that response before its answer.
#[derive(Clone)]
pub(crate) struct Outlet {
    sender: tokio::sync::mpsc::Sender<Message>,
    pub(crate) closed: CancellationToken,
}

impl Outlet {
    /// An outlet and the receiver its transport drains (at most `capacity` messages queued).
    pub(crate) fn new(capacity: usize) -> (Outlet, tokio::sync::mpsc::Receiver<Message>) {
        let (sender, receiver) = tokio::sync::mpsc::channel(capacity);
        (Outlet { sender, closed: CancellationToken::new() }, receiver)
    }

    /// Send `message`; false when nobody reads this outlet any more.
    async fn send(&self, message: Message) -> bool {
        self.sender.send(message).await.is_ok()
    }

    /// Send `message` if there is room now (progress and log lines: dropped, never waited for).
    fn offer(&self, message: Message) {
        let _ = self.sender.try_send(message);
    }
}

/// One session: who the client is, its calls in flight, the server's
/// requests to it, and the tasks that run its requests.
pub(crate) struct Session {
    info: Arc<ServerInfo>,
    tools: Arc<dyn ServedTools>,
    /// Calls in flight, by request id: their cancel tokens.
    calls: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Who the client is and what it declared, once it has initialized.
    client: Mutex<Option<Arc<(ClientInfo, Value)>>>,
    /// The server's own requests to the client, waiting for its answer.
    asked: Mutex<HashMap<RequestId, tokio::sync::oneshot::Sender<Result<Value, WireError>>>>,
    next_request: std::sync::atomic::AtomicU64,
    /// Ended when the session ends: every call still running is cancelled.
    ending: CancellationToken,
    /// The least severe log level the client wants (`logging/setLevel`).
    log_level: Mutex<Option<String>>,
    tasks: Mutex<tokio::task::JoinSet<()>>,
    /// Every request is a modern one (HTTP's modern requests, from any number of clients): one without an
    /// envelope is refused, and calls are told apart by a key of ours, not the clients' ids.
    stateless: bool,
    /// Modern calls waiting for the client's retry, by `requestState`.
    parked: rounds::Parked,
    /// One place per task whose answer is not yet queued (`SERVE_PENDING_ANSWERS_MAX`).
    pending: Arc<tokio::sync::Semaphore>,
}

impl Session {
    /// Tell the client on `outlet`, once it has initialized (a legacy client), that the tool listing changed,
    /// when the server said it may (`ServerInfo::tools_change`).
    pub(crate) fn announce_tools_changed(&self, outlet: &Outlet) {
        let initialized = lock(&self.client).is_some();
        if self.info.tools_change && initialized && !self.stateless {
            outlet.offer(Message::Notification { method: "notifications/tools/list_changed".into(), params: None });
        }
    }

    pub(crate) fn new(info: Arc<ServerInfo>, tools: Arc<dyn ServedTools>) -> Arc<Session> {
        Session::with(info, tools, false)
    }

    /// A session for modern requests only (HTTP's): no lifecycle, each request's envelope says everything.
    pub(crate) fn stateless(info: Arc<ServerInfo>, tools: Arc<dyn ServedTools>) -> Arc<Session> {
        Session::with(info, tools, true)
    }

    fn with(info: Arc<ServerInfo>, tools: Arc<dyn ServedTools>, stateless: bool) -> Arc<Session> {
        Arc::new(Session {
            info,
            tools,
            calls: Mutex::new(HashMap::new()),
            client: Mutex::new(None),
            asked: Mutex::new(HashMap::new()),
            next_request: Default::default(),
            ending: CancellationToken::new(),
            log_level: Mutex::new(None),
            tasks: Mutex::new(tokio::task::JoinSet::new()),
            pending: Arc::new(tokio::sync::Semaphore::new(SERVE_PENDING_ANSWERS_MAX)),
            stateless,
            parked: rounds::Parked::default(),
        })
    }

    /// Take one frame from the client; what answers it goes to `outlet`. A
    /// malformed frame is answered with a parse error and the session goes on.
    pub(crate) async fn receive_frame(self: &Arc<Self>, frame: &[u8], outlet: &Outlet) {
        match parse(frame) {
            Ok(message) => self.receive(message, outlet).await,
            Err(malformed) => {
                let error = WireError::new(PARSE_ERROR, malformed.to_string());
                let answer = match recover_response_id(frame) {
                    Some(id) => Message::Response { id, result: Err(error) },
                    None => Message::OrphanError(error),
                };
                outlet.send(answer).await;
            }
        }
    }

    /// Take one message from the client; what answers it goes to `outlet`.
    pub(crate) async fn receive(self: &Arc<Self>, message: Message, outlet: &Outlet) {
        match message {
            Message::Request { id, method, params } => self.request(id, &method, params, outlet).await,
            Message::Notification { method, params } => self.notification(&method, params.as_ref()),
            // The answer to one of our requests (`Peer::request`); any other answers nothing.
            Message::Response { id, result } => {
                if let Some(waiting) = lock(&self.asked).remove(&id) {
                    let _ = waiting.send(result);
                }
            }
            Message::OrphanError(_) => {}
        }
    }

    /// End the session: every call still running is cancelled and given `CLOSE_GRACE`, then dropped.
    pub(crate) async fn end(&self) {
        self.ending.cancel();
        let mut tasks = std::mem::take(&mut *lock(&self.tasks));
        let _ = tokio::time::timeout(CLOSE_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
        tasks.shutdown().await;
    }

    /// Nothing in flight: no call, no request of ours waiting for the client.
    pub(crate) fn is_quiet(&self) -> bool {
        lock(&self.calls).is_empty() && lock(&self.asked).is_empty() && self.parked.is_empty()
    }

    /// Run `task` (which answers a request) on its own task, once one of the places for answers not yet queued
    /// is free: waiting here is how a client that stops reading stops being read.
    async fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let Ok(place) = Arc::clone(&self.pending).acquire_owned().await else { return };
        let mut tasks = lock(&self.tasks);
        while tasks.try_join_next().is_some() {}
        tasks.spawn(async move {
            task.await;
            drop(place);
        });
    }

    fn notification(&self, method: &str, params: Option<&Value>) {
        if method == "notifications/cancelled" {
            let id = params.and_then(|p| serde_json::from_value::<RequestId>(p["requestId"].clone()).ok());
            if let Some(token) = id.and_then(|id| lock(&self.calls).remove(&id)) {
                token.cancel();
            }
        }
    }

    async fn request(self: &Arc<Self>, id: RequestId, method: &str, params: Option<Value>, outlet: &Outlet) {
        if self.stateless || modern::speaks_modern(method, params.as_ref()) {
            return self.modern_request(id, method, params, outlet).await;
        }
        let initialized = lock(&self.client).clone().map(|client| Peer {
            session: Arc::downgrade(self),
            client,
            outlet: outlet.clone(),
            progress_token: None,
            modern: false,
            modern_log_level: None,
            rounds: None,
        });
        let result = match (method, initialized) {
            ("initialize", _) => self.initialize(params.as_ref()),
            ("ping", _) => Ok(json!({})),
            (_, None) => Err(WireError::new(INVALID_REQUEST, format!("{method} before initialize"))),
            // The host may wait for its tools (an initial surface): the session goes on meanwhile.
            ("tools/list", Some(_)) => {
                let (session, outlet) = (Arc::clone(self), outlet.clone());
                self.spawn(async move {
                    let tools = session.tools.list(&SessionRef(Arc::downgrade(&session))).await;
                    outlet.send(Message::Response { id, result: Ok(json!({ "tools": tools })) }).await;
                })
                .await;
                return;
            }
            ("tools/call", Some(client)) => return self.call(id, params, client).await,
            // Accepted: the level a client asks for is kept, for the log messages forwarded to it.
            ("logging/setLevel", Some(_)) => match params.as_ref().and_then(|p| p["level"].as_str()) {
                Some(level) => {
                    *lock(&self.log_level) = Some(level.to_string());
                    Ok(json!({}))
                }
                None => Err(WireError::new(INVALID_PARAMS, "logging/setLevel needs a level")),
            },
            (other, Some(_)) => unserved(other, params.as_ref()),
        };
        outlet.send(Message::Response { id, result }).await;
    }

    /// A modern request: its envelope checked, then the era's methods (`server/discover`, `tools/list`,
    /// `tools/call`); the legacy lifecycle's methods are not found here.
    async fn modern_request(self: &Arc<Self>, id: RequestId, method: &str, params: Option<Value>, outlet: &Outlet) {
        let envelope = match modern::Envelope::read(params.as_ref()) {
            Ok(envelope) => envelope,
            Err(refused) => {
                outlet.send(Message::Response { id, result: Err(refused) }).await;
                return;
            }
        };
        let result = match method {
            "server/discover" => Ok(modern::discover(&self.info)),
            "tools/list" => {
                let (session, outlet) = (Arc::clone(self), outlet.clone());
                self.spawn(async move {
                    let tools = session.tools.list(&SessionRef(Arc::downgrade(&session))).await;
                    let ttl = session.tools.listing_ttl();
                    let listing = modern::cacheable_for(json!({ "tools": tools }), ttl);
                    let result = Ok(modern::complete(listing, &session.info));
                    outlet.send(Message::Response { id, result }).await;
                })
                .await;
                return;
            }
            // A retry: the call parked under its state answers this request now.
            "tools/call" if params.as_ref().is_some_and(|p| p.get("requestState").is_some()) => {
                let params = params.unwrap_or_default();
                let route = rounds::Route { id: id.clone(), outlet: outlet.clone() };
                // On stdio the client cancels the call by the id of the request it waits on: this one now.
                let calls = (!self.stateless).then_some(&self.calls);
                match self.parked.resume(&params, route, calls, &self.info).await {
                    Ok(()) => return,
                    Err(refused) => Err(refused),
                }
            }
            "tools/call" => {
                let modern::Envelope { client, capabilities, log_level } = envelope;
                let client = Peer {
                    session: Arc::downgrade(self),
                    client: Arc::new((client, capabilities)),
                    outlet: outlet.clone(),
                    progress_token: None,
                    modern: true,
                    modern_log_level: log_level,
                    rounds: None,
                };
                return self.call(id, params, client).await;
            }
            listing @ ("prompts/list" | "resources/list" | "resources/templates/list") => {
                unserved(listing, params.as_ref()).map(modern::cacheable)
            }
            other => unserved(other, params.as_ref()),
        };
        let result = result.map(|r| modern::complete(r, &self.info));
        outlet.send(Message::Response { id, result }).await;
    }

    fn initialize(&self, params: Option<&Value>) -> Result<Value, WireError> {
        let params = params.ok_or_else(|| WireError::new(INVALID_PARAMS, "initialize needs params"))?;
        let asked = params["protocolVersion"].as_str().unwrap_or_default();
        let version = LEGACY_VERSIONS.iter().find(|v| **v == asked).copied().unwrap_or(LEGACY_VERSIONS[0]);
        let client = ClientInfo {
            name: params["clientInfo"]["name"].as_str().unwrap_or("unknown").to_string(),
            version: params["clientInfo"]["version"].as_str().unwrap_or("").to_string(),
        };
        *lock(&self.client) = Some(Arc::new((client, params["capabilities"].clone())));
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": served_capabilities(&self.info, false),
            "serverInfo": { "name": self.info.name, "version": self.info.version },
        });
        if let Some(instructions) = &self.info.instructions {
            result["instructions"] = json!(instructions);
        }
        Ok(result)
    }

    async fn call(self: &Arc<Self>, id: RequestId, params: Option<Value>, mut client: Peer) {
        client.progress_token = params.as_ref().and_then(|p| p.pointer("/_meta/progressToken")).cloned();
        let token = self.ending.child_token();
        if client.modern {
            let route = rounds::Route { id: id.clone(), outlet: client.outlet.clone() };
            client.rounds = Some(rounds::CallRounds::new(params.as_ref(), route, token.clone()));
        }
        // Over HTTP, modern calls of any number of clients share one session: their ids may coincide.
        let key =
            if self.stateless { RequestId::String(uuid::Uuid::new_v4().simple().to_string()) } else { id.clone() };
        let admitted = {
            let mut calls = lock(&self.calls);
            let admitted = calls.len() < SERVE_IN_FLIGHT_MAX && !calls.contains_key(&key);
            if admitted {
                calls.insert(key.clone(), token.clone());
            }
            admitted
        };
        let session = Arc::clone(self);
        self.spawn(async move {
            let outlet = client.outlet.clone();
            if !admitted {
                let why = format!("more than {SERVE_IN_FLIGHT_MAX} calls in flight, or a request id already in use");
                outlet.send(Message::Response { id, result: Err(WireError::new(SERVER_BUSY, why)) }).await;
                return;
            }
            let mut params = params.unwrap_or(Value::Null);
            let arguments = params.get_mut("arguments").map(Value::take).unwrap_or_else(|| json!({}));
            let result = match params["name"].as_str() {
                None => Err(WireError::new(INVALID_PARAMS, "tools/call needs a tool name")),
                Some(name) => session.tools.call(&client, name, arguments, token.clone()).await,
            };
            let result = if client.modern { result.map(|r| modern::complete(r, &session.info)) } else { result };
            // A modern call answers the request it answers now (after rounds: the last retry; none when the
            // client never retried, and the call gave up waiting).
            let (route, retries) = match &client.rounds {
                Some(rounds) => {
                    rounds.finish();
                    (rounds.route().map(|route| (route.id, route.outlet)), rounds.retries())
                }
                None => (Some((id, outlet)), Vec::new()),
            };
            drop(client);
            let ours = {
                let mut calls = lock(&session.calls);
                for retry in &retries {
                    calls.remove(retry);
                }
                calls.remove(&key).is_some()
            };
            // A call the client cancelled is not answered.
            if let Some((id, outlet)) = route.filter(|_| ours && !token.is_cancelled()) {
                outlet.send(Message::Response { id, result }).await;
            }
        })
        .await;
    }
}

/// What a session serves, in both eras: tools, log messages, and an empty
/// prompt and resource catalogue. A legacy client is told the tool listing
/// may change when the host says it may; a modern one never is: it would be
/// told on a subscription stream (`subscriptions/listen`), which this server
/// does not offer, and learns of a change from the result of the call that
/// made it.
pub(crate) fn served_capabilities(info: &ServerInfo, modern: bool) -> Value {
    let changes = info.tools_change && !modern;
    json!({ "tools": { "listChanged": changes }, "logging": {}, "prompts": {}, "resources": {} })
}

/// The methods of what CLAT does not serve: it serves its tool registry, and
/// has no prompts or resources. Their listings are empty (a client that lists
/// all a server declares gets an answer, not an error), and naming one is the
/// spec's not-found error, `-32602` with what was asked in its data; any
/// other method is not found.
fn unserved(method: &str, params: Option<&Value>) -> Result<Value, WireError> {
    let not_found = |what: &str, key: &str| {
        let asked = params.and_then(|p| p.get(key)).cloned().unwrap_or(Value::Null);
        let mut error = WireError::new(INVALID_PARAMS, format!("{what} not found"));
        error.data = Some(json!({ key: asked }));
        Err(error)
    };
    match method {
        "prompts/list" => Ok(json!({ "prompts": [] })),
        "resources/list" => Ok(json!({ "resources": [] })),
        "resources/templates/list" => Ok(json!({ "resourceTemplates": [] })),
        "prompts/get" => not_found("Prompt", "name"),
        "resources/read" => not_found("Resource", "uri"),
        other => Err(WireError::new(METHOD_NOT_FOUND, format!("method not found: {other}"))),
    }
}
