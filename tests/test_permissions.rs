//! The permission pipeline: every cell of the mode table, both through
//! `rule_for` and through real calls; the approver on "ask"; headless denials
//! that say how to allow; and the decision in the run's events.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use clat_host::contract::{Effect, PermissionMode};
use clat_host::policy::permissions::{Approval, ApprovalRequest, Approver, FixedApprover, Rule, rule_for};
use clat_host::registry::{CallError, Registry};
use clat_host::run::{CollectingSink, RunContext, RunEventKind};
use serde_json::json;
use support::ok_tool;

const NAMES: [&str; 5] = ["t_read", "t_external_read", "t_network", "t_write", "t_destructive"];

fn registry_with_one_tool_per_effect() -> Registry {
    let registry = Registry::new(&NAMES);
    for (name, effect) in NAMES.iter().zip(Effect::ALL) {
        registry.register_native(name, "test", json!({ "type": "object" }), effect, ok_tool()).unwrap();
    }
    registry
}

fn table(mode: PermissionMode, effect: Effect) -> Rule {
    use Effect as E;
    use PermissionMode as M;
    use Rule::*;
    let row = match effect {
        E::Read => [Allow, Allow, Allow, Allow],
        E::ExternalRead => [Allow, Allow, Allow, Allow],
        E::Network => [Ask, Ask, Ask, Allow],
        E::Write => [Deny, Ask, Allow, Allow],
        E::Destructive => [Deny, Ask, Ask, Allow],
    };
    let column = match mode {
        M::ReadOnly => 0,
        M::Ask => 1,
        M::AutoEdit => 2,
        M::FullAccess => 3,
    };
    row[column]
}

#[test]
fn rule_for_matches_every_cell_of_the_mode_table() {
    for mode in PermissionMode::ALL {
        for effect in Effect::ALL {
            assert_eq!(rule_for(mode, effect), table(mode, effect), "{mode} × {effect}");
        }
    }
}

/// Counts how often it is asked, answers with a fixed approval.
struct CountingApprover {
    asked: AtomicUsize,
    answer: Approval,
    seen: std::sync::Mutex<Vec<ApprovalRequest>>,
}

#[async_trait]
impl Approver for CountingApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.seen.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

#[tokio::test]
async fn every_cell_decides_real_calls_the_same_way() {
    let registry = registry_with_one_tool_per_effect();
    for approve in [true, false] {
        for mode in PermissionMode::ALL {
            for (name, effect) in NAMES.iter().zip(Effect::ALL) {
                let approver = Arc::new(CountingApprover {
                    asked: AtomicUsize::new(0),
                    answer: if approve { Approval::Approved } else { Approval::Denied("no".into()) },
                    seen: Default::default(),
                });
                let sink = Arc::new(CollectingSink::default());
                let run = RunContext::builder().mode(mode).approver(approver.clone()).events(sink.clone()).start();
                let result = registry.call(name, json!({ "k": 1 }), &run).await;
                let rule = table(mode, effect);
                let should_run = rule == Rule::Allow || (rule == Rule::Ask && approve);
                assert_eq!(result.is_ok(), should_run, "{mode} × {effect} (approve={approve}): {result:?}");
                if !should_run {
                    assert!(matches!(result, Err(CallError::Denied { .. })));
                }
                assert_eq!(approver.asked.load(Ordering::SeqCst), usize::from(rule == Rule::Ask), "{mode} × {effect}");
                if rule == Rule::Ask {
                    let seen = approver.seen.lock().unwrap();
                    assert_eq!(seen[0].arguments, json!({ "k": 1 }), "the complete arguments reach the approver");
                    assert_eq!(seen[0].effect, effect);
                    assert_eq!(seen[0].source, "native");
                }
                let decision = sink
                    .events()
                    .into_iter()
                    .find_map(|e| match e.kind {
                        RunEventKind::Permission { rule, allowed, decided_by, .. } => Some((rule, allowed, decided_by)),
                        _ => None,
                    })
                    .expect("a permission event");
                assert_eq!(decision.0, rule);
                assert_eq!(decision.1, should_run);
                assert_eq!(decision.2, if rule == Rule::Ask { "approver" } else { "mode" });
            }
        }
    }
}

#[tokio::test]
async fn headless_denial_says_how_to_allow() {
    let registry = registry_with_one_tool_per_effect();
    let (run, _) = support::run_in(PermissionMode::Ask);
    let err = registry.call("t_write", json!({}), &run).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("no interactive terminal"), "{message}");
    assert!(message.contains("--mode auto-edit") && message.contains("run at a terminal to approve it"), "{message}");
    let err = registry.call("t_destructive", json!({}), &run).await.unwrap_err();
    assert!(err.to_string().contains("--mode full-access"), "{err}");
    let (run, _) = support::run_in(PermissionMode::ReadOnly);
    let err = registry.call("t_write", json!({}), &run).await.unwrap_err();
    assert!(err.to_string().contains("mode read-only does not allow write tools"), "{err}");
    assert!(
        err.to_string().contains("--mode auto-edit") && !err.to_string().contains("terminal"),
        "a terminal cannot approve what the mode denies, so the denial does not suggest one: {err}"
    );
}

#[tokio::test]
async fn a_fixed_approver_lets_ask_calls_through() {
    let registry = registry_with_one_tool_per_effect();
    let run = RunContext::builder().approver(Arc::new(FixedApprover(Approval::Approved))).start();
    assert!(registry.call("t_destructive", json!({}), &run).await.is_ok());
}

#[test]
fn the_terminal_prompt_shows_tool_source_effect_and_complete_arguments() {
    let long = "x".repeat(5000);
    let request = ApprovalRequest {
        tool: "mcp_fs_write".into(),
        source: "mcp:fs/write".into(),
        asked_by: None,
        effect: Effect::Write,
        effect_reason: "readOnlyHint false, destructiveHint false".into(),
        arguments: json!({ "path": "a.txt", "content": long }),
        mode: PermissionMode::Ask,
        can_remember: true,
    };
    let text = clat_host::policy::permissions::TerminalApprover::render(&request);
    assert!(text.contains("mcp_fs_write") && text.contains("mcp:fs/write") && text.contains("write"));
    assert!(text.contains("effect: write: readOnlyHint false, destructiveHint false"), "why it is write: {text}");
    assert!(text.contains(&"x".repeat(5000)), "arguments are never shortened");
}
