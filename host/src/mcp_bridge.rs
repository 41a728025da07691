//! The MCP adapter: it turns configured servers (`$CLAT_HOME/mcp.json` and
//! installed `mcp-stdio` packages) into registry entries. It decides where a
//! server runs (user servers in `$CLAT_HOME`, a relative `cwd` under it;
//! packages in their artifact directory), keeps each server's stderr in the
//! host's redacted 20-line tail, advertises the `io.artec.clat/hostServices`
//! capability, and maps tool results through the contract's one JSON mapping.
//! Failures are isolated per server.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use clat_mcp::config::ServerEntry;
use clat_mcp::{ClientError, ClientInfo, Era, NoServerRequests, Session, StderrSink, StdioSpec};
use serde_json::{Value, json};

use crate::contract::ToolOutput;
use crate::contract::json::{tool_output_from_json, tool_spec_from_json};
use crate::limits::TOOL_CALL_TIMEOUT;
use crate::names::ExternalKind;
use crate::redact::OutputTail;
use crate::registry::{Registry, ToolError, ToolHandler};
use crate::run::RunContext;

/// The capability CLAT advertises in both eras.
pub const HOST_SERVICES_CAPABILITY: &str = "io.artec.clat/hostServices";
/// Its version.
pub const HOST_SERVICES_VERSION: &str = "0.1.0";

/// The client capabilities sent in `initialize`.
pub fn client_capabilities() -> Value {
    json!({ "experimental": { HOST_SERVICES_CAPABILITY: { "version": HOST_SERVICES_VERSION } } })
}

type SharedTail = Arc<Mutex<OutputTail>>;

struct TailSink(SharedTail);

impl StderrSink for TailSink {
    fn write(&self, bytes: &[u8]) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push_bytes(bytes);
    }
}

/// Where and how a configured stdio server starts. User servers run in
/// `home` (a relative `cwd` resolves under it, never under the project).
pub fn user_stdio_spec(home: &Path, entry: &ServerEntry) -> Option<StdioSpec> {
    let ServerEntry::Stdio { command, args, env, cwd } = entry else { return None };
    let cwd = match cwd {
        None => home.to_path_buf(),
        Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => home.join(dir),
    };
    Some(StdioSpec {
        command: command.clone(),
        args: args.clone(),
        env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        cwd,
    })
}

/// Why a server could not be connected, with the last lines it wrote (redacted).
#[derive(Debug, Clone)]
pub struct ConnectFailure {
    pub reason: String,
    pub stderr_tail: Vec<String>,
}

/// A connected, initialized server.
pub struct McpServer {
    name: String,
    session: Session,
    tail: SharedTail,
}

impl McpServer {
    /// Spawn, initialize and keep a server; a failure carries the reason and the stderr tail.
    pub async fn connect(name: &str, spec: &StdioSpec) -> Result<Arc<McpServer>, ConnectFailure> {
        let tail: SharedTail = Arc::default();
        let with_tail = |e: ClientError, tail: &SharedTail| ConnectFailure {
            reason: e.to_string(),
            stderr_tail: tail.lock().unwrap_or_else(|p| p.into_inner()).lines(),
        };
        let client = ClientInfo { name: "clat".into(), version: env!("CARGO_PKG_VERSION").into() };
        let sink = Arc::new(TailSink(Arc::clone(&tail)));
        let session =
            match Session::connect(spec, Arc::new(NoServerRequests), sink, &client, client_capabilities()).await {
                Ok(s) => s,
                Err(e) => {
                    // Give the server a moment to write why it failed.
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    return Err(with_tail(e, &tail));
                }
            };
        Ok(Arc::new(McpServer { name: name.to_string(), session, tail }))
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The negotiated protocol version and era, e.g. `2026-07-28 (modern)`.
    pub fn protocol(&self) -> String {
        let era = match self.session.era {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        };
        format!("{} ({era})", self.session.protocol_version)
    }

    /// The last lines the server wrote to stderr (redacted).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.tail.lock().unwrap_or_else(|p| p.into_inner()).lines()
    }

    /// List the server's tools and register them; returns registered names,
    /// problems (refused registrations, malformed tools, dropped tools).
    pub async fn register(self: &Arc<Self>, registry: &Registry) -> Result<(Vec<String>, Vec<String>), String> {
        let listing = self.session.list_tools().await.map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        let mut problems = Vec::new();
        if listing.dropped > 0 {
            problems.push(format!(
                "{} tools past the first {} were dropped",
                listing.dropped,
                crate::limits::TOOLS_PER_SERVER_MAX
            ));
        }
        for tool in &listing.tools {
            let spec = match tool_spec_from_json(tool) {
                Ok(s) => s,
                Err(e) => {
                    problems.push(format!("skipped a tool: {e}"));
                    continue;
                }
            };
            let handler = Arc::new(McpTool { server: Arc::clone(self), tool: spec.name.clone() });
            match registry.register_external(ExternalKind::Mcp, &self.name, &spec, handler) {
                Ok(name) => names.push(name),
                Err(e) => problems.push(e.to_string()),
            }
        }
        Ok((names, problems))
    }

    /// Close the connection and reap the server.
    pub async fn close(&self) {
        self.session.connection.close().await;
    }
}

struct McpTool {
    server: Arc<McpServer>,
    tool: String,
}

#[async_trait]
impl ToolHandler for McpTool {
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        let timeout = run.call_deadline(TOOL_CALL_TIMEOUT).saturating_duration_since(std::time::Instant::now());
        let result = self
            .server
            .session
            .call_tool(&self.tool, arguments, timeout, Some(run.cancel_token()))
            .await
            .map_err(|e| ToolError(anyhow::anyhow!("server {}: {e}", self.server.name)))?;
        tool_output_from_json(&result)
            .map_err(|e| ToolError(anyhow::anyhow!("server {} returned a malformed result: {e}", self.server.name)))
    }
}
