//! `clat serve`: the project's registry as an MCP server on stdio, so any
//! agent gets its native tools, WASM plugins and MCP servers behind the one
//! pipeline (`claude mcp add clat -- clat serve --project DIR`). Nothing
//! starts before the project is trusted (exit 3). The extensions start with
//! the session; the first `tools/list` or call waits for them at most the
//! initial surface (`INITIAL_SURFACE_WAIT`), and the registry then freezes
//! for the session. Each `tools/call` is one run under the session's mode,
//! the project's kept approvals applying; an approval nobody can give here is
//! denied at once, saying how to allow it (`ServeApprover`). A client's
//! cancel cancels the call's run; the end of the session closes everything.
//! The wire side is `clat_mcp::server`.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use clat_mcp::ClientInfo;
use clat_mcp::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, WireError};
use clat_mcp::server::{ServeEnd, ServedTools, ServerInfo};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::exit::{Exit, Failure};
use super::shutdown::Shutdown;
use crate::asker::HeadlessAsker;
use crate::contract::Effect;
use crate::contract::PermissionMode;
use crate::contract::json::tool_output_to_json;
use crate::extension::StartFilter;
use crate::limits::INITIAL_SURFACE_WAIT;
use crate::permissions::{Approval, ApprovalRequest, Approver, effect_with_reason, how_to_allow};
use crate::platform::{Platform, Project, RunOptions};
use crate::registry::{CallError, ToolInfo};
use crate::run::NullSink;

/// Serve the project at `dir` on stdin/stdout until the client closes its end or a stop signal.
pub(crate) async fn serve(
    platform: &Platform,
    dir: PathBuf,
    mode: PermissionMode,
    sandbox: crate::native::process::SandboxPolicy,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
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
    let served = Arc::new(ServedProject { project: Arc::clone(&project), mode });
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
        client: &ClientInfo,
        name: &str,
        arguments: Value,
        cancelled: CancellationToken,
    ) -> Result<Value, WireError> {
        self.surface().await;
        let options = RunOptions {
            mode: self.mode,
            approver: Arc::new(ServeApprover { client: client.name.clone() }),
            asker: Arc::new(HeadlessAsker),
            events: Arc::new(NullSink),
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

/// Who answers a call that needs approval under `clat serve`: nobody can
/// here (the session's stdin is the protocol), so it is denied at once, with
/// the ways to allow it beforehand.
struct ServeApprover {
    client: String,
}

#[async_trait]
impl Approver for ServeApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        Approval::Denied(format!(
            "{} ({}) needs approval in mode {} and the client {} cannot give one through clat serve; {}, or approve it \
             once at a terminal (`clat call {}` and answer [a]lways: kept approvals apply here)",
            request.tool,
            effect_with_reason(request.effect, &request.effect_reason),
            request.mode,
            self.client,
            how_to_allow(request.effect, false).replace("run with --mode", "serve with --mode"),
            request.tool,
        ))
    }
}
