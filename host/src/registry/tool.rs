//! What the registry says of a tool: where it comes from (`ToolSource`, and the
//! extension that holds its lease) and its public description (`ToolInfo`,
//! what `clat tools --json` prints and a model is offered).

use serde::Serialize;
use serde_json::Value;

use super::{SchemaSize, definition};
use crate::contract::Effect;
use crate::names::ExternalKind;

/// Where a registered tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSource {
    /// One of CLAT's own tools.
    Native,
    /// A tool of an MCP server.
    Mcp {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// A tool of a WASM plugin.
    Wasm {
        /// The plugin's name.
        plugin: String,
        /// The tool's name in the plugin.
        tool: String,
    },
}

impl ToolSource {
    /// A short label: `native`, `mcp:server/tool`, `wasm:plugin/tool`.
    pub fn label(&self) -> String {
        match self {
            ToolSource::Native => "native".into(),
            ToolSource::Mcp { server, tool } => format!("mcp:{server}/{tool}"),
            ToolSource::Wasm { plugin, tool } => format!("wasm:{plugin}/{tool}"),
        }
    }

    /// The extension a tool belongs to: `native`, `mcp:server`, `wasm:plugin`.
    pub fn extension(&self) -> String {
        self.owner_key().unwrap_or_else(|| "native".into())
    }

    /// The extension that holds the tool's lease (`None` for native tools).
    pub(super) fn owner_key(&self) -> Option<String> {
        match self {
            ToolSource::Native => None,
            ToolSource::Mcp { server, .. } => Some(owner_key(ExternalKind::Mcp, server)),
            ToolSource::Wasm { plugin, .. } => Some(owner_key(ExternalKind::Wasm, plugin)),
        }
    }
}

pub(super) fn owner_key(kind: ExternalKind, owner: &str) -> String {
    match kind {
        ExternalKind::Mcp => format!("mcp:{owner}"),
        ExternalKind::Wasm => format!("wasm:{owner}"),
    }
}

/// The public description of a registered tool (`clat tools --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The registered name: a native name, `mcp_{server}_{tool}` or `wasm_{plugin}_{tool}`.
    pub name: String,
    /// Where it comes from.
    pub source: ToolSource,
    /// Its name as its server or plugin gave it.
    pub original_name: String,
    /// What it may do, as the permission pipeline sees it.
    pub effect: Effect,
    /// Why it has that effect: the hints its extension set and the defaults that filled the rest.
    pub effect_reason: String,
    /// Its description, as given.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    /// The JSON Schema of its structured output, when its extension gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// What its definition (name, description, schema) costs a model each turn it is offered.
    pub schema: SchemaSize,
}

impl ToolInfo {
    /// The tool as a model is offered it: its name, description and input schema.
    pub fn definition(&self) -> Value {
        definition(&self.name, &self.description, &self.input_schema)
    }

    /// Whether `written` names this tool: its registered name, or (an
    /// extension's tool) its own name or that normalized (`names::names_tool`).
    pub fn is_named(&self, written: &str) -> bool {
        match &self.source {
            ToolSource::Native => self.name == written,
            ToolSource::Mcp { server, .. } => crate::names::names_tool(ExternalKind::Mcp, server, &self.name, written),
            ToolSource::Wasm { plugin, .. } => {
                crate::names::names_tool(ExternalKind::Wasm, plugin, &self.name, written)
            }
        }
    }
}
