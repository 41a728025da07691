//! `clat approvals list | revoke`: the approvals kept at the interactive
//! prompt ("always for this tool / server"), in `$CLAT_HOME/approvals.json`.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use super::exit::{Exit, Failure};
use super::project_dir;
use crate::approvals;
use crate::trust::{ClatHome, canonical_project};

#[derive(Subcommand, Debug)]
pub(crate) enum ApprovalsCommand {
    /// List the kept approvals of every project.
    List,
    /// Forget kept approvals of this project (--project, else the current directory): those of
    /// NAME (a tool, a server or plugin such as `srv` or `mcp:srv`), or with --every, all of them.
    Revoke {
        /// A tool name, or a server or plugin name.
        #[arg(required_unless_present = "every")]
        name: Option<String>,
        /// Every kept approval of the project.
        #[arg(long, conflicts_with = "name")]
        every: bool,
        /// In every project, not only this one.
        #[arg(long)]
        all_projects: bool,
    },
}

pub(crate) fn approvals(
    home: &ClatHome,
    project: Option<PathBuf>,
    command: ApprovalsCommand,
    json: bool,
) -> Result<Exit, Failure> {
    match command {
        ApprovalsCommand::List => {
            let kept = approvals::list(home)?;
            if json {
                println!("{}", json!({ "approvals": kept }));
            } else if kept.is_empty() {
                println!("no kept approvals");
            } else {
                for a in &kept {
                    let tool = a.tool.as_deref().unwrap_or("(every tool)");
                    println!("{}  {}  {tool}  up to {}", a.project.display(), a.extension, a.effect);
                }
            }
            Ok(Exit::Ok)
        }
        ApprovalsCommand::Revoke { name, every: _, all_projects } => {
            let root = if all_projects { None } else { Some(canonical_project(&project_dir(project)?)?) };
            let removed = approvals::revoke(home, root.as_deref(), name.as_deref())?;
            if removed == 0 {
                let what = name.map_or("any".to_string(), |n| format!("{n:?}"));
                return Err(Failure::new(
                    Exit::Usage,
                    "configuration",
                    format!("no kept approval of {what} to revoke"),
                ));
            }
            if json {
                println!("{}", json!({ "revoked": removed }));
            } else {
                println!("revoked {removed} kept approval{}", if removed == 1 { "" } else { "s" });
            }
            Ok(Exit::Ok)
        }
    }
}
