//! A stdio server that dies or garbles an answer mid-call: the connection
//! watches its child, so the call fails with how the server exited (not at
//! its deadline) even while a descendant still holds the server's stdout;
//! the whole group dies; an unreadable answer whose id can be read fails that
//! call alone with a protocol error. Through the library and the binary.

mod support;

use std::sync::Arc;
use std::time::Duration;

use clat_mcp::{ClientError, ClientInfo, Connection, NoServerRequests, Session, StdioSpec};
use serde_json::json;
use support::{TestEnv, stderr, wait_pid_gone};

const SERVER: &str = env!("CARGO_BIN_EXE_clat-test-mcp-server");
/// Far longer than detection takes: reaching it means the exit was not noticed.
const CALL_BOUND: Duration = Duration::from_secs(60);

async fn session(args: &[&str]) -> Session {
    let spec = StdioSpec {
        command: SERVER.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: vec![],
        cwd: std::env::temp_dir(),
    };
    let conn = Connection::spawn(&spec, Arc::new(NoServerRequests), Arc::new(support::NullStderr)).await.unwrap();
    let client = ClientInfo { name: "clat-test".into(), version: "0".into() };
    Session::initialize(conn, &client, json!({})).await.unwrap()
}

#[tokio::test]
async fn a_server_exiting_mid_call_fails_the_call_with_its_status_while_a_child_holds_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let child_pid = dir.path().join("child.pid");
    let session = session(&["--grandchild-pid-file", child_pid.to_str().unwrap()]).await;
    let error = session.call_tool("exit", json!({}), CALL_BOUND, None).await.unwrap_err();
    match &error {
        ClientError::Closed { reason } => assert_eq!(reason, "the server exited (status 3)"),
        other => panic!("expected the exit to close the connection, got {other:?}"),
    }
    // The child that held the pipe went with the group.
    assert!(wait_pid_gone(&child_pid), "the server's child survived its exit");
    // Later requests fail at once with the same reason.
    let again = session.call_tool("echo", json!({}), CALL_BOUND, None).await.unwrap_err();
    assert!(again.to_string().contains("the server exited (status 3)"), "{again}");
    session.connection.close().await;
}

#[tokio::test]
async fn an_unreadable_answer_with_a_readable_id_fails_that_call_alone() {
    let session = session(&[]).await;
    let error = session.call_tool("bad_answer", json!({}), CALL_BOUND, None).await.unwrap_err();
    assert!(matches!(error, ClientError::Protocol(_)), "{error:?}");
    assert!(error.to_string().contains("the answer to tools/call is malformed"), "{error}");
    // The connection lives on.
    let echoed = session.call_tool("echo", json!({ "x": 1 }), CALL_BOUND, None).await.unwrap();
    assert!(echoed.to_string().contains(r#"{\"x\":1}"#), "{echoed}");
    session.connection.close().await;
}

#[test]
fn clat_call_reports_the_exit_and_the_stderr_tail_and_leaves_nothing_running() {
    let env = TestEnv::trusted();
    let child_pid = env.dir.path().join("child.pid");
    env.write_mcp_config(json!({
        "dying": { "command": SERVER, "args": ["--tool-names", "echo,exit", "--grandchild-pid-file", child_pid] },
        "sibling": { "command": SERVER },
    }));
    let out = env.clat(&["call", "mcp_dying_exit", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("server dying: the connection closed: the server exited (status 3)"), "{err}");
    assert!(err.contains("exiting mid-call with status 3"), "the stderr tail is attached: {err}");
    assert!(wait_pid_gone(&child_pid), "the server's child survived");
    // A sibling is unaffected (and a call to it starts only it).
    let out = env.clat(&["call", "mcp_sibling_echo", r#"{"ok":true}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
