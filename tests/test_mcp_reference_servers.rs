//! The MCP client against servers written by others: the npm reference servers
//! (`@modelcontextprotocol/server-everything`, `server-filesystem`,
//! `server-memory`; legacy era; server-everything's tools that call back
//! for sampling and elicitation) and a server on the official Python SDK
//! (`mcp` 2.x, dual era: answers `server/discover`, and `initialize` on a fresh
//! connection; its `greet` and `capital` tools ask for input with
//! `input_required`). They are installed by `scripts/install-test-peers.sh` (which
//! `.ci/run` runs).

mod support;

use std::sync::Arc;
use std::time::Duration;

use clat_mcp::{ClientInfo, Era, NoServerRequests, Opening, Session, StderrSink, StdioSpec, Target};
use serde_json::{Value, json};
use support::{TestEnv, npm_server, stderr, stdout, test_peers};

/// These servers start slowly (Python imports take about a second); running the
/// tests one at a time keeps their start-up within the 3 s modern probe.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

struct Ignore;
impl StderrSink for Ignore {
    fn write(&self, _bytes: &[u8]) {}
}

fn everything() -> (String, Vec<String>) {
    ("node".into(), vec![npm_server("server-everything"), "stdio".into()])
}

fn python() -> (String, Vec<String>) {
    let peers = test_peers();
    // The SDK's imports take about a second; do them once before the first timed probe.
    static WARM: std::sync::Once = std::sync::Once::new();
    WARM.call_once(|| {
        let status = std::process::Command::new(peers.join(".venv/bin/python"))
            .args(["-c", "import mcp.server.mcpserver"])
            .status()
            .expect("run the venv's python");
        assert!(status.success());
    });
    (peers.join(".venv/bin/python").display().to_string(), vec![peers.join("python_server.py").display().to_string()])
}

async fn connect((command, args): (String, Vec<String>)) -> Session {
    let spec = StdioSpec { command, args, env: vec![], clear_env: false, cwd: std::env::temp_dir() };
    let client = ClientInfo { name: "clat-test".into(), version: "0".into() };
    let opening = Opening::new(Arc::new(NoServerRequests), client, json!({})).stderr(Arc::new(Ignore));
    Session::connect(&Target::Stdio(spec), opening).await.unwrap()
}

const LONG: Duration = Duration::from_secs(30);

#[test]
fn the_npm_reference_server_speaks_the_legacy_era() {
    let _serial = serial();
    runtime().block_on(npm_reference_server_legacy());
}

async fn npm_reference_server_legacy() {
    let s = connect(everything()).await;
    assert_eq!(s.era, Era::Legacy, "server/discover → -32601, so a fresh process did initialize");
    assert_eq!(s.protocol_version, "2025-11-25");
    let listing = s.list_tools().await.unwrap();
    let names: Vec<&str> = listing.tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"echo"), "{names:?}");
    let result = s.call_tool("echo", json!({ "message": "hello from clat" }), LONG, None).await.unwrap();
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("hello from clat"), "{result}");
    s.close().await;
}

#[test]
fn the_python_sdk_server_speaks_the_modern_era() {
    let _serial = serial();
    runtime().block_on(python_sdk_server_modern());
}

async fn python_sdk_server_modern() {
    let s = connect(python()).await;
    assert_eq!(s.era, Era::Modern);
    assert_eq!(s.protocol_version, "2026-07-28");
    assert_eq!(s.server_info["name"], "clat-python-peer");
    let listing = s.list_tools().await.unwrap();
    let add = listing.tools.iter().find(|t| t["name"] == "add").expect("the add tool");
    assert_eq!(add["inputSchema"]["type"], "object");
    let result = s.call_tool("add", json!({ "a": 2, "b": 3 }), LONG, None).await.unwrap();
    assert_eq!(result["content"][0]["text"], "5", "{result}");
    s.close().await;
}

#[test]
fn the_python_sdk_server_also_speaks_the_legacy_era_on_a_fresh_connection() {
    let _serial = serial();
    runtime().block_on(async {
        let (command, args) = python();
        let spec = StdioSpec { command, args, env: vec![], clear_env: false, cwd: std::env::temp_dir() };
        let connection = clat_mcp::Connection::spawn(&spec, Arc::new(Ignore)).await.unwrap();
        let client = ClientInfo { name: "clat-test".into(), version: "0".into() };
        let s = Session::initialize(
            connection,
            Arc::new(NoServerRequests),
            &client,
            json!({}),
            clat_mcp::limits::LEGACY_HANDSHAKE_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(s.era, Era::Legacy);
        assert_eq!(s.protocol_version, "2025-11-25", "it accepts the version we offer");
        assert_eq!(s.server_info["name"], "clat-python-peer");
        let listing = s.list_tools().await.unwrap();
        assert!(listing.tools.iter().any(|t| t["name"] == "add"), "{:?}", listing.tools);
        let result = s.call_tool("add", json!({ "a": 40, "b": 2 }), LONG, None).await.unwrap();
        assert_eq!(result["content"][0]["text"], "42", "{result}");
        s.close().await;
    });
}

#[test]
fn filesystem_reads_inside_its_allowed_dir_and_memory_keeps_what_it_was_told() {
    let _serial = serial();
    let env = TestEnv::trusted();
    let allowed = env.dir.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let allowed = allowed.canonicalize().unwrap();
    std::fs::write(allowed.join("note.txt"), "a note for the filesystem server").unwrap();
    std::fs::write(env.dir.path().join("secret.txt"), "outside").unwrap();
    let memory_file = env.dir.path().join("memory.jsonl");
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("mcp.json"),
        json!({
            "fs": { "command": "node", "args": [npm_server("server-filesystem"), allowed] },
            "memory": { "command": "node", "args": [npm_server("server-memory")],
                        "env": { "MEMORY_FILE_PATH": memory_file } }
        })
        .to_string(),
    )
    .unwrap();
    let out = env.clat(&["mcp", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["connected"], 2, "{v}");

    let read = |path: &std::path::Path| {
        let args = json!({ "path": path }).to_string();
        env.clat(&["call", "mcp_fs_read_text_file", &args, "--mode", "full-access"])
    };
    let out = read(&allowed.join("note.txt"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("a note for the filesystem server"), "{}", stdout(&out));
    let out = read(&env.dir.path().canonicalize().unwrap().join("secret.txt"));
    assert_eq!(out.status.code(), Some(1), "the server refuses a path outside its dir as a tool error");
    assert!(!stdout(&out).contains("outside"), "{}", stdout(&out));

    let entities = json!({ "entities": [{ "name": "CLAT", "entityType": "project", "observations": ["speaks MCP"] }] });
    let out = env.clat(&["call", "mcp_memory_create_entities", &entities.to_string(), "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Another process, another server start: what it was told is still there (its env reached it).
    let out = env.clat(&["call", "mcp_memory_read_graph", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("speaks MCP"), "{}", stdout(&out));
    assert!(memory_file.exists(), "the server wrote where its configured env said");
}

#[test]
fn both_mount_beside_the_native_tools_through_the_cli() {
    let _serial = serial();
    let env = TestEnv::trusted();
    let (node, node_args) = everything();
    let (py, py_args) = python();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("mcp.json"),
        json!({ "everything": { "command": node, "args": node_args }, "py": { "command": py, "args": py_args } })
            .to_string(),
    )
    .unwrap();
    let status = || -> Value {
        let out = env.clat(&["mcp", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let protocol = |v: &Value, name: &str| {
        v["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap()["protocol"].clone()
    };
    let mut v = status();
    // The Python server's imports take 1–2 s of CPU; started beside server-everything on a loaded machine it may
    // miss the 3 s modern probe, and is then rightly spoken to in the legacy era. Once more, with its files cached.
    if protocol(&v, "py") != "2026-07-28 (modern)" {
        v = status();
    }
    assert_eq!(v["connected"], 2, "{v}");
    assert_eq!(protocol(&v, "everything"), "2025-11-25 (legacy)");
    assert_eq!(protocol(&v, "py"), "2026-07-28 (modern)");
    let out = env.clat(&["call", "mcp_py_add", r#"{"a":20,"b":22}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "42\n");
    let out = env.clat(&["call", "mcp_everything_echo", r#"{"message":"side by side"}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("side by side"), "{}", stdout(&out));
}

fn write_everything_config(env: &TestEnv) {
    let (node, node_args) = everything();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("mcp.json"),
        json!({ "everything": { "command": node, "args": node_args } }).to_string(),
    )
    .unwrap();
}

#[test]
fn trigger_sampling_request_completes_through_the_terminal_approval_gate() {
    let _serial = serial();
    let env = TestEnv::trusted();
    write_everything_config(&env);
    // A real terminal (script(1) gives clat a pty): the tool is allowed by auto-edit, the
    // sampling request is shown with its complete payload and approved with `y`.
    let command = format!(
        "{} call mcp_everything_trigger_sampling_request '{{\"prompt\":\"hello from a test\",\"maxTokens\":60}}' \
         --mode auto-edit",
        env!("CARGO_BIN_EXE_clat")
    );
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    let out = support::output_with_stdin(&env, script, b"y\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(screen.contains("Allow mcp:everything to send this request to the model?"), "{screen}");
    assert!(screen.contains("You are a helpful test server."), "the complete payload is shown: {screen}");
    assert!(screen.contains("LLM sampling result"), "{screen}");
    assert!(screen.contains("[offline model]") && screen.contains("hello from a test"), "{screen}");
}

#[test]
fn trigger_sampling_request_is_refused_headless_and_runs_in_full_access() {
    let _serial = serial();
    let env = TestEnv::trusted();
    write_everything_config(&env);
    let args = r#"{"prompt":"hi","maxTokens":40}"#;
    // Headless, auto-edit: nobody can approve the sampling, so the server gets a denial.
    let out = env.clat(&["call", "mcp_everything_trigger_sampling_request", args, "--mode", "auto-edit"]);
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!((stdout(&out) + &stderr(&out)).contains("denied"), "{}{}", stdout(&out), stderr(&out));
    // Full access skips the dialog; payload and budget gates remain.
    let out = env.clat(&["call", "mcp_everything_trigger_sampling_request", args, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("[offline model]"), "{}", stdout(&out));
}

#[test]
fn trigger_elicitation_request_gets_an_explicit_error_for_its_multi_select_field() {
    let _serial = serial();
    runtime().block_on(async {
        let env = TestEnv::trusted();
        write_everything_config(&env);
        let scope = env.mount();
        let statuses = scope.load_mcp_servers().await;
        assert_eq!(statuses[0].state, "ready", "{statuses:?}");
        // server-everything registers it after `notifications/initialized`, then says list_changed.
        let mut registered = false;
        for _ in 0..500 {
            registered = scope.registry().list().iter().any(|t| t.name == "mcp_everything_trigger_elicitation_request");
            if registered {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(registered, "registered once the client declared elicitation");
        let asker =
            clat_host::services::asker::LineAsker::new(std::io::Cursor::new(b"Ada\n".to_vec()), std::io::sink());
        let run = clat_host::run::RunContext::builder()
            .mode(clat_host::contract::PermissionMode::FullAccess)
            .asker(Arc::new(asker))
            .start();
        let out = scope.registry().call("mcp_everything_trigger_elicitation_request", json!({}), &run).await;
        // The form has a multi-select field: CLAT answers with an explicit unsupported error, never a guess.
        let text = match out {
            Ok(output) => output.joined_text(),
            Err(e) => e.to_string(),
        };
        assert!(text.contains("-32056") && text.contains("is a multi-select"), "{text}");
        scope.close().await;
    });
}

#[test]
fn the_python_sdk_server_asks_for_input_with_input_required_and_gets_it() {
    let _serial = serial();
    runtime().block_on(async {
        let env = TestEnv::trusted();
        let (py, py_args) = python();
        std::fs::create_dir_all(&env.home).unwrap();
        std::fs::write(env.home.join("mcp.json"), json!({ "py": { "command": py, "args": py_args } }).to_string())
            .unwrap();
        let scope = env.mount();
        let statuses = scope.load_mcp_servers().await;
        assert_eq!(statuses[0].protocol.as_deref(), Some("2026-07-28 (modern)"), "{statuses:?}");
        let sink = Arc::new(clat_host::run::CollectingSink::default());
        let asker =
            clat_host::services::asker::LineAsker::new(std::io::Cursor::new(b"Grace\n".to_vec()), std::io::sink());
        let run = clat_host::run::RunContext::builder()
            .mode(clat_host::contract::PermissionMode::FullAccess)
            .asker(Arc::new(asker))
            .events(sink.clone())
            .start();
        let out = scope.registry().call("mcp_py_greet", json!({}), &run).await.unwrap();
        assert!(out.joined_text().contains("Hello, Grace!"), "{}", out.joined_text());
        let out = scope.registry().call("mcp_py_capital", json!({}), &run).await.unwrap();
        assert!(out.joined_text().contains("the model said: [offline model]"), "{}", out.joined_text());
        let sampled = sink
            .events()
            .iter()
            .any(|e| matches!(&e.kind, clat_host::run::RunEventKind::Sampling { source, .. } if source == "mcp:py"));
        assert!(sampled, "the sampling went through the host's gates");
        scope.close().await;
    });
}

#[test]
fn everything_and_our_server_beside_a_wasm_plugin_with_a_broken_third_entry() {
    let _serial = serial();
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (node, node_args) = everything();
    std::fs::write(
        env.home.join("mcp.json"),
        json!({
            "everything": { "command": node, "args": node_args },
            "test": { "command": clat_test_server_artifact::MCP_TEST_SERVER, "args": ["--modern"] },
            "broken": { "command": "/nonexistent/mcp-server" }
        })
        .to_string(),
    )
    .unwrap();
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(7), "the broken entry failed: {}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((v["configured"].clone(), v["connected"].clone(), v["failed"].clone()), (json!(3), json!(2), json!(1)));
    let server = |name: &str| v["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(server("everything")["protocol"], "2025-11-25 (legacy)");
    assert_eq!(server("test")["protocol"], "2026-07-28 (modern)");
    assert_eq!(server("broken")["state"], "failed");
    assert!(server("broken")["problems"][0].as_str().unwrap().contains("cannot start /nonexistent/mcp-server"));

    let out = env.clat(&["tools"]);
    let listing = stdout(&out);
    for name in ["read_file", "wasm_hello_greet", "mcp_everything_echo", "mcp_test_echo"] {
        assert!(listing.lines().any(|l| l.starts_with(name)), "{name} in {listing}");
    }
    let out = env.clat(&["call", "mcp_everything_echo", r#"{"message":"hi"}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("hi"), "{}", stdout(&out));
}

/// A reference server over Streamable HTTP on 127.0.0.1, killed when dropped.
struct HttpPeer {
    child: std::process::Child,
    url: String,
}

impl HttpPeer {
    fn start(mut command: std::process::Command, port: u16) -> HttpPeer {
        let child = command.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
        let mut peer = HttpPeer { child, url: format!("http://127.0.0.1:{port}/mcp") };
        for _ in 0..300 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return peer;
            }
            if let Ok(Some(status)) = peer.child.try_wait() {
                panic!("the HTTP peer exited early: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the HTTP peer did not start listening on {port}");
    }

    /// server-everything in `streamableHttp` mode, held to loopback by a preloaded script.
    fn everything() -> HttpPeer {
        let port = free_port();
        let mut command = std::process::Command::new("node");
        command
            .arg("--require")
            .arg(test_peers().join("loopback-only.cjs"))
            .arg(test_peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        HttpPeer::start(command, port)
    }

    /// The Python SDK server over Streamable HTTP (both eras), bound to 127.0.0.1.
    fn python() -> HttpPeer {
        let (py, mut args) = python();
        let port = free_port();
        args.extend(["--http".to_string(), port.to_string()]);
        let mut command = std::process::Command::new(py);
        command.args(args);
        HttpPeer::start(command, port)
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn the_reference_servers_over_http_connect_in_their_eras_and_answer_through_clat() {
    let _serial = serial();
    let (everything, py) = (HttpPeer::everything(), HttpPeer::python());
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "everything": { "url": everything.url }, "py": { "url": py.url } }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["connected"], 2, "{v}");
    let server = |name: &str| v["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(server("everything")["transport"], "streamable-http");
    assert_eq!(server("everything")["protocol"], "2025-11-25 (legacy)");
    assert_eq!(server("py")["protocol"], "2026-07-28 (modern)");

    let out = env.clat(&["call", "mcp_everything_echo", r#"{"message":"over http"}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("over http"), "{}", stdout(&out));
    let out = env.clat(&["call", "mcp_py_add", r#"{"a":40,"b":2}"#, "--mode", "full-access"]);
    assert_eq!(stdout(&out), "42\n", "{}", stderr(&out));
    // server-everything asks for sampling on the call's event stream; CLAT answers with a separate POST.
    let out = env.clat(&[
        "call",
        "mcp_everything_trigger_sampling_request",
        r#"{"prompt":"sampled over http","maxTokens":60}"#,
        "--mode",
        "full-access",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("[offline model]") && stdout(&out).contains("sampled over http"), "{}", stdout(&out));
    // Its elicitation form has a multi-select field: an explicit unsupported error reaches the server, over HTTP too.
    let out = env.clat(&["call", "mcp_everything_trigger_elicitation_request", "{}", "--mode", "full-access"]);
    let both = stdout(&out) + &stderr(&out);
    assert!(both.contains("-32056") && both.contains("is a multi-select"), "{both}");
}

#[test]
fn the_python_server_over_http_also_speaks_legacy_and_asks_for_input_when_modern() {
    let _serial = serial();
    let py = HttpPeer::python();
    runtime().block_on(async {
        let spec = clat_mcp::HttpSpec { url: py.url.clone(), headers: vec![], auth: None };
        let client = ClientInfo { name: "clat-test".into(), version: "0".into() };
        let opening = Opening::new(Arc::new(NoServerRequests), client, json!({})).known_legacy(true);
        let s = Session::connect(&Target::Http(spec), opening).await.unwrap();
        assert_eq!((s.era, s.protocol_version.as_str()), (Era::Legacy, "2025-11-25"));
        let result = s.call_tool("add", json!({ "a": 1, "b": 2 }), LONG, None).await.unwrap();
        assert_eq!(result["content"][0]["text"], "3", "{result}");
        s.close().await;

        let env = TestEnv::trusted();
        env.write_mcp_config(json!({ "py": { "url": py.url } }));
        let scope = env.mount();
        let statuses = scope.load_mcp_servers().await;
        assert_eq!(statuses[0].protocol.as_deref(), Some("2026-07-28 (modern)"), "{statuses:?}");
        let asker =
            clat_host::services::asker::LineAsker::new(std::io::Cursor::new(b"Ada\n".to_vec()), std::io::sink());
        let run = clat_host::run::RunContext::builder()
            .mode(clat_host::contract::PermissionMode::FullAccess)
            .asker(Arc::new(asker))
            .start();
        let out = scope.registry().call("mcp_py_greet", json!({}), &run).await.unwrap();
        assert!(out.joined_text().contains("Hello, Ada!"), "{}", out.joined_text());
        scope.close().await;
    });
}
