//! `clat mcp approve`: a project's `.mcp.json` shown as the user reviews it
//! (`mcp::project_servers` builds the review and keeps the approval) and
//! approved, with the variables it may read.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};

use super::exit::{Exit, Failure};
use crate::home::ClatHome;
use crate::mcp::project_servers;

/// `clat mcp approve [--allow VAR]...` for the project at `root` (canonical).
pub(super) fn approve(home: &ClatHome, root: &Path, allow: Vec<String>, json: bool) -> Result<Exit, Failure> {
    let Some(file) = project_servers::read(root).map_err(|e| Failure::configuration(e.to_string()))? else {
        return Err(Failure::configuration(format!("{} has no {}", root.display(), project_servers::PROJECT_MCP_FILE)));
    };
    if let Some(bad) = allow.iter().find(|n| !clat_mcp::config::is_variable_name(n)) {
        return Err(Failure::new(Exit::Usage, "usage", format!("--allow {bad:?}: give a variable's name")));
    }
    let allowed: BTreeSet<String> = allow.into_iter().collect();
    let servers = project_servers::servers_of(&file).map_err(Failure::configuration)?;
    project_servers::approve(home, root, &file, Some(&allowed))?;
    let lines: Vec<String> = servers.iter().map(|(name, entry)| project_servers::entry_line(name, entry)).collect();
    if json {
        let entries: Vec<Value> = servers
            .iter()
            .map(|(name, entry)| {
                json!({ "name": name, "review": project_servers::server_review(name, entry, &allowed),
                        "variables": entry.variables(),
                        "not_allowed": project_servers::unallowed_variables(entry, &allowed) })
            })
            .collect();
        outln!(
            "{}",
            json!({ "approved": file.path.display().to_string(), "digest": file.digest, "servers": lines,
                    "allowed": allowed, "entries": entries })
        );
    } else {
        outln!("approved the servers of {} ({}):", file.path.display(), file.digest);
        for (name, entry) in &servers {
            for line in project_servers::server_review(name, entry, &allowed) {
                outln!("  {line}");
            }
        }
        if let Some(hint) = project_servers::allow_hint(&servers, &allowed) {
            outln!("{hint}");
        }
    }
    Ok(Exit::Ok)
}
