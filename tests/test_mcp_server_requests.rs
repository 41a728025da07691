//! What an MCP server may ask of CLAT, served by the host's one host-services
//! implementation: sampling and elicitation during an active `tools/call`
//! (the same gates and the same run budget as guests), the
//! `io.artec.clat/hostServices` extension for servers that opt in
//! (`context/get`, `tools/call` of the six host tools, `context/changed`),
//! the server-request rules (unknown → -32601), the per-server deadline
//! extension, and modern `input_required` results fulfilled through the same
//! services. The server is `clat-test-mcp-server`: `ask_host` forwards one
//! request and answers the call with what CLAT answered.

mod support;

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clat_host::contract::PermissionMode;
use clat_host::mcp::host_error_codes;
use clat_host::policy::permissions::{Approval, ApprovalRequest, Approver};
use clat_host::registry::CallError;
use clat_host::run::{CollectingSink, RunContext, RunEventKind};
use clat_host::scope::ProjectScope;
use clat_host::services::asker::LineAsker;
use serde_json::{Value, json};
use support::{HttpServer, TestEnv, run_in, wait_for_line};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;
const TOOLS: &str = "echo,ask_host,ask_input,needs_input";

/// A scope with one server `srv` started with `flags` (plus the tool names).
async fn scope_with(env: &TestEnv, flags: &[&str]) -> ProjectScope {
    let mut args: Vec<&str> = vec!["--tool-names", TOOLS];
    args.extend_from_slice(flags);
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": args } }));
    let scope = env.mount();
    let statuses = scope.load_mcp_servers().await;
    assert!(statuses.iter().all(|s| s.state == "ready"), "{statuses:?}");
    scope
}

struct Answering(Approval);

#[async_trait]
impl Approver for Answering {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.0.clone()
    }
}

/// Approves tool calls; blocks sampling approvals until the test releases them.
struct Gate(tokio::sync::Semaphore);

#[async_trait]
impl Approver for Gate {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if request.tool == clat_host::policy::permissions::SAMPLING_APPROVAL {
            let _ = self.0.acquire().await.unwrap();
        }
        Approval::Approved
    }
}

fn run_with(mode: PermissionMode, approver: Arc<dyn Approver>, input: &str) -> (RunContext, Arc<CollectingSink>) {
    let sink = Arc::new(CollectingSink::default());
    let asker = LineAsker::new(Cursor::new(input.as_bytes().to_vec()), std::io::sink());
    let run = RunContext::builder().mode(mode).approver(approver).asker(Arc::new(asker)).events(sink.clone()).start();
    (run, sink)
}

fn full_access() -> (RunContext, Arc<CollectingSink>) {
    run_with(PermissionMode::FullAccess, Arc::new(Answering(Approval::Approved)), "")
}

/// Ask the host `method` with `params` through the server; CLAT's answer as JSON.
async fn ask(scope: &ProjectScope, run: &RunContext, method: &str, params: Value) -> Value {
    let out = scope
        .registry()
        .call("mcp_srv_ask_host", json!({ "method": method, "params": params }), run)
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}"));
    serde_json::from_str(&out.joined_text()).unwrap()
}

fn sampling(text: &str) -> Value {
    json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": text } }], "maxTokens": 50,
            "modelPreferences": { "hints": [{ "name": "some-other-model" }] }, "includeContext": "allServers" })
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error: {answer}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_during_a_call_uses_the_session_model_and_the_gates() {
    let env = TestEnv::trusted();
    let scope = scope_with(&env, &[]).await;
    let (run, sink) = full_access();
    let answer = ask(&scope, &run, "sampling/createMessage", sampling("what is the capital of France")).await;
    assert_eq!(answer["result"]["role"], "assistant", "{answer}");
    assert_eq!(answer["result"]["model"], "clat-offline-1", "the session model, not the server's hint");
    assert!(answer["result"]["content"]["text"].as_str().unwrap().contains("capital of France"), "{answer}");
    let completed = sink.events().into_iter().any(|e| {
        matches!(e.kind, RunEventKind::Sampling { ref source, ref outcome, .. } if source == "mcp:srv" && outcome == "completed")
    });
    assert!(completed, "audited with the server as source: {:?}", sink.events());

    // The payload gate: 33 messages.
    let mut too_many = sampling("x");
    too_many["messages"] = json!(vec![json!({ "role": "user", "content": { "type": "text", "text": "m" } }); 33]);
    let answer = ask(&scope, &run, "sampling/createMessage", too_many).await;
    assert_eq!(error_code(&answer), host_error_codes::INVALID, "{answer}");
    // Not text: refused as unsupported content, never sent.
    let image = json!({ "messages": [{ "role": "user", "content": { "type": "image", "data": "AAAA", "mimeType": "image/png" } }], "maxTokens": 5 });
    let answer = ask(&scope, &run, "sampling/createMessage", image).await;
    assert!(answer.get("error").is_some(), "{answer}");

    // The permission gate: in ask mode a refusal comes back as denied.
    let deny = Arc::new(DenySampling);
    let (run, _) = run_with(PermissionMode::Ask, deny, "");
    let answer = ask(&scope, &run, "sampling/createMessage", sampling("hi")).await;
    assert_eq!(error_code(&answer), host_error_codes::DENIED, "{answer}");
    assert_eq!(answer["error"]["data"]["kind"], "denied");
    scope.close().await;
}

/// Approves tool calls, refuses sampling.
struct DenySampling;

#[async_trait]
impl Approver for DenySampling {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if request.tool == clat_host::policy::permissions::SAMPLING_APPROVAL {
            Approval::Denied("not this time".into())
        } else {
            Approval::Approved
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_budget_counts_every_request_and_the_65th_fails() {
    let env = TestEnv::trusted();
    let scope = scope_with(&env, &[]).await;
    let (run, _) = full_access();
    for i in 0..64 {
        let answer = ask(&scope, &run, "sampling/createMessage", sampling(&format!("request {i}"))).await;
        assert!(answer.get("result").is_some(), "request {i}: {answer}");
    }
    let answer = ask(&scope, &run, "sampling/createMessage", sampling("one too many")).await;
    assert_eq!(error_code(&answer), host_error_codes::BUDGET_EXHAUSTED, "{answer}");
    // A new run has a new budget.
    let (run, _) = full_access();
    assert!(ask(&scope, &run, "sampling/createMessage", sampling("again")).await.get("result").is_some());
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_outside_an_active_call_is_refused_without_a_model_call() {
    let env = TestEnv::trusted();
    let log = env.dir.path().join("srv.log");
    let log_arg = log.display().to_string();
    let scope = scope_with(&env, &["--log-file", &log_arg]).await;
    let (run, sink) = full_access();
    // `detach`: the server answers the call first, then asks — no call of its is active any more.
    let out = scope
        .registry()
        .call(
            "mcp_srv_ask_host",
            json!({ "method": "sampling/createMessage", "params": sampling("idle"), "detach": true }),
            &run,
        )
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "asked later");
    let line = wait_for_line(&log, "answer").await;
    assert!(line.contains(&format!("error {}", host_error_codes::NO_ACTIVE_RUN)), "{line}");
    assert!(!sink.events().iter().any(|e| matches!(e.kind, RunEventKind::Sampling { .. })), "no model call");
    scope.close().await;
}

fn form() -> Value {
    json!({ "mode": "form", "message": "Who are you?", "requestedSchema": { "type": "object",
            "properties": { "name": { "type": "string" }, "admin": { "type": "boolean" } }, "required": ["name"] } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_goes_through_the_asker_and_unsupported_shapes_are_explicit() {
    let env = TestEnv::trusted();
    let scope = scope_with(&env, &[]).await;
    let approve: Arc<dyn Approver> = Arc::new(Answering(Approval::Approved));
    let (run, _) = run_with(PermissionMode::FullAccess, approve.clone(), "Ada\ny\n");
    let answer = ask(&scope, &run, "elicitation/create", form()).await;
    assert_eq!(answer["result"], json!({ "action": "accept", "content": { "name": "Ada", "admin": true } }));

    let (run, _) = run_with(PermissionMode::FullAccess, approve.clone(), "/decline\n");
    assert_eq!(ask(&scope, &run, "elicitation/create", form()).await["result"], json!({ "action": "decline" }));
    let (run, _) = run_with(PermissionMode::FullAccess, approve.clone(), "\u{1b}\n");
    assert_eq!(ask(&scope, &run, "elicitation/create", form()).await["result"], json!({ "action": "cancel" }));

    // Headless: a clean failure, not an answer.
    let headless = RunContext::builder().mode(PermissionMode::FullAccess).start();
    let answer = ask(&scope, &headless, "elicitation/create", form()).await;
    assert_eq!(answer["error"]["data"]["kind"], "unsupported", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("headless"), "{answer}");

    // URL mode and nested schemas: explicit errors.
    let url = json!({ "mode": "url", "message": "Log in", "url": "https://example.invalid/", "elicitationId": "e1" });
    let answer = ask(&scope, &run, "elicitation/create", url).await;
    assert_eq!(error_code(&answer), host_error_codes::UNSUPPORTED, "{answer}");
    let nested = json!({ "message": "x", "requestedSchema": { "type": "object",
                         "properties": { "o": { "type": "object", "properties": {} } } } });
    assert_eq!(error_code(&ask(&scope, &run, "elicitation/create", nested).await), host_error_codes::UNSUPPORTED);
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_needs_protocol_2025_06_18_or_newer() {
    let env = TestEnv::trusted();
    let scope = scope_with(&env, &["--offer", "2025-03-26"]).await;
    let (run, _) = run_with(PermissionMode::FullAccess, Arc::new(Answering(Approval::Approved)), "Ada\ny\n");
    let answer = ask(&scope, &run, "elicitation/create", form()).await;
    assert_eq!(error_code(&answer), host_error_codes::UNSUPPORTED, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("2025-06-18"), "{answer}");
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_requests_get_32601_and_host_services_need_the_opt_in() {
    let env = TestEnv::trusted();
    let scope = scope_with(&env, &[]).await;
    let (run, _) = full_access();
    assert_eq!(error_code(&ask(&scope, &run, "foo/bar", json!({})).await), -32601);
    assert_eq!(error_code(&ask(&scope, &run, "roots/list", json!({})).await), -32601);
    // Not opted in: the extension's methods do not exist for this server.
    assert_eq!(error_code(&ask(&scope, &run, "io.artec.clat/context/get", json!({})).await), -32601);
    let read = json!({ "name": "read_file", "arguments": { "path": "a.txt" } });
    assert_eq!(error_code(&ask(&scope, &run, "io.artec.clat/tools/call", read).await), -32601);
    assert!(!scope.mcp_servers()[0].opted_in());
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opted_in_server_gets_context_and_the_six_host_tools_through_the_pipeline() {
    let env = TestEnv::trusted();
    env.write("notes/a.txt", "hello from the project");
    // Read-only, closed-world tools: allowed in every mode, so the host tool's own effect decides.
    let scope = scope_with(&env, &["--host-services", "--read-only-tools"]).await;
    assert!(scope.mcp_servers()[0].opted_in());
    let (run, sink) = run_with(PermissionMode::AutoEdit, Arc::new(Answering(Approval::Approved)), "");

    let answer = ask(&scope, &run, "io.artec.clat/context/get", json!({})).await;
    let snapshot = &answer["result"]["snapshot"];
    assert_eq!(snapshot["run"]["runId"], run.run_id(), "{answer}");
    assert_eq!(snapshot["run"]["mode"], "auto-edit");
    assert_eq!(snapshot["projectRoot"], env.project.canonicalize().unwrap().display().to_string());

    let call = |name: &str, arguments: Value| json!({ "name": name, "arguments": arguments });
    let answer =
        ask(&scope, &run, "io.artec.clat/tools/call", call("read_file", json!({ "path": "notes/a.txt" }))).await;
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("hello from the project"), "{answer}");
    let answer =
        ask(&scope, &run, "io.artec.clat/tools/call", call("read_file", json!({ "path": "../outside" }))).await;
    assert!(answer.to_string().contains("leaves the project root"), "the fence holds: {answer}");
    let write = call("write_file", json!({ "path": "notes/b.txt", "content": "written by a server" }));
    let answer = ask(&scope, &run, "io.artec.clat/tools/call", write.clone()).await;
    assert!(answer.get("result").is_some(), "auto-edit allows writes: {answer}");
    assert_eq!(env.read("notes/b.txt"), "written by a server");
    // Only the six: another registered tool is not reachable this way.
    let answer = ask(&scope, &run, "io.artec.clat/tools/call", call("mcp_srv_echo", json!({}))).await;
    assert_eq!(error_code(&answer), host_error_codes::INVALID, "{answer}");
    let host_calls = sink
        .events()
        .into_iter()
        .filter(|e| matches!(&e.kind, RunEventKind::HostToolCall { source, .. } if source == "mcp:srv"))
        .count();
    assert_eq!(host_calls, 3, "each host tool call is audited");

    // Read-only mode: the same write is denied by the run's mode table.
    let (run, _) = run_with(PermissionMode::ReadOnly, Arc::new(Answering(Approval::Approved)), "");
    let write = call("write_file", json!({ "path": "notes/c.txt", "content": "x" }));
    let answer = ask(&scope, &run, "io.artec.clat/tools/call", write).await;
    assert_eq!(error_code(&answer), host_error_codes::DENIED, "{answer}");
    assert!(!env.project.join("notes/c.txt").exists());
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_changed_reaches_opted_in_servers_only() {
    let env = TestEnv::trusted();
    let (opted, plain) = (env.dir.path().join("opted.log"), env.dir.path().join("plain.log"));
    env.write_mcp_config(json!({
        "opted": { "command": SERVER, "args": ["--host-services", "--log-file", opted] },
        "plain": { "command": SERVER, "args": ["--log-file", plain] }
    }));
    let scope = env.mount();
    scope.load_mcp_servers().await;
    let run = scope.start_run(RunContext::builder());
    let started = wait_for_line(&opted, "context {").await;
    assert!(started.contains(run.run_id()), "the snapshot carries the run: {started}");
    scope.finish_run(&run);
    wait_for_line(&opted, "context null").await;
    // The plain server got nothing (a later notification would have arrived by now on the same path).
    let plain_log = std::fs::read_to_string(&plain).unwrap_or_default();
    assert!(!plain_log.contains("context"), "{plain_log}");
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_host_requests_are_counted_per_server_and_cancel_still_ends_the_call() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "a": { "command": SERVER, "args": ["--tool-names", TOOLS] },
        "b": { "command": SERVER, "args": ["--tool-names", TOOLS] }
    }));
    let scope = Arc::new(env.mount());
    scope.load_mcp_servers().await;
    let gate = Arc::new(Gate(tokio::sync::Semaphore::new(0)));
    let (run, _) = run_with(PermissionMode::Ask, gate.clone(), "");
    let run = Arc::new(run);
    let waiting = {
        let (scope, run) = (scope.clone(), run.clone());
        tokio::spawn(async move {
            let args = json!({ "method": "sampling/createMessage", "params": sampling("wait for me") });
            scope.registry().call("mcp_a_ask_host", args, &run).await
        })
    };
    let server = |name: &str| scope.mcp_servers().into_iter().find(|s| s.name() == name).unwrap();
    for _ in 0..1000 {
        if server("a").host_requests_pending() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server("a").host_requests_pending(), 1, "a's sampling waits on the approval");
    assert_eq!(server("b").host_requests_pending(), 0, "b cannot be extended by a's request");
    // b keeps working meanwhile.
    let (other_run, _) = full_access();
    assert!(scope.registry().call("mcp_b_echo", json!({}), &other_run).await.is_ok());
    // The user cancels: the call ends at once although the approval still waits.
    run.cancel();
    let err = waiting.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::Cancelled { .. }), "{err}");
    // The host request made for that call ends with it: nothing is left waiting on the host.
    for _ in 0..1000 {
        if server("a").host_requests_pending() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server("a").host_requests_pending(), 0, "the orphaned approval no longer counts");
    gate.0.add_permits(10);
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_input_required_is_fulfilled_and_retried_with_the_exact_request_state() {
    let env = TestEnv::trusted();
    let log = env.dir.path().join("srv.log");
    let log_arg = log.display().to_string();
    let scope = scope_with(&env, &["--modern", "--log-file", &log_arg]).await;
    let (run, sink) =
        run_with(PermissionMode::FullAccess, Arc::new(Answering(Approval::Approved)), "Ada\nn\nGrace\ny\n");
    let requests = json!({
        "who": { "method": "elicitation/create", "params": form() },
        "capital": { "method": "sampling/createMessage", "params": sampling("capital of France?") }
    });
    let out =
        scope.registry().call("mcp_srv_ask_input", json!({ "requests": requests, "rounds": 2 }), &run).await.unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    let responses: Value = serde_json::from_str(&out.joined_text()).unwrap();
    assert_eq!(responses["who"], json!({ "action": "accept", "content": { "name": "Grace", "admin": true } }));
    assert_eq!(responses["capital"]["model"], "clat-offline-1", "{responses}");
    let sampled = sink.events().iter().filter(|e| matches!(e.kind, RunEventKind::Sampling { .. })).count();
    assert_eq!(sampled, 2, "one sampling per round, through the same gates and budget");
    // Three requests, each with its own id (the server checked the state byte for byte).
    let text = std::fs::read_to_string(&log).unwrap();
    let ids: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("call ask_input ")).collect();
    assert_eq!(ids.len(), 3, "{text}");
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2], "{ids:?}");

    // Input CLAT cannot give (roots/list) stays an explicit unsupported-feature error.
    let err = scope.registry().call("mcp_srv_needs_input", json!({}), &run).await.unwrap_err();
    assert!(err.to_string().contains("roots/list"), "{err}");
    // More than 10 rounds: abandoned.
    let requests = json!({ "c": { "method": "sampling/createMessage", "params": sampling("again") } });
    let err = scope
        .registry()
        .call("mcp_srv_ask_input", json!({ "requests": requests, "rounds": 11 }), &run)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("after 10 rounds"), "{err}");
    scope.close().await;
}

/// A full-access run calls `tool` (an `ask_input` tool) with input requests for
/// `io.artec.clat/context/get` and `io.artec.clat/tools/call` (`read_file notes.txt`)
/// plus `args`: both are fulfilled under that run, and the host tool call is audited.
async fn reaches_host_services_through_input_required(scope: &ProjectScope, tool: &str, mut args: Value) {
    let (run, sink) = run_in(PermissionMode::FullAccess);
    args["requests"] = json!({
        "ctx": { "method": "io.artec.clat/context/get" },
        "file": { "method": "io.artec.clat/tools/call", "params": { "name": "read_file", "arguments": { "path": "notes.txt" } } }
    });
    let out = scope.registry().call(tool, args, &run).await.unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
    let responses: Value = serde_json::from_str(&out.joined_text()).unwrap();
    assert_eq!(responses["ctx"]["snapshot"]["run"]["runId"], json!(run.run_id()), "{responses}");
    assert!(responses["file"]["content"][0]["text"].as_str().unwrap().contains("from the project"), "{responses}");
    assert!(
        sink.events().iter().any(|e| matches!(&e.kind, RunEventKind::HostToolCall { tool, .. } if tool == "read_file"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_opted_in_server_reaches_host_services_through_input_required() {
    let env = TestEnv::trusted();
    env.write("notes.txt", "from the project\n");
    let scope = scope_with(&env, &["--modern", "--host-services"]).await;
    reaches_host_services_through_input_required(&scope, "mcp_srv_ask_input", json!({ "rounds": 1 })).await;
    scope.close().await;

    // A server that did not opt in is refused, as for any other server request.
    let env = TestEnv::trusted();
    let scope = scope_with(&env, &["--modern"]).await;
    let (run, _) = run_in(PermissionMode::FullAccess);
    let requests = json!({ "ctx": { "method": "io.artec.clat/context/get" } });
    let err = scope
        .registry()
        .call("mcp_srv_ask_input", json!({ "requests": requests, "rounds": 1 }), &run)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("io.artec.clat/context/get") && err.to_string().contains("not fulfilled"),
        "{err}"
    );
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_run_cannot_be_told_is_refused_rather_than_judged_under_another_run() {
    let env = TestEnv::trusted();
    let log = env.dir.path().join("srv.log");
    env.write_mcp_config(
        json!({ "srv": { "command": SERVER, "args": ["--tool-names", "slow,ask_host", "--log-file", log] } }),
    );
    let scope = Arc::new(env.mount());
    scope.load_mcp_servers().await;
    // Run A has a call in flight on the server; run B's call then asks for sampling.
    let (run_a, _) = full_access();
    let in_flight = {
        let (scope, run_a) = (scope.clone(), run_a.clone());
        tokio::spawn(async move { scope.registry().call("mcp_srv_slow", json!({ "ms": 3000 }), &run_a).await })
    };
    wait_for_line(&log, "call slow").await;
    let (run_b, sink_b) = full_access();
    let answer = ask(&scope, &run_b, "sampling/createMessage", sampling("whose budget?")).await;
    assert_eq!(error_code(&answer), host_error_codes::UNSUPPORTED, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("cannot tell which run"), "{answer}");
    assert!(!sink_b.events().iter().any(|e| matches!(e.kind, RunEventKind::Sampling { .. })), "no model call");
    in_flight.await.unwrap().unwrap();
    // With one run left, the same request is served under that run.
    let answer = ask(&scope, &run_b, "sampling/createMessage", sampling("now it is mine")).await;
    assert_eq!(answer["result"]["model"], "clat-offline-1", "{answer}");
    scope.close().await;
}

/// A full-access run's slow call in flight on the HTTP server `web`, once the server has it.
async fn slow_call_in_flight(
    scope: &Arc<ProjectScope>,
    http: &HttpServer,
    ms: u64,
) -> (tokio::task::JoinHandle<Result<clat_host::contract::ToolOutput, CallError>>, Arc<CollectingSink>) {
    let (run, sink) = full_access();
    let scope = Arc::clone(scope);
    let in_flight = tokio::spawn(async move { scope.registry().call("mcp_web_slow", json!({ "ms": ms }), &run).await });
    for _ in 0..300 {
        if http.log().iter().any(|l| l.starts_with("POST tools/call")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (in_flight, sink)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_a_request_is_judged_under_the_run_of_the_call_whose_stream_carried_it() {
    let http = HttpServer::start(&[]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": http.url } }));
    let scope = Arc::new(env.mount());
    let statuses = scope.load_mcp_servers().await;
    assert!(statuses.iter().all(|s| s.state == "ready"), "{statuses:?}");
    let ask_web = |run: RunContext| {
        let scope = scope.clone();
        async move {
            let args = json!({ "method": "sampling/createMessage", "params": sampling("whose run?") });
            let out = scope.registry().call("mcp_web_ask_host", args, &run).await.unwrap();
            serde_json::from_str::<Value>(&out.joined_text()).unwrap()
        }
    };
    // Run A has a call in flight on the server all along.
    let (in_flight, sink_a) = slow_call_in_flight(&scope, &http, 3000).await;
    // Run B (its approver denies sampling) and run C (full access) ask at the same time, each
    // on its own call's stream: each request is judged under its own run, none is refused.
    let (run_b, sink_b) = run_with(PermissionMode::Ask, Arc::new(DenySampling), "");
    let (run_c, sink_c) = full_access();
    let (answer_b, answer_c) = tokio::join!(ask_web(run_b), ask_web(run_c));
    assert_eq!(error_code(&answer_b), host_error_codes::DENIED, "{answer_b}");
    assert_eq!(answer_c["result"]["model"], "clat-offline-1", "{answer_c}");
    let sampled = |sink: &CollectingSink, outcome: &str| {
        sink.events()
            .iter()
            .any(|e| matches!(&e.kind, RunEventKind::Sampling { outcome: o, .. } if o.starts_with(outcome)))
    };
    assert!(sampled(&sink_b, "refused: permission") && !sampled(&sink_b, "completed"), "{:?}", sink_b.events());
    assert!(sampled(&sink_c, "completed"), "{:?}", sink_c.events());
    assert!(!sink_a.events().iter().any(|e| matches!(e.kind, RunEventKind::Sampling { .. })), "nothing billed to A");
    in_flight.await.unwrap().unwrap();
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modern_http_server_reaches_host_services_through_input_required_under_its_own_run() {
    let http = HttpServer::start(&["--modern", "--host-services"]);
    let env = TestEnv::trusted();
    env.write("notes.txt", "from the project\n");
    env.write_mcp_config(json!({ "web": { "url": http.url } }));
    let scope = Arc::new(env.mount());
    let statuses = scope.load_mcp_servers().await;
    assert!(statuses.iter().all(|s| s.state == "ready"), "{statuses:?}");
    // Another run has a call in flight on the same server: the rounds still belong to their own call.
    let (in_flight, _) = slow_call_in_flight(&scope, &http, 2000).await;
    reaches_host_services_through_input_required(&scope, "mcp_web_ask_input", json!({})).await;
    in_flight.await.unwrap().unwrap();
    scope.close().await;
}

#[test]
fn only_a_host_services_version_this_host_implements_opts_a_server_in() {
    let env = TestEnv::trusted();
    let ask = json!({ "method": "io.artec.clat/tools/call",
                      "params": { "name": "run_command", "arguments": { "command": "touch planted" } } })
    .to_string();
    for (version, opted_in) in [("9.9.9", false), ("0.1.0", true)] {
        env.write_mcp_config(json!({ "srv": { "command": SERVER,
            "args": ["--host-services-version", version, "--tool-names", "echo,ask_host"] } }));
        let out = env.clat(&["call", "mcp_srv_ask_host", &ask, "--mode", "full-access"]);
        let said = String::from_utf8_lossy(&out.stdout).to_string();
        assert_eq!(out.status.code(), Some(0), "{said}");
        assert_eq!(env.project.join("planted").exists(), opted_in, "version {version}: {said}");
        if !opted_in {
            assert!(said.contains("-32601"), "refused as an unknown method: {said}");
            let out = env.clat(&["mcp", "--json"]);
            let status: Value = serde_json::from_slice(&out.stdout).unwrap();
            let problems = status["servers"][0]["problems"].to_string();
            assert!(
                problems.contains("advertises io.artec.clat/hostServices with version \\\"9.9.9\\\"")
                    && problems.contains("implements 0.1.0"),
                "{problems}"
            );
        }
    }
}
