//! The trusted project scope. `ProjectScope::mount` checks trust before
//! anything is spawned or contacted, then builds the scope's one registry with
//! the native tools; `load_plugins` loads the installed WASM plugins into it
//! (MCP servers will join the same way). Runs start from the scope; the first
//! run freezes the registry, which never thaws within the scope.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;

use crate::contract::ContextSnapshot;
use crate::names::ExternalKind;
use crate::native::fence::PathFence;
use crate::native::process::{ProcessService, SandboxPolicy};
use crate::native::{NATIVE_TOOL_NAMES, NativeEnv, register_native_tools};
use crate::packages::{PackageKind, PackageStore};
use crate::registry::Registry;
use crate::run::{RunBuilder, RunContext};
use crate::sampling::{ModelProvider, OfflineProvider};
use crate::services::HostServices;
use crate::wasm::{WasmPlugin, WasmRuntime};

impl ExtensionStatus {
    fn new(name: &str, kind: &str, state: &str, problem: Option<String>) -> Self {
        ExtensionStatus {
            name: name.to_string(),
            kind: kind.to_string(),
            state: state.to_string(),
            tools: vec![],
            problems: problem.into_iter().collect(),
            output_tail: vec![],
            protocol: None,
            system_prompts: vec![],
        }
    }
}

/// The user's MCP server configuration, inside `$CLAT_HOME`.
pub const MCP_CONFIG_FILE: &str = "mcp.json";
/// Where compiled components are cached, inside `$CLAT_HOME`.
pub const WASM_CACHE_DIR: &str = "cache/wasm";
use crate::trust::{ClatHome, TrustError, TrustStore, canonical_project};

/// Why a project could not be mounted.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error("project {root} is not trusted; run `clat trust {root}` first (nothing was started)")]
    Untrusted { root: PathBuf },
    #[error(transparent)]
    Trust(#[from] TrustError),
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
    pub glm_plan: Option<crate::glm::CodingPlan>,
}

/// A mounted, trusted project.
pub struct ProjectScope {
    home: ClatHome,
    root: PathBuf,
    session_id: String,
    registry: Arc<Registry>,
    services: Arc<HostServices>,
    extensions: Mutex<Vec<ExtensionStatus>>,
    wasm: OnceLock<Arc<WasmRuntime>>,
    plugins: Mutex<Vec<Arc<WasmPlugin>>>,
    mcp_servers: Mutex<Vec<Arc<crate::mcp_bridge::McpServer>>>,
    glm_plan: Option<crate::glm::CodingPlan>,
    /// Set by `start_extensions`: becomes true when the startup worker is done.
    startup: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
}

/// How one extension (an installed plugin package) fared in this scope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionStatus {
    pub name: String,
    /// `wasm`, `mcp-stdio` or `mcp-http`.
    pub kind: String,
    /// `loaded`, `failed`, or `not-loaded` (a kind this build does not mount yet).
    pub state: String,
    /// The registered names of its tools.
    pub tools: Vec<String>,
    /// Why it failed or was skipped, and refused registrations.
    pub problems: Vec<String>,
    /// The last lines it wrote (redacted).
    pub output_tail: Vec<String>,
    /// MCP servers: the negotiated protocol version and era.
    pub protocol: Option<String>,
    /// MCP servers: the names of the marked system prompts it contributed.
    pub system_prompts: Vec<String>,
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
            extensions: Mutex::default(),
            wasm: OnceLock::new(),
            plugins: Mutex::default(),
            mcp_servers: Mutex::default(),
            glm_plan: options.glm_plan,
            startup: Mutex::default(),
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
        let rt = WasmRuntime::new(&self.home.path().join(WASM_CACHE_DIR))?;
        Ok(Arc::clone(self.wasm.get_or_init(|| rt)))
    }

    /// Load every installed WASM plugin and register its tools. A broken plugin
    /// is isolated: it contributes nothing, and its status says why.
    pub async fn load_plugins(&self) -> Vec<ExtensionStatus> {
        let installed = match PackageStore::new(&self.home).list() {
            Ok(list) => list,
            Err(e) => {
                tracing::warn!("cannot read the installed plugins: {e}");
                let status = ExtensionStatus::new("(plugin index)", "wasm", "failed", Some(e.to_string()));
                self.extensions.lock().unwrap_or_else(|p| p.into_inner()).push(status.clone());
                return vec![status];
            }
        };
        let mut statuses = Vec::new();
        // mcp-stdio packages are mounted (and reported) by `load_mcp_servers`.
        for package in installed.into_iter().filter(|p| p.manifest.kind == PackageKind::Wasm) {
            let mut status = ExtensionStatus::new(&package.manifest.name, "wasm", "loaded", None);
            let loaded = match self.wasm_runtime() {
                Ok(rt) => rt
                    .load(
                        &package.manifest.name,
                        &package.dir,
                        &package.entry_path(),
                        package.manifest.memory_max(),
                        Arc::clone(&self.services),
                    )
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(format!("the WASM runtime could not start: {e:#}")),
            };
            match loaded {
                Ok(plugin) => {
                    if plugin.dropped_tools() > 0 {
                        status.problems.push(format!(
                            "{} tools past the first {} were dropped",
                            plugin.dropped_tools(),
                            crate::limits::TOOLS_PER_SERVER_MAX
                        ));
                    }
                    for result in plugin.register(&self.registry) {
                        match result {
                            Ok(name) => status.tools.push(name),
                            Err(e) => status.problems.push(e.to_string()),
                        }
                    }
                    status.output_tail = plugin.output_tail();
                    self.plugins.lock().unwrap_or_else(|p| p.into_inner()).push(plugin);
                }
                Err(reason) => {
                    status.state = "failed".into();
                    status.problems.push(reason);
                }
            }
            statuses.push(status);
        }
        self.extensions.lock().unwrap_or_else(|p| p.into_inner()).extend(statuses.iter().cloned());
        statuses
    }

    /// Connect every configured MCP server (`$CLAT_HOME/mcp.json` and installed
    /// `mcp-stdio` packages; a same-named `mcp.json` entry wins), in parallel,
    /// and register their tools. A failing server contributes nothing and its
    /// status says why, with its redacted stderr tail.
    pub async fn load_mcp_servers(&self) -> Vec<ExtensionStatus> {
        let mut statuses = Vec::new();
        let mut specs: Vec<(String, crate::mcp_bridge::ServerTarget)> = Vec::new();
        let status = |name: &str, kind: &str, state: &str, problem: String| {
            ExtensionStatus::new(name, kind, state, Some(problem).filter(|p| !p.is_empty()))
        };
        let config_path = self.home.path().join(MCP_CONFIG_FILE);
        let mut config = match clat_mcp::config::read_config(&config_path) {
            Ok(c) => c,
            Err(e) => {
                statuses.push(status("(mcp.json)", "mcp-stdio", "failed", e.to_string()));
                clat_mcp::config::McpConfig::default()
            }
        };
        // The GLM Coding Plan pack joins in memory; a same-named user entry wins.
        if let Some(plan) = &self.glm_plan {
            for (name, entry) in crate::glm::pack_servers(plan) {
                config.servers.entry(name).or_insert(entry);
            }
        }
        for error in std::mem::take(&mut config.errors) {
            let name = match &error {
                clat_mcp::config::ConfigError::Entry { name, .. } => name.clone(),
                _ => "(mcp.json)".into(),
            };
            statuses.push(status(&name, "mcp-stdio", "failed", error.to_string()));
        }
        for (name, entry) in &config.servers {
            let target = match crate::mcp_bridge::user_stdio_spec(self.home.path(), entry) {
                Some(spec) => crate::mcp_bridge::ServerTarget::Stdio(spec),
                None => match crate::mcp_bridge::http_spec(entry) {
                    Some(spec) => crate::mcp_bridge::ServerTarget::Http(spec),
                    None => continue,
                },
            };
            specs.push((name.clone(), target));
        }
        if let Ok(packages) = PackageStore::new(&self.home).list() {
            for p in packages.into_iter().filter(|p| p.manifest.kind == PackageKind::McpStdio) {
                if config.servers.contains_key(&p.manifest.name) {
                    statuses.push(status(
                        &p.manifest.name,
                        "mcp-stdio",
                        "not-loaded",
                        "a same-named mcp.json entry replaces this package".into(),
                    ));
                    continue;
                }
                let spec = clat_mcp::StdioSpec {
                    command: p.entry_path().display().to_string(),
                    args: p.manifest.args.clone(),
                    env: p.manifest.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                    cwd: p.dir.clone(),
                };
                specs.push((p.manifest.name.clone(), crate::mcp_bridge::ServerTarget::Stdio(spec)));
            }
        }
        self.extensions.lock().unwrap_or_else(|p| p.into_inner()).extend(statuses.iter().cloned());
        // Every server connects, lists and registers on its own, so a slow one
        // never holds back the others (or the first run's freeze).
        let mut connecting = tokio::task::JoinSet::new();
        for (name, spec) in specs {
            let registry = Arc::clone(&self.registry);
            let services = Arc::clone(&self.services);
            let root = self.root.clone();
            connecting.spawn(async move {
                let mut s = status(&name, spec.kind(), "loaded", String::new());
                let server = match crate::mcp_bridge::McpServer::connect(&name, &spec, &services).await {
                    Ok(server) => server,
                    Err(failure) => {
                        s.state = "failed".into();
                        s.problems.push(failure.reason);
                        s.output_tail = failure.stderr_tail;
                        return (s, None);
                    }
                };
                s.protocol = Some(server.protocol());
                match server.register(&registry).await {
                    Ok((tools, problems)) => {
                        s.tools = tools;
                        s.problems = problems;
                        // A prompt failure is reported and never costs the server its tools.
                        let (prompts, prompt_problems) = server.register_system_prompts(&registry, &root).await;
                        s.system_prompts = prompts;
                        s.problems.extend(prompt_problems);
                        s.output_tail = server.stderr_tail();
                        if s.tools.is_empty() && s.system_prompts.is_empty() && registry.is_frozen() {
                            // Too late for this scope: it could never contribute, so it does not keep running.
                            s.state = "failed".into();
                            if s.problems.is_empty() {
                                s.problems.push("it finished starting after the registry froze".into());
                            }
                            server.close().await;
                            return (s, None);
                        }
                        server.spawn_relisting(&registry);
                        (s, Some(server))
                    }
                    Err(reason) => {
                        s.state = "failed".into();
                        s.problems.push(format!("tools/list failed: {reason}"));
                        s.output_tail = server.stderr_tail();
                        server.close().await;
                        (s, None)
                    }
                }
            });
        }
        while let Some(joined) = connecting.join_next().await {
            let Ok((s, server)) = joined else { continue };
            if let Some(server) = server {
                self.mcp_servers.lock().unwrap_or_else(|p| p.into_inner()).push(server);
            }
            self.extensions.lock().unwrap_or_else(|p| p.into_inner()).push(s.clone());
            statuses.push(s);
        }
        statuses.sort_by(|a, b| a.name.cmp(&b.name));
        statuses
    }

    /// Load every extension: WASM plugins and MCP servers.
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
        *self.startup.lock().unwrap_or_else(|p| p.into_inner()) = Some(rx);
        let scope = Arc::clone(self);
        tokio::spawn(async move {
            scope.load_extensions().await;
            let _ = done.send(true);
        });
    }

    /// Wait for the startup worker, at most `wait`; true when it finished.
    pub async fn wait_for_initial_surface(&self, wait: std::time::Duration) -> bool {
        let rx = self.startup.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(mut rx) = rx else { return true };
        matches!(tokio::time::timeout(wait, rx.wait_for(|done| *done)).await, Ok(Ok(_)))
    }

    /// Start a run once the initial surface is there, or `INITIAL_SURFACE_WAIT`
    /// has passed; the registry freezes then and never thaws in this scope.
    pub async fn start_run_when_ready(&self, builder: RunBuilder) -> RunContext {
        self.start_run_within(builder, crate::limits::INITIAL_SURFACE_WAIT).await
    }

    /// `start_run_when_ready` with another bound on the wait (embedding hosts, tests).
    pub async fn start_run_within(&self, builder: RunBuilder, wait: std::time::Duration) -> RunContext {
        if !self.wait_for_initial_surface(wait).await {
            tracing::warn!("extensions still starting after {} s; the registry freezes without them", wait.as_secs());
        }
        self.start_run(builder)
    }

    /// Close the scope, tearing every MCP server down in the spec's order, all
    /// servers in parallel: revoke its tool leases (its tools leave the
    /// listing; calls in flight are cancelled, which sends
    /// `notifications/cancelled`, and are waited for, bounded), then close its
    /// stdin, wait `CLOSE_GRACE`, kill and reap its whole process group, and
    /// join its I/O tasks.
    pub async fn close(&self) {
        let servers: Vec<_> = self.mcp_servers.lock().unwrap_or_else(|p| p.into_inner()).drain(..).collect();
        let mut teardown = tokio::task::JoinSet::new();
        for server in servers {
            let registry = Arc::clone(&self.registry);
            teardown.spawn(async move {
                let reason = format!("MCP server {} was closed with its project scope", server.name());
                let left =
                    registry.withdraw(ExternalKind::Mcp, server.name(), &reason, crate::limits::CLOSE_GRACE).await;
                if left > 0 {
                    tracing::warn!("server {}: {left} calls still running at close", server.name());
                }
                server.close().await;
            });
        }
        while teardown.join_next().await.is_some() {}
    }

    /// What every extension did in this scope so far.
    pub fn extensions(&self) -> Vec<ExtensionStatus> {
        self.extensions.lock().unwrap_or_else(|p| p.into_inner()).clone()
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
        for server in self.mcp_servers.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            server.notify_context(snapshot.as_ref());
        }
        for plugin in self.plugins.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            plugin.notify_context(snapshot.clone());
        }
    }

    /// The system-prompt contributions of this scope's servers, in registration order.
    pub fn system_prompts(&self) -> Vec<crate::registry::SystemPrompt> {
        self.registry.system_prompts()
    }

    /// The MCP servers connected in this scope.
    pub fn mcp_servers(&self) -> Vec<Arc<crate::mcp_bridge::McpServer>> {
        self.mcp_servers.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The WASM plugins loaded into this scope.
    pub fn plugins(&self) -> Vec<Arc<WasmPlugin>> {
        self.plugins.lock().unwrap_or_else(|p| p.into_inner()).clone()
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
