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
//! The `summary:` line prints each served call next to its floor, the direct
//! round trip plus the direct call, and the ratio (goal: ≤ 1.3×).

use std::hint::black_box;
use std::time::Duration;

use clat_host::contract::PermissionMode;
use clat_host::run::RunContext;
use clat_host::scope::{ProjectScope, ScopeOptions};
use clat_host::trust::{ClatHome, TrustStore};
use criterion::{Criterion, criterion_group};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

mod support;

const ECHO_SERVER: &str = clat_test_server_artifact::MCP_ECHO_SERVER;

type Client = RunningService<RoleClient, ()>;

struct Fixture {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    scope: ProjectScope,
    run: RunContext,
    served: Client,
    echo: Client,
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
    let (scope, served, echo) = runtime.block_on(async {
        let scope = ProjectScope::mount(&home, &project, ScopeOptions::default()).unwrap();
        scope.load_plugins().await;
        scope.load_mcp_servers().await;
        let mut serve = tokio::process::Command::new(clat);
        serve.arg("--home").arg(&home_dir).arg("--project").arg(&project).args(["serve", "--mode", "full-access"]);
        (scope, rmcp_connect(serve).await, rmcp_connect(tokio::process::Command::new(ECHO_SERVER)).await)
    });
    let run = RunContext::builder().mode(PermissionMode::FullAccess).start();
    Fixture { _dir: dir, runtime, scope, run, served, echo }
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
    summary(&f);
    f.runtime.block_on(async {
        let _ = f.served.cancel().await;
        let _ = f.echo.cancel().await;
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
}

criterion_group!(serve, benches);

fn main() {
    serve();
    criterion::Criterion::default().configure_from_args().final_summary();
}
