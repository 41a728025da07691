//! The Rust guest SDK (`guests/clat-guest`) seen from the host, on the
//! example guests written with it: a tool declared once with a typed argument
//! struct lists a derived JSON Schema (doc comments as descriptions, optional
//! fields not required, unknown fields refused) and its effect hints;
//! arguments that reach the guest but do not parse are a tool error the model
//! can read; an unknown tool name is a plugin failure; typed host-service
//! results (search, list, read) carry what the host tools returned.

mod support;

use clat_guest_artifacts as guests;
use clat_host::contract::PermissionMode;
use serde_json::{Value, json};
use support::wasm::load_into;
use support::{TestEnv, run_in, text};

#[tokio::test]
async fn a_typed_tool_lists_its_derived_schema_and_hints() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let hello = load_into(&scope, "hello", guests::HELLO_WASM).await;
    let spec = hello.tools().into_iter().find(|t| t.name == "greet").unwrap();
    let schema: Value = serde_json::from_str(&spec.input_schema).unwrap();
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(schema["properties"]["name"]["description"], "Who to greet (default: the world).", "{schema}");
    assert_eq!(schema["additionalProperties"], false, "deny_unknown_fields → additionalProperties: false");
    assert!(schema.get("required").is_none_or(|r| r.as_array().unwrap().is_empty()), "{schema}");
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none(), "{schema}");
    assert_eq!((spec.annotations.read_only, spec.annotations.open_world), (Some(true), Some(false)));

    let (run, _) = run_in(PermissionMode::Ask);
    let registry = scope.registry();
    let out = registry.call("wasm_hello_greet", json!({}), &run).await.unwrap();
    assert_eq!(text(&out), "Hello, world! (from a WASM plugin)", "an optional field may be left out");
    let err = registry.call("wasm_hello_greet", json!({ "name": "x", "colour": "red" }), &run).await.unwrap_err();
    assert!(err.to_string().contains("colour"), "unknown fields are refused by the derived schema: {err}");

    let contract = load_into(&scope, "contract", guests::CONTRACT_WASM).await;
    let ask: Value =
        serde_json::from_str(&contract.tools().into_iter().find(|t| t.name == "sample").unwrap().input_schema).unwrap();
    assert_eq!(ask["required"], json!(["text"]), "only the non-Option fields are required: {ask}");
}

#[tokio::test]
async fn arguments_that_do_not_parse_are_a_tool_error_and_an_unknown_tool_a_plugin_failure() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let contract = load_into(&scope, "contract", guests::CONTRACT_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    // Straight to the guest, past the registry's schema check: the SDK's own parse is the last line.
    let out = contract.call_tool("echo", &json!({ "txt": "typo" }), &run).await.unwrap();
    assert!(out.is_error, "{out:?}");
    assert_eq!(text(&out), "invalid arguments for echo: missing field `text`");
    let out = contract.call_tool("structured", &json!({ "a": "two", "b": 3 }), &run).await.unwrap();
    assert!(out.is_error && text(&out).starts_with("invalid arguments for structured: invalid type"), "{out:?}");
    let err = contract.call_tool("nope", &json!({}), &run).await.unwrap_err();
    assert!(err.to_string().contains("no tool named \"nope\""), "{err}");
}

#[tokio::test]
async fn typed_host_results_carry_what_the_host_tools_found() {
    let env = TestEnv::trusted();
    env.write("src/lib.rs", "fn a() {}\n// TODO: one: with colons\nfn b() {}\n");
    env.write("notes/plan.md", "FIXME later\n");
    let scope = env.mount();
    load_into(&scope, "project-notes", guests::PROJECT_NOTES_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_project_notes_todos", json!({}), &run).await.unwrap();
    let shown = text(&out);
    assert!(!out.is_error, "{shown}");
    assert!(shown.starts_with("2 note(s):"), "{shown}");
    assert!(shown.contains("src/lib.rs:2: // TODO: one: with colons"), "{shown}");
    assert!(shown.contains("notes/plan.md:1: FIXME later"), "{shown}");
    assert!(shown.contains("around "), "the first note's surroundings, read with read_lines: {shown}");

    let out = scope.registry().call("wasm_project_notes_overview", json!({}), &run).await.unwrap();
    let shown = text(&out);
    assert!(shown.contains("has 2 file(s); top level:"), "{shown}");
    assert!(shown.contains("notes/") && shown.contains("src/"), "{shown}");
}
