//! The process's WASM runtime: one wasmtime `Engine` (`engine.rs`), the
//! linkers (WASI p2, the plugin's `/plugin` directory, the contract; `wasi:http`
//! only for a plugin that declares it), the on-disk cache of compiled
//! components (`cache.rs`), and preparing one component — its size, the
//! interface check (`imports.rs`) before any compilation, `instantiate_pre`.
//! Loading a plugin on top of it is `load.rs`'s.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use wasmtime::Engine;
use wasmtime::component::{Component, HasSelf, InstancePre, Linker};

use super::cache::{CacheOutcome, CacheSweep, CompileObserver, ComponentCache};
use super::engine::{self, Allocator, EngineOptions, GuestEngine};
use super::http::{self, NameLookup};
use super::imports;
use super::plain::PlainExports;
use super::store::{self, GuestState};
use crate::contract::{ClatPlugin, ClatPluginPre};
use crate::limits::WASM_COMPONENT_MAX_BYTES;
use crate::sync::{Unpoisoned, UnpoisonedRw};

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
    ListTools(#[source] super::failure::GuestFailure),
    #[error("it exports no function CLAT can offer as a tool{}", refused_list(.refused))]
    NothingOffered { refused: Vec<String> },
}

fn refused_list(refused: &[String]) -> String {
    if refused.is_empty() { String::new() } else { format!(" ({})", refused.join("; ")) }
}

/// Where a plugin's component comes from, for mapping it when a call first needs it.
#[derive(Debug, Clone)]
pub(super) struct ComponentSource {
    pub(super) entry: PathBuf,
    /// An installed component's content-addressed name (`artifact_key`): mapped without reading it.
    pub(super) artifact: Option<String>,
    /// Whether `wasi:http` is linked (the plugin declares `http`).
    pub(super) links_http: bool,
    /// A plain component's (`kind = "component"`): its tools come from its exports, not `list-tools`.
    pub(super) plain: Option<PlainSource>,
}

/// What a plain component's tools are made of beside its exports: its manifest's `[tools]` and its package's WIT.
#[derive(Debug, Clone)]
pub(super) struct PlainSource {
    pub(super) declared: std::collections::BTreeMap<String, crate::supply::capabilities::ToolDeclaration>,
    pub(super) package: PathBuf,
}

/// What each call instantiates: a contract guest's bindings, or a plain component's exports.
pub(super) enum GuestPre {
    Contract(ClatPluginPre<GuestState>),
    Plain { pre: InstancePre<GuestState>, exports: PlainExports, source: PlainSource },
}

/// A plugin's component, compiled (or mapped) and linked: what each call instantiates.
pub(super) struct Prepared {
    pub(super) pre: GuestPre,
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
    pub(super) lookup: std::sync::RwLock<Arc<dyn NameLookup>>,
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
    pub fn sweep_cache(&self, installed: &[crate::supply::packages::Installed]) -> std::io::Result<CacheSweep> {
        let cache = &self.parts().map_err(std::io::Error::other)?.cache;
        let mut keep = std::collections::HashSet::new();
        for package in installed.iter().filter(|p| p.manifest.kind.is_wasm()) {
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
        let plain = source.plain.is_some();
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
                let check = if plain { imports::check_plain_component } else { imports::check_component };
                check(&bytes, declares_http)
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
        let pre = match &source.plain {
            Some(plain) => {
                GuestPre::Plain { exports: PlainExports::read(&component, &engine), pre, source: plain.clone() }
            }
            None => GuestPre::Contract(ClatPluginPre::new(pre).map_err(|e| LoadError::WrongWorld(e.into()))?),
        };
        Ok((Prepared { pre, cache, engine }, component))
    }
}

/// The name an installed component's compiled form is cached under: its
/// content-addressed artifact directory's name and the entry inside it.
pub(super) fn artifact_key(artifact_dir: &Path, entry: &Path) -> Option<String> {
    let relative = entry.strip_prefix(artifact_dir).unwrap_or(entry);
    artifact_dir.file_name().map(|dir| format!("{}/{}", dir.to_string_lossy(), relative.display()))
}
