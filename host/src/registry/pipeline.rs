//! The one call path: `Registry::call` takes every tool call — native, MCP,
//! WASM, and a plugin's host-tool calls — through lookup, the argument checks
//! (size, JSON Schema), the cancel check, the permission decision (mode table,
//! then the run's approver), the handler under the run's cancel token and the
//! tool-call deadline (extended while the tool's extension waits on the host),
//! the result size limit, and the run events around it. A host-tool call is
//! judged as the extension that makes it (`Caller`), never as the agent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{CallError, Caller, InFlight, Quarantine, Registry, ToolEntry, ToolSource};
use crate::contract::json::{
    content_block_to_json, tool_output_json_len_bound, tool_output_json_len_ceiling, tool_output_to_json,
};
use crate::contract::{ContentBlock, ToolOutput};
use crate::limits::{
    HOST_REQUEST_EXTENSION_MAX, HOST_REQUEST_EXTENSION_STEP, TOOL_ARGUMENTS_MAX_BYTES, TOOL_CALL_TIMEOUT,
    TOOL_RESULT_CUT_MARKER_BYTES, TOOL_RESULT_MAX_BYTES,
};
use crate::policy::approvals::{AGENT, ApprovalKey};
use crate::policy::permissions::{Approval, ApprovalRequest, Rule, effect_with_reason, how_to_allow, rule_for};
use crate::run::{RunContext, RunEventKind};
use crate::sync::UnpoisonedRw;

impl Registry {
    fn lookup(&self, name: &str) -> Option<Arc<ToolEntry>> {
        let tools = self.tools.read_locked();
        tools.by_name.get(name).map(|&i| Arc::clone(&tools.entries[i]))
    }

    /// The agent's call of a tool as part of `run`, through the whole pipeline.
    pub async fn call(&self, name: &str, arguments: Value, run: &RunContext) -> Result<ToolOutput, CallError> {
        self.call_as(Caller::Agent, name, arguments, run).await
    }

    /// `caller`'s call of a tool as part of `run`, through the whole pipeline:
    /// the permission decision and kept approvals are those of that caller.
    pub async fn call_as(
        &self,
        caller: Caller<'_>,
        name: &str,
        arguments: Value,
        run: &RunContext,
    ) -> Result<ToolOutput, CallError> {
        // A quarantined tool is refused whether it was never registered or left the listing while in use.
        if let Some(Quarantine { accept, changes }) = self.quarantined(name) {
            return Err(CallError::Quarantined { tool: name.to_string(), accept, changes });
        }
        let entry = self.lookup(name).ok_or_else(|| CallError::UnknownTool(name.to_string()))?;
        let call_id = run.next_call_id();
        let started = Instant::now();
        run.emit(RunEventKind::ToolStarted {
            call_id,
            tool: entry.name.clone(),
            source: entry.source.label(),
            effect: entry.effect.to_string(),
        });
        let result = pipeline(&entry, caller, call_id, arguments, run).await;
        let (is_error, error) = match &result {
            Ok(output) => (output.is_error, None),
            Err(e) => (true, Some(e.to_string())),
        };
        run.emit(RunEventKind::ToolFinished {
            call_id,
            tool: entry.name.clone(),
            duration_ms: started.elapsed().as_millis() as u64,
            is_error,
            error,
        });
        result
    }
}

fn validate_arguments(entry: &ToolEntry, arguments: &Value) -> Result<(), CallError> {
    // A refusal may quote the schema or the arguments, either of which can hold a secret.
    let invalid = |reason: String| CallError::InvalidArguments {
        tool: entry.name.clone(),
        reason: crate::redact::redact(&reason),
    };
    let size = arguments.to_string().len();
    if size > TOOL_ARGUMENTS_MAX_BYTES {
        return Err(invalid(format!("{size} bytes of arguments exceed the {TOOL_ARGUMENTS_MAX_BYTES}-byte limit")));
    }
    let validator = entry
        .validator()
        .map_err(|why| invalid(format!("the tool's input schema does not compile ({why}); it cannot be called")))?;
    let errors: Vec<String> = validator
        .iter_errors(arguments)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() { e.to_string() } else { format!("at {at}: {e}") }
        })
        .collect();
    if errors.is_empty() { Ok(()) } else { Err(invalid(errors.join("; "))) }
}

/// What a kept approval of this call is keyed by: who asks, the tool, and the
/// identity of the extension involved (the asker's, else the tool's).
pub(super) fn approval_key(entry: &ToolEntry, caller: Caller<'_>) -> ApprovalKey {
    let (asked_by, identity) = match caller {
        Caller::Agent => (AGENT.to_string(), entry.identity.clone()),
        Caller::Extension { key, identity } => (key.to_string(), Some(identity.clone())),
    };
    let definition = entry.definition.clone();
    ApprovalKey { asked_by, extension: entry.source.extension(), tool: entry.name.clone(), identity, definition }
}

/// Why an extension's tool has its effect (its hints, a grant it uses); a
/// native tool's effect is CLAT's own and needs no reason.
fn extension_effect_reason(entry: &ToolEntry) -> &str {
    if matches!(entry.source, ToolSource::Native) { "" } else { &entry.effect_reason }
}

async fn decide(
    entry: &ToolEntry,
    caller: Caller<'_>,
    call_id: u64,
    arguments: &Value,
    run: &RunContext,
) -> Result<(), CallError> {
    let rule = rule_for(run.mode(), entry.effect);
    let key = || approval_key(entry, caller);
    let (allowed, decided_by, reason) = match rule {
        Rule::Allow => (true, "mode", None),
        Rule::Deny => (
            false,
            "mode",
            Some(format!(
                "mode {} does not allow {} tools ({} is {}); {}",
                run.mode(),
                entry.effect,
                entry.name,
                effect_with_reason(entry.effect, extension_effect_reason(entry)),
                how_to_allow(entry.effect, false)
            )),
        ),
        // A kept approval answers only this cell, for an effect every mode orders at or below the approved one.
        Rule::Ask if run.approvals().is_some_and(|m| m.allows(&key(), entry.effect)) => (true, "stored", None),
        Rule::Ask => {
            let request = ApprovalRequest {
                tool: entry.name.clone(),
                source: entry.source.label(),
                asked_by: match caller {
                    Caller::Agent => None,
                    Caller::Extension { key, .. } => Some(key.to_string()),
                },
                effect: entry.effect,
                effect_reason: extension_effect_reason(entry).to_string(),
                arguments: arguments.clone(),
                mode: run.mode(),
                can_remember: run.approvals().is_some(),
            };
            let approval = tokio::select! {
                a = run.approver().approve(&request) => a,
                _ = run.cancel_token().cancelled() => {
                    return Err(CallError::Cancelled { tool: entry.name.clone() });
                }
            };
            match approval {
                Approval::Approved => (true, "approver", None),
                Approval::Always(scope) => {
                    if let Some(memory) = run.approvals()
                        && let Err(e) = memory.remember(&key(), entry.effect, scope)
                    {
                        tracing::warn!("the approval of {} was given but could not be kept: {e}", entry.name);
                    }
                    (true, "approver", None)
                }
                Approval::Denied(reason) => (false, "approver", Some(reason)),
            }
        }
    };
    run.emit(RunEventKind::Permission {
        call_id,
        tool: entry.name.clone(),
        effect: entry.effect.to_string(),
        rule,
        allowed,
        decided_by: decided_by.to_string(),
        reason: reason.clone(),
    });
    if allowed {
        Ok(())
    } else {
        Err(CallError::Denied { tool: entry.name.clone(), reason: reason.unwrap_or_default() })
    }
}

async fn pipeline(
    entry: &ToolEntry,
    caller: Caller<'_>,
    call_id: u64,
    arguments: Value,
    run: &RunContext,
) -> Result<ToolOutput, CallError> {
    let _in_flight = InFlight::enter(entry.lease.as_deref());
    // A scope closing because its run was cancelled (a stop signal) ends the
    // call as cancelled, whichever of the two the call noticed first.
    let withdrawn = || {
        if run.is_cancelled() {
            return CallError::Cancelled { tool: entry.name.clone() };
        }
        CallError::Withdrawn {
            tool: entry.name.clone(),
            reason: entry.lease.as_ref().map(|l| l.reason()).unwrap_or_default(),
        }
    };
    let never = CancellationToken::new();
    let revoked = entry.lease.as_ref().map_or(&never, |l| &l.revoked);
    if revoked.is_cancelled() {
        return Err(withdrawn());
    }
    validate_arguments(entry, &arguments)?;
    if run.is_cancelled() {
        return Err(CallError::Cancelled { tool: entry.name.clone() });
    }
    tokio::select! {
        r = decide(entry, caller, call_id, &arguments, run) => r?,
        _ = revoked.cancelled() => return Err(withdrawn()),
    }
    let mut deadline = run.call_deadline(entry.handler.call_timeout().min(TOOL_CALL_TIMEOUT));
    let mut allowed_for = deadline.saturating_duration_since(Instant::now());
    let mut extended = Duration::ZERO;
    let call = entry.handler.call(arguments, run);
    tokio::pin!(call);
    let output = loop {
        tokio::select! {
            // A cancel or withdrawal seen with the result ready ends the call as cancelled, never by chance.
            biased;
            _ = run.cancel_token().cancelled() => return Err(CallError::Cancelled { tool: entry.name.clone() }),
            _ = revoked.cancelled() => return Err(withdrawn()),
            r = &mut call => break match r {
                // A handler that gives up at the deadline or on cancel (a guest's
                // epoch interrupt, a transport noticing the cancel, a command whose
                // group the cancel killed reporting it as a tool error) ends the same
                // way as the registry's own timer and cancel would, whichever was first.
                Ok(output) if output.is_error && run.is_cancelled() => {
                    return Err(CallError::Cancelled { tool: entry.name.clone() });
                }
                Ok(output) => output,
                Err(_) if run.is_cancelled() => return Err(CallError::Cancelled { tool: entry.name.clone() }),
                Err(_) if Instant::now() >= deadline => {
                    return Err(CallError::TimedOut { tool: entry.name.clone(), after: allowed_for });
                }
                Err(error) => return Err(CallError::Failed { tool: entry.name.clone(), error }),
            },
            _ = tokio::time::sleep_until(deadline.into()) => {
                // Only the tool-call limit extends, never the run's own deadline.
                let run_ends_first = run.deadline().is_some_and(|end| end <= deadline);
                if entry.handler.waiting_on_host() && !run_ends_first && extended < HOST_REQUEST_EXTENSION_MAX {
                    let step = HOST_REQUEST_EXTENSION_STEP.min(HOST_REQUEST_EXTENSION_MAX - extended);
                    let step = run.deadline().map_or(step, |end| step.min(end.saturating_duration_since(deadline)));
                    deadline += step;
                    extended += step;
                    allowed_for += step;
                    run.emit(RunEventKind::DeadlineExtended {
                        call_id,
                        tool: entry.name.clone(),
                        extended_ms: extended.as_millis() as u64,
                    });
                    continue;
                }
                return Err(CallError::TimedOut { tool: entry.name.clone(), after: allowed_for });
            }
        }
    };
    Ok(enforce_result_limit(output))
}

/// The size of a value as MCP JSON.
fn json_len(value: &Value) -> usize {
    serde_json::to_string(value).map_or(usize::MAX, |s| s.len())
}

/// A result over `TOOL_RESULT_MAX_BYTES` (as MCP JSON) is cut, not lost: its
/// leading content blocks are kept up to the limit (a text block may be cut
/// inside, at a character boundary), structured content that does not fit is
/// dropped whole, and a final text block says what was cut and how many bytes
/// were dropped. Only a result of which nothing fits becomes an error.
pub fn enforce_result_limit(output: ToolOutput) -> ToolOutput {
    // Most results are text far below the limit: that is known without
    // copying them into JSON to measure it, and for most without reading them.
    let within = |bound: Option<usize>| bound.is_some_and(|bound| bound <= TOOL_RESULT_MAX_BYTES);
    if within(tool_output_json_len_ceiling(&output)) || within(tool_output_json_len_bound(&output)) {
        return output;
    }
    let size = json_len(&tool_output_to_json(&output));
    if size <= TOOL_RESULT_MAX_BYTES {
        return output;
    }
    let budget = TOOL_RESULT_MAX_BYTES - TOOL_RESULT_CUT_MARKER_BYTES;
    let mut kept = ToolOutput { content: Vec::new(), structured: None, is_error: output.is_error };
    let mut used = json_len(&tool_output_to_json(&kept));
    for block in output.content {
        // A block costs its JSON and a separator.
        let cost = json_len(&content_block_to_json(&block)) + 1;
        if used + cost <= budget {
            used += cost;
            kept.content.push(block);
            continue;
        }
        if let ContentBlock::Text(text) = &block {
            let room = budget.saturating_sub(used);
            let fits = |chars: usize| {
                let head: String = text.chars().take(chars).collect();
                (json_len(&content_block_to_json(&ContentBlock::Text(head.clone()))) < room).then_some(head)
            };
            // The longest head that fits: a binary search over its length in characters.
            let (mut low, mut high) = (0usize, text.chars().count());
            while low < high {
                let mid = (low + high).div_ceil(2);
                if fits(mid).is_some() { low = mid } else { high = mid - 1 }
            }
            if low > 0 {
                kept.content.push(ContentBlock::Text(fits(low).unwrap_or_default()));
            }
        }
        break;
    }
    let structured_dropped = match output.structured {
        Some(structured) => {
            let mut with = kept.clone();
            with.structured = Some(structured);
            if json_len(&tool_output_to_json(&with)) <= budget {
                kept = with;
                false
            } else {
                true
            }
        }
        None => false,
    };
    if kept.content.is_empty() && kept.structured.is_none() {
        return ToolOutput::error(format!(
            "the tool's result of {size} bytes exceeds the {TOOL_RESULT_MAX_BYTES}-byte limit, and not even its first \
             block fits: nothing of it could be kept"
        ));
    }
    let dropped = size.saturating_sub(json_len(&tool_output_to_json(&kept)));
    let structured_note =
        if structured_dropped { "; its structured content did not fit and was dropped whole" } else { "" };
    kept.content.push(ContentBlock::Text(format!(
        "[clat: the tool's result of {size} bytes exceeds the {TOOL_RESULT_MAX_BYTES}-byte limit; it was cut here \
         and {dropped} bytes were dropped{structured_note}]"
    )));
    kept
}
