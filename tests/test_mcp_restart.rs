//! Supervised restart: an MCP server that exits after it was ready is started
//! again by the next call that needs it, with back-off; the call in flight
//! when it died fails and is never replayed; the restart is a run event and
//! shows in the server's status; a tool the restarted server no longer lists
//! fails clearly; a server that keeps crashing stays failed after three
//! restarts; sibling servers keep working throughout.

mod support;

use std::path::Path;

use clat_host::contract::PermissionMode;
use clat_host::extension::ExtensionState;
use clat_host::registry::CallError;
use clat_host::run::RunEventKind;
use serde_json::{Value, json};
use support::{TestEnv, run_in, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_string).collect()
}

fn failure(result: Result<clat_host::contract::ToolOutput, CallError>) -> String {
    match result {
        Err(e @ CallError::Failed { .. }) => e.to_string(),
        other => panic!("expected a failed call, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_is_restarted_by_the_next_call_and_the_dead_call_is_not_replayed() {
    let env = TestEnv::trusted();
    let (starts, log, names) =
        (env.dir.path().join("starts"), env.dir.path().join("log"), env.dir.path().join("names"));
    std::fs::write(&names, "echo,exit,gone").unwrap();
    env.write_mcp_config(json!({
        "flaky": { "command": SERVER, "args": ["--tool-names-file", names, "--starts-file", starts, "--log-file", log] },
        "steady": { "command": SERVER },
    }));
    let scope = env.mount();
    scope.load_mcp_servers().await;
    let (run, events) = run_in(PermissionMode::FullAccess);
    // The probe process and the legacy handshake's process.
    let started_at_mount = lines(&starts).len();

    let died = failure(scope.registry().call("mcp_flaky_exit", json!({}), &run).await);
    assert!(died.contains("the server exited (status 3)"), "{died}");
    // Its status says so at once, before anything restarts it.
    let stopped = scope.extensions().into_iter().find(|e| e.name == "flaky").unwrap();
    assert_eq!((stopped.state, stopped.restarts), (ExtensionState::Failed, 0), "{stopped:?}");
    assert_eq!(stopped.last_stop.as_deref(), Some("the server exited (status 3)"), "{stopped:?}");
    // The restarted server lists one tool less.
    std::fs::write(&names, "echo,exit").unwrap();
    let echoed = scope.registry().call("mcp_flaky_echo", json!({ "again": true }), &run).await.unwrap();
    assert!(support::text(&echoed).contains("again"), "{echoed:?}");
    assert!(lines(&starts).len() > started_at_mount, "the server was started again");
    let calls: Vec<String> = lines(&log).into_iter().filter(|l| l.starts_with("call exit")).collect();
    assert_eq!(calls.len(), 1, "the call in flight when it died is never replayed: {calls:?}");

    let gone = failure(scope.registry().call("mcp_flaky_gone", json!({}), &run).await);
    assert!(gone.contains("no longer offers tool \"gone\" since it restarted"), "{gone}");
    // A sibling is untouched.
    scope.registry().call("mcp_steady_echo", json!({}), &run).await.unwrap();

    let restarted: Vec<RunEventKind> = events
        .events()
        .into_iter()
        .map(|e| e.kind)
        .filter(|k| matches!(k, RunEventKind::ExtensionRestarted { .. }))
        .collect();
    assert_eq!(restarted.len(), 1, "{restarted:?}");
    assert!(
        matches!(&restarted[0], RunEventKind::ExtensionRestarted { extension, restarts: 1, reason }
            if extension == "mcp:flaky" && reason.contains("exited (status 3)")),
        "{restarted:?}"
    );
    let status = scope.extensions().into_iter().find(|e| e.name == "flaky").unwrap();
    assert_eq!((status.state, status.restarts), (ExtensionState::Ready, 1), "{status:?}");
    assert!(status.last_stop.as_deref().unwrap_or("").contains("exited (status 3)"), "{status:?}");
    run.finish();
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_after_every_restart_stays_failed_after_three() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "crashy": { "command": SERVER, "args": ["--tool-names", "echo,exit"] } }));
    let scope = env.mount();
    scope.load_mcp_servers().await;
    let (run, events) = run_in(PermissionMode::FullAccess);
    // Dies, then is restarted by each next call (after 1 s, 2 s, 4 s of back-off) and dies again.
    for _ in 0..4 {
        let died = failure(scope.registry().call("mcp_crashy_exit", json!({}), &run).await);
        assert!(died.contains("the server exited (status 3)"), "{died}");
    }
    let given_up = failure(scope.registry().call("mcp_crashy_echo", json!({}), &run).await);
    assert!(given_up.contains("after 3 restarts within 300 s; it stays failed"), "{given_up}");
    let restarts = events.events().iter().filter(|e| matches!(e.kind, RunEventKind::ExtensionRestarted { .. })).count();
    assert_eq!(restarts, 3);
    let status = scope.extensions().into_iter().find(|e| e.name == "crashy").unwrap();
    assert_eq!((status.state, status.restarts), (ExtensionState::Failed, 3), "{status:?}");
    assert!(status.problems.iter().any(|p| p.contains("it stays failed")), "{status:?}");
    run.finish();
    scope.close().await;
}

#[test]
fn clat_exec_restarts_a_server_between_calls_and_reports_it_as_an_event() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "flaky": { "command": SERVER, "args": ["--tool-names", "echo,exit"] } }));
    let script = env.dir.path().join("script.jsonl");
    std::fs::write(&script, "{\"tool\":\"mcp_flaky_exit\"}\n{\"tool\":\"mcp_flaky_echo\",\"arguments\":{\"n\":2}}\n")
        .unwrap();
    let out = env.clat(&["exec", script.to_str().unwrap(), "--mode", "full-access"]);
    let lines: Vec<Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "call_result").collect();
    assert_eq!(results[0]["error"]["kind"], "failed", "{results:?}");
    assert!(results[1]["result"]["content"][0]["text"].as_str().unwrap().contains("\"n\":2"), "{results:?}");
    let restarted = lines.iter().find(|l| l["type"] == "extension_restarted").expect("a restart event");
    assert_eq!((restarted["extension"].as_str(), restarted["restarts"].as_u64()), (Some("mcp:flaky"), Some(1)));
    // The first call's failure sets the exit code.
    assert_eq!(out.status.code(), Some(5));
}
