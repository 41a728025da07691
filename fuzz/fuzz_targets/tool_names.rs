//! Tool-name normalization: any owner and tool name give a registered name of
//! at most 64 ASCII letters, digits and `_`, with the kind's prefix, the same
//! every time, and owned by its owner as `may_own` tells it.
#![no_main]

use clat_host::limits::TOOL_NAME_MAX_CHARS;
use clat_host::names::{ExternalKind, external_tool_name, may_own, normalize_segment};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (owner, tool) = text.split_once('\0').unwrap_or((&text, ""));
    for kind in [ExternalKind::Mcp, ExternalKind::Wasm] {
        let name = external_tool_name(kind, owner, tool);
        assert!(name.len() <= TOOL_NAME_MAX_CHARS, "{name} is too long");
        assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'), "{name} has other characters");
        assert!(name.starts_with(&format!("{}_", kind.prefix())));
        assert_eq!(name, external_tool_name(kind, owner, tool));
        assert!(may_own(kind, owner, &name), "{owner:?} does not own {name}");
        let full = format!("{}_{}_{}", kind.prefix(), normalize_segment(owner), normalize_segment(tool));
        if full.len() <= TOOL_NAME_MAX_CHARS {
            assert_eq!(name, full);
        }
    }
});
