//! The MCP adapter: it turns configured servers (`$CLAT_HOME/mcp.json` and
//! installed `mcp-stdio` packages) into registry entries. It decides where a
//! server runs (user servers in `$CLAT_HOME`, a relative `cwd` under it;
//! packages in their artifact directory), keeps each server's stderr in the
//! host's redacted 20-line tail, advertises the `io.artec.clat/hostServices`
//! capability, and maps tool results through the contract's one JSON mapping.
//! Failures are isolated per server.
//!
//! It also serves what a server asks of CLAT, by mapping JSON onto the host's
//! one `HostServices` implementation (the same one guests use): `sampling/
//! createMessage` and `elicitation/create` (protocol 2025-06-18 or newer), and,
//! for servers that advertise the `io.artec.clat/hostServices` capability,
//! `io.artec.clat/context/get` and `io.artec.clat/tools/call`; opted-in servers
//! also get `io.artec.clat/context/changed`. A request belongs to the run of
//! the server's newest `tools/call` still in flight; with none, there is no
//! active run and the services refuse (no model call, no question, no tool).
//! While a sampling or elicitation request of a server is pending, that
//! server's calls report `waiting_on_host`, which lets the registry extend
//! their deadline in steps.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use clat_mcp::config::ServerEntry;
use clat_mcp::jsonrpc::METHOD_NOT_FOUND;
use clat_mcp::{ClientError, ClientInfo, Era, HttpSpec, ServerRequests, Session, StderrSink, StdioSpec, WireError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::contract::json::{
    context_snapshot_to_json, elicitation_form_from_json, elicitation_result_to_json, host_error_to_wire,
    host_tool_call_from_json, sampling_request_from_json, sampling_result_to_json, tool_output_from_json,
    tool_output_to_json, tool_spec_from_json,
};
use crate::contract::{ContextSnapshot, HostError, ToolOutput};
use crate::limits::{DSH_PROMPT_MAX_BYTES, DSH_PROMPTS_PER_SERVER_MAX, HOST_REQUEST_EXTENSION_MAX, TOOL_CALL_TIMEOUT};
use crate::names::ExternalKind;
use crate::redact::OutputTail;
use crate::registry::{Registry, ToolError, ToolHandler};
use crate::run::RunContext;
use crate::services::HostServices;

/// The capability CLAT advertises in both eras.
pub const HOST_SERVICES_CAPABILITY: &str = "io.artec.clat/hostServices";
/// Its version.
pub const HOST_SERVICES_VERSION: &str = "0.1.0";

/// The client capabilities sent in `initialize` (and in every modern `_meta`):
/// sampling, form elicitation, and CLAT's host services.
pub fn client_capabilities() -> Value {
    json!({
        "sampling": {},
        "elicitation": { "form": {} },
        "experimental": { HOST_SERVICES_CAPABILITY: { "version": HOST_SERVICES_VERSION } },
    })
}

/// The `_meta` key that marks a prompt as a system-prompt contribution (DSH):
/// `"_meta": {"io.artec.clat/dsh": {"systemPrompt": true}}` on a `prompts/list` entry.
pub const DSH_PROMPT_MARKER: &str = "io.artec.clat/dsh";

/// The first protocol version with elicitation.
const ELICITATION_SINCE: &str = "2025-06-18";

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

/// Where a server runs: a local subprocess or a Streamable HTTP endpoint.
#[derive(Debug, Clone)]
pub enum ServerTarget {
    Stdio(StdioSpec),
    Http(HttpSpec),
}

impl ServerTarget {
    /// `mcp-stdio` or `mcp-http`.
    pub fn kind(&self) -> &'static str {
        match self {
            ServerTarget::Stdio(_) => "mcp-stdio",
            ServerTarget::Http(_) => "mcp-http",
        }
    }
}

/// A remote server's target from its `mcp.json` entry (headers stay in memory).
pub fn http_spec(entry: &ServerEntry) -> Option<HttpSpec> {
    let ServerEntry::Http { url, headers } = entry else { return None };
    Some(HttpSpec { url: url.clone(), headers: headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect() })
}

/// What one server shares with the handler serving its requests.
struct ServerLink {
    /// `mcp:{name}`, the source in audits and events.
    source: String,
    services: Arc<HostServices>,
    list_changed: tokio::sync::Notify,
    /// This server's `tools/call`s in flight, oldest first: their run, and a
    /// token that ends the host requests made for them when the call ends.
    active: Mutex<Vec<(u64, RunContext, CancellationToken)>>,
    next_call: AtomicU64,
    /// Sampling and elicitation requests of this server waiting for the host.
    host_requests_pending: AtomicUsize,
    /// The server advertised `io.artec.clat/hostServices`.
    opted_in: AtomicBool,
    /// The negotiated protocol version (set once connected).
    protocol_version: OnceLock<String>,
}

impl ServerLink {
    fn current_call(&self) -> Option<(RunContext, CancellationToken)> {
        self.active.lock().unwrap_or_else(|p| p.into_inner()).last().map(|(_, run, ended)| (run.clone(), ended.clone()))
    }

    /// Serve one request; it ends (as cancelled) if the call it belongs to ends first.
    async fn serve(&self, method: &str, params: Option<Value>) -> Result<Value, WireError> {
        let call = self.current_call();
        let ended = call.as_ref().map(|(_, ended)| ended.clone()).unwrap_or_default();
        let run = call.map(|(run, _)| run);
        tokio::select! {
            answer = self.serve_in(method, params, run) => answer,
            _ = ended.cancelled() => Err(host_error_to_wire(&HostError::Cancelled)),
        }
    }

    async fn serve_in(&self, method: &str, params: Option<Value>, run: Option<RunContext>) -> Result<Value, WireError> {
        let params = params.unwrap_or_else(|| json!({}));
        let invalid = |e: String| host_error_to_wire(&HostError::Invalid(e));
        match method {
            "sampling/createMessage" => {
                let request = sampling_request_from_json(&params).map_err(|e| invalid(e.to_string()))?;
                let _pending = HostRequestPending::enter(&self.host_requests_pending);
                let result = self.services.create_message(&request, &self.source, run.as_ref()).await;
                result.map(|r| sampling_result_to_json(&r)).map_err(|e| host_error_to_wire(&e))
            }
            "elicitation/create" => {
                let version = self.protocol_version.get().map(String::as_str).unwrap_or("");
                if version < ELICITATION_SINCE {
                    return Err(host_error_to_wire(&HostError::Unsupported(format!(
                        "elicitation needs protocol {ELICITATION_SINCE} or newer; this session speaks {version:?}"
                    ))));
                }
                let form = elicitation_form_from_json(&params).map_err(|e| {
                    host_error_to_wire(&match e {
                        crate::contract::json::FormShapeError::Unsupported(m) => HostError::Unsupported(m),
                        crate::contract::json::FormShapeError::Invalid(m) => HostError::Invalid(m),
                    })
                })?;
                let _pending = HostRequestPending::enter(&self.host_requests_pending);
                let result = self.services.elicit(&form, &self.source, run.as_ref()).await;
                result.map(|r| elicitation_result_to_json(&r)).map_err(|e| host_error_to_wire(&e))
            }
            "io.artec.clat/context/get" if self.opted_in.load(Ordering::SeqCst) => {
                Ok(json!({ "snapshot": context_snapshot_to_json(&self.services.snapshot(run.as_ref())) }))
            }
            "io.artec.clat/tools/call" if self.opted_in.load(Ordering::SeqCst) => {
                let (tool, arguments) = host_tool_call_from_json(&params).map_err(|e| invalid(e.to_string()))?;
                let result = self.services.call_tool(tool, &arguments, &self.source, run.as_ref()).await;
                result.map(|o| tool_output_to_json(&o)).map_err(|e| host_error_to_wire(&e))
            }
            _ => Err(WireError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))),
        }
    }
}

/// Counts one host request as pending until dropped.
struct HostRequestPending<'a>(&'a AtomicUsize);

impl<'a> HostRequestPending<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        HostRequestPending(count)
    }
}

impl Drop for HostRequestPending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The connection's handler: server requests go to `ServerLink::serve`;
/// `notifications/tools/list_changed` wakes the re-listing task.
struct ServerEvents(Arc<ServerLink>);

#[async_trait]
impl ServerRequests for ServerEvents {
    async fn handle(&self, method: &str, params: Option<Value>) -> Result<Value, WireError> {
        self.0.serve(method, params).await
    }

    fn notification(&self, method: &str, _params: Option<&Value>) {
        if method == "notifications/tools/list_changed" {
            self.0.list_changed.notify_one();
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
    link: Arc<ServerLink>,
    /// The latest context for an opted-in server (`io.artec.clat/context/changed`), coalesced.
    context: tokio::sync::watch::Sender<Option<Value>>,
    /// The server's own tool names already registered (re-listing adds only new ones).
    registered: Mutex<std::collections::HashSet<String>>,
}

impl McpServer {
    /// Spawn, initialize and keep a server; a failure carries the reason and the stderr tail.
    pub async fn connect(
        name: &str,
        target: &ServerTarget,
        services: &Arc<HostServices>,
    ) -> Result<Arc<McpServer>, ConnectFailure> {
        let tail: SharedTail = Arc::default();
        let with_tail = |e: ClientError, tail: &SharedTail| ConnectFailure {
            reason: crate::redact::redact(&e.to_string()),
            stderr_tail: tail.lock().unwrap_or_else(|p| p.into_inner()).lines(),
        };
        let client = ClientInfo { name: "clat".into(), version: env!("CARGO_PKG_VERSION").into() };
        let sink = Arc::new(TailSink(Arc::clone(&tail)));
        let link = Arc::new(ServerLink {
            source: format!("mcp:{name}"),
            services: Arc::clone(services),
            list_changed: tokio::sync::Notify::new(),
            active: Mutex::default(),
            next_call: AtomicU64::new(0),
            host_requests_pending: AtomicUsize::new(0),
            opted_in: AtomicBool::new(false),
            protocol_version: OnceLock::new(),
        });
        let events = Arc::new(ServerEvents(Arc::clone(&link)));
        let connected = match target {
            ServerTarget::Stdio(spec) => Session::connect(spec, events, sink, &client, client_capabilities()).await,
            ServerTarget::Http(spec) => Session::connect_http(spec, events, &client, client_capabilities()).await,
        };
        let session = match connected {
            Ok(s) => s,
            Err(e) => {
                // Give the server a moment to write why it failed.
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                return Err(with_tail(e, &tail));
            }
        };
        let _ = link.protocol_version.set(session.protocol_version.clone());
        let opted_in =
            session.server_capabilities.pointer("/experimental").and_then(|e| e.get(HOST_SERVICES_CAPABILITY));
        link.opted_in.store(opted_in.is_some_and(|c| !c.is_null()), Ordering::SeqCst);
        let (context, _) = tokio::sync::watch::channel(None);
        let server =
            Arc::new(McpServer { name: name.to_string(), session, tail, link, context, registered: Mutex::default() });
        // Context notifications go to opted-in stdio servers; HTTP peers ask with context/get.
        if server.link.opted_in.load(Ordering::SeqCst) && matches!(target, ServerTarget::Stdio(_)) {
            server.spawn_context_sender();
        }
        Ok(server)
    }

    /// How many of this server's sampling and elicitation requests wait on the host now.
    pub fn host_requests_pending(&self) -> usize {
        self.link.host_requests_pending.load(Ordering::SeqCst)
    }

    /// Whether the server opted into CLAT's host services.
    pub fn opted_in(&self) -> bool {
        self.link.opted_in.load(Ordering::SeqCst)
    }

    /// Offer the latest context (`None`: the run ended) to an opted-in server:
    /// never blocks, and a newer snapshot replaces one not sent yet.
    pub fn notify_context(&self, snapshot: Option<&ContextSnapshot>) {
        if self.opted_in() {
            self.context.send_replace(Some(snapshot.map_or(Value::Null, context_snapshot_to_json)));
        }
    }

    fn spawn_context_sender(self: &Arc<Self>) {
        let server = Arc::downgrade(self);
        let mut latest = self.context.subscribe();
        tokio::spawn(async move {
            while latest.changed().await.is_ok() {
                let Some(snapshot) = latest.borrow_and_update().clone() else { continue };
                let Some(server) = server.upgrade() else { return };
                let params = json!({ "snapshot": snapshot });
                if let Err(e) = server.session.connection.notify("io.artec.clat/context/changed", Some(params)).await {
                    tracing::debug!("server {}: context/changed not sent: {e}", server.name);
                    return;
                }
            }
        });
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
        problems.extend(listing.unusable.iter().cloned());
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

    /// Import the server's marked system prompts (if it advertises prompts):
    /// `prompts/list` (paged like tools), the entries marked with
    /// `DSH_PROMPT_MARKER` (at most `DSH_PROMPTS_PER_SERVER_MAX`), each resolved
    /// with `prompts/get` — the project root goes only into an argument named
    /// `cwd`, and only to a prompt that declares it — text only, at most
    /// `DSH_PROMPT_MAX_BYTES`. Returns the registered names and the problems; a
    /// failure here never touches the server's tools.
    pub async fn register_system_prompts(
        &self,
        registry: &Registry,
        project_root: &Path,
    ) -> (Vec<String>, Vec<String>) {
        let (mut names, mut problems) = (Vec::new(), Vec::new());
        if self.session.server_capabilities.get("prompts").is_none_or(Value::is_null) {
            return (names, problems);
        }
        let listed = match self.session.list_prompts().await {
            Ok(listed) => listed,
            Err(e) => {
                problems.push(format!("prompts/list failed: {e}"));
                return (names, problems);
            }
        };
        let marked: Vec<&Value> = listed
            .iter()
            .filter(|p| {
                p.get("_meta").and_then(|m| m.get(DSH_PROMPT_MARKER)).and_then(|d| d.get("systemPrompt"))
                    == Some(&Value::Bool(true))
            })
            .collect();
        if marked.len() > DSH_PROMPTS_PER_SERVER_MAX {
            problems.push(format!(
                "{} marked system prompts past the first {DSH_PROMPTS_PER_SERVER_MAX} were dropped",
                marked.len() - DSH_PROMPTS_PER_SERVER_MAX
            ));
        }
        for prompt in marked.into_iter().take(DSH_PROMPTS_PER_SERVER_MAX) {
            let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                problems.push("a marked prompt has no name; skipped".into());
                continue;
            };
            let takes_cwd = prompt
                .get("arguments")
                .and_then(Value::as_array)
                .is_some_and(|args| args.iter().any(|a| a.get("name").and_then(Value::as_str) == Some("cwd")));
            let arguments = if takes_cwd { json!({ "cwd": project_root.display().to_string() }) } else { json!({}) };
            let resolved = match self.session.get_prompt(name, arguments).await {
                Ok(result) => result,
                Err(e) => {
                    problems.push(format!("system prompt {name}: prompts/get failed: {e}"));
                    continue;
                }
            };
            let text = match prompt_text(&resolved) {
                Ok(text) => text,
                Err(e) => {
                    problems.push(format!("system prompt {name}: {e}; skipped"));
                    continue;
                }
            };
            if text.len() > DSH_PROMPT_MAX_BYTES {
                problems.push(format!(
                    "system prompt {name} resolved to {} bytes, over the {DSH_PROMPT_MAX_BYTES}-byte limit; skipped",
                    text.len()
                ));
                continue;
            }
            match registry.register_system_prompt(ExternalKind::Mcp, &self.name, name, text) {
                Ok(()) => names.push(name.to_string()),
                Err(e) => problems.push(e.to_string()),
            }
        }
        (names, problems)
    }

    /// Re-list on `notifications/tools/list_changed` and register new tools,
    /// until the registry freezes (then a change is only logged).
    pub fn spawn_relisting(self: &Arc<Self>, registry: &Arc<Registry>) {
        let (server, registry) = (Arc::downgrade(self), Arc::downgrade(registry));
        let link = Arc::clone(&self.link);
        tokio::spawn(async move {
            loop {
                link.list_changed.notified().await;
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

/// The text of a `prompts/get` result: its messages' text content, joined by blank lines.
fn prompt_text(result: &Value) -> Result<String, String> {
    let messages = result.get("messages").and_then(Value::as_array).ok_or("the result has no `messages` array")?;
    let mut parts = Vec::with_capacity(messages.len());
    for message in messages {
        let content = message.get("content").ok_or("a message has no content")?;
        match (content.get("type").and_then(Value::as_str), content.get("text").and_then(Value::as_str)) {
            (Some("text"), Some(text)) => parts.push(text),
            (kind, _) => {
                return Err(format!(
                    "a message has {} content; only text can join a system prompt",
                    kind.unwrap_or("untyped")
                ));
            }
        }
    }
    Ok(parts.join("\n\n"))
}

struct McpTool {
    server: Arc<McpServer>,
    tool: String,
}

#[async_trait]
impl ToolHandler for McpTool {
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        // The registry owns the deadline (and extends it while this server waits
        // on the host); the transport's own bound only backs it up.
        let timeout = run.call_deadline(TOOL_CALL_TIMEOUT).saturating_duration_since(std::time::Instant::now())
            + HOST_REQUEST_EXTENSION_MAX;
        let link = &self.server.link;
        let call = link.next_call.fetch_add(1, Ordering::SeqCst);
        let ended = CancellationToken::new();
        link.active.lock().unwrap_or_else(|p| p.into_inner()).push((call, run.clone(), ended.clone()));
        let _active = ActiveCall { link, call, ended };
        let result =
            self.server.session.call_tool(&self.tool, arguments, timeout, Some(run.cancel_token())).await.map_err(
                |e| {
                    ToolError(anyhow::anyhow!("server {}: {}", self.server.name, crate::redact::redact(&e.to_string())))
                },
            )?;
        tool_output_from_json(&result)
            .map_err(|e| ToolError(anyhow::anyhow!("server {} returned a malformed result: {e}", self.server.name)))
    }

    fn waiting_on_host(&self) -> bool {
        self.server.link.host_requests_pending.load(Ordering::SeqCst) > 0
    }
}

/// Removes a call from its server's active calls when it ends (or is
/// dropped), and ends the host requests still being served for it.
struct ActiveCall<'a> {
    link: &'a ServerLink,
    call: u64,
    ended: CancellationToken,
}

impl Drop for ActiveCall<'_> {
    fn drop(&mut self) {
        self.ended.cancel();
        self.link.active.lock().unwrap_or_else(|p| p.into_inner()).retain(|(id, _, _)| *id != self.call);
    }
}
