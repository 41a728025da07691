//! The door's administration face for MCP servers, [`Platform::servers`]:
//! the user's `mcp.json` (add, remove, enable, disable, show, list, an entry
//! checked as the file would read it), a project's `.mcp.json` (an entry
//! added to it, the file approved with the variables it may read), an entry
//! found in the MCP Registry, OAuth logins, and the acceptance of a server's
//! changed tool definitions. Each returns what it did as a typed result, for
//! `clat mcp` (or an embedder) to show; nothing here starts a server.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clat_mcp::auth::{Authorizer, Browser};
use clat_mcp::config::EntryTransport;
use serde_json::{Value, json};

use super::Platform;
use crate::extension::Login;
use crate::home::trust::canonical_project;
use crate::home::{ClatHome, HomeError};
use crate::mcp::config_file::{EditError, McpConfigFile, masked_entry};
use crate::mcp::from_registry::{self, RegistryError, RegistryServer};
use crate::mcp::project_servers;
use crate::policy::pins::Quarantined;

/// Why an administration of servers did nothing.
#[derive(Debug, thiserror::Error)]
pub enum ServerAdminError {
    /// `mcp.json` (or a project's `.mcp.json`) refused the edit.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// A home document could not be read or written, or the project is missing.
    #[error(transparent)]
    Home(#[from] HomeError),
    /// A file or an entry cannot be used as it is.
    #[error("{0}")]
    Configuration(String),
    /// What was asked cannot be done as asked.
    #[error("{0}")]
    Usage(String),
    /// The MCP Registry could not be asked, or its answer used.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The registry's document yields an entry CLAT would refuse.
    #[error("{0}")]
    RegistryEntry(String),
    /// An OAuth login or logout failed.
    #[error("{0}")]
    OAuth(String),
}

/// Where `Servers::add` keeps an entry.
#[derive(Debug, Clone)]
pub enum ServerScope {
    /// The home's `mcp.json`.
    User,
    /// The `.mcp.json` of the project at this directory (approved at once
    /// when it was approved before, since the user wrote it).
    Project(PathBuf),
}

/// What `Servers::add` did.
#[derive(Debug, Clone)]
pub struct AddedServer {
    /// The file the entry is in.
    pub file: PathBuf,
    /// A project's file: whether it is approved as it now is (`None`: the user's `mcp.json`).
    pub approved: Option<bool>,
}

/// One entry of the user's `mcp.json`, as `Servers::list` shows it.
#[derive(Debug, Clone)]
pub struct ListedServer {
    /// Its name.
    pub name: String,
    /// `stdio` or `http`.
    pub transport: &'static str,
    /// Its command line or URL, redacted.
    pub target: String,
    /// Whether it starts.
    pub enabled: bool,
    /// `NAME  stdio|http  COMMAND|URL`, redacted.
    pub line: String,
}

/// The user's `mcp.json`, nothing started.
#[derive(Debug, Clone)]
pub struct ServerList {
    /// The file.
    pub file: PathBuf,
    /// Its usable entries.
    pub servers: Vec<ListedServer>,
    /// Why its other entries cannot be used.
    pub errors: Vec<String>,
}

/// A project's `.mcp.json`, nothing started.
#[derive(Debug, Clone)]
pub struct ProjectServerList {
    /// The file.
    pub file: PathBuf,
    /// `approved`, `new` (never approved) or `changed` (approved once, with other content).
    pub approval: &'static str,
    /// Its entries.
    pub servers: Vec<ListedServer>,
    /// Why the file or some of its entries cannot be used.
    pub errors: Vec<String>,
}

/// One server of an approved project file.
#[derive(Debug, Clone)]
pub struct ApprovedServer {
    /// Its name.
    pub name: String,
    /// `NAME  stdio|http  COMMAND|URL`, redacted.
    pub line: String,
    /// The lines of its review: everything that decides what it runs and sends.
    pub review: Vec<String>,
    /// The variables of the user's environment it references.
    pub variables: Vec<String>,
    /// Those of them the project may not read.
    pub not_allowed: Vec<String>,
}

/// What `Servers::approve_project` approved.
#[derive(Debug, Clone)]
pub struct ProjectApproval {
    /// The project's `.mcp.json`.
    pub file: PathBuf,
    /// The digest of its content, as approved.
    pub digest: String,
    /// The variables the project's entries may read.
    pub allowed: BTreeSet<String>,
    /// Its servers.
    pub servers: Vec<ApprovedServer>,
    /// What allows the variables not allowed, when some are referenced.
    pub hint: Option<String>,
}

/// What `Servers::accept` accepted.
#[derive(Debug, Clone)]
pub struct AcceptedTools {
    /// Each tool whose listed definition became its pin, with what had changed.
    pub accepted: Vec<Quarantined>,
    /// How many kept approvals of the whole server were forgotten in the project.
    pub approvals_revoked: usize,
}

/// What `Servers::from_registry` is asked.
#[derive(Debug, Clone, Default)]
pub struct RegistryRequest {
    /// `SERVER[@VERSION]` (no version: the latest).
    pub reference: String,
    /// The registry's base URL (default: `$CLAT_MCP_REGISTRY`, else the official one).
    pub registry: Option<String>,
    /// Which of its ways to run: `npm`, `pypi`, `oci` or `remote` (default: the first CLAT can run).
    pub via: Option<String>,
}

/// The administration of MCP servers ([`Platform::servers`]).
pub struct Servers<'p> {
    home: &'p ClatHome,
}

impl Platform {
    /// The administration of the user's and the projects' MCP servers.
    pub fn servers(&self) -> Servers<'_> {
        Servers { home: &self.home }
    }
}

impl Servers<'_> {
    /// The user's `mcp.json`.
    pub fn config_file(&self) -> PathBuf {
        self.home.path().join(crate::mcp::MCP_CONFIG_FILE)
    }

    /// `entry` checked as `mcp.json` would read it under `name`.
    pub fn check_entry(&self, name: &str, entry: &Value) -> Result<(), ServerAdminError> {
        let usage = |m: String| ServerAdminError::Usage(m);
        if !entry.is_object() {
            return Err(usage(
                "the entry must be a JSON object, e.g. '{\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}'".into(),
            ));
        }
        let document = json!({ name: entry }).to_string();
        let checked = clat_mcp::config::parse_config("the entry", &document, &crate::mcp::ENTRY_TIMEOUT_BOUNDS)
            .map_err(|e| usage(e.to_string()))?;
        match checked.errors.first() {
            Some(error) => Err(usage(error.to_string())),
            None => Ok(()),
        }
    }

    /// Keep `entry` as server `name` in `scope` (`force`: replacing one of that name).
    pub fn add(
        &self,
        scope: &ServerScope,
        name: &str,
        entry: Value,
        force: bool,
    ) -> Result<AddedServer, ServerAdminError> {
        match scope {
            ServerScope::User => {
                McpConfigFile::new(self.home).add(name, entry, force)?;
                Ok(AddedServer { file: self.config_file(), approved: None })
            }
            ServerScope::Project(dir) => {
                let (file, approved) = self.add_to_project(dir, name, entry, force)?;
                Ok(AddedServer { file, approved: Some(approved) })
            }
        }
    }

    /// The entry goes into the project's `.mcp.json` (created in Claude Code's
    /// shape). The user wrote it, so the file is approved as it now is — but
    /// only when it was approved before (or did not exist): a file holding
    /// servers never approved stays unapproved. The file, and whether it is approved.
    fn add_to_project(
        &self,
        dir: &Path,
        name: &str,
        entry: Value,
        force: bool,
    ) -> Result<(PathBuf, bool), ServerAdminError> {
        let home = self.home;
        let root = canonical_project(dir)?;
        let configuration = |e: std::io::Error| ServerAdminError::Configuration(e.to_string());
        let before = project_servers::read(&root).map_err(configuration)?;
        let was_approved = match &before {
            None => true,
            Some(file) => project_servers::approval(home, &root, file)? == project_servers::Approval::Approved,
        };
        McpConfigFile::of_project(home, &root).add(name, entry, force)?;
        let path = root.join(project_servers::PROJECT_MCP_FILE);
        let after = project_servers::read(&root).map_err(configuration)?;
        let approved = match (&after, was_approved) {
            (Some(file), true) => {
                project_servers::approve(home, &root, file, None)?;
                true
            }
            _ => false,
        };
        Ok((path, approved))
    }

    /// The entry the MCP Registry gives for `request` under `name`, checked as
    /// `mcp.json` would read it; nothing is written (`add` keeps it).
    pub async fn from_registry(
        &self,
        name: &str,
        request: &RegistryRequest,
    ) -> Result<RegistryServer, ServerAdminError> {
        let (server, version) = from_registry::parse_reference(&request.reference)?;
        let via = match request.via.as_deref() {
            None => None,
            Some(text) => Some(
                from_registry::Via::parse(text)
                    .ok_or_else(|| ServerAdminError::Usage(format!("--via {text:?}: give npm, pypi, oci or remote")))?,
            ),
        };
        let base = from_registry::registry_base(request.registry.as_deref())?;
        let document = from_registry::fetch(&base, &server, &version).await?;
        let found = from_registry::entry_from_document(base.as_str(), name, Some((&server, &version)), &document, via)?;
        // A document that yields an entry CLAT would refuse adds nothing.
        self.check_entry(name, &found.entry).map_err(|e| {
            ServerAdminError::RegistryEntry(format!("{} yields an entry CLAT cannot use: {e}", found.source.server))
        })?;
        Ok(found)
    }

    /// Remove server `name` from `mcp.json`.
    pub fn remove(&self, name: &str) -> Result<(), ServerAdminError> {
        Ok(McpConfigFile::new(self.home).remove(name)?)
    }

    /// Start server `name` at the next mount, or keep it without starting it.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), ServerAdminError> {
        Ok(McpConfigFile::new(self.home).set_enabled(name, enabled)?)
    }

    /// Server `name`'s entry as `mcp.json` holds it, every env and header
    /// value (and an OAuth client secret) masked unless `show_secrets`.
    pub fn entry(&self, name: &str, show_secrets: bool) -> Result<Option<Value>, ServerAdminError> {
        let entry = McpConfigFile::new(self.home).entry(name)?;
        Ok(entry.map(|e| masked_entry(&e, show_secrets)))
    }

    /// The configured server's name nearest to `written`, when one is close enough to be what was meant.
    pub fn nearest(&self, written: &str) -> Option<String> {
        let list = self.list().ok()?;
        crate::names::nearest(written, list.servers.iter().map(|s| (s.name.as_str(), vec![s.name.as_str()])))
            .map(str::to_string)
    }

    /// The servers of the project at `dir`'s `.mcp.json`, with whether it is approved; `None` without one.
    pub fn list_project(&self, dir: &Path) -> Result<Option<ProjectServerList>, ServerAdminError> {
        let root = canonical_project(dir)?;
        let configuration = |e: std::io::Error| ServerAdminError::Configuration(e.to_string());
        let Some(file) = project_servers::read(&root).map_err(configuration)? else { return Ok(None) };
        let approval = match project_servers::approval(self.home, &root, &file)? {
            project_servers::Approval::Approved => "approved",
            project_servers::Approval::New => "new",
            project_servers::Approval::Changed => "changed",
        };
        let (servers, errors) = match project_servers::servers_of(&file) {
            Ok(entries) => (entries.iter().map(|(name, entry)| listed(name, entry)).collect(), Vec::new()),
            Err(why) => (Vec::new(), vec![why]),
        };
        Ok(Some(ProjectServerList { file: file.path, approval, servers, errors }))
    }

    /// The user's configured servers as `mcp.json` holds them.
    pub fn list(&self) -> Result<ServerList, ServerAdminError> {
        let file = self.config_file();
        let config = crate::mcp::sources::read_config(&file, &crate::mcp::ENTRY_TIMEOUT_BOUNDS)
            .map_err(|e| ServerAdminError::Configuration(e.to_string()))?;
        let servers = config.servers.iter().map(|(name, entry)| listed(name, entry)).collect();
        Ok(ServerList { file, servers, errors: config.errors.iter().map(ToString::to_string).collect() })
    }

    /// Approve the servers of the `.mcp.json` of the project at `dir` as the
    /// file is now, allowing its entries to read the variables `allow` names.
    pub fn approve_project(&self, dir: &Path, allow: Vec<String>) -> Result<ProjectApproval, ServerAdminError> {
        let root = canonical_project(dir)?;
        let configuration = ServerAdminError::Configuration;
        let Some(file) = project_servers::read(&root).map_err(|e| configuration(e.to_string()))? else {
            return Err(configuration(format!("{} has no {}", root.display(), project_servers::PROJECT_MCP_FILE)));
        };
        if let Some(bad) = allow.iter().find(|n| !clat_mcp::config::is_variable_name(n)) {
            return Err(ServerAdminError::Usage(format!("--allow {bad:?}: give a variable's name")));
        }
        let allowed: BTreeSet<String> = allow.into_iter().collect();
        let entries = project_servers::servers_of(&file).map_err(configuration)?;
        project_servers::approve(self.home, &root, &file, Some(&allowed))?;
        let servers = entries
            .iter()
            .map(|(name, entry)| ApprovedServer {
                name: name.clone(),
                line: project_servers::entry_line(name, entry),
                review: project_servers::server_review(name, entry, &allowed),
                variables: entry.variables().into_iter().map(|v| v.to_string()).collect(),
                not_allowed: project_servers::unallowed_variables(entry, &allowed),
            })
            .collect();
        let hint = project_servers::allow_hint(&entries, &allowed);
        Ok(ProjectApproval { file: file.path, digest: file.digest, allowed, servers, hint })
    }

    /// The OAuth of the configured HTTP server `name`, with `browser` to log in with.
    fn oauth(&self, name: &str, browser: Option<Arc<dyn Browser>>) -> Result<Authorizer, ServerAdminError> {
        let config = ServerAdminError::Configuration;
        let entry = crate::mcp::sources::user_entry(self.home, name, &|k| std::env::var(k).ok())
            .map_err(|e| config(e.to_string()))?;
        match crate::mcp::credentials::authorizer(self.home, name, &entry, browser) {
            Some(Ok(auth)) => Ok(auth),
            Some(Err(e)) => Err(config(e.to_string())),
            None if matches!(entry.transport, EntryTransport::Stdio { .. }) => {
                Err(config(format!("{name} is a stdio server; OAuth is for HTTP servers")))
            }
            None => Err(config(format!("{name} sends its own Authorization header (mcp.json); OAuth is off for it"))),
        }
    }

    /// Log in to the HTTP server `name` through `browser`; the token is kept.
    pub async fn login(&self, name: &str, browser: Arc<dyn Browser>) -> Result<Login, ServerAdminError> {
        let auth = self.oauth(name, Some(browser))?;
        let status = auth.login().await.map_err(|e| {
            ServerAdminError::OAuth(crate::redact::redact(&format!("logging in to {name} failed: {e}")))
        })?;
        Ok(crate::mcp::sources::login(status))
    }

    /// Forget the HTTP server `name`'s OAuth token; whether there was one.
    pub fn logout(&self, name: &str) -> Result<bool, ServerAdminError> {
        self.oauth(name, None)?.logout().map_err(|e| ServerAdminError::OAuth(e.to_string()))
    }

    /// Accept the changed definitions of server `name`'s quarantined tools in
    /// the project at `dir` (only `tool`'s, when named): each is pinned as
    /// listed now, and the project's kept approvals of the whole server are
    /// forgotten (a changed tool inherits no approval). Nothing accepted is a
    /// usage error naming what to look at.
    pub fn accept(&self, dir: &Path, name: &str, tool: Option<&str>) -> Result<AcceptedTools, ServerAdminError> {
        let root = canonical_project(dir)?;
        let accepted = crate::policy::pins::accept(self.home, &root, name, tool)
            .map_err(|e| ServerAdminError::Configuration(e.to_string()))?;
        if accepted.is_empty() {
            let which = match tool {
                Some(t) => format!("no quarantined tool {t:?}"),
                None => "no quarantined tool".to_string(),
            };
            let message = format!("{name} has {which} in {} (`clat mcp get {name}` lists its tools)", root.display());
            return Err(ServerAdminError::Usage(message));
        }
        let tools: Vec<String> = accepted.iter().map(|q| q.tool.clone()).collect();
        if let Err(e) = crate::home::listings::accepted(self.home, name, &tools) {
            tracing::debug!("cannot count the accepted tools in {name}'s kept listing: {e}");
        }
        let approvals_revoked =
            crate::policy::approvals::revoke_extension_wide(self.home, &root, &format!("mcp:{name}"))?;
        Ok(AcceptedTools { accepted, approvals_revoked })
    }
}

/// One entry as a listing shows it.
fn listed(name: &str, entry: &clat_mcp::config::ServerEntry) -> ListedServer {
    let (transport, target) = match &entry.transport {
        EntryTransport::Stdio { command, args, .. } => {
            let words: Vec<&str> = std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)).collect();
            ("stdio", words.join(" "))
        }
        EntryTransport::Http { url, .. } => ("http", url.clone()),
    };
    ListedServer {
        name: name.to_string(),
        transport,
        target: crate::redact::redact(&target),
        enabled: entry.enabled,
        line: project_servers::entry_line(name, entry),
    }
}
