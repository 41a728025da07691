//! Extension sampling: the spec's three gates, in order, for every source (WASM guests, MCP
//! servers): payload, run budget, permission. Full Access skips only the
//! approval dialog. Plugin model preferences never select another model.
//! Usage is reconciled with the budget and added to the run's events. The
//! model that answers is the `ModelProvider` port (`model.rs`), re-exported here.

use serde_json::{Value, json};

use crate::contract::{HostError, PermissionMode, Role, SamplingRequest, SamplingResult};
use crate::limits::{SAMPLING_MAX_MESSAGES, SAMPLING_MAX_OUTBOUND_CHARS, SAMPLING_MAX_OUTPUT_TOKENS};
use crate::policy::permissions::{Approval, ApprovalRequest, Rule, SAMPLING_APPROVAL};
use crate::run::{RunContext, RunEventKind};
use crate::services::budget::estimate_tokens;

pub use crate::services::model::{Completion, ModelProvider, OfflineProvider, estimated_usage};

/// Gate 1: the payload. Messages are text-only by type; the MCP mapping refuses
/// other content before a request gets here.
pub fn check_payload(request: &SamplingRequest) -> Result<(), HostError> {
    if request.messages.len() > SAMPLING_MAX_MESSAGES {
        return Err(HostError::Invalid(format!(
            "sampling request has {} messages; at most {SAMPLING_MAX_MESSAGES} are allowed",
            request.messages.len()
        )));
    }
    if request.messages.is_empty() {
        return Err(HostError::Invalid("sampling request has no messages".into()));
    }
    let chars: usize = request.system_prompt.as_deref().map_or(0, |s| s.chars().count())
        + request.messages.iter().map(|m| m.text.chars().count()).sum::<usize>();
    if chars > SAMPLING_MAX_OUTBOUND_CHARS {
        return Err(HostError::Invalid(format!(
            "sampling request carries {chars} characters; at most {SAMPLING_MAX_OUTBOUND_CHARS} are allowed across system prompt and messages"
        )));
    }
    if request.max_tokens > SAMPLING_MAX_OUTPUT_TOKENS {
        return Err(HostError::Invalid(format!(
            "sampling request asks for {} output tokens; at most {SAMPLING_MAX_OUTPUT_TOKENS} are allowed",
            request.max_tokens
        )));
    }
    if request.max_tokens == 0 {
        return Err(HostError::Invalid("sampling request asks for 0 output tokens".into()));
    }
    Ok(())
}

/// The complete outbound payload, as the approver sees it.
pub fn approval_payload(request: &SamplingRequest, model: &str) -> Value {
    json!({
        "model": model,
        "systemPrompt": request.system_prompt,
        "maxTokens": request.max_tokens,
        "temperature": request.temperature.map(crate::contract::json::f32_to_json),
        "stopSequences": request.stop_sequences,
        "messages": request.messages.iter().map(|m| json!({
            "role": match m.role { Role::User => "user", Role::Assistant => "assistant" },
            "text": m.text,
        })).collect::<Vec<_>>(),
    })
}

/// Run a sampling request from `source` through the three gates, then the provider.
pub async fn create_message(
    provider: &dyn ModelProvider,
    request: &SamplingRequest,
    source: &str,
    run: &RunContext,
) -> Result<SamplingResult, HostError> {
    let refuse = |outcome: &str| {
        run.emit(RunEventKind::Sampling {
            source: source.to_string(),
            outcome: outcome.to_string(),
            input_tokens: 0,
            output_tokens: 0,
        })
    };
    // Gate 1: payload.
    if let Err(e) = check_payload(request) {
        refuse("refused: payload");
        return Err(e);
    }
    // Gate 2: the run's shared budget, reserved before the provider call.
    let reservation = match run.budget().reserve(estimate_tokens(request)) {
        Ok(r) => r,
        Err(e) => {
            refuse("refused: budget");
            return Err(HostError::BudgetExhausted(e.to_string()));
        }
    };
    // Gate 3: permission. Full Access skips the dialog only.
    let model = provider.model();
    let (rule, allowed, decided_by, reason) = if run.mode() == PermissionMode::FullAccess {
        (Rule::Allow, true, "mode", None)
    } else {
        let approval = ApprovalRequest {
            tool: SAMPLING_APPROVAL.into(),
            source: source.to_string(),
            asked_by: Some(source.to_string()),
            effect: crate::contract::Effect::Network,
            effect_reason: String::new(),
            arguments: approval_payload(request, &model),
            mode: run.mode(),
            // Sampling is asked about every time outside Full Access.
            can_remember: false,
        };
        let answer = tokio::select! {
            a = run.approver().approve(&approval) => a,
            _ = run.cancel_token().cancelled() => return Err(HostError::Cancelled),
        };
        match answer {
            Approval::Approved | Approval::Always(_) => (Rule::Ask, true, "approver", None),
            Approval::Denied(why) => (Rule::Ask, false, "approver", Some(why)),
        }
    };
    run.emit(RunEventKind::Permission {
        call_id: 0,
        tool: SAMPLING_APPROVAL.into(),
        effect: crate::contract::Effect::Network.to_string(),
        rule,
        allowed,
        decided_by: decided_by.into(),
        reason: reason.clone(),
    });
    if !allowed {
        refuse("refused: permission");
        return Err(HostError::Denied(reason.unwrap_or_default()));
    }
    let completion = tokio::select! {
        c = provider.complete(request) => c,
        _ = run.cancel_token().cancelled() => return Err(HostError::Cancelled),
    };
    let completion = match completion {
        Ok(c) => c,
        Err(e) => {
            refuse("failed: provider");
            return Err(HostError::Failed(format!("the model provider failed: {e:#}")));
        }
    };
    reservation.reconcile(u64::from(completion.input_tokens) + u64::from(completion.output_tokens));
    run.emit(RunEventKind::Sampling {
        source: source.to_string(),
        outcome: "completed".into(),
        input_tokens: u64::from(completion.input_tokens),
        output_tokens: u64::from(completion.output_tokens),
    });
    Ok(SamplingResult {
        role: Role::Assistant,
        text: completion.text,
        model: completion.model,
        stop_reason: completion.stop_reason,
        input_tokens: completion.input_tokens,
        output_tokens: completion.output_tokens,
    })
}
