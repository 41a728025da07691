//! `clat serve`: the project's registry as an MCP server on stdio, so any
//! agent gets its native tools, WASM plugins and MCP servers behind the one
//! pipeline (`claude mcp add clat -- clat serve --project DIR`). Nothing
//! starts before the project is trusted (exit 3). The extensions start with
//! the session; the first `tools/list` or call waits for them at most the
//! initial surface (`INITIAL_SURFACE_WAIT`), and the registry then freezes
//! for the session. Each `tools/call` is one run under the session's mode,
//! the project's kept approvals applying; an `ask` becomes a form the client
//! shows its user (allow once / always for this tool / deny) when it declared
//! form elicitation, and is otherwise denied at once, saying how to allow it
//! (`ServeApprover`): a call never waits on a question nobody can answer. A client's
//! cancel cancels the call's run; the end of the session closes everything.
//! Every call leaves a record in the audit trail (`audit.rs`). The wire side
//! is `clat_mcp::server`.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use clat_mcp::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, WireError};
use clat_mcp::server::{Peer, ServeEnd, ServedTools, ServerInfo};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::exit::{Exit, Failure};
use super::shutdown::Shutdown;
use crate::asker::HeadlessAsker;
use crate::audit::{AuditTrail, CallAudit, CallRecord};
use crate::contract::Effect;
use crate::contract::PermissionMode;
use crate::contract::json::tool_output_to_json;
use crate::extension::StartFilter;
use crate::limits::INITIAL_SURFACE_WAIT;
use crate::permissions::{Approval, ApprovalRequest, Approver, Remember, effect_with_reason, how_to_allow};
use crate::platform::{Platform, Project, RunOptions};
use crate::registry::{CallError, ToolInfo};

/// How `clat serve` was asked to serve.
pub(crate) struct ServeOptions {
    pub(crate) dir: PathBuf,
    pub(crate) mode: PermissionMode,
    pub(crate) sandbox: crate::native::process::SandboxPolicy,
    /// The audit trail's file (default: the home's, `audit::AUDIT_FILE`).
    pub(crate) audit: Option<PathBuf>,
}

/// Serve the project on stdin/stdout until the client closes its end or a stop signal.
pub(crate) async fn serve(platform: &Platform, options: ServeOptions, shutdown: &Shutdown) -> Result<Exit, Failure> {
    let ServeOptions { dir, mode, sandbox, audit } = options;
    // No terminal questions here (stdin is the protocol): unapproved project servers and unanswered inputs stay out.
    let project = Arc::new(platform.mount(&dir, super::mount_options(sandbox, StartFilter::All))?);
    project.start_extensions();
    let info = ServerInfo {
        name: "clat".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: Some(format!(
            "CLAT serves the tools of the project {}: its native tools (read_file, search, …), WASM plugins \
             (wasm_*) and MCP servers (mcp_*), each call checked by CLAT's permission pipeline in mode {mode}.",
            project.root().display()
        )),
    };
    let trail = match audit {
        Some(file) => AuditTrail::at(&file),
        None => AuditTrail::in_home(platform.clat_home()),
    };
    let served = Arc::new(ServedProject { project: Arc::clone(&project), mode, trail });
    let end =
        clat_mcp::server::serve(tokio::io::stdin(), tokio::io::stdout(), info, served, shutdown.token().clone()).await;
    project.close().await;
    match end {
        ServeEnd::ClientClosed | ServeEnd::Stopped => Ok(Exit::Ok),
        other => Err(Failure::new(Exit::Usage, "protocol", format!("the session ended: {other}"))),
    }
}

/// The project, as `clat_mcp::server` asks for its tools.
struct ServedProject {
    project: Arc<Project>,
    mode: PermissionMode,
    trail: AuditTrail,
}

impl ServedProject {
    /// The initial surface (at most `INITIAL_SURFACE_WAIT`), then the registry frozen for the session.
    async fn surface(&self) {
        self.project.wait_for_extensions(INITIAL_SURFACE_WAIT).await;
        self.project.freeze();
    }
}

#[async_trait]
impl ServedTools for ServedProject {
    async fn list(&self) -> Vec<Value> {
        self.surface().await;
        self.project.tools().iter().map(mcp_tool).collect()
    }

    async fn call(
        &self,
        client: &Peer,
        name: &str,
        arguments: Value,
        cancelled: CancellationToken,
    ) -> Result<Value, WireError> {
        self.surface().await;
        let audit = Arc::new(CallAudit::default());
        let called = self.run_call(client, name, arguments, cancelled, &audit).await;
        let who = format!("{} {}", client.info().name, client.info().version);
        let rejected = match &called {
            Err(e) if e.code == INVALID_PARAMS => Some(e.message.as_str()),
            _ => None,
        };
        let mode = self.mode.to_string();
        let record = audit.record(&CallRecord { client: who.trim(), tool: name, mode: &mode, rejected });
        if let Err(e) = self.trail.append(&record) {
            tracing::warn!("cannot write the audit trail {}: {e}", self.trail.path().display());
        }
        called
    }
}

impl ServedProject {
    /// One call as one run: its events to `audit`, a client's cancel cancelling it.
    async fn run_call(
        &self,
        client: &Peer,
        name: &str,
        arguments: Value,
        cancelled: CancellationToken,
        audit: &Arc<CallAudit>,
    ) -> Result<Value, WireError> {
        let options = RunOptions {
            mode: self.mode,
            approver: Arc::new(ServeApprover { client: client.clone() }),
            asker: Arc::new(HeadlessAsker),
            events: Arc::clone(audit) as Arc<dyn crate::run::EventSink>,
            keep_approvals: true,
            deadline: None,
        };
        let run = self.project.start_run(options).await.map_err(|e| WireError::new(INTERNAL_ERROR, e.to_string()))?;
        let called = tokio::select! {
            called = run.call(name, arguments) => called,
            _ = cancelled.cancelled() => {
                run.cancel();
                return Err(WireError::new(INTERNAL_ERROR, format!("{name} was cancelled")));
            }
        };
        match called {
            Ok(output) => Ok(tool_output_to_json(&output)),
            // What the client asked for is not a call: a protocol error.
            Err(e @ (CallError::UnknownTool(_) | CallError::InvalidArguments { .. })) => {
                Err(WireError::new(INVALID_PARAMS, e.to_string()))
            }
            // The call was made and did not succeed: a tool error the model reads.
            Err(e) => Ok(json!({ "content": [{ "type": "text", "text": e.to_string() }], "isError": true })),
        }
    }
}

/// A registered tool as an MCP `Tool`: its registered name, description,
/// schema, and hints derived from its effect (`readOnlyHint` for a read,
/// `destructiveHint`, `openWorldHint` for the network).
fn mcp_tool(tool: &ToolInfo) -> Value {
    let read_only = matches!(tool.effect, Effect::Read | Effect::ExternalRead);
    let mut annotations = json!({ "readOnlyHint": read_only, "openWorldHint": tool.effect == Effect::Network });
    if !read_only {
        annotations["destructiveHint"] = json!(tool.effect == Effect::Destructive);
    }
    json!({
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": annotations,
    })
}

/// Who answers a call that needs approval under `clat serve`: the client's
/// user, through a form, when the client declared form elicitation; else
/// nobody (the session's stdin is the protocol), so it is denied at once,
/// with the ways to allow it beforehand.
struct ServeApprover {
    client: Peer,
}

/// The form's choices: its field, and the values with their labels.
const DECISION: &str = "decision";
const ALLOW_ONCE: &str = "allow";
const ALLOW_ALWAYS: &str = "always";
const DENY: &str = "deny";

impl ServeApprover {
    fn name(&self) -> &str {
        &self.client.info().name
    }

    /// What the request is, as the form and the denials say it.
    fn what(request: &ApprovalRequest) -> String {
        let asked_by = request.asked_by.as_deref().map(|who| format!(" (asked for by {who})")).unwrap_or_default();
        format!("{} ({}){asked_by}", request.tool, effect_with_reason(request.effect, &request.effect_reason))
    }

    /// `elicitation/create` for `request`: the tool, its effect and why, who asks, the complete arguments.
    fn form(request: &ApprovalRequest) -> Value {
        let arguments = crate::redact::redact(&request.arguments.to_string());
        let mut choices = vec![(ALLOW_ONCE, "Allow once")];
        if request.can_remember {
            choices.push((ALLOW_ALWAYS, "Always allow this tool in this project"));
        }
        choices.push((DENY, "Deny"));
        json!({
            "mode": "form",
            "message": format!(
                "CLAT asks: allow {} in mode {}? Arguments: {arguments}",
                Self::what(request),
                request.mode
            ),
            "requestedSchema": {
                "type": "object",
                "properties": { DECISION: {
                    "type": "string",
                    "title": "Decision",
                    "enum": choices.iter().map(|(value, _)| *value).collect::<Vec<_>>(),
                    "enumNames": choices.iter().map(|(_, label)| *label).collect::<Vec<_>>(),
                } },
                "required": [DECISION],
            },
        })
    }
}

#[async_trait]
impl Approver for ServeApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if !self.client.elicits_forms() {
            return Approval::Denied(format!(
                "{} needs approval in mode {} and the client {} cannot give one through clat serve (it declared no \
                 form elicitation); {}, or approve it once at a terminal (`clat call {}` and answer [a]lways: kept \
                 approvals apply here)",
                Self::what(request),
                request.mode,
                self.name(),
                how_to_allow(request.effect, false).replace("run with --mode", "serve with --mode"),
                request.tool,
            ));
        }
        match self.client.request("elicitation/create", Self::form(request)).await {
            Ok(answer) if answer["action"] == "accept" => match answer["content"][DECISION].as_str() {
                Some(ALLOW_ONCE) => Approval::Approved,
                Some(ALLOW_ALWAYS) => Approval::Always(Remember::Tool),
                _ => Approval::Denied(format!("the user of {} denied {}", self.name(), Self::what(request))),
            },
            Ok(answer) => Approval::Denied(format!(
                "the user of {} did not approve {} (the form was {})",
                self.name(),
                Self::what(request),
                if answer["action"] == "decline" { "declined" } else { "dismissed" }
            )),
            Err(e) => Approval::Denied(format!(
                "{} could not be asked to approve {}: {}",
                self.name(),
                request.tool,
                e.message
            )),
        }
    }
}
