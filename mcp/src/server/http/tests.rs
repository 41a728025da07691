//! The unit tests of `http`.

use super::*;
use crate::jsonrpc::{INVALID_PARAMS, PARSE_ERROR};
use crate::server::fixture::Fixture;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Server {
    url: String,
    stop: CancellationToken,
    served: tokio::task::JoinHandle<Result<(), HttpServeError>>,
    cancelled: tokio::sync::mpsc::UnboundedReceiver<String>,
    http: reqwest::Client,
}

impl Server {
    async fn start(options: HttpServeOptions) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}{MCP_PATH}", listener.local_addr().unwrap());
        let (tx, cancelled) = tokio::sync::mpsc::unbounded_channel();
        let info = ServerInfo { name: "fixture".into(), version: "1".into(), instructions: None, tools_change: false };
        let stop = CancellationToken::new();
        let served =
            tokio::spawn(serve_http(listener, options, info, Arc::new(Fixture { cancelled: tx }), stop.clone()));
        Server { url, stop, served, cancelled, http: reqwest::Client::new() }
    }

    fn post(&self, session: Option<&str>, message: &Value) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = session {
            request = request.header(SESSION_HEADER, session);
        }
        request
    }

    /// `initialize` with `capabilities`: the new session's id.
    async fn initialize(&self, capabilities: Value) -> String {
        let response = self
            .post(
                None,
                &json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": { "name": "t", "version": "1" } } }),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let id = response.headers()[SESSION_HEADER].to_str().unwrap().to_string();
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
        id
    }

    async fn call(&self, session: &str, id: u64, tool: &str, arguments: Value) -> reqwest::Response {
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": { "name": tool, "arguments": arguments } });
        self.post(Some(session), &message).send().await.unwrap()
    }

    async fn stop(self) {
        self.stop.cancel();
        self.served.await.unwrap().unwrap();
    }
}

/// The next event of an event stream: its data, as JSON.
async fn next_event(response: &mut reqwest::Response, buffer: &mut String) -> Value {
    loop {
        if let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let data = event.lines().find_map(|l| l.strip_prefix("data: ")).expect("a data line");
            return serde_json::from_str(data).unwrap();
        }
        let chunk = response.chunk().await.unwrap().expect("the stream goes on");
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// The first event of a stream.
async fn only_event(mut response: reqwest::Response) -> Value {
    next_event(&mut response, &mut String::new()).await
}

#[tokio::test]
async fn a_session_is_opened_used_and_ended() {
    let server = Server::start(HttpServeOptions::default()).await;
    let session = server.initialize(json!({})).await;
    assert!(session.bytes().all(|b| (0x21..=0x7e).contains(&b)), "visible ASCII: {session}");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    assert_eq!(server.post(Some(&session), &initialized).send().await.unwrap().status(), 202);

    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    let listed: Value = server.post(Some(&session), &list).send().await.unwrap().json().await.unwrap();
    assert_eq!(listed["result"]["tools"][0]["name"], "echo", "{listed}");
    let echoed = server.call(&session, 2, "echo", json!({ "text": "hi" })).await;
    assert_eq!(echoed.headers()["content-type"], "text/event-stream", "a call streams");
    let echoed = only_event(echoed).await;
    assert_eq!((echoed["id"].clone(), echoed["result"]["content"][0]["text"].clone()), (json!(2), json!("hi")));
    let unknown = only_event(server.call(&session, 3, "nope", json!({})).await).await;
    assert_eq!(unknown["error"]["code"], INVALID_PARAMS);

    assert_eq!(server.post(None, &list).send().await.unwrap().status(), 400, "no session");
    assert_eq!(server.post(Some("nope"), &list).send().await.unwrap().status(), 404, "not a session");
    let get = server.http.get(&server.url).header(SESSION_HEADER, &session).send().await.unwrap();
    assert_eq!(get.status(), 405);
    let delete = server.http.delete(&server.url).header(SESSION_HEADER, &session).send().await.unwrap();
    assert_eq!(delete.status(), 204);
    assert_eq!(server.post(Some(&session), &list).send().await.unwrap().status(), 404, "ended");
    server.stop().await;
}

#[tokio::test]
async fn what_a_call_asks_the_client_comes_on_its_stream_before_its_answer() {
    let server = Server::start(HttpServeOptions::default()).await;
    let session = server.initialize(json!({ "elicitation": { "form": {} } })).await;
    let mut stream = server.call(&session, 7, "ask", json!({})).await;
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut buffer = String::new();
    let asked = next_event(&mut stream, &mut buffer).await;
    assert_eq!((asked["method"].as_str(), asked["id"].as_str()), (Some("elicitation/create"), Some("clat-0")));
    let reply = json!({ "jsonrpc": "2.0", "id": "clat-0", "result": { "action": "accept" } });
    assert_eq!(server.post(Some(&session), &reply).send().await.unwrap().status(), 202);
    let answer = next_event(&mut stream, &mut buffer).await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "accept", "{answer}");
    assert!(stream.chunk().await.unwrap().is_none(), "the stream ends with the answer");
    server.stop().await;
}

#[tokio::test]
async fn a_cancelled_call_is_not_answered_and_stopping_the_server_ends_every_call() {
    let mut server = Server::start(HttpServeOptions::default()).await;
    let session = server.initialize(json!({})).await;
    let (waiting, other) = tokio::join!(
        server.call(&session, 1, "wait", json!({ "tag": "one" })),
        server.call(&session, 2, "wait", json!({ "tag": "two" })),
    );
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } });
    assert_eq!(server.post(Some(&session), &cancel).send().await.unwrap().status(), 202);
    assert_eq!(server.cancelled.recv().await.unwrap(), "one");
    assert_eq!(waiting.text().await.unwrap(), "", "a cancelled call's stream ends without an answer");
    drop(other);
    let mut cancelled = server.cancelled;
    server.stop.cancel();
    server.served.await.unwrap().unwrap();
    assert_eq!(cancelled.recv().await.unwrap(), "two", "the server's end cancelled the call still running");
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused_and_loopback_ones_served() {
    let server = Server::start(HttpServeOptions::default()).await;
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let port = server.url.split(':').nth(2).unwrap().split('/').next().unwrap().to_string();
    let status = |request: reqwest::RequestBuilder| async move { request.send().await.unwrap().status() };
    let evil = server.post(None, &initialize).header("host", "evil.example.com");
    assert_eq!(status(evil.header("origin", "http://evil.example.com")).await, 403, "DNS rebinding");
    let evil_origin = server.post(None, &initialize).header("origin", "http://evil.example.com");
    assert_eq!(status(evil_origin).await, 403, "a page elsewhere");
    assert_eq!(status(server.post(None, &initialize).header("origin", "null")).await, 403);
    let localhost = server.post(None, &initialize).header("host", format!("localhost:{port}"));
    assert_eq!(status(localhost.header("origin", format!("http://localhost:{port}"))).await, 200);
    let ipv6 = server.post(None, &initialize).header("origin", "http://[::1]:9");
    assert_eq!(status(ipv6).await, 200);
    server.stop().await;
}

#[tokio::test]
async fn a_token_server_refuses_requests_without_its_token_and_off_loopback_one_is_required() {
    let token = HttpServeOptions { token: Some("s3cret".into()), ..HttpServeOptions::default() };
    let server = Server::start(token).await;
    let ping = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let missing = server.post(None, &ping).send().await.unwrap();
    assert_eq!(missing.status(), 401);
    assert_eq!(missing.headers()["www-authenticate"], "Bearer");
    assert_eq!(server.post(None, &ping).bearer_auth("guess").send().await.unwrap().status(), 401);
    assert_eq!(server.post(None, &ping).bearer_auth("s3cret").send().await.unwrap().status(), 200);
    server.stop().await;

    let everywhere: SocketAddr = "0.0.0.0:8080".parse().unwrap();
    let refused = check_bind(everywhere, None).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "0.0.0.0:8080 is not a loopback address: serving on it needs a bearer token (--token-file)"
    );
    assert!(check_bind(everywhere, Some("t")).is_ok());
    assert!(matches!(check_bind("127.0.0.1:1".parse().unwrap(), Some("")), Err(HttpServeError::EmptyToken)));
    assert!(check_bind("[::1]:1".parse().unwrap(), None).is_ok());
}

#[tokio::test]
async fn bad_requests_are_refused_with_their_reason_and_the_session_goes_on() {
    let server = Server::start(HttpServeOptions::default()).await;
    let session = server.initialize(json!({})).await;
    let typed = |content_type: &'static str, body: &'static str| {
        server.http.post(&server.url).header("content-type", content_type).header(SESSION_HEADER, &session).body(body)
    };
    let raw = |body: &'static str| typed("application/json", body);
    let malformed = raw("{\"jsonrpc\": ").send().await.unwrap();
    assert_eq!(malformed.status(), 400);
    assert_eq!(malformed.json::<Value>().await.unwrap()["error"]["code"], PARSE_ERROR);
    let batch = raw("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]").send().await.unwrap();
    assert_eq!(batch.status(), 400);
    let text = typed("text/plain", "{}").send().await.unwrap();
    assert_eq!(text.status(), 415);
    let version = raw("{}").header(VERSION_HEADER, "1999-01-01").send().await.unwrap();
    assert_eq!(version.status(), 400);
    let ping = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" });
    let pong: Value = server.post(Some(&session), &ping).send().await.unwrap().json().await.unwrap();
    assert_eq!(pong["result"], json!({}));
    let elsewhere = server.http.post(server.url.replace(MCP_PATH, "/other")).send().await.unwrap();
    assert_eq!(elsewhere.status(), 404);
    server.stop().await;
}

#[tokio::test]
async fn past_the_body_bound_a_message_is_refused() {
    let server = Server::start(HttpServeOptions::default()).await;
    let session = server.initialize(json!({})).await;
    let big = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": { "name": "echo", "arguments": { "text": "x".repeat(SERVE_HTTP_BODY_MAX_BYTES) } } });
    let refused = server.post(Some(&session), &big).send().await.unwrap();
    assert_eq!(refused.status(), 413);
    let why = refused.json::<Value>().await.unwrap();
    assert_eq!(why["error"]["message"], format!("a message is at most {SERVE_HTTP_BODY_MAX_BYTES} bytes"));
    // Undeclared (chunked): the bound holds while reading.
    let chunks = futures_util::stream::iter(
        (0..=SERVE_HTTP_BODY_MAX_BYTES / 65536).map(|_| Ok::<_, std::io::Error>(vec![b' '; 65536])),
    );
    let chunked = server
        .http
        .post(&server.url)
        .header("content-type", "application/json")
        .header(SESSION_HEADER, &session)
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(chunked.status(), 413);
    let echoed = server.call(&session, 2, "echo", json!({ "text": "small" })).await;
    assert_eq!(only_event(echoed).await["result"]["content"][0]["text"], "small");
    server.stop().await;
}

#[tokio::test]
async fn past_the_session_bound_initialize_is_refused_until_one_ends() {
    let server = Server::start(HttpServeOptions::default()).await;
    let mut sessions = Vec::new();
    for _ in 0..SERVE_HTTP_SESSIONS_MAX {
        sessions.push(server.initialize(json!({})).await);
    }
    let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } });
    let refused = server.post(None, &initialize).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.json::<Value>().await.unwrap()["error"]["code"], SERVER_BUSY);
    server.http.delete(&server.url).header(SESSION_HEADER, &sessions[0]).send().await.unwrap();
    server.initialize(json!({})).await;
    server.stop().await;
}

#[tokio::test]
async fn an_idle_session_ends_and_one_with_a_call_in_flight_does_not() {
    let idle = HttpServeOptions { session_idle: Duration::from_millis(200), ..HttpServeOptions::default() };
    let server = Server::start(idle).await;
    let (quiet, busy) = (server.initialize(json!({})).await, server.initialize(json!({})).await);
    let waiting = server.call(&busy, 1, "wait", json!({ "tag": "busy" }));
    let ping = json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" });
    let (_waiting, ()) = tokio::join!(waiting, tokio::time::sleep(Duration::from_millis(800)));
    assert_eq!(server.post(Some(&quiet), &ping).send().await.unwrap().status(), 404, "idle: ended");
    assert_eq!(server.post(Some(&busy), &ping).send().await.unwrap().status(), 200, "a call in flight");
    server.stop().await;
}

/// Past `SERVE_HTTP_CONNECTIONS_MAX` open connections none more is accepted (its request waits, unread) until
/// one ends; then it is served.
#[tokio::test]
async fn past_the_connection_bound_a_connection_waits_until_one_ends() {
    let server = Server::start(HttpServeOptions::default()).await;
    let address = server.url.trim_start_matches("http://").trim_end_matches(MCP_PATH).to_string();
    let mut open = Vec::new();
    for _ in 0..SERVE_HTTP_CONNECTIONS_MAX {
        open.push(tokio::net::TcpStream::connect(&address).await.unwrap());
    }
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    let waiting = tokio::spawn(server.post(None, &ping).send());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "a connection past the bound was served");
    drop(open.pop());
    let answered = waiting.await.unwrap().unwrap();
    let status = answered.status();
    assert!(status.is_success() || status.is_client_error(), "served once a connection ended: {status}");
    drop(open);
    server.stop().await;
}

#[tokio::test]
async fn a_connection_slow_to_send_its_headers_is_closed() {
    let slow = HttpServeOptions { header_read_timeout: Duration::from_millis(200), ..HttpServeOptions::default() };
    let server = Server::start(slow).await;
    let address = server.url.trim_start_matches("http://").trim_end_matches(MCP_PATH).to_string();
    let mut connection = tokio::net::TcpStream::connect(address).await.unwrap();
    connection.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(20), connection.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the server closed the connection");
    server.stop().await;
}

fn modern(id: u64, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                              "io.modelcontextprotocol/clientCapabilities": {} });
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

#[tokio::test]
async fn a_modern_request_is_answered_on_its_own_with_the_status_of_its_error() {
    let mut server = Server::start(HttpServeOptions::default()).await;
    let send = |message: Value, headers: &[(&str, &str)]| {
        let mut request = server.post(None, &message).header(VERSION_HEADER, "2026-07-28");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };
    let status_and_code = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let answer: Value = response.json().await.unwrap();
        (status, answer["error"]["code"].as_i64(), answer)
    };
    let discovered = send(modern(1, "server/discover", json!({})), &[]).await.unwrap();
    assert!(discovered.headers().get(SESSION_HEADER).is_none(), "no session in this era");
    let (status, code, answer) = status_and_code(discovered).await;
    assert_eq!((status, code, answer["result"]["resultType"].as_str()), (200, None, Some("complete")), "{answer}");
    let bare = json!({ "jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {} });
    let (status, code, _) = status_and_code(send(bare, &[]).await.unwrap()).await;
    assert_eq!((status, code), (400, Some(INVALID_PARAMS)), "a modern request without its envelope");
    let (status, code, _) = status_and_code(send(modern(3, "initialize", json!({})), &[]).await.unwrap()).await;
    assert_eq!((status, code), (404, Some(METHOD_NOT_FOUND)));
    let call = modern(4, "tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } }));
    let (status, code, _) = status_and_code(send(call.clone(), &[("mcp-name", "other")]).await.unwrap()).await;
    assert_eq!((status, code), (400, Some(HEADER_MISMATCH)));
    let (status, code, _) = status_and_code(send(call.clone(), &[("mcp-method", "tools/list")]).await.unwrap()).await;
    assert_eq!((status, code), (400, Some(HEADER_MISMATCH)));
    let encoded = ("mcp-name", "=?base64?ZWNobw==?=");
    let (status, _, answer) =
        status_and_code(send(call, &[("mcp-method", "tools/call"), encoded]).await.unwrap()).await;
    assert_eq!((status, answer["result"]["content"][0]["text"].as_str()), (200, Some("hi")), "{answer}");
    let mut versioned = modern(5, "server/discover", json!({}));
    versioned["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v9");
    let (status, code, _) = status_and_code(send(versioned.clone(), &[]).await.unwrap()).await;
    assert_eq!((status, code), (400, Some(HEADER_MISMATCH)), "the header says 2026-07-28, the body v9");
    let unknown = server.post(None, &versioned).header(VERSION_HEADER, "v9").send().await.unwrap();
    let (status, code, answer) = status_and_code(unknown).await;
    assert_eq!((status, code), (400, Some(UNSUPPORTED_PROTOCOL_VERSION)), "{answer}");
    assert_eq!(answer["error"]["data"]["supported"], json!(["2026-07-28"]));

    // Closing a modern call's response is its cancel.
    let waiting = modern(6, "tools/call", json!({ "name": "wait", "arguments": { "tag": "closed" } }));
    let pending = tokio::spawn(server.post(None, &waiting).header(VERSION_HEADER, "2026-07-28").send());
    tokio::time::sleep(Duration::from_millis(200)).await;
    pending.abort();
    assert_eq!(server.cancelled.recv().await.unwrap(), "closed");
    server.stop().await;
}

#[tokio::test]
async fn a_modern_call_waits_between_requests_for_the_retry_that_answers_it() {
    let server = Server::start(HttpServeOptions::default()).await;
    let mut first = modern(1, "tools/call", json!({ "name": "ask" }));
    first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({ "elicitation": {} });
    let send = |message: &Value| server.post(None, message).header(VERSION_HEADER, "2026-07-28").send();
    let round = send(&first).await.unwrap();
    assert_eq!(round.status(), 200);
    let round: Value = round.json().await.unwrap();
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let key = round["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let mut retry = first.clone();
    retry["id"] = json!(2);
    retry["params"]["requestState"] = round["result"]["requestState"].clone();
    retry["params"]["inputResponses"] = json!({ key: { "action": "decline" } });
    let answer: Value = send(&retry).await.unwrap().json().await.unwrap();
    assert_eq!((answer["id"].clone(), answer["result"]["content"][0]["text"].clone()), (json!(2), json!("decline")));
    server.stop().await;
}
