//! `clat plugin install | update | push | list | load | remove | grant |
//! revoke | gc`: plugin packages in `$CLAT_HOME`, administered by the door
//! (`Platform::plugins`) and printed here (`new | build | call | test` are
//! dispatched to `author.rs`). A package's declared capabilities are granted
//! before anything is copied: on a terminal the user is asked
//! (`install.rs`), headless `--grant` is needed, and an upgrade that asks for
//! nothing new keeps its grant.

use serde_json::json;

use std::path::PathBuf;

use super::exit::{Exit, Failure};
use super::install::{imports_summary, terminal_grants};
use super::shutdown::Shutdown;
use super::{LoadWhen, PluginCommand, author, project_dir};
use crate::platform::{InstallRequest, InstalledPlugin, Platform, Plugins};
use crate::{AlwaysLoad, Capabilities, Installed, Loading, LoadingSettings};

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
    platform: &Platform,
    project: Option<PathBuf>,
    command: PluginCommand,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let plugins = platform.plugins(super::progress::compile_observer());
    let authoring = platform.authoring(super::progress::compile_observer());
    let here = || project_dir(None);
    match command {
        // The author's commands (cli/author.rs).
        PluginCommand::New { name, lang, kind, dir, json } => {
            author::new(platform, &name, &dir.map_or_else(here, Ok)?, lang, kind, json)
        }
        PluginCommand::Build { dir, json } => author::build_command(&authoring, &dir.map_or_else(here, Ok)?, json),
        PluginCommand::Sdk { command: super::commands::SdkCommand::Update { dir, force, json } } => {
            author::update_sdk(&authoring, &dir.map_or_else(here, Ok)?, force, json)
        }
        PluginCommand::Call { package, tool, call, no_build, grant } => {
            let (request, sandbox) = call.request(tool)?;
            let project = project_dir(project)?;
            let call = author::PluginCall { package, no_build, project, request, sandbox, grant };
            author::call(&authoring, call, shutdown).await
        }
        PluginCommand::Test { package, json, no_build, grant, watch } => {
            let dir = package.map_or_else(here, Ok)?;
            let project = project_dir(project)?;
            let plugin = author::PluginTest { dir: &dir, project: &project, no_build, grant, json };
            if watch {
                author::test_watch(&authoring, &plugin, shutdown).await
            } else {
                author::test(&authoring, &plugin, shutdown).await
            }
        }
        PluginCommand::Install { dir, build: true, grant, json, replace } => {
            let package = author::build_project(&authoring, &dir)?;
            let install = PluginCommand::Install { dir: package, build: false, grant, json, replace };
            Box::pin(plugin(platform, None, install, shutdown)).await
        }
        // The package store's.
        PluginCommand::Install { dir, grant, json, replace, .. } => {
            let text = dir.display().to_string();
            let retry = format!("clat plugin install {text}");
            let question = terminal_grants();
            let request = InstallRequest { grant, replace, retry: &retry, question: question.as_deref() };
            let installed = if text.starts_with(crate::OCI_SCHEME) {
                tokio::select! {
                    installed = plugins.install_from_registry(&text, &request) => installed?,
                    _ = shutdown.token().cancelled() => return Err(super::runs::interrupted(shutdown)),
                }
            } else {
                plugins.install(&dir, &request)?
            };
            print_installed(&installed, None, json);
            Ok(Exit::Ok)
        }
        PluginCommand::Push { dir, reference, json } => {
            if authoring.is_project(&dir) {
                eprintln!("clat: building {} ...", dir.display());
            }
            let mut pushed = tokio::select! {
                pushed = plugins.push(&dir, &reference) => pushed?,
                _ = shutdown.token().cancelled() => return Err(super::runs::interrupted(shutdown)),
            };
            if let Some(built) = pushed.built.take() {
                author::report_build(built);
            }
            let digest = &pushed.digest;
            if json {
                outln!(
                    "{}",
                    json!({ "pushed": pushed.name, "version": pushed.version, "reference": pushed.reference,
                            "digest": digest, "pinned": pushed.pinned, "tools": pushed.tools, "asks": pushed.asks })
                );
            } else {
                outln!("pushed {} {} to {} ({digest})", pushed.name, pushed.version, pushed.reference);
                outln!("  tools: {}", pushed.tools.join(", "));
                let asks = pushed.asks.describe();
                outln!("  asks for: {}", if asks.is_empty() { "nothing".to_string() } else { asks.join("; ") });
                outln!("  install it pinned: clat plugin install {}", pushed.pinned);
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Update { name, grant, json } => update(&plugins, &name, grant, json, shutdown).await,
        PluginCommand::List { json } => {
            let list = plugins.list()?;
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
            let loading = match when {
                LoadWhen::Always => Loading { always_load: AlwaysLoad::All(true), defer_loading: false },
                LoadWhen::Deferred => Loading { always_load: AlwaysLoad::None, defer_loading: true },
                LoadWhen::Budget => Loading::default(),
            };
            let updated = plugins.set_loading(&name, loading)?;
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
            let removed = plugins.remove(&name)?;
            if json {
                outln!("{}", json!({ "removed": removed.manifest.name, "version": removed.manifest.version }));
            } else {
                outln!("removed {} {}", removed.manifest.name, removed.manifest.version);
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Grant { name, json } => {
            let updated = plugins.grant(&name)?;
            report_grants(&name, "granted", &updated.grants, "declares no capabilities; nothing to grant", json)
        }
        PluginCommand::Revoke { name, json } => {
            let before = plugins.revoke(&name)?;
            report_grants(&name, "revoked", &before, "held no grants", json)
        }
        PluginCommand::Gc { json } => {
            let swept = plugins.gc()?;
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

/// What an install installed (`replaced`: the digest an update replaced).
fn print_installed(plugin: &InstalledPlugin, replaced: Option<&str>, json: bool) {
    let InstalledPlugin { installed, tools, imports, not_offered } = plugin;
    let kind = installed.manifest.kind.as_str();
    if json {
        let document = json!({ "installed": installed.manifest.name, "version": installed.manifest.version,
                               "kind": kind, "dir": installed.dir.display().to_string(), "tools": tools,
                               "grants": installed.grants, "imports": imports, "not_offered": not_offered, "source": installed.source,
                               "origin": installed.origin, "replaced": replaced });
        outln!("{document}");
        return;
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
        outln!("  imports {}", imports_summary(imports));
    }
    for name in tools {
        outln!("  tool {name}");
    }
    for why in not_offered {
        outln!("  not offered: {why}");
    }
}

/// `clat plugin update NAME`: resolve the tag it was installed from again;
/// unchanged, say so; moved, say from which digest to which and install what
/// the tag names now (its grant decided as at install).
async fn update(
    plugins: &Plugins<'_>,
    name: &str,
    grant: bool,
    json: bool,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let check = tokio::select! {
        check = plugins.check_update(name) => check?,
        _ = shutdown.token().cancelled() => return Err(super::runs::interrupted(shutdown)),
    };
    let (reference, now) = (&check.reference, &check.now);
    if !check.moved() {
        if json {
            outln!("{}", json!({ "plugin": name, "reference": reference, "digest": now, "updated": false }));
        } else {
            outln!("plugin {name} is up to date: {reference} is still {now}");
        }
        return Ok(Exit::Ok);
    }
    if !json {
        outln!("{reference} moved: {} → {now}", check.installed);
    }
    let retry = format!("clat plugin install {reference}");
    let question = terminal_grants();
    let request = InstallRequest { grant, replace: false, retry: &retry, question: question.as_deref() };
    let installed = tokio::select! {
        installed = plugins.update(name, &check, &request) => installed?,
        _ = shutdown.token().cancelled() => return Err(super::runs::interrupted(shutdown)),
    };
    print_installed(&installed, Some(&check.installed), json);
    Ok(Exit::Ok)
}
