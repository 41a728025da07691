//! What `clat serve` adds to a call, measured from the official Rust SDK's
//! client (rmcp), all in one run:
//! - `served/wasm_greet` and `served/mcp_echo`: rmcp → `clat serve` (stdio,
//!   full-access) → a WASM plugin's tool (`hello`'s `greet`) and an MCP
//!   server's tool (the smallest echo server's `echo`);
//! - `direct/stdio_round_trip`: rmcp → that echo server itself (what any
//!   stdio hop costs);
//! - `direct/registry_wasm_greet` and `direct/registry_mcp_echo`: the same
//!   calls through `Registry::call` in this process (what the pipeline and the
//!   extension cost without serving).
//!
//! - `in_flight/served_wasm_greet` and `in_flight/rmcp_server_greet`: 64 calls
//!   in flight on one connection, to `clat serve` serving `greet` and to the
//!   official SDK's own server (rmcp, on its non-blocking stdio pipes) serving
//!   the same `greet` natively: this bench binary is that server when
//!   `CLAT_BENCH_RMCP_SERVER` is set.
//!
//! The `summary:` lines print each served call next to its floor, the direct
//! round trip plus the direct call, and the ratio (goal: ≤ 1.3×); and the calls
//! per second at 64 in flight, ours against rmcp's server (goal: ≥ 1.5×).

use std::hint::black_box;
use std::time::Duration;

use clat_host::contract::PermissionMode;
use clat_host::home::ClatHome;
use clat_host::home::trust::TrustStore;
use clat_host::run::RunContext;
use clat_host::scope::{ProjectScope, ScopeOptions};
use criterion::{Criterion, criterion_group};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

mod support;

const ECHO_SERVER: &str = clat_test_server_artifact::MCP_ECHO_SERVER;

type Client = RunningService<RoleClient, ()>;

/// The environment variable that makes this binary rmcp's greet server.
const RMCP_SERVER_ROLE: &str = "CLAT_BENCH_RMCP_SERVER";

/// Calls in flight at once in the throughput comparison.
const IN_FLIGHT: usize = 64;

struct Fixture {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    scope: ProjectScope,
    run: RunContext,
    served: Client,
    echo: Client,
    rmcp_server: Client,
}

async fn rmcp_connect(command: tokio::process::Command) -> Client {
    let transport =
        rmcp::transport::TokioChildProcess::builder(command).stderr(std::process::Stdio::null()).spawn().unwrap().0;
    ().serve(transport).await.unwrap()
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (home_dir, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(&project).unwrap();
    let home = ClatHome::at(&home_dir);
    TrustStore::new(&home).trust(&project).unwrap();
    let clat = env!("CARGO_BIN_EXE_clat");
    let installed = std::process::Command::new(clat)
        .arg("--home")
        .arg(&home_dir)
        .args(["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE])
        .output()
        .unwrap();
    assert!(installed.status.success(), "{}", String::from_utf8_lossy(&installed.stderr));
    std::fs::write(
        home_dir.join("mcp.json"),
        json!({ "mcpServers": { "echo": { "command": ECHO_SERVER } } }).to_string(),
    )
    .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let (scope, served, echo, rmcp_server) = runtime.block_on(async {
        let scope = ProjectScope::mount(&home, &project, ScopeOptions::default()).unwrap();
        scope.load_plugins().await;
        scope.load_mcp_servers().await;
        let mut serve = tokio::process::Command::new(clat);
        serve.arg("--home").arg(&home_dir).arg("--project").arg(&project).args(["serve", "--mode", "full-access"]);
        let mut rmcp_server = tokio::process::Command::new(std::env::current_exe().unwrap());
        rmcp_server.env(RMCP_SERVER_ROLE, "1");
        (
            scope,
            rmcp_connect(serve).await,
            rmcp_connect(tokio::process::Command::new(ECHO_SERVER)).await,
            rmcp_connect(rmcp_server).await,
        )
    });
    let (scope, served, echo, rmcp_server) = (scope, served, echo, rmcp_server);
    let run = RunContext::builder().mode(PermissionMode::FullAccess).start();
    Fixture { _dir: dir, runtime, scope, run, served, echo, rmcp_server }
}

fn greet() -> Value {
    json!({ "name": "Ada" })
}

fn echo() -> Value {
    json!({ "message": "hello" })
}

fn call<'a>(client: &'a Client, tool: &'static str, arguments: Value) -> impl Future<Output = ()> + 'a {
    let params = CallToolRequestParams::new(tool).with_arguments(arguments.as_object().unwrap().clone());
    async move {
        let result = client.call_tool(params).await.unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        black_box(result);
    }
}

/// `IN_FLIGHT` calls of `tool` started together on one connection, all awaited.
async fn in_flight(client: &Client, tool: &'static str) {
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..IN_FLIGHT {
        let peer = client.peer().clone();
        let arguments = json!({ "name": format!("Ada {i}") }).as_object().unwrap().clone();
        calls.spawn(async move { peer.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments)).await });
    }
    while let Some(result) = calls.join_next().await {
        let result = result.unwrap().unwrap();
        assert_ne!(result.is_error, Some(true), "{result:?}");
        black_box(result);
    }
}

fn registry(f: &Fixture, tool: &str, arguments: Value) {
    let output = f.runtime.block_on(f.scope.registry().call(tool, arguments, &f.run)).unwrap();
    assert!(!output.is_error, "{output:?}");
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    // The first served call waits for the initial surface: make it before measuring.
    f.runtime.block_on(call(&f.served, "wasm_hello_greet", greet()));
    let mut group = c.benchmark_group("served");
    group.bench_function("wasm_greet", |b| b.iter(|| f.runtime.block_on(call(&f.served, "wasm_hello_greet", greet()))));
    group.bench_function("mcp_echo", |b| b.iter(|| f.runtime.block_on(call(&f.served, "mcp_echo_echo", echo()))));
    group.finish();
    let mut group = c.benchmark_group("direct");
    group.bench_function("stdio_round_trip", |b| b.iter(|| f.runtime.block_on(call(&f.echo, "echo", echo()))));
    group.bench_function("registry_wasm_greet", |b| b.iter(|| registry(&f, "wasm_hello_greet", greet())));
    group.bench_function("registry_mcp_echo", |b| b.iter(|| registry(&f, "mcp_echo_echo", echo())));
    group.finish();
    let mut group = c.benchmark_group("in_flight");
    group.bench_function("served_wasm_greet", |b| {
        b.iter(|| f.runtime.block_on(in_flight(&f.served, "wasm_hello_greet")))
    });
    group.bench_function("rmcp_server_greet", |b| b.iter(|| f.runtime.block_on(in_flight(&f.rmcp_server, "greet"))));
    group.finish();
    summary(&f);
    f.runtime.block_on(async {
        let _ = f.served.cancel().await;
        let _ = f.echo.cancel().await;
        let _ = f.rmcp_server.cancel().await;
        f.scope.close().await;
    });
}

fn summary(f: &Fixture) {
    let served_wasm = support::per_call(9, 200, || f.runtime.block_on(call(&f.served, "wasm_hello_greet", greet())));
    let served_mcp = support::per_call(9, 200, || f.runtime.block_on(call(&f.served, "mcp_echo_echo", echo())));
    let round_trip = support::per_call(9, 200, || f.runtime.block_on(call(&f.echo, "echo", echo())));
    let direct_wasm = support::per_call(9, 200, || registry(f, "wasm_hello_greet", greet()));
    let direct_mcp = support::per_call(9, 200, || registry(f, "mcp_echo_echo", echo()));
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let ratio = |served: Duration, direct: Duration| served.as_secs_f64() / (round_trip + direct).as_secs_f64();
    println!(
        "summary: served WASM call {:.1} µs vs stdio round trip {:.1} µs + Registry::call {:.1} µs = {:.2}x; served \
         MCP call {:.1} µs vs {:.1} µs + {:.1} µs = {:.2}x (goal <= 1.3x)",
        micros(served_wasm),
        micros(round_trip),
        micros(direct_wasm),
        ratio(served_wasm, direct_wasm),
        micros(served_mcp),
        micros(round_trip),
        micros(direct_mcp),
        ratio(served_mcp, direct_mcp),
    );
    // Interleaved rounds, so that both contenders see the same machine.
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..9 {
        ours.push(support::per_call(1, 20, || f.runtime.block_on(in_flight(&f.served, "wasm_hello_greet"))));
        theirs.push(support::per_call(1, 20, || f.runtime.block_on(in_flight(&f.rmcp_server, "greet"))));
    }
    let rate = |rounds: &mut Vec<Duration>| {
        rounds.sort();
        IN_FLIGHT as f64 / rounds[rounds.len() / 2].as_secs_f64()
    };
    let (ours, theirs) = (rate(&mut ours), rate(&mut theirs));
    println!(
        "summary: {IN_FLIGHT} calls in flight on one connection: clat serve serving a WASM plugin's greet {ours:.0} \
         calls/s vs rmcp's own server serving greet natively {theirs:.0} calls/s = {:.2}x (goal >= 1.5x)",
        ours / theirs
    );
}

/// rmcp's server with one tool, `greet`, answering what the `hello` plugin's
/// `greet` answers: the official SDK serving the same call natively.
#[derive(Clone)]
struct RmcpGreetServer;

impl rmcp::ServerHandler for RmcpGreetServer {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(rmcp::model::ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let schema = json!({ "type": "object", "properties": { "name": { "type": "string" } } });
        let tool = rmcp::model::Tool::new("greet", "Greets someone.", schema.as_object().unwrap().clone());
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, rmcp::ErrorData> {
        let name = request.arguments.as_ref().and_then(|a| a.get("name")).and_then(Value::as_str).unwrap_or("world");
        let text = format!("Hello, {name}! (from a WASM plugin)");
        Ok(rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]).into())
    }
}

/// This binary as rmcp's greet server on stdio, until the client goes.
fn serve_rmcp_greet() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let server = RmcpGreetServer.serve(rmcp::transport::io::stdio_pipes()).await.unwrap();
        let _ = server.waiting().await;
    });
}

criterion_group!(serve, benches);

fn main() {
    if std::env::var_os(RMCP_SERVER_ROLE).is_some() {
        return serve_rmcp_greet();
    }
    serve();
    criterion::Criterion::default().configure_from_args().final_summary();
}
