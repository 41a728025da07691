//! Registered names of external tools: `mcp_{server}_{tool}` and
//! `wasm_{plugin}_{tool}`. Each segment is normalized to ASCII letters, digits
//! and `_`; a name over 64 characters is cut and given a stable hash suffix
//! (SHA-256 of the original, un-normalized segments), so the same input gives
//! the same name on every run and machine.

use sha2::{Digest, Sha256};

use crate::limits::{TOOL_NAME_HASH_HEX, TOOL_NAME_MAX_CHARS};

/// The two kinds of external tool source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExternalKind {
    Mcp,
    Wasm,
}

impl ExternalKind {
    /// The name prefix (`mcp` / `wasm`).
    pub fn prefix(self) -> &'static str {
        match self {
            ExternalKind::Mcp => "mcp",
            ExternalKind::Wasm => "wasm",
        }
    }
}

/// Replace every character that is not an ASCII letter, digit or `_` with `_`.
/// An empty segment becomes `_` so that the name keeps its three parts.
pub fn normalize_segment(segment: &str) -> String {
    if segment.is_empty() {
        return "_".to_string();
    }
    segment.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect()
}

/// The registered name of an external tool.
pub fn external_tool_name(kind: ExternalKind, owner: &str, tool: &str) -> String {
    let full = format!("{}_{}_{}", kind.prefix(), normalize_segment(owner), normalize_segment(tool));
    if full.len() <= TOOL_NAME_MAX_CHARS {
        return full;
    }
    let mut hasher = Sha256::new();
    // Separate the parts with NUL so ("a", "b_c") and ("a_b", "c") differ.
    for part in [kind.prefix(), owner, tool] {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let keep = TOOL_NAME_MAX_CHARS - TOOL_NAME_HASH_HEX - 1;
    // `full` is ASCII after normalization, so byte slicing is safe.
    format!("{}_{}", &full[..keep], &digest[..TOOL_NAME_HASH_HEX])
}

/// Whether `written`, a tool name as a user wrote it (a tool filter, `clat
/// call`, an approval), names the tool that extension `owner` of `kind`
/// registered as `registered`: that name (`mcp_everything_get_sum`), or the
/// extension's own name for it (`get-sum`) or its normalized form
/// (`get_sum`). The one rule every place that takes a tool name follows.
pub fn names_tool(kind: ExternalKind, owner: &str, registered: &str, written: &str) -> bool {
    written == registered || external_tool_name(kind, owner, written) == registered
}

/// Whether the extension `owner` of `kind` could have registered `tool`:
/// its name starts with `{prefix}_{owner}_` (normalized), or, for a name cut
/// to the limit, starts with as much of that prefix as was kept. Owners whose
/// normalized names are prefixes of each other may both match.
pub fn may_own(kind: ExternalKind, owner: &str, tool: &str) -> bool {
    let prefix = format!("{}_{}_", kind.prefix(), normalize_segment(owner));
    if tool.starts_with(&prefix) {
        return true;
    }
    let keep = TOOL_NAME_MAX_CHARS - TOOL_NAME_HASH_HEX - 1;
    tool.len() == TOOL_NAME_MAX_CHARS
        && prefix.len() > keep
        && tool.is_char_boundary(keep)
        && tool[..keep] == prefix[..keep]
}

/// How alike a written name must be to a known one to be offered as "did you mean" (Jaro–Winkler).
const NEAREST_MIN_SIMILARITY: f64 = 0.85;

/// The known name nearest to `written` (each known name given with the forms it may be written in), when one is
/// close enough to be what was meant.
pub fn nearest<'a>(written: &str, known: impl IntoIterator<Item = (&'a str, Vec<&'a str>)>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|(name, forms)| {
            let score = forms.into_iter().map(|form| strsim::jaro_winkler(form, written)).fold(0.0, f64::max);
            (score, name)
        })
        .filter(|(score, _)| *score >= NEAREST_MIN_SIMILARITY)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name)
}
