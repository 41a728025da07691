//! Host services: the one implementation of the `host-services` contract. WASM
//! guests reach it through the generated host traits, MCP servers through
//! `io.artec.clat/*`, `sampling/createMessage` and `elicitation/create`; both
//! adapters call these methods and restate none of their rules. Everything but
//! `get_context` and `log` requires an active run, and host-tool calls go
//! through the registry — the current run's permission pipeline, path fence,
//! cancel token and events. Its parts: sampling's three gates (`sampling.rs`)
//! on the shared budget (`budget.rs`), the session model (`model.rs`), and
//! forms asked through the `UserAsker` (`elicitation.rs`, `asker.rs`).

pub mod asker;
pub mod budget;
pub mod elicitation;
pub mod model;
pub mod sampling;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use serde_json::Value;

use crate::contract::{
    ContextSnapshot, ElicitationForm, ElicitationResult, HostError, HostTool, LogLevel, RunSnapshot, SamplingRequest,
    SamplingResult, ToolOutput,
};
use crate::limits::{PLUGIN_LOG_LINE_MAX_CHARS, PLUGIN_LOG_LINES_PER_CALL, SNAPSHOT_MAX_STRING_CHARS};
use crate::policy::identity::Identity;
use crate::redact::redact;
use crate::registry::{CallError, Caller, Registry};
use crate::run::{RunContext, RunEventKind};
use crate::services::sampling::ModelProvider;

/// How many of one extension's host requests (sampling, elicitation) wait on
/// the host now. Counted per extension, by both adapters, so that the
/// registry extends only that extension's calls (`ToolHandler::waiting_on_host`).
#[derive(Debug, Default, Clone)]
pub struct HostWaits(Arc<std::sync::atomic::AtomicUsize>);

impl HostWaits {
    /// Count one request as waiting until the guard drops.
    pub fn enter(&self) -> HostWait {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        HostWait(Arc::clone(&self.0))
    }

    /// How many wait now.
    pub fn pending(&self) -> usize {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// One request waiting on the host; dropping it ends the wait.
pub struct HostWait(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for HostWait {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The services one project scope offers its plugins.
pub struct HostServices {
    registry: Weak<Registry>,
    provider: Arc<dyn ModelProvider>,
    project_root: PathBuf,
    session_id: String,
}

fn no_run() -> HostError {
    HostError::NoActiveRun
}

impl HostServices {
    pub fn new(
        registry: &Arc<Registry>,
        provider: Arc<dyn ModelProvider>,
        project_root: &Path,
        session_id: &str,
    ) -> Self {
        HostServices {
            registry: Arc::downgrade(registry),
            provider,
            project_root: project_root.to_path_buf(),
            session_id: session_id.to_string(),
        }
    }

    /// A bounded, detached snapshot of project, session and (optionally) run.
    pub fn snapshot(&self, run: Option<&RunContext>) -> ContextSnapshot {
        // At most SNAPSHOT_MAX_STRING_CHARS characters (a string of no more bytes has no more).
        let bound = |s: &str| {
            let end = match s.len() > SNAPSHOT_MAX_STRING_CHARS {
                true => s.char_indices().nth(SNAPSHOT_MAX_STRING_CHARS).map_or(s.len(), |(end, _)| end),
                false => s.len(),
            };
            s[..end].to_string()
        };
        ContextSnapshot {
            project_root: bound(&self.project_root.display().to_string()),
            project_name: bound(
                &self.project_root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            ),
            session_id: bound(&self.session_id),
            run: run.map(|r| {
                let left = r.budget().left();
                RunSnapshot {
                    run_id: bound(r.run_id()),
                    mode: r.mode(),
                    remaining_ms: r.remaining().map_or(u64::MAX, |d| d.as_millis() as u64),
                    sampling_requests_left: left.requests,
                    sampling_tokens_left: left.tokens,
                }
            }),
        }
    }

    /// Call one of the six host tools for the extension `source` (`mcp:srv`,
    /// `wasm:plugin`) whose identity is `identity`, in `run`: the pipeline
    /// judges it as that extension's call, never as the agent's.
    pub async fn call_tool(
        &self,
        tool: HostTool,
        arguments: &str,
        source: &str,
        identity: &Identity,
        run: Option<&RunContext>,
    ) -> Result<ToolOutput, HostError> {
        let run = run.ok_or_else(no_run)?;
        let arguments: Value = serde_json::from_str(arguments)
            .map_err(|e| HostError::Invalid(format!("host tool arguments are not JSON: {e}")))?;
        let registry =
            self.registry.upgrade().ok_or_else(|| HostError::Failed("the project scope is closed".into()))?;
        run.emit(RunEventKind::HostToolCall { source: source.to_string(), tool: tool.tool_name().to_string() });
        let caller = Caller::Extension { key: source, identity };
        registry.call_as(caller, tool.tool_name(), arguments, run).await.map_err(|e| match e {
            CallError::Denied { reason, .. } => HostError::Denied(reason),
            CallError::Cancelled { .. } => HostError::Cancelled,
            CallError::TimedOut { .. } => HostError::Timeout,
            CallError::InvalidArguments { reason, .. } => HostError::Invalid(reason),
            CallError::UnknownTool(name) => HostError::Unsupported(format!("host tool {name} is not registered")),
            CallError::Failed { error, .. } => HostError::Failed(error.to_string()),
            e @ CallError::Withdrawn { .. } => HostError::Failed(e.to_string()),
            e @ CallError::Quarantined { .. } => HostError::Denied(e.to_string()),
        })
    }

    /// One completion from the run's model (the project's session model unless
    /// the run has its own), through the three gates.
    pub async fn create_message(
        &self,
        request: &SamplingRequest,
        source: &str,
        run: Option<&RunContext>,
    ) -> Result<SamplingResult, HostError> {
        let run = run.ok_or_else(no_run)?;
        let provider = run.model().unwrap_or(&self.provider);
        crate::services::sampling::create_message(provider.as_ref(), request, source, run).await
    }

    /// Ask the user one primitive form.
    pub async fn elicit(
        &self,
        form: &ElicitationForm,
        source: &str,
        run: Option<&RunContext>,
    ) -> Result<ElicitationResult, HostError> {
        let run = run.ok_or_else(no_run)?;
        crate::services::elicitation::elicit(form, source, run).await
    }

    /// The `nth` log line (from 1) of one extension call: kept for the first
    /// `PLUGIN_LOG_LINES_PER_CALL`, then one notice, then dropped.
    pub fn log_in_call(&self, nth: u32, level: LogLevel, message: &str, source: &str, run: Option<&RunContext>) {
        if nth <= PLUGIN_LOG_LINES_PER_CALL {
            self.log(level, message, source, run);
        } else if nth == PLUGIN_LOG_LINES_PER_CALL + 1 {
            let notice = format!("further log lines of this call are dropped (limit {PLUGIN_LOG_LINES_PER_CALL})");
            self.log(LogLevel::Warn, &notice, source, run);
        }
    }

    /// One bounded, redacted log line: to tracing, and to the run's events when in a run.
    pub fn log(&self, level: LogLevel, message: &str, source: &str, run: Option<&RunContext>) {
        let mut line: String = redact(message).chars().take(PLUGIN_LOG_LINE_MAX_CHARS).collect();
        if message.chars().count() > PLUGIN_LOG_LINE_MAX_CHARS {
            line.push('…');
        }
        let level_name = match level {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        };
        match level {
            LogLevel::Trace => tracing::trace!(plugin = source, "{line}"),
            LogLevel::Debug => tracing::debug!(plugin = source, "{line}"),
            LogLevel::Info => tracing::info!(plugin = source, "{line}"),
            LogLevel::Warn => tracing::warn!(plugin = source, "{line}"),
            LogLevel::Error => tracing::error!(plugin = source, "{line}"),
        }
        if let Some(run) = run {
            run.emit(RunEventKind::PluginLog { source: source.to_string(), level: level_name.into(), message: line });
        }
    }
}
