//! A stdio server that dies or garbles an answer mid-call, against the
//! client alone: the connection watches its child, so the call fails with
//! how the server exited (not at its deadline) even while a descendant still
//! holds the server's stdout, and the whole group dies; an unreadable answer
//! whose id can be read fails that call alone with a protocol error.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clat_mcp::{ClientError, ClientInfo, Connection, NoServerRequests, Session, StderrSink, StdioSpec};
use serde_json::json;

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;
/// Far longer than detection takes: reaching it means the exit was not noticed.
const CALL_BOUND: Duration = Duration::from_secs(60);

struct Ignore;
impl StderrSink for Ignore {
    fn write(&self, _bytes: &[u8]) {}
}

async fn session(args: &[&str]) -> Session {
    let spec = StdioSpec {
        command: SERVER.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: vec![],
        clear_env: false,
        cwd: std::env::temp_dir(),
    };
    let conn = Connection::spawn(&spec, Arc::new(Ignore)).await.unwrap();
    let client = ClientInfo { name: "clat-test".into(), version: "0".into() };
    Session::initialize(
        conn,
        Arc::new(NoServerRequests),
        &client,
        json!({}),
        clat_mcp::limits::LEGACY_HANDSHAKE_TIMEOUT,
    )
    .await
    .unwrap()
}

/// Whether the process in `pid_file` is gone (a zombie counts as gone), waiting at most about 10 s.
fn gone(pid_file: &Path) -> bool {
    let pid: i32 = std::fs::read_to_string(pid_file).unwrap().trim().parse().unwrap();
    (0..1000).any(|_| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let running = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).is_some_and(|s| s != "Z");
        if running {
            std::thread::sleep(Duration::from_millis(10));
        }
        !running
    })
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
    assert!(gone(&child_pid), "the server's child survived its exit");
    // Later requests fail at once with the same reason.
    let again = session.call_tool("echo", json!({}), CALL_BOUND, None).await.unwrap_err();
    assert!(again.to_string().contains("the server exited (status 3)"), "{again}");
    session.close().await;
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
    session.close().await;
}
