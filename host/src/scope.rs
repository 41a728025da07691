//! The trusted project scope. `ProjectScope::mount` checks trust before
//! anything is spawned or contacted, then builds the scope's one registry with
//! the native tools. Its extensions — installed WASM plugins (the `wasm`
//! adapter) and MCP servers (the `mcp` adapter) — start in a background
//! worker (`start_extensions`) or inline (`load_extensions`), each isolated,
//! and are kept in one list of typed statuses (`extension.rs`). Runs start
//! from the scope; the first run freezes the registry, which never thaws
//! within the scope. `close` tears everything down in the spec's order, also
//! while extensions are still starting.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio_util::sync::CancellationToken;

use crate::contract::ContextSnapshot;
pub(crate) use crate::extension::ScopeLists;
pub use crate::extension::{Extension, ExtensionKind, ExtensionState, ExtensionStatus, StartFilter};
use crate::home::trust::{TrustStore, canonical_project};
use crate::home::{ClatHome, HomeError};
use crate::mcp::McpServer;
use crate::native::fence::PathFence;
use crate::native::process::{ProcessService, SandboxPolicy};
use crate::native::{NATIVE_TOOL_NAMES, NativeEnv, register_native_tools};
use crate::registry::Registry;
use crate::run::{RunBuilder, RunContext};
use crate::services::HostServices;
use crate::services::sampling::{ModelProvider, OfflineProvider};
use crate::supply::packages::PackageStore;
use crate::sync::Unpoisoned;
use crate::wasm::{WasmPlugin, WasmRuntime};

/// Where compiled components are cached, inside `$CLAT_HOME`.
pub const WASM_CACHE_DIR: &str = "cache/wasm";
/// Where the baseline compiler's entries (an author's edit loop) are cached:
/// apart, so a sweep after each `clat plugin call | test` keeps only the latest build's.
pub const WASM_DEV_CACHE_DIR: &str = "cache/wasm-dev";

/// The compiled cache of `compiler` in `home`.
pub fn wasm_cache_dir(home: &ClatHome, compiler: crate::wasm::WasmCompiler) -> PathBuf {
    match compiler {
        crate::wasm::WasmCompiler::Optimizing => home.path().join(WASM_CACHE_DIR),
        crate::wasm::WasmCompiler::Baseline => home.path().join(WASM_DEV_CACHE_DIR),
    }
}

/// Why an extension was not started.
pub(crate) const NOT_NEEDED: &str = "not started: this command does not use it";

/// Whether `status` is of an extension this scope did not start because the command does not use it (not one
/// disabled, unapproved or failed).
pub(crate) fn not_needed(status: &ExtensionStatus) -> bool {
    status.state == ExtensionState::Configured && status.problems.first().is_some_and(|p| p == NOT_NEEDED)
}

/// Why a project could not be mounted.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error("project {root} is not trusted; run `clat trust {root}` first (nothing was started)")]
    Untrusted { root: PathBuf },
    #[error(transparent)]
    Trust(#[from] HomeError),
    #[error("cannot open project {root}: {source}")]
    Project { root: PathBuf, source: std::io::Error },
    #[error("registering native tools failed: {0}")]
    Registration(#[from] crate::registry::RegistrationError),
}

/// How to mount a project.
#[derive(Clone, Default)]
pub struct ScopeOptions {
    /// The sandbox policy for commands.
    pub sandbox: SandboxPolicy,
    /// The active session model for extension sampling (default: the offline model).
    pub provider: Option<Arc<dyn ModelProvider>>,
    /// The GLM Coding Plan, when the session model is one: its pack of servers joins the server set.
    pub glm_plan: Option<crate::mcp::glm::CodingPlan>,
    /// Which extensions start (default: all). The CLI starts only what a command's tools need.
    pub start: StartFilter,
    /// Told about compilations that take a while (the CLI prints them on stderr).
    pub compile_observer: Option<Arc<dyn crate::wasm::cache::CompileObserver>>,
    /// The startup timeout of a server that sets none (no `startup_timeout_sec`,
    /// no `MCP_TIMEOUT`); `None`: the spec's bounds.
    pub default_startup_timeout: Option<std::time::Duration>,
    /// The compiler of WASM plugins (and the compiled cache it uses: the
    /// baseline compiler's entries live in `WASM_DEV_CACHE_DIR`).
    pub wasm_compiler: crate::wasm::WasmCompiler,
    /// The servers that may start at their first call (`mcp/deferred.rs`; the door fills it for
    /// `StartFilter::FirstUse`).
    pub first_use: FirstUse,
}

/// The servers that may start at their first call: those with a kept listing, when discovery would not offer their
/// tools up front — the tools registered before them (native, plugins') and their kept ones are past the budget.
#[derive(Clone, Default)]
pub struct FirstUse {
    /// Past this many bytes of definitions, discovery finds tools rather than offers them.
    pub budget_bytes: usize,
    /// The servers' kept listings, by server.
    pub listings: std::collections::HashMap<String, crate::home::listings::Listing>,
    /// What their kept tools' definitions cost, in bytes.
    pub kept_bytes: usize,
}

impl FirstUse {
    /// The kept listings of the servers that start at their first call, `registered` being the tools registered
    /// before them: none while everything fits the budget.
    fn listings(
        &self,
        registered: &[crate::registry::ToolInfo],
    ) -> Option<&std::collections::HashMap<String, crate::home::listings::Listing>> {
        let bytes = crate::registry::schema_totals(registered).size.bytes + self.kept_bytes;
        (!self.listings.is_empty() && bytes > self.budget_bytes).then_some(&self.listings)
    }
}

/// A mounted, trusted project.
pub struct ProjectScope {
    home: ClatHome,
    root: PathBuf,
    session_id: String,
    registry: Arc<Registry>,
    services: Arc<HostServices>,
    /// Its extensions' statuses and the live ones.
    lists: Arc<ScopeLists>,
    wasm: OnceLock<Arc<WasmRuntime>>,
    /// The servers that may start at their first call.
    first_use: FirstUse,
    glm_plan: Option<crate::mcp::glm::CodingPlan>,
    start: StartFilter,
    compile_observer: Option<Arc<dyn crate::wasm::cache::CompileObserver>>,
    default_startup_timeout: Option<std::time::Duration>,
    wasm_compiler: crate::wasm::WasmCompiler,
    /// Set by `start_extensions`: becomes true when the startup worker is done.
    startup: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
    /// Cancelled when the scope starts closing: extensions still starting stop.
    closing: CancellationToken,
    /// Extensions still starting when the registry froze.
    missed: Mutex<Vec<ExtensionStatus>>,
    /// Set once the initial surface has been waited for: the wait happens once per scope (the first run's, or
    /// `settle_initial_surface`'s), never again.
    settled: tokio::sync::OnceCell<()>,
}

impl ProjectScope {
    /// Mount `project`: refuse (having started nothing) unless it is trusted in `home`.
    pub fn mount(home: &ClatHome, project: &Path, options: ScopeOptions) -> Result<ProjectScope, ScopeError> {
        let root = canonical_project(project)?;
        if !TrustStore::new(home).is_trusted(&root)? {
            return Err(ScopeError::Untrusted { root });
        }
        let fence = PathFence::open(&root).map_err(|source| ScopeError::Project { root: root.clone(), source })?;
        let env = Arc::new(NativeEnv { fence, processes: ProcessService::new(&root, options.sandbox) });
        let registry = Arc::new(Registry::new(&NATIVE_TOOL_NAMES));
        register_native_tools(&registry, env)?;
        let session_id = format!("session-{}", uuid::Uuid::new_v4().simple());
        let provider = options.provider.unwrap_or_else(|| Arc::new(OfflineProvider));
        let services = Arc::new(HostServices::new(&registry, provider, &root, &session_id));
        Ok(ProjectScope {
            home: home.clone(),
            root,
            session_id,
            registry,
            services,
            lists: Arc::default(),
            wasm: OnceLock::new(),
            first_use: options.first_use,
            glm_plan: options.glm_plan,
            start: options.start,
            compile_observer: options.compile_observer,
            default_startup_timeout: options.default_startup_timeout,
            wasm_compiler: options.wasm_compiler,
            startup: Mutex::default(),
            closing: CancellationToken::new(),
            missed: Mutex::default(),
            settled: tokio::sync::OnceCell::new(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn home(&self) -> &ClatHome {
        &self.home
    }
    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The process's WASM runtime, created on first use with its compile cache in the home.
    pub fn wasm_runtime(&self) -> anyhow::Result<Arc<WasmRuntime>> {
        if let Some(rt) = self.wasm.get() {
            return Ok(Arc::clone(rt));
        }
        let rt = WasmRuntime::with_options(
            &wasm_cache_dir(&self.home, self.wasm_compiler),
            self.compile_observer.clone(),
            crate::wasm::EngineOptions { compiler: self.wasm_compiler, ..Default::default() },
        )?;
        Ok(Arc::clone(self.wasm.get_or_init(|| rt)))
    }

    fn set_status(&self, status: ExtensionStatus) -> ExtensionStatus {
        self.lists.set_status(status)
    }

    /// Load every installed WASM plugin that this scope starts and register its
    /// tools. A broken plugin is isolated: it contributes nothing, and its
    /// status says why.
    pub async fn load_plugins(&self) -> Vec<ExtensionStatus> {
        use ExtensionState::{Closed, Configured, Failed, Starting};
        let installed = match PackageStore::new(&self.home).list() {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!("cannot read the installed plugins: {e}");
                let status = ExtensionStatus::new("(plugin index)", ExtensionKind::Wasm, Failed, Some(e.to_string()));
                return vec![self.set_status(status)];
            }
        };
        let mut statuses = Vec::new();
        // mcp-stdio packages are mounted (and reported) by `load_mcp_servers`.
        for package in installed.into_iter().filter(|p| p.manifest.kind.is_wasm()) {
            let name = &package.manifest.name;
            if !self.start.wants(ExtensionKind::Wasm, name) {
                let status = ExtensionStatus::new(name, ExtensionKind::Wasm, Configured, Some(NOT_NEEDED.into()));
                statuses.push(self.set_status(status));
                continue;
            }
            if self.closing.is_cancelled() {
                let why = "the scope closed before it started".to_string();
                statuses.push(self.set_status(ExtensionStatus::new(name, ExtensionKind::Wasm, Closed, Some(why))));
                continue;
            }
            self.set_status(ExtensionStatus::new(name, ExtensionKind::Wasm, Starting, None));
            let (mut status, plugin) = crate::wasm::start_plugin(
                self.wasm_runtime(),
                &self.home,
                &package,
                &self.services,
                &self.registry,
                &self.closing,
            )
            .await;
            status.loading = package.loading.clone();
            if let Some(plugin) = plugin {
                self.remember_listing(ExtensionKind::Wasm, &status, &package.identity(), None);
                self.lists.live.locked().push(plugin);
            }
            statuses.push(self.set_status(status));
        }
        statuses
    }

    /// Keep what a started extension registered, and a server's definitions as it listed them (`listings.rs`);
    /// a failure costs only a hint.
    fn remember_listing(
        &self,
        kind: ExtensionKind,
        status: &ExtensionStatus,
        identity: &crate::policy::identity::Identity,
        listed: Option<&[crate::contract::ToolSpec]>,
    ) {
        let home = &self.home;
        if let Err(e) = crate::home::listings::remember(home, kind, &status.name, identity, &status.tools, listed) {
            tracing::debug!("cannot keep the listing of {}: {e}", status.name);
        }
    }

    /// Connect every configured MCP server that this scope starts
    /// (`$CLAT_HOME/mcp.json`, installed `mcp-stdio` packages and the GLM pack;
    /// a same-named `mcp.json` entry wins), in parallel, and register their
    /// tools. A failing server contributes nothing and its status says why,
    /// with its redacted stderr tail. Servers still starting when the scope
    /// closes are stopped.
    pub async fn load_mcp_servers(&self) -> Vec<ExtensionStatus> {
        let env = |k: &str| crate::mcp::inputs::lookup(k);
        let set = crate::mcp::configured_servers(&self.home, Some(&self.root), self.glm_plan.as_ref(), &env);
        let mut statuses: Vec<ExtensionStatus> = set.statuses.into_iter().map(|s| self.set_status(s)).collect();
        let first_use = self.first_use.listings(&self.registry.list());
        // Every server connects, lists and registers on its own, so a slow one
        // never holds back the others (or the first run's freeze).
        let mut connecting = tokio::task::JoinSet::new();
        for mut server in set.servers {
            let (name, kind) = (server.name.clone(), crate::mcp::sources::target_kind(&server.target));
            let default = self.default_startup_timeout.map(|t| t.min(crate::limits::STARTUP_TIMEOUT_MAX));
            server.options.startup_timeout = server.options.startup_timeout.or(default);
            if !self.start.wants(kind, &name) {
                let status = ExtensionStatus::new(&name, kind, ExtensionState::Configured, Some(NOT_NEEDED.into()));
                statuses.push(self.set_status(status));
                continue;
            }
            if let Some(listing) = first_use.and_then(|listings| listings.get(&name)) {
                let parts = crate::mcp::deferred::ScopeParts {
                    services: &self.services,
                    registry: &self.registry,
                    home: &self.home,
                    pins: crate::policy::pins::ToolPins::new(&self.home, &self.root),
                    closing: &self.closing,
                    lists: &self.lists,
                };
                statuses.push(self.set_status(crate::mcp::deferred::register(server, listing, parts)));
                continue;
            }
            self.set_status(ExtensionStatus::new(&name, kind, ExtensionState::Starting, None));
            let (registry, services) = (Arc::clone(&self.registry), Arc::clone(&self.services));
            let (root, closing) = (self.root.clone(), self.closing.clone());
            let pins = crate::policy::pins::ToolPins::new(&self.home, &self.root);
            // On close, each start ends by itself, in order: it is never dropped midway.
            connecting.spawn(async move {
                let (mut status, started) =
                    crate::mcp::start_server(&server, &services, &registry, &root, &pins, &closing).await;
                status.loading = server.options.loading.clone();
                (status, started)
            });
        }
        while let Some(joined) = connecting.join_next().await {
            let Ok((status, server)) = joined else { continue };
            if let Some(server) = server {
                let listed = server.listed.locked().clone();
                self.remember_listing(status.kind, &status, &server.link.identity, Some(&listed));
                self.lists.live.locked().push(server);
            }
            statuses.push(self.set_status(status));
        }
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
        statuses
    }

    /// Load every extension this scope starts: WASM plugins and MCP servers.
    pub async fn load_extensions(&self) -> Vec<ExtensionStatus> {
        let mut all = self.load_plugins().await;
        all.extend(self.load_mcp_servers().await);
        all
    }

    /// Start the background startup worker: it loads every extension while the
    /// caller goes on (CLAT stays interactive). Runs wait for it at most
    /// `INITIAL_SURFACE_WAIT` (`start_run_when_ready`); whatever registers after
    /// the freeze is rejected and shows in the extension's status.
    pub fn start_extensions(self: &Arc<Self>) {
        let (done, rx) = tokio::sync::watch::channel(false);
        *self.startup.locked() = Some(rx);
        let scope = Arc::clone(self);
        // Not dropped on close: each extension's start watches `closing` and
        // ends promptly, tearing down in order what it already started.
        tokio::spawn(async move {
            scope.load_extensions().await;
            let _ = done.send(true);
        });
    }

    /// Wait for the startup worker, at most `wait`; true when it finished.
    pub async fn wait_for_initial_surface(&self, wait: std::time::Duration) -> bool {
        let rx = self.startup.locked().clone();
        let Some(mut rx) = rx else { return true };
        // Once the surface is in (every run after the first), no timer is set.
        if *rx.borrow() {
            return true;
        }
        matches!(tokio::time::timeout(wait, rx.wait_for(|done| *done)).await, Ok(Ok(_)))
    }

    /// Start a run once the initial surface is there, or `INITIAL_SURFACE_WAIT`
    /// has passed; the registry freezes then and never thaws in this scope.
    pub async fn start_run_when_ready(&self, builder: RunBuilder) -> RunContext {
        self.start_run_within(builder, crate::limits::INITIAL_SURFACE_WAIT).await
    }

    /// `start_run_when_ready` with another bound on the wait (embedding hosts, tests).
    pub async fn start_run_within(&self, builder: RunBuilder, wait: std::time::Duration) -> RunContext {
        self.settle_initial_surface(wait).await;
        self.start_run(builder)
    }

    /// Wait for the initial surface, at most `wait`, then freeze the registry —
    /// once for the scope: a later call (the next run, a served call) returns at
    /// once, whatever is still starting. Extensions still starting when the
    /// registry freezes missed the initial surface: their statuses say so, once,
    /// and `missed_initial_surface` names them.
    pub async fn settle_initial_surface(&self, wait: std::time::Duration) {
        self.settled
            .get_or_init(|| async {
                if !self.wait_for_initial_surface(wait).await {
                    let seconds = wait.as_secs();
                    tracing::warn!("extensions still starting after {seconds} s; the registry freezes without them");
                    let mut list = self.lists.statuses.locked();
                    let mut missed = self.missed.locked();
                    for entry in list.iter_mut().filter(|e| e.state == ExtensionState::Starting) {
                        entry
                            .problems
                            .push(format!("missed the {seconds} s initial surface: the registry froze without it"));
                        missed.push(entry.clone());
                    }
                }
                self.registry.freeze();
            })
            .await;
    }

    /// The extensions that were still starting when the registry froze (as they were then).
    pub fn missed_initial_surface(&self) -> Vec<ExtensionStatus> {
        self.missed.locked().clone()
    }

    /// Close the scope. Extensions still starting are stopped first (a
    /// connection being made is dropped, which kills its process group). Then
    /// every extension is torn down the same way, all in parallel, in the
    /// spec's order: revoke its tool leases (its tools leave the listing; calls
    /// in flight are cancelled, which for an MCP server sends
    /// `notifications/cancelled`, and are waited for, bounded), then close it —
    /// for a stdio server: close its stdin, wait `CLOSE_GRACE`, kill and reap
    /// its whole process group, and join its I/O tasks.
    pub async fn close(&self) {
        self.closing.cancel();
        // The worker ends promptly once `closing` is cancelled (a server it
        // had connected is torn down in order first, bounded by two graces);
        // after it, nothing joins the list.
        self.wait_for_initial_surface(crate::limits::CLOSE_GRACE * 3).await;
        let live: Vec<_> = self.lists.live.locked().drain(..).collect();
        let mut teardown = tokio::task::JoinSet::new();
        for extension in live {
            let registry = Arc::clone(&self.registry);
            teardown.spawn(async move {
                let (kind, name) = (extension.kind(), extension.name().to_string());
                let reason = format!("{kind} extension {name} was closed with its project scope");
                let grace = crate::limits::CLOSE_GRACE;
                let left = registry.withdraw(kind.external_kind(), &name, &reason, grace).await;
                if left > 0 {
                    tracing::warn!("{kind} extension {name}: {left} calls still running at close");
                }
                extension.close().await;
            });
        }
        while teardown.join_next().await.is_some() {}
        let mut list = self.lists.statuses.locked();
        for entry in list.iter_mut().filter(|e| matches!(e.state, ExtensionState::Ready | ExtensionState::Starting)) {
            entry.state = ExtensionState::Closed;
        }
    }

    /// Whether the scope has started closing.
    pub fn is_closing(&self) -> bool {
        self.closing.is_cancelled()
    }

    /// What every extension did in this scope so far, with the live state of
    /// the servers that stopped and were restarted (or gave up) since.
    pub fn extensions(&self) -> Vec<ExtensionStatus> {
        let mut list = self.lists.statuses.locked().clone();
        for extension in self.lists.live.locked().iter() {
            let same = |e: &&mut ExtensionStatus| e.kind == extension.kind() && e.name == extension.name();
            if let Some(entry) = list.iter_mut().find(same) {
                extension.refresh_status(entry);
            }
        }
        list
    }

    /// Start a run. The first run freezes the registry.
    pub fn start_run(&self, builder: RunBuilder) -> RunContext {
        self.registry.freeze();
        let run = builder.start();
        self.notify_context(Some(self.snapshot(Some(&run))));
        run
    }

    /// End a run: kill what it still owns, emit `run_finished`, and tell the
    /// loaded plugins the run is over (best effort, never blocking).
    pub fn finish_run(&self, run: &RunContext) {
        run.finish();
        self.notify_context(None);
    }

    /// Offer every loaded plugin and every opted-in MCP server the latest
    /// context (`None`: no run). Never blocks: each keeps only the newest.
    pub fn notify_context(&self, snapshot: Option<ContextSnapshot>) {
        for extension in self.lists.live.locked().iter() {
            extension.notify_context(snapshot.as_ref());
        }
    }

    /// The system-prompt contributions of this scope's servers, in registration order.
    pub fn system_prompts(&self) -> Vec<crate::registry::SystemPrompt> {
        self.registry.system_prompts()
    }

    /// The extensions started in this scope and not closed.
    pub fn live_extensions(&self) -> Vec<Arc<dyn Extension>> {
        self.lists.live.locked().clone()
    }

    /// The MCP servers connected in this scope.
    pub fn mcp_servers(&self) -> Vec<Arc<McpServer>> {
        self.live_extensions().into_iter().filter_map(|e| e.into_any().downcast::<McpServer>().ok()).collect()
    }

    /// The WASM plugins loaded into this scope.
    pub fn plugins(&self) -> Vec<Arc<WasmPlugin>> {
        self.live_extensions().into_iter().filter_map(|e| e.into_any().downcast::<WasmPlugin>().ok()).collect()
    }

    /// The host services this scope offers its plugins.
    pub fn services(&self) -> &Arc<HostServices> {
        &self.services
    }

    /// A bounded, detached snapshot of project, session and (optionally) run.
    pub fn snapshot(&self, run: Option<&RunContext>) -> ContextSnapshot {
        self.services.snapshot(run)
    }
}

/// The identity of every extension configured or installed in `home` now, by
/// key (`mcp:NAME`, `wasm:NAME`), as a mount would start them (a same-named
/// `mcp.json` entry over a package over the GLM pack's server); nothing is
/// started or contacted. `clat approvals list` holds kept approvals against it.
/// `project` (canonical) adds its approved `.mcp.json` servers.
pub fn configured_identities(
    home: &crate::home::ClatHome,
    project: Option<&Path>,
    glm_plan: Option<&crate::mcp::glm::CodingPlan>,
) -> std::collections::HashMap<String, crate::policy::identity::Identity> {
    let env = |k: &str| std::env::var(k).ok();
    let servers = crate::mcp::configured_servers(home, project, glm_plan, &env).identities;
    let mut identities: std::collections::HashMap<_, _> =
        servers.into_iter().map(|(name, identity)| (format!("mcp:{name}"), identity)).collect();
    let packages = crate::supply::packages::PackageStore::new(home).list().unwrap_or_default();
    for p in packages.into_iter().filter(|p| p.manifest.kind.is_wasm()) {
        identities.insert(format!("wasm:{}", p.manifest.name), p.identity());
    }
    identities
}
