//! Approvals a user chose to keep — "always for this tool" or "always for this
//! server / plugin" at the interactive prompt — stored in
//! `$CLAT_HOME/approvals.json`. Each is keyed by the project root, who asked
//! (`agent` for the agent's own call, or the extension — `mcp:NAME`,
//! `wasm:NAME` — that called a host tool), the tool's extension (`native`,
//! `mcp:NAME`, `wasm:NAME`) and registered name, the effect the user was
//! shown, and the identity of the extension involved (`identity.rs`: the
//! tool's, or the asker's). So an approval given for the agent's own
//! `run_command` never answers a server's host-tool call, and the reverse, and
//! a name configured later with another command, URL or package inherits
//! nothing: its kept approvals are stale (`clat approvals list` says so).
//!
//! A kept approval answers only the `ask` cell of the mode table
//! (`registry/pipeline.rs` `decide`) and only for an effect that every mode
//! orders at or below the approved one (`permissions::approval_covers`), so it
//! never widens to an effect the user was not shown; it never answers a
//! `deny`, and sampling requests never consult it. Updates are
//! read-modify-write under the home's advisory lock, replaced atomically; a
//! malformed file is an error, never read as empty. Version 1 files (before
//! who-asked and identities were kept) are read as the agent's approvals bound
//! to no identity: those of extensions are stale until approved again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::contract::Effect;
use crate::home::{Bound, ClatHome, Document, HomeError, Record};
use crate::names::ExternalKind;
use crate::policy::identity::Identity;
pub use crate::policy::permissions::Remember;
use crate::policy::permissions::approval_covers;
use crate::sync::Unpoisoned;

/// The file, inside the home.
pub const APPROVALS_FILE: &str = "approvals.json";
/// The version written; version 1 is still read.
const VERSION: u32 = 2;
/// Who asked, for the agent's own calls.
pub const AGENT: &str = "agent";
/// The extension of CLAT's own tools.
pub const NATIVE: &str = "native";

fn agent() -> String {
    AGENT.to_string()
}

/// What one permission decision is about, as a kept approval keys it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalKey {
    /// `agent`, or the extension that called a host tool (`mcp:srv`, `wasm:p`).
    pub asked_by: String,
    /// The tool's extension: `native`, `mcp:srv`, `wasm:p`.
    pub extension: String,
    /// The registered tool name.
    pub tool: String,
    /// The identity of the extension involved — the tool's for the agent's
    /// calls, the asker's for host-tool calls; none for the agent's native calls.
    pub identity: Option<Identity>,
    /// The hash of the tool's definition (`pins::definition_hash`); none for native tools.
    pub definition: Option<String>,
}

/// One kept approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredApproval {
    /// The project's canonical root.
    pub project: PathBuf,
    /// `agent`, or the extension that called a host tool (`mcp:NAME`, `wasm:NAME`).
    #[serde(default = "agent")]
    pub asked_by: String,
    /// The tool's extension: `mcp:NAME`, `wasm:NAME` or `native`.
    pub extension: String,
    /// The registered tool name; `None`: every tool of the extension.
    pub tool: Option<String>,
    /// The effect the user was shown and approved (`read` … `destructive`).
    pub effect: String,
    /// The identity of the extension involved when it was approved.
    #[serde(default)]
    pub identity: Option<Identity>,
    /// An approval of one extension tool: the hash of the definition it was
    /// approved for, so that a changed tool never inherits it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
}

impl StoredApproval {
    fn covers(&self, project: &Path, key: &ApprovalKey, effect: Effect) -> bool {
        self.project == project
            && self.asked_by == key.asked_by
            && self.extension == key.extension
            && self.tool.as_deref().is_none_or(|t| t == key.tool)
            && self.identity == key.identity
            && (self.tool.is_none() || self.definition == key.definition)
            && effect_named(&self.effect).is_some_and(|approved| approval_covers(approved, effect))
    }

    /// Whether `name` names it: its tool (by any of the tool's names, as
    /// `names::names_tool` accepts them), its extension or who asked
    /// (`mcp:srv`), or their own names (`srv`).
    fn named(&self, name: &str) -> bool {
        let names = |key: &str| key == name || key.split_once(':').is_some_and(|(_, own)| own == name);
        let tool = self.tool.as_deref().is_some_and(|tool| {
            tool == name
                || match self.extension.split_once(':') {
                    Some(("mcp", owner)) => crate::names::names_tool(ExternalKind::Mcp, owner, tool, name),
                    Some(("wasm", owner)) => crate::names::names_tool(ExternalKind::Wasm, owner, tool, name),
                    _ => false,
                }
        });
        tool || names(&self.extension) || names(&self.asked_by)
    }

    /// The extension whose identity the approval is bound to: who asked, or the tool's.
    pub fn bound_to(&self) -> &str {
        if self.asked_by == AGENT { &self.extension } else { &self.asked_by }
    }

    /// Whether the agent asked (else an extension's host-tool call did).
    pub fn asked_by_agent(&self) -> bool {
        self.asked_by == AGENT
    }

    /// The server or plugin it is bound to; `None` for CLAT's own tools.
    pub fn bound_extension(&self) -> Option<&str> {
        Some(self.bound_to()).filter(|b| *b != NATIVE)
    }

    /// Why it no longer applies, given the identities of the extensions
    /// configured now (`mcp:NAME` / `wasm:NAME` → identity); `None` while it does.
    pub fn stale(&self, current: &HashMap<String, Identity>) -> Option<String> {
        let bound = self.bound_to();
        if bound == NATIVE {
            return None;
        }
        let Some(kept) = &self.identity else {
            return Some(format!("kept before approvals were bound to what {bound} runs; approve it again to use it"));
        };
        if self.asked_by == AGENT && self.tool.is_some() && self.definition.is_none() {
            return Some(
                "kept before approvals were bound to the tool's definition; approve it again to use it".into(),
            );
        }
        match current.get(bound) {
            None => Some(format!("no extension {bound} is configured or installed now")),
            Some(now) if now != kept => Some(format!(
                "{bound} now runs another command, URL or package ({}) than the one approved ({})",
                now.short(),
                kept.short()
            )),
            Some(_) => None,
        }
    }
}

/// The effect with this stored name.
fn effect_named(name: &str) -> Option<Effect> {
    Effect::ALL.into_iter().find(|e| e.as_str() == name)
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsDocument {
    version: u32,
    approvals: Vec<StoredApproval>,
}

impl Record for ApprovalsDocument {
    const VERSIONS: std::ops::RangeInclusive<u32> = 1..=VERSION;
    fn version(&self) -> u32 {
        self.version
    }
    fn set_version(&mut self, version: u32) {
        self.version = version;
    }
    fn check(&self) -> Result<(), String> {
        match self.approvals.iter().find(|a| effect_named(&a.effect).is_none()) {
            Some(unknown) => Err(format!("unknown effect {:?}", unknown.effect)),
            None => Ok(()),
        }
    }
}

/// The document.
const APPROVALS: Document<ApprovalsDocument> =
    Document::with_hint(APPROVALS_FILE, Bound::Config, "; fix it, or remove it to forget every kept approval");

/// The port the call pipeline asks before the approver and tells what the
/// user chose to keep. `ApprovalStore` is the file-backed one.
pub trait ApprovalMemory: Send + Sync {
    /// Whether a kept approval covers this call.
    fn allows(&self, key: &ApprovalKey, effect: Effect) -> bool;
    /// Keep an approval. `Remember::Extension` of a native tool (a host-tool
    /// call) is kept for that tool only: "every tool" of CLAT is never one answer.
    fn remember(&self, key: &ApprovalKey, effect: Effect, scope: Remember) -> Result<(), HomeError>;
}

/// Read, change and write the file under the home's lock; also returns every approval after the change.
fn update<T>(
    home: &ClatHome,
    change: impl FnOnce(&mut Vec<StoredApproval>) -> T,
) -> Result<(T, Vec<StoredApproval>), HomeError> {
    APPROVALS.update(home, |document| {
        let out = change(&mut document.approvals);
        (out, document.approvals.clone())
    })
}

/// Every kept approval, of every project.
pub fn list(home: &ClatHome) -> Result<Vec<StoredApproval>, HomeError> {
    Ok(APPROVALS.read(home)?.approvals)
}

/// Forget the approvals of `project` (every project: `None`) that `name`
/// names (every one: `None`); how many were forgotten.
pub fn revoke(home: &ClatHome, project: Option<&Path>, name: Option<&str>) -> Result<usize, HomeError> {
    let (removed, _) = update(home, |approvals| {
        let before = approvals.len();
        approvals.retain(|a| !(project.is_none_or(|p| a.project == p) && name.is_none_or(|n| a.named(n))));
        before - approvals.len()
    })?;
    Ok(removed)
}

/// Forget `project`'s approvals of the agent's calls of every tool of
/// `extension` (`mcp:NAME`): once a changed tool definition is accepted, an
/// approval given for the server as it was never answers for it. How many.
pub fn revoke_extension_wide(home: &ClatHome, project: &Path, extension: &str) -> Result<usize, HomeError> {
    let (removed, _) = update(home, |approvals| {
        let before = approvals.len();
        approvals
            .retain(|a| !(a.project == project && a.asked_by == AGENT && a.extension == extension && a.tool.is_none()));
        before - approvals.len()
    })?;
    Ok(removed)
}

/// The kept approvals of one project, read once and kept up to date.
pub struct ApprovalStore {
    home: ClatHome,
    project: PathBuf,
    kept: Mutex<Vec<StoredApproval>>,
}

impl ApprovalStore {
    /// The approvals kept for the project at `canonical_root`.
    pub fn open(home: &ClatHome, canonical_root: &Path) -> Result<ApprovalStore, HomeError> {
        let kept = APPROVALS.read(home)?.approvals.into_iter().filter(|a| a.project == canonical_root).collect();
        Ok(ApprovalStore { home: home.clone(), project: canonical_root.to_path_buf(), kept: Mutex::new(kept) })
    }
}

impl ApprovalMemory for ApprovalStore {
    fn allows(&self, key: &ApprovalKey, effect: Effect) -> bool {
        let kept = self.kept.locked();
        kept.iter().any(|a| a.covers(&self.project, key, effect))
    }

    fn remember(&self, key: &ApprovalKey, effect: Effect, scope: Remember) -> Result<(), HomeError> {
        let every_tool = scope == Remember::Extension && key.extension != NATIVE;
        let approval = StoredApproval {
            project: self.project.clone(),
            asked_by: key.asked_by.clone(),
            extension: key.extension.clone(),
            tool: (!every_tool).then(|| key.tool.clone()),
            effect: effect.as_str().to_string(),
            identity: key.identity.clone(),
            definition: if every_tool { None } else { key.definition.clone() },
        };
        let (_, all) = update(&self.home, |approvals| {
            // The new approval replaces those of the same key that it covers
            // (an effect it answers too); one of an effect it does not order
            // (write beside network) stays.
            approvals.retain(|a| {
                let same_key = a.project == approval.project
                    && a.asked_by == approval.asked_by
                    && a.extension == approval.extension
                    && a.tool == approval.tool;
                !(same_key
                    && (a.identity != approval.identity
                        || a.definition != approval.definition
                        || effect_named(&a.effect).is_some_and(|old| approval_covers(effect, old))))
            });
            approvals.push(approval);
        })?;
        *self.kept.locked() = all.into_iter().filter(|a| a.project == self.project).collect();
        Ok(())
    }
}
