//! The WASM engine's instance pool against a real guest: a pool of one slot
//! serves calls one after another (each on a fresh instance), a second guest
//! instance while the slot is taken fails only that call with the pool's
//! reason, and the slot is free again once the first call ends; without a
//! pool (on-demand) calls work the same; and a `clat` whose address space
//! cannot hold the pool falls back to on-demand, says why, and still answers.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clat_guest_artifacts as guests;
use clat_host::contract::PermissionMode;
use clat_host::registry::CallError;
use clat_host::run::RunContext;
use clat_host::scope::ProjectScope;
use clat_host::wasm::{Allocator, EngineOptions, WasmRuntime, load_file};
use serde_json::json;
use support::{TestEnv, run_in, text};

fn runtime_with(instances_max: u32) -> Arc<WasmRuntime> {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-wasm-cache");
    WasmRuntime::with_options(&cache, None, EngineOptions { instances_max, ..EngineOptions::default() }).unwrap()
}

async fn load(runtime: &Arc<WasmRuntime>, scope: &ProjectScope) {
    let plugin = load_file(runtime, "t", Path::new(guests::TEST_GUESTS_WASM), Arc::clone(scope.services()))
        .await
        .expect("the guest loads");
    for r in plugin.register(scope.registry()) {
        r.unwrap();
    }
}

#[tokio::test]
async fn a_pool_of_one_serves_calls_in_turn_and_refuses_a_second_instance_at_once() {
    let runtime = runtime_with(1);
    assert_eq!(runtime.allocator().unwrap(), &Allocator::Pooling { instances: 1 });
    let env = TestEnv::trusted();
    let scope = Arc::new(env.mount());
    load(&runtime, &scope).await;
    let (run, _) = run_in(PermissionMode::Ask);
    for i in 0..3 {
        let out = scope.registry().call("wasm_t_echo", json!({ "i": i }), &run).await.unwrap();
        assert_eq!(text(&out), format!(r#"{{"i":{i}}}"#));
    }

    // The slot is held by a guest that spins until it is cancelled.
    let spinning = RunContext::builder().start();
    let call = {
        let (scope, run) = (Arc::clone(&scope), spinning.clone());
        tokio::spawn(async move { scope.registry().call("wasm_t_spin", json!({}), &run).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = scope.registry().call("wasm_t_echo", json!({}), &run).await.unwrap_err();
    let CallError::Failed { error, .. } = &refused else { panic!("the second instance fails its call: {refused}") };
    let message = error.to_string();
    assert!(message.contains("too many guest instances are running at once"), "{message}");
    assert!(message.contains("pooling (1 instances at once)"), "{message}");

    spinning.cancel();
    let ended = tokio::time::timeout(Duration::from_secs(10), call).await.expect("the spin ends").unwrap();
    assert!(matches!(ended, Err(CallError::Cancelled { .. })), "{ended:?}");
    let out = scope.registry().call("wasm_t_echo", json!({ "after": true }), &run).await.unwrap();
    assert_eq!(text(&out), r#"{"after":true}"#, "the slot is free again");
}

#[tokio::test]
async fn without_a_pool_the_engine_runs_on_demand_and_calls_work_the_same() {
    let runtime = runtime_with(0);
    assert!(matches!(runtime.allocator().unwrap(), Allocator::OnDemand { .. }), "{}", runtime.allocator().unwrap());
    let env = TestEnv::trusted();
    let scope = env.mount();
    load(&runtime, &scope).await;
    let (run, _) = run_in(PermissionMode::Ask);
    let out = scope.registry().call("wasm_t_echo", json!({ "a": 1 }), &run).await.unwrap();
    assert_eq!(text(&out), r#"{"a":1}"#);
}

#[test]
fn clat_falls_back_to_on_demand_where_the_address_space_cannot_hold_the_pool() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", guests::HELLO_PACKAGE]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // About 23 GiB: room for everything clat does, not for the pool's reservation.
    const ADDRESS_SPACE_BYTES: u64 = 24_000_000 * 1024;
    let mut command = env.clat_command(&["call", "wasm_hello_greet", r#"{"name":"Ada"}"#]);
    command.env_remove(clat_host::wasm::ALLOCATOR_ENV);
    // SAFETY: setrlimit is async-signal-safe, and the closure touches nothing else.
    unsafe {
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: ADDRESS_SPACE_BYTES, rlim_max: ADDRESS_SPACE_BYTES };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
    let out = command.output().expect("run clat");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("Hello, Ada!"), "{stdout}\n{stderr}");
    assert!(stderr.contains("on-demand allocator") && stderr.contains("could not be reserved"), "{stderr}");
}
