//! The door's administration face: what a front end asks of the home besides
//! mounting a project, as typed results — the kept approvals listed with why
//! each no longer applies, revoked, and kept without a prompt for a tool of a
//! mounted project (`clat approvals list | revoke | allow`; an embedder's
//! settings screen alike), and the tool names known without starting
//! anything (shell completion).

use std::path::Path;

use super::{Platform, PlatformError, Project};
use crate::contract::Effect;
use crate::policy::approvals::{self, ApprovalMemory, ApprovalStore, StoredApproval};
use crate::policy::permissions::Remember;

/// A kept approval, and why it no longer applies when it does not (its
/// server or plugin is configured otherwise now).
#[derive(Debug, Clone)]
pub struct KeptApproval {
    /// What it allows: the project, who asked, the tool or extension, up to which effect, bound to what.
    pub approval: StoredApproval,
    /// Why it no longer applies, if it does not.
    pub stale: Option<String>,
}

/// Why `Project::allow` kept nothing.
#[derive(Debug, thiserror::Error)]
pub enum AllowError {
    /// The name names no tool of the project.
    #[error(transparent)]
    Name(#[from] super::ToolNameError),
    /// The tool takes no kept approval of the agent's (it is not registered).
    #[error("{0} is not registered")]
    NotRegistered(String),
    /// The approvals could not be kept.
    #[error(transparent)]
    Home(#[from] crate::home::HomeError),
}

impl Platform {
    /// Every tool name known without starting or contacting anything, each
    /// with who offers it: CLAT's native tools (`native`), and the tools each
    /// MCP server (`server NAME`) or installed plugin (`plugin NAME`) offered
    /// when it last started or was installed (its kept listing) — hints, as
    /// shell completion offers them.
    pub fn known_tool_names(&self) -> Vec<(String, String)> {
        let native = crate::native::NATIVE_TOOL_NAMES.iter().map(|n| ("native".to_string(), n.to_string()));
        let installed = crate::supply::packages::PackageStore::new(&self.home).list().unwrap_or_default();
        let installed = installed.iter().map(|p| (p.manifest.name.clone(), p.identity())).collect();
        native.chain(crate::home::listings::all_tools(&self.home, &installed)).collect()
    }

    /// Every project's kept approvals, each with why it is stale, judged
    /// against what is configured now; `project` (canonical) adds that
    /// project's own approved servers to what counts as configured.
    pub fn approvals(&self, project: Option<&Path>) -> Result<Vec<KeptApproval>, PlatformError> {
        let current = self.configured_identities(project);
        let kept = approvals::list(&self.home)?;
        Ok(kept.into_iter().map(|approval| KeptApproval { stale: approval.stale(&current), approval }).collect())
    }

    /// Forget the kept approvals of `project` (canonical; `None`: every
    /// project's) that concern `name` — a tool, or a server or plugin (`srv`,
    /// `mcp:srv`) — or all of them; how many were forgotten.
    pub fn revoke_approvals(&self, project: Option<&Path>, name: Option<&str>) -> Result<usize, PlatformError> {
        Ok(approvals::revoke(&self.home, project, name)?)
    }
}

impl Project {
    /// Keep an approval of `tool` (its registered name, or its own name when
    /// only one tool has it) for the agent's calls in this project, as
    /// answering "always for this tool" at its prompt would: bound to what its
    /// server or plugin is now, up to its effect. Waits for the extensions
    /// (at most the initial surface) and freezes the registry to learn that.
    /// The tool's registered name, its effect, and the approval kept.
    pub async fn allow(&self, tool: &str) -> Result<(String, Effect, Option<StoredApproval>), AllowError> {
        self.wait_for_extensions(crate::limits::INITIAL_SURFACE_WAIT).await;
        self.freeze();
        let registered = self.resolve_tool(tool)?;
        let scope = self.scope();
        let (key, effect) = scope
            .registry()
            .agent_approval(&registered)
            .ok_or_else(|| AllowError::NotRegistered(registered.clone()))?;
        let store = ApprovalStore::open(scope.home(), scope.root())?;
        store.remember(&key, effect, Remember::Tool)?;
        let kept = approvals::list(scope.home())?;
        let approval = kept.into_iter().rev().find(|a| {
            a.project == scope.root() && a.tool.as_deref() == Some(&registered) && a.asked_by == approvals::AGENT
        });
        Ok((registered, effect, approval))
    }
}
