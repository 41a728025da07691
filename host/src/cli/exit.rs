//! The command line's outcomes: exit codes (documented in the README) and
//! `Failure`, an error with its exit code and the `kind` that `--json`
//! prints, with the mapping from every library error to both.

use std::process::ExitCode;

use crate::platform::{AllowError, AuthoringError, PlatformError, PluginAdminError, ServerAdminError, ToolNameError};
use crate::{CallError, EditError, HomeError, OciError, PackageError, RegistryError, ScopeError};

/// Exit codes (documented in the README).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success.
    Ok = 0,
    /// The tool ran and returned `isError`.
    ToolError = 1,
    /// Usage or configuration error (bad arguments, unknown tool, unwritable home, malformed files).
    Usage = 2,
    /// The project is not trusted.
    Untrusted = 3,
    /// The permission pipeline denied the call.
    Denied = 4,
    /// Internal error (a tool's implementation failed).
    Internal = 5,
    /// The call timed out or was cancelled.
    Interrupted = 6,
    /// `clat mcp` / `clat mcp get`: a configured MCP server failed (its status says why).
    ServerFailed = 7,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// A failure with its exit code and an error kind for `--json`.
pub struct Failure {
    pub exit: Exit,
    pub kind: &'static str,
    pub message: String,
}

impl Failure {
    pub fn new(exit: Exit, kind: &'static str, message: impl Into<String>) -> Self {
        Failure { exit, kind, message: message.into() }
    }

    /// A file or setting that cannot be used (exit 2, kind `configuration`).
    pub fn configuration(message: impl Into<String>) -> Self {
        Failure::new(Exit::Usage, "configuration", message)
    }
}

impl From<HomeError> for Failure {
    fn from(e: HomeError) -> Self {
        Failure::new(Exit::Usage, "configuration", e.to_string())
    }
}

impl From<ScopeError> for Failure {
    fn from(e: ScopeError) -> Self {
        match e {
            ScopeError::Untrusted { .. } => Failure::new(Exit::Untrusted, "untrusted", e.to_string()),
            ScopeError::Trust(t) => t.into(),
            ScopeError::Project { .. } => Failure::new(Exit::Usage, "configuration", e.to_string()),
            ScopeError::Registration(_) => Failure::new(Exit::Internal, "internal", e.to_string()),
        }
    }
}

impl From<PackageError> for Failure {
    fn from(e: PackageError) -> Self {
        match e {
            PackageError::Io { .. } => Failure::new(Exit::Internal, "internal", e.to_string()),
            PackageError::Home(t) => t.into(),
            PackageError::NotGranted { .. } => Failure::new(Exit::Denied, "not-granted", e.to_string()),
            _ => Failure::new(Exit::Usage, "package", e.to_string()),
        }
    }
}

impl From<AuthoringError> for Failure {
    fn from(e: AuthoringError) -> Self {
        match e {
            AuthoringError::Io { .. } => Failure::new(Exit::Internal, "internal", e.to_string()),
            AuthoringError::BuildFailed { .. } | AuthoringError::MissingToolchain { .. } => {
                Failure::new(Exit::Usage, "build", e.to_string())
            }
            _ => Failure::new(Exit::Usage, "package", e.to_string()),
        }
    }
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Self {
        let (exit, kind) = match &e {
            CallError::UnknownTool(_) => (Exit::Usage, "unknown_tool"),
            CallError::InvalidArguments { .. } => (Exit::Usage, "invalid_arguments"),
            CallError::Denied { .. } => (Exit::Denied, "denied"),
            CallError::Cancelled { .. } => (Exit::Interrupted, "cancelled"),
            CallError::TimedOut { .. } => (Exit::Interrupted, "timed_out"),
            CallError::Failed { .. } => (Exit::Internal, "failed"),
            CallError::Withdrawn { .. } => (Exit::Internal, "withdrawn"),
            CallError::Quarantined { .. } => (Exit::Denied, "quarantined"),
        };
        let message = match &e {
            // The user is shown what changed; a model (`clat serve`, host services) only that something did.
            CallError::Quarantined { changes, .. } => format!("{e} (changed: {})", changes.join("; ")),
            _ => e.to_string(),
        };
        Failure::new(exit, kind, message)
    }
}

/// A name that names no tool of the project (`Project::resolve_tool`).
impl From<ToolNameError> for Failure {
    fn from(e: ToolNameError) -> Self {
        match e {
            ToolNameError::ExtensionDown { .. } => Failure::new(Exit::ServerFailed, "extension_failed", e.to_string()),
            ToolNameError::Ambiguous { .. } | ToolNameError::Unknown { .. } => {
                Failure::new(Exit::Usage, "unknown_tool", e.to_string())
            }
        }
    }
}

/// `clat approvals allow`: what kept nothing.
impl From<AllowError> for Failure {
    fn from(e: AllowError) -> Self {
        match e {
            AllowError::Name(name) => name.into(),
            AllowError::NotRegistered(_) => Failure::new(Exit::Usage, "unknown_tool", e.to_string()),
            AllowError::Home(home) => home.into(),
        }
    }
}

/// The front door's errors: each as its part's.
impl From<PlatformError> for Failure {
    fn from(e: PlatformError) -> Self {
        match e {
            PlatformError::Home(t) => t.into(),
            PlatformError::Mount(s) => s.into(),
            PlatformError::Model(m) => Failure::new(Exit::Usage, "configuration", m.to_string()),
        }
    }
}

/// `clat serve`: why serving stopped short.
impl From<crate::ServeError> for Failure {
    fn from(e: crate::ServeError) -> Self {
        match e {
            crate::ServeError::Options(_) => Failure::new(Exit::Usage, "usage", e.to_string()),
            crate::ServeError::Platform(p) => p.into(),
            crate::ServeError::Session(_) => Failure::new(Exit::Usage, "protocol", e.to_string()),
            crate::ServeError::Internal(_) => Failure::new(Exit::Internal, "internal", e.to_string()),
        }
    }
}

/// `clat plugin …`: what the plugins' administration refused.
impl From<PluginAdminError> for Failure {
    fn from(e: PluginAdminError) -> Self {
        match e {
            PluginAdminError::Package(package) => package.into(),
            PluginAdminError::Home(home) => home.into(),
            PluginAdminError::Authoring(authoring) => authoring.into(),
            PluginAdminError::Unreadable(_) => Failure::new(Exit::Usage, "package", e.to_string()),
            PluginAdminError::Oci(oci) => {
                let kind = if matches!(oci, OciError::Reference(_)) { "usage" } else { "registry" };
                Failure::new(Exit::Usage, kind, crate::redact::redact(&oci.to_string()))
            }
            PluginAdminError::NotThisPlugin(_) => Failure::new(Exit::Usage, "registry", e.to_string()),
            PluginAdminError::Usage(_) => Failure::new(Exit::Usage, "usage", e.to_string()),
            PluginAdminError::Internal(_) => Failure::new(Exit::Internal, "internal", e.to_string()),
        }
    }
}

/// `clat mcp …`: what the servers' administration refused.
impl From<ServerAdminError> for Failure {
    fn from(e: ServerAdminError) -> Self {
        match e {
            ServerAdminError::Edit(edit) => edit.into(),
            ServerAdminError::Home(home) => home.into(),
            ServerAdminError::Configuration(_) => Failure::configuration(e.to_string()),
            ServerAdminError::Usage(_) => Failure::new(Exit::Usage, "usage", e.to_string()),
            ServerAdminError::Registry(registry) => {
                let kind = if matches!(registry, RegistryError::Usage(_)) { "usage" } else { "registry" };
                Failure::new(Exit::Usage, kind, crate::redact::redact(&registry.to_string()))
            }
            ServerAdminError::RegistryEntry(_) => Failure::new(Exit::Usage, "registry", e.to_string()),
            ServerAdminError::OAuth(_) => Failure::new(Exit::ServerFailed, "oauth", e.to_string()),
        }
    }
}

/// `clat mcp add | remove | enable | disable`: what refused the edit of `mcp.json`.
impl From<EditError> for Failure {
    fn from(e: EditError) -> Self {
        match e {
            EditError::Home(t) => t.into(),
            _ => Failure::new(Exit::Usage, "configuration", e.to_string()),
        }
    }
}
