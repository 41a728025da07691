//! `--http`: the test server over Streamable HTTP, on 127.0.0.1 only (a small
//! HTTP/1.1 server: a thread per connection, keep-alive for JSON answers,
//! close-delimited event streams). It writes its URL to `--port-file PATH`.
//!
//! Eras: legacy by default (`initialize` opens a session, `Mcp-Session-Id` is
//! required afterwards, an unknown session gets 404); `--modern` serves the
//! 2026-07-28 binding only (no session; `MCP-Protocol-Version` must equal the
//! `_meta` version, `Mcp-Method` the method and `Mcp-Name` the tool, else 400
//! with -32020; an unknown method gets 404 with -32601).
//!
//! Flags: `--sse` (every answer as an event stream, after an empty priming
//! event), `--expire-after N` (the session expires once, after N requests),
//! `--require-auth TOKEN` (401 without `Authorization: Bearer TOKEN`),
//! `--redirect URL` (307 to URL), `--mismatch-once` (modern: the first
//! `tools/call` gets -32020 as if its headers were stale), `--stall-notifications`
//! (a notification's 202 comes after 15 s), `--log-file PATH` (per request a line
//! `REQUEST METHOD PATH`, then the method, session and MCP headers). A POST to
//! `/echo` answers with its own body (a raw HTTP echo for benchmarks).
//!
//! Tools: `echo`, `slow {ms}`, `big_frame` (a 5 MiB answer), `ask_host
//! {method, params}` (sends the request on the call's event stream and answers
//! with the client's answer as JSON text), `fail_500`, `wrong_type` (text/plain),
//! `not_json`, `sse_drop` (a priming event with `retry: 100`, then the stream
//! closes; the answer comes on GET + `Last-Event-ID`), `sse_no_answer`,
//! `slow_loris` (keep-alive comments forever), `many_lines` (one 5 MiB event of short lines), `sse_drop_forever` (every resumption drops again); modern only: `region {region}`
//! (`x-mcp-header: Region`), `bad_header` (an invalid `x-mcp-header`) and `ask_input
//! {requests}` (answers `input_required` with `requests` as `inputRequests` once, then
//! completes with the `inputResponses` it got as JSON text); `--host-services`
//! advertises `io.artec.clat/hostServices` (modern). `--oauth` (and its flags,
//! `oauth.rs`) protects the server with OAuth, its own authorization server beside it.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

use crate::contract::text;

struct Options {
    modern: bool,
    sse: bool,
    expire_after: Option<usize>,
    require_auth: Option<String>,
    redirect: Option<String>,
    log_file: Option<String>,
    mismatch_once: bool,
    stall_notifications: bool,
    host_services: bool,
}

struct Server {
    opts: Options,
    sessions: Mutex<HashSet<String>>,
    next_session: AtomicU64,
    requests_in_session: AtomicUsize,
    expired_once: AtomicBool,
    /// Our requests to the client, waiting for the answer it POSTs back.
    waiting: Mutex<HashMap<String, mpsc::Sender<Value>>>,
    /// Events to replay on GET + `Last-Event-ID`.
    replay: Mutex<HashMap<String, String>>,
    next_ask: AtomicU64,
    mismatched: AtomicBool,
    oauth: Option<crate::oauth::OAuth>,
    /// `http://127.0.0.1:PORT`.
    origin: Mutex<String>,
}

struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// Run the HTTP server until killed.
pub fn run(args: &[String]) {
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let server = Arc::new(Server {
        opts: Options {
            modern: has("--modern"),
            sse: has("--sse"),
            expire_after: value("--expire-after").and_then(|v| v.parse().ok()),
            require_auth: value("--require-auth"),
            redirect: value("--redirect"),
            log_file: value("--log-file"),
            mismatch_once: has("--mismatch-once"),
            stall_notifications: has("--stall-notifications"),
            host_services: has("--host-services"),
        },
        sessions: Mutex::default(),
        next_session: AtomicU64::new(1),
        requests_in_session: AtomicUsize::new(0),
        expired_once: AtomicBool::new(false),
        waiting: Mutex::default(),
        replay: Mutex::default(),
        next_ask: AtomicU64::new(0),
        mismatched: AtomicBool::new(false),
        oauth: crate::oauth::OAuth::new(args),
        origin: Mutex::default(),
    });
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    *server.origin.lock().unwrap() = format!("http://{}", listener.local_addr().unwrap());
    match value("--port-file") {
        Some(path) => std::fs::write(path, &url).expect("write the port file"),
        None => println!("{url}"),
    }
    for stream in listener.incoming().flatten() {
        // Answers go out at once (no Nagle delay waiting for the client's ACK).
        let _ = stream.set_nodelay(true);
        let server = Arc::clone(&server);
        std::thread::spawn(move || server.connection(stream));
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut words = line.split_whitespace();
    let method = words.next()?.to_string();
    let path = words.next().unwrap_or("/").to_string();
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request { method, path, headers, body })
}

fn write_json(stream: &mut TcpStream, status: &str, extra: &[(&str, String)], body: &str) -> bool {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    stream.write_all(head.as_bytes()).is_ok()
}

fn write_plain(stream: &mut TcpStream, status: &str, content_type: &str, extra: &[(&str, String)], body: &str) {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n", body.len());
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    let _ = stream.write_all(head.as_bytes());
}

/// Start a close-delimited event stream.
fn start_stream(stream: &mut TcpStream, extra: &[(&str, String)]) -> bool {
    let mut head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n"
            .to_string();
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).is_ok()
}

fn event(stream: &mut TcpStream, id: Option<&str>, data: &str) -> bool {
    let mut text = String::new();
    if let Some(id) = id {
        text.push_str(&format!("id: {id}\n"));
    }
    text.push_str(&format!("data: {data}\n\n"));
    stream.write_all(text.as_bytes()).and_then(|_| stream.flush()).is_ok()
}

fn response(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

impl Server {
    /// Append one line. Connections log from their own threads: the line and its newline go in one
    /// `write` on an `O_APPEND` file, so lines never interleave (`writeln!` may split them in two writes).
    fn log(&self, line: &str) {
        if let Some(path) = &self.opts.log_file {
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open the log file");
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }

    fn connection(&self, stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().expect("clone the stream"));
        let mut stream = stream;
        while let Some(request) = read_request(&mut reader) {
            if !self.handle(&mut stream, request) {
                break;
            }
        }
    }

    /// Answer one HTTP request; false when the connection is done.
    fn handle(&self, stream: &mut TcpStream, request: Request) -> bool {
        self.log(&format!("REQUEST {} {}", request.method, request.path));
        let header = |name: &str| request.headers.get(name).cloned();
        if let Some(oauth) = &self.oauth {
            let origin = self.origin.lock().unwrap().clone();
            if request.path.starts_with("/as/token") {
                let form = crate::oauth::query(&String::from_utf8_lossy(&request.body));
                self.log(&format!("TOKEN grant={}", form.get("grant_type").cloned().unwrap_or_default()));
            }
            let answer = match oauth.endpoint(&origin, &request.method, &request.path, &request.body) {
                Some(answer) => Some(answer),
                None if request.method == "POST" => {
                    let tool = serde_json::from_slice::<Value>(&request.body)
                        .ok()
                        .filter(|m| m.get("method").and_then(Value::as_str) == Some("tools/call"))
                        .and_then(|m| m.pointer("/params/name").and_then(Value::as_str).map(str::to_string));
                    oauth.admit(&origin, header("authorization").as_deref(), tool.as_deref()).err()
                }
                None => None,
            };
            match answer {
                Some(crate::oauth::Answer::Json(status, extra, body)) => {
                    let extra: Vec<(&str, String)> = extra.into_iter().collect();
                    return write_json(stream, status, &extra, &body);
                }
                Some(crate::oauth::Answer::Redirect(to)) => {
                    write_plain(stream, "302 Found", "text/plain", &[("Location", to)], "");
                    return true;
                }
                None => {}
            }
        }
        if let Some(token) = &self.opts.require_auth
            && header("authorization") != Some(format!("Bearer {token}"))
        {
            // A careless server that echoes the credential it refused.
            let got = header("authorization").unwrap_or_default();
            write_plain(stream, "401 Unauthorized", "text/plain", &[], &format!("wrong bearer token: {got}"));
            return true;
        }
        if let Some(to) = &self.opts.redirect {
            write_plain(stream, "307 Temporary Redirect", "text/plain", &[("Location", to.clone())], "");
            return true;
        }
        match request.method.as_str() {
            "GET" => {
                let last = header("last-event-id");
                self.log(&format!("GET last-event-id={}", last.clone().unwrap_or_default()));
                if let Some(round) =
                    last.as_deref().and_then(|id| id.strip_prefix("drop-")).and_then(|n| n.parse::<u32>().ok())
                {
                    // `sse_drop_forever`: every resumption drops again, with a new event id.
                    if start_stream(stream, &[]) {
                        let _ = stream.write_all(format!("id: drop-{}\nretry: 10\ndata: \n\n", round + 1).as_bytes());
                    }
                    return false;
                }
                let replay = last.and_then(|id| self.replay.lock().unwrap().remove(&id));
                match replay {
                    Some(data) => {
                        if start_stream(stream, &[]) {
                            event(stream, Some("e2"), &data);
                        }
                        false
                    }
                    None => {
                        write_plain(stream, "405 Method Not Allowed", "text/plain", &[], "");
                        true
                    }
                }
            }
            "DELETE" => {
                let session = header("mcp-session-id").unwrap_or_default();
                let version = header("mcp-protocol-version").unwrap_or_default();
                self.log(&format!("DELETE session={session} version={version}"));
                self.sessions.lock().unwrap().remove(&session);
                write_plain(stream, "200 OK", "text/plain", &[], "");
                true
            }
            // The floor for benchmarks: the body back as it came, on a kept-alive connection.
            "POST" if request.path == "/echo" => {
                write_json(stream, "200 OK", &[], &String::from_utf8_lossy(&request.body))
            }
            "POST" => self.post(stream, &request),
            _ => {
                write_plain(stream, "405 Method Not Allowed", "text/plain", &[], "");
                true
            }
        }
    }

    fn post(&self, stream: &mut TcpStream, request: &Request) -> bool {
        let header = |name: &str| request.headers.get(name).cloned();
        let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
            write_plain(stream, "400 Bad Request", "text/plain", &[], "not JSON");
            return true;
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("").to_string();
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let session = header("mcp-session-id");
        self.log(&format!(
            "POST {} session={} version={} mcp-method={} mcp-name={} {}",
            if method.is_empty() { "(answer)" } else { &method },
            session.clone().unwrap_or_default(),
            header("mcp-protocol-version").unwrap_or_default(),
            header("mcp-method").unwrap_or_default(),
            header("mcp-name").unwrap_or_default(),
            {
                let mut params: Vec<String> = request
                    .headers
                    .iter()
                    .filter(|(k, _)| k.starts_with("mcp-param-"))
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                params.sort();
                params.join(" ")
            }
        ));
        if method.is_empty() {
            // The client's answer to one of our requests.
            if let Some(waiter) = id.as_str().and_then(|id| self.waiting.lock().unwrap().remove(id)) {
                let _ = waiter.send(message.clone());
            }
            write_plain(stream, "202 Accepted", "text/plain", &[], "");
            return true;
        }
        if message.get("id").is_none() {
            if self.opts.stall_notifications {
                std::thread::sleep(Duration::from_secs(15));
            }
            write_plain(stream, "202 Accepted", "text/plain", &[], "");
            return true;
        }
        if self.opts.modern {
            let meta_version =
                params.pointer("/_meta/io.modelcontextprotocol~1protocolVersion").and_then(Value::as_str);
            let Some(meta_version) = meta_version else {
                write_json(
                    stream,
                    "400 Bad Request",
                    &[],
                    &error(&id, -32602, "missing _meta protocolVersion").to_string(),
                );
                return true;
            };
            let name = params.get("name").and_then(Value::as_str);
            let forced =
                self.opts.mismatch_once && method == "tools/call" && !self.mismatched.swap(true, Ordering::SeqCst);
            let mismatch = forced
                || header("mcp-protocol-version").as_deref() != Some(meta_version)
                || header("mcp-method").as_deref() != Some(method.as_str())
                || (method == "tools/call" && header("mcp-name").as_deref() != name);
            if mismatch {
                write_json(stream, "400 Bad Request", &[], &error(&id, -32020, "Header mismatch").to_string());
                return true;
            }
        } else if method != "initialize" {
            let known = session.as_ref().is_some_and(|s| self.sessions.lock().unwrap().contains(s));
            if session.is_none() {
                write_json(stream, "400 Bad Request", &[], &error(&id, -32000, "Bad Request: no session").to_string());
                return true;
            }
            if !known {
                write_json(stream, "404 Not Found", &[], &error(&id, -32001, "Session not found").to_string());
                return true;
            }
            let count = self.requests_in_session.fetch_add(1, Ordering::SeqCst) + 1;
            if self.opts.expire_after.is_some_and(|n| count > n) && !self.expired_once.swap(true, Ordering::SeqCst) {
                self.sessions.lock().unwrap().clear();
                write_json(stream, "404 Not Found", &[], &error(&id, -32001, "Session not found").to_string());
                return true;
            }
        }
        self.request(stream, &id, &method, &params)
    }

    fn answer(&self, stream: &mut TcpStream, extra: &[(&str, String)], message: Value) -> bool {
        if self.opts.sse {
            if start_stream(stream, extra) {
                event(stream, Some("p1"), "");
                event(stream, None, &message.to_string());
            }
            false
        } else {
            write_json(stream, "200 OK", extra, &message.to_string())
        }
    }

    fn tools(&self) -> Vec<Value> {
        let mut names = vec![
            "echo",
            "slow",
            "big_frame",
            "ask_host",
            "fail_500",
            "wrong_type",
            "not_json",
            "sse_drop",
            "sse_no_answer",
            "slow_loris",
            "many_lines",
            "sse_drop_forever",
        ];
        if self.opts.modern {
            // A modern server never sends requests on a stream.
            names.retain(|n| *n != "ask_host");
        }
        if self.oauth.is_some() {
            names.push("write_note");
        }
        let mut tools: Vec<Value> = names
            .into_iter()
            .map(|n| json!({ "name": n, "description": "an HTTP test tool", "inputSchema": { "type": "object" } }))
            .collect();
        if self.opts.modern {
            tools.push(json!({ "name": "region", "description": "a tool with a header parameter",
                "inputSchema": { "type": "object", "properties": { "region": { "type": "string", "x-mcp-header": "Region" },
                                                                   "count": { "type": "integer", "x-mcp-header": "Count" } } } }));
            tools.push(json!({ "name": "ask_input", "description": "asks the client through input_required",
                "inputSchema": { "type": "object" } }));
            tools.push(json!({ "name": "bad_header", "description": "an invalid header declaration",
                "inputSchema": { "type": "object", "properties": { "ratio": { "type": "number", "x-mcp-header": "Ratio" } } } }));
        }
        tools
    }

    fn request(&self, stream: &mut TcpStream, id: &Value, method: &str, params: &Value) -> bool {
        let modern = self.opts.modern;
        let complete = |mut result: Value| {
            if modern {
                result["resultType"] = json!("complete");
            }
            result
        };
        match method {
            "initialize" if !modern => {
                let session = format!("session-{}", self.next_session.fetch_add(1, Ordering::SeqCst));
                self.sessions.lock().unwrap().insert(session.clone());
                self.requests_in_session.store(0, Ordering::SeqCst);
                let version = params["protocolVersion"].as_str().unwrap_or("2025-11-25").to_string();
                let result = json!({ "protocolVersion": version, "capabilities": { "tools": {} },
                                     "serverInfo": { "name": "clat-test-http-server", "version": "0.1.0" } });
                self.answer(stream, &[("Mcp-Session-Id", session)], response(id, result))
            }
            "server/discover" if modern => {
                let mut capabilities = json!({ "tools": {} });
                if self.opts.host_services {
                    capabilities["experimental"] = json!({ "io.artec.clat/hostServices": { "version": "0.1.0" } });
                }
                self.answer(
                    stream,
                    &[],
                    response(
                        id,
                        json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": capabilities,
                                "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "clat-test-http-server", "version": "0.1.0" } } }),
                    ),
                )
            }
            "ping" => self.answer(stream, &[], response(id, json!({}))),
            "tools/list" => self.answer(stream, &[], response(id, complete(json!({ "tools": self.tools() })))),
            "tools/call" => self.call(stream, id, params, complete),
            _ if modern => write_json(
                stream,
                "404 Not Found",
                &[],
                &error(id, -32601, &format!("method not found: {method}")).to_string(),
            ),
            _ => self.answer(stream, &[], error(id, -32601, &format!("method not found: {method}"))),
        }
    }

    fn call(&self, stream: &mut TcpStream, id: &Value, params: &Value, complete: impl Fn(Value) -> Value) -> bool {
        let name = params["name"].as_str().unwrap_or("");
        let args = params.get("arguments").cloned().unwrap_or(json!({}));
        match name {
            "echo" => self.answer(stream, &[], response(id, complete(text(args.to_string())))),
            // `--oauth`: needs the scope mcp:write (the step-up case).
            "write_note" => self.answer(stream, &[], response(id, complete(text("noted".to_string())))),
            "region" => self.answer(stream, &[], response(id, complete(text(format!("region {}", args["region"]))))),
            "ask_input" => match params.get("inputResponses") {
                Some(responses) => self.answer(stream, &[], response(id, complete(text(responses.to_string())))),
                None => self.answer(
                    stream,
                    &[],
                    response(id, json!({ "resultType": "input_required", "inputRequests": args["requests"], "requestState": "r1" })),
                ),
            },
            "slow" => {
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(100)));
                self.answer(stream, &[], response(id, complete(text("slept"))))
            }
            "big_frame" => self.answer(stream, &[], response(id, complete(text("x".repeat(5 * 1024 * 1024))))),
            "fail_500" => {
                write_plain(stream, "500 Internal Server Error", "text/plain", &[], "the server broke");
                true
            }
            "wrong_type" => {
                write_plain(stream, "200 OK", "text/plain", &[], "hello");
                true
            }
            "not_json" => write_json(stream, "200 OK", &[], "{this is not json"),
            "sse_drop" => {
                let answer = response(id, complete(text("resumed")));
                self.replay.lock().unwrap().insert("e1".into(), answer.to_string());
                if start_stream(stream, &[]) {
                    let _ = stream.write_all(b"id: e1\nretry: 100\ndata: \n\n").and_then(|_| stream.flush());
                }
                false
            }
            "many_lines" => {
                // One event of 5,000 data lines of 1 KiB: 5 MiB, though no line is long.
                if start_stream(stream, &[]) {
                    let line = format!("data: {}\n", "z".repeat(1024));
                    for _ in 0..5000 {
                        if stream.write_all(line.as_bytes()).is_err() {
                            return false;
                        }
                    }
                    let _ = stream.write_all(b"\n");
                }
                false
            }
            "sse_drop_forever" => {
                if start_stream(stream, &[]) {
                    let _ = stream.write_all(b"id: drop-0\nretry: 10\ndata: \n\n").and_then(|_| stream.flush());
                }
                false
            }
            "sse_no_answer" => {
                if start_stream(stream, &[]) {
                    event(stream, None, "");
                }
                false
            }
            "slow_loris" => {
                if start_stream(stream, &[]) {
                    while stream.write_all(b": keep-alive\n\n").and_then(|_| stream.flush()).is_ok() {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
                false
            }
            "ask_host" => {
                let ask_id = format!("h{}", self.next_ask.fetch_add(1, Ordering::SeqCst));
                let (tx, rx) = mpsc::channel();
                self.waiting.lock().unwrap().insert(ask_id.clone(), tx);
                let mut request = json!({ "jsonrpc": "2.0", "id": ask_id, "method": args["method"] });
                if let Some(p) = args.get("params") {
                    request["params"] = p.clone();
                }
                if !start_stream(stream, &[]) || !event(stream, Some("a1"), &request.to_string()) {
                    return false;
                }
                let answer = match rx.recv_timeout(Duration::from_secs(60)) {
                    Ok(message) => match message.get("error") {
                        Some(e) => json!({ "error": e }),
                        None => json!({ "result": message["result"] }),
                    },
                    Err(_) => json!({ "error": "no answer within 60 s" }),
                };
                event(stream, Some("a2"), &response(id, complete(text(answer.to_string()))).to_string());
                false
            }
            other => self.answer(stream, &[], error(id, -32602, &format!("unknown tool {other}"))),
        }
    }
}
