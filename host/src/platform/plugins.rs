//! The door's administration face for plugin packages, [`Platform::plugins`]:
//! install (from a directory or an OCI registry), update, push, list, remove,
//! grant, revoke, how their tools load, and the compiled cache's sweep. An
//! install decides the grant before anything is copied (given, asked through
//! a [`GrantQuestion`], or kept from the installed version when it covers the
//! new one), validates the staged copy (compiled, linked, listed), keeps the
//! listing, and sweeps the compiled cache of entries no installed plugin uses
//! — whether it succeeded or not. Each returns what it did, typed, for `clat
//! plugin` (or an embedder) to show.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Platform;
use crate::contract::ToolSpec;
use crate::home::ClatHome;
use crate::names::{ExternalKind, external_tool_name};
use crate::supply::capabilities::Capabilities;
use crate::supply::oci::{OciError, OciReference};
use crate::supply::packages::{
    Installed, Manifest, Origin, PackageError, PackageKind, PackageSource, PackageStore, check_entry, read_manifest,
};
use crate::wasm::WasmRuntime;
use crate::wasm::cache::{CacheSweep, CompileObserver};

/// Why a plugin administration did nothing.
#[derive(Debug, thiserror::Error)]
pub enum PluginAdminError {
    /// The package, its manifest, the index or the grant refused it.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// A home document could not be read or written, or the project is missing.
    #[error(transparent)]
    Home(#[from] crate::home::HomeError),
    /// The registry reference, the push or the pull failed.
    #[error(transparent)]
    Oci(#[from] OciError),
    /// What the registry holds now is not the plugin being updated.
    #[error("{0}")]
    NotThisPlugin(String),
    /// What was asked cannot be done to this plugin (an update of one installed from a directory).
    #[error("{0}")]
    Usage(String),
    /// A plugin project could not be written or built.
    #[error(transparent)]
    Authoring(#[from] crate::authoring::AuthoringError),
    /// A package's entry could not be read.
    #[error("{0}")]
    Unreadable(String),
    /// The WASM runtime or the compiled cache failed.
    #[error("{0}")]
    Internal(String),
}

/// Asks whether a package may get the capabilities it declares (at a
/// terminal, `clat plugin install` asks the user).
pub trait GrantQuestion: Send + Sync {
    /// May `manifest`'s package be granted what it declares? `new`: what is
    /// new since the installed version's grant; `imports`: the interfaces its
    /// component really imports.
    fn grant(&self, manifest: &Manifest, new: Option<&Capabilities>, imports: &[String]) -> bool;
}

/// How an install goes.
#[derive(Clone, Copy)]
pub struct InstallRequest<'a> {
    /// Grant what the package declares without asking (`--grant`).
    pub grant: bool,
    /// Replace a same-named plugin installed from elsewhere (`--replace`).
    pub replace: bool,
    /// The command that installs it, named in a refusal's advice (with `--grant`, or `--replace`).
    pub retry: &'a str,
    /// Who is asked for a grant (`None`: nobody; an ungranted declaration refuses the install).
    pub question: Option<&'a dyn GrantQuestion>,
}

/// What an install installed.
#[derive(Debug, Clone)]
pub struct InstalledPlugin {
    /// The package as the index now holds it.
    pub installed: Installed,
    /// Its tools' registered names (a WASM plugin's, listed under its grants).
    pub tools: Vec<String>,
    /// The interfaces its component imports.
    pub imports: Vec<String>,
    /// A plain component's exported functions not offered as tools, each with why.
    pub not_offered: Vec<String>,
}

/// What `Plugins::check_update` found.
#[derive(Debug, Clone)]
pub struct UpdateCheck {
    /// The reference it was installed from.
    pub reference: String,
    /// The digest installed.
    pub installed: String,
    /// The digest the reference names now.
    pub now: String,
}

impl UpdateCheck {
    /// Whether the reference names another digest now.
    pub fn moved(&self) -> bool {
        self.now != self.installed
    }
}

/// What `Plugins::push` published.
#[derive(Debug, Clone)]
pub struct PushedPlugin {
    /// The plugin's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The reference pushed to, as given.
    pub reference: String,
    /// The pushed manifest's digest.
    pub digest: String,
    /// The reference pinned to that digest (what installs exactly this).
    pub pinned: String,
    /// The tools the pushed component lists, by their own names (it was listed before it was pushed).
    pub tools: Vec<String>,
    /// What its manifest asks to be granted.
    pub asks: Capabilities,
    /// The build made of the project first, when a project was pushed.
    pub built: Option<crate::authoring::build::Built>,
}

/// The administration of installed plugins ([`Platform::plugins`]).
pub struct Plugins<'p> {
    home: &'p ClatHome,
    observer: Option<Arc<dyn CompileObserver>>,
}

impl Platform {
    /// The administration of the home's plugin packages; `observer` is told
    /// about compilations that take a while.
    pub fn plugins(&self, observer: Option<Arc<dyn CompileObserver>>) -> Plugins<'_> {
        Plugins { home: &self.home, observer }
    }
}

impl Plugins<'_> {
    fn store(&self) -> PackageStore {
        PackageStore::new(self.home)
    }

    fn runtime(&self) -> Result<Arc<WasmRuntime>, PluginAdminError> {
        WasmRuntime::with_observer(&self.home.path().join(crate::scope::WASM_CACHE_DIR), self.observer.clone())
            .map_err(|e| PluginAdminError::Internal(format!("the WASM runtime could not start: {e:#}")))
    }

    /// The installed packages.
    pub fn list(&self) -> Result<Vec<Installed>, PluginAdminError> {
        Ok(self.store().list()?)
    }

    /// Install the package in `dir` — or a component with no manifest: a `.wasm` file, or a directory holding
    /// one and no `clat-plugin.toml` (`bare_component_package`).
    pub fn install(&self, dir: &Path, request: &InstallRequest) -> Result<InstalledPlugin, PluginAdminError> {
        match bare_component(dir)? {
            Some(component) => {
                let package = bare_component_package(&component, &component.display().to_string())?;
                self.install_from(package.path(), None, Some(&component), request)
            }
            None => self.install_from(dir, None, None, request),
        }
    }

    /// Install the package in `dir` (pulled from a registry: `source`; made for a bare `component`).
    fn install_from(
        &self,
        dir: &Path,
        source: Option<PackageSource>,
        component: Option<&Path>,
        request: &InstallRequest,
    ) -> Result<InstalledPlugin, PluginAdminError> {
        let manifest = read_manifest(dir)?;
        check_entry(dir, &manifest)?;
        let runtime = self.runtime()?;
        let store = self.store();
        let (mut tools, mut not_offered) = (Vec::new(), Vec::new());
        let imports = component_imports(dir);
        let origin = Origin { source, replace: request.replace, retry: request.retry, component };
        let installed = store.install_granted(
            dir,
            origin,
            |manifest, previous| decide_grants(manifest, previous, &imports, request),
            |manifest, staged| {
                (tools, not_offered) = validate_staged(&runtime, manifest, staged)?;
                Ok(())
            },
        );
        // A failed install's compiled entry and a replaced version's go now.
        sweep_after(&store, &runtime);
        let installed = installed?;
        let name = &installed.manifest.name;
        let tools: Vec<String> = tools.iter().map(|t| external_tool_name(ExternalKind::Wasm, name, &t.name)).collect();
        if installed.manifest.kind.is_wasm() {
            // Listed under its grants and kept, its tools' registered names with it: a load maps nothing until a
            // call needs the component, and completions offer its tools before it ever starts.
            keep_listing(&runtime, self.home, &installed);
        }
        Ok(InstalledPlugin { installed, tools, imports, not_offered })
    }

    /// Install the plugin `reference` (`oci://REGISTRY/REPOSITORY:TAG` or
    /// `@sha256:…`) names: pulled into a temporary package (the tag resolved
    /// once, every layer checked) and installed as any package, recording the
    /// reference as given and the digest it resolved to. Nothing is installed
    /// when the pull fails.
    pub async fn install_from_registry(
        &self,
        reference: &str,
        request: &InstallRequest<'_>,
    ) -> Result<InstalledPlugin, PluginAdminError> {
        let reference = OciReference::parse(reference)?;
        self.pull_and_install(&reference, &reference, None, request).await
    }

    /// Pull what `reference` names and install it, recording `record`; when
    /// `plugin` is given, the package must be that plugin.
    async fn pull_and_install(
        &self,
        reference: &OciReference,
        record: &OciReference,
        plugin: Option<&str>,
        request: &InstallRequest<'_>,
    ) -> Result<InstalledPlugin, PluginAdminError> {
        let staging = Staging(std::env::temp_dir().join(format!("clat-pull-{}", uuid::Uuid::new_v4().simple())));
        let pulled = crate::supply::oci::pull(reference, &staging.0).await?;
        // Published with no manifest (as `wkg` publishes a component): described by its bytes, as a bare file is.
        let bare = match &pulled.manifest {
            Some(_) => None,
            None => Some(bare_component_package(&pulled.component, &record.text)?),
        };
        let dir = bare.as_ref().map_or(pulled.dir.as_path(), |package| package.path());
        let name = match pulled.manifest {
            Some(manifest) => manifest.name,
            None => read_manifest(dir)?.name,
        };
        if let Some(plugin) = plugin
            && name != plugin
        {
            return Err(PluginAdminError::NotThisPlugin(format!(
                "{} now names plugin {name:?}, not {plugin:?}: nothing was installed (`clat plugin install {}` \
                 installs it beside {plugin})",
                record.text, record.text
            )));
        }
        let digest = pulled.pinned.reference.digest().unwrap_or_default().to_string();
        let source = PackageSource { oci: record.text.clone(), digest };
        self.install_from(dir, Some(source), None, request)
    }

    /// Resolve the tag the plugin `name` was installed from again.
    pub async fn check_update(&self, name: &str) -> Result<UpdateCheck, PluginAdminError> {
        let installed = self.store().get(name)?.ok_or_else(|| PackageError::NotInstalled(name.to_string()))?;
        let Some(source) = installed.source else {
            return Err(PluginAdminError::Usage(format!(
                "plugin {name} was installed from a directory, not a registry: install its new package with `clat \
                 plugin install DIR`"
            )));
        };
        let reference = OciReference::parse(&source.oci)?;
        let now = crate::supply::oci::resolve(&reference).await?;
        Ok(UpdateCheck { reference: source.oci, installed: source.digest, now })
    }

    /// Install what the tag of `check` (plugin `name`'s) names now, its grant decided as at install.
    pub async fn update(
        &self,
        name: &str,
        check: &UpdateCheck,
        request: &InstallRequest<'_>,
    ) -> Result<InstalledPlugin, PluginAdminError> {
        let reference = OciReference::parse(&check.reference)?;
        let pinned = reference.at_digest(&check.now);
        self.pull_and_install(&pinned, &reference, Some(name), request).await
    }

    /// Publish the WASM package in `dir` to the OCI `reference`.
    pub async fn push(&self, dir: &Path, reference: &str) -> Result<PushedPlugin, PluginAdminError> {
        let reference = OciReference::parse(reference)?;
        // What the author tested is what is pushed: a project is built first (an up-to-date build reused), and
        // a project's package older than its sources is refused.
        let built = match crate::authoring::build::detect(dir) {
            Some(_) => Some(tokio::task::block_in_place(|| crate::authoring::build::build(dir))?),
            None => {
                check_package_is_current(dir)?;
                None
            }
        };
        let package = built.as_ref().map_or(dir, |b| b.package.as_path());
        let manifest = read_manifest(package)?;
        let runtime = self.runtime()?;
        let listed = validate_staged(&runtime, &manifest, package).map_err(|why| {
            PluginAdminError::Usage(format!("nothing was pushed: the package does not list its tools: {why}"))
        })?;
        let pushed = crate::supply::oci::push(package, &reference).await?;
        Ok(PushedPlugin {
            digest: pushed.pinned.reference.digest().unwrap_or_default().to_string(),
            name: pushed.name,
            version: pushed.version,
            reference: reference.text,
            pinned: pushed.pinned.text,
            tools: listed.0.into_iter().map(|t| t.name).collect(),
            asks: manifest.capabilities,
            built,
        })
    }

    /// How the plugin `name`'s tools are offered under progressive discovery.
    pub fn set_loading(&self, name: &str, loading: crate::Loading) -> Result<Installed, PluginAdminError> {
        Ok(self.store().set_loading(name, loading)?)
    }

    /// Remove the plugin `name` (its compiled entries swept); what was installed.
    pub fn remove(&self, name: &str) -> Result<Installed, PluginAdminError> {
        let store = self.store();
        let removed = store.remove(name)?;
        if removed.manifest.kind.is_wasm() {
            sweep_after(&store, &*self.runtime()?);
        }
        Ok(removed)
    }

    /// Grant the plugin `name` what it declares; the package as it is now.
    pub fn grant(&self, name: &str) -> Result<Installed, PluginAdminError> {
        let updated = self.store().set_grants(name, |p| Ok(p.manifest.capabilities.clone()))?;
        self.relist(&updated);
        Ok(updated)
    }

    /// Revoke every grant of the plugin `name`; what it held.
    pub fn revoke(&self, name: &str) -> Result<Capabilities, PluginAdminError> {
        let mut before = Capabilities::default();
        let updated = self.store().set_grants(name, |p| {
            before = p.grants.clone();
            Ok(Capabilities::default())
        })?;
        self.relist(&updated);
        Ok(before)
    }

    /// Sweep the compiled cache of entries no installed plugin uses.
    pub fn gc(&self) -> Result<CacheSweep, PluginAdminError> {
        sweep(&self.store(), &*self.runtime()?).map_err(PluginAdminError::Internal)
    }

    /// After a grant changed: the listing kept under the old one is listed again (a WASM plugin's).
    fn relist(&self, package: &Installed) {
        if !package.manifest.kind.is_wasm() {
            return;
        }
        match self.runtime() {
            Ok(runtime) => keep_listing(&runtime, self.home, package),
            Err(e) => tracing::warn!("plugin {}: {e}", package.manifest.name),
        }
    }
}

/// A pull's temporary directory, removed however the install ends (a cancelled one too).
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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
fn keep_listing(runtime: &Arc<WasmRuntime>, home: &ClatHome, package: &Installed) {
    let listed = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(crate::wasm::keep_listing(runtime, home, package))
    });
    if let Err(e) = listed {
        tracing::warn!("plugin {}: cannot list its tools under its grants: {e}", package.manifest.name);
    }
}

/// Validate a staged WASM package for installation (an MCP package has nothing
/// to load): compile, link against what it declares, list its tools. Called
/// from inside the package store's install, on the runtime's thread.
pub(super) fn validate_staged(
    runtime: &Arc<WasmRuntime>,
    manifest: &Manifest,
    staged: &Path,
) -> Result<(Vec<ToolSpec>, Vec<String>), String> {
    if !manifest.kind.is_wasm() {
        return Ok((Vec::new(), Vec::new()));
    }
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(crate::wasm::validate_component(runtime, staged, manifest))
    })
    .map(|validated| (validated.tools, validated.refused))
    .map_err(|e| format!("{}: {e}", manifest.entry))
}

/// A package that is a project's `dist/` (its parent builds it) must be newer than every source of that project: a
/// build of older sources is not what the author tested, and is refused with the command that builds first.
fn check_package_is_current(package: &Path) -> Result<(), PluginAdminError> {
    let Some(project) = package.parent().filter(|p| {
        package.file_name() == Some(std::ffi::OsStr::new(crate::authoring::build::DIST_DIR))
            && crate::authoring::build::detect(p).is_some()
    }) else {
        return Ok(());
    };
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let manifest = read_manifest(package)?;
    let Some(built) = modified(&package.join(&manifest.entry)) else { return Ok(()) };
    let newer = crate::authoring::build::project_files(project)
        .unwrap_or_default()
        .into_iter()
        .find(|file| modified(&project.join(file)).is_some_and(|changed| changed > built));
    match newer {
        Some(file) => Err(PluginAdminError::Usage(format!(
            "{} is older than its project's sources ({} changed after it was built): it is not what was tested, and \
             nothing was pushed; `clat plugin push {} REFERENCE` builds the project first and pushes that",
            package.display(),
            file.display(),
            project.display()
        ))),
        None => Ok(()),
    }
}

/// What to grant a package being installed: nothing when it declares nothing;
/// its declaration when `--grant` was given, when the installed version's grant
/// already covers it, or when the question says yes; otherwise the install is
/// refused with what it asks for and how to grant it.
pub(super) fn decide_grants(
    manifest: &Manifest,
    previous: Option<&Installed>,
    imports: &[String],
    request: &InstallRequest,
) -> Result<Capabilities, PackageError> {
    let asked = &manifest.capabilities;
    if asked.is_empty() || request.grant || previous.is_some_and(|p| p.grants.covers(asked)) {
        return Ok(asked.clone());
    }
    let new = previous.map(|p| p.grants.missing_from(asked)).filter(|m| !m.is_empty() && m != asked);
    let refused = |how: &str| PackageError::NotGranted {
        name: manifest.name.clone(),
        asked: asked.describe(),
        how: how.to_string(),
        outcome: "nothing was installed",
    };
    let Some(question) = request.question else {
        let retry = request.retry;
        return Err(refused(&format!("To grant it, run `{retry} --grant` (or install at a terminal and answer y).")));
    };
    if question.grant(manifest, new.as_ref(), imports) { Ok(asked.clone()) } else { Err(refused("Not granted.")) }
}

/// The interfaces the WASM component of the package in `dir` imports, as
/// its bytes say (whatever its manifest claims); empty for an MCP package or
/// one whose entry cannot be read (installing it reports why).
pub(super) fn component_imports(dir: &Path) -> Vec<String> {
    let Ok(manifest) = read_manifest(dir) else { return Vec::new() };
    if !manifest.kind.is_wasm() {
        return Vec::new();
    }
    std::fs::read(dir.join(&manifest.entry))
        .ok()
        .and_then(|bytes| crate::wasm::imports::read_interfaces(&bytes).ok())
        .map(|interfaces| interfaces.imports)
        .unwrap_or_default()
}

/// The component `path` names when it is one with no manifest: a `.wasm` file, or a directory with no
/// `clat-plugin.toml` holding exactly one `.wasm` file. `None`: a package directory.
fn bare_component(path: &Path) -> Result<Option<PathBuf>, PluginAdminError> {
    if path.is_file() {
        return Ok(Some(path.to_path_buf()));
    }
    if !path.is_dir() || path.join(crate::supply::packages::MANIFEST).exists() {
        return Ok(None);
    }
    let wasm: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| PluginAdminError::Unreadable(format!("cannot read {}: {e}", path.display())))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|p| p.extension().is_some_and(|e| e == "wasm") && p.is_file())
        .collect();
    match wasm.as_slice() {
        [one] => Ok(Some(one.clone())),
        [] => Ok(None),
        many => Err(PluginAdminError::Usage(format!(
            "{} has no {} and {} components; name the one to install ({})",
            path.display(),
            crate::supply::packages::MANIFEST,
            many.len(),
            many.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// A package made for a component that came with no manifest (from `origin`: its path or registry reference): the
/// component, the WIT beside it (its `wit/`, for its functions' docs) and a manifest of what its bytes say — named
/// after its file, version 0.0.0, `kind = "wasm"` when it exports CLAT's contract and `"component"` otherwise, no
/// capabilities (a component that needs a grant comes with a manifest that asks for it).
fn bare_component_package(component: &Path, origin: &str) -> Result<tempfile::TempDir, PluginAdminError> {
    let unreadable = |e: std::io::Error| PluginAdminError::Unreadable(format!("{}: {e}", component.display()));
    let stem = component.file_stem().map(|s| s.to_string_lossy().to_lowercase()).unwrap_or_default();
    let name: String = stem.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' }).collect();
    let name = name.trim_matches('-').chars().take(crate::limits::PLUGIN_NAME_MAX_CHARS).collect::<String>();
    let entry = format!("{name}.wasm");
    let max = crate::limits::WASM_COMPONENT_MAX_BYTES;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(component).map_err(unreadable)?, max + 1),
        &mut bytes,
    )
    .map_err(unreadable)?;
    if bytes.len() as u64 > max {
        return Err(PluginAdminError::Unreadable(format!(
            "{} is more than {max} bytes, the most a component may be",
            component.display()
        )));
    }
    let interfaces = crate::wasm::imports::read_interfaces(&bytes)
        .map_err(|e| PluginAdminError::Unreadable(format!("{}: {e}", component.display())))?;
    let contract = format!("{}/plugin", crate::contract::CONTRACT_PACKAGE);
    let kind = if interfaces.exports.iter().any(|e| e.split('@').next() == Some(contract.as_str())) {
        PackageKind::Wasm
    } else {
        PackageKind::Component
    };
    let package = tempfile::tempdir().map_err(|e| PluginAdminError::Internal(format!("a temporary package: {e}")))?;
    let manifest = format!(
        "name = {name:?}\nversion = \"0.0.0\"\nkind = \"{}\"\nentry = {entry:?}\ndescription = {:?}\n",
        kind.as_str(),
        format!("{origin} (installed without a manifest)")
    );
    let write = |rel: &str, contents: &[u8]| {
        std::fs::write(package.path().join(rel), contents)
            .map_err(|e| PluginAdminError::Internal(format!("a temporary package: {e}")))
    };
    write(crate::supply::packages::MANIFEST, manifest.as_bytes())?;
    write(&entry, &bytes)?;
    let wit = component.parent().map(|dir| dir.join(crate::wasm::plain::WIT_DIR));
    if let Some(wit) = wit.filter(|w| w.is_dir()) {
        crate::wasm::plain::copy_wit(&wit, &package.path().join(crate::wasm::plain::WIT_DIR))
            .map_err(|e| PluginAdminError::Unreadable(format!("{}: {e}", wit.display())))?;
    }
    Ok(package)
}
