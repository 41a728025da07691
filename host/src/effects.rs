//! Effects: how CLAT turns a plugin's untrusted annotations into the effect the
//! permission pipeline sees. This is the spec's annotation table, written once;
//! the registry calls it for every non-native tool, so no plugin can claim `Read`.

use crate::contract::{Effect, ToolAnnotations};

/// MCP's default for an absent `readOnlyHint`.
pub const DEFAULT_READ_ONLY: bool = false;
/// MCP's default for an absent `destructiveHint`.
pub const DEFAULT_DESTRUCTIVE: bool = true;
/// MCP's default for an absent `openWorldHint`.
pub const DEFAULT_OPEN_WORLD: bool = true;

/// The spec's table:
///
/// | server annotation | CLAT effect |
/// |---|---|
/// | read-only + closed world | ExternalRead |
/// | read-only + open world | Network |
/// | non-read-only + non-destructive | Write |
/// | destructive, missing, or ambiguous | Destructive |
///
/// Absent hints take MCP's defaults (read-only false, destructive true, open
/// world true), so a tool with no annotations is Destructive. A tool that says
/// it is both read-only and explicitly destructive is ambiguous: Destructive.
/// The result is never `Read`.
pub fn effect_from_annotations(annotations: &ToolAnnotations) -> Effect {
    let read_only = annotations.read_only.unwrap_or(DEFAULT_READ_ONLY);
    if read_only {
        if annotations.destructive == Some(true) {
            return Effect::Destructive;
        }
        return if annotations.open_world.unwrap_or(DEFAULT_OPEN_WORLD) {
            Effect::Network
        } else {
            Effect::ExternalRead
        };
    }
    if annotations.destructive.unwrap_or(DEFAULT_DESTRUCTIVE) { Effect::Destructive } else { Effect::Write }
}

/// The effect of a tool whose plugin holds an HTTP grant: it can reach an open
/// world whatever its annotations say, so it is at least `Network` (a tool
/// that writes or destroys keeps its higher effect).
pub fn with_network_grant(effect: Effect) -> Effect {
    match effect {
        Effect::Read | Effect::ExternalRead => Effect::Network,
        higher => higher,
    }
}
