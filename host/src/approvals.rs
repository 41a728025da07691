//! Approvals a user chose to keep — "always for this tool" or "always for this
//! server / plugin" at the interactive prompt — stored in
//! `$CLAT_HOME/approvals.json`, keyed by the project root, the tool's
//! extension (`mcp:NAME`, `wasm:NAME`, `native`) and registered name, and the
//! effect the tool had when it was approved. A stored approval answers only the
//! `ask` cell of the mode table (`registry/pipeline.rs` `decide`) and only for
//! a tool whose effect is no stronger than the one approved, so it never widens;
//! it never answers a `deny`, and sampling requests never consult it. Updates are
//! read-modify-write under the home's advisory lock, replaced atomically; a
//! malformed file is an error, never read as empty.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::contract::Effect;
use crate::trust::{ClatHome, TrustError};

/// The file, inside the home.
pub const APPROVALS_FILE: &str = "approvals.json";
const VERSION: u32 = 1;

/// One kept approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredApproval {
    /// The project's canonical root.
    pub project: PathBuf,
    /// `mcp:NAME`, `wasm:NAME` or `native`.
    pub extension: String,
    /// The registered tool name; `None`: every tool of the extension.
    pub tool: Option<String>,
    /// The strongest effect approved (`read` … `destructive`).
    pub effect: String,
}

impl StoredApproval {
    fn covers(&self, project: &Path, extension: &str, tool: &str, effect: Effect) -> bool {
        self.project == project
            && self.extension == extension
            && self.tool.as_deref().is_none_or(|t| t == tool)
            && strength(&self.effect).is_some_and(|approved| strength(effect.as_str()) <= Some(approved))
    }

    /// Whether `name` names it: its tool, its extension (`mcp:srv`) or the extension's own name (`srv`).
    fn named(&self, name: &str) -> bool {
        self.tool.as_deref() == Some(name)
            || self.extension == name
            || self.extension.split_once(':').is_some_and(|(_, own)| own == name)
    }
}

/// An effect's place from weakest (0) to strongest.
fn strength(effect: &str) -> Option<usize> {
    Effect::ALL.iter().position(|e| e.as_str() == effect)
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApprovalsDocument {
    version: u32,
    approvals: Vec<StoredApproval>,
}

/// Why approvals could not be read or kept.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalsError {
    #[error(
        "{file} is malformed at line {line}, column {column}: {message}; fix it, or remove it to forget every kept approval"
    )]
    Malformed { file: String, line: usize, column: usize, message: String },
    #[error("cannot read {file}: {message}")]
    Unreadable { file: String, message: String },
    #[error(transparent)]
    Home(#[from] TrustError),
}

/// What `always` means at the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remember {
    /// This tool, at most this effect.
    Tool,
    /// Every tool of this extension, at most this effect.
    Extension,
}

/// The port the call pipeline asks before the approver and tells what the
/// user chose to keep. `ApprovalStore` is the file-backed one.
pub trait ApprovalMemory: Send + Sync {
    /// Whether a kept approval covers this call.
    fn allows(&self, extension: &str, tool: &str, effect: Effect) -> bool;
    /// Keep an approval.
    fn remember(&self, extension: &str, tool: &str, effect: Effect, scope: Remember) -> Result<(), ApprovalsError>;
}

fn read_document(home: &ClatHome) -> Result<ApprovalsDocument, ApprovalsError> {
    let path = home.path().join(APPROVALS_FILE);
    let file = path.display().to_string();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(ApprovalsDocument { version: VERSION, approvals: Vec::new() });
        }
        Err(e) => return Err(ApprovalsError::Unreadable { file, message: e.to_string() }),
    };
    let document: ApprovalsDocument = serde_json::from_str(&text).map_err(|e| ApprovalsError::Malformed {
        file: file.clone(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if document.version != VERSION || document.approvals.iter().any(|a| strength(&a.effect).is_none()) {
        return Err(ApprovalsError::Malformed {
            file,
            line: 1,
            column: 1,
            message: format!("expected version {VERSION} and known effects"),
        });
    }
    Ok(document)
}

/// Read, change and write the file under the home's lock.
fn update<T>(
    home: &ClatHome,
    change: impl FnOnce(&mut Vec<StoredApproval>) -> T,
) -> Result<(T, Vec<StoredApproval>), ApprovalsError> {
    let _lock = home.lock(APPROVALS_FILE)?;
    let mut document = read_document(home)?;
    let out = change(&mut document.approvals);
    let text = serde_json::to_string_pretty(&document).expect("approvals serialize") + "\n";
    home.write_atomic(APPROVALS_FILE, text.as_bytes())?;
    Ok((out, document.approvals))
}

/// Every kept approval, of every project.
pub fn list(home: &ClatHome) -> Result<Vec<StoredApproval>, ApprovalsError> {
    Ok(read_document(home)?.approvals)
}

/// Forget the approvals of `project` (every project: `None`) that `name`
/// names (every one: `None`); how many were forgotten.
pub fn revoke(home: &ClatHome, project: Option<&Path>, name: Option<&str>) -> Result<usize, ApprovalsError> {
    let (removed, _) = update(home, |approvals| {
        let before = approvals.len();
        approvals.retain(|a| !(project.is_none_or(|p| a.project == p) && name.is_none_or(|n| a.named(n))));
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
    pub fn open(home: &ClatHome, canonical_root: &Path) -> Result<ApprovalStore, ApprovalsError> {
        let kept = read_document(home)?.approvals.into_iter().filter(|a| a.project == canonical_root).collect();
        Ok(ApprovalStore { home: home.clone(), project: canonical_root.to_path_buf(), kept: Mutex::new(kept) })
    }
}

impl ApprovalMemory for ApprovalStore {
    fn allows(&self, extension: &str, tool: &str, effect: Effect) -> bool {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        kept.iter().any(|a| a.covers(&self.project, extension, tool, effect))
    }

    fn remember(&self, extension: &str, tool: &str, effect: Effect, scope: Remember) -> Result<(), ApprovalsError> {
        let approval = StoredApproval {
            project: self.project.clone(),
            extension: extension.to_string(),
            tool: (scope == Remember::Tool).then(|| tool.to_string()),
            effect: effect.as_str().to_string(),
        };
        let (_, all) = update(&self.home, |approvals| {
            // A stronger approval of the same key replaces a weaker one.
            approvals.retain(|a| {
                !(a.project == approval.project && a.extension == approval.extension && a.tool == approval.tool)
            });
            approvals.push(approval);
        })?;
        *self.kept.lock().unwrap_or_else(|p| p.into_inner()) =
            all.into_iter().filter(|a| a.project == self.project).collect();
        Ok(())
    }
}
