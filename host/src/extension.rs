//! What the scope knows of each extension, whatever its kind: a WASM plugin,
//! a stdio MCP server or a Streamable HTTP one. One typed state machine for
//! both adapters,
//!
//! ```text
//! configured ─▶ starting ─▶ ready ─▶ restarting ─▶ ready
//!                   │          │          │
//!                   ▼          ▼          ▼
//!                 failed     closed     failed
//! ```
//!
//! one status record (`ExtensionStatus`) that `clat tools`, `clat mcp` and
//! embedding hosts read, and one trait (`Extension`) for what the scope holds
//! of a started extension, implemented by `wasm::WasmPlugin` and
//! `mcp::McpServer`, kept with the statuses in one `ScopeLists`. `configured`
//! is an extension the scope knows of but has not started (not needed by this
//! command, replaced by a same-named entry, or a server that starts at its
//! first call); `failed` carries its reasons in `problems`. What an extension's
//! `always_load` / `defer_loading` settings mean under progressive discovery
//! is `LoadingSettings`'s.

use std::sync::{Arc, Mutex};

pub use clat_mcp::config::{AlwaysLoad, Loading};

use serde::Serialize;

use crate::contract::ContextSnapshot;
use crate::sync::Unpoisoned;

/// A started extension, whatever its adapter: the scope keeps these in one
/// list, offers them the run context, refreshes their statuses and closes
/// them (after withdrawing their tools) the same way.
#[async_trait::async_trait]
pub trait Extension: Send + Sync {
    fn name(&self) -> &str;
    fn kind(&self) -> ExtensionKind;
    /// Bring its recorded status up to date: the state after a restart, the
    /// latest output tail.
    fn refresh_status(&self, status: &mut ExtensionStatus);
    /// Offer the latest context (`None`: the run ended); never blocks.
    fn notify_context(&self, snapshot: Option<&ContextSnapshot>);
    /// Stop it for good; the scope has withdrawn its tools first.
    async fn close(&self);
    /// For typed access (`ProjectScope::plugins`, `ProjectScope::mcp_servers`).
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// The kind of an extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ExtensionKind {
    /// A WebAssembly component plugin, run in-process.
    #[serde(rename = "wasm")]
    Wasm,
    /// An MCP server run as a local subprocess, over its stdio.
    #[serde(rename = "mcp-stdio")]
    McpStdio,
    /// A remote MCP server over Streamable HTTP.
    #[serde(rename = "mcp-http")]
    McpHttp,
}

impl ExtensionKind {
    /// The stable name (`wasm`, `mcp-stdio`, `mcp-http`).
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionKind::Wasm => "wasm",
            ExtensionKind::McpStdio => "mcp-stdio",
            ExtensionKind::McpHttp => "mcp-http",
        }
    }

    /// Whether it is an MCP server (either transport).
    pub fn is_mcp(self) -> bool {
        matches!(self, ExtensionKind::McpStdio | ExtensionKind::McpHttp)
    }

    /// The tool-name prefix of its tools.
    pub fn external_kind(self) -> crate::names::ExternalKind {
        match self {
            ExtensionKind::Wasm => crate::names::ExternalKind::Wasm,
            ExtensionKind::McpStdio | ExtensionKind::McpHttp => crate::names::ExternalKind::Mcp,
        }
    }
}

impl std::fmt::Display for ExtensionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ExtensionKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Where an extension is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtensionState {
    /// Known to the scope, not started.
    Configured,
    /// Loading (WASM) or connecting and listing (MCP).
    Starting,
    /// Its tools are registered and callable.
    Ready,
    /// It could not start, or stopped for good; `problems` say why (one that started and lists no tools is
    /// `Ready` with none).
    Failed,
    /// It stopped after it was ready and is being started again.
    Restarting,
    /// Torn down with its scope.
    Closed,
}

impl ExtensionState {
    /// The stable name (`configured`, `starting`, `ready`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionState::Configured => "configured",
            ExtensionState::Starting => "starting",
            ExtensionState::Ready => "ready",
            ExtensionState::Failed => "failed",
            ExtensionState::Restarting => "restarting",
            ExtensionState::Closed => "closed",
        }
    }
}

impl std::fmt::Display for ExtensionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ExtensionState {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// How one extension fared in this scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionStatus {
    /// Its name: the server's in `mcp.json`, the plugin's in its manifest.
    pub name: String,
    /// A WASM plugin, a stdio MCP server or an HTTP one.
    pub kind: ExtensionKind,
    /// Where it is in its lifecycle.
    pub state: ExtensionState,
    /// The registered names of its tools.
    pub tools: Vec<String>,
    /// Why it failed or was not started, and refused registrations.
    pub problems: Vec<String>,
    /// The last lines it wrote (redacted).
    pub output_tail: Vec<String>,
    /// MCP servers: the negotiated protocol version and era.
    pub protocol: Option<String>,
    /// MCP servers: the names of the marked system prompts it contributed.
    pub system_prompts: Vec<String>,
    /// How many times it was started again after it stopped (MCP servers).
    pub restarts: u32,
    /// Why it last stopped after it was ready (MCP servers), redacted.
    pub last_stop: Option<String>,
    /// WASM plugins: the capabilities it holds (HTTP origins, environment names).
    #[serde(default, skip_serializing_if = "crate::supply::capabilities::Capabilities::is_empty")]
    pub grants: crate::supply::capabilities::Capabilities,
    /// Remote MCP servers: the OAuth login it holds (issuer, client, scopes,
    /// expiry; never a token), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<Login>,
    /// How its tools are offered under progressive discovery, as configured
    /// (`always_load`, `defer_loading`; shown only when set).
    #[serde(flatten)]
    pub loading: Loading,
}

/// An extension's login as its status shows it: where, as which client, what
/// scopes, until when, whether it refreshes by itself — never a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Login {
    /// The authorization server.
    pub issuer: String,
    /// The client it logged in as.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the token expires (seconds since the epoch), when the server said.
    pub expires_at: Option<u64>,
    /// Whether a refresh token lets it renew without the user.
    pub refreshable: bool,
}

impl ExtensionStatus {
    pub fn new(name: &str, kind: ExtensionKind, state: ExtensionState, problem: Option<String>) -> Self {
        ExtensionStatus {
            name: name.to_string(),
            kind,
            state,
            tools: vec![],
            problems: problem.into_iter().collect(),
            output_tail: vec![],
            protocol: None,
            system_prompts: vec![],
            restarts: 0,
            last_stop: None,
            grants: Default::default(),
            oauth: None,
            loading: Default::default(),
        }
    }

    /// Mark it failed with a reason.
    pub fn fail(&mut self, reason: impl Into<String>) {
        self.state = ExtensionState::Failed;
        self.problems.push(reason.into());
    }
}

/// Which extensions a scope starts: all of them (the library's default, and
/// `clat tools` / `clat mcp`), or only those that can own one of some tool
/// names (`clat call`, `clat exec`). Start-up cost then does not grow with
/// what is installed but unused: a native tool starts nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum StartFilter {
    /// Every extension.
    #[default]
    All,
    /// Only the extensions whose tool-name prefix can produce one of these names.
    OwnersOf(Vec<String>),
    /// Only the extensions with these names (`clat mcp get`).
    Named(Vec<String>),
    /// Every WASM plugin, and only the MCP servers whose tool-name prefix can
    /// produce one of these names (a short name found in the servers' last
    /// listings: plugins start fast, servers may not).
    PluginsAndOwnersOf(Vec<String>),
    /// What can own one of these tools as a caller wrote them (`clat call`,
    /// `clat exec`): a native tool needs nothing, a registered name
    /// (`mcp_srv_get`) its owner, a short name (`get`) every plugin and the
    /// servers whose last listing under their current identity has it — every
    /// extension when none has. The door resolves it when it mounts
    /// (`Platform::mount`); unresolved, it wants every extension.
    Tools(Vec<String>),
    /// What a search needs (`clat tools --search`): every WASM plugin, and
    /// only the MCP servers with no record of their last listing under their
    /// identity now — the others are searched by that record, not started. The
    /// door resolves it when it mounts; unresolved, it wants every extension.
    Search,
    /// Every extension, but when the tools registered before the MCP servers
    /// (native, plugins') and those of the servers with a record of their last
    /// listing under their identity now, by those records, are past this many
    /// bytes of definitions (discovery would find them, not offer them: `clat
    /// serve`, the example agent), those servers do not start at mount: their
    /// recorded tools register, and each server starts at the first call of
    /// one (`mcp/deferred.rs`). The door resolves it when it mounts;
    /// unresolved, it wants every extension.
    FirstUse(usize),
}

impl StartFilter {
    /// Whether the extension `name` of `kind` is started.
    pub fn wants(&self, kind: ExtensionKind, name: &str) -> bool {
        match self {
            StartFilter::All | StartFilter::Tools(_) | StartFilter::Search | StartFilter::FirstUse(_) => true,
            StartFilter::OwnersOf(tools) => {
                tools.iter().any(|tool| crate::names::may_own(kind.external_kind(), name, tool))
            }
            StartFilter::Named(names) => names.iter().any(|n| n == name),
            StartFilter::PluginsAndOwnersOf(_) if kind == ExtensionKind::Wasm => true,
            StartFilter::PluginsAndOwnersOf(tools) => {
                tools.iter().any(|tool| crate::names::may_own(kind.external_kind(), name, tool))
            }
        }
    }
}

/// What progressive discovery makes of an extension's `always_load` /
/// `defer_loading` settings (`Loading`, as `mcp.json` and the package index
/// keep them): which problems they have, and how they read in a listing.
pub trait LoadingSettings {
    /// What is wrong with these settings for an extension (`what`: "server", "plugin") whose tools `lists`
    /// recognizes by a written name: a `check` failure, and each `always_load` name that names none of its tools.
    fn problems(&self, what: &str, lists: impl Fn(&str) -> bool) -> Vec<String>;
    /// How it reads in a listing (`clat mcp`, `clat plugin list`); `None` for the default.
    fn describe(&self) -> Option<String>;
}

impl LoadingSettings for Loading {
    fn problems(&self, what: &str, lists: impl Fn(&str) -> bool) -> Vec<String> {
        let mut problems: Vec<String> = self.check().err().into_iter().collect();
        if let AlwaysLoad::Tools(names) = &self.always_load {
            for unknown in names.iter().filter(|written| !written.is_empty() && !lists(written)) {
                problems.push(format!("`always_load` names {unknown:?}, which the {what} does not list"));
            }
        }
        problems
    }

    fn describe(&self) -> Option<String> {
        let always = match &self.always_load {
            AlwaysLoad::All(true) => Some("all its tools".to_string()),
            AlwaysLoad::Tools(names) if !names.is_empty() => Some(names.join(", ")),
            _ => None,
        };
        match (always, self.defer_loading) {
            (None, false) => None,
            (Some(always), false) => Some(format!("always loaded: {always}")),
            (None, true) => Some("deferred: its tools are found through search_tools".into()),
            (Some(always), true) => Some(format!("always loaded: {always}; the others deferred")),
        }
    }
}

/// A scope's extensions: one status per extension, whatever its kind, in the
/// order they became known, and those started and not closed, WASM plugins
/// and MCP servers alike. Shared with the servers that start at their first
/// call (`mcp/deferred.rs`), which join it then.
#[derive(Default)]
pub(crate) struct ScopeLists {
    pub(crate) statuses: Mutex<Vec<ExtensionStatus>>,
    pub(crate) live: Mutex<Vec<Arc<dyn Extension>>>,
}

impl ScopeLists {
    /// Record an extension's status: it replaces the entry of the same
    /// extension (same name, same adapter), or joins the list. Every status
    /// enters here, so its problems are redacted here, once, whatever the
    /// adapter (which also scrubs the extension's own configured secrets).
    /// Returns the status as recorded.
    pub(crate) fn set_status(&self, mut status: ExtensionStatus) -> ExtensionStatus {
        status.problems = status.problems.iter().map(|p| crate::redact::redact(p)).collect();
        let mut list = self.statuses.locked();
        let same = |e: &ExtensionStatus| e.name == status.name && e.kind.is_mcp() == status.kind.is_mcp();
        match list.iter_mut().find(|e| same(e)) {
            Some(entry) => *entry = status.clone(),
            None => list.push(status.clone()),
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loading_settings_read_as_a_listing_shows_them() {
        let text = r#"{ "claude": { "command": "x", "alwaysLoad": true },
                        "some": { "command": "x", "always_load": ["search_issues"], "defer_loading": true },
                        "plain": { "command": "x" } }"#;
        let bounds = crate::mcp::ENTRY_TIMEOUT_BOUNDS;
        let c = clat_mcp::config::parse_config("mcp.json", text, &bounds).unwrap();
        let some = &c.servers["some"].loading;
        assert_eq!(c.servers["claude"].loading.describe().unwrap(), "always loaded: all its tools");
        assert_eq!(some.describe().unwrap(), "always loaded: search_issues; the others deferred");
        assert_eq!(c.servers["plain"].loading.describe(), None);
    }
}
