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
use clat_mcp::jsonrpc::METHOD_NOT_FOUND;
use clat_mcp::{ClientError, ClientInfo, Era, ServerRequests, Session, StderrSink, StdioSpec, WireError};
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

/// What a server asks of CLAT. Server requests are not served yet (-32601);
/// `notifications/tools/list_changed` wakes the server's re-listing task.
struct ServerEvents {
    list_changed: Arc<tokio::sync::Notify>,
}

#[async_trait]
impl ServerRequests for ServerEvents {
    async fn handle(&self, method: &str, _params: Option<Value>) -> Result<Value, WireError> {
        Err(WireError::new(METHOD_NOT_FOUND, format!("method not found: {method}")))
    }

    fn notification(&self, method: &str, _params: Option<&Value>) {
        if method == "notifications/tools/list_changed" {
            self.list_changed.notify_one();
        }
    }
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
    list_changed: Arc<tokio::sync::Notify>,
    /// The server's own tool names already registered (re-listing adds only new ones).
    registered: Mutex<std::collections::HashSet<String>>,
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
        let list_changed = Arc::new(tokio::sync::Notify::new());
        let events = Arc::new(ServerEvents { list_changed: Arc::clone(&list_changed) });
        let session = match Session::connect(spec, events, sink, &client, client_capabilities()).await {
            Ok(s) => s,
            Err(e) => {
                // Give the server a moment to write why it failed.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                return Err(with_tail(e, &tail));
            }
        };
        Ok(Arc::new(McpServer { name: name.to_string(), session, tail, list_changed, registered: Mutex::default() }))
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
            if self.registered.lock().unwrap_or_else(|p| p.into_inner()).contains(&spec.name) {
                continue;
            }
            let handler = Arc::new(McpTool { server: Arc::clone(self), tool: spec.name.clone() });
            match registry.register_external(ExternalKind::Mcp, &self.name, &spec, handler) {
                Ok(name) => {
                    self.registered.lock().unwrap_or_else(|p| p.into_inner()).insert(spec.name.clone());
                    names.push(name);
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        Ok((names, problems))
    }

    /// Re-list on `notifications/tools/list_changed` and register new tools,
    /// until the registry freezes (then a change is only logged).
    pub fn spawn_relisting(self: &Arc<Self>, registry: &Arc<Registry>) {
        let (server, registry) = (Arc::downgrade(self), Arc::downgrade(registry));
        let notify = Arc::clone(&self.list_changed);
        tokio::spawn(async move {
            loop {
                notify.notified().await;
                let (Some(server), Some(registry)) = (server.upgrade(), registry.upgrade()) else { return };
                if registry.is_frozen() {
                    tracing::info!(
                        "server {} changed its tools after the registry froze; restart to see them",
                        server.name
                    );
                    return;
                }
                match server.register(&registry).await {
                    Ok((names, problems)) => {
                        tracing::debug!(
                            "server {} re-listed: {} new tools, problems {problems:?}",
                            server.name,
                            names.len()
                        )
                    }
                    Err(e) => tracing::warn!("server {}: re-listing failed: {e}", server.name),
                }
            }
        });
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
