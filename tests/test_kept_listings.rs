//! A plugin's listing is kept at install (`clat_host::wasm::kept`): a load
//! whose plugin matches the kept key (artifact, contract version, grants)
//! maps nothing and builds no engine — the component is mapped at the first
//! call — and one that
//! does not match, or cannot be read, is listed again, never trusted. A grant
//! change lists again; a remove forgets the listing.

mod support;

use clat_guest_artifacts as guests;
use clat_host::contract::CONTRACT_VERSION;
use clat_host::contract::PermissionMode;
use clat_host::home::listings::PLUGIN_LISTINGS_DIR;
use clat_host::run::RunContext;
use clat_host::scope::{ProjectScope, ScopeOptions};
use serde_json::{Value, json};
use support::{TestEnv, stderr};

fn kept(env: &TestEnv, plugin: &str) -> Option<Value> {
    let text = std::fs::read_to_string(env.home.join(PLUGIN_LISTINGS_DIR).join(format!("{plugin}.json"))).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

fn write_kept(env: &TestEnv, plugin: &str, value: &Value) {
    std::fs::write(env.home.join(PLUGIN_LISTINGS_DIR).join(format!("{plugin}.json")), value.to_string()).unwrap();
}

fn install(env: &TestEnv, package: &str, grant: bool) {
    let mut args = vec!["plugin", "install", package];
    if grant {
        args.push("--grant");
    }
    let out = env.clat(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Mount the project and load its plugins; the runtime's (cache hits, compilations) after loading.
async fn mount(env: &TestEnv) -> (ProjectScope, (u64, u64)) {
    let scope = ProjectScope::mount(&env.clat_home(), &env.project, ScopeOptions::default()).unwrap();
    let statuses = scope.load_plugins().await;
    assert!(statuses.iter().all(|s| s.state == clat_host::ExtensionState::Ready), "{statuses:#?}");
    let counts = scope.wasm_runtime().unwrap().cache_counts();
    (scope, counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_kept_at_install_spares_the_load_the_component_until_a_call() {
    let env = TestEnv::trusted();
    install(&env, guests::HELLO_PACKAGE, false);
    let file = kept(&env, "hello").expect("install keeps the listing");
    assert_eq!(file["key"]["contract"], CONTRACT_VERSION);
    assert!(file["key"]["artifact"].as_str().unwrap().starts_with("package:"), "{file}");
    assert_eq!(file["tools"][0]["name"], "greet");
    assert_eq!(file["schemas_checked"], true, "its schemas were checked once, here");

    // The load reads the listing: nothing mapped, nothing compiled; the tool is there.
    let (scope, counts) = mount(&env).await;
    assert_eq!(counts, (0, 0), "a kept listing maps nothing");
    assert!(!scope.wasm_runtime().unwrap().engine_built(), "nor builds the engine (its pool, its ticker)");
    let greet = scope.registry().list().into_iter().find(|t| t.name == "wasm_hello_greet").unwrap();
    assert!(greet.description.contains("Greet"), "{greet:?}");

    // The first call maps the component (from the compiled cache install filled) and runs.
    assert_eq!(scope.plugins()[0].cache_outcome(), None);
    let run = scope.start_run(RunContext::builder().mode(PermissionMode::FullAccess));
    let output = scope.registry().call("wasm_hello_greet", json!({ "name": "kept" }), &run).await.unwrap();
    assert!(output.joined_text().contains("kept"), "{}", output.joined_text());
    assert_eq!(scope.wasm_runtime().unwrap().cache_counts(), (1, 0), "mapped once, from the cache");
    let again = scope.registry().call("wasm_hello_greet", json!({ "name": "twice" }), &run).await.unwrap();
    assert!(again.joined_text().contains("twice"));
    assert_eq!(scope.wasm_runtime().unwrap().cache_counts(), (1, 0), "mapped once per load");
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_made_under_another_key_or_unreadable_is_listed_again() {
    let env = TestEnv::trusted();
    install(&env, guests::HELLO_PACKAGE, false);
    let listed = kept(&env, "hello").unwrap();
    let tools_at_install = listed["tools"].clone();

    // Another contract version, another artifact, another grant, a file that is not JSON: each is listed again,
    // and the listing is kept anew under the plugin's key.
    let mut others = Vec::new();
    for (field, value) in
        [("contract", json!("0.0.9")), ("artifact", json!("package:0000")), ("grants", json!({ "env": ["HOME"] }))]
    {
        let mut changed = listed.clone();
        changed["key"][field] = value;
        // What a stale listing says is never offered: a tool the plugin does not list.
        changed["tools"][0]["name"] = json!("stale_tool");
        others.push(changed);
    }
    for changed in others {
        write_kept(&env, "hello", &changed);
        let (scope, counts) = mount(&env).await;
        assert_eq!(counts.0 + counts.1, 1, "the component was mapped to list it: {changed}");
        let names: Vec<String> = scope.registry().list().into_iter().map(|t| t.name).collect();
        assert!(names.contains(&"wasm_hello_greet".to_string()) && !names.iter().any(|n| n.contains("stale")));
        assert_eq!(kept(&env, "hello").unwrap(), listed, "kept anew under the plugin's key");
        scope.close().await;
    }
    std::fs::write(env.home.join(PLUGIN_LISTINGS_DIR).join("hello.json"), "{ not json").unwrap();
    let (scope, counts) = mount(&env).await;
    assert_eq!(counts.0 + counts.1, 1);
    assert_eq!(kept(&env, "hello").unwrap()["tools"], tools_at_install);
    scope.close().await;
    // Gone: listed again, and kept.
    std::fs::remove_file(env.home.join(PLUGIN_LISTINGS_DIR).join("hello.json")).unwrap();
    let (scope, _) = mount(&env).await;
    assert!(kept(&env, "hello").is_some());
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_change_lists_again_and_a_remove_forgets() {
    let env = TestEnv::trusted();
    install(&env, guests::FETCH_JSON_PACKAGE, true);
    let granted = kept(&env, "fetch-json").unwrap();
    assert!(!granted["key"]["grants"]["http"].as_array().unwrap().is_empty(), "{granted}");

    let out = env.clat(&["plugin", "revoke", "fetch-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let revoked = kept(&env, "fetch-json").unwrap();
    assert_eq!(revoked["key"]["grants"], json!({}), "listed again under no grant: {revoked}");
    let (scope, counts) = mount(&env).await;
    assert_eq!(counts, (0, 0), "the listing after the revoke is the plugin's now");
    scope.close().await;

    let out = env.clat(&["plugin", "grant", "fetch-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(kept(&env, "fetch-json").unwrap()["key"], granted["key"]);

    let out = env.clat(&["plugin", "remove", "fetch-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(kept(&env, "fetch-json").is_none(), "a removed plugin's listing is forgotten");
}
