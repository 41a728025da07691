//! A server that starts at its first call. When discovery would not offer a
//! server's tools up front (`StartFilter::FirstUse`, resolved by the door)
//! and a listing of it is kept under its identity now (`home/listings.rs`),
//! the scope registers the tools that listing's start registered — their kept
//! definitions, which are the pinned ones — with a handler that starts the
//! server the first time one of them is called, then forwards the call. A
//! search, a load and the listing cost no process; a call costs one start.
//!
//! The start is every server's (`connect_and_register`), except that the
//! tools are already registered: the live listing is checked against their
//! pins, and a tool whose definition changed is quarantined as at any
//! re-listing — the call that started the server is refused, never sent.
//! Concurrent first calls share one start; a start that failed is tried again
//! by the next call. Once started, the server joins the scope's live
//! extensions (torn down with them) and its status is the scope's.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{ConfiguredServer, McpServer, Registering};
use crate::contract::ToolOutput;
use crate::extension::ScopeLists;
use crate::extension::{ExtensionState, ExtensionStatus};
use crate::home::ClatHome;
use crate::home::listings::Listing;
use crate::limits::TOOL_CALL_TIMEOUT;
use crate::names::{ExternalKind, names_tool};
use crate::policy::pins::ToolPins;
use crate::registry::{Registry, ToolError, ToolHandler};
use crate::run::RunContext;
use crate::services::HostServices;
use crate::sync::Unpoisoned;

/// Why a server with a kept listing is not started yet.
pub(crate) const STARTS_AT_FIRST_CALL: &str =
    "not started yet: its tools are its kept listing's; it starts at their first call";

/// A server registered from its kept listing, started at the first call of one of its tools.
pub(crate) struct DeferredServer {
    configured: ConfiguredServer,
    services: Arc<HostServices>,
    registry: Weak<Registry>,
    home: ClatHome,
    pins: ToolPins,
    closing: CancellationToken,
    lists: Arc<ScopeLists>,
    /// Its own names of the tools registered from the listing, and their registered names (set once registered).
    registered: std::sync::OnceLock<(Vec<String>, Vec<String>)>,
    started: tokio::sync::OnceCell<Arc<McpServer>>,
}

/// What a scope gives a server it starts at first use.
pub(crate) struct ScopeParts<'a> {
    pub services: &'a Arc<HostServices>,
    pub registry: &'a Arc<Registry>,
    pub home: &'a ClatHome,
    pub pins: ToolPins,
    pub closing: &'a CancellationToken,
    pub lists: &'a Arc<ScopeLists>,
}

/// Register `configured`'s tools from `listing` (only those its last start registered: one quarantined then is not
/// among them), each started at its first call. Returns its status: `configured`, with the registered tools.
pub(crate) fn register(configured: ConfiguredServer, listing: &Listing, parts: ScopeParts<'_>) -> ExtensionStatus {
    let kind = super::sources::target_kind(&configured.target);
    let mut status = ExtensionStatus::new(&configured.name, kind, ExtensionState::Configured, None);
    status.loading = configured.options.loading.clone();
    let name = configured.name.clone();
    let kept: Vec<_> = listing
        .tools
        .iter()
        .filter(|spec| listing.registered.iter().any(|r| names_tool(ExternalKind::Mcp, &name, r, &spec.name)))
        .collect();
    let server = Arc::new(DeferredServer {
        services: Arc::clone(parts.services),
        registry: Arc::downgrade(parts.registry),
        home: parts.home.clone(),
        pins: parts.pins,
        closing: parts.closing.clone(),
        lists: Arc::clone(parts.lists),
        registered: std::sync::OnceLock::new(),
        started: tokio::sync::OnceCell::new(),
        configured,
    });
    let (mut tools, mut registered) = (Vec::new(), Vec::new());
    for spec in kept {
        let handler = Arc::new(DeferredTool {
            server: Arc::clone(&server),
            tool: spec.name.clone(),
            registered: crate::names::external_tool_name(ExternalKind::Mcp, &name, &spec.name),
        });
        let identity = &server.configured.identity;
        // Its schema passed registration's check when its start registered it: compiled at its first call.
        match parts.registry.register_external_checked(ExternalKind::Mcp, &name, identity, spec, false, handler) {
            Ok(registered_name) => {
                tools.push(spec.name.clone());
                registered.push(registered_name);
            }
            Err(e) => status.problems.push(e.to_string()),
        }
    }
    let _ = server.registered.set((tools, registered.clone()));
    status.tools = registered;
    status.problems.insert(0, STARTS_AT_FIRST_CALL.into());
    status
}

impl DeferredServer {
    /// The started server: started now by the first caller, waited for by the others.
    async fn started(&self) -> Result<Arc<McpServer>, ToolError> {
        self.started.get_or_try_init(|| self.start()).await.cloned()
    }

    async fn start(&self) -> Result<Arc<McpServer>, ToolError> {
        let name = &self.configured.name;
        let closed = || ToolError(anyhow::anyhow!("server {name} was not started: its project is closing"));
        let registry = self.registry.upgrade().ok_or_else(closed)?;
        let kind = super::sources::target_kind(&self.configured.target);
        let starting = ExtensionStatus { state: ExtensionState::Starting, ..self.status_now(kind) };
        self.lists.set_status(starting);
        let (tools, registered) = self.registered.get().map(|(t, r)| (t.as_slice(), r.as_slice())).unwrap_or_default();
        let registering = Registering::Kept { tools, registered };
        let (mut status, server) = super::connect_and_register(
            &self.configured,
            &self.services,
            &registry,
            registering,
            &self.pins,
            &self.closing,
        )
        .await;
        status.oauth = super::sources::target_login(&self.configured.target);
        status.loading = self.configured.options.loading.clone();
        let Some(server) = server else {
            let why = status.problems.last().cloned().unwrap_or_else(|| "it did not start".into());
            self.lists.set_status(status);
            return Err(ToolError(anyhow::anyhow!("server {name} failed to start at its first call: {why}")));
        };
        let listed = server.listed.locked().clone();
        let identity = &server.link.identity;
        if let Err(e) = crate::home::listings::remember(&self.home, kind, name, identity, &status.tools, Some(&listed))
        {
            tracing::debug!("cannot keep the listing of {name}: {e}");
        }
        {
            // Under the lock the scope's close drains: either it sees this server, or this sees the close.
            let mut live = self.lists.live.locked();
            if !self.closing.is_cancelled() {
                live.push(Arc::clone(&server) as _);
                drop(live);
                self.lists.set_status(status);
                return Ok(server);
            }
        }
        super::teardown(&server, &registry).await;
        Err(closed())
    }

    /// Its status as the scope records it now.
    fn status_now(&self, kind: crate::extension::ExtensionKind) -> ExtensionStatus {
        let recorded =
            self.lists.statuses.locked().iter().find(|s| s.name == self.configured.name && s.kind == kind).cloned();
        recorded.unwrap_or_else(|| ExtensionStatus::new(&self.configured.name, kind, ExtensionState::Configured, None))
    }
}

/// The registry's handler of a tool registered from a kept listing.
struct DeferredTool {
    server: Arc<DeferredServer>,
    /// The server's own name of it, and its registered name.
    tool: String,
    registered: String,
}

#[async_trait]
impl ToolHandler for DeferredTool {
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        let deferred = &self.server;
        let server = deferred.started().await?;
        // Its live definition against its pin, as the start checked it: a changed tool is never called.
        if let Some(registry) = deferred.registry.upgrade()
            && let Some(held) = registry.quarantined(&self.registered)
        {
            return Err(ToolError(anyhow::anyhow!(
                "tool {} is quarantined: its definition changed since it was pinned ({}); {} takes the new one",
                self.registered,
                held.changes.join("; "),
                held.accept
            )));
        }
        if !server.listed.locked().iter().any(|spec| spec.name == self.tool) {
            return Err(ToolError(anyhow::anyhow!(
                "server {} no longer lists tool {:?} (its kept listing had it); it leaves the tools at the next mount",
                server.name(),
                self.tool
            )));
        }
        server.call_tool(&self.tool, arguments, run).await
    }

    fn waiting_on_host(&self) -> bool {
        self.server.started.get().is_some_and(|server| server.host_requests_pending() > 0)
    }

    fn call_timeout(&self) -> std::time::Duration {
        self.server.configured.options.tool_timeout.unwrap_or(TOOL_CALL_TIMEOUT)
    }
}
