//! `clat plugin install | list | remove`: plugin packages in `$CLAT_HOME`.
//! A WASM package is validated (compiled, linked, listed) on the staged copy,
//! the bytes that will be installed.

use serde_json::json;

use super::PluginCommand;
use super::exit::{Exit, Failure};
use crate::packages::{PackageKind, PackageStore, check_entry, read_manifest};
use crate::trust::ClatHome;

pub(crate) async fn plugin(home: &ClatHome, command: PluginCommand) -> Result<Exit, Failure> {
    let store = PackageStore::new(home);
    match command {
        PluginCommand::Install { dir, json } => {
            let manifest = read_manifest(&dir)?;
            check_entry(&dir, &manifest)?;
            let runtime = match manifest.kind {
                PackageKind::Wasm => Some(
                    crate::wasm::WasmRuntime::new(&home.path().join(crate::scope::WASM_CACHE_DIR)).map_err(|e| {
                        Failure::new(Exit::Internal, "internal", format!("the WASM runtime could not start: {e:#}"))
                    })?,
                ),
                PackageKind::McpStdio => None,
            };
            let mut tools = Vec::new();
            // Validation runs on the staged copy, the bytes that will be installed.
            let installed = store.install(&dir, |manifest, staged| {
                let Some(runtime) = &runtime else { return Ok(()) };
                let entry = staged.join(&manifest.entry);
                let validated = tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current().block_on(crate::wasm::validate_component(
                        runtime,
                        &manifest.name,
                        &entry,
                    ))
                });
                tools = validated.map_err(|e| format!("{}: {e}", manifest.entry))?;
                Ok(())
            })?;
            let kind = match installed.manifest.kind {
                PackageKind::Wasm => "wasm",
                PackageKind::McpStdio => "mcp-stdio",
            };
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
                    let kind = match p.manifest.kind {
                        PackageKind::Wasm => "wasm",
                        PackageKind::McpStdio => "mcp-stdio",
                    };
                    println!("{:20} {:10} {:9} {}", p.manifest.name, p.manifest.version, kind, p.manifest.description);
                }
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Remove { name, json } => {
            let removed = store.remove(&name)?;
            if json {
                println!("{}", json!({ "removed": removed.manifest.name, "version": removed.manifest.version }));
            } else {
                println!("removed {} {}", removed.manifest.name, removed.manifest.version);
            }
            Ok(Exit::Ok)
        }
    }
}
