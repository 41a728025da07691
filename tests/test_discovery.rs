//! Progressive discovery through the library's front door: with 300 tools
//! (ten MCP servers of 30 each, and a WASM plugin) the first turn's offer is
//! CLAT's native tools and discovery's own within 8 KiB; a search finds a
//! deferred tool, loading it offers it, and a deferred tool's call — loaded
//! or through `call_tool` — passes the same pipeline: headless in ask mode, a
//! destructive one is denied; a tool used comes first in later searches.

mod support;

use clat_host::discovery::{CALL_TOOL, LOAD_TOOLS, SEARCH_TOOLS};
use clat_host::limits::{DISCOVERY_BUDGET_BYTES, SEARCH_RESULTS_MAX};
use clat_host::{CallError, DiscoveryOptions, MountOptions, PermissionMode, Platform, RunOptions};
use serde_json::{Value, json};
use support::{TestEnv, stderr};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

/// Ten servers of 30 tools each: the first has a tool that deletes repositories among its 30, the fourth an `echo`
/// (the one the test server answers).
fn three_hundred_tools() -> TestEnv {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut servers = serde_json::Map::new();
    for s in 0..10 {
        let mut names: Vec<String> = (0..30).map(|t| format!("records_{s}_operation_{t}")).collect();
        match s {
            0 => names[7] = "delete_repository".to_string(),
            3 => names[12] = "echo".to_string(),
            _ => {}
        }
        servers.insert(format!("srv{s}"), json!({ "command": SERVER, "args": ["--tool-names", names.join(",")] }));
    }
    env.write_mcp_config(json!({ "mcpServers": servers }));
    env
}

fn text(output: &clat_host::ToolOutput) -> Value {
    serde_json::from_str(output.structured.as_deref().unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_tools_are_found_not_offered_and_a_deferred_call_passes_the_pipeline() {
    let env = three_hundred_tools();
    let platform = Platform::open(Some(&env.home)).unwrap();
    let project = platform.mount(&env.project, MountOptions::default()).unwrap();
    project.load_extensions().await;
    assert_eq!(project.tools().len(), 6 + 300 + 1, "natives, ten servers' tools and the plugin's");

    let discovery = project.discovery(&DiscoveryOptions::default());
    assert!(discovery.deferring());
    let offered = |discovery: &clat_host::Discovery| -> Vec<String> {
        discovery.offered().iter().map(|d| d["name"].as_str().unwrap().to_string()).collect()
    };
    let first = offered(&discovery);
    assert_eq!(
        first,
        [
            "list_files",
            "read_file",
            "search",
            "write_file",
            "edit_file",
            "run_command",
            SEARCH_TOOLS,
            LOAD_TOOLS,
            CALL_TOOL
        ]
    );
    let (first_turn, every_tool) =
        (discovery.offered_size().bytes, clat_host::registry::schema_totals(&project.tools()));
    eprintln!(
        "the first turn offers {first_turn} bytes of definitions; every tool's would be {}",
        every_tool.size.bytes
    );
    assert!(first_turn <= DISCOVERY_BUDGET_BYTES, "the first turn's tools take {first_turn} bytes");

    // A search finds a deferred tool by a task's words.
    let run = project.start_run(RunOptions::default()).await.unwrap();
    let found = discovery.call(&run, SEARCH_TOOLS, json!({ "query": "delete a repository" })).await.unwrap();
    let found = text(&found);
    assert_eq!(found["matches"][0]["name"], "mcp_srv0_delete_repository", "{found}");
    assert_eq!(found["matches"][0]["effect"], "destructive", "{found}");

    // A search asked for more than SEARCH_RESULTS_MAX matches gives that many.
    let many = discovery.call(&run, SEARCH_TOOLS, json!({ "query": "records operation", "limit": 100 })).await.unwrap();
    assert_eq!(text(&many)["matches"].as_array().unwrap().len(), SEARCH_RESULTS_MAX);

    // Headless in ask mode, the deferred destructive tool is denied, called through call_tool or once loaded.
    let called = json!({ "name": "mcp_srv0_delete_repository", "arguments": {} });
    let denied = discovery.call(&run, CALL_TOOL, called).await.unwrap_err();
    assert!(matches!(denied, CallError::Denied { .. }), "{denied}");
    let loaded = discovery.call(&run, LOAD_TOOLS, json!({ "names": ["mcp_srv0_delete_repository"] })).await.unwrap();
    assert_eq!(text(&loaded)["tools"][0]["name"], "mcp_srv0_delete_repository");
    assert!(offered(&discovery).contains(&"mcp_srv0_delete_repository".to_string()), "offered from now on");
    let denied = discovery.call(&run, "mcp_srv0_delete_repository", json!({})).await.unwrap_err();
    assert!(matches!(denied, CallError::Denied { .. }), "{denied}");
    let unknown = discovery.call(&run, LOAD_TOOLS, json!({ "names": ["nope"] })).await.unwrap_err();
    assert!(matches!(unknown, CallError::UnknownTool(_)), "{unknown}");

    // Every tool stays reachable: where the mode allows it, the deferred call runs — and, used, comes first
    // among the tools a search matches.
    let first_of_srv3 = async || {
        let found = discovery.call(&run, SEARCH_TOOLS, json!({ "query": "srv3 operation 13" })).await.unwrap();
        text(&found)["matches"][0]["name"].as_str().unwrap().to_string()
    };
    assert_eq!(first_of_srv3().await, "mcp_srv3_records_3_operation_13", "srv3's echo matches one word of three");
    let full =
        project.start_run(RunOptions { mode: PermissionMode::FullAccess, ..RunOptions::default() }).await.unwrap();
    let called = json!({ "name": "mcp_srv3_echo", "arguments": { "text": "found" } });
    let output = discovery.call(&full, CALL_TOOL, called).await.unwrap();
    assert!(!output.is_error, "{}", output.joined_text());
    assert_eq!(first_of_srv3().await, "mcp_srv3_echo", "recently used first");

    // Pinned tools are offered on the first turn; within the budget, every tool is.
    let pinned = DiscoveryOptions { pinned: vec!["wasm_hello_greet".into()], ..DiscoveryOptions::default() };
    assert!(offered(&project.discovery(&pinned)).contains(&"wasm_hello_greet".to_string()));
    let roomy = project.discovery(&DiscoveryOptions { budget_bytes: usize::MAX, ..DiscoveryOptions::default() });
    assert!(!roomy.deferring());
    assert_eq!(roomy.offered().len(), 307);
    project.close().await;
}
