//! `clat-test-mcp-server`: a real MCP server over stdio (or, with `--http`,
//! over Streamable HTTP: see `http.rs`) for the client's tests,
//! with scenario flags. It speaks the legacy lifecycle and reports what it saw
//! (cancellations, answers to its own requests) on stderr, one line each.
//!
//! Flags: `--offer VERSION` (answer initialize with this version), `--tools N`,
//! `--page-size K`, `--repeat-cursor`, `--endless-pages`, `--stderr-noise`,
//! `--hang-initialize`, `--pid-file PATH`, `--log-file PATH` (appends what it
//! received that a test orders: calls, cancellations, end of input),
//! `--tool-names A,B,…` (list these names instead), `--delay-list MS`,
//! `--host-services` (advertise `io.artec.clat/hostServices`; logs each
//! `io.artec.clat/context/changed` as `context JSON`), `--prompts N` (advertise
//! prompts: `p0`…`pN-1` marked as DSH system prompts, `p0` declaring a `cwd`
//! argument, plus two unmarked ones), `--prompt-bytes B` (`p0` resolves to B
//! bytes), `--prompt-fail NAME` (its `prompts/get` fails), `--prompt-hang NAME`
//! (its `prompts/get` is never answered), `--host-services-version V` (advertise
//! host services at version V instead of 0.1.0), `--contract` (serve
//! the contract-test tools of `contract.rs` instead, with host services),
//! `--read-only-tools`
//! (annotate the `--tool-names` tools read-only and closed-world),
//! `--tools-json JSON` (list exactly these tools; `--tools-json-file PATH`:
//! those of a file; `--watch-tools-file PATH`: those of a file as it is at each
//! `tools/list`, with `notifications/tools/list_changed` whenever it changes), `--list-error TEXT`
//! (`tools/list` fails with TEXT), `--echo-env NAME` (writes `config NAME=value`
//! to stderr at start), `--stderr-flood MIB` (writes MIB MiB of log lines to
//! stderr before reading anything).
//! `ask_host {method, params, detach?}`: with `detach` it answers the call
//! first and asks 200 ms later (the answer is only logged).
//! `ask_host {method, params}` sends that request to the client and answers the
//! call, once the client answered, with the answer as JSON text (`{"result": …}`
//! or `{"error": …}`). `ask_input {requests, rounds}` (modern): answers
//! `input_required` with `requests` as `inputRequests` `rounds` times, checks
//! that each retry carries the exact `requestState`, then completes with the
//! `inputResponses` it got as JSON text. Tools (listed: echo, cwd,
//! big_result, tool3…): `echo`, `cwd`, `slow {ms}`, `big_frame`, `bad_json`
//! (a line that is not JSON, then the answer), `flood {n}`, `ask_ping`,
//! `ask_unknown`, `exit`.

mod contract;
mod http;
mod oauth;

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use contract::text;
use serde_json::{Value, json};

struct Options {
    offer: Option<String>,
    tools: usize,
    page_size: usize,
    repeat_cursor: bool,
    endless_pages: bool,
    stderr_noise: bool,
    hang_initialize: bool,
    pid_file: Option<String>,
    modern: bool,
    modern_reject: bool,
    strict_legacy: bool,
    starts_file: Option<String>,
    delay_initialize: u64,
    grandchild_pid_file: Option<String>,
    list_changed: bool,
    ignore_eof: bool,
    log_file: Option<String>,
    host_services: bool,
    contract: bool,
    read_only_tools: bool,
    prompts: Option<usize>,
    prompt_bytes: usize,
    prompt_fail: Option<String>,
    prompt_hang: Option<String>,
    host_services_version: Option<String>,
    delay_list: u64,
    tool_names: Option<Vec<String>>,
    tools_json: Option<Value>,
    watch_tools_file: Option<String>,
    stderr_flood_mb: usize,
    echo_env: Option<String>,
    list_error: Option<String>,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    Options {
        offer: value("--offer"),
        tools: value("--tools").and_then(|v| v.parse().ok()).unwrap_or(3),
        page_size: value("--page-size").and_then(|v| v.parse().ok()).unwrap_or(usize::MAX),
        repeat_cursor: has("--repeat-cursor"),
        endless_pages: has("--endless-pages"),
        stderr_noise: has("--stderr-noise"),
        hang_initialize: has("--hang-initialize"),
        pid_file: value("--pid-file"),
        modern: has("--modern"),
        modern_reject: has("--modern-reject"),
        strict_legacy: has("--strict-legacy"),
        starts_file: value("--starts-file"),
        delay_initialize: value("--delay-initialize").and_then(|v| v.parse().ok()).unwrap_or(0),
        grandchild_pid_file: value("--grandchild-pid-file"),
        list_changed: has("--list-changed"),
        ignore_eof: has("--ignore-eof"),
        log_file: value("--log-file"),
        host_services: has("--host-services"),
        contract: has("--contract"),
        read_only_tools: has("--read-only-tools"),
        prompts: value("--prompts").and_then(|v| v.parse().ok()),
        prompt_bytes: value("--prompt-bytes").and_then(|v| v.parse().ok()).unwrap_or(0),
        prompt_fail: value("--prompt-fail"),
        prompt_hang: value("--prompt-hang"),
        host_services_version: value("--host-services-version"),
        delay_list: value("--delay-list").and_then(|v| v.parse().ok()).unwrap_or(0),
        // `--tool-names-file F`: the names are read from F when the server starts (a restart may list others).
        tool_names: value("--tool-names")
            .or_else(|| {
                value("--tool-names-file")
                    .map(|f| std::fs::read_to_string(f).expect("read the tool names").trim().to_string())
            })
            .map(|v| v.split(',').map(str::to_string).collect()),
        tools_json: value("--tools-json")
            .map(|v| serde_json::from_str(&v).expect("--tools-json takes a JSON array"))
            .or_else(|| {
                let path = value("--tools-json-file")?;
                let text = std::fs::read_to_string(&path).expect("read the --tools-json-file");
                Some(serde_json::from_str(&text).expect("--tools-json-file holds a JSON array"))
            }),
        watch_tools_file: value("--watch-tools-file"),
        stderr_flood_mb: value("--stderr-flood").and_then(|v| v.parse().ok()).unwrap_or(0),
        echo_env: value("--echo-env"),
        list_error: value("--list-error"),
    }
}

type Out = Arc<Mutex<std::io::Stdout>>;

fn send(out: &Out, message: Value) {
    let mut out = out.lock().unwrap();
    let _ = writeln!(out, "{message}");
    let _ = out.flush();
}

fn reply(out: &Out, id: &Value, result: Value) {
    send(out, json!({ "jsonrpc": "2.0", "id": id, "result": result }));
}

fn log(opts: &Options, event: &str) {
    if let Some(path) = &opts.log_file {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open the log file");
        // One write per line: other processes may append to the same log.
        let _ = f.write_all(format!("{event}\n").as_bytes());
    }
}

fn tool_list(opts: &Options, params: &Value, grown: bool) -> Value {
    if let Some(path) = &opts.watch_tools_file {
        let text = std::fs::read_to_string(path).expect("read the --watch-tools-file");
        return json!({ "tools": serde_json::from_str::<Value>(&text).expect("a JSON array of tools") });
    }
    if let Some(tools) = &opts.tools_json {
        return json!({ "tools": tools });
    }
    if opts.contract {
        return json!({ "tools": contract::tools() });
    }
    if let Some(names) = &opts.tool_names {
        let tools: Vec<Value> = names
            .iter()
            .map(|n| {
                let mut tool =
                    json!({ "name": n, "description": "a named test tool", "inputSchema": { "type": "object" } });
                if opts.read_only_tools {
                    tool["annotations"] = json!({ "readOnlyHint": true, "openWorldHint": false });
                }
                tool
            })
            .collect();
        return json!({ "tools": tools });
    }
    let extra = usize::from(grown);
    let all: Vec<Value> = (0..opts.tools + extra)
        .map(|i| {
            let name = match i {
                0 => "echo".to_string(),
                1 => "cwd".to_string(),
                2 => "big_result".to_string(),
                i if i == opts.tools => "late_tool".to_string(),
                i => format!("tool{i}"),
            };
            json!({ "name": name, "description": "a test tool", "inputSchema": { "type": "object" } })
        })
        .collect();
    let start: usize = params
        .get("cursor")
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix('c'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    if opts.endless_pages {
        return json!({ "tools": [], "nextCursor": format!("c{}", start + 1) });
    }
    let end = start.saturating_add(opts.page_size).min(all.len());
    let mut page = json!({ "tools": all[start.min(all.len())..end] });
    if end < all.len() {
        page["nextCursor"] = json!(if opts.repeat_cursor { "c0".to_string() } else { format!("c{end}") });
    }
    page
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--http") {
        http::run(&args);
        return;
    }
    let opts = options();
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    if let Some(path) = opts.watch_tools_file.clone() {
        // The file's changes, as a server whose tools change while it runs announces them.
        let out = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut last = std::fs::read(&path).ok();
            loop {
                std::thread::sleep(Duration::from_millis(50));
                let now = std::fs::read(&path).ok();
                if now != last {
                    last = now;
                    send(&out, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
                }
            }
        });
    }
    if let Some(path) = &opts.pid_file {
        std::fs::write(path, std::process::id().to_string()).expect("write the pid file");
    }
    if let Some(path) = &opts.starts_file {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("open the starts file");
        let _ = writeln!(f, "started {}", std::process::id());
    }
    if let Some(path) = &opts.grandchild_pid_file {
        // Like an npx wrapper chain: a child that would outlive us if nobody killed the group.
        // Deliberately never waited for: only killing the whole group ends it.
        #[allow(clippy::zombie_processes)]
        let child = std::process::Command::new("sleep").arg("300").spawn().expect("spawn a grandchild");
        std::fs::write(path, child.id().to_string()).expect("write the grandchild pid file");
    }
    let mut initialized = false;
    let mut grown = false;
    // Our requests to the client still unanswered: our id → the tools/call id waiting on it.
    // With the contract tool's pending kind (`None`: `ask_host`, answered raw).
    let mut asked: std::collections::HashMap<String, (Value, Option<contract::Pending>)> =
        std::collections::HashMap::new();
    let mut next_ask = 0u64;
    let mut capabilities = json!({ "tools": { "listChanged": true } });
    if opts.host_services || opts.contract || opts.host_services_version.is_some() {
        let version = opts.host_services_version.as_deref().unwrap_or("0.1.0");
        capabilities["experimental"] = json!({ "io.artec.clat/hostServices": { "version": version } });
    }
    if opts.prompts.is_some() {
        capabilities["prompts"] = json!({});
    }
    if let Some(name) = &opts.echo_env {
        // Like a server that logs its configuration.
        eprintln!("config {name}={}", std::env::var(name).unwrap_or_default());
    }
    if opts.stderr_flood_mb > 0 {
        // A chatty server: this many MiB of log lines before it reads anything.
        let line = format!("{}\n", "log line with nothing in it ".repeat(3));
        let mut err = std::io::stderr().lock();
        for _ in 0..(opts.stderr_flood_mb << 20) / line.len() {
            let _ = err.write_all(line.as_bytes());
        }
    }
    if opts.stderr_noise {
        for i in 0..50 {
            eprintln!("noise line {i}: Authorization: Bearer sk-test-abcdefghijklmnopqrstuvwxyz");
        }
    }
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            eprintln!("bad line: {line}");
            continue;
        };
        let method = message.get("method").and_then(Value::as_str).unwrap_or("");
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let params = message.get("params").cloned().unwrap_or(json!({}));
        if method.is_empty() {
            // A response to one of our requests.
            let answered = match message.get("error") {
                Some(e) => format!("answer {id} error {}", e["code"]),
                None => format!("answer {id} result {}", message["result"]),
            };
            eprintln!("{answered}");
            log(&opts, &answered);
            match id.as_str().and_then(|id| asked.remove(id)) {
                Some((call, Some(pending))) => reply(&out, &call, contract::render(pending, &message)),
                Some((call, None)) => {
                    let answer = match message.get("error") {
                        Some(e) => json!({ "error": e }),
                        None => json!({ "result": message["result"] }),
                    };
                    reply(&out, &call, text(answer.to_string()));
                }
                None => {}
            }
            continue;
        }
        if opts.modern {
            // Every modern request must carry the envelope.
            let version = params.pointer("/_meta/io.modelcontextprotocol~1protocolVersion").and_then(Value::as_str);
            if version != Some("2026-07-28") && message.get("id").is_some() {
                send(
                    &out,
                    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": "missing _meta protocolVersion" } }),
                );
                continue;
            }
        }
        if opts.strict_legacy && !initialized && method != "initialize" {
            eprintln!("strict legacy server: {method} before initialize; giving up");
            std::process::exit(1);
        }
        match method {
            "server/discover" if opts.modern_reject => send(
                &out,
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32022, "message": "Unsupported protocol version",
                        "data": { "supported": ["2027-01-01"], "requested": "2026-07-28" } } }),
            ),
            "server/discover" if opts.modern => reply(
                &out,
                &id,
                json!({ "resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": capabilities,
                        "_meta": { "io.modelcontextprotocol/serverInfo": { "name": "modern-test-server", "version": "1" } } }),
            ),
            "initialize" => {
                initialized = true;
                if opts.hang_initialize {
                    continue;
                }
                std::thread::sleep(Duration::from_millis(opts.delay_initialize));
                let requested = params["protocolVersion"].as_str().unwrap_or("2024-11-05").to_string();
                let version = opts.offer.clone().unwrap_or(requested);
                reply(
                    &out,
                    &id,
                    json!({ "protocolVersion": version, "capabilities": capabilities,
                            "serverInfo": { "name": "clat-test-mcp-server", "version": "0.1.0" } }),
                );
            }
            "notifications/initialized" => {
                eprintln!("initialized");
                if opts.list_changed {
                    // Like server-everything: tools change right after the handshake.
                    grown = true;
                    send(&out, json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }));
                }
            }
            "io.artec.clat/context/changed" => {
                eprintln!("context {}", params["snapshot"]);
                log(&opts, &format!("context {}", params["snapshot"]));
            }
            "notifications/cancelled" => {
                eprintln!("cancelled {}", params["requestId"]);
                log(&opts, &format!("cancelled {}", params["requestId"]));
            }
            "ping" => reply(&out, &id, json!({})),
            "tools/list" if opts.list_error.is_some() => {
                let error = json!({ "code": -32603, "message": opts.list_error });
                send(&out, json!({ "jsonrpc": "2.0", "id": id, "error": error }));
            }
            "tools/list" => {
                std::thread::sleep(Duration::from_millis(opts.delay_list));
                let mut page = tool_list(&opts, &params, grown);
                if opts.modern {
                    page["resultType"] = json!("complete");
                }
                reply(&out, &id, page)
            }
            "prompts/list" => {
                let mut prompts: Vec<Value> = (0..opts.prompts.unwrap_or(0))
                    .map(|i| {
                        let mut p = json!({ "name": format!("p{i}"), "_meta": { "io.artec.clat/dsh": { "systemPrompt": true } } });
                        if i == 0 {
                            p["arguments"] = json!([{ "name": "cwd", "required": true }]);
                        }
                        p
                    })
                    .collect();
                prompts.push(json!({ "name": "plain0", "description": "not for the system prompt" }));
                prompts.push(json!({ "name": "plain1", "_meta": { "io.artec.clat/dsh": { "systemPrompt": false } } }));
                let mut page = json!({ "prompts": prompts });
                if opts.modern {
                    page["resultType"] = json!("complete");
                }
                reply(&out, &id, page)
            }
            "prompts/get" => {
                let name = params["name"].as_str().unwrap_or("").to_string();
                log(&opts, &format!("prompt {name} {}", params["arguments"]));
                if opts.prompt_hang.as_deref() == Some(name.as_str()) {
                    continue;
                }
                if opts.prompt_fail.as_deref() == Some(name.as_str()) {
                    let error = json!({ "code": -32603, "message": format!("prompt {name} is broken") });
                    send(&out, json!({ "jsonrpc": "2.0", "id": id, "error": error }));
                    continue;
                }
                let mut text = format!("You are helped by prompt {name}.");
                if let Some(cwd) = params["arguments"]["cwd"].as_str() {
                    text.push_str(&format!(" The project is at {cwd}."));
                }
                if name == "p0" && opts.prompt_bytes > text.len() {
                    text.push_str(&"z".repeat(opts.prompt_bytes - text.len()));
                }
                reply(
                    &out,
                    &id,
                    json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": text } }] }),
                )
            }
            "tools/call" => {
                let name = params["name"].as_str().unwrap_or("").to_string();
                let args = params.get("arguments").cloned().unwrap_or(json!({}));
                log(&opts, &format!("call {name} {id}"));
                if opts.contract {
                    match contract::call(&name, &args) {
                        Some(contract::Step::Reply(result)) => reply(&out, &id, result),
                        Some(contract::Step::Ask { method, params, pending }) => {
                            let ask_id = format!("c{next_ask}");
                            next_ask += 1;
                            asked.insert(ask_id.clone(), (id.clone(), Some(pending)));
                            send(&out, json!({ "jsonrpc": "2.0", "id": ask_id, "method": method, "params": params }));
                        }
                        Some(contract::Step::Silent) => {}
                        None => send(
                            &out,
                            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": format!("unknown tool {name}") } }),
                        ),
                    }
                    continue;
                }
                match name.as_str() {
                    "echo" => reply(&out, &id, text(args.to_string())),
                    "cwd" => reply(
                        &out,
                        &id,
                        text(std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default()),
                    ),
                    "slow" => {
                        let out = Arc::clone(&out);
                        let ms = args["ms"].as_u64().unwrap_or(100);
                        std::thread::spawn(move || {
                            std::thread::sleep(Duration::from_millis(ms));
                            reply(&out, &id, text(format!("slept {ms} ms")));
                        });
                    }
                    "big_frame" => reply(&out, &id, text("x".repeat(5 * 1024 * 1024))),
                    "bad_json" => {
                        {
                            let mut out = out.lock().unwrap();
                            let _ = writeln!(out, "{{this is not json");
                            let _ = out.flush();
                        }
                        reply(&out, &id, text("after a bad line"));
                    }
                    "big_result" => {
                        reply(&out, &id, text("y".repeat(args["bytes"].as_u64().unwrap_or(2_000_000) as usize)))
                    }
                    "flood" => {
                        let n = args["n"].as_u64().unwrap_or(40);
                        for i in 0..n {
                            let request = json!({ "jsonrpc": "2.0", "id": format!("s{i}"), "method": "sampling/createMessage",
                                                  "params": { "messages": [], "maxTokens": 1 } });
                            send(&out, request);
                        }
                        reply(&out, &id, text(format!("sent {n} requests")));
                    }
                    "ask_host" => {
                        let ask_id = format!("h{next_ask}");
                        next_ask += 1;
                        if args["detach"] == json!(true) {
                            // Answer the call first; the request comes when no call is active.
                            reply(&out, &id, text("asked later"));
                            std::thread::sleep(Duration::from_millis(200));
                        } else {
                            asked.insert(ask_id.clone(), (id.clone(), None));
                        }
                        let mut request = json!({ "jsonrpc": "2.0", "id": ask_id, "method": args["method"] });
                        if let Some(p) = args.get("params") {
                            request["params"] = p.clone();
                        }
                        send(&out, request);
                    }
                    "ask_input" => {
                        let round: u64 = params
                            .get("requestState")
                            .and_then(Value::as_str)
                            .and_then(|s| s.strip_prefix("round-"))
                            .and_then(|s| s.split(':').next())
                            .and_then(|n| n.parse().ok())
                            .unwrap_or(0);
                        // Opaque, with characters a re-encoding could change.
                        let state_of = |r: u64| format!("round-{r}:é \"quoted\" \\ 😀");
                        if round > 0 && params["requestState"].as_str() != Some(state_of(round).as_str()) {
                            let error = json!({ "code": -32602, "message": format!("requestState changed: {}", params["requestState"]) });
                            send(&out, json!({ "jsonrpc": "2.0", "id": id, "error": error }));
                        } else if round < args["rounds"].as_u64().unwrap_or(1) {
                            reply(
                                &out,
                                &id,
                                json!({ "resultType": "input_required", "inputRequests": args["requests"],
                                        "requestState": state_of(round + 1) }),
                            );
                        } else {
                            let mut done =
                                text(params.get("inputResponses").cloned().unwrap_or(Value::Null).to_string());
                            done["resultType"] = json!("complete");
                            reply(&out, &id, done);
                        }
                    }
                    "ask_ping" => {
                        send(&out, json!({ "jsonrpc": "2.0", "id": "p1", "method": "ping" }));
                        reply(&out, &id, text("pinged"));
                    }
                    "ask_unknown" => {
                        send(&out, json!({ "jsonrpc": "2.0", "id": "u1", "method": "foo/bar" }));
                        reply(&out, &id, text("asked"));
                    }
                    "exit" => {
                        // Dies mid-call; a child started with --grandchild-pid-file still holds stdout.
                        eprintln!("exiting mid-call with status 3");
                        std::process::exit(3)
                    }
                    "bad_answer" => {
                        // An answer that breaks off: the id is readable, the rest is not JSON.
                        let mut out = out.lock().unwrap();
                        let _ = writeln!(out, "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[");
                        let _ = out.flush();
                    }
                    "needs_input" => reply(
                        &out,
                        &id,
                        json!({ "resultType": "input_required", "requestState": "s1",
                                "inputRequests": { "q": { "method": "roots/list" } } }),
                    ),
                    "odd_result" => reply(&out, &id, json!({ "resultType": "something-else", "content": [] })),
                    // A tool of `--tools-json`: it answers with what it was called with.
                    listed
                        if opts
                            .tools_json
                            .as_ref()
                            .is_some_and(|t| t.as_array().is_some_and(|t| t.iter().any(|t| t["name"] == listed))) =>
                    {
                        reply(&out, &id, text(format!("{listed} called with {args}")))
                    }
                    other => send(
                        &out,
                        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": format!("unknown tool {other}") } }),
                    ),
                }
            }
            _ if message.get("id").is_some() => send(
                &out,
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": format!("method not found: {method}") } }),
            ),
            _ => {}
        }
    }
    log(&opts, "end of input");
    if opts.ignore_eof {
        // A server that does not exit when its input closes: only the kill after the grace ends it.
        std::thread::sleep(Duration::from_secs(300));
    }
}
