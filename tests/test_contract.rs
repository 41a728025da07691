//! The contract table: one list of scenarios run against five implementations
//! of the same plugin — WASM guests in Rust (`guests/contract`), JavaScript
//! (`guests/js/contract`, componentize-js) and Python
//! (`guests/python/contract`, componentize-py), and MCP stdio servers: ours
//! (`clat-test-mcp-server --contract`) and one on the official TypeScript SDK
//! (`guests/js/contract-mcp`, bundled by esbuild). Each scenario expects a result, and
//! every implementation must produce the same result and the same run events
//! (with the kind's name prefix and source normalized away). Then the shared
//! budget: 40 guest requests and 24 server requests in one run, and the 65th
//! fails for either kind.

mod support;

use std::io::Cursor;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clat_guest_artifacts as guests;
use clat_host::contract::PermissionMode;
use clat_host::policy::permissions::{Approval, ApprovalRequest, Approver, SAMPLING_APPROVAL};
use clat_host::registry::CallError;
use clat_host::run::{CollectingSink, RunContext, RunEventKind};
use clat_host::scope::ProjectScope;
use serde_json::{Value, json};
use support::TestEnv;
use support::wasm::load_into;

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// The Rust guest.
    Wasm,
    /// The JavaScript guest.
    WasmJs,
    /// The Python guest.
    WasmPy,
    /// `clat-test-mcp-server --contract`.
    Mcp,
    /// The MCP server on the official TypeScript SDK.
    McpJs,
}

impl Kind {
    const ALL: [Kind; 5] = [Kind::Wasm, Kind::WasmJs, Kind::WasmPy, Kind::Mcp, Kind::McpJs];

    fn prefix(self) -> &'static str {
        match self {
            Kind::Wasm | Kind::WasmJs | Kind::WasmPy => "wasm_contract_",
            Kind::Mcp | Kind::McpJs => "mcp_contract_",
        }
    }
}

/// A project with the contract plugin of one kind mounted (and a file to read).
async fn mount(env: &TestEnv, kind: Kind) -> ProjectScope {
    env.write("a.txt", "the contract file");
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(env.dir.path().join("secret.txt"), "outside the project").unwrap();
    let guest = match kind {
        Kind::Wasm => Some(std::path::PathBuf::from(guests::CONTRACT_WASM)),
        Kind::WasmJs => Some(support::toolchains::component("js", "contract")),
        Kind::WasmPy => Some(support::toolchains::component("python", "contract")),
        Kind::Mcp | Kind::McpJs => None,
    };
    match kind {
        Kind::Wasm | Kind::WasmJs | Kind::WasmPy => {
            let scope = env.mount();
            load_into(&scope, "contract", guest.unwrap().to_str().unwrap()).await;
            scope
        }
        Kind::Mcp | Kind::McpJs => {
            let config = match kind {
                Kind::McpJs => {
                    let server = support::toolchains::package("js", "contract-mcp").join("server.mjs");
                    json!({ "contract": { "command": server } })
                }
                _ => json!({ "contract": { "command": SERVER, "args": ["--contract"] } }),
            };
            std::fs::write(env.home.join("mcp.json"), config.to_string()).unwrap();
            let scope = env.mount();
            let statuses = scope.load_mcp_servers().await;
            assert_eq!(statuses[0].state, "ready", "{statuses:?}");
            scope
        }
    }
}

/// Approves tool calls; answers sampling as told.
struct Approvals {
    sampling: Approval,
}

#[async_trait]
impl Approver for Approvals {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if request.tool == SAMPLING_APPROVAL { self.sampling.clone() } else { Approval::Approved }
    }
}

/// How a scenario's run is set up.
#[derive(Clone)]
struct Setup {
    mode: PermissionMode,
    sampling: Approval,
    /// Lines typed into the asker; `None`: headless (no question frontend).
    input: Option<&'static str>,
    deadline: Option<Duration>,
    cancel_after_start: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            mode: PermissionMode::Ask,
            sampling: Approval::Approved,
            input: Some(""),
            deadline: None,
            cancel_after_start: false,
        }
    }
}

/// What a scenario observed: the result (text, isError, structured) or the
/// pipeline error's kind, and the run's events, normalized.
#[derive(Debug, PartialEq)]
struct Observed {
    result: Result<(String, bool, Option<String>), &'static str>,
    events: Vec<Value>,
}

fn error_kind(e: &CallError) -> &'static str {
    match e {
        CallError::UnknownTool(_) => "unknown_tool",
        CallError::InvalidArguments { .. } => "invalid_arguments",
        CallError::Denied { .. } => "denied",
        CallError::Cancelled { .. } => "cancelled",
        CallError::TimedOut { .. } => "timed_out",
        CallError::Failed { .. } => "failed",
        CallError::Withdrawn { .. } => "withdrawn",
        CallError::Quarantined { .. } => "quarantined",
        _ => "other",
    }
}

/// An event without what differs between runs (ids, times, messages with
/// durations) and with the kind's names replaced by `X`.
fn normalize(kind: Kind, event: &clat_host::run::RunEvent) -> Value {
    let line = event.to_json_line();
    let source = match kind {
        Kind::Wasm | Kind::WasmJs | Kind::WasmPy => "wasm:contract",
        Kind::Mcp | Kind::McpJs => "mcp:contract",
    };
    let line = line.replace(kind.prefix(), "X_contract_").replace(source, "X:contract");
    let mut v: Value = serde_json::from_str(&line).unwrap();
    let obj = v.as_object_mut().unwrap();
    for key in ["run_id", "seq", "elapsed_ms", "duration_ms"] {
        obj.remove(key);
    }
    if let Some(error) = obj.get_mut("error") {
        *error = json!(!error.is_null());
    }
    v
}

async fn observe(scope: &ProjectScope, kind: Kind, tool: &str, args: Value, setup: &Setup) -> Observed {
    let sink = Arc::new(CollectingSink::default());
    let mut builder = RunContext::builder()
        .mode(setup.mode)
        .approver(Arc::new(Approvals { sampling: setup.sampling.clone() }))
        .events(sink.clone());
    if let Some(input) = setup.input {
        builder = builder.asker(Arc::new(clat_host::services::asker::LineAsker::new(
            Cursor::new(input.as_bytes().to_vec()),
            std::io::sink(),
        )));
    }
    if let Some(deadline) = setup.deadline {
        builder = builder.deadline(deadline);
    }
    let run = builder.start();
    let name = format!("{}{tool}", kind.prefix());
    let call = scope.registry().call(&name, args, &run);
    let result = if setup.cancel_after_start {
        let canceller = async {
            while !sink.events().iter().any(|e| matches!(e.kind, RunEventKind::ToolStarted { .. })) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            run.cancel();
            std::future::pending::<()>().await
        };
        tokio::select! {
            r = call => r,
            _ = canceller => unreachable!(),
        }
    } else {
        call.await
    };
    run.finish();
    Observed {
        result: result.map(|o| (o.joined_text(), o.is_error, o.structured.clone())).map_err(|e| error_kind(&e)),
        events: sink.events().iter().map(|e| normalize(kind, e)).collect(),
    }
}

/// What a scenario must produce (for both kinds).
enum Expect {
    Text(&'static str),
    Starts(&'static str),
    ToolError(&'static str),
    Structured(&'static str, &'static str),
    Error(&'static str),
}

struct Scenario {
    name: &'static str,
    tool: &'static str,
    args: Value,
    setup: Setup,
    expect: Expect,
}

fn table() -> Vec<Scenario> {
    let s = |name, tool, args, setup, expect| Scenario { name, tool, args, setup, expect };
    let headless = Setup { input: None, ..Setup::default() };
    let read_only = Setup { mode: PermissionMode::ReadOnly, ..Setup::default() };
    let auto_edit = Setup { mode: PermissionMode::AutoEdit, ..Setup::default() };
    let deny_sampling = Setup { sampling: Approval::Denied("not now".into()), ..Setup::default() };
    vec![
        s("echo", "echo", json!({ "text": "hello, contract" }), Setup::default(), Expect::Text("hello, contract")),
        s(
            "structured output",
            "structured",
            json!({ "a": 2, "b": 3 }),
            Setup::default(),
            Expect::Structured("sum=5", r#"{"sum":5}"#),
        ),
        s("error result", "fail", json!({}), Setup::default(), Expect::ToolError("the tool failed on purpose")),
        s(
            "host read_file inside the fence",
            "host_read",
            json!({ "path": "a.txt" }),
            Setup::default(),
            Expect::Starts("ok: "),
        ),
        s(
            "host escape refused",
            "host_read",
            json!({ "path": "../secret.txt" }),
            Setup::default(),
            Expect::Text("tool error: path \"../secret.txt\" leaves the project root"),
        ),
        s(
            "host write_file denied in read-only",
            "host_write",
            json!({ "path": "w.txt", "content": "x" }),
            read_only.clone(),
            Expect::Text("error: denied"),
        ),
        s(
            "host write_file denied in read-only, the refusal left to the SDK",
            "host_write_unchecked",
            json!({ "path": "w.txt", "content": "x" }),
            read_only,
            Expect::ToolError(
                "denied: mode read-only does not allow write tools (write_file is write); run with --mode auto-edit or \
                 full-access to allow write tools without a prompt",
            ),
        ),
        s(
            "host write_file allowed in auto-edit",
            "host_write",
            json!({ "path": "w.txt", "content": "written" }),
            auto_edit,
            Expect::Starts("ok: "),
        ),
        s(
            "sampling approved",
            "sample",
            json!({ "text": "capital of France" }),
            Setup::default(),
            Expect::Starts("model said: [offline model]"),
        ),
        s("sampling denied", "sample", json!({ "text": "hi" }), deny_sampling, Expect::Text("error: denied")),
        s(
            "sampling over payload",
            "sample",
            json!({ "text": "m", "messages": 33 }),
            Setup::default(),
            Expect::Text("error: invalid"),
        ),
        s(
            "elicitation accept",
            "ask",
            json!({}),
            Setup { input: Some("Ada\ny\n"), ..Setup::default() },
            Expect::Text("accepted name=Ada admin=true"),
        ),
        s(
            "elicitation decline",
            "ask",
            json!({}),
            Setup { input: Some("/decline\n"), ..Setup::default() },
            Expect::Text("declined"),
        ),
        s(
            "elicitation cancel",
            "ask",
            json!({}),
            Setup { input: Some("\u{1b}\n"), ..Setup::default() },
            Expect::Text("cancelled"),
        ),
        s("elicitation headless", "ask", json!({}), headless, Expect::Text("error: unsupported")),
        s(
            "cancel mid-call",
            "wait",
            json!({}),
            Setup { cancel_after_start: true, ..Setup::default() },
            Expect::Error("cancelled"),
        ),
        s(
            "deadline",
            "wait",
            json!({}),
            Setup { deadline: Some(Duration::from_millis(700)), ..Setup::default() },
            Expect::Error("timed_out"),
        ),
    ]
}

fn check(scenario: &Scenario, kind: Kind, observed: &Observed) {
    let what = format!("{} ({kind:?}): {observed:?}", scenario.name);
    match (&scenario.expect, &observed.result) {
        (Expect::Text(t), Ok((text, false, _))) => assert_eq!(text, t, "{what}"),
        (Expect::Starts(t), Ok((text, false, _))) => assert!(text.starts_with(t), "{what}"),
        (Expect::ToolError(t), Ok((text, true, _))) => assert_eq!(text, t, "{what}"),
        (Expect::Structured(t, structured), Ok((text, false, Some(s)))) => {
            assert_eq!(text, t, "{what}");
            assert_eq!(serde_json::from_str::<Value>(s).unwrap(), serde_json::from_str::<Value>(structured).unwrap());
        }
        (Expect::Error(kind), Err(observed)) => assert_eq!(observed, kind, "{what}"),
        _ => panic!("unexpected result for {what}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_gives_the_same_result_and_events_for_every_implementation() {
    let mut mounted = Vec::new();
    for kind in Kind::ALL {
        let env = TestEnv::trusted();
        let scope = mount(&env, kind).await;
        mounted.push((kind, env, scope));
    }
    for scenario in table() {
        let mut reference: Option<(Kind, Observed)> = None;
        for (kind, _, scope) in &mounted {
            let observed = observe(scope, *kind, scenario.tool, scenario.args.clone(), &scenario.setup).await;
            check(&scenario, *kind, &observed);
            match &reference {
                None => reference = Some((*kind, observed)),
                Some((first, expected)) => {
                    assert_eq!(&observed, expected, "{}: {kind:?} differs from {first:?}", scenario.name)
                }
            }
        }
    }
    // The writes really happened (or not) in each project.
    for (_, env, scope) in &mounted {
        assert_eq!(env.read("w.txt"), "written");
        scope.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_budget_40_guest_and_24_server_requests_then_the_65th_fails_for_either() {
    let env = TestEnv::trusted();
    let scope = mount(&env, Kind::Mcp).await;
    load_into(&scope, "contract", guests::CONTRACT_WASM).await;
    let run = RunContext::builder().mode(PermissionMode::FullAccess).start();
    let sample = |kind: Kind, i: usize| {
        let (scope, run) = (&scope, &run);
        async move {
            let name = format!("{}sample", kind.prefix());
            let out = scope.registry().call(&name, json!({ "text": format!("request {i}") }), run).await.unwrap();
            out.joined_text()
        }
    };
    for i in 0..40 {
        assert!(sample(Kind::Wasm, i).await.starts_with("model said:"), "guest request {i}");
    }
    for i in 0..24 {
        assert!(sample(Kind::Mcp, i).await.starts_with("model said:"), "server request {i}");
    }
    assert_eq!(sample(Kind::Mcp, 64).await, "error: budget_exhausted", "the 65th request of the run");
    assert_eq!(sample(Kind::Wasm, 65).await, "error: budget_exhausted", "and for the guest too");
    assert_eq!(run.budget().left().requests, 0);
    scope.close().await;
}
