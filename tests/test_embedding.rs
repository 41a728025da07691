//! The front door as CLAT embeds it: `host/examples/agent.rs`, with its
//! offline model, on a project with a WASM plugin and an MCP server, offers the
//! model every tool, calls one native, one WASM and one MCP tool through the
//! pipeline (headless, in `ask` mode: each is allowed by its effect), and
//! reports the run's events; then the example binary itself runs.

mod support;

#[path = "../host/examples/agent.rs"]
#[allow(dead_code)]
mod agent;

use clat_guest_artifacts as guests;
use clat_host::{PermissionMode, RunEventKind};
use serde_json::json;
use support::{TestEnv, stderr};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn demo_env() -> TestEnv {
    let env = TestEnv::trusted();
    env.write("src/main.rs", "fn main() {}\n");
    let out = env.clat(&["plugin", "install", guests::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.write_mcp_config(
        json!({ "demo": { "command": SERVER, "args": ["--tool-names", "echo", "--read-only-tools"] } }),
    );
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_loop_calls_a_native_a_wasm_and_an_mcp_tool_through_the_pipeline() {
    let env = demo_env();
    let mut said = Vec::new();
    let mut model = agent::OfflineModel::default();
    let events =
        agent::run_agent(Some(&env.home), &env.project, PermissionMode::Ask, "look around", &mut model, &mut said)
            .await
            .unwrap();
    let said = String::from_utf8(said).unwrap();
    let finished: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            RunEventKind::ToolFinished { tool, is_error, .. } => Some((tool.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        finished,
        [
            ("list_files".to_string(), false),
            ("wasm_hello_greet".to_string(), false),
            ("mcp_demo_echo".to_string(), false)
        ],
        "{said}"
    );
    assert!(said.contains("tools offered to the model") && said.contains("[offline model] I called 3 tools"), "{said}");
    assert!(matches!(events.last().map(|e| &e.kind), Some(RunEventKind::RunFinished { cancelled: false })));
}

#[test]
fn the_example_runs_as_a_program() {
    let env = demo_env();
    // `cargo test` builds the examples beside the tests: target/debug/examples/ next to target/debug/deps/.
    let test_binary = std::env::current_exe().unwrap();
    let binary = test_binary.parent().unwrap().parent().unwrap().join("examples/agent");
    assert!(binary.exists(), "{} was not built: `cargo test` builds the examples", binary.display());
    let out = std::process::Command::new(binary)
        .args(["--home", env.home.to_str().unwrap(), "--project", env.project.to_str().unwrap()])
        .env_remove("CLAT_MODEL_BASE_URL")
        .env("CLAT_CREDENTIAL_STORE", "file")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", stderr(&out));
    assert!(stdout.contains("wasm_hello_greet → ") && stdout.contains("mcp_demo_echo → "), "{stdout}");
    assert!(stderr(&out).contains(r#""type":"run_finished""#), "the run's events: {}", stderr(&out));
}
