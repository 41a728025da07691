//! One name per tool everywhere: every place that takes a tool name — the
//! tool filters of `mcp.json`, `clat call`, did-you-mean, `clat approvals` —
//! accepts its registered name (`mcp_everything_get_env`), the server's own
//! name (`get-env`) and that normalized (`get_env`); a short name starts only
//! the servers whose last listing (kept under their identity) has it.

mod support;

use clat_host::contract::Effect;
use clat_host::policy::approvals::{ApprovalKey, ApprovalMemory, ApprovalStore, Remember};
use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn env_with_two_servers() -> TestEnv {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        // A filter by the normalized own name …
        "everything": { "command": SERVER, "args": ["--tool-names", "get-sum,get-env,print-env"],
                        "disabled_tools": ["print_env"] },
        // … and by the registered name.
        "other": { "command": SERVER, "args": ["--tool-names", "get-sum,list-files"],
                   "enabled_tools": ["mcp_other_list_files"] },
    }));
    env
}

#[test]
fn filters_take_any_of_a_tool_s_names() {
    let env = env_with_two_servers();
    let out = env.clat(&["tools", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tools: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut names: Vec<&str> = tools["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    names.retain(|n| n.starts_with("mcp_"));
    names.sort_unstable();
    assert_eq!(names, ["mcp_everything_get_env", "mcp_everything_get_sum", "mcp_other_list_files"]);

    let out = env.clat(&["mcp", "--json"]);
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for server in listing["servers"].as_array().unwrap() {
        assert_eq!(server["problems"], json!([]), "each filter name names a listed tool: {server}");
    }
}

#[test]
fn clat_call_takes_the_own_name_its_normalized_form_and_suggests_by_any_name() {
    let env = env_with_two_servers();
    // The test server answers its named tools with an error naming them: the
    // call reached the server, under the server's own name.
    let reached = |out: &std::process::Output| stderr(out).contains("JSON-RPC error -32602: unknown tool get-env");
    for written in ["get_env", "get-env", "mcp_everything_get_env"] {
        let out = env.clat(&["call", written, "{}", "--mode", "full-access"]);
        assert!(reached(&out), "{written}: {}", stderr(&out));
        if written != "mcp_everything_get_env" {
            assert!(stderr(&out).contains(&format!("{written} is mcp_everything_get_env")), "{}", stderr(&out));
        }
    }
    // `get-sum` is both servers' own name, but `other` filters its own out.
    let out = env.clat(&["call", "get_sum", "{}", "--mode", "full-access"]);
    assert!(stderr(&out).contains("get_sum is mcp_everything_get_sum"), "{}", stderr(&out));

    let out = env.clat(&["call", "get_envv", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("did you mean \"mcp_everything_get_env\""), "{}", stderr(&out));
    let out = env.clat(&["call", "lst-files", "{}"]);
    assert!(stderr(&out).contains("did you mean \"mcp_other_list_files\""), "by its own name: {}", stderr(&out));
}

#[test]
fn approvals_are_revoked_by_any_of_the_tool_s_names() {
    let env = TestEnv::trusted();
    let root = env.project.canonicalize().unwrap();
    let store = ApprovalStore::open(&env.clat_home(), &root).unwrap();
    let key = |tool: &str| ApprovalKey {
        asked_by: "agent".into(),
        extension: "mcp:everything".into(),
        tool: tool.into(),
        identity: Some(support::identity()),
        definition: Some("sha256:0".into()),
    };
    store.remember(&key("mcp_everything_get_env"), Effect::Write, Remember::Tool).unwrap();
    store.remember(&key("mcp_everything_get_sum"), Effect::Write, Remember::Tool).unwrap();
    let out = env.clat(&["approvals", "revoke", "get-env"]);
    assert!(stdout(&out).contains("revoked 1 kept approval"), "the server's name: {}", stderr(&out));
    let out = env.clat(&["approvals", "revoke", "get_sum"]);
    assert!(stdout(&out).contains("revoked 1 kept approval"), "its normalized form: {}", stderr(&out));
}

#[test]
fn a_short_name_starts_only_the_servers_whose_last_listing_has_it() {
    let env = TestEnv::trusted();
    let starts = env.dir.path().join("other-starts");
    let config = |everything_args: &[&str]| {
        json!({
            "everything": { "command": SERVER, "args": everything_args },
            "other": { "command": SERVER, "args": ["--tool-names", "list-files", "--starts-file", starts] },
        })
    };
    env.write_mcp_config(config(&["--tool-names", "get-env"]));
    let reached = |out: &std::process::Output| stderr(out).contains("JSON-RPC error -32602: unknown tool get-env");
    let started_other = || std::fs::read_to_string(&starts).map(|s| s.lines().count()).unwrap_or(0);

    // No listing kept yet: every server starts to resolve the name.
    let out = env.clat(&["call", "get_env", "{}", "--mode", "full-access"]);
    assert!(reached(&out), "{}", stderr(&out));
    assert!(started_other() > 0, "the first time, every server starts");

    // Now the listings say who has it: only that server starts.
    std::fs::remove_file(&starts).unwrap();
    let out = env.clat(&["call", "get_env", "{}", "--mode", "full-access"]);
    assert!(reached(&out) && stderr(&out).contains("get_env is mcp_everything_get_env"), "{}", stderr(&out));
    assert_eq!(started_other(), 0, "a server whose last listing lacks the name is not started");
    let out = env.clat(&["call", "lst_files", "{}"]);
    assert!(stderr(&out).contains("did you mean \"mcp_other_list_files\""), "{}", stderr(&out));

    // A server that changed (another command line) is not known by its old listing.
    std::fs::remove_file(&starts).ok();
    env.write_mcp_config(config(&["--tool-names", "get-env,print-env"]));
    let out = env.clat(&["call", "print_env", "{}", "--mode", "full-access"]);
    assert!(stderr(&out).contains("print_env is mcp_everything_print_env"), "{}", stderr(&out));
    assert!(started_other() > 0, "a listing under another identity is not trusted: every server starts");
}
