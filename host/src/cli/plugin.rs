//! `clat plugin install | list | remove | grant | revoke | gc`: plugin
//! packages in `$CLAT_HOME` (`new | build | call | test` are dispatched to
//! `author.rs`). A package's declared capabilities are granted before anything
//! is copied: on a terminal the user is asked, headless `--grant` is needed,
//! and an upgrade that asks for nothing new keeps its grant. A WASM package is
//! validated (compiled, linked, listed) on the staged copy, the bytes that will
//! be installed. Every install (whether it succeeded or not), every remove and
//! `gc` sweep the compiled cache of entries no installed plugin uses.

use serde_json::json;

use std::path::PathBuf;

use super::exit::{Exit, Failure};
use super::install::{component_imports, decide_grants, imports_summary, validate_staged};
use super::shutdown::Shutdown;
use super::{LoadWhen, PluginCommand, author, project_dir};
use crate::extension::ExtensionKind;
use crate::home::ClatHome;
use crate::supply::capabilities::Capabilities;
use crate::supply::packages::{Installed, PackageError, PackageKind, PackageStore, check_entry, read_manifest};
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

/// List an installed WASM plugin under its grants and keep the listing (`wasm::kept`). A failure costs only that
/// its next load lists it (and says why if it fails there too), so it is a warning, never the command's failure.
fn keep_listing(runtime: &std::sync::Arc<WasmRuntime>, home: &ClatHome, package: &Installed) {
    let listed = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(crate::wasm::keep_listing(runtime, home, package))
    });
    if let Err(e) = listed {
        tracing::warn!("plugin {}: cannot list its tools under its grants: {e}", package.manifest.name);
    }
}

/// After a grant changed: the listing kept under the old one is listed again (a WASM plugin's).
fn relist(home: &ClatHome, package: &Installed) {
    if package.manifest.kind != PackageKind::Wasm {
        return;
    }
    match wasm_runtime(home) {
        Ok(runtime) => keep_listing(&runtime, home, package),
        Err(e) => tracing::warn!("plugin {}: {}", package.manifest.name, e.message),
    }
}

/// What `plugin grant` / `plugin revoke` changed: `{"plugin", VERB: grants}`,
/// or one `VERB NAME …` line per entry (`nothing` when there was none).
fn report_grants(name: &str, verb: &str, grants: &Capabilities, nothing: &str, json: bool) -> Result<Exit, Failure> {
    if json {
        outln!("{}", json!({ "plugin": name, verb: grants }));
    } else if grants.is_empty() {
        outln!("plugin {name} {nothing}");
    } else {
        for line in grants.describe() {
            outln!("{verb} {name} {line}");
        }
    }
    Ok(Exit::Ok)
}

/// The grant lines of one installed package, for `plugin list`.
fn grant_lines(package: &Installed) -> Vec<String> {
    let declared = &package.manifest.capabilities;
    if declared.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!("  grants: {}", package.grants.summary())];
    let missing = package.grants.missing_from(declared);
    if !missing.is_empty() {
        lines.push(format!(
            "  declared, not granted: {} (`clat plugin grant {}`)",
            missing.summary(),
            package.manifest.name
        ));
    }
    lines
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
        PluginCommand::Call { package, tool, call, no_build, grant } => {
            let (request, sandbox) = call.request(tool)?;
            let project = project_dir(project)?;
            let call = author::PluginCall { package, no_build, project, request, sandbox, grant };
            author::call(home, call, shutdown).await
        }
        PluginCommand::Test { package, json, no_build, grant, watch } => {
            let dir = package.map_or_else(here, Ok)?;
            let project = project_dir(project)?;
            let plugin = author::PluginTest { dir: &dir, project: &project, no_build, grant, json };
            if watch {
                author::test_watch(home, &plugin, shutdown).await
            } else {
                author::test(home, &plugin, shutdown).await
            }
        }
        PluginCommand::Install { dir, build: true, grant, json, replace } => {
            let package = author::build_project(&dir)?;
            let install = PluginCommand::Install { dir: package, build: false, grant, json, replace };
            Box::pin(plugin(home, None, install, shutdown)).await
        }
        // The package store's.
        PluginCommand::Install { dir, grant, json, replace, .. } => {
            match dir.to_str().filter(|d| d.starts_with(crate::supply::oci::OCI_SCHEME)) {
                Some(reference) => {
                    let reference = crate::supply::oci::OciReference::parse(reference).map_err(oci_failure)?;
                    let options = InstallOptions { grant, json, replaced: None, plugin: None, replace };
                    install_from_registry(home, &store, &reference, &reference, &options, shutdown).await
                }
                None => {
                    let retry = format!("clat plugin install {}", dir.display());
                    install_package(
                        home,
                        &store,
                        &dir,
                        None,
                        &retry,
                        &InstallOptions { grant, json, replaced: None, plugin: None, replace },
                    )
                }
            }
        }
        PluginCommand::Push { dir, reference, json } => {
            let reference = crate::supply::oci::OciReference::parse(&reference).map_err(oci_failure)?;
            let pushed = tokio::select! {
                pushed = crate::supply::oci::push(&dir, &reference) => pushed.map_err(oci_failure)?,
                _ = shutdown.token().cancelled() => return Err(super::runs::interrupted(shutdown)),
            };
            let digest = pushed.pinned.reference.digest().unwrap_or_default().to_string();
            if json {
                outln!(
                    "{}",
                    json!({ "pushed": pushed.name, "version": pushed.version, "reference": reference.text,
                            "digest": digest, "pinned": pushed.pinned.text })
                );
            } else {
                outln!("pushed {} {} to {} ({digest})", pushed.name, pushed.version, reference.text);
                outln!("  install it pinned: clat plugin install {}", pushed.pinned.text);
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Update { name, grant, json } => update(home, &store, &name, grant, json, shutdown).await,
        PluginCommand::List { json } => {
            let list = store.list()?;
            if json {
                outln!("{}", json!({ "plugins": list }));
            } else if list.is_empty() {
                outln!("no plugins installed");
            } else {
                for p in list {
                    let kind = p.manifest.kind.as_str();
                    outln!("{:20} {:10} {:9} {}", p.manifest.name, p.manifest.version, kind, p.manifest.description);
                    if let Some(source) = &p.source {
                        outln!("  from {} ({})", source.oci, source.digest);
                    }
                    for line in grant_lines(&p) {
                        outln!("{line}");
                    }
                    if let Some(loading) = p.loading.describe() {
                        outln!("  {loading}");
                    }
                }
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Load { name, when, json } => {
            use clat_mcp::config::{AlwaysLoad, Loading};
            let loading = match when {
                LoadWhen::Always => Loading { always_load: AlwaysLoad::All(true), defer_loading: false },
                LoadWhen::Deferred => Loading { always_load: AlwaysLoad::None, defer_loading: true },
                LoadWhen::Budget => Loading::default(),
            };
            let updated = store.set_loading(&name, loading)?;
            if json {
                outln!("{}", json!({ "plugin": name, "loading": updated.loading }));
            } else {
                let when = match when {
                    LoadWhen::Always => "offered from the first turn (always_load)",
                    LoadWhen::Deferred => "found through search_tools, never offered up front (defer_loading)",
                    LoadWhen::Budget => "offered while every tool's definition fits the budget, found past it",
                };
                outln!("plugin {name}: its tools are {when}");
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Remove { name, json } => {
            let removed = store.remove(&name)?;
            if removed.manifest.kind == PackageKind::Wasm {
                sweep_after(&store, &*wasm_runtime(home)?);
            }
            if json {
                outln!("{}", json!({ "removed": removed.manifest.name, "version": removed.manifest.version }));
            } else {
                outln!("removed {} {}", removed.manifest.name, removed.manifest.version);
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Grant { name, json } => {
            let updated = store.set_grants(&name, |p| Ok(p.manifest.capabilities.clone()))?;
            relist(home, &updated);
            report_grants(&name, "granted", &updated.grants, "declares no capabilities; nothing to grant", json)
        }
        PluginCommand::Revoke { name, json } => {
            let mut before = Capabilities::default();
            let updated = store.set_grants(&name, |p| {
                before = p.grants.clone();
                Ok(Capabilities::default())
            })?;
            relist(home, &updated);
            report_grants(&name, "revoked", &before, "held no grants", json)
        }
        PluginCommand::Gc { json } => {
            let swept =
                sweep(&store, &*wasm_runtime(home)?).map_err(|e| Failure::new(Exit::Internal, "internal", e))?;
            if json {
                outln!("{}", json!({ "removed_entries": swept.removed, "freed_bytes": swept.bytes }));
            } else {
                outln!(
                    "removed {} unused compiled cache entries ({})",
                    swept.removed,
                    super::progress::size(swept.bytes)
                );
            }
            Ok(Exit::Ok)
        }
    }
}

/// How an install goes: its grant given without asking, its report as JSON,
/// and the digest it replaces (an update's).
#[derive(Clone, Copy)]
struct InstallOptions<'a> {
    grant: bool,
    json: bool,
    /// An update's: the digest it replaces, and the plugin it must be.
    replaced: Option<&'a str>,
    plugin: Option<&'a str>,
    /// Replace a same-named plugin installed from elsewhere (`--replace`).
    replace: bool,
}

/// Install the package in `dir` (from a registry: `source`): grants decided
/// first, validation on the staged copy, the listing kept.
fn install_package(
    home: &ClatHome,
    store: &PackageStore,
    dir: &std::path::Path,
    source: Option<crate::supply::packages::PackageSource>,
    retry: &str,
    options: &InstallOptions,
) -> Result<Exit, Failure> {
    let InstallOptions { grant, json, replaced, .. } = *options;
    let manifest = read_manifest(dir)?;
    check_entry(dir, &manifest)?;
    let runtime = wasm_runtime(home)?;
    let mut tools = Vec::new();
    let imports = component_imports(dir);
    // Grants are decided first; validation runs on the staged copy, the bytes that will be installed.
    let installed = store.install_granted(
        dir,
        crate::supply::packages::Origin { source, replace: options.replace, retry },
        |manifest, previous| decide_grants(manifest, previous, &imports, grant, retry),
        |manifest, staged| {
            tools = validate_staged(&runtime, manifest, staged)?;
            Ok(())
        },
    );
    // A failed install's compiled entry and a replaced version's go now.
    sweep_after(store, &runtime);
    let installed = installed?;
    let kind = installed.manifest.kind.as_str();
    let names: Vec<String> = tools
        .iter()
        .map(|t| crate::names::external_tool_name(crate::names::ExternalKind::Wasm, &installed.manifest.name, &t.name))
        .collect();
    if installed.manifest.kind == PackageKind::Wasm {
        // Listed under its grants and kept: a load maps nothing until a call needs the component.
        keep_listing(&runtime, home, &installed);
        // Its listing is known now: completions offer its tools before it ever starts.
        let (plugin, identity) = (&installed.manifest.name, installed.identity());
        if let Err(e) = crate::home::listings::remember(home, ExtensionKind::Wasm, plugin, &identity, &names) {
            tracing::debug!("cannot keep the listing of {plugin}: {e}");
        }
    }
    if json {
        let document = json!({ "installed": installed.manifest.name, "version": installed.manifest.version,
                               "kind": kind, "dir": installed.dir.display().to_string(), "tools": names,
                               "grants": installed.grants, "imports": imports, "source": installed.source,
                               "origin": installed.origin, "replaced": replaced });
        outln!("{document}");
        return Ok(Exit::Ok);
    }
    outln!(
        "installed {} {} ({kind}) into {}",
        installed.manifest.name,
        installed.manifest.version,
        installed.dir.display()
    );
    if let Some(source) = &installed.source {
        outln!("  from {} ({})", source.oci, source.digest);
    }
    for line in installed.grants.describe() {
        outln!("  granted {line}");
    }
    if !imports.is_empty() {
        outln!("  imports {}", imports_summary(&imports));
    }
    for name in names {
        outln!("  tool {name}");
    }
    Ok(Exit::Ok)
}

fn oci_failure(e: crate::supply::oci::OciError) -> Failure {
    let kind = if matches!(e, crate::supply::oci::OciError::Reference(_)) { "usage" } else { "registry" };
    Failure::new(Exit::Usage, kind, crate::redact::redact(&e.to_string()))
}

/// `clat plugin install oci://…`: pull the plugin into a temporary package
/// (the tag resolved once, every layer checked) and install it as any
/// package, recording `record` — the reference as the user gave it — and the
/// digest it resolved to. Nothing is installed when the pull fails.
async fn install_from_registry(
    home: &ClatHome,
    store: &PackageStore,
    reference: &crate::supply::oci::OciReference,
    record: &crate::supply::oci::OciReference,
    options: &InstallOptions<'_>,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let staging = std::env::temp_dir().join(format!("clat-pull-{}", uuid::Uuid::new_v4().simple()));
    let pulled = tokio::select! {
        pulled = crate::supply::oci::pull(reference, &staging) => pulled,
        _ = shutdown.token().cancelled() => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(super::runs::interrupted(shutdown));
        }
    };
    let outcome = pulled.map_err(oci_failure).and_then(|pulled| {
        if let Some(plugin) = options.plugin
            && pulled.manifest.name != plugin
        {
            let message = format!(
                "{} now names plugin {:?}, not {plugin:?}: nothing was installed (`clat plugin install {}` installs it \
                 beside {plugin})",
                record.text, pulled.manifest.name, record.text
            );
            return Err(Failure::new(Exit::Usage, "registry", message));
        }
        let digest = pulled.pinned.reference.digest().unwrap_or_default().to_string();
        let source = crate::supply::packages::PackageSource { oci: record.text.clone(), digest };
        let retry = format!("clat plugin install {}", record.text);
        install_package(home, store, &pulled.dir, Some(source), &retry, options)
    });
    let _ = std::fs::remove_dir_all(&staging);
    outcome
}

/// `clat plugin update NAME`: resolve the tag it was installed from again;
/// unchanged, say so; moved, say from which digest to which and install what
/// the tag names now (its grant decided as at install).
async fn update(
    home: &ClatHome,
    store: &PackageStore,
    name: &str,
    grant: bool,
    json: bool,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let installed = store.get(name)?.ok_or_else(|| PackageError::NotInstalled(name.to_string()))?;
    let Some(source) = installed.source.clone() else {
        let message = format!(
            "plugin {name} was installed from a directory, not a registry: install its new package with `clat plugin install DIR`"
        );
        return Err(Failure::new(Exit::Usage, "usage", message));
    };
    let reference = crate::supply::oci::OciReference::parse(&source.oci).map_err(oci_failure)?;
    let now = tokio::select! {
        now = crate::supply::oci::resolve(&reference) => now.map_err(oci_failure)?,
        _ = shutdown.token().cancelled() => return Err(super::runs::interrupted(shutdown)),
    };
    if now == source.digest {
        if json {
            outln!("{}", json!({ "plugin": name, "reference": source.oci, "digest": now, "updated": false }));
        } else {
            outln!("plugin {name} is up to date: {} is still {now}", source.oci);
        }
        return Ok(Exit::Ok);
    }
    if !json {
        outln!("{} moved: {} → {now}", source.oci, source.digest);
    }
    let pinned = reference.at_digest(&now);
    let options = InstallOptions { grant, json, replaced: Some(&source.digest), plugin: Some(name), replace: false };
    install_from_registry(home, store, &pinned, &reference, &options, shutdown).await
}
