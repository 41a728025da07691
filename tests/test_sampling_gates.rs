//! Extension sampling's three gates, in order — payload, run budget,
//! permission — with the failing case for each limit, and Full Access
//! skipping only the dialog. Every source goes through these same gates.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use clat_host::contract::{HostError, PermissionMode, Role, SamplingMessage, SamplingRequest};
use clat_host::limits::{SAMPLING_MAX_MESSAGES, SAMPLING_MAX_OUTBOUND_CHARS, SAMPLING_MAX_OUTPUT_TOKENS};
use clat_host::policy::permissions::{Approval, ApprovalRequest, Approver};
use clat_host::run::{CollectingSink, RunContext, RunEventKind};
use clat_host::services::budget::SamplingBudget;
use clat_host::services::sampling::{OfflineProvider, create_message};

fn request(messages: usize, chars_each: usize, max_tokens: u32) -> SamplingRequest {
    SamplingRequest {
        messages: (0..messages).map(|_| SamplingMessage { role: Role::User, text: "a".repeat(chars_each) }).collect(),
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: vec![],
        model_hints: vec!["some-other-model".into()],
    }
}

struct Recorder {
    asked: AtomicUsize,
    answer: Approval,
    last: std::sync::Mutex<Option<ApprovalRequest>>,
}

impl Recorder {
    fn new(answer: Approval) -> Arc<Self> {
        Arc::new(Recorder { asked: AtomicUsize::new(0), answer, last: Default::default() })
    }
}

#[async_trait]
impl Approver for Recorder {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        self.asked.fetch_add(1, Ordering::SeqCst);
        *self.last.lock().unwrap() = Some(request.clone());
        self.answer.clone()
    }
}

fn run(mode: PermissionMode, approver: Arc<Recorder>) -> (RunContext, Arc<CollectingSink>) {
    let sink = Arc::new(CollectingSink::default());
    (RunContext::builder().mode(mode).approver(approver).events(sink.clone()).start(), sink)
}

async fn sample(run: &RunContext, req: &SamplingRequest) -> Result<clat_host::contract::SamplingResult, HostError> {
    create_message(&OfflineProvider, req, "wasm:test", run).await
}

#[tokio::test]
async fn payload_limits_are_enforced_at_their_exact_edges() {
    let approver = Recorder::new(Approval::Approved);
    let (run, _) = run(PermissionMode::Ask, approver.clone());
    assert!(sample(&run, &request(SAMPLING_MAX_MESSAGES, 1, 10)).await.is_ok());
    let err = sample(&run, &request(SAMPLING_MAX_MESSAGES + 1, 1, 10)).await.unwrap_err();
    assert!(matches!(&err, HostError::Invalid(m) if m.contains("33 messages")), "{err:?}");

    assert!(sample(&run, &request(1, SAMPLING_MAX_OUTBOUND_CHARS, 10)).await.is_ok());
    let err = sample(&run, &request(1, SAMPLING_MAX_OUTBOUND_CHARS + 1, 10)).await.unwrap_err();
    assert!(matches!(&err, HostError::Invalid(m) if m.contains("262145 characters")), "{err:?}");
    let mut with_system = request(1, SAMPLING_MAX_OUTBOUND_CHARS - 5, 10);
    with_system.system_prompt = Some("123456".into());
    assert!(matches!(sample(&run, &with_system).await, Err(HostError::Invalid(_))), "the system prompt counts");

    assert!(sample(&run, &request(1, 1, SAMPLING_MAX_OUTPUT_TOKENS)).await.is_ok());
    let err = sample(&run, &request(1, 1, SAMPLING_MAX_OUTPUT_TOKENS + 1)).await.unwrap_err();
    assert!(matches!(&err, HostError::Invalid(m) if m.contains("8193 output tokens")), "{err:?}");
    // Payload refusals reserve nothing and ask nobody.
    assert_eq!(run.budget().requests(), 3);
    assert_eq!(approver.asked.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_65th_request_of_a_run_is_refused_across_sources() {
    let approver = Recorder::new(Approval::Approved);
    let (run, _) = run(PermissionMode::Ask, approver.clone());
    for i in 0..64 {
        let source = if i % 2 == 0 { "wasm:a" } else { "mcp:b" };
        create_message(&OfflineProvider, &request(1, 10, 10), source, &run).await.unwrap();
    }
    let err = sample(&run, &request(1, 10, 10)).await.unwrap_err();
    assert!(matches!(&err, HostError::BudgetExhausted(m) if m.contains("64 requests")), "{err:?}");
    assert_eq!(approver.asked.load(Ordering::SeqCst), 64, "the budget gate comes before the dialog");
}

#[tokio::test]
async fn the_token_guard_stops_big_requests() {
    let approver = Recorder::new(Approval::Approved);
    let budget = Arc::new(SamplingBudget::per_run());
    let sink = Arc::new(CollectingSink::default());
    let run = RunContext::builder().approver(approver).budget(budget.clone()).events(sink).start();
    // Reserve most of the guard directly (another source's reservation in flight).
    let held = budget.reserve(990_000).unwrap();
    let err = sample(&run, &request(1, 40_000, 8_000)).await.unwrap_err();
    assert!(matches!(&err, HostError::BudgetExhausted(m) if m.contains("tokens")), "{err:?}");
    drop(held);
    assert!(sample(&run, &request(1, 40_000, 8_000)).await.is_ok(), "released tokens are available again");
}

#[tokio::test]
async fn a_denied_approval_refuses_and_releases_the_reserved_tokens() {
    let approver = Recorder::new(Approval::Denied("not today".into()));
    let (run, sink) = run(PermissionMode::AutoEdit, approver.clone());
    let err = sample(&run, &request(2, 100, 50)).await.unwrap_err();
    assert_eq!(err, HostError::Denied("not today".into()));
    assert_eq!(run.budget().left().tokens, clat_host::limits::SAMPLING_TOKENS_PER_RUN);
    let shown = approver.last.lock().unwrap().clone().unwrap();
    assert_eq!(shown.arguments["messages"].as_array().unwrap().len(), 2);
    assert_eq!(shown.arguments["messages"][0]["text"], "a".repeat(100), "the complete payload, not a preview");
    assert_eq!(shown.arguments["maxTokens"], 50);
    assert!(
        sink.events()
            .iter()
            .any(|e| matches!(&e.kind, RunEventKind::Sampling { outcome, .. } if outcome == "refused: permission"))
    );
}

#[tokio::test]
async fn full_access_skips_only_the_dialog() {
    let approver = Recorder::new(Approval::Denied("would have said no".into()));
    let (run, sink) = run(PermissionMode::FullAccess, approver.clone());
    let result = sample(&run, &request(1, 40, 30)).await.unwrap();
    assert_eq!(approver.asked.load(Ordering::SeqCst), 0);
    assert_eq!(result.model, "clat-offline-1", "plugin model hints never select another model");
    assert!(sample(&run, &request(33, 1, 10)).await.is_err(), "the payload gate still applies");
    let tight = Arc::new(SamplingBudget::with_limits(1, 1_000_000));
    let run2 = RunContext::builder().mode(PermissionMode::FullAccess).approver(approver.clone()).budget(tight).start();
    sample(&run2, &request(1, 1, 10)).await.unwrap();
    assert!(
        matches!(sample(&run2, &request(1, 1, 10)).await, Err(HostError::BudgetExhausted(_))),
        "so does the budget"
    );
    let usage = sink
        .events()
        .into_iter()
        .find_map(|e| match e.kind {
            RunEventKind::Sampling { outcome, input_tokens, output_tokens, .. } if outcome == "completed" => {
                Some((input_tokens, output_tokens))
            }
            _ => None,
        })
        .expect("usage is added to the run's events");
    assert_eq!(usage.0, 10);
    assert_eq!(run.budget().spent_tokens(), usage.0 + usage.1, "reconciled with actual usage");
}

#[tokio::test]
async fn read_only_and_ask_modes_both_ask() {
    for mode in [PermissionMode::ReadOnly, PermissionMode::Ask, PermissionMode::AutoEdit] {
        let approver = Recorder::new(Approval::Approved);
        let (run, _) = run(mode, approver.clone());
        sample(&run, &request(1, 1, 10)).await.unwrap();
        assert_eq!(approver.asked.load(Ordering::SeqCst), 1, "{mode}");
    }
}

#[test]
fn the_sampling_prompt_is_its_own_and_shows_the_whole_payload() {
    let req = request(2, 3000, 64);
    let shown = clat_host::policy::permissions::TerminalApprover::render(&ApprovalRequest {
        tool: clat_host::policy::permissions::SAMPLING_APPROVAL.into(),
        source: "wasm:summarize".into(),
        asked_by: Some("wasm:summarize".into()),
        effect: clat_host::contract::Effect::Network,
        effect_reason: String::new(),
        arguments: clat_host::services::sampling::approval_payload(&req, "clat-offline-1"),
        mode: PermissionMode::Ask,
        can_remember: false,
    });
    assert!(shown.starts_with("Allow wasm:summarize to send this request to the model?"), "{shown}");
    assert!(shown.contains("complete outbound payload"));
    assert_eq!(shown.matches(&"a".repeat(3000)).count(), 2, "every message in full");
}
