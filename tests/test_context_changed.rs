//! `context-changed`: loaded guests get the latest snapshot when a run starts
//! and `none` when it ends, best effort, from a delivery task that never blocks
//! the run.

mod support;

use std::time::Duration;

use clat_guest_artifacts as guests;
use clat_host::run::RunContext;
use clat_host::supply::packages::PackageStore;
use support::TestEnv;

async fn wait_for_line(plugin: &clat_host::wasm::WasmPlugin, wanted: &str) -> Vec<String> {
    for _ in 0..500 {
        let tail = plugin.output_tail();
        if tail.iter().any(|l| l == wanted) {
            return tail;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{wanted:?} never arrived: {:?}", plugin.output_tail());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_starting_and_ending_reach_loaded_guests() {
    let env = TestEnv::trusted();
    let package = env.dir.path().join("test-guests-package");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::copy(guests::TEST_GUESTS_WASM, package.join("test_guests.wasm")).unwrap();
    std::fs::write(
        package.join("clat-plugin.toml"),
        "name = \"t\"\nversion = \"0.1.0\"\nkind = \"wasm\"\nentry = \"test_guests.wasm\"\n",
    )
    .unwrap();
    PackageStore::new(&env.clat_home()).install(&package, |_, _| Ok(())).unwrap();
    let scope = env.mount();
    let statuses = scope.load_plugins().await;
    assert_eq!(statuses[0].state, "ready", "{statuses:?}");
    let plugin = scope.plugins().pop().unwrap();

    let run = scope.start_run(RunContext::builder());
    wait_for_line(&plugin, &format!("context-changed: run {}", run.run_id())).await;
    scope.finish_run(&run);
    wait_for_line(&plugin, "context-changed: no run").await;

    // A burst of runs (as `clat serve` makes, one per call): only the latest value has to arrive, and the
    // guest is not instantiated once per run (`CONTEXT_DELIVERY_INTERVAL`); none of this blocks.
    let before = plugin.context_deliveries();
    for _ in 0..200 {
        let run = scope.start_run(RunContext::builder());
        scope.finish_run(&run);
    }
    let run = scope.start_run(RunContext::builder());
    wait_for_line(&plugin, &format!("context-changed: run {}", run.run_id())).await;
    let burst = plugin.context_deliveries() - before;
    assert!((1..20).contains(&burst), "401 values reached the guest in {burst} deliveries");
    assert!(plugin.context_deliveries() >= 3);
}
