//! `clat mcp approve`: a project's `.mcp.json` shown as the user reviews it
//! and approved, with the variables it may read (the door's
//! `Servers::approve_project` builds the review and keeps the approval).

use std::path::Path;

use serde_json::{Value, json};

use super::exit::{Exit, Failure};
use crate::platform::Platform;

/// `clat mcp approve [--allow VAR]...` for the project at `dir`.
pub(super) fn approve(platform: &Platform, dir: &Path, allow: Vec<String>, json: bool) -> Result<Exit, Failure> {
    let approval = platform.servers().approve_project(dir, allow)?;
    if json {
        let entries: Vec<Value> = approval
            .servers
            .iter()
            .map(|s| json!({ "name": s.name, "review": s.review, "variables": s.variables, "not_allowed": s.not_allowed }))
            .collect();
        let lines: Vec<&str> = approval.servers.iter().map(|s| s.line.as_str()).collect();
        outln!(
            "{}",
            json!({ "approved": approval.file.display().to_string(), "digest": approval.digest, "servers": lines,
                    "allowed": approval.allowed, "entries": entries })
        );
    } else {
        outln!("approved the servers of {} ({}):", approval.file.display(), approval.digest);
        for server in &approval.servers {
            for line in &server.review {
                outln!("  {line}");
            }
        }
        if let Some(hint) = &approval.hint {
            outln!("{hint}");
        }
    }
    Ok(Exit::Ok)
}
