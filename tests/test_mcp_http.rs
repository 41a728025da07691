//! The MCP client over Streamable HTTP against `clat-test-mcp-server --http`
//! on 127.0.0.1: both eras, JSON and SSE answers, the session header and its
//! expiry, server requests on a call's stream answered by a separate POST,
//! resumption with `Last-Event-ID` after `retry`, timeouts and cancel, the
//! modern headers (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` with the base64
//! sentinel, invalid declarations dropped), and bad input: oversize bodies,
//! 5xx, wrong content types, non-JSON, 401, redirects to another host.

mod support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clat_mcp::{
    ClientError, ClientInfo, Era, HttpSpec, NoServerRequests, Opening, ServerRequests, Session, Target, WireError,
};
use serde_json::{Value, json};
use support::{HttpServer, TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;
const LONG: Duration = Duration::from_secs(30);

fn client() -> ClientInfo {
    ClientInfo { name: "clat-test".into(), version: "0".into() }
}

async fn connect(server: &HttpServer) -> Session {
    open(&server.spec(), Arc::new(NoServerRequests)).await.unwrap()
}

/// A session with `spec`, `handler` serving the server's requests, at the spec's handshake bound.
async fn open(spec: &HttpSpec, handler: Arc<dyn ServerRequests>) -> Result<Session, ClientError> {
    Session::connect(&Target::Http(spec.clone()), Opening::new(handler, client(), json!({}))).await
}

fn text_of(result: &Value) -> String {
    result["content"][0]["text"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn legacy_sessions_echo_their_id_and_version_and_end_with_delete() {
    for flags in [&[][..], &["--sse"][..]] {
        let server = HttpServer::start(flags);
        let s = connect(&server).await;
        assert_eq!((s.era, s.protocol_version.as_str()), (Era::Legacy, "2025-11-25"), "{flags:?}");
        let names: Vec<String> =
            s.list_tools().await.unwrap().tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
        assert!(names.contains(&"echo".to_string()));
        let result = s.call_tool("echo", json!({ "a": 1 }), LONG, None).await.unwrap();
        assert_eq!(text_of(&result), r#"{"a":1}"#, "{flags:?}: JSON and SSE answers read alike");
        s.close().await;
        let log = server.log();
        let call = log.iter().find(|l| l.starts_with("POST tools/call")).unwrap();
        assert!(call.contains("session=session-1") && call.contains("version=2025-11-25"), "{call}");
        assert!(
            log.iter()
                .any(|l| l
                    == "POST notifications/initialized session=session-1 version=2025-11-25 mcp-method= mcp-name= ")
        );
        assert!(log.iter().any(|l| l == "DELETE session=session-1 version=2025-11-25"), "{log:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_meeting_an_expired_session_reopen_it_once() {
    let server = HttpServer::start(&["--expire-after", "1"]);
    let s = Arc::new(connect(&server).await);
    s.call_tool("echo", json!({}), LONG, None).await.unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..8 {
        let s = Arc::clone(&s);
        calls.spawn(async move { s.call_tool("slow", json!({ "ms": 50, "i": i }), LONG, None).await });
    }
    while let Some(r) = calls.join_next().await {
        r.unwrap().unwrap();
    }
    let log = server.log();
    assert_eq!(log.iter().filter(|l| l.starts_with("POST initialize")).count(), 2, "one reopen: {log:?}");
    s.close().await;
}

#[tokio::test]
async fn an_expired_session_is_reopened_once_and_the_call_goes_through() {
    let server = HttpServer::start(&["--expire-after", "2"]);
    let s = connect(&server).await;
    for i in 0..4 {
        let result = s.call_tool("echo", json!({ "i": i }), LONG, None).await.unwrap();
        assert_eq!(text_of(&result), format!(r#"{{"i":{i}}}"#));
    }
    let log = server.log();
    assert_eq!(log.iter().filter(|l| l.starts_with("POST initialize")).count(), 2, "{log:?}");
    assert!(log.iter().any(|l| l.starts_with("POST tools/call session=session-2")), "{log:?}");
    // The server's own stream is opened again for the new session.
    for _ in 0..200 {
        if server.log().iter().filter(|l| *l == "GET last-event-id=").count() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(server.log().iter().filter(|l| *l == "GET last-event-id=").count(), 2, "{:?}", server.log());
    s.close().await;
}

/// Answers sampling with a fixed text.
struct Sampler;

#[async_trait]
impl ServerRequests for Sampler {
    async fn handle(&self, method: &str, _params: Option<Value>, _related: Option<u64>) -> Result<Value, WireError> {
        assert_eq!(method, "sampling/createMessage");
        Ok(json!({ "role": "assistant", "content": { "type": "text", "text": "from the client" }, "model": "m" }))
    }
}

#[tokio::test]
async fn a_server_request_on_the_call_stream_is_answered_with_a_separate_post() {
    let server = HttpServer::start(&[]);
    let s = open(&server.spec(), Arc::new(Sampler)).await.unwrap();
    let args = json!({ "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 5 } });
    let result = s.call_tool("ask_host", args, LONG, None).await.unwrap();
    let answer: Value = serde_json::from_str(&text_of(&result)).unwrap();
    assert_eq!(answer["result"]["content"]["text"], "from the client", "{answer}");
    assert!(server.log().iter().any(|l| l.starts_with("POST (answer) session=session-1")), "{:?}", server.log());
    s.close().await;
}

#[tokio::test]
async fn a_dropped_stream_is_resumed_with_last_event_id_after_retry() {
    let server = HttpServer::start(&[]);
    let s = connect(&server).await;
    let result = s.call_tool("sse_drop", json!({}), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), "resumed");
    assert!(server.log().iter().any(|l| l == "GET last-event-id=e1"), "{:?}", server.log());
    // A stream that ends with nothing to resume from is a clear failure.
    let err = s.call_tool("sse_no_answer", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Protocol(m) if m.contains("ended without a response")), "{err}");
    s.close().await;
}

#[tokio::test]
async fn resumption_stops_after_five_attempts() {
    let server = HttpServer::start(&[]);
    let s = connect(&server).await;
    let err = s.call_tool("sse_drop_forever", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Protocol(m) if m.contains("ended without a response")), "{err}");
    let resumes = server.log().iter().filter(|l| l.starts_with("GET last-event-id=drop-")).count();
    assert_eq!(resumes, clat_mcp::limits::HTTP_SSE_RESUMES_MAX, "{:?}", server.log());
    s.close().await;
}

#[tokio::test]
async fn a_server_that_never_acknowledges_a_notification_fails_within_the_one_way_timeout() {
    let server = HttpServer::start(&["--stall-notifications"]);
    let err = open(&server.spec(), Arc::new(NoServerRequests)).await.unwrap_err();
    assert!(matches!(&err, ClientError::Http(m) if m.contains("timed out")), "{err}");
}

#[tokio::test]
async fn a_slow_loris_stream_times_out_and_cancel_ends_the_wait_and_tells_the_server() {
    let server = HttpServer::start(&[]);
    let s = connect(&server).await;
    let err = s.call_tool("slow_loris", json!({}), Duration::from_millis(500), None).await.unwrap_err();
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    let cancel = tokio_util::sync::CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        trigger.cancel();
    });
    let err = s.call_tool("slow", json!({ "ms": 20_000 }), LONG, Some(&cancel)).await.unwrap_err();
    assert!(matches!(err, ClientError::Cancelled { .. }), "{err}");
    for _ in 0..200 {
        if server.log().iter().filter(|l| l.starts_with("POST notifications/cancelled")).count() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        server.log().iter().filter(|l| l.starts_with("POST notifications/cancelled")).count(),
        2,
        "legacy: both ended requests are cancelled on the wire: {:?}",
        server.log()
    );
    s.close().await;
}

#[tokio::test]
async fn bad_answers_fail_that_call_only() {
    let server = HttpServer::start(&[]);
    let s = connect(&server).await;
    let err = s.call_tool("big_frame", json!({}), LONG, None).await.unwrap_err();
    assert!(err.to_string().contains("more than 4194304 bytes"), "{err}");
    let err = s.call_tool("fail_500", json!({}), LONG, None).await.unwrap_err();
    assert!(matches!(&err, ClientError::Http(m) if m.contains("500")), "{err}");
    let err = s.call_tool("wrong_type", json!({}), LONG, None).await.unwrap_err();
    assert!(err.to_string().contains("text/plain"), "{err}");
    let err = s.call_tool("not_json", json!({}), LONG, None).await.unwrap_err();
    assert!(err.to_string().contains("not JSON-RPC"), "{err}");
    let result = s.call_tool("echo", json!({ "still": true }), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), r#"{"still":true}"#, "the server is still usable");
    s.close().await;

    let server = HttpServer::start(&["--sse"]);
    let s = connect(&server).await;
    let err = s.call_tool("big_frame", json!({}), LONG, None).await.unwrap_err();
    assert!(err.to_string().contains("more than 4194304 bytes"), "an oversize event too: {err}");
    let err = s.call_tool("many_lines", json!({}), LONG, None).await.unwrap_err();
    assert!(err.to_string().contains("more than 4194304 bytes"), "an event of many short lines too: {err}");
    s.close().await;
}

#[tokio::test]
async fn credentials_and_redirects_fail_clearly_without_leaking_headers() {
    let server = HttpServer::start(&["--require-auth", "sekrit-token-123456"]);
    let err = open(&server.spec(), Arc::new(NoServerRequests)).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("401") && text.contains("credentials"), "{text}");
    // The server echoes the credential it refused; the error never carries it.
    let wrong = HttpSpec {
        url: server.url.clone(),
        headers: vec![("Authorization".into(), "Bearer wrong-token-abcdef-987654".into())],
        auth: None,
    };
    let err = open(&wrong, Arc::new(NoServerRequests)).await.unwrap_err();
    assert!(err.to_string().contains("wrong bearer token: [REDACTED]"), "{err}");
    assert!(!err.to_string().contains("abcdef-987654"), "{err}");
    let with_token = HttpSpec {
        url: server.url.clone(),
        headers: vec![("Authorization".into(), "Bearer sekrit-token-123456".into())],
        auth: None,
    };
    let s = open(&with_token, Arc::new(NoServerRequests)).await.unwrap();
    assert_eq!(text_of(&s.call_tool("echo", json!({}), LONG, None).await.unwrap()), "{}");
    s.close().await;

    // TLS to a server that does not speak it: a clear HTTP failure naming the URL, not the headers.
    let tls = HttpSpec {
        url: server.url.replace("http://", "https://"),
        headers: vec![("Authorization".into(), "Bearer sekrit-token-123456".into())],
        auth: None,
    };
    let err = open(&tls, Arc::new(NoServerRequests)).await.unwrap_err();
    assert!(matches!(&err, ClientError::Http(m) if m.contains("https://127.0.0.1")), "{err}");
    assert!(!err.to_string().contains("sekrit"), "{err}");

    let redirecting = HttpServer::start(&["--redirect", "http://127.0.0.2:9/mcp"]);
    let err = open(&redirecting.spec(), Arc::new(NoServerRequests)).await.unwrap_err();
    assert!(err.to_string().contains("redirected to 127.0.0.2"), "{err}");
}

#[tokio::test]
async fn modern_requests_carry_the_headers_and_invalid_header_tools_are_dropped() {
    let server = HttpServer::start(&["--modern"]);
    let s = connect(&server).await;
    assert_eq!((s.era, s.protocol_version.as_str()), (Era::Modern, "2026-07-28"));
    let listing = s.list_tools().await.unwrap();
    let names: Vec<&str> = listing.tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"region") && !names.contains(&"bad_header"), "{names:?}");
    assert!(listing.unusable.iter().any(|u| u.contains("bad_header")), "{:?}", listing.unusable);
    let result = s.call_tool("region", json!({ "region": "eu-west", "count": 3 }), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), r#"region "eu-west""#);
    s.call_tool("region", json!({ "region": "Zürich " }), LONG, None).await.unwrap();
    let calls: Vec<String> = server.log().into_iter().filter(|l| l.starts_with("POST tools/call")).collect();
    assert_eq!(
        calls[0],
        "POST tools/call session= version=2026-07-28 mcp-method=tools/call mcp-name=region mcp-param-count=3 mcp-param-region=eu-west"
    );
    let encoded = format!("=?base64?{}?=", base64_of("Zürich "));
    assert!(calls[1].ends_with(&format!("mcp-param-region={encoded}")), "{}", calls[1]);
    s.close().await;
    assert!(!server.log().iter().any(|l| l.starts_with("DELETE")), "no session, no DELETE");
}

#[tokio::test]
async fn a_header_mismatch_lists_the_tools_again_and_retries_once() {
    let server = HttpServer::start(&["--modern", "--mismatch-once"]);
    let s = connect(&server).await;
    s.list_tools().await.unwrap();
    let result = s.call_tool("region", json!({ "region": "eu" }), LONG, None).await.unwrap();
    assert_eq!(text_of(&result), r#"region "eu""#);
    let log = server.log();
    assert_eq!(log.iter().filter(|l| l.starts_with("POST tools/list")).count(), 2, "{log:?}");
    assert_eq!(log.iter().filter(|l| l.starts_with("POST tools/call")).count(), 2, "{log:?}");
    s.close().await;
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn url_entries_mount_beside_stdio_servers_and_a_failing_one_is_isolated() {
    let legacy = HttpServer::start(&["--sse"]);
    let modern = HttpServer::start(&["--modern"]);
    let locked = HttpServer::start(&["--require-auth", "right-token-abcdef"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "web": { "url": legacy.url },
        "modern-web": { "url": modern.url },
        "locked": { "url": locked.url, "headers": { "Authorization": "Bearer wrong-token-secret-123" } },
        "local": { "command": SERVER }
    }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(7), "one server failed: {}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let server = |name: &str| v["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(server("web")["transport"], "streamable-http");
    assert_eq!(server("web")["protocol"], "2025-11-25 (legacy)");
    assert_eq!(server("modern-web")["protocol"], "2026-07-28 (modern)");
    assert_eq!(server("local")["state"], "ready");
    assert_eq!(server("locked")["state"], "failed");
    assert!(server("locked")["problems"][0].as_str().unwrap().contains("401"), "{v}");
    assert!(!stdout(&out).contains("wrong-token-secret-123"), "headers never appear");
    assert!(server("modern-web")["problems"][0].as_str().unwrap().contains("bad_header"), "{v}");

    // A call the registry abandons (its run's deadline) is cancelled on the wire.
    let scope = env.mount();
    scope.load_mcp_servers().await;
    let run = clat_host::run::RunContext::builder()
        .mode(clat_host::contract::PermissionMode::FullAccess)
        .deadline(Duration::from_millis(300))
        .start();
    let err = scope.registry().call("mcp_web_slow", json!({ "ms": 5000 }), &run).await.unwrap_err();
    assert!(matches!(err, clat_host::registry::CallError::TimedOut { .. }), "{err}");
    for _ in 0..300 {
        if legacy.log().iter().any(|l| l.starts_with("POST notifications/cancelled")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(legacy.log().iter().any(|l| l.starts_with("POST notifications/cancelled")), "{:?}", legacy.log());
    scope.close().await;

    let out = env.clat(&["call", "mcp_web_echo", r#"{"over":"http"}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"over\":\"http\"}\n");
    let out = env.clat(&["call", "mcp_modern_web_region", r#"{"region":"ap"}"#, "--mode", "full-access"]);
    assert_eq!(stdout(&out), "region \"ap\"\n", "{}", stderr(&out));
    assert!(legacy.log().iter().any(|l| l.starts_with("DELETE")), "the session ends with the scope");
}

#[test]
fn the_session_delete_after_a_call_carries_the_negotiated_version() {
    let server = HttpServer::start(&[]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url } }));
    let out = env.clat(&["call", "mcp_web_echo", r#"{"a":1}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = server.log();
    let delete = log.iter().find(|l| l.starts_with("DELETE ")).unwrap_or_else(|| panic!("no DELETE: {log:?}"));
    assert!(delete.ends_with("version=2025-11-25"), "{delete}");
}
