//! `clat plugin install | list | remove | gc`: plugin packages in `$CLAT_HOME`
//! (`new | build | call | test` are dispatched to `author.rs`).
//! A WASM package is validated (compiled, linked, listed) on the staged copy,
//! the bytes that will be installed. Every install (whether it succeeded or
//! not), every remove and `gc` sweep the compiled cache of entries no
//! installed plugin uses.

use serde_json::json;

use std::path::PathBuf;

use super::exit::{Exit, Failure};
use super::shutdown::Shutdown;
use super::{PluginCommand, author, project_dir};
use crate::packages::{PackageKind, PackageStore, check_entry, read_manifest};
use crate::trust::ClatHome;
use crate::wasm::WasmRuntime;
use crate::wasm::cache::CacheSweep;

fn wasm_runtime(home: &ClatHome) -> Result<std::sync::Arc<WasmRuntime>, Failure> {
    WasmRuntime::with_observer(&home.path().join(crate::scope::WASM_CACHE_DIR), super::progress::compile_observer())
        .map_err(|e| Failure::new(Exit::Internal, "internal", format!("the WASM runtime could not start: {e:#}")))
}

/// Sweep the compiled cache against what is installed now.
fn sweep(store: &PackageStore, runtime: &WasmRuntime) -> Result<CacheSweep, String> {
    let installed = store.list().map_err(|e| e.to_string())?;
    let sweep = runtime.sweep_cache(&installed).map_err(|e| format!("cannot sweep the compiled cache: {e}"))?;
    if sweep.removed > 0 {
        tracing::info!("removed {} unused compiled cache entries ({} bytes)", sweep.removed, sweep.bytes);
    }
    Ok(sweep)
}

/// The sweep after an install or a remove: one that fails costs only disk
/// space, so it is logged and never the command's failure.
fn sweep_after(store: &PackageStore, runtime: &WasmRuntime) {
    if let Err(e) = sweep(store, runtime) {
        tracing::warn!("{e}");
    }
}

pub(crate) async fn plugin(
    home: &ClatHome,
    project: Option<PathBuf>,
    command: PluginCommand,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let store = PackageStore::new(home);
    let here = || project_dir(None);
    match command {
        // The author's commands (cli/author.rs).
        PluginCommand::New { name, lang, kind, dir, json } => {
            author::new(home, &name, &dir.map_or_else(here, Ok)?, lang, kind, json)
        }
        PluginCommand::Build { dir, json } => author::build_command(&dir.map_or_else(here, Ok)?, json),
        PluginCommand::Call { package, tool, call, no_build } => {
            let (request, sandbox) = call.request(tool)?;
            let call = author::PluginCall { package, no_build, project: project_dir(project)?, request, sandbox };
            author::call(home, call, shutdown).await
        }
        PluginCommand::Test { package, json, no_build } => {
            let dir = package.map_or_else(here, Ok)?;
            author::test(home, &dir, &project_dir(project)?, no_build, json, shutdown).await
        }
        PluginCommand::Install { dir, build: true, json } => {
            let package = author::build_project(&dir)?;
            Box::pin(plugin(home, None, PluginCommand::Install { dir: package, build: false, json }, shutdown)).await
        }
        // The package store's.
        PluginCommand::Install { dir, json, .. } => {
            let manifest = read_manifest(&dir)?;
            check_entry(&dir, &manifest)?;
            let runtime = wasm_runtime(home)?;
            let validates = manifest.kind == PackageKind::Wasm;
            let mut tools = Vec::new();
            // Validation runs on the staged copy, the bytes that will be installed.
            let installed = store.install(&dir, |manifest, staged| {
                if !validates {
                    return Ok(());
                }
                let entry = staged.join(&manifest.entry);
                let validated = tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current().block_on(crate::wasm::validate_component(
                        &runtime,
                        &manifest.name,
                        &entry,
                    ))
                });
                tools = validated.map_err(|e| format!("{}: {e}", manifest.entry))?;
                Ok(())
            });
            // A failed install's compiled entry and a replaced version's go now.
            sweep_after(&store, &runtime);
            let installed = installed?;
            let kind = installed.manifest.kind.as_str();
            let names: Vec<String> = tools
                .iter()
                .map(|t| {
                    crate::names::external_tool_name(
                        crate::names::ExternalKind::Wasm,
                        &installed.manifest.name,
                        &t.name,
                    )
                })
                .collect();
            if json {
                let document = json!({ "installed": installed.manifest.name, "version": installed.manifest.version,
                                       "kind": kind, "dir": installed.dir.display().to_string(), "tools": names });
                println!("{document}");
                return Ok(Exit::Ok);
            }
            println!(
                "installed {} {} ({kind}) into {}",
                installed.manifest.name,
                installed.manifest.version,
                installed.dir.display()
            );
            for name in names {
                println!("  tool {name}");
            }
            Ok(Exit::Ok)
        }
        PluginCommand::List { json } => {
            let list = store.list()?;
            if json {
                println!("{}", json!({ "plugins": list }));
            } else if list.is_empty() {
                println!("no plugins installed");
            } else {
                for p in list {
                    let kind = p.manifest.kind.as_str();
                    println!("{:20} {:10} {:9} {}", p.manifest.name, p.manifest.version, kind, p.manifest.description);
                }
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Remove { name, json } => {
            let removed = store.remove(&name)?;
            if removed.manifest.kind == PackageKind::Wasm {
                sweep_after(&store, &*wasm_runtime(home)?);
            }
            if json {
                println!("{}", json!({ "removed": removed.manifest.name, "version": removed.manifest.version }));
            } else {
                println!("removed {} {}", removed.manifest.name, removed.manifest.version);
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Gc { json } => {
            let swept =
                sweep(&store, &*wasm_runtime(home)?).map_err(|e| Failure::new(Exit::Internal, "internal", e))?;
            if json {
                println!("{}", json!({ "removed_entries": swept.removed, "freed_bytes": swept.bytes }));
            } else {
                println!(
                    "removed {} unused compiled cache entries ({})",
                    swept.removed,
                    super::progress::size(swept.bytes)
                );
            }
            Ok(Exit::Ok)
        }
    }
}
