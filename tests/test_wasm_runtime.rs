//! The WASM runtime against real guests compiled from `guests/`: loading and
//! registration, calls, the compile cache, and a misbehaving guest that loops,
//! allocates without bound, traps or returns too much — each failing only its
//! own call while the next call keeps working.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use clat_guest_artifacts as guests;
use clat_host::contract::{CONTRACT_VERSION, PermissionMode};
use clat_host::registry::CallError;
use clat_host::run::RunContext;
use clat_host::wasm::cache::CacheOutcome;
use clat_host::wasm::imports::ImportProblem;
use clat_host::wasm::{LoadError, WasmRuntime, load_file};
use serde_json::json;
use support::wasm::{load_into, names, runtime};
use support::{TestEnv, run_in, text};

#[tokio::test]
async fn hello_registers_beside_the_native_tools_and_answers() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "hello", guests::HELLO_WASM).await;
    let tools = scope.registry().list();
    assert!(names(scope.registry()).contains(&"read_file".to_string()));
    let greet = tools.iter().find(|t| t.name == "wasm_hello_greet").expect("registered as wasm_hello_greet");
    assert_eq!(greet.effect.as_str(), "external-read", "read-only + closed world");
    assert_eq!(greet.original_name, "greet");
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_hello_greet", json!({ "name": "Ada" }), &run).await.unwrap();
    assert_eq!(text(&out), "Hello, Ada! (from a WASM plugin)");
    let err = scope.registry().call("wasm_hello_greet", json!({ "name": 5 }), &run).await.unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "the guest's schema is enforced: {err}");
}

/// A guest built for any accepted contract version loads, lists and calls — its host-services imports
/// and its `plugin` export resolved by this host's one binding. The component is the test guest with
/// every contract name rewritten to that version (0.1.0 and 0.1.1 differ only in doc comments, so a
/// build against the frozen 0.1.0 differs from this one in those names alone).
#[tokio::test]
async fn a_guest_built_for_each_accepted_contract_version_loads_and_reaches_the_host() {
    for version in clat_host::contract::ACCEPTED_CONTRACT_VERSIONS {
        let env = TestEnv::trusted();
        env.write("notes/a.txt", "kept\n");
        let bytes = std::fs::read(guests::TEST_GUESTS_WASM).unwrap();
        let built = |v: &str| -> Vec<Vec<u8>> {
            ["plugin", "host-services", "types"].iter().map(|i| format!("artec:clat/{i}@{v}").into_bytes()).collect()
        };
        let mut patched = bytes.clone();
        for (from, to) in built(CONTRACT_VERSION).iter().zip(built(version)) {
            assert_eq!(from.len(), to.len(), "a rewrite keeps every offset");
            let places: Vec<usize> =
                bytes.windows(from.len()).enumerate().filter(|(_, w)| w == from).map(|(i, _)| i).collect();
            assert!(!places.is_empty(), "the guest names {}", String::from_utf8_lossy(from));
            for at in places {
                patched[at..at + to.len()].copy_from_slice(&to);
            }
        }
        let path = env.dir.path().join(format!("t-{version}.wasm"));
        std::fs::write(&path, &patched).unwrap();
        let found = clat_host::wasm::imports::check_component(&patched, false).unwrap();
        assert_eq!(found.exports, [format!("artec:clat/plugin@{version}")]);

        let scope = env.mount();
        load_into(&scope, "t", path.to_str().unwrap()).await;
        let (run, _) = run_in(PermissionMode::Ask);
        let out = scope.registry().call("wasm_t_echo", json!({ "v": version }), &run).await.unwrap();
        assert_eq!(text(&out), format!(r#"{{"v":"{version}"}}"#));
        let read = json!({ "tool": "read_file", "arguments": { "path": "notes/a.txt" } });
        let out = scope.registry().call("wasm_t_host_call", read, &run).await.unwrap();
        assert_eq!(text(&out), "ok: kept\n", "contract {version}: a host service answers");
    }
}

#[tokio::test]
async fn the_second_load_hits_the_compile_cache() {
    let dir = tempfile::tempdir().unwrap();
    let env = TestEnv::trusted();
    let scope = env.mount();
    let rt = WasmRuntime::new(&dir.path().join("cache")).unwrap();
    let first =
        load_file(&rt, "hello", std::path::Path::new(guests::HELLO_WASM), scope.services().clone()).await.unwrap();
    assert_eq!(first.cache_outcome(), Some(CacheOutcome::Compiled));
    // A new runtime (a new process, in effect) reuses the artifact on disk.
    let rt2 = WasmRuntime::new(&dir.path().join("cache")).unwrap();
    let second =
        load_file(&rt2, "hello", std::path::Path::new(guests::HELLO_WASM), scope.services().clone()).await.unwrap();
    assert_eq!(second.cache_outcome(), Some(CacheOutcome::Hit));
    assert_eq!(rt2.cache_counts(), (1, 0));
    assert_eq!(second.tools().len(), 1);
}

#[tokio::test]
async fn files_that_are_not_plugins_fail_to_load_with_a_reason() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let junk = env.write("junk.wasm", "this is not wasm");
    let err = load_file(&runtime(), "junk", &junk, scope.services().clone()).await.err().unwrap();
    assert!(matches!(err, LoadError::Interfaces { problem: ImportProblem::NotAComponent(_), .. }), "{err}");
    assert!(err.to_string().starts_with("not a valid WebAssembly component"), "{err}");
    let missing = env.project.join("missing.wasm");
    assert!(matches!(
        load_file(&runtime(), "m", &missing, scope.services().clone()).await,
        Err(LoadError::Read { .. })
    ));
}

#[tokio::test]
async fn a_guest_that_loops_forever_is_stopped_at_its_deadline_and_the_next_call_works() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let run = RunContext::builder().deadline(Duration::from_millis(500)).start();
    let started = Instant::now();
    let err = scope.registry().call("wasm_t_spin", json!({}), &run).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(20), "stopped promptly");
    assert!(matches!(err, CallError::TimedOut { .. }), "a guest past its deadline is a timeout: {err}");
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_t_echo", json!({ "a": 1 }), &run).await.unwrap();
    assert_eq!(text(&out), r#"{"a":1}"#);
}

#[tokio::test]
async fn cancel_mid_call_returns_at_once() {
    let env = TestEnv::trusted();
    let scope = Arc::new(env.mount());
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let run = RunContext::builder().start();
    let call = {
        let (scope, run) = (scope.clone(), run.clone());
        tokio::spawn(async move { scope.registry().call("wasm_t_spin", json!({}), &run).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    run.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), call).await.expect("returned").unwrap();
    assert!(matches!(result, Err(CallError::Cancelled { .. })), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_memory_bomb_hits_the_limit_and_only_its_call_fails() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let err = scope.registry().call("wasm_t_memory_bomb", json!({}), &run).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, CallError::Failed { .. }), "{message}");
    assert!(message.contains("plugin t failed"), "{message}");
    assert!(scope.registry().call("wasm_t_echo", json!({}), &run).await.is_ok());
}

#[tokio::test]
async fn a_trap_is_a_clear_failure_with_the_guest_output_tail() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let plugin = load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let err = scope.registry().call("wasm_t_trap", json!({}), &run).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("trapped"), "{message}");
    assert!(message.contains("the test guest traps on purpose"), "the panic message is in the tail: {message}");
    assert!(!plugin.output_tail().is_empty());
    assert!(scope.registry().call("wasm_t_echo", json!({}), &run).await.is_ok());
}

#[tokio::test]
async fn more_than_1_mib_of_output_is_cut_with_a_marker() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_t_big_output", json!({ "bytes": 2_000_000 }), &run).await.unwrap();
    assert!(!out.is_error, "cut, not lost");
    assert!(text(&out).starts_with("xxxx") && text(&out).contains("exceeds the 1048576-byte limit; it was cut here"));
    let out = scope.registry().call("wasm_t_big_output", json!({ "bytes": 1000 }), &run).await.unwrap();
    assert!(!out.is_error);
}

#[tokio::test]
async fn guest_stdout_and_stderr_go_to_a_bounded_redacted_tail() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let plugin = load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_t_stdout_spam", json!({}), &run).await.unwrap();
    assert_eq!(text(&out), "printed");
    let tail = plugin.output_tail();
    assert_eq!(tail.len(), clat_host::limits::STDERR_TAIL_LINES);
    assert!(tail.iter().any(|l| l.contains("api_key=[REDACTED]")), "{tail:?}");
    assert!(tail.iter().all(|l| !l.contains("abcdefghijklmnop") && !l.contains("supersecretvalue")), "{tail:?}");
}

#[tokio::test]
async fn a_component_of_another_world_is_refused_before_it_is_compiled() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let dir = tempfile::tempdir().unwrap();
    let rt = WasmRuntime::new(&dir.path().join("cache")).unwrap();
    let path = std::path::Path::new(guests::NOT_A_PLUGIN_WASM);
    let err = load_file(&rt, "cmd", path, scope.services().clone()).await.err().unwrap();
    assert!(matches!(err, LoadError::Interfaces { problem: ImportProblem::NotAPlugin { .. }, .. }), "{err}");
    assert!(err.to_string().contains("not a CLAT plugin (exports: wasi:cli/run@0.2"), "{err}");
    assert!(err.to_string().contains("the world `clat-plugin`"), "{err}");
    assert_eq!(rt.cache_counts(), (0, 0), "nothing was compiled");
}

#[test]
fn every_example_guest_imports_only_what_the_host_links() {
    use clat_host::wasm::imports::check_component;
    for wasm in [guests::HELLO_WASM, guests::PROJECT_NOTES_WASM, guests::SUMMARIZE_WASM, guests::CONTRACT_WASM] {
        // The guest SDK's rust std pulls in wasi:cli and wasi:io; the contract's types and host services come with it.
        let found = check_component(&std::fs::read(wasm).unwrap(), false).unwrap_or_else(|e| panic!("{wasm}: {e}"));
        assert!(!found.imports_http(), "{wasm}: {found:?}");
        assert!(
            found.imports.iter().any(|i| *i == format!("artec:clat/types@{CONTRACT_VERSION}")),
            "{wasm}: {found:?}"
        );
        assert!(found.imports.iter().any(|i| i.starts_with("wasi:cli/")), "{wasm}: {found:?}");
        assert_eq!(found.exports, [format!("artec:clat/plugin@{CONTRACT_VERSION}")], "{wasm}");
    }
    // The SDK's `http` feature adds wasi:http, linked only for plugins that declare it.
    for wasm in [guests::FETCH_JSON_WASM, guests::HTTP_PROBE_WASM] {
        let bytes = std::fs::read(wasm).unwrap();
        let found = check_component(&bytes, true).unwrap_or_else(|e| panic!("{wasm}: {e}"));
        assert!(found.imports_http(), "{wasm}: {found:?}");
        let err = check_component(&bytes, false).unwrap_err().to_string();
        assert!(err.contains("[capabilities] http"), "{err}");
    }
}

#[tokio::test]
async fn a_trap_in_list_tools_is_a_load_failure_with_a_redacted_tail() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let path = std::path::Path::new(guests::TRAP_ON_LOAD_WASM);
    let err = load_file(&runtime(), "boom", path, scope.services().clone()).await.err().unwrap();
    let message = err.to_string();
    assert!(matches!(err, LoadError::ListTools(_)), "{message}");
    assert!(message.contains("list-tools traps on purpose"), "{message}");
    assert!(message.contains("secret=[REDACTED]") && !message.contains("hunter2"), "{message}");
    assert!(scope.registry().list().iter().all(|t| !t.name.starts_with("wasm_boom")));
}

#[tokio::test]
async fn guests_have_no_ambient_authority() {
    let env = TestEnv::trusted();
    env.write("in-project.txt", "project data");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let scope = env.mount();
    load_into(&scope, "t", guests::TEST_GUESTS_WASM).await;
    let (run, _) = run_in(PermissionMode::FullAccess);
    let out = scope.registry().call("wasm_t_probe", json!({ "port": port }), &run).await.unwrap();
    let probe: serde_json::Value = serde_json::from_str(&text(&out)).unwrap();
    assert_eq!(probe["env_vars"], 0, "no inherited environment: {probe}");
    assert_eq!(probe["reads_own_dir"], true, "its own artifact dir is readable: {probe}");
    assert_eq!(probe["writes_own_dir"], false, "read-only: {probe}");
    assert_eq!(probe["reads_etc"], false, "no host filesystem: {probe}");
    assert_eq!(probe["tcp_connect"], false, "no sockets: {probe}");
    assert!(listener.accept().is_err(), "nothing connected");
    let guest_dir = std::path::Path::new(guests::TEST_GUESTS_WASM).parent().unwrap();
    assert!(!guest_dir.join("planted.txt").exists());
}

#[tokio::test]
async fn a_component_over_the_size_limit_is_refused_before_reading() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let big = env.project.join("big.wasm");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(clat_host::limits::WASM_COMPONENT_MAX_BYTES + 1).unwrap(); // sparse: no real 64 MiB written
    let err = load_file(&runtime(), "big", &big, scope.services().clone()).await.err().unwrap();
    assert!(matches!(err, LoadError::TooLarge { .. }), "{err}");
}

/// Never answers; says when it was asked.
struct SilentAsker(Arc<tokio::sync::Notify>);

#[async_trait::async_trait]
impl clat_host::services::asker::UserAsker for SilentAsker {
    async fn ask(
        &self,
        _question: &clat_host::services::asker::Question,
    ) -> Result<clat_host::services::asker::Answer, clat_host::services::asker::AskError> {
        self.0.notify_one();
        std::future::pending().await
    }
}

#[tokio::test]
async fn closing_the_scope_withdraws_a_plugin_like_a_server() {
    let env = TestEnv::trusted();
    let store = clat_host::supply::packages::PackageStore::new(&env.clat_home());
    store.install(std::path::Path::new(guests::ASK_NAME_PACKAGE), |_, _| Ok(())).unwrap();
    let scope = Arc::new(env.mount());
    scope.load_plugins().await;
    let asked = Arc::new(tokio::sync::Notify::new());
    let run = RunContext::builder().asker(Arc::new(SilentAsker(asked.clone()))).start();
    let call = {
        let (scope, run) = (scope.clone(), run.clone());
        tokio::spawn(async move { scope.registry().call("wasm_ask_name_greet_user", json!({}), &run).await })
    };
    asked.notified().await;
    scope.close().await;
    let err = call.await.unwrap().unwrap_err();
    assert!(
        matches!(&err, CallError::Withdrawn { reason, .. } if reason.contains("wasm extension ask-name was closed")),
        "{err}"
    );
    assert!(scope.registry().list().iter().all(|t| !t.name.starts_with("wasm_")), "its tools left the listing");
    let status = scope.extensions().into_iter().find(|e| e.name == "ask-name").unwrap();
    assert_eq!(status.state, clat_host::extension::ExtensionState::Closed);
}
