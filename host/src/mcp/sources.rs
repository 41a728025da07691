//! Where a scope's MCP servers come from, and where each one runs:
//! `$CLAT_HOME/mcp.json` (user servers run in `$CLAT_HOME`, a relative `cwd`
//! under it, never under the project), installed `mcp-stdio` packages (run in
//! their read-only artifact directory), and the GLM Coding Plan pack (in
//! memory). A same-named `mcp.json` entry wins over a package and over a pack
//! server. Reading the sources starts nothing.

use std::path::{Path, PathBuf};

use clat_mcp::config::{ConfigError, McpConfig, ServerEntry, read_config};
use clat_mcp::{HttpSpec, StdioSpec};

use super::glm::{CodingPlan, pack_servers};
use super::server::ServerTarget;
use crate::extension::{ExtensionKind, ExtensionState, ExtensionStatus};
use crate::packages::{PackageKind, PackageStore};
use crate::trust::ClatHome;

/// The user's MCP server configuration, inside `$CLAT_HOME`.
pub const MCP_CONFIG_FILE: &str = "mcp.json";

/// The servers a scope knows of.
#[derive(Debug, Default)]
pub struct ServerSet {
    /// The servers that can be started, by name.
    pub servers: Vec<(String, ServerTarget)>,
    /// Entries that cannot be started (malformed, or replaced by a same-named entry).
    pub statuses: Vec<ExtensionStatus>,
}

/// Read every source of servers; nothing is spawned or contacted.
pub fn configured_servers(home: &ClatHome, glm_plan: Option<&CodingPlan>) -> ServerSet {
    let mut set = ServerSet::default();
    let failed = |name: &str, problem: String| {
        ExtensionStatus::new(name, ExtensionKind::McpStdio, ExtensionState::Failed, Some(problem))
    };
    let mut config = match read_config(&home.path().join(MCP_CONFIG_FILE)) {
        Ok(c) => c,
        Err(e) => {
            set.statuses.push(failed("(mcp.json)", e.to_string()));
            McpConfig::default()
        }
    };
    // The GLM Coding Plan pack joins in memory; a same-named user entry wins,
    // even a malformed one: it is the reported failure, and the pack's server
    // (with the key) is not started behind the user's back.
    if let Some(plan) = glm_plan {
        let malformed: std::collections::HashSet<&str> = config
            .errors
            .iter()
            .filter_map(|e| match e {
                ConfigError::Entry { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let pack: Vec<_> =
            pack_servers(plan).into_iter().filter(|(name, _)| !malformed.contains(name.as_str())).collect();
        for (name, entry) in pack {
            config.servers.entry(name).or_insert(entry);
        }
    }
    for error in std::mem::take(&mut config.errors) {
        let name = match &error {
            ConfigError::Entry { name, .. } => name.clone(),
            _ => "(mcp.json)".into(),
        };
        set.statuses.push(failed(&name, error.to_string()));
    }
    for (name, entry) in &config.servers {
        let target = match (user_stdio_spec(home.path(), entry), http_spec(entry)) {
            (Some(spec), _) => ServerTarget::Stdio(spec),
            (None, Some(spec)) => ServerTarget::Http(spec),
            (None, None) => continue,
        };
        set.servers.push((name.clone(), target));
    }
    if let Ok(packages) = PackageStore::new(home).list() {
        for p in packages.into_iter().filter(|p| p.manifest.kind == PackageKind::McpStdio) {
            if config.servers.contains_key(&p.manifest.name) {
                set.statuses.push(ExtensionStatus::new(
                    &p.manifest.name,
                    ExtensionKind::McpStdio,
                    ExtensionState::Configured,
                    Some("a same-named mcp.json entry replaces this package".into()),
                ));
                continue;
            }
            let spec = StdioSpec {
                command: p.entry_path().display().to_string(),
                args: p.manifest.args.clone(),
                env: p.manifest.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                cwd: p.dir.clone(),
            };
            set.servers.push((p.manifest.name.clone(), ServerTarget::Stdio(spec)));
        }
    }
    set
}

/// Where and how a configured stdio server starts. User servers run in
/// `home` (a relative `cwd` resolves under it, never under the project).
pub fn user_stdio_spec(home: &Path, entry: &ServerEntry) -> Option<StdioSpec> {
    let ServerEntry::Stdio { command, args, env, cwd } = entry else { return None };
    let cwd = match cwd {
        None => home.to_path_buf(),
        Some(dir) if Path::new(dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => home.join(dir),
    };
    Some(StdioSpec {
        command: command.clone(),
        args: args.clone(),
        env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        cwd,
    })
}

/// A remote server's target from its `mcp.json` entry (headers stay in memory).
pub fn http_spec(entry: &ServerEntry) -> Option<HttpSpec> {
    let ServerEntry::Http { url, headers } = entry else { return None };
    Some(HttpSpec { url: url.clone(), headers: headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect() })
}
