//! The serve side: a project's registry as an MCP server — on stdio
//! (`claude mcp add clat -- clat serve --project DIR`), or on Streamable HTTP
//! (`--http ADDR`, loopback unless given a bearer token with `--token-file`) —
//! so any agent gets its native tools, WASM plugins and MCP servers behind the
//! one pipeline. Nothing starts before the project is trusted (exit 3). The
//! extensions start with the server; the first `tools/list` or call waits for them at most the
//! initial surface (`INITIAL_SURFACE_WAIT`), once for the server (a call's run
//! does not wait again), and the registry then freezes for good. Past its tool budget (`--tool-budget`) it lists the
//! native tools and discovery's own (`search_tools`, `load_tools`,
//! `call_tool`: `discovery.rs`) instead of every tool; every tool stays
//! callable by its name. Each `tools/call` is one run under the session's mode,
//! the project's kept approvals applying; an `ask` becomes a form the client
//! shows its user (allow once / always for this tool / deny) when it declared
//! form elicitation, and is otherwise denied at once, saying how to allow it
//! (`ServeApprover`): a call never waits on a question nobody can answer.
//! What an extension asks of CLAT reaches the connected agent the same way:
//! its forms (whole) and single questions go to the client's user (`ClientAsker`), its
//! sampling — after the three gates and the shared budget — to the model of
//! the client that made the call when it offers sampling, else to the
//! configured one (`ClientModel`, one per call). A client's cancel cancels
//! the call's run; the end of the server closes everything.
//! Every call leaves a record in the audit trail (`audit.rs`). The wire side
//! is `clat_mcp::server`; the door to it is [`serve_project`], which `clat
//! serve` calls with the options it parsed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use clat_mcp::jsonrpc::{INTERNAL_ERROR, INVALID_PARAMS, WireError};
use clat_mcp::server::{HttpServeOptions, Peer, ServeEnd, ServedTools, ServerInfo, SessionRef};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::audit::{AuditQueue, AuditTrail, CallAudit, CallRecord};
use crate::contract::PermissionMode;
use crate::contract::json::tool_output_to_json;
use crate::limits::SAMPLING_TOKENS_PER_RUN;
use crate::platform::discovery::{CALL_TOOL, Discovery, DiscoveryOptions, LOAD_TOOLS, SEARCH_TOOLS};
use crate::platform::{MountOptions, Platform, PlatformError, Project, RunOptions};
use crate::registry::{CallError, ToolInfo, ToolSource};
use crate::services::budget::SamplingBudget;
use crate::services::sampling::ModelProvider;
use crate::sync::Unpoisoned;
use crate::{EventSink, RunEventKind};

mod ports;

use ports::{ClientAsker, ClientModel, ServeApprover};

/// How a project is served.
pub struct ServeOptions {
    /// The permission mode of every call's run.
    pub mode: PermissionMode,
    /// The audit trail's file (default: the home's, `audit::AUDIT_FILE`).
    pub audit: Option<PathBuf>,
    /// Serve Streamable HTTP on this address instead of stdio.
    pub http: Option<std::net::SocketAddr>,
    /// The file holding the bearer token HTTP requests must carry.
    pub token_file: Option<PathBuf>,
    /// What the served tools are called.
    pub names: ServedNames,
    /// Past this many bytes of definitions, the tools are found, not listed (`discovery.rs`); none: all listed.
    pub tool_budget: Option<usize>,
    /// Extension sampling requests a client session allows across its calls.
    pub sampling_budget: u32,
    /// Told the server's URL once it listens on HTTP (`clat serve` prints it on stderr).
    pub listening: Option<Listening>,
}

/// Told the URL of a server that listens on HTTP.
pub type Listening = Box<dyn FnOnce(&str) + Send>;

/// What the served tools are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ServedNames {
    /// Their registered names (`wasm_{plugin}_{tool}`, `mcp_{server}_{tool}`), as `clat tools` shows them.
    Registry,
    /// An extension's tool by its own name when no other served tool has or is called that name; else registered.
    Source,
}

/// Why serving stopped short.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The options cannot be served (a token file without a token, an address that cannot be bound or is not
    /// loopback without a token).
    #[error("{0}")]
    Options(String),
    /// The project could not be mounted, or the session model's configuration is malformed.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// The client broke the protocol and the session ended.
    #[error("the session ended: {0}")]
    Session(String),
    /// The server itself failed.
    #[error("{0}")]
    Internal(String),
}

/// Serve the project at `dir` (mounted with `mount`, the session model set to
/// the configured one) on stdin/stdout, or on HTTP, until the client closes
/// its end or `stop` is cancelled; the project is then closed.
pub async fn serve_project(
    platform: &Platform,
    dir: &Path,
    mount: MountOptions,
    options: ServeOptions,
    stop: CancellationToken,
) -> Result<(), ServeError> {
    let ServeOptions { mode, audit, http, token_file, names, tool_budget, sampling_budget, listening } = options;
    let token = token_file.as_deref().map(read_token).transpose()?;
    if let Some(address) = http {
        clat_mcp::server::http::check_bind(address, token.as_deref())
            .map_err(|e| ServeError::Options(e.to_string()))?;
    }
    let configured = platform.session_model()?;
    let options = MountOptions { model: Some(Arc::clone(&configured)), ..mount };
    let project = Arc::new(platform.mount(dir, options)?);
    let listener = match http {
        Some(address) => Some(
            tokio::net::TcpListener::bind(address)
                .await
                .map_err(|e| ServeError::Options(format!("cannot serve HTTP on {address}: {e}")))?,
        ),
        None => None,
    };
    project.start_extensions();
    let info = ServerInfo {
        name: "clat".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: Some(format!(
            "CLAT serves the tools of the project {}: its native tools (read_file, search, …), WASM plugins \
             (wasm_*) and MCP servers (mcp_*), each call checked by CLAT's permission pipeline in mode {mode}. \
             When they are too many to list, search_tools finds the others, load_tools lists them, and call_tool \
             calls one by name.",
            project.root().display()
        )),
        // The listing changes with load_tools (under a budget) and when a server's tool is quarantined.
        tools_change: true,
    };
    let trail = match audit {
        Some(file) => AuditTrail::at(&file),
        None => AuditTrail::in_home(platform.clat_home()),
    };
    let served = Arc::new(ServedProject {
        project: Arc::clone(&project),
        mode,
        trail: AuditQueue::start(trail),
        configured,
        names,
        served_names: std::sync::OnceLock::new(),
        discovery: std::sync::OnceLock::new(),
        sessions: std::sync::Mutex::default(),
        budget_bytes: tool_budget.unwrap_or(usize::MAX),
        sampling_budget,
    });
    let ended = match listener {
        None => {
            let (input, output) = clat_mcp::server::process_stdio();
            match clat_mcp::server::serve(input, output, info, Arc::clone(&served) as _, stop).await {
                ServeEnd::ClientClosed | ServeEnd::Stopped => Ok(()),
                other => Err(ServeError::Session(other.to_string())),
            }
        }
        Some(listener) => {
            let address = listener.local_addr().map_err(|e| ServeError::Internal(e.to_string()))?;
            let url = format!("http://{address}{}", clat_mcp::server::http::MCP_PATH);
            if let Some(listening) = listening {
                listening(&url);
            }
            let options = HttpServeOptions { token, ..HttpServeOptions::default() };
            clat_mcp::server::serve_http(listener, options, info, Arc::clone(&served) as _, stop)
                .await
                .map_err(|e| ServeError::Internal(e.to_string()))
        }
    };
    served.trail.finish().await;
    project.close().await;
    ended
}

/// The bearer token in `file`: its first line, trimmed; never empty.
fn read_token(file: &Path) -> Result<String, ServeError> {
    let unusable = |why: String| ServeError::Options(format!("--token-file {}: {why}", file.display()));
    // A configuration file like any other: a regular file, within its bound.
    let text = crate::home::files::read_config_text(file).map_err(|e| unusable(e.to_string()))?;
    let token = text.lines().next().unwrap_or_default().trim();
    if token.is_empty() {
        return Err(unusable("the file holds no token".into()));
    }
    Ok(token.to_string())
}

/// The project, as `clat_mcp::server` asks for its tools.
struct ServedProject {
    project: Arc<Project>,
    mode: PermissionMode,
    trail: AuditQueue,
    /// The configured model: a call's sampling goes to it when the calling client offers none.
    configured: Arc<dyn ModelProvider>,
    names: ServedNames,
    /// Each tool's served name and registered name, fixed with the registry.
    served_names: std::sync::OnceLock<Vec<(String, String)>>,
    /// What is listed (every tool, or the native ones and a search), fixed with the registry…
    discovery: std::sync::OnceLock<Discovery>,
    /// …and each client session's own copy of it (what a session loads is listed to it from then on, and
    /// its searches favour what it called) and its sampling budget. Sessions that ended are dropped at the
    /// next lookup.
    sessions: std::sync::Mutex<Vec<(SessionRef, ServedSession)>>,
    budget_bytes: usize,
    /// The sampling requests each session's budget allows.
    sampling_budget: u32,
}

/// What one client session has of its own: what is listed to it, and the sampling budget every call of the
/// session charges (one budget for the session, not a fresh one per call: a client's agent turn cannot drive
/// more model requests through an extension than the session allows). Modern requests over HTTP carry no
/// session: they share the stateless one, and so one budget.
#[derive(Clone)]
struct ServedSession {
    discovery: Arc<Discovery>,
    budget: Arc<SamplingBudget>,
}

impl ServedProject {
    /// The initial surface (at most `INITIAL_SURFACE_WAIT`), then the registry frozen for the session: each
    /// tool's served and registered name, fixed then.
    async fn surface(&self) -> &[(String, String)] {
        if let Some(names) = self.served_names.get() {
            return names;
        }
        // The one wait of the project: the runs of the calls do not wait again.
        self.project.settle().await;
        let options = DiscoveryOptions { budget_bytes: self.budget_bytes, ..DiscoveryOptions::default() };
        self.discovery.get_or_init(|| self.project.discovery(&options));
        self.served_names.get_or_init(|| served_names(&self.project.tools(), self.names))
    }

    /// What `session` has of its own: what is listed to it (the offer fixed with the surface, with what that
    /// session loaded and used) and its sampling budget.
    async fn session(&self, session: &SessionRef) -> ServedSession {
        self.surface().await;
        let offer = self.discovery.get().expect("set with the surface");
        let mut sessions = self.sessions.locked();
        sessions.retain(|(s, _)| !s.ended());
        if let Some((_, served)) = sessions.iter().find(|(s, _)| s.is(session)) {
            return served.clone();
        }
        let served = ServedSession {
            discovery: Arc::new(offer.session()),
            budget: Arc::new(SamplingBudget::with_limits(self.sampling_budget, SAMPLING_TOKENS_PER_RUN)),
        };
        sessions.push((session.clone(), served.clone()));
        served
    }

    /// A search_tools or load_tools result with each tool it names (`matches[].name`, `tools[].name`) under its
    /// served name, in its structured content and in its text.
    async fn name_as_served(&self, result: &mut Value) {
        let names = self.surface().await;
        let Some(structured) = result.get_mut("structuredContent") else { return };
        for list in ["matches", "tools"] {
            for tool in structured[list].as_array_mut().into_iter().flatten() {
                let served = names.iter().find(|(_, registered)| tool["name"] == registered.as_str());
                if let Some((served, _)) = served {
                    tool["name"] = json!(served);
                }
            }
        }
        let text = structured.to_string();
        result["content"] = json!([{ "type": "text", "text": text }]);
    }

    /// The registered name of the tool served as `name` (an unknown name as it is).
    async fn registered(&self, name: &str) -> String {
        let names = self.surface().await;
        names.iter().find(|(served, _)| served == name).map_or(name, |(_, registered)| registered).to_string()
    }
}

/// Each tool's served name and registered name. By `Source`, an extension's
/// tool keeps its own name when that is a valid MCP tool name, no other tool
/// is registered under it, and it names no other tool (`ToolInfo::is_named`).
fn served_names(tools: &[ToolInfo], names: ServedNames) -> Vec<(String, String)> {
    let valid = |name: &str| {
        (1..=128).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    };
    let keeps_own_name = |tool: &ToolInfo| {
        let own = tool.original_name.as_str();
        let unique = !tools.iter().any(|t| t.name == own) && tools.iter().filter(|t| t.is_named(own)).count() == 1;
        // Discovery's own tools keep their names.
        let unique = unique && ![SEARCH_TOOLS, LOAD_TOOLS, CALL_TOOL].contains(&own);
        names == ServedNames::Source && tool.source != ToolSource::Native && valid(own) && unique
    };
    let served = |tool: &ToolInfo| if keeps_own_name(tool) { tool.original_name.clone() } else { tool.name.clone() };
    tools.iter().map(|t| (served(t), t.name.clone())).collect()
}

#[async_trait]
impl ServedTools for ServedProject {
    fn listing_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(self.project.scope().registry().listing_changes())
    }

    /// While tools are found rather than all listed, a listing is stale at once: what a session loads joins it.
    fn listing_ttl(&self) -> Option<std::time::Duration> {
        self.discovery.get().filter(|offer| offer.deferring()).map(|_| std::time::Duration::ZERO)
    }

    async fn list(&self, session: &SessionRef) -> Vec<Value> {
        let names = self.surface().await;
        let discovery = self.session(session).await.discovery;
        // By name, not position: a tool withdrawn since the names were fixed (its server stopped) is not listed.
        let served = |tool: &ToolInfo| names.iter().find(|(_, registered)| *registered == tool.name).map(|(s, _)| s);
        let tools = self.project.tools();
        let listed = |tool: &ToolInfo| mcp_tool(served(tool).unwrap_or(&tool.name), tool);
        if !discovery.deferring() {
            return tools.iter().map(listed).collect();
        }
        let mut offered = Vec::new();
        for definition in discovery.offered() {
            match tools.iter().find(|t| definition["name"] == t.name.as_str()) {
                Some(tool) => offered.push(listed(tool)),
                // Discovery's own: finding and loading change nothing. (A tool withdrawn or quarantined since
                // the offer was fixed is not listed.)
                None if definition["name"] == CALL_TOOL => offered.push(definition),
                None if [SEARCH_TOOLS, LOAD_TOOLS].iter().any(|own| definition["name"] == *own) => {
                    let mut own = definition;
                    own["annotations"] = json!({ "readOnlyHint": true, "openWorldHint": false });
                    offered.push(own);
                }
                None => {}
            }
        }
        offered
    }

    async fn call(
        &self,
        client: &Peer,
        name: &str,
        arguments: Value,
        cancelled: CancellationToken,
    ) -> Result<Value, WireError> {
        let (served, mut arguments) = (self.session(&client.session()).await, arguments);
        let discovery = &served.discovery;
        let own = discovery.is_own(name);
        // Discovery's own tools by name; call_tool's target, like any tool, by its served name or registered one.
        let (registered, audited) = match own {
            true if name == CALL_TOOL => match arguments["name"].as_str() {
                Some(target) => {
                    let target = self.registered(target).await;
                    arguments["name"] = json!(target);
                    (name.to_string(), target)
                }
                None => (name.to_string(), name.to_string()),
            },
            true => {
                // load_tools takes served names, like every name a client gives.
                if name == LOAD_TOOLS
                    && let Some(names) = arguments["names"].as_array_mut()
                {
                    for written in names.iter_mut() {
                        if let Some(served) = written.as_str() {
                            *written = json!(self.registered(served).await);
                        }
                    }
                }
                (name.to_string(), name.to_string())
            }
            false => {
                let registered = self.registered(name).await;
                (registered.clone(), registered)
            }
        };
        let audit = Arc::new(CallAudit::default());
        let (mut called, rejected) = self.run_call(client, &served, &registered, arguments, cancelled, &audit).await;
        let sampling = (served.budget.requests(), self.sampling_budget);
        // What search_tools and load_tools answer names the tools as they are served (by their own names, only
        // under `--tool-names source`).
        if own
            && self.names == ServedNames::Source
            && [SEARCH_TOOLS, LOAD_TOOLS].contains(&name)
            && let Ok(result) = &mut called
        {
            self.name_as_served(result).await;
        }
        if own && name == LOAD_TOOLS && called.as_ref().is_ok_and(|r| r["isError"] != true) {
            client.tools_changed();
        }
        let (ended, client, mode) = (chrono::Utc::now(), client.info().clone(), self.mode);
        // Made and written by the trail's task, after the answer leaves: not on the call's path. A call_tool
        // call is the call of its target, as the run's events say.
        self.trail.push(move || {
            let (who, mode) = (format!("{} {}", client.name, client.version), mode.to_string());
            let rejected = rejected.as_deref();
            audit.record(&CallRecord { ended, client: who.trim(), tool: &audited, mode: &mode, rejected, sampling })
        });
        called
    }
}

impl ServedProject {
    /// One call as one run: its events to `audit`, a client's cancel cancelling it. With the answer: why the
    /// call was not made at all (an unknown tool, arguments its schema refuses), if it was not.
    async fn run_call(
        &self,
        client: &Peer,
        served: &ServedSession,
        name: &str,
        arguments: Value,
        cancelled: CancellationToken,
        audit: &Arc<CallAudit>,
    ) -> (Result<Value, WireError>, Option<String>) {
        // One copy of the client for the run's four ports.
        let client = Arc::new(client.clone());
        let options = RunOptions {
            mode: self.mode,
            approver: Arc::new(ServeApprover { client: Arc::clone(&client) }),
            asker: Arc::new(ClientAsker { client: Arc::clone(&client) }),
            events: Arc::new(CallEvents { audit: Arc::clone(audit), client: Arc::clone(&client) }),
            keep_approvals: true,
            deadline: None,
            model: Some(Arc::new(ClientModel { client, configured: Arc::clone(&self.configured) })),
            budget: Some(Arc::clone(&served.budget)),
        };
        let run = match self.project.start_run(options).await {
            Ok(run) => run,
            Err(e) => return (Err(WireError::new(INTERNAL_ERROR, e.to_string())), None),
        };
        let called = tokio::select! {
            called = served.discovery.call(&run, name, arguments) => called,
            _ = cancelled.cancelled() => {
                run.cancel();
                return (Err(WireError::new(INTERNAL_ERROR, format!("{name} was cancelled"))), None);
            }
        };
        let tool_error = |text: String| Ok(json!({ "content": [{ "type": "text", "text": text }], "isError": true }));
        match called {
            Ok(output) => (Ok(tool_output_to_json(&output)), None),
            // No such tool: a protocol error.
            Err(e @ CallError::UnknownTool(_)) => {
                (Err(WireError::new(INVALID_PARAMS, e.to_string())), Some(e.to_string()))
            }
            // Arguments its schema refuses: a tool error, so that the model reads it and corrects its call
            // (SEP-1303, 2025-11-25); the call was never made.
            Err(e @ CallError::InvalidArguments { .. }) => (tool_error(e.to_string()), Some(e.to_string())),
            // The call was made and did not succeed: a tool error the model reads.
            Err(e) => (tool_error(e.to_string()), None),
        }
    }
}

/// A served call's run events: each to the audit trail's record of the call;
/// an extension's progress and log lines also to the client, on the call's
/// stream (progress under the client's token, when it gave one).
struct CallEvents {
    audit: Arc<CallAudit>,
    client: Arc<Peer>,
}

impl EventSink for CallEvents {
    fn emit(&self, event: crate::RunEvent) {
        match &event.kind {
            RunEventKind::Progress { progress, total, message, .. } => {
                self.client.progress(*progress, *total, message.as_deref());
            }
            RunEventKind::PluginLog { source, level, message } => {
                let level = match level.as_str() {
                    "trace" | "debug" => "debug",
                    "warn" => "warning",
                    other => other,
                };
                self.client.log(level, source, message);
            }
            _ => {}
        }
        self.audit.emit(event);
    }
}

/// A registered tool as an MCP `Tool`: its served name, description,
/// schemas, and the hints that map back to its effect.
fn mcp_tool(name: &str, tool: &ToolInfo) -> Value {
    let annotations = crate::policy::effects::annotations_for_effect(tool.effect);
    let mut served = crate::registry::definition(name, &tool.description, &tool.input_schema);
    if let Some(output) = &tool.output_schema {
        served["outputSchema"] = output.clone();
    }
    served["annotations"] = crate::contract::json::tool_annotations_to_json(&annotations);
    served
}
