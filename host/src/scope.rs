//! The trusted project scope. `ProjectScope::mount` checks trust before
//! anything is spawned or contacted, then builds the scope's one registry
//! (native tools now; MCP servers and WASM plugins join through the startup
//! worker). Runs start from the scope; the first run freezes the registry,
//! which never thaws within the scope.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::contract::ContextSnapshot;
use crate::native::fence::PathFence;
use crate::native::process::{ProcessService, SandboxPolicy};
use crate::native::{NATIVE_TOOL_NAMES, NativeEnv, register_native_tools};
use crate::registry::Registry;
use crate::run::{RunBuilder, RunContext};
use crate::sampling::{ModelProvider, OfflineProvider};
use crate::services::HostServices;
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
}

/// A mounted, trusted project.
pub struct ProjectScope {
    home: ClatHome,
    root: PathBuf,
    session_id: String,
    registry: Arc<Registry>,
    services: Arc<HostServices>,
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
        Ok(ProjectScope { home: home.clone(), root, session_id, registry, services })
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

    /// Start a run. The first run freezes the registry.
    pub fn start_run(&self, builder: RunBuilder) -> RunContext {
        self.registry.freeze();
        builder.start()
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
