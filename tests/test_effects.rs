//! The spec's annotation → effect table, every cell, and the rule that no
//! plugin tool can ever be `Read`.

mod support;

use clat_host::contract::{Effect, ToolAnnotations, ToolSpec};
use clat_host::names::ExternalKind;
use clat_host::native::NATIVE_TOOL_NAMES;
use clat_host::policy::effects::effect_from_annotations;
use clat_host::registry::Registry;
use serde_json::json;

fn hints(read_only: Option<bool>, destructive: Option<bool>, open_world: Option<bool>) -> ToolAnnotations {
    ToolAnnotations { title: None, read_only, destructive, idempotent: None, open_world }
}

/// The table, stated independently of the implementation.
fn expected(read_only: Option<bool>, destructive: Option<bool>, open_world: Option<bool>) -> Effect {
    // MCP defaults: readOnly=false, destructive=true, openWorld=true.
    let ro = read_only.unwrap_or(false);
    let ow = open_world.unwrap_or(true);
    match (ro, destructive) {
        // read-only but explicitly destructive: ambiguous.
        (true, Some(true)) => Effect::Destructive,
        (true, _) if !ow => Effect::ExternalRead,
        (true, _) => Effect::Network,
        (false, Some(false)) => Effect::Write,
        (false, _) => Effect::Destructive,
    }
}

#[test]
fn the_named_rows_of_the_table() {
    // read-only + closed world → ExternalRead
    assert_eq!(effect_from_annotations(&hints(Some(true), None, Some(false))), Effect::ExternalRead);
    assert_eq!(effect_from_annotations(&hints(Some(true), Some(false), Some(false))), Effect::ExternalRead);
    // read-only + open world → Network (open world is the default)
    assert_eq!(effect_from_annotations(&hints(Some(true), None, Some(true))), Effect::Network);
    assert_eq!(effect_from_annotations(&hints(Some(true), None, None)), Effect::Network);
    // non-read-only + non-destructive → Write
    assert_eq!(effect_from_annotations(&hints(Some(false), Some(false), None)), Effect::Write);
    assert_eq!(effect_from_annotations(&hints(None, Some(false), Some(false))), Effect::Write);
    // destructive → Destructive
    assert_eq!(effect_from_annotations(&hints(Some(false), Some(true), None)), Effect::Destructive);
    // missing → Destructive
    assert_eq!(effect_from_annotations(&ToolAnnotations::default()), Effect::Destructive);
    assert_eq!(effect_from_annotations(&hints(Some(false), None, None)), Effect::Destructive);
    // ambiguous: read-only and destructive → Destructive
    assert_eq!(effect_from_annotations(&hints(Some(true), Some(true), Some(false))), Effect::Destructive);
}

#[test]
fn every_combination_of_hints_matches_the_table_and_is_never_read() {
    let values = [None, Some(false), Some(true)];
    let mut seen = std::collections::HashSet::new();
    for ro in values {
        for d in values {
            for ow in values {
                for idempotent in values {
                    let mut a = hints(ro, d, ow);
                    a.idempotent = idempotent;
                    let effect = effect_from_annotations(&a);
                    assert_eq!(effect, expected(ro, d, ow), "hints ro={ro:?} d={d:?} ow={ow:?}");
                    assert_ne!(effect, Effect::Read);
                    seen.insert(effect.as_str());
                }
            }
        }
    }
    assert_eq!(seen.len(), 4, "all four non-native effects are reachable: {seen:?}");
}

/// Register one plugin tool per case (named, annotated) and check each registered effect.
fn check_registered_effects(network_granted: bool, cases: &[(&str, ToolAnnotations, Effect)]) {
    let registry = Registry::new(&NATIVE_TOOL_NAMES);
    for (name, annotations, _) in cases {
        let spec = ToolSpec {
            name: name.to_string(),
            title: None,
            description: String::new(),
            input_schema: json!({ "type": "object" }).to_string(),
            output_schema: None,
            annotations: annotations.clone(),
        };
        registry
            .register_external(
                ExternalKind::Wasm,
                "p",
                &support::identity(),
                &spec,
                network_granted,
                support::ok_tool(),
            )
            .unwrap();
    }
    for (info, (_, _, effect)) in registry.list().iter().zip(cases) {
        assert_eq!(info.effect, *effect, "{} (network granted: {network_granted})", info.name);
    }
}

#[test]
fn registered_plugin_tools_take_their_effect_from_annotations() {
    check_registered_effects(
        false,
        &[
            ("closed", hints(Some(true), None, Some(false)), Effect::ExternalRead),
            ("open", hints(Some(true), None, None), Effect::Network),
            ("writes", hints(Some(false), Some(false), None), Effect::Write),
            ("bare", ToolAnnotations::default(), Effect::Destructive),
        ],
    );
}

#[test]
fn a_plugin_holding_an_http_grant_has_at_least_the_network_effect() {
    // Whatever its annotations say, it can reach an open world; a higher effect stays.
    check_registered_effects(
        true,
        &[
            ("closed", hints(Some(true), None, Some(false)), Effect::Network),
            ("open", hints(Some(true), None, None), Effect::Network),
            ("writes", hints(Some(false), Some(false), None), Effect::Write),
            ("bare", ToolAnnotations::default(), Effect::Destructive),
        ],
    );
}

#[test]
fn native_tools_have_their_documented_effects() {
    let env = support::TestEnv::trusted();
    let scope = env.mount();
    let effects: Vec<(String, &str)> =
        scope.registry().list().into_iter().map(|t| (t.name, t.effect.as_str())).collect();
    assert_eq!(
        effects,
        vec![
            ("list_files".to_string(), "read"),
            ("read_file".to_string(), "read"),
            ("search".to_string(), "read"),
            ("write_file".to_string(), "write"),
            ("edit_file".to_string(), "write"),
            ("run_command".to_string(), "destructive"),
        ]
    );
}
