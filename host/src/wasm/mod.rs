//! The WASM plugin runtime: one wasmtime `Engine` per process (`engine.rs`:
//! component model, epoch interruption with a ticker thread, the pooling
//! allocator), compiled components cached on disk, an `InstancePre` and a
//! `StoreTemplate` per plugin, and a fresh `Store` and instance per call with
//! memory and table limits and an epoch deadline (the call's deadline past any host-wait
//! extension: the registry owns the deadline itself). A plugin's tools register
//! as `wasm_{plugin}_{tool}`; calling one instantiates the guest and runs its
//! `call-tool` export. Everything a guest does to the world goes through host
//! services (`host_services.rs`, the twin of `mcp/host_services.rs`). A broken
//! guest fails its own call only. `WasmPlugin` is an `Extension` of the scope.

pub mod cache;
pub mod engine;
mod host_services;
pub mod http;
pub mod imports;
pub mod stdio;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context as _;
use async_trait::async_trait;
use serde_json::Value;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Engine, Trap};

use crate::capabilities::Capabilities;
use crate::contract::{ClatPlugin, ClatPluginPre, ContextSnapshot, ToolOutput, ToolSpec};
use crate::limits::{
    CONTEXT_DELIVERY_TIMEOUT, HOST_REQUEST_EXTENSION_MAX, TOOL_CALL_TIMEOUT, TOOLS_PER_SERVER_MAX,
    WASM_COMPONENT_MAX_BYTES, WASM_MEMORY_MAX_BYTES,
};
use crate::names::ExternalKind;
use crate::redact::OutputTail;
use crate::registry::{RegistrationError, Registry, ToolError, ToolHandler};
use crate::run::RunContext;
use crate::services::HostServices;
use cache::{CacheOutcome, CacheSweep, CompileObserver, ComponentCache};
use engine::GuestEngine;
pub use engine::{ALLOCATOR_ENV, Allocator, EngineOptions};
use http::{Egress, NameLookup};
use stdio::SharedTail;
use store::{GuestState, StoreTemplate, TemplateSpec};

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
    #[error("list-tools failed: {0}")]
    ListTools(String),
}

/// How one plugin is set up beyond its component: its memory cap, what its
/// manifest declares, what the user granted of it, and its identity (an
/// installed package's artifact digest; `None`: the component's path).
#[derive(Debug, Clone, Default)]
pub struct PluginSetup {
    pub memory_max: Option<usize>,
    pub declared: Capabilities,
    pub granted: Capabilities,
    pub identity: Option<crate::identity::Identity>,
}

impl PluginSetup {
    /// The setup of an installed package.
    pub fn of(package: &crate::packages::Installed) -> PluginSetup {
        PluginSetup {
            memory_max: package.manifest.memory_max(),
            declared: package.manifest.capabilities.clone(),
            granted: package.grants.clone(),
            identity: Some(package.identity()),
        }
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

/// The process's WASM engine and compiled-component cache.
pub struct WasmRuntime {
    engine: Engine,
    allocator: Allocator,
    linker: Linker<GuestState>,
    /// The linker with `wasi:http` too, built the first time a plugin declaring `http` loads.
    http_linker: std::sync::OnceLock<Result<Linker<GuestState>, String>>,
    lookup: std::sync::RwLock<Arc<dyn NameLookup>>,
    cache: ComponentCache,
    stop_ticker: Arc<AtomicBool>,
}

impl Drop for WasmRuntime {
    fn drop(&mut self) {
        self.stop_ticker.store(true, Ordering::Relaxed);
    }
}

impl WasmRuntime {
    /// An engine with epoch interruption, a ticker, and a cache in `cache_dir`.
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

    /// The same, with the engine's pool sized by `options`.
    pub fn with_options(
        cache_dir: &Path,
        observer: Option<Arc<dyn CompileObserver>>,
        options: EngineOptions,
    ) -> anyhow::Result<Arc<WasmRuntime>> {
        let GuestEngine { engine, allocator } = engine::new_engine(options)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from)?;
        store::link_plugin_dir(&mut linker)?;
        ClatPlugin::add_to_linker::<GuestState, HasSelf<GuestState>>(&mut linker, |s| s)
            .map_err(anyhow::Error::from)?;
        let stop_ticker = Arc::new(AtomicBool::new(false));
        engine::spawn_epoch_ticker(&engine, &stop_ticker)?;
        let cache = ComponentCache::new(&engine, cache_dir, observer);
        Ok(Arc::new(WasmRuntime {
            engine,
            allocator,
            linker,
            http_linker: std::sync::OnceLock::new(),
            lookup: std::sync::RwLock::new(Arc::new(http::SystemLookup)),
            cache,
            stop_ticker,
        }))
    }

    /// The instance allocator the engine runs on.
    pub fn allocator(&self) -> &Allocator {
        &self.allocator
    }

    /// Resolve granted host names with `lookup` instead of the system resolver
    /// (for plugins loaded from now on). Internal addresses stay refused.
    pub fn set_name_lookup(&self, lookup: Arc<dyn NameLookup>) {
        *self.lookup.write().unwrap_or_else(|p| p.into_inner()) = lookup;
    }

    fn linker_for(&self, setup: &PluginSetup) -> Result<&Linker<GuestState>, LoadError> {
        if !setup.links_http() {
            return Ok(&self.linker);
        }
        let built = self.http_linker.get_or_init(|| {
            let mut linker = self.linker.clone();
            wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker).map_err(|e| format!("{e:#}"))?;
            Ok(linker)
        });
        built.as_ref().map_err(|e| LoadError::NotAComponent(anyhow::anyhow!("cannot link wasi:http: {e}")))
    }

    /// Remove the compiled-cache entries no package in `installed` uses
    /// (after a remove, a reinstall or a failed install; `clat plugin gc`).
    /// Reads each installed WASM component to name its content entry.
    pub fn sweep_cache(&self, installed: &[crate::packages::Installed]) -> std::io::Result<CacheSweep> {
        let mut keep = std::collections::HashSet::new();
        for package in installed.iter().filter(|p| p.manifest.kind == crate::packages::PackageKind::Wasm) {
            let entry = package.entry_path();
            let (Some(artifact), Ok(bytes)) = (artifact_key(&package.dir, &entry), std::fs::read(&entry)) else {
                continue;
            };
            keep.extend(self.cache.entries_of_installed(&artifact, &bytes));
        }
        self.cache.retain(&keep)
    }

    /// How many loads hit the cache / compiled.
    pub fn cache_counts(&self) -> (u64, u64) {
        (self.cache.stats.hits.load(Ordering::Relaxed), self.cache.stats.compiles.load(Ordering::Relaxed))
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
        let size = std::fs::metadata(entry).map_err(|source| LoadError::Read { path: entry.into(), source })?.len();
        if size > WASM_COMPONENT_MAX_BYTES {
            return Err(LoadError::TooLarge { path: entry.into(), size });
        }
        let runtime = Arc::clone(self);
        let plugin_name = name.to_string();
        let path = entry.to_path_buf();
        // Whatever reads the bytes (a compilation, or a load by content) checks
        // the component's interfaces first, before anything is compiled.
        let read_error: Arc<Mutex<Option<LoadError>>> = Arc::new(Mutex::new(None));
        let declares_http = setup.links_http();
        let read = {
            let (path, read_error) = (path.clone(), Arc::clone(&read_error));
            move || {
                let failed = |error: LoadError| {
                    let message = anyhow::anyhow!("{error}");
                    *read_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(error);
                    message
                };
                let bytes =
                    std::fs::read(&path).map_err(|source| failed(LoadError::Read { path: path.clone(), source }))?;
                imports::check_component(&bytes, declares_http)
                    .map_err(|problem| failed(LoadError::Interfaces { path: path.clone(), problem }))?;
                Ok(bytes)
            }
        };
        let compiled = tokio::task::spawn_blocking(move || match artifact {
            Some(artifact) => runtime.cache.load_named(&runtime.engine, &plugin_name, &artifact, read),
            None => runtime.cache.load_or_compile(&runtime.engine, &plugin_name, &read()?),
        })
        .await
        .map_err(|e| LoadError::NotAComponent(anyhow::anyhow!("compilation task failed: {e}")))?;
        let (component, outcome) = match compiled {
            Ok(compiled) => compiled,
            Err(e) => {
                return Err(match read_error.lock().unwrap_or_else(|p| p.into_inner()).take() {
                    Some(error) => error,
                    None => LoadError::NotAComponent(e),
                });
            }
        };
        let pre = self.linker_for(&setup)?.instantiate_pre(&component).map_err(|e| LoadError::WrongWorld(e.into()))?;
        let pre = ClatPluginPre::new(pre).map_err(|e| LoadError::WrongWorld(e.into()))?;
        let granted = setup.effective();
        // Granted values are secrets in every diagnostic from now on.
        crate::redact::register_secrets(granted.env.iter().filter_map(|n| std::env::var(n).ok()));
        let egress = setup.links_http().then(|| {
            let lookup = Arc::clone(&self.lookup.read().unwrap_or_else(|p| p.into_inner()));
            Egress::new(name, granted.http_patterns(), lookup)
        });
        // A component that does not import the preopens can never see `/plugin`.
        let sees_preopens = component
            .component_type()
            .imports(&self.engine)
            .any(|(import, _)| import.starts_with("wasi:filesystem/preopens@"));
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
            identity: setup.identity.clone().unwrap_or_else(|| crate::identity::Identity::file(entry)),
        })
        .map_err(LoadError::NotAComponent)?;
        let plugin = Arc::new(WasmPlugin {
            name: name.to_string(),
            granted,
            pre,
            runtime: Arc::clone(self),
            template,
            tail,
            tools: Mutex::new(Vec::new()),
            dropped_tools: Default::default(),
            cache: outcome,
            context: tokio::sync::watch::channel(None).0,
            delivered: Default::default(),
            waits,
        });
        let tools = plugin.list_tools().await.map_err(LoadError::ListTools)?;
        *plugin.tools.lock().unwrap_or_else(|p| p.into_inner()) = tools;
        spawn_context_delivery(&plugin);
        Ok(plugin)
    }
}

/// The name an installed component's compiled form is cached under: its
/// content-addressed artifact directory's name and the entry inside it.
fn artifact_key(artifact_dir: &Path, entry: &Path) -> Option<String> {
    let relative = entry.strip_prefix(artifact_dir).unwrap_or(entry);
    artifact_dir.file_name().map(|dir| format!("{}/{}", dir.to_string_lossy(), relative.display()))
}

/// A loaded plugin.
pub struct WasmPlugin {
    name: String,
    /// What the user granted of what the manifest declares.
    granted: Capabilities,
    pre: ClatPluginPre<GuestState>,
    runtime: Arc<WasmRuntime>,
    /// What each call's store is made from (the WASI context's parts, the limits, the grant).
    template: StoreTemplate,
    tail: SharedTail,
    tools: Mutex<Vec<ToolSpec>>,
    dropped_tools: std::sync::atomic::AtomicUsize,
    cache: CacheOutcome,
    /// The latest context for `context-changed`: `None` = nothing new,
    /// `Some(None)` = the run ended, `Some(Some(s))` = a new snapshot.
    context: tokio::sync::watch::Sender<Option<Option<ContextSnapshot>>>,
    delivered: std::sync::atomic::AtomicU64,
    /// Its sampling and elicitation requests waiting on the host.
    waits: crate::services::HostWaits,
}

impl WasmPlugin {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the plugin was granted (of what it declares).
    pub fn grants(&self) -> &Capabilities {
        &self.granted
    }

    /// Whether loading compiled the component or reused the cache.
    pub fn cache_outcome(&self) -> CacheOutcome {
        self.cache
    }

    /// The tools the plugin listed at load.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Tools listed past `TOOLS_PER_SERVER_MAX` and dropped.
    pub fn dropped_tools(&self) -> usize {
        self.dropped_tools.load(Ordering::Relaxed)
    }

    /// The last lines the guest wrote to stdout/stderr (redacted).
    pub fn output_tail(&self) -> Vec<String> {
        self.tail.lock().unwrap_or_else(|p| p.into_inner()).lines()
    }

    fn store(&self, run: Option<&RunContext>) -> wasmtime::Store<GuestState> {
        // In a run the registry owns the call's deadline (and extends it while the
        // guest waits on the host); the epoch interrupt is the backstop past any
        // extension. Outside a run (list-tools, install validation) it is the bound.
        let deadline = run.map_or_else(
            || Instant::now() + TOOL_CALL_TIMEOUT,
            |r| {
                let backstop = r.call_deadline(TOOL_CALL_TIMEOUT) + HOST_REQUEST_EXTENSION_MAX;
                r.deadline().map_or(backstop, |end| end.min(backstop))
            },
        );
        let http_deadline = run.map_or(deadline, |r| {
            let call = r.call_deadline(TOOL_CALL_TIMEOUT);
            r.deadline().map_or(call, |end| end.min(call))
        });
        self.template.new_store(&self.runtime.engine, run.cloned(), deadline, http_deadline)
    }

    /// Describe a guest failure: traps by kind, with the output tail.
    fn failure(&self, what: &str, error: wasmtime::Error) -> String {
        let reason = match error.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => "it ran past its deadline and was interrupted".to_string(),
            Some(Trap::OutOfFuel) => "it ran out of fuel".to_string(),
            Some(trap) => format!("it trapped: {trap}"),
            None if error.is::<wasmtime::PoolConcurrencyLimitError>() => format!(
                "too many guest instances are running at once ({error}; the pool holds {})",
                self.runtime.allocator
            ),
            None if format!("{error:#}").contains("memory") => format!("it hit a resource limit: {error:#}"),
            None => format!("{error:#}"),
        };
        let tail = self.output_tail();
        let mut message = format!("plugin {} failed in {what}: {reason}", self.name);
        if !tail.is_empty() {
            message.push_str("\nlast output lines:\n");
            message.push_str(&tail.join("\n"));
        }
        message
    }

    async fn list_tools(&self) -> Result<Vec<ToolSpec>, String> {
        let mut store = self.store(None);
        let instance = self.pre.instantiate_async(&mut store).await.map_err(|e| self.failure("instantiation", e))?;
        let tools = instance
            .artec_clat_plugin()
            .call_list_tools(&mut store)
            .await
            .map_err(|e| self.failure("list-tools", e))?;
        if tools.len() > TOOLS_PER_SERVER_MAX {
            let dropped = tools.len() - TOOLS_PER_SERVER_MAX;
            tracing::warn!("plugin {}: {dropped} tools past the first {TOOLS_PER_SERVER_MAX} were dropped", self.name);
            self.dropped_tools.store(dropped, Ordering::Relaxed);
        }
        Ok(tools.into_iter().take(TOOLS_PER_SERVER_MAX).collect())
    }

    /// Run one of the plugin's tools in `run`, in a fresh store.
    pub async fn call_tool(&self, tool: &str, arguments: &Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        let mut store = self.store(Some(run));
        let instance = self
            .pre
            .instantiate_async(&mut store)
            .await
            .map_err(|e| ToolError(anyhow::anyhow!(self.failure("instantiation", e))))?;
        let result = instance
            .artec_clat_plugin()
            .call_call_tool(&mut store, tool, &arguments.to_string())
            .await
            .map_err(|e| ToolError(anyhow::anyhow!(self.failure(&format!("tool {tool}"), e))))?;
        result.map_err(|message| {
            let message = crate::redact::redact(&message);
            ToolError(anyhow::anyhow!("plugin {} reported a failure in {tool}: {message}", self.name))
        })
    }

    /// Create a fresh store and instance and drop them: the per-call setup
    /// cost, for benchmarks and health checks.
    pub async fn instantiate_once(&self) -> Result<(), String> {
        let mut store = self.store(None);
        self.pre.instantiate_async(&mut store).await.map(drop).map_err(|e| self.failure("instantiation", e))
    }

    /// Offer the guest the latest context (or `None`: the run ended). Never
    /// blocks: a delivery task hands the newest value to the guest's
    /// `context-changed` export, skipping values superseded meanwhile.
    pub fn notify_context(&self, snapshot: Option<ContextSnapshot>) {
        self.context.send_replace(Some(snapshot));
    }

    /// How many `context-changed` deliveries completed.
    pub fn context_deliveries(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    async fn deliver_context(&self, snapshot: Option<ContextSnapshot>) -> Result<(), String> {
        let mut store = self.store(None);
        let instance = self.pre.instantiate_async(&mut store).await.map_err(|e| self.failure("instantiation", e))?;
        instance
            .artec_clat_plugin()
            .call_context_changed(&mut store, snapshot.as_ref())
            .await
            .map_err(|e| self.failure("context-changed", e))
    }

    /// Register every listed tool; returns what each registration did.
    pub fn register(self: &Arc<Self>, registry: &Registry) -> Vec<Result<String, RegistrationError>> {
        self.tools()
            .iter()
            .map(|spec| {
                let handler = Arc::new(WasmTool { plugin: Arc::clone(self), tool: spec.name.clone() });
                let network = !self.granted.http.is_empty();
                registry.register_external(
                    ExternalKind::Wasm,
                    &self.name,
                    self.template.identity(),
                    spec,
                    network,
                    handler,
                )
            })
            .collect()
    }
}

/// The delivery task of one plugin: it holds only a weak reference, so it ends
/// when the plugin is dropped (or the channel closes).
fn spawn_context_delivery(plugin: &Arc<WasmPlugin>) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
    let mut rx = plugin.context.subscribe();
    let weak = Arc::downgrade(plugin);
    handle.spawn(async move {
        while rx.changed().await.is_ok() {
            let Some(value) = rx.borrow_and_update().clone() else { continue };
            let Some(plugin) = weak.upgrade() else { return };
            match tokio::time::timeout(CONTEXT_DELIVERY_TIMEOUT, plugin.deliver_context(value)).await {
                Ok(Ok(())) => {
                    plugin.delivered.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(e)) => tracing::debug!("context-changed for plugin {}: {e}", plugin.name),
                Err(_) => tracing::debug!("context-changed for plugin {} timed out", plugin.name),
            }
        }
    });
}

#[async_trait]
impl crate::extension::Extension for WasmPlugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> crate::extension::ExtensionKind {
        crate::extension::ExtensionKind::Wasm
    }

    fn refresh_status(&self, status: &mut crate::extension::ExtensionStatus) {
        status.output_tail = self.output_tail();
    }

    fn notify_context(&self, snapshot: Option<&ContextSnapshot>) {
        WasmPlugin::notify_context(self, snapshot.cloned());
    }

    /// Nothing runs between calls: each call's store is gone when it ends, and
    /// the context delivery task ends with the last reference to the plugin.
    async fn close(&self) {}

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// One guest tool in the registry.
struct WasmTool {
    plugin: Arc<WasmPlugin>,
    tool: String,
}

#[async_trait]
impl ToolHandler for WasmTool {
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        self.plugin.call_tool(&self.tool, &arguments, run).await
    }

    fn waiting_on_host(&self) -> bool {
        self.plugin.waits.pending() > 0
    }
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
    let registry = Arc::new(Registry::new(&[]));
    let dir = entry.parent().unwrap_or(Path::new("/"));
    let services =
        Arc::new(HostServices::new(&registry, Arc::new(crate::sampling::OfflineProvider), dir, "install-validation"));
    let setup = PluginSetup { declared: declared.clone(), ..PluginSetup::default() };
    let plugin = runtime.load(name, dir, entry, setup, services).await?;
    Ok(plugin.tools())
}
