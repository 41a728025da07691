//! The front door: what an agent that embeds the platform uses, and all the
//! `clat` command line uses to reach a project. [`Platform`] opens CLAT's
//! home; [`Platform::mount`] mounts a project behind the trust gate (nothing
//! is spawned or contacted before it); the [`Project`] starts its WASM plugins
//! and MCP servers, lists the tools a model may call (native, WASM and MCP in
//! one registry, each with its schema and effect), and starts [`Run`]s; a run
//! calls tools through the one permission pipeline under its mode, asks its
//! [`Approver`](crate::Approver) and [`UserAsker`](crate::UserAsker), reports to its [`EventSink`](crate::EventSink), and can be
//! cancelled. Closing the project tears every extension down in order.
//!
//! ```
//! use clat_host::{MountOptions, PermissionMode, Platform, RunOptions};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let (home, project) = (dir.path().join("home"), dir.path().join("project"));
//! # std::fs::create_dir_all(&project)?;
//! # std::fs::write(project.join("README.md"), "# Demo\n")?;
//! let platform = Platform::open(Some(&home))?; // None: $CLAT_HOME, else ~/.clat
//! platform.trust(&project)?; // as `clat trust` does; an untrusted project is never mounted
//! let project = platform.mount(&project, MountOptions::default())?;
//! project.start_extensions(); // in the background: the agent is interactive at once
//! let run = project.start_run(RunOptions { mode: PermissionMode::Ask, ..RunOptions::default() }).await?;
//! for tool in project.tools() {
//!     println!("{} ({}): {}", tool.name, tool.effect, tool.description);
//! }
//! let output = run.call("list_files", serde_json::json!({})).await?;
//! assert!(output.joined_text().contains("README.md"));
//! run.finish();
//! project.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! A runnable version is `host/examples/agent.rs`; the rest of the crate's
//! modules are its parts, public for the command line and the tests. What a
//! model is offered of a project's tools, and the search over the rest, is
//! `discovery.rs` (its optional enrichment by the session model,
//! `enrichment.rs`); a mounted project is `project.rs`'s, a run `run.rs`'s.

#![warn(missing_docs)]

mod admin;
mod authoring;
pub mod discovery;
pub mod enrichment;
mod plugins;
mod project;
mod run;
mod servers;

pub use admin::{AllowError, KeptApproval};
pub use authoring::{
    Authoring, AuthoringError, Built, CASES_FILE, Case, DIST_DIR, Expect, Language, Mismatch, NewProject, Outcome,
    PackageCheck, PackageChecks, PluginTrial, SdkFileChange, SdkFileUpdate, SdkUpdate, Texts, WasmCompiler, judge,
};
pub use plugins::{
    GrantQuestion, InstallRequest, InstalledPlugin, PluginAdminError, Plugins, PushedPlugin, UpdateCheck,
};
pub use project::{Project, ToolNameError};
pub use run::{Run, RunOptions};
pub use servers::{
    AcceptedTools, AddedServer, ApprovedServer, ListedServer, ProjectApproval, ProjectServerList, RegistryRequest,
    ServerAdminError, ServerList, ServerScope, Servers,
};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::extension::StartFilter;
use crate::home::trust::TrustStore;
use crate::home::{ClatHome, HomeError};
use crate::mcp::inputs::Input as ServerInput;
use crate::mcp::project_servers::ProjectServersReview;
use crate::native::process::SandboxPolicy;
use crate::policy::identity::Identity;
use crate::scope::{ProjectScope, ScopeError, ScopeOptions};
use crate::services::model::ModelConfigError;
use crate::services::sampling::ModelProvider;
use crate::wasm::cache::CompileObserver;

/// Why the platform could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// CLAT's home or one of its documents (trust, kept approvals, …) could not be found, read or written, or a
    /// project is missing.
    #[error(transparent)]
    Home(#[from] HomeError),
    /// The project could not be mounted: it is not trusted (nothing was started), or cannot be opened.
    #[error(transparent)]
    Mount(#[from] ScopeError),
    /// The session model's configuration (`$CLAT_HOME/config.json`, the environment) is malformed.
    #[error(transparent)]
    Model(#[from] ModelConfigError),
}

/// CLAT's home, opened: where trust, installed plugins, `mcp.json`, kept
/// approvals and the compiled-component cache live.
#[derive(Debug, Clone)]
pub struct Platform {
    home: ClatHome,
}

impl Platform {
    /// Open the home at `home`, else `$CLAT_HOME`, else `~/.clat` (created on first write).
    pub fn open(home: Option<&Path>) -> Result<Platform, PlatformError> {
        Ok(Platform { home: ClatHome::resolve(home)? })
    }

    /// The home's directory.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The home, for the parts of the crate that work on it directly.
    pub(crate) fn clat_home(&self) -> &ClatHome {
        &self.home
    }

    /// The session model the home configures (`config.json`, `CLAT_MODEL_*`),
    /// as a provider: the offline model when none is configured.
    pub fn session_model(&self) -> Result<Arc<dyn ModelProvider>, PlatformError> {
        let model = crate::services::model::active_model(&self.home, |k| std::env::var(k).ok())?;
        Ok(crate::services::model::provider_for(model.as_ref())?)
    }

    /// The session model the home configures, as a provider; `None` when none is (the offline model then answers
    /// extensions' sampling, and search enrichment has nobody to ask).
    pub fn configured_model(&self) -> Result<Option<Arc<dyn ModelProvider>>, PlatformError> {
        let model = crate::services::model::active_model(&self.home, |k| std::env::var(k).ok())?;
        match model {
            Some(model) => Ok(Some(crate::services::model::provider_for(Some(&model))?)),
            None => Ok(None),
        }
    }

    /// Record trust for the project at `project`; its canonical root.
    pub fn trust(&self, project: &Path) -> Result<PathBuf, PlatformError> {
        Ok(TrustStore::new(&self.home).trust(project)?)
    }

    /// Mount the project at `project`: refused, with nothing started, unless
    /// it is trusted. Its native tools are registered; its extensions start
    /// when the project is asked to ([`Project::start_extensions`],
    /// [`Project::load_extensions`]).
    pub fn mount(&self, project: &Path, options: MountOptions) -> Result<Project, PlatformError> {
        let env = |k: &str| std::env::var(k).ok();
        let model = crate::services::model::active_model(&self.home, env)?;
        let provider = match options.model {
            Some(provider) => provider,
            None => crate::services::model::provider_for(model.as_ref())?,
        };
        let glm_plan = crate::mcp::glm::coding_plan(model.as_ref(), env);
        let (mut start, mut kept, mut first_use) = (options.start, Vec::new(), crate::scope::FirstUse::default());
        match &start {
            StartFilter::Tools(tools) => start = self.start_for(project, tools, glm_plan.as_ref()),
            StartFilter::Search => (start, kept) = self.start_for_search(project, glm_plan.as_ref()),
            StartFilter::FirstUse(budget_bytes) => {
                let (_, listings, tools) = self.kept_server_tools(project, glm_plan.as_ref());
                let kept_bytes = crate::registry::schema_totals(&tools).size.bytes;
                first_use = crate::scope::FirstUse { budget_bytes: *budget_bytes, listings, kept_bytes };
                start = StartFilter::All;
            }
            _ => {}
        }
        if let Some(questions) = &options.questions {
            self.ask_before_start(project, &start, questions.as_ref());
        }
        let scope_options = ScopeOptions {
            sandbox: options.sandbox,
            provider: Some(provider),
            glm_plan,
            start,
            compile_observer: options.compile_observer,
            default_startup_timeout: options.default_startup_timeout,
            wasm_compiler: options.wasm_compiler,
            first_use,
        };
        let scope = ProjectScope::mount(&self.home, project, scope_options)?;
        Ok(Project { scope: Arc::new(scope), kept })
    }

    /// Before anything of the project at `project` starts: when it is trusted
    /// and its `.mcp.json` is not approved as it is, ask whether its servers
    /// may start (and keep a yes); then ask for each `${input:ID}` of
    /// `mcp.json` not given yet that an entry `start` starts references.
    fn ask_before_start(&self, project: &Path, start: &StartFilter, questions: &dyn MountQuestions) {
        use crate::mcp::project_servers;
        if let Ok(root) = crate::home::trust::canonical_project(project)
            && TrustStore::new(&self.home).is_trusted(&root).unwrap_or(false)
            && let Some((file, review)) = project_servers::pending_review(&self.home, &root)
            && questions.approve_project_servers(&review)
            && let Err(e) = project_servers::approve(&self.home, &root, &file, None)
        {
            questions.notice(&format!("could not keep the approval: {e}"));
        }
        // Both MCP kinds own tools by the same prefix, so either kind asks the filter the same question.
        let wanted = |server: &String| start.wants(crate::extension::ExtensionKind::McpStdio, server);
        let path = self.home.path().join(crate::mcp::MCP_CONFIG_FILE);
        for input in crate::mcp::inputs::referenced(&path) {
            if crate::mcp::inputs::is_given(&input.id) || !input.servers.iter().any(wanted) {
                continue;
            }
            if let Some(value) = questions.input(&input) {
                crate::mcp::inputs::provide(&input.id, value);
            }
        }
    }

    /// What `StartFilter::Tools(tools)` starts in the project at `project`
    /// (`glm_plan`: the session model's, whose pack's servers count as
    /// configured). Short names are looked up in the servers' last listings
    /// (`home/listings.rs`), so a call of one starts only what may have it.
    fn start_for(
        &self,
        project: &Path,
        tools: &[String],
        glm_plan: Option<&crate::mcp::glm::CodingPlan>,
    ) -> StartFilter {
        let external = tools.iter().filter(|t| !crate::native::NATIVE_TOOL_NAMES.contains(&t.as_str()));
        let (mut owners, short): (Vec<String>, Vec<String>) =
            external.cloned().partition(|t| t.starts_with("mcp_") || t.starts_with("wasm_"));
        if short.is_empty() {
            return StartFilter::OwnersOf(owners);
        }
        let root = crate::home::trust::canonical_project(project).ok();
        let current = crate::scope::configured_identities(&self.home, root.as_deref(), glm_plan);
        for name in &short {
            match crate::home::listings::registered_names(&self.home, name, &current) {
                Some(found) => owners.extend(found),
                None => return StartFilter::All,
            }
        }
        StartFilter::PluginsAndOwnersOf(owners)
    }

    /// What `StartFilter::Search` starts in the project at `project`: every
    /// plugin and the servers with no record of a listing under their identity
    /// now; and the tools of the others, from their records, to be searched.
    fn start_for_search(
        &self,
        project: &Path,
        glm_plan: Option<&crate::mcp::glm::CodingPlan>,
    ) -> (StartFilter, Vec<crate::registry::ToolInfo>) {
        let (current, listed, kept) = self.kept_server_tools(project, glm_plan);
        let started = current
            .keys()
            .filter_map(|key| match key.split_once(':') {
                Some(("wasm", plugin)) => Some(plugin.to_string()),
                Some(("mcp", server)) if !listed.contains_key(server) => Some(server.to_string()),
                _ => None,
            })
            .collect();
        (StartFilter::Named(started), kept)
    }

    /// The identities of the extensions configured for `project` now; the
    /// records of the last listing of the servers with one under their
    /// identity now, by server; and those servers' tools as the registry would
    /// list them (those their last start registered: not one quarantined in
    /// the project).
    fn kept_server_tools(
        &self,
        project: &Path,
        glm_plan: Option<&crate::mcp::glm::CodingPlan>,
    ) -> (HashMap<String, Identity>, HashMap<String, crate::home::listings::Listing>, Vec<crate::registry::ToolInfo>)
    {
        let root = crate::home::trust::canonical_project(project).ok();
        let current = crate::scope::configured_identities(&self.home, root.as_deref(), glm_plan);
        let listed = crate::home::listings::current_server_listings(&self.home, &current);
        let mut kept = Vec::new();
        for (server, listing) in &listed {
            for spec in &listing.tools {
                let registered = listing
                    .registered
                    .iter()
                    .find(|r| crate::names::names_tool(crate::names::ExternalKind::Mcp, server, r, &spec.name));
                if let Some(tool) =
                    registered.and_then(|r| crate::registry::Registry::kept_server_tool(server, r, spec))
                {
                    kept.push(tool);
                }
            }
        }
        (current, listed, kept)
    }

    /// The identity of every extension configured or installed now, by key
    /// (`mcp:NAME`, `wasm:NAME`), as a mount of `project` (canonical; none:
    /// no project's own servers) would start them: the session model's GLM
    /// pack counts. Nothing is started or contacted.
    pub fn configured_identities(&self, project: Option<&Path>) -> HashMap<String, Identity> {
        let env = |k: &str| std::env::var(k).ok();
        let model = crate::services::model::active_model(&self.home, env).ok().flatten();
        let glm_plan = crate::mcp::glm::coding_plan(model.as_ref(), env);
        crate::scope::configured_identities(&self.home, project, glm_plan.as_ref())
    }
}

/// How a project is mounted.
#[derive(Clone, Default)]
pub struct MountOptions {
    /// Which extensions start (default: all). `StartFilter::OwnersOf(tools)`
    /// starts only those that can own one of the tools.
    pub start: StartFilter,
    /// The sandbox policy of `run_command` (default: none).
    pub sandbox: SandboxPolicy,
    /// The session model that extensions' sampling requests go to (default:
    /// the one `$CLAT_HOME/config.json` and the environment configure, else
    /// the offline model).
    pub model: Option<Arc<dyn ModelProvider>>,
    /// Told about compilations of WASM plugins that take a while.
    pub compile_observer: Option<Arc<dyn CompileObserver>>,
    /// How long an MCP server that sets no startup timeout of its own (no
    /// `startup_timeout_sec`, no `MCP_TIMEOUT`) may take to connect and list
    /// its tools, its handshake included (default: the spec's 10 s handshake).
    /// Give it when someone watches the start, e.g. `WATCHED_START_TIMEOUT`
    /// as `clat mcp` and `clat tools` do; at most `STARTUP_TIMEOUT_MAX`.
    pub default_startup_timeout: Option<Duration>,
    /// The compiler of WASM plugins (default: the optimizing one;
    /// `WasmCompiler::Baseline` compiles about 5x faster and runs slower, for an
    /// author's edit loop).
    pub wasm_compiler: WasmCompiler,
    /// Who is asked before anything starts, when someone can answer (default:
    /// nobody; a project's unapproved servers are then reported as not
    /// started, and an unset `${input:ID}` stays unset).
    pub questions: Option<Arc<dyn MountQuestions>>,
}

/// What a mount may ask a person before anything starts
/// ([`MountOptions::questions`]). The door decides whether and what to ask,
/// and keeps the answers; this port only shows a question and reads the answer.
pub trait MountQuestions: Send + Sync {
    /// May the servers of a trusted project's `.mcp.json`, new or changed
    /// since it was approved, start? A yes is kept (as `clat mcp approve`).
    fn approve_project_servers(&self, review: &ProjectServersReview) -> bool;
    /// The value of an `${input:ID}` that an entry about to start references;
    /// `None` leaves it unset.
    fn input(&self, input: &ServerInput) -> Option<String>;
    /// Something the person should read (an answer that could not be kept).
    fn notice(&self, _text: &str) {}
}
