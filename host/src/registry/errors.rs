//! Why a registration was refused (`RegistrationError`) and why a call
//! produced no tool output (`CallError`), as every surface reports them.

use super::ToolError;

/// Why a registration was refused. Every refusal is also kept in
/// `Registry::reports()` for status surfaces.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    #[error("tool {name} from {source_label} collides with {existing} and was skipped")]
    Collision { name: String, source_label: String, existing: String },
    #[error("tool {name} from {source_label} arrived after the registry froze and was rejected")]
    Frozen { name: String, source_label: String },
    #[error("system prompt {name} from {source_label} arrived after the registry froze and was rejected")]
    PromptFrozen { name: String, source_label: String },
    #[error("tool {name} from {source_label} has an invalid input schema: {reason}")]
    InvalidSchema { name: String, source_label: String, reason: String },
    #[error("{name} is not one of CLAT's native tool names")]
    NotNative { name: String },
}

/// Why a call did not produce a tool output. Non-exhaustive: a later kind of
/// refusal (as `Quarantined` was) is not a breaking change for an embedder.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No tool of that name is registered.
    #[error("unknown tool {0:?}; `clat tools` lists the registered tools")]
    UnknownTool(String),
    /// The arguments are too large or fail the tool's schema.
    #[error("invalid arguments for {tool}: {reason}")]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong with them.
        reason: String,
    },
    /// The mode table or the approver refused the call.
    #[error("permission denied for {tool}: {reason}")]
    Denied {
        /// The tool.
        tool: String,
        /// Why, and how to allow it.
        reason: String,
    },
    /// The run was cancelled before the call finished.
    #[error("{tool} was cancelled")]
    Cancelled {
        /// The tool.
        tool: String,
    },
    /// The call passed its deadline.
    #[error("{tool} timed out after {:.1} s", after.as_secs_f64())]
    TimedOut {
        /// The tool.
        tool: String,
        /// How long it was given.
        after: std::time::Duration,
    },
    /// The tool's implementation failed (not a tool-level error result).
    #[error("{tool} failed: {error}")]
    Failed {
        /// The tool.
        tool: String,
        /// What failed.
        error: ToolError,
    },
    /// The tool's extension was withdrawn (its project is closing).
    #[error("{tool} is no longer available: {reason}")]
    Withdrawn {
        /// The tool.
        tool: String,
        /// Why its extension was withdrawn.
        reason: String,
    },
    /// The tool's definition changed since it was pinned (`pins.rs`): it is not
    /// offered or called until the user accepts the change. Its message never
    /// holds the new text (the extension's, which may be written for a model);
    /// `changes` does, for the user.
    #[error("{tool} is quarantined: its definition changed since it was pinned; {accept} takes the new one")]
    Quarantined {
        /// The tool.
        tool: String,
        /// The command that accepts the change.
        accept: String,
        /// What changed, one line per part.
        changes: Vec<String>,
    },
}
