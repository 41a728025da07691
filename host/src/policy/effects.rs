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

/// The hints `effect_from_annotations` maps back to `effect`: what `clat
/// serve` sends with a tool, so a client reading them by the spec's table sees
/// the effect CLAT enforces. Each hint the table reads is set, none left to
/// MCP's defaults (`destructiveHint` only beside `readOnlyHint: false`, where
/// MCP gives it meaning). `Read`, which no extension can claim, goes as a
/// closed-world read (`ExternalRead` on the other side).
pub fn annotations_for_effect(effect: Effect) -> ToolAnnotations {
    let (read_only, destructive, open_world) = match effect {
        Effect::Read | Effect::ExternalRead => (true, None, false),
        Effect::Network => (true, None, true),
        Effect::Write => (false, Some(false), true),
        Effect::Destructive => (false, Some(true), true),
    };
    ToolAnnotations {
        title: None,
        read_only: Some(read_only),
        destructive,
        idempotent: None,
        open_world: Some(open_world),
    }
}

/// Why `effect_from_annotations` (and `with_network_grant` when
/// `network_granted`: the tool uses its plugin's http grant) gives the effect it gives, in words a user reads in
/// `clat tools NAME`: which hints the tool set, and which MCP defaults filled
/// the rest.
pub fn effect_reason(annotations: &ToolAnnotations, network_granted: bool) -> String {
    let hint = |name: &str, value: Option<bool>, default: bool| match value {
        Some(v) => format!("{name} {v}"),
        None => format!("no {name} (MCP's default: {default})"),
    };
    let read_only = hint("readOnlyHint", annotations.read_only, DEFAULT_READ_ONLY);
    let destructive = hint("destructiveHint", annotations.destructive, DEFAULT_DESTRUCTIVE);
    let open_world = hint("openWorldHint", annotations.open_world, DEFAULT_OPEN_WORLD);
    let why = match effect_from_annotations(annotations) {
        Effect::Destructive if annotations.read_only.unwrap_or(DEFAULT_READ_ONLY) => {
            format!("{read_only} but destructiveHint true: ambiguous, so destructive")
        }
        Effect::Destructive => format!("{read_only}, {destructive}"),
        Effect::Write => format!("{read_only}, {destructive}"),
        Effect::Network | Effect::ExternalRead | Effect::Read => format!("{read_only}, {open_world}"),
    };
    let effect = effect_from_annotations(annotations);
    if network_granted && with_network_grant(effect) != effect {
        format!("{why}; raised to network: it uses its plugin's http grant")
    } else {
        why
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hints_sent_for_an_effect_map_back_to_it() {
        for effect in [Effect::ExternalRead, Effect::Network, Effect::Write, Effect::Destructive] {
            assert_eq!(effect_from_annotations(&annotations_for_effect(effect)), effect, "{effect:?}");
        }
        assert_eq!(effect_from_annotations(&annotations_for_effect(Effect::Read)), Effect::ExternalRead);
    }
}
