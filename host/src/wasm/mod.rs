//! The WASM adapter, the sibling of `mcp/`: it turns installed WebAssembly
//! component plugins into extensions of a project scope, onto the same
//! contract, registry and host services as MCP servers.
//!
//! - `runtime.rs`: the process's runtime (engine, linkers, compiled cache) and
//!   loading one plugin;
//! - `engine.rs`: the wasmtime `Engine`: component model, epoch ticker, the
//!   pooling allocator or its on-demand fallback;
//! - `cache.rs`: compiled components on disk; `imports.rs`: the interface check
//!   before any compilation; `kept.rs`: listings kept at install, so a load
//!   maps nothing;
//! - `plugin.rs`: one plugin (a fresh store and instance per call, failures
//!   with its output tail, context deliveries);
//! - `tools.rs`: its tools in the registry and the `call-tool` handler;
//! - `store.rs`: one call's store (no ambient authority, limits, the epoch
//!   deadline); `http.rs`: outbound HTTP under a grant; `stdio.rs`: its tail;
//! - `host_services.rs`: what a guest asks of CLAT, served by `HostServices`
//!   (the twin of `mcp/host_services.rs`).
//!
//! `start_plugin` takes one installed plugin from `starting` to `ready` (or
//! `failed`), as `mcp::start_server` does a server; a broken guest fails its
//! own load or call only.

pub mod cache;
pub mod engine;
mod failure;
mod host_services;
pub mod http;
pub mod imports;
pub mod kept;
mod load;
pub mod plain;
mod plugin;
mod runtime;
pub mod stdio;
pub mod store;
mod tools;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use engine::{ALLOCATOR_ENV, Allocator, EngineOptions, WasmCompiler};
pub use load::{PLAIN_LISTING_RULES, PluginSetup, Validated, keep_listing, load_file, validate_component};
pub use plugin::WasmPlugin;
pub use runtime::{LoadError, WasmRuntime};

use crate::extension::LoadingSettings;
use crate::extension::{ExtensionKind, ExtensionState, ExtensionStatus};
use crate::home::ClatHome;
use crate::limits::TOOLS_PER_PLUGIN_MAX;
use crate::names::{ExternalKind, names_tool};
use crate::registry::Registry;
use crate::services::HostServices;
use crate::supply::packages::Installed;

/// Load one installed plugin and register its tools. Returns its status and,
/// when it is ready, the loaded plugin. A load is in-process: when `closing`
/// is cancelled (the scope closes) while it runs, it is dropped, which leaves
/// nothing behind.
pub async fn start_plugin(
    runtime: anyhow::Result<Arc<WasmRuntime>>,
    home: &ClatHome,
    package: &Installed,
    services: &Arc<HostServices>,
    registry: &Registry,
    closing: &CancellationToken,
) -> (ExtensionStatus, Option<Arc<WasmPlugin>>) {
    let name = &package.manifest.name;
    let mut status = ExtensionStatus::new(name, ExtensionKind::Wasm, ExtensionState::Ready, None);
    let entry = package.entry_path();
    let loaded = match runtime {
        Ok(runtime) => tokio::select! {
            loaded = runtime.load_installed(name, &package.dir, &entry, PluginSetup::of(package, home), Arc::clone(services)) => {
                loaded.map_err(|e| e.to_string())
            }
            _ = closing.cancelled() => Err("the scope closed while it was starting".to_string()),
        },
        Err(e) => Err(format!("the WASM runtime could not start: {e:#}")),
    };
    let plugin = match loaded {
        Ok(plugin) => plugin,
        Err(reason) => {
            status.fail(reason);
            return (status, None);
        }
    };
    status.grants = plugin.grants().clone();
    if plugin.dropped_tools() > 0 {
        status
            .problems
            .push(format!("{} tools past the first {TOOLS_PER_PLUGIN_MAX} were dropped", plugin.dropped_tools()));
    }
    status.problems.extend(plugin.refused().into_iter().map(|why| format!("not offered: {why}")));
    let listed = plugin.tools();
    for named in plugin.tool_uses().named_tools() {
        if !listed.iter().any(|spec| spec.name == named) {
            status.problems.push(format!(
                "clat-plugin.toml has [tools.{named}], but the plugin lists no tool {named} (a misspelled name \
                 leaves the tool it meant without the capabilities it uses)"
            ));
        }
    }
    for result in plugin.register(registry) {
        match result {
            Ok(name) => status.tools.push(name),
            Err(e) => status.problems.push(e.to_string()),
        }
    }
    // A hand-edited index entry (`clat plugin load` writes only sound ones): both `true` is reported and
    // `always_load` wins, as in discovery; a name that names none of its tools, as a server's is.
    let lists = |written: &str| status.tools.iter().any(|t| names_tool(ExternalKind::Wasm, name, t, written));
    let problems = package.loading.problems("plugin", lists);
    status.problems.extend(problems);
    status.output_tail = plugin.output_tail();
    (status, Some(plugin))
}
