//! Registered names: normalization, the 64-character boundary with a stable
//! hash suffix, collisions (native and earlier tools), and rejection after freeze.

mod support;

use clat_host::contract::{ToolAnnotations, ToolSpec};
use clat_host::names::{ExternalKind, external_tool_name, normalize_segment};
use clat_host::native::NATIVE_TOOL_NAMES;
use clat_host::registry::{RegistrationError, Registry, ToolSource};
use serde_json::json;
use support::ok_tool;

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        title: None,
        description: format!("the {name} tool"),
        input_schema: json!({ "type": "object" }).to_string(),
        output_schema: None,
        annotations: ToolAnnotations::default(),
    }
}

#[test]
fn segments_keep_only_ascii_letters_digits_and_underscore() {
    assert_eq!(normalize_segment("read-file.v2"), "read_file_v2");
    assert_eq!(normalize_segment("café"), "caf_");
    assert_eq!(normalize_segment("日本"), "__");
    assert_eq!(normalize_segment("a b/c:d"), "a_b_c_d");
    assert_eq!(normalize_segment("Ok_123"), "Ok_123");
    assert_eq!(normalize_segment(""), "_");
    assert_eq!(external_tool_name(ExternalKind::Mcp, "my-server", "get.thing"), "mcp_my_server_get_thing");
    assert_eq!(external_tool_name(ExternalKind::Wasm, "plug", "t"), "wasm_plug_t");
}

#[test]
fn names_up_to_64_characters_are_kept_and_longer_ones_get_a_stable_hash() {
    // "mcp_" + "s" + "_" = 6 characters of prefix.
    let exactly_64 = "t".repeat(58);
    let name = external_tool_name(ExternalKind::Mcp, "s", &exactly_64);
    assert_eq!(name.len(), 64);
    assert_eq!(name, format!("mcp_s_{exactly_64}"));

    let long = "t".repeat(59);
    let shortened = external_tool_name(ExternalKind::Mcp, "s", &long);
    assert_eq!(shortened.len(), 64, "{shortened}");
    assert!(shortened.starts_with("mcp_s_ttt"), "{shortened}");
    let suffix = &shortened[shortened.len() - 10..];
    assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()), "{shortened}");
    assert_eq!(&shortened[53..54], "_");

    // Same input, same name; different inputs with the same prefix differ.
    assert_eq!(shortened, external_tool_name(ExternalKind::Mcp, "s", &long));
    assert_ne!(shortened, external_tool_name(ExternalKind::Mcp, "s", &"t".repeat(60)));
    // Stable across runs and machines: a golden value (SHA-256 of "mcp\0s\0" + 59 t's + "\0").
    assert_eq!(shortened, golden_long_name());
}

fn golden_long_name() -> String {
    // Computed once from the definition; if this changes, every user's
    // shortened tool names change with it.
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in ["mcp", "s", &"t".repeat(59)] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    format!("mcp_s_{}_{}", "t".repeat(47), &hex[..10])
}

#[test]
fn a_fixed_long_name_never_changes() {
    let name = external_tool_name(
        ExternalKind::Wasm,
        "a-very-long-plugin-name-for-testing",
        "and-an-even-longer-tool-name-that-overflows",
    );
    assert_eq!(name, "wasm_a_very_long_plugin_name_for_testing_and_an_even__0da20bd4fc");
}

#[test]
fn non_ascii_names_still_fit_the_limit() {
    let name = external_tool_name(ExternalKind::Mcp, "サーバー", &"ツール".repeat(30));
    assert!(name.len() <= 64);
    assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{name}");
}

#[test]
fn a_collision_after_normalization_is_reported_and_skipped() {
    let registry = Registry::new(&NATIVE_TOOL_NAMES);
    let first = registry
        .register_external(ExternalKind::Mcp, "srv", &support::identity(), &spec("get-item"), false, ok_tool())
        .unwrap();
    assert_eq!(first, "mcp_srv_get_item");
    let err = registry
        .register_external(ExternalKind::Mcp, "srv", &support::identity(), &spec("get.item"), false, ok_tool())
        .unwrap_err();
    assert!(
        matches!(&err, RegistrationError::Collision { name, existing, .. }
        if name == "mcp_srv_get_item" && existing == "mcp:srv/get-item"),
        "{err}"
    );
    // The earlier tool is untouched.
    let tools = registry.list();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].original_name, "get-item");
    assert_eq!(registry.reports(), vec![err]);
}

#[test]
fn an_external_tool_never_replaces_a_native_one() {
    // A native name that an external tool would normalize to.
    let registry = Registry::new(&["read_file", "mcp_fs_read_file"]);
    registry
        .register_native(
            "mcp_fs_read_file",
            "native",
            json!({ "type": "object" }),
            clat_host::contract::Effect::Read,
            ok_tool(),
        )
        .unwrap();
    let err = registry
        .register_external(ExternalKind::Mcp, "fs", &support::identity(), &spec("read-file"), false, ok_tool())
        .unwrap_err();
    assert!(matches!(err, RegistrationError::Collision { .. }), "{err}");
    // Even before the native tool registers, its name is reserved.
    let registry = Registry::new(&["mcp_fs_read_file"]);
    assert!(
        registry
            .register_external(ExternalKind::Mcp, "fs", &support::identity(), &spec("read_file"), false, ok_tool())
            .is_err()
    );
    assert!(registry.list().is_empty());
    // Only reserved names can be native.
    let err = registry
        .register_native("list_files", "x", json!({}), clat_host::contract::Effect::Read, ok_tool())
        .unwrap_err();
    assert!(matches!(err, RegistrationError::NotNative { .. }));
}

#[test]
fn every_registration_after_freeze_is_rejected_and_reported() {
    let registry = Registry::new(&NATIVE_TOOL_NAMES);
    registry
        .register_external(ExternalKind::Wasm, "p", &support::identity(), &spec("early"), false, ok_tool())
        .unwrap();
    registry.freeze();
    assert!(registry.is_frozen());
    let err = registry
        .register_external(ExternalKind::Wasm, "p", &support::identity(), &spec("late"), false, ok_tool())
        .unwrap_err();
    assert!(matches!(&err, RegistrationError::Frozen { name, .. } if name == "wasm_p_late"), "{err}");
    let err = registry
        .register_native("read_file", "x", json!({ "type": "object" }), clat_host::contract::Effect::Read, ok_tool())
        .unwrap_err();
    assert!(matches!(err, RegistrationError::Frozen { .. }));
    assert_eq!(registry.list().len(), 1);
    assert_eq!(registry.reports().len(), 2);
}

#[test]
fn invalid_schemas_are_reported_and_skipped() {
    let registry = Registry::new(&NATIVE_TOOL_NAMES);
    let mut bad = spec("bad");
    bad.input_schema = "{not json".into();
    assert!(matches!(
        registry.register_external(ExternalKind::Mcp, "s", &support::identity(), &bad, false, ok_tool()),
        Err(RegistrationError::InvalidSchema { .. })
    ));
    bad.input_schema = json!({ "type": 12 }).to_string();
    assert!(matches!(
        registry.register_external(ExternalKind::Mcp, "s", &support::identity(), &bad, false, ok_tool()),
        Err(RegistrationError::InvalidSchema { .. })
    ));
    assert!(registry.list().is_empty());
}

#[test]
fn listing_shows_source_original_name_effect_description_and_schema() {
    let registry = Registry::new(&NATIVE_TOOL_NAMES);
    let mut s = spec("Fetch Page");
    s.annotations.read_only = Some(true);
    s.input_schema = json!({ "type": "object", "properties": { "url": { "type": "string" } } }).to_string();
    registry.register_external(ExternalKind::Mcp, "web", &support::identity(), &s, false, ok_tool()).unwrap();
    let info = &registry.list()[0];
    assert_eq!(info.name, "mcp_web_Fetch_Page");
    assert_eq!(info.source, ToolSource::Mcp { server: "web".into(), tool: "Fetch Page".into() });
    assert_eq!(info.original_name, "Fetch Page");
    assert_eq!(info.effect.as_str(), "network");
    assert_eq!(info.description, "the Fetch Page tool");
    assert_eq!(info.input_schema["properties"]["url"]["type"], "string");
}
