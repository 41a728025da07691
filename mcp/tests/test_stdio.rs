//! The MCP client alone over stdio against a real server subprocess
//! (`clat-test-mcp-server`): the legacy handshake and version counter-offers,
//! responses routed by id in any order, listing limits, call deadlines and
//! cancellation with `notifications/cancelled`, oversized frames, request
//! floods and panicking handlers, ping and unknown requests, and stderr.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use clat_mcp::jsonrpc::{INTERNAL_ERROR, METHOD_NOT_FOUND, SERVER_BUSY};
use clat_mcp::{
    ClientError, ClientInfo, Connection, NoServerRequests, Opening, ServerRequests, Session, StderrSink, StdioSpec,
    Target, WireError,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Captured(Mutex<Vec<u8>>);

impl StderrSink for Captured {
    fn write(&self, bytes: &[u8]) {
        self.0.lock().unwrap().extend_from_slice(bytes);
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
    async fn wait_for(&self, needle: &str) -> String {
        for _ in 0..500 {
            if self.text().contains(needle) {
                return self.text();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("stderr never showed {needle:?}: {}", self.text());
    }
}

fn spec(args: &[&str]) -> StdioSpec {
    StdioSpec {
        command: clat_test_server_artifact::MCP_TEST_SERVER.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: vec![],
        clear_env: false,
        cwd: std::env::temp_dir(),
    }
}

fn client() -> ClientInfo {
    ClientInfo { name: "clat-test".into(), version: "0".into() }
}

/// The legacy handshake on `conn`, at the spec's bound.
async fn initialize(conn: Connection, handler: Arc<dyn ServerRequests>) -> Result<Session, ClientError> {
    Session::initialize(conn, handler, &client(), json!({}), clat_mcp::limits::LEGACY_HANDSHAKE_TIMEOUT).await
}

async fn session_with(args: &[&str], handler: Arc<dyn ServerRequests>) -> (Session, Arc<Captured>) {
    let stderr = Arc::new(Captured::default());
    let conn = Connection::spawn(&spec(args), stderr.clone()).await.unwrap();
    let session = initialize(conn, handler).await.unwrap();
    (session, stderr)
}

async fn session(args: &[&str]) -> (Session, Arc<Captured>) {
    session_with(args, Arc::new(NoServerRequests)).await
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn handshake_list_and_call() {
    let (s, stderr) = session(&[]).await;
    assert_eq!(s.protocol_version, "2025-11-25");
    assert_eq!(s.server_info["name"], "clat-test-mcp-server");
    stderr.wait_for("initialized").await;
    let listing = s.list_tools().await.unwrap();
    assert_eq!(listing.tools.len(), 3);
    let result = s.call_tool("echo", json!({ "a": 1 }), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), r#"{"a":1}"#);
    let err = s.call_tool("nope", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Wire(WireError { code: -32602, .. })), "wire errors stay wire errors: {err}");
    s.close().await;
}

#[tokio::test]
async fn counter_offers_are_accepted_or_refused_clearly() {
    for version in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let (s, _) = session(&["--offer", version]).await;
        assert_eq!(s.protocol_version, version);
        s.close().await;
    }
    let conn = Connection::spawn(&spec(&["--offer", "1999-01-01"]), Arc::new(Captured::default())).await.unwrap();
    let err = initialize(conn, Arc::new(NoServerRequests)).await.err().unwrap();
    assert!(matches!(&err, ClientError::Unsupported(m) if m.contains("1999-01-01")), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_initialize_times_out() {
    let conn = Connection::spawn(&spec(&["--hang-initialize"]), Arc::new(Captured::default())).await.unwrap();
    let err = initialize(conn, Arc::new(NoServerRequests)).await.err().unwrap();
    assert!(
        matches!(&err, ClientError::Timeout { method, after } if method == "initialize" && after.as_secs() == 10),
        "{err}"
    );
}

#[tokio::test]
async fn responses_are_routed_by_id_in_any_order() {
    let (s, _) = session(&[]).await;
    let s = Arc::new(s);
    let slow = {
        let s = s.clone();
        tokio::spawn(async move { s.call_tool("slow", json!({ "ms": 1500 }), LONG, None).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let fast = s.call_tool("echo", json!({ "n": 2 }), LONG, None).await.unwrap();
    assert_eq!(text_of(&fast), r#"{"n":2}"#, "the later request finishes first");
    assert!(!slow.is_finished());
    assert_eq!(text_of(&slow.await.unwrap().unwrap()), "slept 1500 ms");
}

#[tokio::test]
async fn listing_respects_pages_cursors_and_the_tool_cap() {
    let (s, _) = session(&["--tools", "10", "--page-size", "3"]).await;
    let listing = s.list_tools().await.unwrap();
    assert_eq!((listing.tools.len(), listing.pages, listing.dropped), (10, 4, 0));
    let (s, _) = session(&["--tools", "10", "--page-size", "3", "--repeat-cursor"]).await;
    let err = s.list_tools().await.unwrap_err();
    assert!(matches!(&err, ClientError::Protocol(m) if m.contains("repeated the cursor")), "{err}");
    let (s, _) = session(&["--endless-pages"]).await;
    let err = s.list_tools().await.unwrap_err();
    assert!(matches!(&err, ClientError::Protocol(m) if m.contains("after 32 pages")), "{err}");
    let (s, _) = session(&["--tools", "600", "--page-size", "100"]).await;
    let listing = s.list_tools().await.unwrap();
    assert_eq!((listing.tools.len(), listing.dropped), (512, 88));
}

#[tokio::test]
async fn timeout_and_cancel_free_the_slot_and_tell_the_server() {
    let (s, stderr) = session(&[]).await;
    let err = s.call_tool("slow", json!({ "ms": 5000 }), Duration::from_millis(200), None).await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    // Ids: initialize was 0, this call was 1.
    stderr.wait_for("cancelled 1").await;
    let token = CancellationToken::new();
    let canceller = {
        let token = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            token.cancel();
        })
    };
    let started = std::time::Instant::now();
    let err = s.call_tool("slow", json!({ "ms": 5000 }), LONG, Some(&token)).await.unwrap_err();
    assert!(matches!(err, ClientError::Cancelled { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    canceller.await.unwrap();
    stderr.wait_for("cancelled 2").await;
    // The connection still works, and the late answers are ignored.
    assert!(s.call_tool("echo", json!({}), LONG, None).await.is_ok());
}

#[tokio::test]
async fn an_oversized_frame_fails_the_connection_with_a_reason() {
    let (s, _) = session(&[]).await;
    let err = s.call_tool("big_frame", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Closed { reason } if reason.contains("more than 4194304 bytes")), "{err}");
    assert!(s.closed_reason().unwrap().contains("4194304"));
    assert!(matches!(s.call_tool("echo", json!({}), LONG, None).await, Err(ClientError::Closed { .. })));
    s.close().await;
}

#[tokio::test]
async fn a_line_that_is_not_json_is_skipped_and_the_connection_keeps_working() {
    let (s, _) = session(&[]).await;
    let result = s.call_tool("bad_json", json!({}), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), "after a bad line", "the answer after the bad line reaches its caller");
    assert!(s.closed_reason().is_none(), "one bad line does not fail the connection");
    let result = s.call_tool("echo", json!({ "still": "here" }), LONG, None).await.unwrap();
    assert!(text_of(&result).contains("still"));
    s.close().await;
}

/// Answers sampling slowly, or panics, as told.
struct Slow {
    panic: bool,
}

#[async_trait]
impl ServerRequests for Slow {
    async fn handle(&self, _method: &str, _params: Option<Value>, _related: Option<u64>) -> Result<Value, WireError> {
        if self.panic {
            panic!("handler bug");
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        Ok(json!({ "role": "assistant", "content": { "type": "text", "text": "ok" }, "model": "m" }))
    }
}

#[tokio::test]
async fn a_request_flood_is_refused_past_16_without_blocking_responses() {
    let (s, stderr) = session_with(&[], Arc::new(Slow { panic: false })).await;
    let result = s.call_tool("flood", json!({ "n": 40 }), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), "sent 40 requests");
    // Responses keep flowing while 16 requests are being served.
    assert!(s.call_tool("echo", json!({}), LONG, None).await.is_ok());
    let seen = stderr.wait_for("answer \"s39\"").await;
    let busy = seen.matches(&format!("error {SERVER_BUSY}")).count();
    assert_eq!(busy, 24, "{seen}");
    stderr.wait_for(&format!("answer \"s{}\" result", 15)).await;
    let served = stderr.text().matches(" result {").count();
    assert_eq!(served, 16);
}

#[tokio::test]
async fn ping_unknown_requests_and_panicking_handlers() {
    let (s, stderr) = session(&[]).await;
    s.call_tool("ask_ping", json!({}), LONG, None).await.unwrap();
    stderr.wait_for("answer \"p1\" result {}").await;
    s.call_tool("ask_unknown", json!({}), LONG, None).await.unwrap();
    stderr.wait_for(&format!("answer \"u1\" error {METHOD_NOT_FOUND}")).await;
    let (s, stderr) = session_with(&[], Arc::new(Slow { panic: true })).await;
    s.call_tool("flood", json!({ "n": 1 }), LONG, None).await.unwrap();
    stderr.wait_for(&format!("answer \"s0\" error {INTERNAL_ERROR}")).await;
    assert!(s.call_tool("echo", json!({}), LONG, None).await.is_ok(), "a panic is contained");
}

#[tokio::test]
async fn a_server_exiting_mid_call_closes_the_connection_with_its_status_and_close_reaps_it() {
    let (s, stderr) = session(&["--stderr-noise"]).await;
    stderr.wait_for("noise line 49").await;
    let err = s.call_tool("exit", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Closed { reason } if reason == "the server exited (status 3)"), "{err}");
    let pgid = s.process_group().unwrap();
    s.close().await;
    assert!(nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_err(), "the group is gone");
}

#[tokio::test]
async fn close_ends_a_running_server_and_its_group() {
    let (s, stderr) = session(&[]).await;
    let pgid = s.process_group().unwrap();
    s.close().await;
    let _ = stderr;
    assert!(nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_err(), "the group is gone");
    assert!(matches!(s.call_tool("echo", json!({}), LONG, None).await, Err(ClientError::Closed { .. })));
}

async fn connect(args: &[&str]) -> Result<Session, ClientError> {
    let opening = Opening::new(Arc::new(NoServerRequests), client(), json!({})).stderr(Arc::new(Captured::default()));
    Session::connect(&Target::Stdio(spec(args)), opening).await
}

fn starts(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map(|s| s.lines().count()).unwrap_or(0)
}

#[tokio::test]
async fn a_modern_server_keeps_the_probe_process_and_gets_the_envelope() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("starts");
    let s = connect(&["--modern", "--starts-file", file.to_str().unwrap()]).await.unwrap();
    assert_eq!(s.era, clat_mcp::Era::Modern);
    assert_eq!(s.protocol_version, "2026-07-28");
    assert_eq!(s.server_info["name"], "modern-test-server");
    assert_eq!(starts(&file), 1, "the probe's process is kept");
    // The server refuses any request without the _meta envelope, so these prove it is sent.
    assert_eq!(s.list_tools().await.unwrap().tools.len(), 3);
    let result = s.call_tool("echo", json!({ "m": 1 }), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), r#"{"m":1}"#, "a missing resultType counts as complete");
    let err = s.call_tool("needs_input", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Unsupported(m) if m.contains("roots/list")), "input CLAT cannot give: {err}");
    let err = s.call_tool("odd_result", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Protocol(m) if m.contains("something-else")), "{err}");
    s.close().await;
}

#[tokio::test]
async fn a_legacy_server_gets_a_fresh_process_for_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    for flags in [&[][..], &["--strict-legacy"][..]] {
        let file = dir.path().join(format!("starts{}", flags.len()));
        let mut args = flags.to_vec();
        let path = file.to_str().unwrap().to_string();
        args.extend(["--starts-file", &path]);
        let s = connect(&args).await.unwrap();
        assert_eq!(s.era, clat_mcp::Era::Legacy);
        assert_eq!(s.protocol_version, "2025-11-25");
        assert_eq!(starts(&file), 2, "probe process + fresh legacy process ({flags:?})");
        assert!(s.call_tool("echo", json!({}), LONG, None).await.is_ok());
        s.close().await;
    }
}

#[tokio::test]
async fn a_recognized_modern_error_never_falls_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("starts");
    let err = connect(&["--modern-reject", "--starts-file", file.to_str().unwrap()]).await.err().unwrap();
    assert!(matches!(&err, ClientError::Unsupported(m) if m.contains("2027-01-01")), "{err}");
    assert_eq!(starts(&file), 1, "no legacy fallback after -32022");
}

#[tokio::test]
async fn sixty_four_concurrent_calls_answered_out_of_order_reach_their_callers() {
    let (s, _) = session(&[]).await;
    let s = Arc::new(s);
    let mut calls = Vec::new();
    for i in 0..64u64 {
        let s = s.clone();
        // Later calls sleep less, so answers come back in reverse order.
        let ms = 20 + (63 - i) * 8;
        calls.push(tokio::spawn(async move { (ms, s.call_tool("slow", json!({ "ms": ms }), LONG, None).await) }));
    }
    for call in calls {
        let (ms, result) = call.await.unwrap();
        assert_eq!(text_of(&result.unwrap()), format!("slept {ms} ms"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_written_inline_and_queued_arrive_whole_and_each_answer_reaches_its_caller() {
    // Around the size a pipe takes atomically (a line written straight from the
    // caller) and past it (a line left to the writer task), at once on two threads.
    let (s, _) = session(&[]).await;
    let s = Arc::new(s);
    let mut calls = Vec::new();
    for i in 0..96usize {
        let s = s.clone();
        let size = [8, 4000, 4200, 70_000][i % 4] + i;
        calls.push(tokio::spawn(async move {
            let message = "x".repeat(size);
            let result = s.call_tool("echo", json!({ "message": message }), LONG, None).await.unwrap();
            (message, text_of(&result))
        }));
    }
    for call in calls {
        let (message, echoed) = call.await.unwrap();
        assert_eq!(echoed, json!({ "message": message }).to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_writer_queue_senders_wait_for_a_server_that_stopped_reading_and_lose_nothing() {
    use clat_mcp::Transport;
    use clat_mcp::jsonrpc::Message;
    use clat_mcp::limits::WRITER_QUEUE;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // The server sleeps 3 s in `initialize` without reading its input: the
    // pipe fills, then the writer's hands, then the queue; later senders wait.
    let stderr = Arc::new(Captured::default());
    let conn = Arc::new(Connection::spawn(&spec(&["--delay-initialize", "3000"]), stderr.clone()).await.unwrap());
    let init = {
        let conn = Arc::clone(&conn);
        tokio::spawn(async move {
            let params = json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } });
            conn.request("initialize", Some(params), LONG, None, None).await
        })
    };
    const SENT: usize = 300;
    let done = Arc::new(AtomicUsize::new(0));
    let sender = {
        let (conn, done) = (Arc::clone(&conn), Arc::clone(&done));
        tokio::spawn(async move {
            for i in 0..SENT {
                // 8 KiB each: past what is written inline, so each one queues.
                let padding = Some(json!({ "i": i, "pad": "x".repeat(8192) }));
                conn.send(Message::Notification { method: "notifications/padding".into(), params: padding })
                    .await
                    .unwrap();
                done.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let while_stalled = done.load(Ordering::SeqCst);
    assert!(while_stalled >= WRITER_QUEUE, "the queue fills first: {while_stalled} sent");
    assert!(while_stalled < SENT, "past the queue, senders wait: all {SENT} went while the server read nothing");
    sender.await.unwrap();
    assert_eq!(done.load(Ordering::SeqCst), SENT);
    assert!(init.await.unwrap().is_ok(), "the request queued behind the stall is answered");
    // The server reads its lines in order: an answer to a later call means it
    // has read every padding line, and none of them arrived broken.
    let echoed = conn.request("tools/call", Some(json!({ "name": "echo", "arguments": {} })), LONG, None, None).await;
    assert!(echoed.is_ok(), "{echoed:?}");
    assert!(!stderr.text().contains("bad line"), "{}", stderr.text());
    conn.close().await;
}

#[tokio::test]
async fn closing_kills_grandchildren_in_the_servers_group() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild");
    let (s, _) = session(&["--grandchild-pid-file", pid_file.to_str().unwrap()]).await;
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let alive = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
            .unwrap_or(false)
    };
    assert!(alive());
    s.close().await;
    for _ in 0..200 {
        if !alive() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the grandchild {pid} survived the close");
}

#[tokio::test]
async fn a_server_that_ignores_end_of_input_is_killed_after_the_grace() {
    let (s, _) = session(&["--ignore-eof"]).await;
    let pgid = s.process_group().unwrap();
    let started = std::time::Instant::now();
    s.close().await;
    assert!(started.elapsed() >= clat_mcp::limits::CLOSE_GRACE, "it got the grace first");
    assert!(nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None).is_err(), "then the group was killed");
}
