//! `clat serve`: the project's registry as an MCP server on stdio and Streamable HTTP, driven by real clients
//! (the official Python and TypeScript SDKs): native tools, a WASM plugin and an MCP server served side by side
//! with annotations from their effects, every call through the one pipeline (a call that needs an approval is
//! asked of the client's user in a form when the client elicits forms, else denied at once, saying how to allow
//! it) and in the audit trail, an extension's sampling, forms, progress and logs reaching the client of the call,
//! and nothing started in an untrusted project.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout, wait_pid_gone};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn python() -> std::path::PathBuf {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/.venv/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/install-test-peers.sh", python.display());
    python
}

/// What the Python SDK's client saw of `clat serve --mode MODE [EXTRA…]` in `env`'s project, making `calls`.
fn served(env: &TestEnv, mode: &str, extra: &[&str], calls: Value) -> Value {
    served_answering(env, mode, extra, calls, None)
}

/// The same, the client declaring form elicitation and giving `answer` (an `ElicitResult`) to every form.
fn served_answering(env: &TestEnv, mode: &str, extra: &[&str], calls: Value, answer: Option<Value>) -> Value {
    served_by(env, &["serve", "--mode", mode], extra, calls, answer, None)
}

/// What the client saw of `clat ARGS… EXTRA…`, answering forms with `answer` and sampling with `model_text`.
fn served_by(
    env: &TestEnv,
    args: &[&str],
    extra: &[&str],
    calls: Value,
    answer: Option<Value>,
    model_text: Option<&str>,
) -> Value {
    report(python_client(env, args, extra, calls, answer, model_text).output().unwrap())
}

/// The same with the Python SDK's `Client`, which probes `server/discover` and speaks 2026-07-28: what `clat serve`
/// asks it comes as `input_required` rounds.
fn served_modern(env: &TestEnv, args: &[&str], calls: Value, answer: Option<Value>, model_text: Option<&str>) -> Value {
    report(client_in_era(python_client(env, args, &[], calls, answer, model_text), "modern").output().unwrap())
}

/// The Python client script in `era` (`modern`: the SDK's `Client`, which probes `server/discover`).
fn client_in_era(mut command: std::process::Command, era: &str) -> std::process::Command {
    command.env("CLAT_TEST_ERA", era);
    command
}

fn python_client(
    env: &TestEnv,
    args: &[&str],
    extra: &[&str],
    calls: Value,
    answer: Option<Value>,
    model_text: Option<&str>,
) -> std::process::Command {
    let mut all = json!(["--home", env.home, "--project", env.project]);
    all.as_array_mut().unwrap().extend(args.iter().chain(extra).map(|a| json!(a)));
    sdk_client(Sdk::Python, env!("CARGO_BIN_EXE_clat"), all, calls, answer, model_text)
}

/// The official SDKs whose clients drive `clat serve` here.
#[derive(Clone, Copy)]
enum Sdk {
    Python,
    TypeScript,
}

/// `sdk`'s client for `target` (the `clat` binary, with `args` its arguments; or a served URL, with `args` the
/// headers to send), making `calls`, answering forms with `answer` and sampling with `model_text`; each SDK's
/// script takes the same arguments and prints the same report.
fn sdk_client(
    sdk: Sdk,
    target: &str,
    args: Value,
    calls: Value,
    answer: Option<Value>,
    model_text: Option<&str>,
) -> std::process::Command {
    let peers = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers");
    let (mut command, script) = match sdk {
        Sdk::Python => (std::process::Command::new(python()), peers.join("python_serve_client.py")),
        Sdk::TypeScript => (std::process::Command::new("node"), peers.join("ts_serve_client.mjs")),
    };
    command
        .arg(script)
        .arg(target)
        .arg(args.to_string())
        .arg(calls.to_string())
        .args((answer.is_some() || model_text.is_some()).then(|| answer.unwrap_or(Value::Null).to_string()))
        .args(model_text);
    command
}

/// The client's report, from its output.
fn report(out: std::process::Output) -> Value {
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

#[test]
fn an_agent_gets_native_wasm_and_mcp_tools_through_the_one_pipeline() {
    let env = TestEnv::trusted();
    env.write("notes.txt", "served through clat");
    assert!(env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]).status.success());
    let args = ["--tool-names", "echo", "--read-only-tools"];
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": args } }));
    let calls = json!([
        { "name": "read_file", "arguments": { "path": "notes.txt" } },
        { "name": "wasm_hello_greet", "arguments": { "name": "Ada" } },
        { "name": "mcp_srv_echo", "arguments": { "said": "hi" } },
        { "name": "write_file", "arguments": { "path": "w.txt", "content": "x" } },
        { "name": "no_such_tool", "arguments": {} },
        { "name": "read_file", "arguments": { "path": 7 } },
    ]);
    let report = served(&env, "ask", &[], calls);
    assert_eq!(report["server"], "clat", "{report}");
    assert_eq!(report["protocol"], "2025-11-25", "{report}");
    let tools = &report["tools"];
    assert_eq!(tools["read_file"], json!({ "readOnlyHint": true, "openWorldHint": false }), "{report}");
    assert_eq!(tools["write_file"]["destructiveHint"], false, "{report}");
    assert_eq!(tools["write_file"]["readOnlyHint"], false, "{report}");
    assert!(tools.get("wasm_hello_greet").is_some() && tools.get("mcp_srv_echo").is_some(), "{report}");
    let calls = &report["calls"];
    assert_eq!(calls[0], json!({ "text": "served through clat", "isError": false }), "{report}");
    assert_eq!(calls[1]["text"], "Hello, Ada! (from a WASM plugin)", "{report}");
    assert!(calls[2]["text"].as_str().unwrap().contains("hi"), "{report}");
    // Needs an approval nobody can give through the session: denied at once, with the ways to allow it.
    assert_eq!(calls[3]["isError"], true, "{report}");
    let denial = calls[3]["text"].as_str().unwrap();
    assert!(denial.contains("the client mcp cannot give one through clat serve (it declared no form"), "{denial}");
    assert!(denial.contains("serve with --mode auto-edit or full-access"), "{denial}");
    assert!(!env.project.join("w.txt").exists(), "nothing was written");
    assert!(calls[4]["error"].as_str().unwrap().contains("unknown tool"), "{report}");
    // Arguments the schema refuses: a tool error the model reads and corrects (SEP-1303), not a protocol error.
    assert_eq!(calls[5]["isError"], true, "{report}");
    assert!(calls[5]["text"].as_str().unwrap().contains("path"), "{report}");
    // One record per call in the home's audit trail: who, what, the decision and who made it, how it ended.
    let trail: Vec<Value> =
        env.read_home("audit/calls.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(trail.len(), 6, "{trail:?}");
    let read = &trail[0];
    assert!(read["client"].as_str().unwrap().starts_with("mcp"), "the client as it named itself: {read}");
    assert!(read["time"].as_str().unwrap().ends_with('Z'), "{read}");
    for (key, value) in [("tool", "read_file"), ("source", "native"), ("effect", "read"), ("mode", "ask")] {
        assert_eq!(read[key], value, "{read}");
    }
    assert_eq!((read["decided_by"].as_str(), read["outcome"].as_str()), (Some("mode"), Some("ok")), "{read}");
    assert_eq!(trail[1]["source"], "wasm:hello/greet", "{}", trail[1]);
    assert_eq!(trail[2]["source"], "mcp:srv/echo", "{}", trail[2]);
    let denied = &trail[3];
    assert_eq!((denied["decided_by"].as_str(), denied["outcome"].as_str()), (Some("approver"), Some("denied")));
    assert!(denied["error"].as_str().unwrap().contains("cannot give one through clat serve"), "{denied}");
    assert_eq!((trail[4]["outcome"].as_str(), trail[4]["source"].as_str()), (Some("rejected"), None));
    assert_eq!(trail[5]["outcome"], "rejected", "the call was never made: {}", trail[5]);
    // The mode the session was started with applies to every call; `--audit` names the trail's file.
    let audit = env.dir.path().join("served.jsonl");
    let write = json!([{ "name": "write_file", "arguments": { "path": "w.txt", "content": "x" } }]);
    let report = served(&env, "auto-edit", &["--audit", audit.to_str().unwrap()], write);
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    assert_eq!(env.read("w.txt"), "x");
    let record: Value = serde_json::from_str(std::fs::read_to_string(&audit).unwrap().trim()).unwrap();
    assert_eq!((record["mode"].as_str(), record["outcome"].as_str()), (Some("auto-edit"), Some("ok")), "{record}");
    assert_eq!(env.read_home("audit/calls.jsonl").lines().count(), 6, "the home's trail was not written");
}

/// A client that declared form elicitation is asked: its user's answer decides (once, always, or no), and what
/// is kept applies to the next session's calls like any kept approval.
#[test]
fn a_client_that_elicits_forms_approves_through_its_user() {
    let env = TestEnv::trusted();
    let write = |path: &str| json!([{ "name": "write_file", "arguments": { "path": path, "content": "x" } }]);
    let answer = |decision: &str| Some(json!({ "action": "accept", "content": { "decision": decision } }));
    let report = served_answering(&env, "ask", &[], write("once.txt"), answer("allow"));
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    assert_eq!(env.read("once.txt"), "x");
    let asked = &report["asked"][0];
    let message = asked["message"].as_str().unwrap();
    assert!(message.contains("allow write_file (write) in mode ask") && message.contains("once.txt"), "{message}");
    assert_eq!(asked["schema"]["properties"]["decision"]["enum"], json!(["allow", "always", "deny"]), "{asked}");
    // Declined: denied, nothing written.
    let report = served_answering(&env, "ask", &[], write("no.txt"), Some(json!({ "action": "decline" })));
    assert!(report["calls"][0]["text"].as_str().unwrap().contains("the form was declined"), "{report}");
    assert!(!env.project.join("no.txt").exists());
    // "Always": kept, so a later session whose client cannot be asked is allowed without a question.
    let report = served_answering(&env, "ask", &[], write("always.txt"), answer("always"));
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    let report = served(&env, "ask", &[], write("later.txt"));
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    assert_eq!(report["asked"], json!([]), "{report}");
    assert_eq!(env.read("later.txt"), "x");
    let trail = env.read_home("audit/calls.jsonl");
    let last: Value = serde_json::from_str(trail.lines().last().unwrap()).unwrap();
    assert_eq!(last["decided_by"], "stored", "{last}");
}

/// What a served MCP server asks of CLAT reaches the connected agent: its sampling (after the gates and the
/// budget) goes to the client's model, its form to the client's user.
#[test]
fn an_extensions_sampling_and_forms_reach_the_client() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--contract"] } }));
    let calls = json!([
        { "name": "mcp_srv_sample", "arguments": { "text": "summarize this" } },
        { "name": "mcp_srv_ask", "arguments": {} },
    ]);
    // The server's form (name, admin) reaches the client's user whole; CLAT checks the answer against it.
    let form = json!({ "action": "accept", "content": { "name": "Ada", "admin": true } });
    let report = served_by(&env, &["serve", "--mode", "full-access"], &[], calls, Some(form), Some("from the agent"));
    assert_eq!(report["calls"][0]["text"], "model said: from the agent", "{report}");
    assert_eq!(report["sampled"], json!([["summarize this"]]), "{report}");
    assert_eq!(report["calls"][1]["text"], "accepted name=Ada admin=true", "{report}");
    assert_eq!(report["asked"].as_array().unwrap().len(), 1, "one form: {report}");
    assert_eq!(report["asked"][0]["schema"]["properties"]["name"]["type"], "string", "{report}");
    assert_eq!(report["asked"][0]["schema"]["properties"]["admin"]["type"], "boolean", "{report}");
    // An answer that does not fit the form never reaches the extension.
    let calls = json!([{ "name": "mcp_srv_ask", "arguments": {} }]);
    let misfit = json!({ "action": "accept", "content": { "name": 7, "admin": true } });
    let report = served_by(&env, &["serve", "--mode", "full-access"], &[], calls, Some(misfit), None);
    assert!(report["calls"][0]["text"].as_str().unwrap().contains("invalid"), "{report}");
    let trail = env.read_home("audit/calls.jsonl");
    let sampled: Value = serde_json::from_str(trail.lines().next().unwrap()).unwrap();
    assert!(sampled["sampling_tokens"].as_u64().unwrap() > 0, "the budget was charged: {sampled}");
}

/// An agent speaking the protocol by hand on `clat serve`'s stdio.
struct RawClient {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
}

impl RawClient {
    /// `clat serve` started, not spoken to yet.
    fn spawn(env: &TestEnv, args: &[&str]) -> RawClient {
        let mut child =
            env.clat_command(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let (stdin, stdout) = (child.stdin.take(), Some(BufReader::new(child.stdout.take().unwrap())));
        RawClient { child, stdin, stdout }
    }

    /// `clat serve` started, and initialized in the legacy era.
    fn start(env: &TestEnv, args: &[&str]) -> RawClient {
        let mut client = RawClient::spawn(env, args);
        client.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } } }));
        assert_eq!(client.next()["result"]["protocolVersion"], "2025-11-25");
        client.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        client
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin.as_mut().unwrap(), "{message}").unwrap();
    }

    fn next(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.as_mut().expect("read here").read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// From now on, what the server says arrives line by line on the returned channel (read on a thread).
    fn lines_in_background(&mut self) -> std::sync::mpsc::Receiver<String> {
        let (lines, received) = std::sync::mpsc::channel();
        let mut stdout = self.stdout.take().expect("read here");
        std::thread::spawn(move || {
            let mut line = String::new();
            while stdout.read_line(&mut line).is_ok_and(|n| n > 0) {
                let _ = lines.send(std::mem::take(&mut line));
            }
        });
        received
    }

    fn run_until_killed(&mut self, id: u64, pid_file: &str) {
        let command = format!("echo $$ > {pid_file}; exec sleep 300");
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": { "name": "run_command", "arguments": { "command": command } } }));
    }
}

fn wait_for_file(path: &std::path::Path) {
    for _ in 0..2000 {
        if std::fs::read_to_string(path).is_ok_and(|t| !t.trim().is_empty()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never appeared", path.display());
}

/// A client's cancel ends that call's run (its command dies, it is not answered) and the session goes on; a
/// client that disconnects mid-call ends everything and leaves no process.
#[test]
fn a_cancel_ends_the_call_and_a_disconnect_ends_everything() {
    let env = TestEnv::trusted();
    let mut client = RawClient::start(&env, &["serve", "--mode", "full-access"]);
    client.run_until_killed(1, "first.pid");
    wait_for_file(&env.project.join("first.pid"));
    client.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }));
    assert!(wait_pid_gone(&env.project.join("first.pid")), "the cancelled call's command survived");
    client.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "ping" }));
    assert_eq!(client.next()["id"], 2, "the cancelled call was not answered; the session goes on");
    client.run_until_killed(3, "second.pid");
    wait_for_file(&env.project.join("second.pid"));
    drop(client.stdin.take());
    let status = client.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(wait_pid_gone(&env.project.join("second.pid")), "the disconnected client's command survived");
    let trail = env.read_home("audit/calls.jsonl");
    let outcomes: Vec<String> =
        trail.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["outcome"].as_str().unwrap().into()).collect();
    assert_eq!(outcomes, ["cancelled", "cancelled"], "{trail}");
}

/// `clat serve` reads and writes pipes and sockets on its reactor, and anything else (files here) through the
/// blocking fallback: the same session either way.
#[test]
fn serve_speaks_over_files_and_over_a_unix_socket() {
    let env = TestEnv::trusted();
    let requests = [
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "file", "version": "1" } } }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
    ];
    let script: String = requests.iter().map(|r| format!("{r}\n")).collect();
    let (input, output) = (env.dir.path().join("in.jsonl"), env.dir.path().join("out.jsonl"));
    std::fs::write(&input, &script).unwrap();
    let status = env
        .clat_command(&["serve"])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let answers: Vec<Value> =
        std::fs::read_to_string(&output).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(answers.iter().map(|a| a["id"].clone()).collect::<Vec<_>>(), [json!(0), json!(1)], "{answers:?}");

    let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs = std::os::fd::OwnedFd::from(theirs);
    let mut child = env
        .clat_command(&["serve"])
        .stdin(Stdio::from(theirs.try_clone().unwrap()))
        .stdout(Stdio::from(theirs))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ours.write_all(script.as_bytes()).unwrap();
    let mut lines = BufReader::new(ours.try_clone().unwrap());
    for id in 0..2 {
        let mut line = String::new();
        lines.read_line(&mut line).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], id, "{line}");
    }
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn an_untrusted_project_is_not_served_and_nothing_starts() {
    let env = TestEnv::new();
    env.write_mcp_config(json!({ "srv": { "command": SERVER } }));
    let out = env.clat_command(&["serve"]).stdin(std::process::Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "nothing on the protocol channel: {}", stdout(&out));
    assert!(stderr(&out).contains("trust"), "{}", stderr(&out));
}

/// With `--tool-names source` an extension's tool is served under its own name when that is unambiguous; what
/// a served MCP server reports while it works — progress and log lines — reaches the client during the call.
#[test]
fn own_names_are_served_and_progress_and_logs_reach_the_client() {
    let env = TestEnv::trusted();
    assert!(env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]).status.success());
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/server_fixture.py");
    env.write_mcp_config(json!({
        "fixture": { "command": python(), "args": [fixture] },
        "one": { "command": SERVER, "args": ["--tool-names", "echo"] },
        "two": { "command": SERVER, "args": ["--tool-names", "echo"] },
    }));
    let calls = json!([
        { "name": "test_tool_with_progress" },
        { "name": "test_tool_with_logging" },
        { "name": "greet", "arguments": { "name": "Ada" } },
        { "name": "mcp_one_echo", "arguments": { "said": "one" } },
    ]);
    let args = ["serve", "--mode", "full-access", "--tool-names", "source"];
    let report = served_by(&env, &args, &[], calls, None, None);
    let tools = report["tools"].as_object().unwrap();
    for own in ["test_simple_text", "greet", "read_file", "mcp_one_echo", "mcp_two_echo"] {
        assert!(tools.contains_key(own), "{own} is served: {report}");
    }
    assert!(!tools.contains_key("echo"), "two servers' echo keep their registered names: {report}");
    assert_eq!(report["calls"][0]["text"], "Tool with progress executed successfully", "{report}");
    assert_eq!(report["progress"], json!([[0.0, 100.0], [50.0, 100.0], [100.0, 100.0]]), "{report}");
    let logs = report["logs"].as_array().unwrap();
    let lines: Vec<&str> = logs.iter().map(|l| l[2].as_str().unwrap()).collect();
    assert_eq!(lines, ["Tool execution started", "Tool processing data", "Tool execution completed"], "{report}");
    assert_eq!((logs[0][0].as_str(), logs[0][1].as_str()), (Some("info"), Some("mcp:fixture")), "{report}");
    assert_eq!(report["calls"][2]["text"], "Hello, Ada! (from a WASM plugin)", "{report}");
    assert!(report["calls"][3]["text"].as_str().unwrap().contains("one"), "{report}");
    let trail = env.read_home("audit/calls.jsonl");
    let first: Value = serde_json::from_str(trail.lines().next().unwrap()).unwrap();
    assert_eq!(first["tool"], "mcp_fixture_test_tool_with_progress", "the trail names the registered tool: {first}");
}

/// `clat serve --http 127.0.0.1:0 EXTRA…` in `env`'s project, and the URL it serves.
struct HttpServe {
    child: Child,
    url: String,
}

impl HttpServe {
    fn start(env: &TestEnv, extra: &[&str]) -> HttpServe {
        let args = [&["serve", "--http", "127.0.0.1:0"], extra].concat();
        let mut child =
            env.clat_command(&args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines.next().expect("clat serve printed its URL").unwrap();
            if let Some(url) = line.strip_prefix("clat serve: ") {
                break url.to_string();
            }
        };
        std::thread::spawn(move || lines.for_each(drop));
        HttpServe { child, url }
    }

    /// Stop it as a terminal would (SIGTERM) and wait for it.
    fn stop(mut self) -> std::process::ExitStatus {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), nix::sys::signal::Signal::SIGTERM)
            .unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two agents on one `clat serve --http` at once: each gets the tools and its approval forms on its own call's
/// stream, and an extension's sampling during a call goes to the model of the agent that made the call. (A stdio
/// server's sampling request names no call: made while calls of both agents are in flight on that server, it
/// could not be told apart and would be refused, so the second agent samples after the first is done.)
#[test]
fn agents_over_http_each_get_their_forms_and_their_own_model() {
    let env = TestEnv::trusted();
    assert!(env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]).status.success());
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--contract"] } }));
    let server = HttpServe::start(&env, &["--mode", "ask"]);
    let allow = json!({ "action": "accept", "content": { "decision": "allow" } });
    let write = |path: &str| json!({ "name": "write_file", "arguments": { "path": path, "content": path } });
    let sample = |text: &str| json!({ "name": "mcp_srv_sample", "arguments": { "text": text } });
    let first = json!([write("a.txt"), sample("for a")]);
    let second = json!([{ "name": "wasm_hello_greet", "arguments": { "name": "Ada" } }, write("b.txt")]);
    let a = in_background(sdk_client(Sdk::Python, &server.url, json!({}), first, Some(allow.clone()), Some("model a")));
    let b =
        in_background(sdk_client(Sdk::Python, &server.url, json!({}), second, Some(allow.clone()), Some("model b")));
    let (a, b) = (report(a.join().unwrap()), report(b.join().unwrap()));
    assert_eq!((env.read("a.txt"), env.read("b.txt")), ("a.txt".into(), "b.txt".into()), "{a}\n{b}");
    assert!(a["asked"][0]["message"].as_str().unwrap().contains("allow write_file (write)"), "{a}");
    assert!(b["asked"][0]["message"].as_str().unwrap().contains(r#""path":"b.txt""#), "its own form: {b}");
    assert_eq!(a["calls"][1]["text"], "model said: model a", "{a}");
    assert_eq!(a["sampled"], json!([["for a"]]), "{a}");
    assert_eq!(b["calls"][0]["text"], "Hello, Ada! (from a WASM plugin)", "{b}");
    assert!(b["tools"].get("read_file").is_some() && b["tools"].get("mcp_srv_echo").is_some(), "{b}");
    let b = report(
        sdk_client(Sdk::Python, &server.url, json!({}), json!([sample("for b")]), Some(allow), Some("model b"))
            .output()
            .unwrap(),
    );
    assert_eq!(b["calls"][0]["text"], "model said: model b", "{b}");
    assert_eq!(b["sampled"], json!([["for b"]]), "{b}");
    let status = server.stop();
    assert!(status.success(), "a stop signal ends the server cleanly: {status:?}");
    let trail = env.read_home("audit/calls.jsonl");
    assert_eq!(trail.lines().count(), 5, "{trail}");
}

/// A token server serves only requests carrying its token; off loopback a token is required before anything starts.
#[test]
fn http_serving_takes_a_bearer_token_and_needs_one_off_loopback() {
    let env = TestEnv::trusted();
    env.write("token", "t0ken\n");
    let server = HttpServe::start(&env, &["--token-file", env.project.join("token").to_str().unwrap()]);
    let calls = json!([{ "name": "read_file", "arguments": { "path": "token" } }]);
    let with =
        sdk_client(Sdk::Python, &server.url, json!({ "Authorization": "Bearer t0ken" }), calls.clone(), None, None);
    assert_eq!(report(in_background(with).join().unwrap())["calls"][0]["text"], "t0ken\n");
    let without = in_background(sdk_client(Sdk::Python, &server.url, json!({}), calls, None, None)).join().unwrap();
    assert!(!without.status.success(), "no token, no session");
    assert!(stderr(&without).contains("this server needs Authorization: Bearer TOKEN"), "{}", stderr(&without));
    drop(server);

    env.write_mcp_config(json!({ "srv": { "command": SERVER } }));
    let out = env.clat_command(&["serve", "--http", "0.0.0.0:0"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("0.0.0.0:0 is not a loopback address: serving on it needs a bearer token (--token-file)")
    );
    // A token file that is a link to /dev/zero is refused before anything starts, not read without end.
    let endless = env.dir.path().join("endless-token");
    std::os::unix::fs::symlink("/dev/zero", &endless).unwrap();
    let mut serve = env.clat_command(&["serve", "--http", "127.0.0.1:0", "--token-file", endless.to_str().unwrap()]);
    let out = serve.stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("it is not a regular file"), "{}", stderr(&out));
}

/// Run `command` to its end on another thread.
fn in_background(mut command: std::process::Command) -> std::thread::JoinHandle<std::process::Output> {
    std::thread::spawn(move || command.output().unwrap())
}

/// The TypeScript SDK's client drives `clat serve` over stdio and over HTTP: the tools, a form it answers, its own
/// model for an extension's sampling, and progress and log lines during the call.
#[test]
fn the_typescript_sdk_client_drives_serve_over_stdio_and_http() {
    let env = TestEnv::trusted();
    assert!(env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]).status.success());
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/server_fixture.py");
    env.write_mcp_config(json!({ "fixture": { "command": python(), "args": [fixture] } }));
    let mut args = json!(["--home", env.home, "--project", env.project, "serve", "--mode", "full-access"]);
    args.as_array_mut().unwrap().extend([json!("--tool-names"), json!("source")]);
    let calls = json!([
        { "name": "greet", "arguments": { "name": "Ada" } },
        { "name": "test_tool_with_progress" },
        { "name": "test_tool_with_logging" },
    ]);
    let stdio = sdk_client(Sdk::TypeScript, env!("CARGO_BIN_EXE_clat"), args, calls, None, None);
    let over_stdio = report(in_background(stdio).join().unwrap());
    assert_eq!(over_stdio["server"], "clat", "{over_stdio}");
    assert_eq!(over_stdio["calls"][0]["text"], "Hello, Ada! (from a WASM plugin)", "{over_stdio}");
    assert_eq!(over_stdio["progress"], json!([[0, 100], [50, 100], [100, 100]]), "{over_stdio}");
    assert_eq!(over_stdio["logs"].as_array().unwrap().len(), 3, "{over_stdio}");
    assert_eq!(over_stdio["tools"]["read_file"]["readOnlyHint"], true, "{over_stdio}");

    let server = HttpServe::start(&env, &["--mode", "ask", "--tool-names", "source"]);
    let allow = json!({ "action": "accept", "content": { "decision": "allow" } });
    let calls = json!([
        { "name": "write_file", "arguments": { "path": "ts.txt", "content": "from ts" } },
        { "name": "test_sampling", "arguments": { "prompt": "for ts" } },
    ]);
    let http = sdk_client(Sdk::TypeScript, &server.url, json!({}), calls, Some(allow), Some("ts model"));
    let over_http = report(in_background(http).join().unwrap());
    assert_eq!(env.read("ts.txt"), "from ts", "{over_http}");
    assert_eq!(over_http["calls"][1]["text"], "LLM response: ts model", "{over_http}");
    assert_eq!(over_http["sampled"], json!([["for ts"]]), "{over_http}");
    assert_eq!(over_http["asked"].as_array().unwrap().len(), 3, "the write, the call, its sampling: {over_http}");
}

/// "Needs approval, the client has no elicitation": 100 calls in one session, each needing an approval (a write,
/// or an extension's sampling), each denied at once with how to allow it; none hangs (a call unanswered after
/// `HANG` counts as a hang). The slowest denial is printed.
#[test]
fn a_hundred_approvals_nobody_can_give_are_each_denied_and_none_hangs() {
    const HANG: Duration = Duration::from_secs(30);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--contract", "--read-only-tools"] } }));
    let mut client = RawClient::start(&env, &["serve", "--mode", "ask"]);
    let answers = client.lines_in_background();
    let (mut slowest, mut hangs) = (Duration::ZERO, 0);
    for id in 1..=100u64 {
        let call = if id % 10 == 0 {
            json!({ "name": "mcp_srv_sample", "arguments": { "text": "summarize" } })
        } else {
            json!({ "name": "write_file", "arguments": { "path": format!("w{id}.txt"), "content": "x" } })
        };
        let started = Instant::now();
        client.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call }));
        let Ok(line) = answers.recv_timeout(HANG) else {
            hangs += 1;
            continue;
        };
        slowest = slowest.max(started.elapsed());
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        if id % 10 == 0 {
            // The server's sampling request was refused; the server says so in its result.
            assert_eq!(text, "error: denied", "{answer}");
        } else {
            assert_eq!(answer["result"]["isError"], true, "denied: {answer}");
            assert!(text.contains("cannot give one through clat serve"), "{text}");
        }
    }
    assert_eq!(hangs, 0, "calls unanswered after {HANG:?}");
    assert!(
        std::fs::read_dir(&env.project).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with('w'))
    );
    println!("summary: 100 approvals nobody could give: 100 denied, 0 hangs, slowest denial {slowest:?}");
    drop(client.stdin.take());
    assert!(client.child.wait().unwrap().success());
}

/// The official Rust SDK's client (rmcp) drives `clat serve` over stdio: it lists the three kinds of tool and calls
/// each; declaring no elicitation, it gets a denial for a call that needs an approval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_sdk_client_drives_serve() {
    use rmcp::ServiceExt as _;
    use rmcp::model::CallToolRequestParams;
    let env = TestEnv::trusted();
    env.write("notes.txt", "read by rmcp");
    assert!(env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]).status.success());
    let args = ["--tool-names", "echo", "--read-only-tools"];
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": args } }));
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_clat"));
    command.arg("--home").arg(&env.home).arg("--project").arg(&env.project).args(["serve", "--mode", "ask"]);
    let transport = rmcp::transport::TokioChildProcess::builder(command).stderr(Stdio::null()).spawn().unwrap().0;
    let client = ().serve(transport).await.unwrap();
    assert_eq!(client.peer_info().unwrap().server_info.as_ref().unwrap().name, "clat");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in ["read_file", "wasm_hello_greet", "mcp_srv_echo"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let call = |name: &str, arguments: Value| {
        let params =
            CallToolRequestParams::new(name.to_string()).with_arguments(arguments.as_object().unwrap().clone());
        client.call_tool(params)
    };
    let text = |result: &rmcp::model::CallToolResult| {
        result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
    };
    let read = call("read_file", json!({ "path": "notes.txt" })).await.unwrap();
    assert_eq!(text(&read), "read by rmcp");
    let greeted = call("wasm_hello_greet", json!({ "name": "Ada" })).await.unwrap();
    assert_eq!(text(&greeted), "Hello, Ada! (from a WASM plugin)");
    let echoed = call("mcp_srv_echo", json!({ "said": "hi" })).await.unwrap();
    assert!(text(&echoed).contains("hi"), "{}", text(&echoed));
    let denied = call("write_file", json!({ "path": "w.txt", "content": "x" })).await.unwrap();
    assert_eq!(denied.is_error, Some(true));
    assert!(text(&denied).contains("cannot give one through clat serve"), "{}", text(&denied));
    client.cancel().await.unwrap();
    assert!(!env.project.join("w.txt").exists());
}

/// The denial's advice works: `clat approvals allow TOOL` keeps an approval beforehand, bound to the server as it is
/// now, and the next session's call is allowed by it without a question.
#[test]
fn an_approval_kept_with_approvals_allow_answers_a_served_call() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--tool-names", "echo"] } }));
    let echo = json!([{ "name": "mcp_srv_echo", "arguments": { "said": "hi" } }]);
    let report = served(&env, "ask", &[], echo.clone());
    let denial = report["calls"][0]["text"].as_str().unwrap();
    assert!(denial.contains("`clat approvals allow mcp_srv_echo`"), "{denial}");
    let out = env.clat(&["approvals", "allow", "echo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let kept = stdout(&out);
    assert!(kept.starts_with("kept: ") && kept.contains("agent → mcp:srv mcp_srv_echo  up to destructive"), "{kept}");
    let report = served(&env, "ask", &[], echo);
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    let trail = env.read_home("audit/calls.jsonl");
    let last: Value = serde_json::from_str(trail.lines().last().unwrap()).unwrap();
    assert_eq!(last["decided_by"], "stored", "{last}");
    let out = env.clat(&["approvals", "allow", "no_such_tool"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The contract table's scenarios that a served call can express, through `clat serve`, for both kinds of plugin —
/// the contract guest (WASM, installed as a package) and the contract MCP server — with the results `clat call`
/// gives for the same call and mode (and, where `clat call` cannot answer a form, the table's own result).
#[test]
fn the_contract_scenarios_give_through_serve_what_they_give_through_call() {
    for kind in ["wasm", "mcp"] {
        let env = TestEnv::trusted();
        env.write("a.txt", "the contract file");
        std::fs::write(env.dir.path().join("secret.txt"), "outside the project").unwrap();
        if kind == "wasm" {
            let package = env.dir.path().join("contract-package");
            std::fs::create_dir_all(&package).unwrap();
            std::fs::copy(clat_guest_artifacts::CONTRACT_WASM, package.join("contract.wasm")).unwrap();
            let manifest = "name = \"contract\"\nversion = \"0.1.0\"\nkind = \"wasm\"\nentry = \"contract.wasm\"\n";
            std::fs::write(package.join("clat-plugin.toml"), manifest).unwrap();
            let out = env.clat(&["plugin", "install", package.to_str().unwrap()]);
            assert!(out.status.success(), "{}", stderr(&out));
        } else {
            env.write_mcp_config(json!({ "contract": { "command": SERVER, "args": ["--contract"] } }));
        }
        let tool = |name: &str| format!("{kind}_contract_{name}");
        let call = |name: &str, arguments: Value| json!({ "name": tool(name), "arguments": arguments });
        // Calls that need no form, in each mode: served, and through `clat call`.
        let by_mode = [
            (
                "full-access",
                vec![
                    call("echo", json!({ "text": "hello, contract" })),
                    call("structured", json!({ "a": 2, "b": 3 })),
                    call("fail", json!({})),
                    call("host_read", json!({ "path": "a.txt" })),
                    call("host_read", json!({ "path": "../secret.txt" })),
                    call("sample", json!({ "text": "capital of France" })),
                    call("sample", json!({ "text": "m", "messages": 33 })),
                ],
            ),
            ("read-only", vec![call("host_write", json!({ "path": "w.txt", "content": "x" }))]),
            ("auto-edit", vec![call("host_write", json!({ "path": "w.txt", "content": "written" }))]),
        ];
        for (mode, calls) in by_mode {
            let served = served(&env, mode, &[], json!(calls));
            for (i, call) in calls.iter().enumerate() {
                let arguments = call["arguments"].to_string();
                let name = call["name"].as_str().unwrap();
                let direct = env.clat(&["call", name, &arguments, "--mode", mode, "--json"]);
                let direct: Value =
                    serde_json::from_str(&stdout(&direct)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&direct)));
                let direct_text = direct["content"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                let through = &served["calls"][i];
                assert_eq!(
                    through["text"].as_str(),
                    Some(direct_text.as_str()),
                    "{kind} {name} {arguments} in {mode}: {served}"
                );
                let direct_error = direct["isError"].as_bool().unwrap_or(false);
                assert_eq!(through["isError"], direct_error, "{kind} {name} in {mode}: {served} vs {direct}");
            }
        }
        assert_eq!(env.read("w.txt"), "written", "{kind}: read-only wrote nothing, auto-edit wrote");
        // Forms: the table's results (a terminal answers them for `clat call`; the client's user does here).
        let ask = json!([call("ask", json!({}))]);
        let accepted = json!({ "action": "accept", "content": { "name": "Ada", "admin": true } });
        let answers = [
            (Some(accepted), "accepted name=Ada admin=true"),
            (Some(json!({ "action": "decline" })), "declined"),
            (Some(json!({ "action": "cancel" })), "cancelled"),
            (None, "error: unsupported"),
        ];
        for (answer, expected) in answers {
            let report = served_answering(&env, "full-access", &[], ask.clone(), answer);
            assert_eq!(report["calls"][0]["text"], expected, "{kind}: {report}");
        }
    }
}

/// CLAT mounts `clat serve` like any MCP server, and its client's era probe (`server/discover`) finds the modern
/// era (2026-07-28) on stdio and over HTTP: stateless requests, each with its envelope, answered `complete`; the
/// served project's pipeline and audit trail see each call.
#[test]
fn clat_mounts_clat_serve_in_the_modern_era_over_stdio_and_http() {
    let inner = TestEnv::trusted();
    inner.write("hello.txt", "hello from the inner project\n");
    let web = HttpServe::start(&inner, &["--mode", "full-access"]);
    let outer = TestEnv::trusted();
    let home = inner.home.to_str().unwrap();
    let project = inner.project.to_str().unwrap();
    outer.write_mcp_config(json!({
        "inner": { "command": env!("CARGO_BIN_EXE_clat"),
                   "args": ["--home", home, "--project", project, "serve", "--mode", "full-access"] },
        "web": { "url": web.url },
    }));
    let out = outer.clat(&["mcp", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for server in listed["servers"].as_array().unwrap() {
        assert_eq!(server["protocol"], "2026-07-28 (modern)", "{server}");
        assert_eq!(server["state"], "ready", "{server}");
    }
    for tool in ["mcp_inner_read_file", "mcp_web_read_file"] {
        let out = outer.clat(&["call", tool, r#"{"path":"hello.txt"}"#]);
        assert!(out.status.success(), "{tool}: {}", stderr(&out));
        assert!(stdout(&out).contains("hello from the inner project"), "{tool}: {}", stdout(&out));
    }
    // A call's record is written after its answer leaves: the HTTP server is still running.
    let deadline = Instant::now() + Duration::from_secs(10);
    let trail = loop {
        let trail = std::fs::read_to_string(inner.home.join("audit/calls.jsonl")).unwrap_or_default();
        if trail.lines().count() >= 2 || Instant::now() > deadline {
            break trail;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let records: Vec<Value> = trail.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 2, "{trail}");
    assert!(records.iter().all(|r| r["tool"] == "read_file" && r["client"].as_str().unwrap().starts_with("clat")));
}

/// A modern client is sent no requests: an approval form, and an extension's form and sampling, reach it as
/// `input_required` rounds of the call (the Python SDK's `Client` answers them and retries), and the call goes on
/// with the answers, as it does for a legacy client.
#[test]
fn a_modern_client_is_asked_in_input_required_rounds() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--contract"] } }));
    let write = json!([{ "name": "write_file", "arguments": { "path": "modern.txt", "content": "x" } }]);
    let allow = json!({ "action": "accept", "content": { "decision": "allow" } });
    let seen = served_modern(&env, &["serve", "--mode", "ask"], write, Some(allow), None);
    assert_eq!(seen["protocol"], "2026-07-28", "{seen}");
    assert_eq!(seen["calls"][0]["isError"], false, "{seen}");
    assert_eq!(env.read("modern.txt"), "x");
    let message = seen["asked"][0]["message"].as_str().unwrap();
    assert!(message.contains("allow write_file (write) in mode ask"), "{message}");

    let calls = json!([
        { "name": "mcp_srv_sample", "arguments": { "text": "summarize this" } },
        { "name": "mcp_srv_ask", "arguments": {} },
    ]);
    let form = json!({ "action": "accept", "content": { "name": "Ada", "admin": true } });
    let seen = served_modern(&env, &["serve", "--mode", "full-access"], calls, Some(form), Some("from the agent"));
    assert_eq!(seen["calls"][0]["text"], "model said: from the agent", "{seen}");
    assert_eq!(seen["sampled"], json!([["summarize this"]]), "{seen}");
    assert_eq!(seen["calls"][1]["text"], "accepted name=Ada admin=true", "{seen}");
    // Declined: the approval is denied, nothing written.
    let write = json!([{ "name": "write_file", "arguments": { "path": "no.txt", "content": "x" } }]);
    let declined = served_modern(&env, &["serve", "--mode", "ask"], write, Some(json!({ "action": "decline" })), None);
    assert!(declined["calls"][0]["text"].as_str().unwrap().contains("the form was declined"), "{declined}");
    assert!(!env.project.join("no.txt").exists());
    // Over HTTP the same: the call waits in the server between the requests of its rounds.
    let web = HttpServe::start(&env, &["--mode", "ask"]);
    let write = json!([{ "name": "write_file", "arguments": { "path": "web.txt", "content": "x" } }]);
    let allow = json!({ "action": "accept", "content": { "decision": "allow" } });
    let client = sdk_client(Sdk::Python, &web.url, json!({}), write, Some(allow), None);
    let over_http = report(client_in_era(client, "modern").output().unwrap());
    let outcome = (over_http["protocol"].as_str(), over_http["calls"][0]["isError"].as_bool());
    assert_eq!(outcome, (Some("2026-07-28"), Some(false)), "{over_http}");
    assert_eq!(over_http["asked"].as_array().map(Vec::len), Some(1), "the approval form came as a round: {over_http}");
    assert_eq!(env.read("web.txt"), "x");
}

/// Past its tool budget `clat serve` lists the native tools and discovery's own: a search finds a deferred tool,
/// `call_tool` calls it through the pipeline (headless in ask mode, a destructive one is denied, and the trail
/// names it), and `load_tools` lists it from then on, telling the client the listing changed.
/// A tracker with a destructive tool and a read-only `echo`: what discovery's tests serve past a small budget.
fn two_servers(env: &TestEnv) {
    env.write_mcp_config(json!({
        "tracker": { "command": SERVER, "args": ["--tool-names", "delete_repository,list_issues"] },
        "notes": { "command": SERVER, "args": ["--tool-names", "echo", "--read-only-tools"] },
    }));
}

#[test]
fn past_its_budget_serve_lists_a_search_and_every_tool_stays_reachable_through_the_pipeline() {
    let env = TestEnv::trusted();
    two_servers(&env);
    let mut client = RawClient::start(&env, &["serve", "--tool-budget", "1024"]);
    let call = |id: u64, name: &str, arguments: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    let listed = |client: &mut RawClient, id: u64| -> Vec<String> {
        client.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/list" }));
        let tools = client.next()["result"]["tools"].as_array().unwrap().clone();
        tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    let first = listed(&mut client, 1);
    let natives = ["list_files", "read_file", "search", "write_file", "edit_file", "run_command"];
    assert_eq!(first[..6], natives, "{first:?}");
    assert_eq!(first[6..], ["search_tools", "load_tools", "call_tool"], "{first:?}");

    // A modern client that caches listings is told a listing under a budget is stale at once (loads join it).
    let mut modern = RawClient::spawn(&env, &["serve", "--tool-budget", "1024"]);
    let envelope = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {} });
    modern.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": envelope } }));
    let listing = modern.next()["result"].clone();
    assert_eq!((listing["ttlMs"].as_u64(), listing["cacheScope"].as_str()), (Some(0), Some("private")), "{listing}");
    let mut roomy = RawClient::spawn(&env, &["serve", "--all-tools"]);
    roomy.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": envelope } }));
    assert_eq!(roomy.next()["result"]["ttlMs"].as_u64(), Some(60_000), "every tool listed: the listing keeps");

    client.send(call(2, "search_tools", json!({ "query": "delete a repository" })));
    let found = client.next()["result"]["structuredContent"].clone();
    assert_eq!(found["matches"][0]["name"], "mcp_tracker_delete_repository", "{found}");

    client.send(call(3, "call_tool", json!({ "name": "mcp_tracker_delete_repository", "arguments": {} })));
    let denied = client.next()["result"].clone();
    assert_eq!(denied["isError"], true, "{denied}");
    assert!(denied["content"][0]["text"].as_str().unwrap().contains("permission denied"), "{denied}");

    client.send(call(4, "load_tools", json!({ "names": ["mcp_notes_echo"] })));
    let (said, answer) = (client.next(), client.next());
    let (notice, answer) = if said.get("id").is_some() { (answer, said) } else { (said, answer) };
    assert_eq!(notice["method"], "notifications/tools/list_changed", "{notice}");
    assert_eq!(answer["result"]["structuredContent"]["tools"][0]["name"], "mcp_notes_echo", "{answer}");
    assert!(listed(&mut client, 5).contains(&"mcp_notes_echo".to_string()), "listed from now on");
    client.send(call(6, "mcp_notes_echo", json!({ "text": "found" })));
    let echoed = client.next()["result"].clone();
    assert_eq!(echoed["isError"], false, "{echoed}");
    drop(client.stdin.take());
    let _ = client.child.wait();

    let trail: Vec<Value> =
        env.read_home("audit/calls.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let called = trail.iter().find(|r| r["tool"] == "mcp_tracker_delete_repository").expect("call_tool's target");
    assert_eq!((called["effect"].clone(), called["outcome"].clone()), (json!("destructive"), json!("denied")));
}

/// Past its budget `clat serve` starts no server it listed before: a search and a load are answered from the kept
/// listings with no process started; the first call of a tool starts its server alone, once; and the run's answer is
/// the server's.
#[test]
fn past_its_budget_serve_starts_a_server_listed_before_at_the_first_call_of_its_tools() {
    let env = TestEnv::trusted();
    let starts = env.dir.path().join("starts");
    let file = starts.display().to_string();
    env.write_mcp_config(json!({
        "tracker": { "command": SERVER, "args": ["--tool-names", "delete_repository,list_issues", "--starts-file", file] },
        "notes": { "command": SERVER, "args": ["--tool-names", "echo", "--read-only-tools", "--starts-file", file] },
    }));
    let count = || std::fs::read_to_string(&starts).unwrap_or_default().lines().count();
    assert_eq!(env.clat(&["mcp"]).status.code(), Some(0));
    let listed = count();
    assert!(listed >= 2, "{listed}");

    let mut client = RawClient::start(&env, &["serve", "--tool-budget", "1024"]);
    let call = |id: u64, name: &str, arguments: Value| json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    client.send(call(1, "search_tools", json!({ "query": "echo a text back" })));
    let found = client.next()["result"]["structuredContent"].clone();
    assert_eq!(found["matches"][0]["name"], "mcp_notes_echo", "{found}");
    client.send(call(2, "load_tools", json!({ "names": ["notes/echo"] })));
    let (said, answer) = (client.next(), client.next());
    let answer = if said.get("id").is_some() { said } else { answer };
    assert_eq!(answer["result"]["structuredContent"]["tools"][0]["name"], "mcp_notes_echo", "{answer}");
    assert_eq!(count(), listed, "a search and a load start nothing");

    for id in [3, 4] {
        client.send(call(id, "mcp_notes_echo", json!({ "text": "found" })));
        let echoed = client.next()["result"].clone();
        assert_eq!(echoed["isError"], false, "{echoed}");
        assert!(echoed["content"][0]["text"].as_str().unwrap().contains("found"), "{echoed}");
    }
    let started = count() - listed;
    assert!((1..=2).contains(&started), "notes started, once (its probe and process), the tracker not: {started}");
    drop(client.stdin.take());
    let _ = client.child.wait();
}

/// Over HTTP each client session has its own loaded set: what one loads is listed to it, not to another; and
/// under `--tool-names source` search_tools and load_tools name the tools as they are served.
#[test]
fn a_tool_one_http_session_loads_is_listed_to_it_alone() {
    let env = TestEnv::trusted();
    two_servers(&env);
    let server = HttpServe::start(&env, &["--tool-budget", "1024", "--tool-names", "source"]);
    let calls = json!([
        { "name": "search_tools", "arguments": { "query": "delete a repository" } },
        { "name": "load_tools", "arguments": { "names": ["echo"] } },
    ]);
    let a = report(sdk_client(Sdk::Python, &server.url, json!({}), calls, None, None).output().unwrap());
    let answer = |i: usize| -> Value { serde_json::from_str(a["calls"][i]["text"].as_str().unwrap()).unwrap() };
    assert_eq!(answer(0)["matches"][0]["name"], "delete_repository", "its served name: {a}");
    assert_eq!(answer(1)["tools"][0]["name"], "echo", "{a}");
    assert!(a.get("tools").unwrap().get("echo").is_none(), "deferred before the load: {a}");
    assert!(a["listed_after"].as_array().unwrap().contains(&json!("echo")), "listed to it once loaded: {a}");
    let b = report(sdk_client(Sdk::Python, &server.url, json!({}), json!([]), None, None).output().unwrap());
    assert!(b["tools"].get("echo").is_none() && b["tools"].get("search_tools").is_some(), "another session's: {b}");
    assert!(server.stop().success());
}

/// Each tool's effect survives `clat serve`: the hints sent with it map back to it by the spec's table, so CLAT
/// mounting the served registry as an MCP server sees the same effects (the native `read`, which no extension can
/// claim, arrives as `external-read`).
#[test]
fn served_annotations_map_back_to_the_same_effects() {
    let inner = TestEnv::trusted();
    let tools = json!([
        { "name": "lookup", "inputSchema": { "type": "object" },
          "annotations": { "readOnlyHint": true, "openWorldHint": false } },
        { "name": "browse", "inputSchema": { "type": "object" },
          "annotations": { "readOnlyHint": true, "openWorldHint": true } },
        { "name": "save", "inputSchema": { "type": "object" },
          "annotations": { "readOnlyHint": false, "destructiveHint": false } },
        { "name": "wipe", "inputSchema": { "type": "object" } },
    ]);
    inner.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--tools-json", tools.to_string()] } }));
    let effects_of = |env: &TestEnv, prefix: &str| -> std::collections::BTreeMap<String, String> {
        let out = env.clat(&["tools", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| {
                let name = t["name"].as_str().unwrap().strip_prefix(prefix)?.to_string();
                Some((name, t["effect"].as_str().unwrap().to_string()))
            })
            .collect()
    };
    let inside = effects_of(&inner, "");
    let effects: std::collections::BTreeSet<&str> = inside.values().map(String::as_str).collect();
    assert_eq!(effects.len(), 5, "every effect is served: {inside:?}");

    let outer = TestEnv::trusted();
    let (home, project) = (inner.home.to_str().unwrap(), inner.project.to_str().unwrap());
    outer.write_mcp_config(json!({
        "inner": { "command": env!("CARGO_BIN_EXE_clat"), "args": ["--home", home, "--project", project, "serve"] },
    }));
    let outside = effects_of(&outer, "mcp_inner_");
    let expected: std::collections::BTreeMap<String, String> = inside
        .into_iter()
        .map(|(name, effect)| (name, if effect == "read" { "external-read".to_string() } else { effect }))
        .collect();
    assert_eq!(outside, expected);
}

/// A value the user configured for a server (an `env` value here) is a secret on every surface: a schema refusal that
/// quotes it shows `[REDACTED]` in `clat call`'s error, in a served call's answer and in the audit trail.
#[test]
fn a_configured_value_quoted_by_a_refusal_reaches_no_surface() {
    let env = TestEnv::trusted();
    let value = "plain-looking-value-42";
    let tools = json!([{ "name": "pick", "inputSchema": {
        "type": "object", "properties": { "dir": { "const": value } }, "required": ["dir"] } }]);
    env.write_mcp_config(json!({ "srv": {
        "command": SERVER, "args": ["--tools-json", tools.to_string()], "env": { "DATA_DIR": value } } }));
    let out = env.clat(&["call", "mcp_srv_pick", r#"{"dir":"elsewhere"}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("[REDACTED]") && !said.contains(value), "{said}");

    let seen =
        served(&env, "full-access", &[], json!([{ "name": "mcp_srv_pick", "arguments": { "dir": "elsewhere" } }]));
    assert_eq!(seen["calls"][0]["isError"], true, "{seen}");
    assert!(seen["calls"][0]["text"].as_str().unwrap().contains("[REDACTED]"), "{seen}");
    // What was said about the call; the tool's input schema is the server's own definition, served as it gave it.
    let mut said = seen.clone();
    said.as_object_mut().unwrap().remove("schemas");
    assert!(!said.to_string().contains(value), "{said}");
    let trail = std::fs::read_to_string(env.home.join("audit/calls.jsonl")).unwrap();
    assert!(trail.contains("mcp_srv_pick") && trail.contains("[REDACTED]") && !trail.contains(value), "{trail}");
}

/// A served session has one sampling budget for all its calls (`--sampling-budget`, default 64), not a fresh one
/// per call: past it an extension's sampling is refused, and the audit trail shows what the session has charged.
#[test]
fn a_served_session_s_calls_share_one_sampling_budget() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--contract"] } }));
    let sample = json!({ "name": "mcp_srv_sample", "arguments": { "text": "summarize this" } });
    let calls = json!([sample, sample, sample]);
    let args = ["serve", "--mode", "full-access", "--sampling-budget", "2"];
    let report = served_by(&env, &args, &[], calls, None, Some("from the agent"));
    assert_eq!(report["calls"][0]["text"], "model said: from the agent", "{report}");
    assert_eq!(report["calls"][1]["text"], "model said: from the agent", "{report}");
    let third = report["calls"][2]["text"].as_str().unwrap();
    assert!(third.contains("budget"), "the third call's sampling is past the session's budget: {report}");
    assert_eq!(report["sampled"].as_array().unwrap().len(), 2, "{report}");
    let trail = env.read_home("audit/calls.jsonl");
    let records: Vec<Value> = trail.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let charged: Vec<_> = records
        .iter()
        .map(|r| (r["session_sampling_requests"].clone(), r["session_sampling_budget"].clone()))
        .collect();
    assert_eq!(charged, [(json!(1), json!(2)), (json!(2), json!(2)), (json!(2), json!(2))], "{trail}");
}

/// A client that writes calls and never reads the answers: `clat serve` stops reading its stdin (the client's writes
/// block) instead of holding every answer; once the client reads, every call is answered. Memory stays flat.
#[test]
fn a_client_that_never_reads_stops_being_read_and_every_call_is_answered_once_it_does() {
    let env = TestEnv::trusted();
    env.write("notes.txt", "x");
    let mut client = RawClient::start(&env, &["serve", "--mode", "full-access"]);
    let total = 20_000u64;
    let mut stdin = client.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for id in 1..=total {
            let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                               "params": { "name": "read_file", "arguments": { "path": "notes.txt" } } });
            writeln!(stdin, "{call}").unwrap();
        }
        stdin
    });
    // Unbounded, the server would have read all of them (a few MB) long before this.
    std::thread::sleep(Duration::from_secs(2));
    assert!(!writer.is_finished(), "clat serve kept reading calls nobody reads the answers of");
    let mut answered = std::collections::HashSet::new();
    while (answered.len() as u64) < total {
        let answer = client.next();
        let busy = answer["error"]["code"] == -32000;
        assert!(busy || answer["result"]["isError"] == false, "{answer}");
        answered.insert(answer["id"].as_u64().unwrap());
    }
    drop(writer.join().unwrap());
    assert!(client.child.wait().unwrap().success());
}
