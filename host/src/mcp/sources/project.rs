//! A project's `.mcp.json` servers as the server set takes them: started when
//! the file is approved as it is (running in the home, the project root only
//! as `${workspaceFolder}`, reading only the user's variables allowed for the
//! project), else reported with what approves them; a user's entry of the
//! same normalized name wins.

use std::path::{Path, PathBuf};

use clat_mcp::config::{ConfigError, McpConfig};

use crate::extension::{ExtensionKind, ExtensionState, ExtensionStatus};
use crate::home::ClatHome;

use super::*;

/// The servers of a project's `.mcp.json`: started when the file is
/// approved as it is, else reported with what approves them.
#[derive(Default)]
pub(super) struct ProjectEntries {
    pub(super) root: PathBuf,
    pub(super) file: Option<crate::mcp::project_servers::ProjectServerFile>,
    pub(super) config: McpConfig,
    /// `None`: approved; otherwise why its servers do not start.
    pub(super) refused: Option<String>,
    /// The file could not be read or parsed.
    pub(super) problem: Option<String>,
    /// The user's variables its entries may read (allowed with the approval).
    pub(super) allowed: std::collections::BTreeSet<String>,
}

pub(super) fn project_entries(home: &ClatHome, root: &Path) -> ProjectEntries {
    use crate::mcp::project_servers::{Approval, approval, not_approved_reason, read};
    let mut entries = ProjectEntries { root: root.to_path_buf(), ..Default::default() };
    let file = match read(root) {
        Ok(Some(file)) => file,
        Ok(None) => return entries,
        Err(e) => {
            // The error names the file.
            entries.problem = Some(e.to_string());
            return entries;
        }
    };
    match clat_mcp::config::parse_config(&file.path.display().to_string(), &file.text, &ENTRY_TIMEOUT_BOUNDS) {
        Ok(config) => entries.config = config,
        Err(e) => entries.problem = Some(e.to_string()),
    }
    entries.refused = match approval(home, root, &file) {
        Ok(Approval::Approved) => None,
        Ok(other) => Some(not_approved_reason(&other)),
        Err(e) => Some(e.to_string()),
    };
    entries.allowed = crate::mcp::project_servers::allowed_variables(home, root).unwrap_or_default();
    entries.file = Some(file);
    entries
}

impl ProjectEntries {
    /// Whether an approved project server takes `name` from packages and the pack.
    pub(super) fn claims(&self, name: &str) -> bool {
        self.refused.is_none() && self.config.servers.contains_key(name)
    }

    /// Its servers join `set`, running in the home as the user's do, with the
    /// project root as `${workspaceFolder}` and only the user's variables the
    /// approval allowed, or are reported.
    /// A user's `mcp.json` entry whose name normalizes like a project server's
    /// (`my-notes`, `my_notes`) wins, malformed or not: the two would own the
    /// same tool names, and the project cannot take the user's. `user_claims`
    /// maps each normalized name the user's file claims to the name as written.
    pub(super) fn add_to(
        &self,
        set: &mut ServerSet,
        home: &ClatHome,
        user_claims: &std::collections::HashMap<String, String>,
        env: &dyn Fn(&str) -> Option<String>,
    ) {
        let failed =
            |name: &str, kind, problem: String| ExtensionStatus::new(name, kind, ExtensionState::Failed, Some(problem));
        if let Some(problem) = &self.problem {
            set.statuses.push(failed("(.mcp.json)", ExtensionKind::McpStdio, problem.clone()));
        }
        let Some(file) = &self.file else { return };
        for error in &self.config.errors {
            let name = match error {
                ConfigError::Entry { name, .. } => name.as_str(),
                _ => "(.mcp.json)",
            };
            set.statuses.push(failed(name, kind_of_error(error), error.to_string()));
        }
        for (name, entry) in &self.config.servers {
            // The user's entry of the same (normalized) name is the one that runs, or fails: the project's is shadowed.
            if let Some(user_name) = user_claims.get(&crate::names::normalize_segment(name)) {
                if user_name != name {
                    set.statuses.push(ExtensionStatus::new(
                        name,
                        kind_of(entry),
                        ExtensionState::Configured,
                        Some(format!(
                            "shadowed: the user's mcp.json entry {user_name:?} owns the same tool names, so this \
                             project server does not start"
                        )),
                    ));
                }
                continue;
            }
            if let Some(why) = &self.refused {
                set.statuses.push(ExtensionStatus::new(
                    name,
                    kind_of(entry),
                    ExtensionState::Configured,
                    Some(why.clone()),
                ));
                continue;
            }
            let unallowed = crate::mcp::project_servers::unallowed_variables(entry, &self.allowed);
            if !unallowed.is_empty() && entry.enabled {
                set.statuses.push(ExtensionStatus::new(
                    name,
                    kind_of(entry),
                    ExtensionState::Failed,
                    Some(not_allowed_reason(&unallowed)),
                ));
                continue;
            }
            let root = self.root.display().to_string();
            let lookup = |variable: &str| match variable {
                crate::mcp::project_servers::WORKSPACE_FOLDER => Some(root.clone()),
                other => env(other),
            };
            let disabled = format!("disabled in {}", file.path.display());
            add_entry(set, home, (&file.path, home.path()), name, entry, disabled, &lookup);
        }
    }
}

/// Why a project's entry that reads `unallowed` variables of the user does not start, and what allows them.
pub fn not_allowed_reason(unallowed: &[String]) -> String {
    let names: Vec<String> = unallowed.iter().map(|n| format!("${{{n}}}")).collect();
    let flags: Vec<String> = unallowed.iter().map(|n| format!("--allow {n}")).collect();
    format!(
        "it reads your {}, which this project may not read: a project's entries get none of your variables \
         unless you allow them for the project (`clat mcp approve {}`)",
        names.join(", "),
        flags.join(" ")
    )
}
