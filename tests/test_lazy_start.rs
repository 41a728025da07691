//! Targeted start: `clat call` and `clat exec` start only the extensions that
//! can own the tools they name — a native tool starts none, a `wasm_` tool
//! only its plugin, an `mcp_` tool only the servers whose normalized prefix
//! matches (several when prefixes are ambiguous) — while `clat tools` and
//! the library's default still start everything.

mod support;

use clat_host::extension::{ExtensionState, StartFilter};
use clat_host::scope::{ProjectScope, ScopeOptions};
use serde_json::json;
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

/// Install the hello and project-notes plugins, and configure a server that
/// never finishes its handshake plus servers `a`, `a-b` and `c`; each server
/// records its starts in a file of its own.
fn setup(env: &TestEnv) {
    for package in [clat_guest_artifacts::HELLO_PACKAGE, clat_guest_artifacts::PROJECT_NOTES_PACKAGE] {
        let out = env.clat(&["plugin", "install", package]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let starts = |name: &str| env.dir.path().join(format!("{name}.starts"));
    env.write_mcp_config(json!({
        "hang": { "command": SERVER, "args": ["--hang-initialize", "--starts-file", starts("hang")] },
        "a": { "command": SERVER, "args": ["--starts-file", starts("a")] },
        "a-b": { "command": SERVER, "args": ["--starts-file", starts("a-b")] },
        "c": { "command": SERVER, "args": ["--starts-file", starts("c")] },
    }));
}

fn started(env: &TestEnv) -> Vec<&'static str> {
    ["hang", "a", "a-b", "c"].into_iter().filter(|n| env.dir.path().join(format!("{n}.starts")).exists()).collect()
}

#[test]
fn a_native_call_starts_no_extension() {
    let env = TestEnv::trusted();
    setup(&env);
    env.write("notes.txt", "hello\n");
    let out = env.clat(&["call", "read_file", r#"{"path":"notes.txt"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("hello"));
    assert_eq!(started(&env), Vec::<&str>::new(), "a native call started servers");
}

#[test]
fn a_call_starts_only_the_extensions_that_can_own_its_tool() {
    let env = TestEnv::trusted();
    setup(&env);
    let out = env.clat(&["call", "wasm_hello_greet", r#"{"name":"CLAT"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("Hello, CLAT!"), "{}", stdout(&out));
    assert_eq!(started(&env), Vec::<&str>::new(), "a wasm call started servers");

    // `mcp_a_b_echo` could be server `a`'s tool `b_echo` or server `a-b`'s `echo`: both start, `c` does not.
    let out = env.clat(&["call", "mcp_a_b_echo", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(started(&env), vec!["a", "a-b"]);
}

#[test]
fn exec_starts_what_its_script_names() {
    let env = TestEnv::trusted();
    setup(&env);
    let script = env.dir.path().join("script.jsonl");
    std::fs::write(&script, "{\"tool\":\"mcp_c_echo\"}\n{\"tool\":\"list_files\"}\n").unwrap();
    let out = env.clat(&["exec", script.to_str().unwrap(), "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(started(&env), vec!["c"]);
}

#[tokio::test]
async fn the_scope_reports_what_it_did_not_start_and_tools_starts_everything() {
    let env = TestEnv::trusted();
    setup(&env);
    let options = ScopeOptions { start: StartFilter::OwnersOf(vec!["wasm_hello_greet".into()]), ..Default::default() };
    let scope = ProjectScope::mount(&env.clat_home(), &env.project, options).unwrap();
    scope.load_plugins().await;
    let states: Vec<(String, ExtensionState)> = scope.extensions().into_iter().map(|e| (e.name, e.state)).collect();
    assert_eq!(
        states,
        vec![("hello".to_string(), ExtensionState::Ready), ("project-notes".to_string(), ExtensionState::Configured)]
    );
    scope.close().await;

    let out = env.clat(&["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let state =
        |name: &str| v["extensions"].as_array().unwrap().iter().find(|e| e["name"] == name).unwrap()["state"].clone();
    assert_eq!((state("hello"), state("a"), state("c")), (json!("ready"), json!("ready"), json!("ready")));
    assert_eq!(started(&env).len(), 4, "clat tools starts every server");
}
