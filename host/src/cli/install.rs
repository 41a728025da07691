//! What an install decides before anything of a package is copied, for
//! `clat plugin install` and the author's commands alike: the interfaces its
//! component really imports, what it is granted (asked at a terminal, else
//! `--grant`, else an installed version's grant that covers it), and the
//! validation of the staged copy (compiled, linked, listed).

use crate::contract::ToolSpec;
use crate::supply::capabilities::Capabilities;
use crate::supply::packages::{Installed, Manifest, PackageError, PackageKind, read_manifest};
use crate::wasm::WasmRuntime;

/// Validate a staged WASM package for installation (an MCP package has nothing
/// to load): compile, link against what it declares, list its tools. Called
/// from inside the package store's install, on the runtime's thread.
pub(crate) fn validate_staged(
    runtime: &std::sync::Arc<WasmRuntime>,
    manifest: &Manifest,
    staged: &std::path::Path,
) -> Result<Vec<ToolSpec>, String> {
    if manifest.kind != PackageKind::Wasm {
        return Ok(Vec::new());
    }
    let entry = staged.join(&manifest.entry);
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(crate::wasm::validate_component(
            runtime,
            &manifest.name,
            &entry,
            &manifest.capabilities,
        ))
    })
    .map_err(|e| format!("{}: {e}", manifest.entry))
}

/// What to grant a package being installed: nothing when it declares nothing;
/// its declaration when `--grant` was given, when the installed version's grant
/// already covers it, or when the user says yes at a terminal; otherwise the
/// install is refused with what it asks for and how to grant it.
pub(crate) fn decide_grants(
    manifest: &Manifest,
    previous: Option<&Installed>,
    imports: &[String],
    grant_flag: bool,
    retry: &str,
) -> Result<Capabilities, PackageError> {
    let asked = &manifest.capabilities;
    if asked.is_empty() || grant_flag || previous.is_some_and(|p| p.grants.covers(asked)) {
        return Ok(asked.clone());
    }
    let new = previous.map(|p| p.grants.missing_from(asked)).filter(|m| !m.is_empty() && m != asked);
    let refused = |how: &str| PackageError::NotGranted {
        name: manifest.name.clone(),
        asked: asked.describe(),
        how: how.to_string(),
    };
    if !crate::policy::permissions::TerminalApprover::available() {
        return Err(refused(&format!("To grant it, run `{retry} --grant` (or install at a terminal and answer y).")));
    }
    let mut prompt = format!("Plugin {} {} asks for:\n", manifest.name, manifest.version);
    for line in asked.describe() {
        prompt.push_str(&format!("  - {line}\n"));
    }
    if let Some(new) = new {
        prompt.push_str(&format!("  (new since the installed version: {})\n", new.describe().join(", ")));
    }
    if !imports.is_empty() {
        prompt.push_str(&format!("Its component imports: {}\n", imports_summary(imports)));
    }
    prompt.push_str("Its tools count as reaching the network. Grant? [y/N] ");
    eprint!("{prompt}");
    let mut answer = String::new();
    let _ = std::io::stdin().read_line(&mut answer);
    if matches!(answer.trim(), "y" | "Y" | "yes") { Ok(asked.clone()) } else { Err(refused("Not granted.")) }
}

/// The interfaces the WASM component of the package in `dir` imports, as
/// its bytes say (whatever its manifest claims); empty for an MCP package or
/// one whose entry cannot be read (installing it reports why).
pub(crate) fn component_imports(dir: &std::path::Path) -> Vec<String> {
    let Ok(manifest) = read_manifest(dir) else { return Vec::new() };
    if manifest.kind != PackageKind::Wasm {
        return Vec::new();
    }
    std::fs::read(dir.join(&manifest.entry))
        .ok()
        .and_then(|bytes| crate::wasm::imports::read_interfaces(&bytes).ok())
        .map(|interfaces| interfaces.imports)
        .unwrap_or_default()
}

/// Imports grouped by package, for people: `wasi:http@0.2.12 (types, outgoing-handler)`.
pub(crate) fn imports_summary(imports: &[String]) -> String {
    let mut packages: Vec<(String, Vec<String>)> = Vec::new();
    for import in imports {
        let (name, version) = import.rsplit_once('@').map_or((import.as_str(), ""), |(n, v)| (n, v));
        let (package, interface) = name.split_once('/').unwrap_or((name, ""));
        let key = if version.is_empty() { package.to_string() } else { format!("{package}@{version}") };
        match packages.iter_mut().find(|(k, _)| *k == key) {
            Some((_, interfaces)) => interfaces.push(interface.to_string()),
            None => packages.push((key, vec![interface.to_string()])),
        }
    }
    packages.iter().map(|(key, interfaces)| format!("{key} ({})", interfaces.join(", "))).collect::<Vec<_>>().join("; ")
}
