//! `clat approvals list | allow | revoke`: the approvals kept at the
//! interactive prompt ("always for this tool / server"), in
//! `$CLAT_HOME/approvals.json`; `allow` keeps one without a prompt (for the
//! front ends nobody can answer: `clat serve`, `clat exec`). All three go
//! through the door's administration face (`platform/admin.rs`); this prints.

use std::path::PathBuf;

use clap::Subcommand;
use serde_json::json;

use super::exit::{Exit, Failure};
use super::project_dir;
use crate::platform::{KeptApproval, Platform, Project};
use crate::{SandboxPolicy, StoredApproval, canonical_project};

#[derive(Subcommand, Debug)]
pub(crate) enum ApprovalsCommand {
    /// List the kept approvals of every project.
    List,
    /// Keep an approval of TOOL in this project (--project, else the current directory), as answering [a]lways
    /// at its prompt would: bound to what its server or plugin is now, up to its effect. Starts the extension that
    /// owns TOOL to learn that.
    Allow {
        /// The tool (its registered name, or its own name when only one tool has it).
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::tool_names))]
        tool: String,
    },
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

/// One kept approval as a line: the project, who asked and what, the effect,
/// what it is bound to, and why it is stale when it is.
fn describe(a: &StoredApproval, stale: Option<&str>) -> String {
    let tool = a.tool.as_deref().unwrap_or("(every tool)");
    let what = if a.asked_by_agent() {
        format!("agent → {} {tool}", a.extension)
    } else {
        format!("{} → host tool {tool}", a.asked_by)
    };
    let bound = a.identity.as_ref().map(|i| format!("  [{}]", i.short())).unwrap_or_default();
    let stale = stale.map(|why| format!("  STALE: {why}")).unwrap_or_default();
    format!("{}  {what}  up to {}{bound}{stale}", a.project.display(), a.effect)
}

/// `clat approvals allow TOOL`: the extension owning TOOL started, and its
/// approval kept through the door (`Project::allow`).
async fn allow(project: &Project, tool: &str, json: bool) -> Result<Exit, Failure> {
    let (registered, effect, approval) = project.allow(tool).await?;
    if registered != tool {
        eprintln!("clat: {tool} is {registered}");
    }
    match (json, approval) {
        (true, approval) => {
            outln!("{}", json!({ "allowed": registered, "effect": effect.as_str(), "approval": approval }))
        }
        (false, Some(approval)) => outln!("kept: {}", describe(&approval, None)),
        (false, None) => outln!("kept: {registered} up to {effect}"),
    }
    Ok(Exit::Ok)
}

pub(crate) async fn approvals(
    platform: &Platform,
    project: Option<PathBuf>,
    command: ApprovalsCommand,
    json: bool,
) -> Result<Exit, Failure> {
    match command {
        ApprovalsCommand::Allow { tool } => {
            let sandbox = SandboxPolicy::default();
            let project = super::mount_for_runs(platform, project, sandbox, std::slice::from_ref(&tool))?;
            let allowed = allow(&project, &tool, json).await;
            project.close().await;
            allowed
        }
        ApprovalsCommand::List => {
            // The current project's approved `.mcp.json` servers count too (and the GLM pack's under a Coding Plan).
            let root = project_dir(project).ok().and_then(|dir| canonical_project(&dir).ok());
            let kept = platform.approvals(root.as_deref())?;
            if json {
                let listed: Vec<_> = kept
                    .iter()
                    .map(|KeptApproval { approval: a, stale }| {
                        json!({
                            "project": a.project,
                            "asked_by": a.asked_by,
                            "extension": a.extension,
                            "tool": a.tool,
                            "effect": a.effect,
                            "identity": a.identity,
                            "bound_to": a.bound_extension(),
                            "stale": stale,
                        })
                    })
                    .collect();
                outln!("{}", json!({ "approvals": listed }));
            } else if kept.is_empty() {
                outln!("no kept approvals");
            } else {
                for KeptApproval { approval, stale } in &kept {
                    outln!("{}", describe(approval, stale.as_deref()));
                }
            }
            Ok(Exit::Ok)
        }
        ApprovalsCommand::Revoke { name, every: _, all_projects } => {
            let root = if all_projects { None } else { Some(canonical_project(&project_dir(project)?)?) };
            let removed = platform.revoke_approvals(root.as_deref(), name.as_deref())?;
            if removed == 0 {
                let what = name.map_or("any".to_string(), |n| format!("{n:?}"));
                return Err(Failure::new(
                    Exit::Usage,
                    "configuration",
                    format!("no kept approval of {what} to revoke"),
                ));
            }
            if json {
                outln!("{}", json!({ "revoked": removed }));
            } else {
                outln!("revoked {removed} kept approval{}", if removed == 1 { "" } else { "s" });
            }
            Ok(Exit::Ok)
        }
    }
}
