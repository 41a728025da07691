//! A stdio server that dies mid-call, through the binary: `clat call` fails
//! with how the server exited and its stderr tail, leaves nothing running,
//! and a sibling server is unaffected. (The client's side of it is tested in
//! `mcp/tests/test_stdio_exit.rs`.)

mod support;

use serde_json::json;
use support::{TestEnv, stderr, wait_pid_gone};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

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
