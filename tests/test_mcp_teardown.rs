//! Closing a project scope tears its MCP servers down in the spec's order:
//! revoke the tool leases (the tools leave the listing, calls in flight are
//! cancelled on the wire and end at once), then close stdin, wait a bounded
//! grace, kill and reap the process group, join the I/O tasks. A sibling
//! server's calls are unaffected until its own teardown.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use clat_host::contract::PermissionMode;
use clat_host::registry::CallError;
use serde_json::json;
use support::{TestEnv, pid_alive, run_in, wait_for_line};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_revokes_the_leases_before_stdin_closes_and_leaves_no_process() {
    let env = TestEnv::trusted();
    let (log, pid_file) = (env.dir.path().join("srv.log"), env.dir.path().join("srv.pid"));
    env.write_mcp_config(
        json!({ "srv": { "command": SERVER, "args": ["--tool-names", "echo,slow", "--log-file", log, "--pid-file", pid_file] } }),
    );
    let scope = std::sync::Arc::new(env.mount());
    let statuses = scope.load_mcp_servers().await;
    assert_eq!(statuses[0].state, "ready", "{statuses:?}");
    let (run, _) = run_in(PermissionMode::FullAccess);
    let run = std::sync::Arc::new(run);

    let in_flight = {
        let (scope, run) = (scope.clone(), run.clone());
        tokio::spawn(async move { scope.registry().call("mcp_srv_slow", json!({ "ms": 60_000 }), &run).await })
    };
    wait_for_line(&log, "call slow").await;

    let started = Instant::now();
    scope.close().await;
    let closed_in = started.elapsed();
    let err = in_flight.await.unwrap().unwrap_err();
    assert!(
        matches!(&err, CallError::Withdrawn { reason, .. } if reason.contains("closed with its project scope")),
        "the call in flight ends with the lease, not after its 60 s: {err}"
    );
    assert!(closed_in < Duration::from_secs(30), "teardown is bounded: {closed_in:?}");

    // The order the server saw: the cancellation of the call, then end of input.
    let lines = log_lines(&log);
    let call_id = lines.iter().find_map(|l| l.strip_prefix("call slow ")).unwrap().to_string();
    let cancelled = lines.iter().position(|l| *l == format!("cancelled {call_id}"));
    // (The first "end of input" is the modern probe's process, discarded before the handshake.)
    let eof = lines.iter().rposition(|l| l == "end of input");
    assert!(cancelled.is_some() && eof.is_some() && cancelled < eof, "cancelled before stdin closed: {lines:?}");
    assert!(!pid_alive(&pid_file), "the server was reaped");

    // Its tools left the listing; a new call is refused without reaching anything.
    assert!(!scope.registry().list().iter().any(|t| t.name.starts_with("mcp_srv_")));
    let err = scope.registry().call("mcp_srv_echo", json!({}), &run).await.unwrap_err();
    assert!(matches!(err, CallError::Withdrawn { .. }), "{err}");
    assert!(scope.registry().list().iter().any(|t| t.name == "read_file"), "native tools are never withdrawn");
    let out = scope.registry().call("list_files", json!({}), &run).await;
    assert!(out.is_ok(), "native tools keep working: {out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ignores_end_of_input_is_killed_after_the_grace() {
    let env = TestEnv::trusted();
    let pid_file = env.dir.path().join("srv.pid");
    env.write_mcp_config(json!({ "stubborn": { "command": SERVER, "args": ["--ignore-eof", "--pid-file", pid_file] },
                "other": { "command": SERVER } }));
    let scope = env.mount();
    let statuses = scope.load_mcp_servers().await;
    assert!(statuses.iter().all(|s| s.state == "ready"), "{statuses:?}");
    let (run, _) = run_in(PermissionMode::FullAccess);
    let out = scope.registry().call("mcp_other_echo", json!({ "x": 1 }), &run).await.unwrap();
    assert!(out.joined_text().contains("\"x\":1"));
    scope.close().await;
    assert!(!pid_alive(&pid_file), "killed and reaped after CLOSE_GRACE");
    let err = scope.registry().call("mcp_other_echo", json!({}), &run).await.unwrap_err();
    assert!(matches!(err, CallError::Withdrawn { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_closed_while_its_prompts_resolve_is_torn_down_in_order() {
    let env = TestEnv::trusted();
    let (log, pid_file) = (env.dir.path().join("srv.log"), env.dir.path().join("srv.pid"));
    // Its tools register; its marked prompt p0 never resolves.
    env.write_mcp_config(json!({ "slow": { "command": SERVER,
        "args": ["--prompts", "1", "--prompt-hang", "p0", "--log-file", log, "--pid-file", pid_file] } }));
    let scope = std::sync::Arc::new(env.mount());
    scope.start_extensions();
    wait_for_line(&log, "prompt p0").await;
    assert!(scope.registry().list().iter().any(|t| t.name.starts_with("mcp_slow_")), "its tools registered first");

    let started = Instant::now();
    scope.close().await;
    assert!(started.elapsed() < Duration::from_secs(30), "bounded: {:?}", started.elapsed());
    assert!(!pid_alive(&pid_file), "the server outlived the scope's close");
    // Ordered: its stdin was closed (the server saw end of input) after it was asked for the prompt.
    let lines = log_lines(&log);
    let asked = lines.iter().position(|l| l.starts_with("prompt p0"));
    let eof = lines.iter().rposition(|l| l == "end of input");
    assert!(asked.is_some() && eof > asked, "{lines:?}");
    assert!(!scope.registry().list().iter().any(|t| t.name.starts_with("mcp_slow_")), "its tools were withdrawn");
    let status = scope.extensions().into_iter().find(|e| e.name == "slow").unwrap();
    assert_eq!(status.state, "closed", "{status:?}");
}
