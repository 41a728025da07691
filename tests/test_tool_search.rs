//! `clat tools --search`: the tools a task's words best match — native
//! tools, an MCP server's and a WASM plugin's alike — by their names,
//! descriptions and parameters, best first, with what a model needs to
//! choose one (name, one-line description, effect, source).

mod support;

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

fn project() -> TestEnv {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names = "create_issue,list_pull_requests,send_email_message";
    env.write_mcp_config(json!({ "mcpServers": { "tracker": {
        "command": clat_test_server_artifact::MCP_TEST_SERVER, "args": ["--tool-names", names] } } }));
    env
}

fn first_match(env: &TestEnv, query: &str) -> Value {
    let out = env.clat(&["tools", "--search", query, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let found: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(found["query"], query);
    found["matches"][0].clone()
}

#[test]
fn a_search_finds_native_server_and_plugin_tools_by_their_words() {
    let env = project();
    for (query, expected) in [
        ("read the contents of a file", "read_file"),
        ("greet someone by name", "wasm_hello_greet"),
        ("open a new issue in the tracker", "mcp_tracker_create_issue"),
        ("which pull requests are open", "mcp_tracker_list_pull_requests"),
        ("email a message to the team", "mcp_tracker_send_email_message"),
        ("run a shell command", "run_command"),
    ] {
        assert_eq!(first_match(&env, query)["name"], expected, "{query}");
    }
    // What a model needs to choose a match, and no more than a page of them.
    let greet = first_match(&env, "greet someone by name");
    assert_eq!((greet["effect"].clone(), greet["source"]["kind"].clone()), (json!("external-read"), json!("wasm")));
    assert!(greet["description"].as_str().is_some_and(|d| !d.contains('\n')), "{greet}");
    assert!(greet["score"].as_f64().unwrap() > 0.0);
    let out = env.clat(&["tools", "--search", "file", "--json"]);
    let found: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let matches = found["matches"].as_array().unwrap();
    assert_eq!(matches.len(), clat_host::limits::SEARCH_RESULTS_DEFAULT, "a page: {found}");
    let scores: Vec<f64> = matches.iter().map(|m| m["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|pair| pair[0] >= pair[1]), "best first: {scores:?}");

    // The table, and a query nothing matches.
    let out = env.clat(&["tools", "--search", "greet someone"]);
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert!(lines[0].starts_with("NAME") && lines[1].starts_with("wasm_hello_greet"), "{lines:?}");
    let out = env.clat(&["tools", "--search", "zzyzx qwfp"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out).trim(), "no tool matches \"zzyzx qwfp\"");
}
