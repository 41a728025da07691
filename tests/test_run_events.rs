//! The pipeline around every call: run events in order and as JSON lines,
//! schema validation and argument size before anything runs, the tool-call
//! deadline and its extension while the tool waits on the host, prompt
//! cancellation, and the 1 MiB result limit (a larger result is cut, with a
//! marker, and is an error only when nothing of it fits).

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use clat_host::contract::json::tool_output_to_json;
use clat_host::contract::{BinaryContent, ContentBlock, Effect, PermissionMode, ToolOutput};
use clat_host::limits::{TOOL_ARGUMENTS_MAX_BYTES, TOOL_RESULT_MAX_BYTES};
use clat_host::registry::{CallError, Registry};
use clat_host::run::{CollectingSink, JsonLinesSink, RunContext, RunEventKind};
use serde_json::json;
use support::{FnTool, SlowTool, ok_tool, run_in};

fn registry() -> Registry {
    let registry = Registry::new(&["echo", "slow", "huge", "just_under", "wide", "picture"]);
    let schema =
        json!({ "type": "object", "properties": { "n": { "type": "integer" } }, "additionalProperties": true });
    registry.register_native("echo", "echo", schema.clone(), Effect::Read, ok_tool()).unwrap();
    registry
        .register_native("slow", "slow", schema.clone(), Effect::Read, Arc::new(SlowTool(Duration::from_secs(600))))
        .unwrap();
    registry
        .register_native(
            "huge",
            "huge",
            schema.clone(),
            Effect::Read,
            Arc::new(FnTool(|_| ToolOutput::text("x".repeat(TOOL_RESULT_MAX_BYTES)))),
        )
        .unwrap();
    registry
        .register_native(
            "just_under",
            "fits",
            schema,
            Effect::Read,
            Arc::new(FnTool(|_| ToolOutput::text("x".repeat(TOOL_RESULT_MAX_BYTES - 100)))),
        )
        .unwrap();
    let wide = || ToolOutput {
        content: vec![ContentBlock::Text("the summary".into())],
        structured: Some(json!({ "rows": "r".repeat(2 * TOOL_RESULT_MAX_BYTES) }).to_string()),
        is_error: false,
    };
    registry
        .register_native("wide", "wide", json!({ "type": "object" }), Effect::Read, Arc::new(FnTool(move |_| wide())))
        .unwrap();
    let picture = || ToolOutput {
        content: vec![
            ContentBlock::Image(BinaryContent {
                data: vec![7; 2 * TOOL_RESULT_MAX_BYTES],
                mime_type: "image/png".into(),
            }),
            ContentBlock::Text("after the picture".into()),
        ],
        structured: None,
        is_error: false,
    };
    registry
        .register_native(
            "picture",
            "picture",
            json!({ "type": "object" }),
            Effect::Read,
            Arc::new(FnTool(move |_| picture())),
        )
        .unwrap();
    registry
}

#[tokio::test]
async fn a_call_emits_started_permission_finished_in_order() {
    let registry = registry();
    let (run, sink) = run_in(PermissionMode::Ask);
    registry.call("echo", json!({ "n": 1 }), &run).await.unwrap();
    run.finish();
    run.finish();
    let kinds: Vec<RunEventKind> = sink.events().into_iter().map(|e| e.kind).collect();
    assert!(matches!(kinds[0], RunEventKind::RunStarted { ref mode } if mode == "ask"));
    assert!(
        matches!(kinds[1], RunEventKind::ToolStarted { call_id: 1, ref tool, ref effect, .. } if tool == "echo" && effect == "read")
    );
    assert!(matches!(kinds[2], RunEventKind::Permission { call_id: 1, allowed: true, .. }));
    assert!(matches!(kinds[3], RunEventKind::ToolFinished { call_id: 1, is_error: false, error: None, .. }));
    assert!(matches!(kinds[4], RunEventKind::RunFinished { cancelled: false }));
    assert_eq!(kinds.len(), 5, "run_finished is emitted once");
}

#[tokio::test]
async fn json_lines_sink_writes_one_object_per_event() {
    let registry = registry();
    let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let run = RunContext::builder().events(Arc::new(JsonLinesSink::new(Shared(buffer.clone())))).start();
    registry.call("echo", json!({}), &run).await.unwrap();
    run.finish();
    let text = String::from_utf8(buffer.lock().unwrap().clone()).unwrap();
    let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[1]["type"], "tool_started");
    assert_eq!(lines[1]["source"], "native");
    assert_eq!(lines[3]["type"], "tool_finished");
    assert!(lines[3]["duration_ms"].is_u64());
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_permission_or_dispatch() {
    let registry = registry();
    let (run, sink) = run_in(PermissionMode::Ask);
    let err = registry.call("echo", json!({ "n": "one" }), &run).await.unwrap_err();
    assert!(matches!(&err, CallError::InvalidArguments { reason, .. } if reason.contains("/n")), "{err}");
    assert!(!sink.events().iter().any(|e| matches!(e.kind, RunEventKind::Permission { .. })));
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(&e.kind, RunEventKind::ToolFinished { error: Some(_), is_error: true, .. }))
    );
    let huge = json!({ "blob": "x".repeat(TOOL_ARGUMENTS_MAX_BYTES) });
    let err = registry.call("echo", huge, &run).await.unwrap_err();
    assert!(err.to_string().contains("bytes of arguments exceed"), "{err}");
    let err = registry.call("nope", json!({}), &run).await.unwrap_err();
    assert!(matches!(err, CallError::UnknownTool(_)));
}

#[tokio::test]
async fn a_result_over_1_mib_is_cut_with_a_marker_and_is_an_error_only_when_nothing_fits() {
    let registry = registry();
    let (run, _) = run_in(PermissionMode::Ask);
    let marker = |out: &ToolOutput| match out.content.last() {
        Some(ContentBlock::Text(t)) => t.clone(),
        other => panic!("no marker: {other:?}"),
    };
    // One text block of exactly the limit: its head is kept, then the marker.
    let out = registry.call("huge", json!({}), &run).await.unwrap();
    assert!(!out.is_error, "a cut result is not an error");
    assert!(tool_output_to_json(&out).to_string().len() <= TOOL_RESULT_MAX_BYTES);
    let ContentBlock::Text(head) = &out.content[0] else { panic!() };
    assert!(head.len() > TOOL_RESULT_MAX_BYTES - 1024 && head.bytes().all(|b| b == b'x'), "{}", head.len());
    let text = marker(&out);
    assert!(
        text.contains("exceeds the 1048576-byte limit; it was cut here and") && text.contains("bytes were dropped"),
        "{text}"
    );
    let dropped: usize = text.split(" and ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((512..=1024).contains(&dropped), "what was dropped is counted: {dropped}");
    let out = registry.call("just_under", json!({}), &run).await.unwrap();
    assert!(!out.is_error && out.content.len() == 1, "a result within the limit is untouched");
    // Structured content that does not fit is dropped whole, and the marker says so.
    let out = registry.call("wide", json!({}), &run).await.unwrap();
    assert!(!out.is_error && out.structured.is_none());
    assert!(matches!(&out.content[0], ContentBlock::Text(t) if t == "the summary"));
    assert!(marker(&out).contains("its structured content did not fit and was dropped whole"), "{}", marker(&out));
    // Nothing fits (a 2 MiB picture first): an error for that call only.
    let out = registry.call("picture", json!({}), &run).await.unwrap();
    assert!(out.is_error);
    assert!(out.joined_text().contains("nothing of it could be kept"), "{}", out.joined_text());
    // The next call on the same run still works.
    assert!(registry.call("echo", json!({}), &run).await.is_ok());
}

#[tokio::test]
async fn the_run_deadline_caps_the_call_deadline() {
    let registry = registry();
    let run = RunContext::builder().deadline(Duration::from_millis(300)).start();
    let started = Instant::now();
    let err = registry.call("slow", json!({}), &run).await.unwrap_err();
    assert!(matches!(err, CallError::TimedOut { .. }), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(err.to_string().contains("timed out after 0."), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_call_times_out_at_120_seconds() {
    let registry = registry();
    let run = RunContext::builder().start();
    let err = registry.call("slow", json!({}), &run).await.unwrap_err();
    assert!(matches!(&err, CallError::TimedOut { after, .. } if after.as_secs_f64().round() == 120.0), "{err}");
}

#[tokio::test]
async fn cancel_ends_a_pending_call_promptly() {
    let registry = Arc::new(registry());
    let sink = Arc::new(CollectingSink::default());
    let run = RunContext::builder().events(sink.clone()).start();
    let call = {
        let (registry, run) = (registry.clone(), run.clone());
        tokio::spawn(async move { registry.call("slow", json!({}), &run).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    run.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), call).await.expect("the call ended").unwrap();
    assert!(matches!(result, Err(CallError::Cancelled { .. })));
    assert!(started.elapsed() < Duration::from_secs(5));
    // A cancelled run refuses new calls at once.
    assert!(matches!(registry.call("echo", json!({}), &run).await, Err(CallError::Cancelled { .. })));
    run.finish();
    assert!(sink.events().iter().any(|e| matches!(e.kind, RunEventKind::RunFinished { cancelled: true })));
}

/// Sleeps `0`, reporting `waiting_on_host` while the flag is set.
struct WaitsOnHost(Duration, Arc<std::sync::atomic::AtomicBool>);

#[async_trait::async_trait]
impl clat_host::registry::ToolHandler for WaitsOnHost {
    async fn call(
        &self,
        _arguments: serde_json::Value,
        _run: &RunContext,
    ) -> Result<ToolOutput, clat_host::registry::ToolError> {
        tokio::time::sleep(self.0).await;
        Ok(ToolOutput::text("answered after the host did"))
    }

    fn waiting_on_host(&self) -> bool {
        self.1.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn waiting_registry(work: Duration, waiting: bool) -> (Registry, Arc<std::sync::atomic::AtomicBool>) {
    let registry = Registry::new(&["waits"]);
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(waiting));
    let handler = Arc::new(WaitsOnHost(work, flag.clone()));
    registry.register_native("waits", "waits", json!({ "type": "object" }), Effect::Read, handler).unwrap();
    (registry, flag)
}

#[tokio::test(start_paused = true)]
async fn a_call_waiting_on_the_host_is_extended_in_60_s_steps_up_to_10_minutes() {
    use clat_host::limits::{HOST_REQUEST_EXTENSION_MAX, HOST_REQUEST_EXTENSION_STEP, TOOL_CALL_TIMEOUT};
    // Answers at 5 minutes: past 120 s, inside the extension.
    let (registry, _) = waiting_registry(Duration::from_secs(300), true);
    let sink = Arc::new(CollectingSink::default());
    let run = RunContext::builder().events(sink.clone()).start();
    let out = registry.call("waits", json!({}), &run).await.unwrap();
    assert_eq!(out.joined_text(), "answered after the host did");
    let steps: Vec<u64> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            RunEventKind::DeadlineExtended { extended_ms, .. } => Some(extended_ms),
            _ => None,
        })
        .collect();
    assert_eq!(steps, vec![60_000, 120_000, 180_000], "120 s + 3 × 60 s covers 300 s");
    assert_eq!(HOST_REQUEST_EXTENSION_STEP, Duration::from_secs(60));

    // Never answering: 120 s + 10 minutes, then timed out.
    let (registry, _) = waiting_registry(Duration::from_secs(3600), true);
    let run = RunContext::builder().start();
    let err = registry.call("waits", json!({}), &run).await.unwrap_err();
    let limit = (TOOL_CALL_TIMEOUT + HOST_REQUEST_EXTENSION_MAX).as_secs_f64();
    assert!(matches!(&err, CallError::TimedOut { after, .. } if after.as_secs_f64().round() == limit), "{err}");

    // Not waiting on the host: the plain 120 s.
    let (registry, _) = waiting_registry(Duration::from_secs(300), false);
    let err = registry.call("waits", json!({}), &RunContext::builder().start()).await.unwrap_err();
    assert!(matches!(&err, CallError::TimedOut { after, .. } if after.as_secs_f64().round() == 120.0), "{err}");
}

#[tokio::test(start_paused = true)]
async fn cancel_ends_a_call_at_once_even_while_it_is_extended() {
    let (registry, _) = waiting_registry(Duration::from_secs(3600), true);
    let registry = Arc::new(registry);
    let run = RunContext::builder().start();
    let call = {
        let (registry, run) = (registry.clone(), run.clone());
        tokio::spawn(async move { registry.call("waits", json!({}), &run).await })
    };
    tokio::time::sleep(Duration::from_secs(200)).await;
    run.cancel();
    let err = call.await.unwrap().unwrap_err();
    assert!(matches!(err, CallError::Cancelled { .. }), "{err}");
}

#[tokio::test]
async fn a_schema_reference_to_another_document_is_never_fetched() {
    // A canary: any connection to it would be a fetch.
    let canary = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    canary.set_nonblocking(true).unwrap();
    let url = format!("http://{}/profile-schema.json", canary.local_addr().unwrap());
    let registry = Registry::new(&[]);
    let spec = clat_host::contract::ToolSpec {
        name: "lookup_user".into(),
        title: None,
        description: "uses a local and a network $ref".into(),
        input_schema: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": { "userId": { "type": "string", "pattern": "^[a-z0-9-]+$" } },
            "properties": { "id": { "$ref": "#/$defs/userId" }, "profile": { "$ref": url } },
            "required": ["id"]
        })
        .to_string(),
        output_schema: None,
        annotations: Default::default(),
    };
    let name = registry
        .register_external(clat_host::names::ExternalKind::Mcp, "srv", &support::identity(), &spec, false, ok_tool())
        .unwrap();
    let (run, _) = run_in(PermissionMode::FullAccess);
    let ok = registry.call(&name, json!({ "id": "ada-1", "profile": { "anything": 1 } }), &run).await;
    assert!(ok.is_ok(), "the network reference accepts any value: {ok:?}");
    let err = registry.call(&name, json!({ "id": "NOT VALID" }), &run).await.unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "the local reference still validates: {err}");
    assert!(canary.accept().is_err(), "nothing connected to the referenced URL");
}
