//! An MCP server's tools in the registry: listing and registering them as
//! `mcp_{server}_{tool}` (re-listing on `notifications/tools/list_changed`:
//! new tools until the freeze, a tool whose definition changed withdrawn and
//! quarantined at any time), and `McpTool`, the handler that runs one
//! `tools/call` and maps its result through the contract's one JSON mapping.

use std::sync::Arc;

use async_trait::async_trait;
use clat_mcp::ClientError;
use serde_json::Value;

use super::server::McpServer;
use crate::contract::ToolOutput;
use crate::contract::json::{tool_output_from_json, tool_spec_from_json};
use crate::extension::LoadingSettings;
use crate::limits::{HOST_REQUEST_EXTENSION_MAX, TOOL_CALL_TIMEOUT, TOOLS_PER_SERVER_MAX};
use crate::names::{ExternalKind, external_tool_name, names_tool};
use crate::policy::pins::Verdict;
use crate::registry::{Quarantine, Registry, ToolError, ToolHandler};
use crate::run::RunContext;
use crate::sync::Unpoisoned;

impl McpServer {
    /// List the server's tools and register them; returns registered names,
    /// problems (refused registrations, malformed tools, dropped tools).
    /// `relisting` (after `tools/list_changed`): what is new is registered
    /// only until the registry froze.
    pub async fn register(
        self: &Arc<Self>,
        registry: &Registry,
        relisting: bool,
    ) -> Result<(Vec<String>, Vec<String>), String> {
        let listing = self.session().list_tools().await.map_err(|e| e.to_string())?;
        let mut names = Vec::new();
        let mut problems = Vec::new();
        if listing.dropped > 0 {
            problems.push(format!("{} tools past the first {TOOLS_PER_SERVER_MAX} were dropped", listing.dropped));
        }
        problems.extend(listing.unusable.iter().cloned());
        let filter = &self.options.tools;
        let offered: Vec<&str> = listing.tools.iter().filter_map(|t| t.get("name")?.as_str()).collect();
        // A filter may name a tool by its registered name, the server's name, or that normalized.
        let is_named = |own: &str, written: &str| {
            names_tool(ExternalKind::Mcp, &self.name, &external_tool_name(ExternalKind::Mcp, &self.name, own), written)
        };
        for unknown in filter.unknown(|written| offered.iter().any(|own| is_named(own, written))) {
            problems.push(format!("the tool filter names {unknown:?}, which the server does not list"));
        }
        problems.extend(
            self.options.loading.problems("server", |written| offered.iter().any(|own| is_named(own, written))),
        );
        let mut listed = std::collections::HashSet::new();
        let mut candidates = Vec::new();
        for tool in &listing.tools {
            let spec = match tool_spec_from_json(tool) {
                Ok(s) => s,
                Err(e) => {
                    let name = tool.get("name").and_then(|n| n.as_str()).unwrap_or("(no name)");
                    problems.push(format!("skipped tool {name:?}: {e}"));
                    continue;
                }
            };
            if !listed.insert(spec.name.clone()) {
                problems.push(format!("tool {:?} is listed twice; the second was skipped", spec.name));
                continue;
            }
            // `enabled_tools` / `disabled_tools`: a filtered tool is not registered.
            if !filter.allows(|written| is_named(&spec.name, written)) {
                continue;
            }
            candidates.push(spec);
        }
        *self.listed.locked() = candidates.clone();
        // Each offered tool against its pin: a definition that changed since is held back.
        let verdicts = match self.pins.get() {
            Some(pins) => match pins.check(&self.name, &candidates.iter().collect::<Vec<_>>()) {
                Ok(verdicts) => verdicts,
                Err(e) => {
                    problems.push(format!("no tool was registered: the tool pins could not be read: {e}"));
                    return Ok((names, problems));
                }
            },
            None => vec![Verdict::Pinned; candidates.len()],
        };
        for (spec, verdict) in candidates.into_iter().zip(verdicts) {
            let registered = self.registered.locked().contains(&spec.name);
            if let Verdict::Restated(changes) = &verdict {
                problems.push(format!(
                    "tool {:?} lists another default or example than it was pinned with ({}); not quarantined: the \
                     pin takes it",
                    spec.name,
                    changes.join("; ")
                ));
            }
            if let Verdict::Changed(changes) = verdict {
                let accept = format!("`clat mcp accept {} {}`", self.name, spec.name);
                let reason = format!(
                    "its definition changed since it was pinned ({}); {accept} takes the new one",
                    changes.join("; ")
                );
                let why = Quarantine { accept, changes };
                if registered {
                    // A change while it runs: the tool leaves the listing now (a served session is told), and
                    // calls of it are refused until the change is accepted.
                    tracing::warn!("server {}: tool {} {reason}; withdrawn from the listing", self.name, spec.name);
                } else {
                    problems.push(format!("tool {:?} is quarantined: {reason}", spec.name));
                }
                registry.quarantine(ExternalKind::Mcp, &self.name, &spec.name, why);
                continue;
            }
            // Re-listing after `tools/list_changed` registers only what is new, and nothing once the registry froze.
            if registered {
                continue;
            }
            if relisting && registry.is_frozen() {
                tracing::info!(
                    "server {} offers tool {} after the registry froze; restart to see it",
                    self.name,
                    spec.name
                );
                continue;
            }
            let handler = Arc::new(McpTool { server: Arc::clone(self), tool: spec.name.clone() });
            match registry.register_external(ExternalKind::Mcp, &self.name, &self.link.identity, &spec, false, handler)
            {
                Ok(name) => {
                    self.registered.locked().insert(spec.name.clone());
                    names.push(name);
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        Ok((names, problems))
    }

    /// Re-list on `notifications/tools/list_changed`: register new tools
    /// until the registry freezes, and withdraw a registered tool whose
    /// definition changed (quarantined) at any time.
    pub fn spawn_relisting(self: &Arc<Self>, registry: &Arc<Registry>) {
        let (server, registry) = (Arc::downgrade(self), Arc::downgrade(registry));
        let link = Arc::clone(&self.link);
        tokio::spawn(async move {
            loop {
                link.list_changed.notified().await;
                let (Some(server), Some(registry)) = (server.upgrade(), registry.upgrade()) else { return };
                match server.register(&registry, true).await {
                    Ok((names, problems)) => {
                        tracing::debug!(
                            "server {} re-listed: {} new tools, problems {problems:?}",
                            server.name,
                            names.len()
                        )
                    }
                    // A listing cut short by our own close is no news.
                    Err(e) if server.supervisor.is_closed() => {
                        tracing::debug!("server {}: re-listing ended by its close: {e}", server.name)
                    }
                    Err(e) => tracing::warn!("server {}: re-listing failed: {e}", server.name),
                }
            }
        });
    }

    /// One `tools/call` of `tool` in `run`: on the live session (a server that
    /// stopped after it was ready is started again, with back-off, capped),
    /// counted among the server's calls in flight so its requests are judged
    /// under `run`, and mapped through the contract's JSON mapping. The
    /// registry owns the deadline (and extends it while this server waits on
    /// the host); the transport's own bound only backs it up.
    pub(crate) async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        arguments: Value,
        run: &RunContext,
    ) -> Result<ToolOutput, ToolError> {
        let timeout = run.call_deadline(TOOL_CALL_TIMEOUT).saturating_duration_since(std::time::Instant::now())
            + HOST_REQUEST_EXTENSION_MAX;
        let session = self.live_session(run).await.map_err(|e| ToolError(anyhow::anyhow!(e)))?;
        self.check_offered(tool)?;
        let active = self.link.enter_call(run);
        let result = session
            .call_tool_tagged(tool, arguments, timeout, Some(run.cancel_token()), Some(active.tag()))
            .await
            .map_err(|e| self.call_error(&e))?;
        tool_output_from_json(&result)
            .map_err(|e| ToolError(anyhow::anyhow!("server {} returned a malformed result: {e}", self.name)))
    }

    /// A failed call's error: redacted, and when the server is gone, with the
    /// last lines it wrote.
    fn call_error(&self, error: &ClientError) -> ToolError {
        let mut message = format!("server {}: {}", self.name, self.redact(&error.to_string()));
        if matches!(error, ClientError::Closed { .. }) {
            let tail = self.stderr_tail();
            if !tail.is_empty() {
                message.push_str("; last stderr lines:\n");
                message.push_str(&tail.join("\n"));
            }
        }
        ToolError(anyhow::anyhow!(message))
    }
}

/// The registry's handler for one MCP tool.
struct McpTool {
    server: Arc<McpServer>,
    tool: String,
}

#[async_trait]
impl ToolHandler for McpTool {
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        self.server.call_tool(&self.tool, arguments, run).await
    }

    fn waiting_on_host(&self) -> bool {
        self.server.host_requests_pending() > 0
    }

    fn call_timeout(&self) -> std::time::Duration {
        self.server.options.tool_timeout.unwrap_or(TOOL_CALL_TIMEOUT)
    }
}
