//! The one contract: Rust types generated from `wit/` (package `artec:clat@0.1.1`)
//! by wasmtime's `bindgen!`, which runs here and nowhere else. These are the
//! canonical types for tool specs, tool output, context snapshots, host tool
//! calls, sampling and elicitation, for WASM guests and MCP servers alike.
//! `json` maps them to and from MCP's JSON shapes, once.

pub mod json;

wasmtime::component::bindgen!({
    path: "../wit",
    world: "clat-plugin",
    imports: { default: async | trappable },
    exports: { default: async },
    additional_derives: [PartialEq],
});

/// The contract's package name.
pub const CONTRACT_PACKAGE: &str = "artec:clat";

/// The contract version `wit/clat.wit` declares: the one this host binds.
pub const CONTRACT_VERSION: &str = env!("CLAT_CONTRACT_VERSION");

/// The contract versions a guest may be built for. Each released version is
/// frozen in `wit/released/VERSION/`; a host that binds a newer one keeps
/// linking the older ones it lists here. 0.1.0 and 0.1.1 differ only in doc
/// comments (0.1.1 says `list-tools` answers are kept at install), so the one
/// binding serves both: wasmtime's linker resolves a guest's `@0.1.0` imports
/// and exports to the `@0.1.1` ones, as semver-compatible names.
pub const ACCEPTED_CONTRACT_VERSIONS: &[&str] = &["0.1.0", CONTRACT_VERSION];

pub use artec::clat::types::{
    BinaryContent, BooleanField, ChoiceField, ChoiceOption, ContentBlock, ContextSnapshot, Effect, ElicitationForm,
    ElicitationResult, EmbeddedResource, FieldAnswer, FieldKind, FieldValue, FormField, HostError, HostTool, LogLevel,
    NumberField, PermissionMode, ResourceLink, Role, RunSnapshot, SamplingMessage, SamplingRequest, SamplingResult,
    TextField, ToolAnnotations, ToolOutput, ToolSpec,
};

impl Effect {
    /// Every effect, weakest first.
    pub const ALL: [Effect; 5] =
        [Effect::Read, Effect::ExternalRead, Effect::Network, Effect::Write, Effect::Destructive];

    /// The stable wire / CLI name.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::ExternalRead => "external-read",
            Effect::Network => "network",
            Effect::Write => "write",
            Effect::Destructive => "destructive",
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Effect {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl serde::Serialize for PermissionMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PermissionMode {
    /// Every mode, most restrictive first.
    pub const ALL: [PermissionMode; 4] =
        [PermissionMode::ReadOnly, PermissionMode::Ask, PermissionMode::AutoEdit, PermissionMode::FullAccess];

    /// The stable wire / CLI name.
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::ReadOnly => "read-only",
            PermissionMode::Ask => "ask",
            PermissionMode::AutoEdit => "auto-edit",
            PermissionMode::FullAccess => "full-access",
        }
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PermissionMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| format!("unknown permission mode {s:?}; expected read-only, ask, auto-edit or full-access"))
    }
}

impl HostTool {
    /// Every host tool.
    pub const ALL: [HostTool; 6] = [
        HostTool::ListFiles,
        HostTool::ReadFile,
        HostTool::Search,
        HostTool::WriteFile,
        HostTool::EditFile,
        HostTool::RunCommand,
    ];

    /// The native tool this host tool calls (also its registry name).
    pub fn tool_name(self) -> &'static str {
        match self {
            HostTool::ListFiles => "list_files",
            HostTool::ReadFile => "read_file",
            HostTool::Search => "search",
            HostTool::WriteFile => "write_file",
            HostTool::EditFile => "edit_file",
            HostTool::RunCommand => "run_command",
        }
    }

    /// The host tool with this native name, if it is one of the six.
    pub fn from_tool_name(name: &str) -> Option<HostTool> {
        HostTool::ALL.into_iter().find(|t| t.tool_name() == name)
    }
}

// `HostError`'s words are the guest SDK's: one file, included by both.
include!("../../../guests/clat-guest/src/host_error_text.rs");

impl HostError {
    /// A one-line description for people and events.
    pub fn describe(&self) -> String {
        host_error_text!(self)
    }

    /// The error's name: denied, cancelled, no_active_run, timeout, budget_exhausted, invalid, unsupported, failed.
    pub fn kind(&self) -> &'static str {
        host_error_kind!(self)
    }
}

impl ToolOutput {
    /// A successful output of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { content: vec![ContentBlock::Text(text.into())], structured: None, is_error: false }
    }

    /// A tool-level failure of one text block (`is-error` set).
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput { content: vec![ContentBlock::Text(text.into())], structured: None, is_error: true }
    }

    /// All text blocks joined by newlines (for people and tests).
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

// Generated types cannot derive here; every hint absent is MCP's "no annotations".
#[allow(clippy::derivable_impls)]
impl Default for ToolAnnotations {
    fn default() -> Self {
        ToolAnnotations { title: None, read_only: None, destructive: None, idempotent: None, open_world: None }
    }
}
