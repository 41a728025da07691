//! The process's WASM runtime: one wasmtime `Engine` (`engine.rs`), the
//! linkers (WASI p2, the plugin's `/plugin` directory, the contract; `wasi:http`
//! only for a plugin that declares it), the on-disk cache of compiled
//! components (`cache.rs`), and loading one plugin — its size, the interface
//! check (`imports.rs`) before any compilation, `instantiate_pre`, its
//! `StoreTemplate`, and `list-tools` outside any run.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, Linker};

use super::cache::{CacheOutcome, CacheSweep, CompileObserver, ComponentCache};
use super::engine::{self, Allocator, EngineOptions, GuestEngine};
use super::http::{self, Egress, NameLookup};
use super::imports;
use super::kept::{KeptListing, ListingKey, ListingPlace};
use super::plugin::{WasmPlugin, spawn_context_delivery};
use super::stdio::SharedTail;
use super::store::{self, GuestState, StoreTemplate, TemplateSpec};
use crate::capabilities::{Capabilities, ToolUses};
use crate::contract::{CONTRACT_VERSION, ClatPlugin, ClatPluginPre, ToolSpec};
use crate::limits::{WASM_COMPONENT_MAX_BYTES, WASM_MEMORY_MAX_BYTES};
use crate::redact::OutputTail;
use crate::registry::Registry;
use crate::services::HostServices;
use crate::sync::{Unpoisoned, UnpoisonedRw};
use crate::trust::ClatHome;

/// Why a plugin could not be loaded; its contributions are skipped and the
/// reason is shown in status.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read the component {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the component {path} is {size} bytes; at most {WASM_COMPONENT_MAX_BYTES} are accepted")]
    TooLarge { path: PathBuf, size: u64 },
    #[error("{0:#}")]
    NotAComponent(anyhow::Error),
    #[error("the component does not implement the clat-plugin world: {0:#}")]
    WrongWorld(anyhow::Error),
    #[error("{problem}")]
    Interfaces { path: PathBuf, problem: imports::ImportProblem },
    #[error("the WASM runtime could not start: {0}")]
    Runtime(String),
    #[error("list-tools failed: {0}")]
    ListTools(#[source] super::plugin::GuestFailure),
}

/// How one plugin is set up beyond its component: its memory cap, what its
/// manifest declares, what the user granted of it, and its identity (an
/// installed package's artifact digest; `None`: the component's path).
#[derive(Debug, Clone, Default)]
pub struct PluginSetup {
    pub memory_max: Option<usize>,
    pub declared: Capabilities,
    pub granted: Capabilities,
    /// Which tools use which capability (`[tools]` of the manifest).
    pub uses: ToolUses,
    pub identity: Option<crate::identity::Identity>,
    /// Where its listing is kept (`kept.rs`): an installed package's. `None`: listed at every load.
    pub listing: Option<ListingPlace>,
}

impl PluginSetup {
    /// The setup of an installed package of `home`.
    pub fn of(package: &crate::packages::Installed, home: &ClatHome) -> PluginSetup {
        let mut setup = PluginSetup {
            memory_max: package.manifest.memory_max(),
            declared: package.manifest.capabilities.clone(),
            granted: package.grants.clone(),
            uses: package.manifest.tool_uses(),
            identity: Some(package.identity()),
            listing: None,
        };
        let key = ListingKey {
            artifact: package.identity(),
            contract: CONTRACT_VERSION.to_string(),
            grants: setup.effective(),
        };
        setup.listing = Some(ListingPlace::new(home, &package.manifest.name, key));
        setup
    }

    /// `wasi:http` is linked for a plugin that declares `http`, granted or not
    /// (with no grant every request is refused, with the reason).
    fn links_http(&self) -> bool {
        !self.declared.http.is_empty()
    }

    /// What is granted of what is declared (a grant never widens the declaration).
    fn effective(&self) -> Capabilities {
        self.granted.within(&self.declared)
    }
}

/// Where a plugin's component comes from, for mapping it when a call first needs it.
#[derive(Debug, Clone)]
pub(super) struct ComponentSource {
    pub(super) entry: PathBuf,
    /// An installed component's content-addressed name (`artifact_key`): mapped without reading it.
    pub(super) artifact: Option<String>,
    /// Whether `wasi:http` is linked (the plugin declares `http`).
    pub(super) links_http: bool,
}

/// A plugin's component, compiled (or mapped) and linked: what each call instantiates.
pub(super) struct Prepared {
    pub(super) pre: ClatPluginPre<GuestState>,
    pub(super) cache: CacheOutcome,
    /// The engine it was compiled for, which each call's store is made of.
    pub(super) engine: Engine,
}

/// The process's WASM runtime: its engine and what is built on it, made the first time a component is mapped
/// (`engine()`), so that a command that loads plugins whose listings were kept and calls none (`clat tools`) never
/// reserves the pool's address space or starts the epoch ticker.
pub struct WasmRuntime {
    cache_dir: PathBuf,
    observer: Option<Arc<dyn CompileObserver>>,
    options: EngineOptions,
    parts: std::sync::OnceLock<Result<EngineParts, String>>,
    lookup: std::sync::RwLock<Arc<dyn NameLookup>>,
}

/// The engine, its allocator, the linkers and the compiled cache.
struct EngineParts {
    engine: Engine,
    allocator: Allocator,
    linker: Linker<GuestState>,
    /// The linker with `wasi:http` too, built the first time a plugin declaring `http` loads.
    http_linker: std::sync::OnceLock<Result<Linker<GuestState>, String>>,
    cache: ComponentCache,
    stop_ticker: Arc<AtomicBool>,
}

impl Drop for EngineParts {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl EngineParts {
    fn new(
        cache_dir: &Path,
        observer: Option<Arc<dyn CompileObserver>>,
        options: EngineOptions,
    ) -> anyhow::Result<Self> {
        let GuestEngine { engine, allocator } = engine::new_engine(options)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
        store::link_plugin_dir(&mut linker)?;
        ClatPlugin::add_to_linker::<GuestState, HasSelf<GuestState>>(&mut linker, |s| s)
            .map_err(anyhow::Error::from)?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        engine::spawn_epoch_ticker(&engine, &stop_ticker)?;
        let cache = ComponentCache::new(&engine, options.compiler, cache_dir, observer);
        Ok(EngineParts { engine, allocator, linker, http_linker: std::sync::OnceLock::new(), cache, stop_ticker })
    }
}

impl WasmRuntime {
    /// A runtime whose engine (epoch interruption, a ticker) will keep its compiled cache in `cache_dir`.
    pub fn new(cache_dir: &Path) -> anyhow::Result<Arc<WasmRuntime>> {
        Self::with_observer(cache_dir, None)
    }

    /// The same, telling `observer` about compilations that take a while.
    pub fn with_observer(
        cache_dir: &Path,
        observer: Option<Arc<dyn CompileObserver>>,
    ) -> anyhow::Result<Arc<WasmRuntime>> {
        Self::with_options(cache_dir, observer, EngineOptions::default())
    }

    /// The same, with the engine's pool sized by `options`. Nothing is built yet; an engine that cannot be built
    /// fails the first load or call that needs it, with the reason.
    pub fn with_options(
        cache_dir: &Path,
        observer: Option<Arc<dyn CompileObserver>>,
        options: EngineOptions,
    ) -> anyhow::Result<Arc<WasmRuntime>> {
        Ok(Arc::new(WasmRuntime {
            cache_dir: cache_dir.to_path_buf(),
            observer,
            options,
            parts: std::sync::OnceLock::new(),
            lookup: std::sync::RwLock::new(Arc::new(http::SystemLookup)),
        }))
    }

    /// The engine and what is built on it, made now if nothing needed them before.
    fn parts(&self) -> Result<&EngineParts, LoadError> {
        let parts = self.parts.get_or_init(|| {
            EngineParts::new(&self.cache_dir, self.observer.clone(), self.options).map_err(|e| format!("{e:#}"))
        });
        parts.as_ref().map_err(|e| LoadError::Runtime(e.clone()))
    }

    /// The engine every plugin of this runtime runs on (the benchmarks measure its floor on a bare store).
    pub fn engine(&self) -> Result<&Engine, LoadError> {
        Ok(&self.parts()?.engine)
    }

    /// The instance allocator the engine runs on.
    pub fn allocator(&self) -> Result<&Allocator, LoadError> {
        Ok(&self.parts()?.allocator)
    }

    /// Whether the engine was built (a component was mapped, or something asked for it).
    pub fn engine_built(&self) -> bool {
        self.parts.get().is_some_and(Result::is_ok)
    }

    /// Resolve granted host names with `lookup` instead of the system resolver
    /// (for plugins loaded from now on). Internal addresses stay refused.
    pub fn set_name_lookup(&self, lookup: Arc<dyn NameLookup>) {
        *self.lookup.write_locked() = lookup;
    }

    fn linker_for(&self, links_http: bool) -> Result<&Linker<GuestState>, LoadError> {
        let parts = self.parts()?;
        if !links_http {
            return Ok(&parts.linker);
        }
        let built = parts.http_linker.get_or_init(|| {
            let mut linker = parts.linker.clone();
            wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(|e| format!("{e:#}"))?;
            Ok(linker)
        });
        built.as_ref().map_err(|e| LoadError::NotAComponent(anyhow::anyhow!("cannot link wasi:http: {e}")))
    }

    /// Remove the compiled-cache entries no package in `installed` uses
    /// (after a remove, a reinstall or a failed install; `clat plugin gc`).
    /// Reads each installed WASM component to name its content entry.
    pub fn sweep_cache(&self, installed: &[crate::packages::Installed]) -> std::io::Result<CacheSweep> {
        let cache = &self.parts().map_err(std::io::Error::other)?.cache;
        let mut keep = std::collections::HashSet::new();
        for package in installed.iter().filter(|p| p.manifest.kind == crate::packages::PackageKind::Wasm) {
            let entry = package.entry_path();
            let (Some(artifact), Ok(bytes)) = (artifact_key(&package.dir, &entry), std::fs::read(&entry)) else {
                continue;
            };
            keep.extend(cache.entries_of_installed(&artifact, &bytes));
        }
        cache.retain(&keep)
    }

    /// How many loads hit the cache / compiled.
    pub fn cache_counts(&self) -> (u64, u64) {
        let Some(Ok(parts)) = self.parts.get() else { return (0, 0) };
        (parts.cache.stats.hits.load(Ordering::Relaxed), parts.cache.stats.compiles.load(Ordering::Relaxed))
    }

    /// Load one plugin: compile (or reuse), link against the contract, and ask
    /// it for its tools (outside any run: it may not call host tools then).
    pub async fn load(
        self: &Arc<Self>,
        name: &str,
        artifact_dir: &Path,
        entry: &Path,
        setup: PluginSetup,
        services: Arc<HostServices>,
    ) -> Result<Arc<WasmPlugin>, LoadError> {
        self.load_from(name, artifact_dir, entry, None, setup, services).await
    }

    /// Load an installed plugin: its artifact directory is content-addressed,
    /// so once its compiled form is cached under that name, loading maps the
    /// compiled file and never reads or hashes the component again.
    pub async fn load_installed(
        self: &Arc<Self>,
        name: &str,
        artifact_dir: &Path,
        entry: &Path,
        setup: PluginSetup,
        services: Arc<HostServices>,
    ) -> Result<Arc<WasmPlugin>, LoadError> {
        let artifact = artifact_key(artifact_dir, entry);
        self.load_from(name, artifact_dir, entry, artifact, setup, services).await
    }

    async fn load_from(
        self: &Arc<Self>,
        name: &str,
        artifact_dir: &Path,
        entry: &Path,
        artifact: Option<String>,
        setup: PluginSetup,
        services: Arc<HostServices>,
    ) -> Result<Arc<WasmPlugin>, LoadError> {
        let source = ComponentSource { entry: entry.to_path_buf(), artifact, links_http: setup.links_http() };
        // A listing kept under this plugin's key (artifact, contract, grants) spares the load the component.
        let kept = setup.listing.as_ref().and_then(ListingPlace::read);
        let (prepared, sees_preopens) = match &kept {
            Some(kept) => (None, kept.sees_preopens),
            None => {
                let (prepared, component) = self.prepare(name, &source).await?;
                // A component that does not import the preopens can never see `/plugin`.
                let sees_preopens = component
                    .component_type()
                    .imports(&prepared.engine)
                    .any(|(import, _)| import.starts_with("wasi:filesystem/preopens@"));
                (Some(prepared), sees_preopens)
            }
        };
        let granted = setup.effective();
        // Granted values are secrets in every diagnostic from now on.
        crate::redact::register_secrets(granted.env.iter().filter_map(|n| std::env::var(n).ok()));
        let egress = setup.links_http().then(|| {
            let lookup = Arc::clone(&self.lookup.read_locked());
            Egress::new(name, granted.http_patterns(), lookup)
        });
        let tail: SharedTail = Arc::new(Mutex::new(OutputTail::new()));
        let waits = crate::services::HostWaits::default();
        let template = StoreTemplate::new(TemplateSpec {
            plugin: name,
            artifact_dir,
            sees_preopens,
            memory_max: setup.memory_max.unwrap_or(WASM_MEMORY_MAX_BYTES).min(WASM_MEMORY_MAX_BYTES),
            tail: Arc::clone(&tail),
            services,
            waits: waits.clone(),
            egress,
            env_grants: granted.env.clone(),
            uses: setup.uses.clone(),
            identity: setup.identity.clone().unwrap_or_else(|| crate::identity::Identity::file(entry)),
        })
        .map_err(LoadError::NotAComponent)?;
        let plugin = Arc::new(WasmPlugin {
            name: name.to_string(),
            granted,
            uses: setup.uses.clone(),
            prepared: tokio::sync::OnceCell::new_with(prepared),
            source,
            runtime: Arc::clone(self),
            template,
            tail,
            tools: Mutex::new(Vec::new()),
            dropped_tools: Default::default(),
            schemas_checked: kept.as_ref().is_some_and(|k| k.schemas_checked),
            context: tokio::sync::watch::channel(None).0,
            delivered: Default::default(),
            delivery: Default::default(),
            waits,
        });
        let tools = match kept {
            Some(kept) => {
                plugin.dropped_tools.store(kept.dropped, Ordering::Relaxed);
                kept.tools
            }
            None => {
                let tools = plugin.list_tools().await.map_err(LoadError::ListTools)?;
                if let Some(place) = &setup.listing {
                    place.keep(&KeptListing::checked(tools.clone(), plugin.dropped_tools(), sees_preopens));
                }
                tools
            }
        };
        *plugin.tools.locked() = tools;
        spawn_context_delivery(&plugin);
        Ok(plugin)
    }

    /// Compile (or map) a plugin's component and link it: its size, the interface check before anything is
    /// compiled, the cache, `instantiate_pre`. Also returns the component.
    pub(super) async fn prepare(
        self: &Arc<Self>,
        name: &str,
        source: &ComponentSource,
    ) -> Result<(Prepared, Component), LoadError> {
        let entry = &source.entry;
        let size = std::fs::metadata(entry).map_err(|source| LoadError::Read { path: entry.clone(), source })?.len();
        if size > WASM_COMPONENT_MAX_BYTES {
            return Err(LoadError::TooLarge { path: entry.clone(), size });
        }
        let engine = self.parts()?.engine.clone();
        let runtime = Arc::clone(self);
        let plugin_name = name.to_string();
        // Whatever reads the bytes (a compilation, or a load by content) checks
        // the component's interfaces first, before anything is compiled.
        let read_error: Arc<Mutex<Option<LoadError>>> = Arc::new(Mutex::new(None));
        let declares_http = source.links_http;
        let read = {
            let (path, read_error) = (entry.clone(), Arc::clone(&read_error));
            move || {
                let failed = |error: LoadError| {
                    let message = anyhow::anyhow!("{error}");
                    *read_error.locked() = Some(error);
                    message
                };
                let bytes =
                    std::fs::read(&path).map_err(|source| failed(LoadError::Read { path: path.clone(), source }))?;
                imports::check_component(&bytes, declares_http)
                    .map_err(|problem| failed(LoadError::Interfaces { path: path.clone(), problem }))?;
                Ok(bytes)
            }
        };
        let artifact = source.artifact.clone();
        let compile_engine = engine.clone();
        let compiled = tokio::task::spawn_blocking(move || {
            let cache = &runtime.parts()?.cache;
            match artifact {
                Some(artifact) => cache.load_named(&compile_engine, &plugin_name, &artifact, read),
                None => cache.load_or_compile(&compile_engine, &plugin_name, &read()?),
            }
        })
        .await
        .map_err(|e| LoadError::NotAComponent(anyhow::anyhow!("compilation task failed: {e}")))?;
        let (component, cache) = match compiled {
            Ok(compiled) => compiled,
            Err(e) => {
                return Err(match read_error.locked().take() {
                    Some(error) => error,
                    None => LoadError::NotAComponent(e),
                });
            }
        };
        let linker = self.linker_for(source.links_http)?;
        let pre = linker.instantiate_pre(&component).map_err(|e| LoadError::WrongWorld(e.into()))?;
        let pre = ClatPluginPre::new(pre).map_err(|e| LoadError::WrongWorld(e.into()))?;
        Ok((Prepared { pre, cache, engine }, component))
    }
}

/// The name an installed component's compiled form is cached under: its
/// content-addressed artifact directory's name and the entry inside it.
fn artifact_key(artifact_dir: &Path, entry: &Path) -> Option<String> {
    let relative = entry.strip_prefix(artifact_dir).unwrap_or(entry);
    artifact_dir.file_name().map(|dir| format!("{}/{}", dir.to_string_lossy(), relative.display()))
}

/// Load a component file directly (tests, `clat plugin install` validation).
pub async fn load_file(
    runtime: &Arc<WasmRuntime>,
    name: &str,
    entry: &Path,
    services: Arc<HostServices>,
) -> Result<Arc<WasmPlugin>, LoadError> {
    let dir = entry.parent().context("the component path has no parent directory").map_err(LoadError::NotAComponent)?;
    runtime.load(name, dir, entry, PluginSetup::default(), services).await
}

/// Validate a component for installation: it compiles (warming the cache),
/// implements the `clat-plugin` world and lists its tools without trapping.
/// It runs with a detached set of host services and no run, so it can touch
/// nothing.
pub async fn validate_component(
    runtime: &Arc<WasmRuntime>,
    name: &str,
    entry: &Path,
    declared: &Capabilities,
) -> Result<Vec<ToolSpec>, LoadError> {
    let dir = entry.parent().unwrap_or(Path::new("/"));
    let setup = PluginSetup { declared: declared.clone(), ..PluginSetup::default() };
    let plugin = runtime.load(name, dir, entry, setup, detached_services(dir)).await?;
    Ok(plugin.tools())
}

/// List an installed plugin under its grants and keep the listing (`kept.rs`), so that loads map nothing: after
/// `clat plugin install` and whenever its grants change. A listing already kept under the same key is kept as
/// it is. Like validation, it runs with a detached set of host services and no run.
pub async fn keep_listing(
    runtime: &Arc<WasmRuntime>,
    home: &ClatHome,
    package: &crate::packages::Installed,
) -> Result<Vec<ToolSpec>, LoadError> {
    let entry = package.entry_path();
    let setup = PluginSetup::of(package, home);
    let services = detached_services(&package.dir);
    let plugin = runtime.load_installed(&package.manifest.name, &package.dir, &entry, setup, services).await?;
    Ok(plugin.tools())
}

/// Host services that reach nothing: no run, no model, a registry of no tools.
fn detached_services(dir: &Path) -> Arc<HostServices> {
    let registry = Arc::new(Registry::new(&[]));
    Arc::new(HostServices::new(&registry, Arc::new(crate::sampling::OfflineProvider), dir, "install-validation"))
}
