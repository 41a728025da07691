//! The server side of MCP, beside the client and on the same wire types and
//! limits: a host serves its tools to an agent over stdio (one JSON message
//! per line, at most `STDIO_FRAME_MAX_BYTES`). This is the legacy lifecycle:
//! `initialize` (the client's version when it is one of `LEGACY_VERSIONS`,
//! else the newest), `notifications/initialized`, `ping`, `tools/list`,
//! `tools/call` and `notifications/cancelled`. Each call (and each listing,
//! which the host may make wait for its tools) runs on its own task,
//! at most `SERVE_IN_FLIGHT_MAX` at once (past it a call is refused with
//! `SERVER_BUSY`); a cancelled call ends and is not answered. What the tools
//! are and what a call does is the host's (`ServedTools`). A malformed line
//! is answered with a parse error and the session goes on; a frame past the
//! bound, or the end of the input, ends the session: calls still running are
//! cancelled and given `CLOSE_GRACE` to end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::client::{ClientInfo, LEGACY_VERSIONS};
use crate::jsonrpc::{
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, Message, PARSE_ERROR, RequestId, SERVER_BUSY,
    WireError, encode_line, parse, recover_response_id,
};
use crate::limits::{
    CLOSE_GRACE, SERVE_CLIENT_REQUEST_TIMEOUT, SERVE_IN_FLIGHT_MAX, STDIO_FRAME_MAX_BYTES, WRITER_QUEUE,
};
use crate::lock;
use crate::stdio::{FrameError, read_frame};

/// What the host serves.
#[async_trait::async_trait]
pub trait ServedTools: Send + Sync + 'static {
    /// The tools, as MCP `Tool` objects (`name`, `description`, `inputSchema`, `annotations`).
    async fn list(&self) -> Vec<Value>;
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
}

/// The connected client, as a call sees it: who it is, what it declared it
/// can do, and requests to it (`elicitation/create`, …), each answered within
/// `SERVE_CLIENT_REQUEST_TIMEOUT` or failed.
#[derive(Clone)]
pub struct Peer {
    /// Weak: a host that keeps a `Peer` (its session model) does not keep the session alive.
    shared: std::sync::Weak<Shared>,
    info: ClientInfo,
    capabilities: Value,
}

impl Peer {
    pub fn info(&self) -> &ClientInfo {
        &self.info
    }

    /// The client's `capabilities`, as it declared them in `initialize`.
    pub fn capabilities(&self) -> &Value {
        &self.capabilities
    }

    /// Whether it takes form elicitation (`elicitation: {}` in 2025-06-18; `{form: {}}`, or `{}`, in 2025-11-25).
    pub fn elicits_forms(&self) -> bool {
        let declared = &self.capabilities["elicitation"];
        declared.as_object().is_some_and(|e| e.is_empty() || e.contains_key("form"))
    }

    /// Ask the client `method` and wait for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, WireError> {
        let ended = || WireError::new(INTERNAL_ERROR, "the session ended before the client answered");
        let shared = self.shared.upgrade().ok_or_else(ended)?;
        let number = shared.next_request.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = RequestId::String(format!("clat-{number}"));
        let (answer, answered) = tokio::sync::oneshot::channel();
        lock(&shared.asked).insert(id.clone(), answer);
        let request = Message::Request { id: id.clone(), method: method.to_string(), params: Some(params) };
        shared.send(request).await;
        let outcome = tokio::select! {
            answer = tokio::time::timeout(SERVE_CLIENT_REQUEST_TIMEOUT, answered) => match answer {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(ended()),
                Err(_) => Err(WireError::new(
                    INTERNAL_ERROR,
                    format!("the client did not answer {method} within {} s", SERVE_CLIENT_REQUEST_TIMEOUT.as_secs()),
                )),
            },
            _ = shared.ending.cancelled() => Err(ended()),
        };
        lock(&shared.asked).remove(&id);
        outcome
    }
}

/// Who the server says it is in `initialize`.
#[derive(Debug, Clone)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    pub instructions: Option<String>,
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeEnd {
    #[error("the client closed its end")]
    ClientClosed,
    #[error("the client sent a frame of more than {STDIO_FRAME_MAX_BYTES} bytes")]
    FrameTooLarge,
    #[error("reading from the client failed: {0}")]
    Read(String),
    #[error("the session was stopped")]
    Stopped,
}

/// One session's state shared by its tasks.
struct Shared {
    info: ServerInfo,
    tools: Arc<dyn ServedTools>,
    out: tokio::sync::mpsc::Sender<String>,
    /// Calls in flight, by request id: their cancel tokens.
    calls: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Who the client is and what it declared, once it has initialized.
    client: Mutex<Option<(ClientInfo, Value)>>,
    /// The server's own requests to the client, waiting for its answer.
    asked: Mutex<HashMap<RequestId, tokio::sync::oneshot::Sender<Result<Value, WireError>>>>,
    next_request: std::sync::atomic::AtomicU64,
    /// Ended when the session ends: every call still running is cancelled.
    ending: CancellationToken,
}

impl Shared {
    async fn send(&self, message: Message) {
        let _ = self.out.send(encode_line(&message)).await;
    }

    async fn answer(&self, id: RequestId, result: Result<Value, WireError>) {
        self.send(Message::Response { id, result }).await;
    }
}

/// Serve one session on `input` / `output` until the client closes its end,
/// sends a frame past the bound, or `stop` fires.
pub async fn serve<R, W>(
    input: R,
    output: W,
    info: ServerInfo,
    tools: Arc<dyn ServedTools>,
    stop: CancellationToken,
) -> ServeEnd
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut queued) = tokio::sync::mpsc::channel::<String>(WRITER_QUEUE);
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = queued.recv().await {
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let shared = Arc::new(Shared {
        info,
        tools,
        out,
        calls: Mutex::new(HashMap::new()),
        client: Mutex::new(None),
        asked: Mutex::new(HashMap::new()),
        next_request: Default::default(),
        ending: CancellationToken::new(),
    });
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut tasks = tokio::task::JoinSet::new();
    let end = loop {
        let frame = tokio::select! {
            frame = read_frame(&mut reader) => frame,
            _ = stop.cancelled() => break ServeEnd::Stopped,
        };
        match frame {
            Ok(Some(line)) => dispatch(&shared, &line, &mut tasks).await,
            Ok(None) => break ServeEnd::ClientClosed,
            Err(FrameError::TooLarge) => break ServeEnd::FrameTooLarge,
            Err(FrameError::Read(e)) => break ServeEnd::Read(e.to_string()),
        }
        while tasks.try_join_next().is_some() {}
    };
    shared.ending.cancel();
    let _ = tokio::time::timeout(CLOSE_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
    tasks.shutdown().await;
    drop(shared);
    let _ = tokio::time::timeout(CLOSE_GRACE, writer).await;
    end
}

async fn dispatch(shared: &Arc<Shared>, line: &[u8], tasks: &mut tokio::task::JoinSet<()>) {
    let message = match parse(line) {
        Ok(message) => message,
        Err(malformed) => {
            let error = WireError::new(PARSE_ERROR, malformed.to_string());
            match recover_response_id(line) {
                Some(id) => shared.answer(id, Err(error)).await,
                None => shared.send(Message::OrphanError(error)).await,
            }
            return;
        }
    };
    match message {
        Message::Request { id, method, params } => request(shared, id, &method, params, tasks).await,
        Message::Notification { method, params } => notification(shared, &method, params.as_ref()),
        // The answer to one of our requests (`Peer::request`); any other answers nothing.
        Message::Response { id, result } => {
            if let Some(waiting) = lock(&shared.asked).remove(&id) {
                let _ = waiting.send(result);
            }
        }
        Message::OrphanError(_) => {}
    }
}

fn notification(shared: &Shared, method: &str, params: Option<&Value>) {
    if method == "notifications/cancelled" {
        let id = params.and_then(|p| serde_json::from_value::<RequestId>(p["requestId"].clone()).ok());
        if let Some(token) = id.and_then(|id| lock(&shared.calls).remove(&id)) {
            token.cancel();
        }
    }
}

async fn request(
    shared: &Arc<Shared>,
    id: RequestId,
    method: &str,
    params: Option<Value>,
    tasks: &mut tokio::task::JoinSet<()>,
) {
    let initialized = lock(&shared.client).clone().map(|(info, capabilities)| Peer {
        shared: Arc::downgrade(shared),
        info,
        capabilities,
    });
    let result = match (method, initialized) {
        ("initialize", _) => initialize(shared, params.as_ref()),
        ("ping", _) => Ok(json!({})),
        (_, None) => Err(WireError::new(INVALID_REQUEST, format!("{method} before initialize"))),
        // The host may wait for its tools (an initial surface): the session goes on meanwhile.
        ("tools/list", Some(_)) => {
            let shared = Arc::clone(shared);
            tasks.spawn(async move { shared.answer(id, Ok(json!({ "tools": shared.tools.list().await }))).await });
            return;
        }
        ("tools/call", Some(client)) => return call(shared, id, params, client, tasks),
        (other, Some(_)) => Err(WireError::new(METHOD_NOT_FOUND, format!("method not found: {other}"))),
    };
    shared.answer(id, result).await;
}

fn initialize(shared: &Shared, params: Option<&Value>) -> Result<Value, WireError> {
    let params = params.ok_or_else(|| WireError::new(INVALID_PARAMS, "initialize needs params"))?;
    let asked = params["protocolVersion"].as_str().unwrap_or_default();
    let version = LEGACY_VERSIONS.iter().find(|v| **v == asked).copied().unwrap_or(LEGACY_VERSIONS[0]);
    let client = ClientInfo {
        name: params["clientInfo"]["name"].as_str().unwrap_or("unknown").to_string(),
        version: params["clientInfo"]["version"].as_str().unwrap_or("").to_string(),
    };
    *lock(&shared.client) = Some((client, params["capabilities"].clone()));
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": { "name": shared.info.name, "version": shared.info.version },
    });
    if let Some(instructions) = &shared.info.instructions {
        result["instructions"] = json!(instructions);
    }
    Ok(result)
}

fn call(
    shared: &Arc<Shared>,
    id: RequestId,
    params: Option<Value>,
    client: Peer,
    tasks: &mut tokio::task::JoinSet<()>,
) {
    let shared = Arc::clone(shared);
    let token = shared.ending.child_token();
    let admitted = {
        let mut calls = lock(&shared.calls);
        let admitted = calls.len() < SERVE_IN_FLIGHT_MAX && !calls.contains_key(&id);
        if admitted {
            calls.insert(id.clone(), token.clone());
        }
        admitted
    };
    tasks.spawn(async move {
        if !admitted {
            let why = format!("more than {SERVE_IN_FLIGHT_MAX} calls in flight, or a request id already in use");
            return shared.answer(id, Err(WireError::new(SERVER_BUSY, why))).await;
        }
        let params = params.unwrap_or(Value::Null);
        let result = match params["name"].as_str() {
            None => Err(WireError::new(INVALID_PARAMS, "tools/call needs a tool name")),
            Some(name) => {
                let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
                shared.tools.call(&client, name, arguments, token.clone()).await
            }
        };
        let ours = lock(&shared.calls).remove(&id).is_some();
        // A call the client cancelled is not answered.
        if ours && !token.is_cancelled() {
            shared.answer(id, result).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, DuplexStream};

    /// `echo` answers its text; `wait` runs until cancelled, then reports its tag.
    struct Fixture {
        cancelled: tokio::sync::mpsc::UnboundedSender<String>,
    }

    #[async_trait::async_trait]
    impl ServedTools for Fixture {
        async fn list(&self) -> Vec<Value> {
            vec![json!({ "name": "echo", "inputSchema": { "type": "object" } })]
        }

        async fn call(
            &self,
            client: &Peer,
            name: &str,
            arguments: Value,
            cancelled: CancellationToken,
        ) -> Result<Value, WireError> {
            match name {
                "echo" => Ok(json!({ "content": [{ "type": "text", "text": arguments["text"] }], "isError": false })),
                "wait" => {
                    cancelled.cancelled().await;
                    let _ = self.cancelled.send(arguments["tag"].as_str().unwrap_or_default().to_string());
                    Ok(json!({ "content": [], "isError": true }))
                }
                "ask" => {
                    let text = |t: &str, is_error: bool| json!({ "content": [{ "type": "text", "text": t }], "isError": is_error });
                    match client.request("elicitation/create", json!({ "message": "ok?" })).await {
                        Ok(answer) => Ok(text(answer["action"].as_str().unwrap_or_default(), !client.elicits_forms())),
                        Err(e) => Ok(text(&e.message, true)),
                    }
                }
                other => Err(WireError::new(INVALID_PARAMS, format!("unknown tool {other}"))),
            }
        }
    }

    struct Client {
        to: DuplexStream,
        from: tokio::io::Lines<BufReader<DuplexStream>>,
        served: tokio::task::JoinHandle<ServeEnd>,
        cancelled: tokio::sync::mpsc::UnboundedReceiver<String>,
    }

    impl Client {
        fn start() -> Client {
            let (to, server_in) = tokio::io::duplex(1 << 16);
            let (server_out, from) = tokio::io::duplex(1 << 16);
            let (tx, cancelled) = tokio::sync::mpsc::unbounded_channel();
            let info = ServerInfo { name: "fixture".into(), version: "1".into(), instructions: None };
            let tools = Arc::new(Fixture { cancelled: tx });
            let served = tokio::spawn(serve(server_in, server_out, info, tools, CancellationToken::new()));
            Client { to, from: BufReader::new(from).lines(), served, cancelled }
        }

        async fn send(&mut self, message: Value) {
            self.to.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        }

        async fn next(&mut self) -> Value {
            let line = self.from.next_line().await.unwrap().expect("a message");
            serde_json::from_str(&line).unwrap()
        }

        async fn initialize(&mut self, version: &str) -> Value {
            self.initialize_with(version, json!({})).await
        }

        async fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
            self.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": capabilities,
                "clientInfo": { "name": "t", "version": "1" } } }))
                .await;
            self.next().await
        }
    }

    #[tokio::test]
    async fn initialize_negotiates_then_tools_are_listed_and_called() {
        let mut client = Client::start();
        client.send(json!({ "jsonrpc": "2.0", "id": "early", "method": "tools/list" })).await;
        assert_eq!(client.next().await["error"]["code"], INVALID_REQUEST, "nothing before initialize");
        let answer = client.initialize("2025-06-18").await;
        assert_eq!(answer["result"]["protocolVersion"], "2025-06-18", "a version we speak is kept: {answer}");
        assert_eq!(answer["result"]["serverInfo"]["name"], "fixture");
        assert_eq!(client.initialize("1999-01-01").await["result"]["protocolVersion"], LEGACY_VERSIONS[0]);
        client.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
        client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).await;
        assert_eq!(client.next().await["result"]["tools"][0]["name"], "echo");
        client
            .send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": { "name": "echo", "arguments": { "text": "hi" } } }))
            .await;
        let answer = client.next().await;
        assert_eq!((answer["id"].clone(), answer["result"]["content"][0]["text"].clone()), (json!(2), json!("hi")));
        client.send(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "nope" } })).await;
        assert_eq!(client.next().await["error"]["code"], INVALID_PARAMS);
        client.send(json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/list" })).await;
        assert_eq!(client.next().await["error"]["code"], METHOD_NOT_FOUND);
        drop(client.to);
        assert_eq!(client.served.await.unwrap(), ServeEnd::ClientClosed);
    }

    #[tokio::test]
    async fn a_malformed_line_is_answered_and_the_session_goes_on_and_an_oversized_frame_ends_it() {
        let mut client = Client::start();
        client.to.write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \n").await.unwrap();
        assert_eq!(client.next().await["error"]["code"], PARSE_ERROR);
        client.initialize("2025-11-25").await;
        client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" })).await;
        assert_eq!(client.next().await["result"], json!({}));
        let big = vec![b'x'; STDIO_FRAME_MAX_BYTES + 1];
        let writer = tokio::spawn(async move {
            let _ = client.to.write_all(&big).await;
            client.to
        });
        assert_eq!(client.served.await.unwrap(), ServeEnd::FrameTooLarge);
        drop(writer);
    }

    #[tokio::test]
    async fn past_the_in_flight_bound_a_call_is_refused_and_a_cancelled_call_ends_unanswered() {
        let mut client = Client::start();
        client.initialize("2025-11-25").await;
        for id in 0..=SERVE_IN_FLIGHT_MAX {
            client
                .send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": { "name": "wait", "arguments": { "tag": id.to_string() } } }))
                .await;
        }
        let refused = client.next().await;
        assert_eq!(refused["id"], SERVE_IN_FLIGHT_MAX, "the one past the bound: {refused}");
        assert_eq!(refused["error"]["code"], SERVER_BUSY);
        client
            .send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 3 } }))
            .await;
        assert_eq!(client.cancelled.recv().await.unwrap(), "3", "the cancelled call's tool saw it");
        client.send(json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" })).await;
        assert_eq!(client.next().await["id"], "p", "the cancelled call was not answered; the session goes on");
        drop(client.to);
        assert_eq!(client.served.await.unwrap(), ServeEnd::ClientClosed);
        let mut ended = 0;
        while client.cancelled.try_recv().is_ok() {
            ended += 1;
        }
        assert_eq!(ended, SERVE_IN_FLIGHT_MAX - 1, "the session's end cancelled every call still running");
    }

    #[tokio::test]
    async fn a_call_asks_the_client_and_waits_for_its_answer() {
        let mut client = Client::start();
        client.initialize_with("2025-11-25", json!({ "elicitation": { "form": {} } })).await;
        client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "ask" } })).await;
        let asked = client.next().await;
        assert_eq!((asked["method"].as_str(), asked["id"].as_str()), (Some("elicitation/create"), Some("clat-0")));
        client.send(json!({ "jsonrpc": "2.0", "id": "clat-0", "result": { "action": "accept" } })).await;
        let answer = client.next().await;
        assert_eq!(answer["id"], 1, "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], "accept", "{answer}");
        assert_eq!(answer["result"]["isError"], false, "a client declaring form elicitation elicits forms");
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_never_answers_fails_the_request_after_the_timeout() {
        let mut client = Client::start();
        client.initialize("2025-11-25").await;
        client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "ask" } })).await;
        assert_eq!(client.next().await["method"], "elicitation/create");
        let answer = client.next().await;
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        let waited = SERVE_CLIENT_REQUEST_TIMEOUT.as_secs();
        assert_eq!(text, format!("the client did not answer elicitation/create within {waited} s"), "{answer}");
    }
}
