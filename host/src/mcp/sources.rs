//! Where a scope's MCP servers come from, and where and how each one runs:
//! `$CLAT_HOME/mcp.json` (user servers run in `$CLAT_HOME`, a relative `cwd`
//! under it, never under the project), a trusted project's `.mcp.json` once
//! its content is approved (`project_servers.rs`; run in the project root),
//! installed `mcp-stdio` packages (run in their read-only artifact
//! directory), and the GLM Coding Plan pack (in memory). A same-named
//! `mcp.json` entry, even a malformed one, wins over a project server, a
//! project server over a package, and a package over a pack server. A server
//! with no `startup_timeout_sec` takes `MCP_TIMEOUT` (milliseconds) when set.
//! Each server carries its identity (`identity.rs`), what kept approvals are
//! bound to. A disabled entry is reported, not started; an entry's `${VAR}`s
//! are expanded from CLAT's environment here, so a missing variable fails only
//! that server, and what they expanded to is redacted like its `env` and
//! header values. Reading the sources starts nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clat_mcp::config::{ConfigError, EntryTransport, McpConfig, ServerEntry, TimeoutBounds, ToolFilter, parse_config};
use clat_mcp::{HttpSpec, StdioSpec, Target};

use super::glm::{CodingPlan, pack_servers};
use crate::extension::{ExtensionKind, ExtensionState, ExtensionStatus};
use crate::home::ClatHome;
use crate::limits::{STARTUP_TIMEOUT_MAX, TOOL_CALL_TIMEOUT};
use crate::policy::identity::Identity;
use crate::supply::packages::{PackageKind, PackageStore};

mod project;

use project::project_entries;

/// The user's MCP server configuration, inside `$CLAT_HOME`.
pub const MCP_CONFIG_FILE: &str = "mcp.json";

/// The largest timeouts an `mcp.json` entry may ask for: never past the
/// startup maximum or the tool-call limit.
pub const ENTRY_TIMEOUT_BOUNDS: TimeoutBounds =
    TimeoutBounds { startup: STARTUP_TIMEOUT_MAX, tool_call: TOOL_CALL_TIMEOUT };

/// The environment variable that sets every server's startup timeout, in
/// milliseconds, where its entry sets none (Claude Code's name and unit).
pub const STARTUP_TIMEOUT_ENV: &str = "MCP_TIMEOUT";

/// `MCP_TIMEOUT` as a duration, within `STARTUP_TIMEOUT_MAX`; `None` when unset.
fn default_startup_timeout(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Duration>, String> {
    let Some(text) = env(STARTUP_TIMEOUT_ENV).filter(|t| !t.trim().is_empty()) else { return Ok(None) };
    let millis: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{STARTUP_TIMEOUT_ENV}={text:?} is not a whole number of milliseconds; it is ignored"))?;
    let timeout = Duration::from_millis(millis);
    if millis == 0 || timeout > STARTUP_TIMEOUT_MAX {
        return Err(format!(
            "{STARTUP_TIMEOUT_ENV}={millis} is outside 1..={} ms (the startup maximum); it is ignored",
            STARTUP_TIMEOUT_MAX.as_millis()
        ));
    }
    Ok(Some(timeout))
}

/// What a server started with `"env_inherit": false` gets of CLAT's
/// environment, besides its configured `env`.
pub const MINIMAL_SERVER_ENV: [&str; 6] = ["PATH", "HOME", "LANG", "TERM", "TMPDIR", "USER"];

/// What an entry asks of its server beyond where it runs.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// How long it may take to connect and list its tools, its handshake
    /// included (at most `STARTUP_TIMEOUT_MAX`); `None`: the spec's bounds
    /// (the 10 s handshake, 30 s per listed page).
    pub startup_timeout: Option<Duration>,
    /// How long one of its tool calls may take (at most the tool-call limit).
    pub tool_timeout: Option<Duration>,
    /// Which of its tools are registered.
    pub tools: ToolFilter,
    /// How its tools are offered under progressive discovery (`always_load`, `defer_loading`).
    pub loading: crate::extension::Loading,
    /// What its diagnostics must never show (besides key shapes): its
    /// configured `env` values, its header values, and what its `${VAR}`s
    /// expanded to.
    pub secrets: Vec<String>,
    /// Where a stdio server's learned era is kept (`eras.rs`); none over HTTP.
    pub eras: Option<super::eras::EraBook>,
}

/// A server the scope can start.
#[derive(Debug, Clone)]
pub struct ConfiguredServer {
    pub name: String,
    pub target: Target,
    pub options: ServerOptions,
    /// What it is: its launch spec or URL as configured, or its package's digest.
    pub identity: Identity,
}

/// The identity of an `mcp.json` (or pack) entry: its command and arguments,
/// or its URL, as written (before `${VAR}` expansion).
pub fn entry_identity(entry: &ServerEntry) -> Identity {
    match &entry.transport {
        EntryTransport::Stdio { command, args, .. } => Identity::stdio(command, args),
        EntryTransport::Http { url, .. } => Identity::http(url),
    }
}

/// The servers a scope knows of.
#[derive(Debug, Default)]
pub struct ServerSet {
    /// The servers that can be started.
    pub servers: Vec<ConfiguredServer>,
    /// Entries that are not started (malformed, disabled, a variable missing,
    /// or replaced by a same-named entry).
    pub statuses: Vec<ExtensionStatus>,
    /// What each name stands for now, started or not (a disabled entry, one
    /// whose variable is missing): the identity kept approvals are held against.
    pub identities: std::collections::BTreeMap<String, Identity>,
}

/// The extension kind a server's target makes.
pub fn target_kind(target: &Target) -> ExtensionKind {
    match target {
        Target::Stdio(_) => ExtensionKind::McpStdio,
        Target::Http(_) => ExtensionKind::McpHttp,
    }
}

/// An HTTP server's OAuth login, if it holds one (never the token).
pub fn target_login(target: &Target) -> Option<crate::extension::Login> {
    match target {
        Target::Http(spec) => spec.auth.as_ref()?.status().map(login),
        Target::Stdio(_) => None,
    }
}

/// The client's login state as an extension status shows it.
pub fn login(status: clat_mcp::auth::AuthStatus) -> crate::extension::Login {
    let clat_mcp::auth::AuthStatus { issuer, client_id, scopes, expires_at, refreshable } = status;
    crate::extension::Login { issuer, client_id, scopes, expires_at, refreshable }
}

fn kind_of(entry: &ServerEntry) -> ExtensionKind {
    match entry.transport {
        EntryTransport::Stdio { .. } => ExtensionKind::McpStdio,
        EntryTransport::Http { .. } => ExtensionKind::McpHttp,
    }
}

/// The kind of a malformed entry: an HTTP server's when it names a `url`.
fn kind_of_error(error: &ConfigError) -> ExtensionKind {
    match error {
        ConfigError::Entry { remote: true, .. } => ExtensionKind::McpHttp,
        _ => ExtensionKind::McpStdio,
    }
}

/// The user's `mcp.json` at `path`, read within its bound; a missing file is an empty configuration.
pub fn read_config(path: &Path, bounds: &TimeoutBounds) -> Result<McpConfig, ConfigError> {
    match crate::home::files::read_config_text(path) {
        Ok(text) => parse_config(&path.display().to_string(), &text, bounds),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            Ok(McpConfig::default())
        }
        Err(e) => Err(ConfigError::Unreadable { file: path.display().to_string(), message: e.to_string() }),
    }
}

/// Read every source of servers; nothing is spawned or contacted. `project`
/// is the trusted project's canonical root, whose `.mcp.json` servers join
/// once approved (`project_servers.rs`); `env` is CLAT's environment, for the
/// entries' variables.
pub fn configured_servers(
    home: &ClatHome,
    project: Option<&Path>,
    glm_plan: Option<&CodingPlan>,
    env: &dyn Fn(&str) -> Option<String>,
) -> ServerSet {
    let mut set = ServerSet::default();
    let failed = |name: &str, kind: ExtensionKind, problem: String| {
        ExtensionStatus::new(name, kind, ExtensionState::Failed, Some(problem))
    };
    let file = home.path().join(MCP_CONFIG_FILE);
    let mut config = match read_config(&file, &ENTRY_TIMEOUT_BOUNDS) {
        Ok(c) => c,
        Err(e) => {
            set.statuses.push(failed("(mcp.json)", ExtensionKind::McpStdio, e.to_string()));
            McpConfig::default()
        }
    };
    // A malformed entry still claims its name: it is the reported failure, and
    // neither a same-named package nor the pack's server (with the key)
    // starts behind the user's back.
    let malformed: std::collections::HashSet<String> = config
        .errors
        .iter()
        .filter_map(|e| match e {
            ConfigError::Entry { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    let project_servers = project.map(|root| project_entries(home, root)).unwrap_or_default();
    let claimed_by_user =
        |name: &str| config.servers.contains_key(name) || malformed.contains(name) || project_servers.claims(name);
    let packages: Vec<_> = PackageStore::new(home)
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.manifest.kind == PackageKind::McpStdio)
        .collect();
    // The GLM Coding Plan pack joins in memory; a same-named user entry or
    // installed package wins over it.
    let mut pack = Vec::new();
    if let Some(plan) = glm_plan {
        pack = pack_servers(plan)
            .into_iter()
            .filter(|(name, _)| !claimed_by_user(name) && !packages.iter().any(|p| &p.manifest.name == name))
            .collect();
    }
    for error in std::mem::take(&mut config.errors) {
        let name = match &error {
            ConfigError::Entry { name, .. } => name.clone(),
            _ => "(mcp.json)".into(),
        };
        let mut status = failed(&name, kind_of_error(&error), error.to_string());
        if packages.iter().any(|p| p.manifest.name == name) {
            status.problems.push(format!(
                "this entry replaces the installed mcp-stdio package {name}, which does not start until the entry \
                 is fixed or removed"
            ));
        }
        set.statuses.push(status);
    }
    for (name, entry) in &config.servers {
        let disabled = format!("disabled in mcp.json (`clat mcp enable {name}` starts it again)");
        add_entry(&mut set, home, (&file, home.path()), name, entry, disabled, env);
    }
    // Every name the user's file claims, well-formed or not, normalized as its tools' names are.
    let user_claims: std::collections::HashMap<String, String> = config
        .servers
        .keys()
        .chain(&malformed)
        .map(|name| (crate::names::normalize_segment(name), name.clone()))
        .collect();
    project_servers.add_to(&mut set, home, &user_claims, env);
    for (name, entry) in &pack {
        set.identities.insert(name.clone(), entry_identity(entry));
        set.servers.push(configured(home, home.path(), name, entry, Vec::new(), entry_identity(entry), env));
    }
    for p in packages {
        if claimed_by_user(&p.manifest.name) {
            if config.servers.contains_key(&p.manifest.name) {
                set.statuses.push(ExtensionStatus::new(
                    &p.manifest.name,
                    ExtensionKind::McpStdio,
                    ExtensionState::Configured,
                    Some("a same-named mcp.json entry replaces this package".into()),
                ));
            }
            continue;
        }
        let spec = StdioSpec {
            command: p.entry_path().display().to_string(),
            args: p.manifest.args.clone(),
            env: p.manifest.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            clear_env: false,
            cwd: p.dir.clone(),
        };
        let options = ServerOptions {
            secrets: p.manifest.env.values().cloned().collect(),
            loading: p.loading.clone(),
            ..Default::default()
        };
        set.identities.insert(p.manifest.name.clone(), p.identity());
        set.servers.push(ConfiguredServer {
            name: p.manifest.name.clone(),
            target: Target::Stdio(spec),
            options,
            identity: p.identity(),
        });
    }
    for server in &mut set.servers {
        if let Target::Stdio(spec) = &server.target {
            server.options.eras = Some(super::eras::EraBook::new(home, &server.name, spec, &server.identity));
        }
    }
    match default_startup_timeout(env) {
        Ok(Some(timeout)) => {
            for server in set.servers.iter_mut().filter(|s| s.options.startup_timeout.is_none()) {
                server.options.startup_timeout = Some(timeout);
            }
        }
        Ok(None) => {}
        Err(problem) => {
            set.statuses.push(failed(&format!("({STARTUP_TIMEOUT_ENV})"), ExtensionKind::McpStdio, problem))
        }
    }
    set
}

/// One entry of a file (`source`: the file, and where its stdio servers run):
/// its identity kept, then reported as `disabled` when it is, else started
/// with its variables expanded (a missing one fails only it).
fn add_entry(
    set: &mut ServerSet,
    home: &ClatHome,
    source: (&Path, &Path),
    name: &str,
    entry: &ServerEntry,
    disabled: String,
    env: &dyn Fn(&str) -> Option<String>,
) {
    let (file, run_in) = source;
    let kind = kind_of(entry);
    set.identities.insert(name.to_string(), entry_identity(entry));
    if !entry.enabled {
        set.statuses.push(ExtensionStatus::new(name, kind, ExtensionState::Configured, Some(disabled)));
        return;
    }
    // Variables are the user's: the pack's entries are used as they are.
    match entry.expand(env) {
        Ok(expanded) => {
            let identity = entry_identity(entry);
            set.servers.push(configured(home, run_in, name, &expanded.entry, expanded.substituted, identity, env));
        }
        Err(e) => {
            let problem = format!("{}: entry {name:?}: {e}", file.display());
            set.statuses.push(ExtensionStatus::new(name, kind, ExtensionState::Failed, Some(problem)));
        }
    }
}

/// The server an (expanded) entry describes, with the identity of the entry
/// as written; a stdio server runs in `run_in` (a relative `cwd` under it).
fn configured(
    home: &ClatHome,
    run_in: &Path,
    name: &str,
    entry: &ServerEntry,
    substituted: Vec<String>,
    identity: Identity,
    env: &dyn Fn(&str) -> Option<String>,
) -> ConfiguredServer {
    let (target, mut secrets) = match &entry.transport {
        EntryTransport::Stdio { env: configured, .. } => (
            Target::Stdio(user_stdio_spec(run_in, entry, env).expect("a stdio entry")),
            configured.values().cloned().collect::<Vec<_>>(),
        ),
        EntryTransport::Http { headers, .. } => {
            let mut spec = http_spec(entry).expect("an HTTP entry");
            // Commands that use servers never wait on a browser: a server that
            // needs a login fails with how to log in (`clat mcp login NAME`).
            match super::credentials::authorizer(home, name, entry, None) {
                Some(Ok(auth)) => spec.auth = Some(std::sync::Arc::new(auth)),
                Some(Err(e)) => tracing::warn!("{e}"),
                None => {}
            }
            (Target::Http(spec), headers.values().cloned().collect())
        }
    };
    secrets.extend(substituted);
    // What the user configured is a secret on every surface (a refusal quoting it, the audit trail), not only in
    // this server's own diagnostics.
    crate::redact::register_secrets(secrets.iter().cloned());
    let options = ServerOptions {
        startup_timeout: entry.startup_timeout,
        tool_timeout: entry.tool_timeout,
        tools: entry.tools.clone(),
        loading: entry.loading.clone(),
        secrets,
        eras: None,
    };
    ConfiguredServer { name: name.to_string(), target, options, identity }
}

/// Where and how a configured stdio server starts. User servers run in
/// `home` (a relative `cwd` resolves under it, never under the project). With
/// `"env_inherit": false` the server gets only `MINIMAL_SERVER_ENV` of CLAT's
/// environment (`env`), plus its configured `env`.
pub fn user_stdio_spec(home: &Path, entry: &ServerEntry, env: &dyn Fn(&str) -> Option<String>) -> Option<StdioSpec> {
    let EntryTransport::Stdio { command, args, env: configured, cwd, env_inherit } = &entry.transport else {
        return None;
    };
    let cwd = match cwd {
        None => home.to_path_buf(),
        Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => home.join(dir),
    };
    let mut vars: Vec<(String, String)> = Vec::new();
    if !env_inherit {
        vars.extend(MINIMAL_SERVER_ENV.iter().filter_map(|k| env(k).map(|v| (k.to_string(), v))));
    }
    vars.extend(configured.iter().map(|(k, v)| (k.clone(), v.clone())));
    Some(StdioSpec { command: command.clone(), args: args.clone(), env: vars, clear_env: !env_inherit, cwd })
}

/// Why the user's entry for one server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UserEntryError {
    /// The file, or this entry in it, is malformed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("no server named {name:?} is configured in {} (see `clat mcp`)", file.display())]
    NotConfigured { name: String, file: PathBuf },
    #[error("{}: entry {name:?}: {why}", file.display())]
    Expand { name: String, file: PathBuf, why: clat_mcp::config::ExpandError },
}

/// The user's `mcp.json` entry `name`, its variables expanded from `env`.
pub fn user_entry(
    home: &ClatHome,
    name: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerEntry, UserEntryError> {
    let file = home.path().join(MCP_CONFIG_FILE);
    let mut config = read_config(&file, &ENTRY_TIMEOUT_BOUNDS)?;
    if let Some(at) = config.errors.iter().position(|e| matches!(e, ConfigError::Entry { name: n, .. } if n == name)) {
        return Err(config.errors.swap_remove(at).into());
    }
    let entry = config
        .servers
        .get(name)
        .ok_or_else(|| UserEntryError::NotConfigured { name: name.to_string(), file: file.clone() })?;
    let expanded = entry.expand(env).map_err(|why| UserEntryError::Expand { name: name.to_string(), file, why })?;
    crate::redact::register_secrets(expanded.substituted);
    Ok(expanded.entry)
}

/// A remote server's target from its `mcp.json` entry (headers stay in memory).
pub fn http_spec(entry: &ServerEntry) -> Option<HttpSpec> {
    let EntryTransport::Http { url, headers, .. } = &entry.transport else { return None };
    Some(HttpSpec {
        url: url.clone(),
        headers: headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        auth: None,
    })
}
