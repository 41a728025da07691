//! Host services as guests use them: context, the six host tools through the
//! current run's permission pipeline and path fence (audited in events),
//! sampling with its gates, elicitation, and bounded redacted logs. Nothing is
//! served outside an active run.

mod support;

use std::sync::Arc;
use std::time::Duration;

use clat_guest_artifacts as guests;
use clat_host::contract::{HostError, HostTool, PermissionMode};
use clat_host::run::RunEventKind;
use serde_json::json;
use support::wasm::load_into;
use support::{TestEnv, run_in, text};

#[tokio::test]
async fn context_carries_project_and_run() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_t_context", json!({}), &run).await.unwrap();
    assert_eq!(text(&out), format!("project=project run={}", run.run_id()));
}

#[tokio::test]
async fn host_tools_pass_the_fence_and_the_runs_mode() {
    let env = TestEnv::trusted();
    env.write("notes/a.txt", "TODO: write tests\n");
    std::fs::write(env.dir.path().join("secret.txt"), "secret").unwrap();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let call = |tool: &str, arguments: serde_json::Value| json!({ "tool": tool, "arguments": arguments });

    let (run, sink) = run_in(PermissionMode::ReadOnly);
    let out = scope
        .registry()
        .call("wasm_t_host_call", call("read_file", json!({ "path": "notes/a.txt" })), &run)
        .await
        .unwrap();
    assert_eq!(text(&out), "ok: TODO: write tests\n");
    let audited = sink.events().iter().any(
        |e| matches!(&e.kind, RunEventKind::HostToolCall { source, tool } if source == "wasm:t" && tool == "read_file"),
    );
    assert!(audited, "host tool calls are audited");

    let out = scope
        .registry()
        .call("wasm_t_host_call", call("read_file", json!({ "path": "../secret.txt" })), &run)
        .await
        .unwrap();
    assert!(out.is_error && text(&out).contains("leaves the project root"), "{}", text(&out));

    let write = call("write_file", json!({ "path": "out.txt", "content": "from the guest" }));
    let out = scope.registry().call("wasm_t_host_call", write.clone(), &run).await.unwrap();
    assert!(out.is_error && text(&out).contains("denied"), "{}", text(&out));
    assert!(!env.project.join("out.txt").exists());

    let (run, _) = run_in(PermissionMode::AutoEdit);
    let out = scope.registry().call("wasm_t_host_call", write, &run).await.unwrap();
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(env.read("out.txt"), "from the guest");

    let out = scope
        .registry()
        .call("wasm_t_host_call", call("run_command", json!({ "command": "echo hi" })), &run)
        .await
        .unwrap();
    assert!(
        out.is_error && text(&out).contains("denied"),
        "run_command asks in auto-edit, and headless denies: {}",
        text(&out)
    );
}

#[tokio::test]
async fn project_notes_uses_search_and_read_file_through_the_host() {
    let env = TestEnv::trusted();
    env.write("src/lib.rs", "fn a() {}\n// TODO: make b faster\nfn b() {}\n");
    let scope = env.mount();
    load_into(&scope, "project-notes", guests::PROJECT_NOTES_WASM).await;
    let (run, _) = run_in(PermissionMode::ReadOnly);
    let out = scope.registry().call("wasm_project_notes_todos", json!({}), &run).await.unwrap();
    let body = text(&out);
    assert!(body.contains("1 note(s)"), "{body}");
    assert!(body.contains("src/lib.rs:2: // TODO: make b faster"), "{body}");
    assert!(body.contains("around src/lib.rs:2:\nfn a() {}"), "{body}");
}

#[tokio::test]
async fn sampling_from_a_guest_uses_the_session_model_and_the_shared_budget() {
    let env = TestEnv::trusted();
    env.write("README.md", "A small project about sampling.\n");
    let scope = env.mount();
    load_into(&scope, "summarize", guests::SUMMARIZE_WASM).await;
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, sink) = run_in(PermissionMode::FullAccess);
    let out = scope.registry().call("wasm_summarize_file", json!({ "path": "README.md" }), &run).await.unwrap();
    assert!(text(&out).contains("(model: clat-offline-1)"), "{}", text(&out));
    assert!(sink.events().iter().any(|e| matches!(&e.kind, RunEventKind::Sampling { source, outcome, .. } if source == "wasm:summarize" && outcome == "completed")));

    let out = scope.registry().call("wasm_t_sampling_flood", json!({}), &run).await.unwrap();
    assert_eq!(text(&out), "completed 63, then: budget exhausted: the run's sampling budget of 64 requests is used up");

    let (run, _) = run_in(PermissionMode::FullAccess);
    let out = scope.registry().call("wasm_t_sample", json!({ "messages": 33 }), &run).await.unwrap();
    assert!(out.is_error && text(&out).contains("33 messages"), "{}", text(&out));
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_t_sample", json!({}), &run).await.unwrap();
    assert!(out.is_error && text(&out).contains("denied"), "headless runs deny the sampling dialog: {}", text(&out));
}

#[tokio::test]
async fn elicitation_from_a_guest_fails_cleanly_headless_and_checks_limits() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_t_elicit", json!({}), &run).await.unwrap();
    assert!(out.is_error && text(&out).contains("unsupported") && text(&out).contains("headless"), "{}", text(&out));
    let out = scope.registry().call("wasm_t_elicit", json!({ "choices": 17 }), &run).await.unwrap();
    assert!(out.is_error && text(&out).contains("17 choices"), "{}", text(&out));
    let out = scope.registry().call("wasm_t_nested_form", json!({}), &run).await.unwrap();
    assert!(out.is_error && text(&out).contains("17 fields"), "{}", text(&out));
    // The next call still works.
    assert!(scope.registry().call("wasm_t_echo", json!({}), &run).await.is_ok());
}

#[tokio::test]
async fn ask_name_greets_through_a_form() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "ask-name", guests::ASK_NAME_WASM).await;
    let asker =
        clat_host::services::asker::LineAsker::new(std::io::Cursor::new(b"Grace\nabc\n85\n".to_vec()), Vec::new());
    let run = clat_host::run::RunContext::builder().asker(Arc::new(asker)).start();
    let out = scope.registry().call("wasm_ask_name_greet_user", json!({}), &run).await.unwrap();
    assert_eq!(text(&out), "Nice to meet you, Grace (85).");
}

/// Answers like a `LineAsker`, after the user has thought for a while (paused time).
struct SlowAsker(clat_host::services::asker::LineAsker<std::io::Cursor<Vec<u8>>, Vec<u8>>, Duration);

#[async_trait::async_trait]
impl clat_host::services::asker::UserAsker for SlowAsker {
    async fn ask(
        &self,
        question: &clat_host::services::asker::Question,
    ) -> Result<clat_host::services::asker::Answer, clat_host::services::asker::AskError> {
        tokio::time::sleep(self.1).await;
        self.0.ask(question).await
    }
}

#[tokio::test]
async fn a_guest_waiting_on_a_form_has_its_deadline_extended_like_an_mcp_server() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "ask-name", guests::ASK_NAME_WASM).await;
    tokio::time::pause();
    // The first answer takes 200 s: past the 120 s call limit, inside the extension.
    let asker = clat_host::services::asker::LineAsker::new(std::io::Cursor::new(b"Grace\n85\n".to_vec()), Vec::new());
    let sink = Arc::new(clat_host::run::CollectingSink::default());
    let run = clat_host::run::RunContext::builder()
        .asker(Arc::new(SlowAsker(asker, Duration::from_secs(100))))
        .events(sink.clone())
        .start();
    let out = scope.registry().call("wasm_ask_name_greet_user", json!({}), &run).await.unwrap();
    assert_eq!(text(&out), "Nice to meet you, Grace (85).");
    let steps: Vec<u64> = sink
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            RunEventKind::DeadlineExtended { extended_ms, .. } => Some(extended_ms),
            _ => None,
        })
        .collect();
    assert_eq!(steps, vec![60_000, 120_000], "two 100 s answers: 120 s + 2 × 60 s");
}

/// The messages of a run's `plugin_log` events.
fn plugin_logs(sink: &clat_host::run::CollectingSink) -> Vec<String> {
    sink.events()
        .into_iter()
        .filter_map(|e| match e.kind {
            RunEventKind::PluginLog { message, .. } => Some(message),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn logs_are_bounded_redacted_events() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, sink) = run_in(PermissionMode::Ask);
    scope.registry().call("wasm_t_log_spam", json!({}), &run).await.unwrap();
    let logs = plugin_logs(&sink);
    assert_eq!(logs.len(), 100);
    assert!(logs.iter().all(|l| l.contains("token=[REDACTED]") && !l.contains("sk-abc")), "{:?}", logs[0]);
    // Past the per-call cap, lines are dropped with one notice.
    let (run, sink) = run_in(PermissionMode::Ask);
    let limit = clat_host::limits::PLUGIN_LOG_LINES_PER_CALL as usize;
    scope.registry().call("wasm_t_log_spam", json!({ "lines": limit + 50 }), &run).await.unwrap();
    let logs = plugin_logs(&sink);
    assert_eq!(logs.len(), limit + 1);
    assert!(logs.last().unwrap().contains("further log lines of this call are dropped"));
}

#[tokio::test]
async fn nothing_but_context_and_log_is_served_outside_a_run() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let services = scope.services();
    let err = services
        .call_tool(HostTool::ReadFile, r#"{"path":"x"}"#, "wasm:t", &support::identity(), None)
        .await
        .unwrap_err();
    assert_eq!(err, HostError::NoActiveRun);
    let form = clat_host::contract::ElicitationForm { message: String::new(), fields: vec![] };
    assert_eq!(services.elicit(&form, "wasm:t", None).await.unwrap_err(), HostError::NoActiveRun);
    assert_eq!(services.snapshot(None).run, None);
    assert_eq!(services.snapshot(None).project_name, "project");
}

#[test]
fn snapshot_strings_past_their_bound_are_cut_at_a_character() {
    let max = clat_host::limits::SNAPSHOT_MAX_STRING_CHARS;
    let registry = Arc::new(clat_host::registry::Registry::new(&[]));
    let root = std::path::PathBuf::from(format!("/{}", "é".repeat(max + 10)));
    let session = "s".repeat(max);
    let services = clat_host::services::HostServices::new(
        &registry,
        Arc::new(clat_host::services::sampling::OfflineProvider),
        &root,
        &session,
    );
    let snapshot = services.snapshot(None);
    assert_eq!(snapshot.project_root.chars().count(), max, "cut");
    assert_eq!(snapshot.project_name, "é".repeat(max), "cut between characters, never inside one");
    assert_eq!(snapshot.session_id, session, "at the bound: whole");
}
