//! Helpers for tests that load the guests built from `guests/`.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, OnceLock};

use clat_host::registry::Registry;
use clat_host::scope::ProjectScope;
use clat_host::wasm::{WasmPlugin, WasmRuntime, load_file};

/// One runtime per test binary. Its compile cache is kept in the target's
/// temporary directory across runs (entries are keyed by the component's
/// content and the engine, so sharing them is safe): the large JavaScript and
/// Python guests compile once, not in every run.
pub fn runtime() -> Arc<WasmRuntime> {
    static RUNTIME: OnceLock<Arc<WasmRuntime>> = OnceLock::new();
    let rt = RUNTIME
        .get_or_init(|| WasmRuntime::new(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-wasm-cache")).unwrap());
    Arc::clone(rt)
}

/// Load a guest component into `scope` and register its tools.
pub async fn load_into(scope: &ProjectScope, name: &str, wasm: &str) -> Arc<WasmPlugin> {
    let plugin =
        load_file(&runtime(), name, Path::new(wasm), Arc::clone(scope.services())).await.expect("the guest loads");
    for r in plugin.register(scope.registry()) {
        r.expect("the guest's tools register");
    }
    plugin
}

pub fn names(registry: &Registry) -> Vec<String> {
    registry.list().into_iter().map(|t| t.name).collect()
}
