//! `clat serve`: the project's registry as an MCP server on stdio, driven by a real client (the official Python
//! SDK): native tools, a WASM plugin and an MCP server served side by side with annotations from their effects,
//! every call through the one pipeline (a call that needs an approval is denied at once, saying how to allow it),
//! and nothing started in an untrusted project.

mod support;

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn python() -> std::path::PathBuf {
    let python = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/.venv/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/install-test-peers.sh", python.display());
    python
}

/// What the Python SDK's client saw of `clat serve --mode MODE` in `env`'s project, making `calls`.
fn served(env: &TestEnv, mode: &str, calls: Value) -> Value {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/python_serve_client.py");
    let args = json!(["--home", env.home, "--project", env.project, "serve", "--mode", mode]);
    let out = std::process::Command::new(python())
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_clat"))
        .arg(args.to_string())
        .arg(calls.to_string())
        .output()
        .unwrap();
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
    ]);
    let report = served(&env, "ask", calls);
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
    assert!(denial.contains("the client mcp cannot give one through clat serve"), "{denial}");
    assert!(denial.contains("serve with --mode auto-edit or full-access"), "{denial}");
    assert!(!env.project.join("w.txt").exists(), "nothing was written");
    assert!(calls[4]["error"].as_str().unwrap().contains("unknown tool"), "{report}");
    // The mode the session was started with applies to every call.
    let report =
        served(&env, "auto-edit", json!([{ "name": "write_file", "arguments": { "path": "w.txt", "content": "x" } }]));
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    assert_eq!(env.read("w.txt"), "x");
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
