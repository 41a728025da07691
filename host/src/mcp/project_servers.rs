//! Project servers: a `.mcp.json` checked in at a project's root (Claude
//! Code's shape: `{"mcpServers": {...}}`, or flat). Its servers start only in
//! a trusted project, and only after the user approved them: the approval is
//! bound to the file's exact content (its SHA-256), kept per project in
//! `$CLAT_HOME/project-servers.json`, so a changed file — a new server, an
//! edited command — is asked again. Until then its servers are reported, not
//! started, with the command that approves them (`clat mcp approve`). Reading
//! the file and the approvals starts nothing.
//!
//! A project's entries read none of the user's variables but those the user
//! allowed for that project with its approval (`clat mcp approve --allow
//! VAR`; none by default): a file someone else wrote cannot make an entry send
//! `${OPENAI_API_KEY}` to a server it chose. They run in the home, as the
//! user's do (a project's `.npmrc`, `node_modules/.bin` or `uv.toml` cannot
//! change what `npx` or `uvx` runs), and get the project root only as
//! `${workspaceFolder}` (`WORKSPACE_FOLDER`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::home::{Bound, ClatHome, Document, HomeError};
use crate::policy::identity::hex;

/// The project's server file, at its root.
pub const PROJECT_MCP_FILE: &str = ".mcp.json";
/// The approvals of project server files, inside `$CLAT_HOME`.
pub const PROJECT_SERVERS_FILE: &str = "project-servers.json";
/// The variable a project's entry names the project root by (VS Code's).
pub const WORKSPACE_FOLDER: &str = "workspaceFolder";

/// A project's `.mcp.json` as read now.
#[derive(Debug, Clone)]
pub struct ProjectServerFile {
    pub path: PathBuf,
    pub text: String,
    /// `sha256:` and the hex digest of the file's bytes: what an approval is bound to.
    pub digest: String,
}

/// Whether a project's `.mcp.json` may start its servers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Approved with exactly this content.
    Approved,
    /// Never approved in this project.
    New,
    /// Approved once, with other content.
    Changed,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ApprovalsDocument {
    #[serde(default)]
    version: u32,
    /// Canonical project root → the approved file's digest.
    #[serde(default)]
    projects: BTreeMap<PathBuf, String>,
    /// Canonical project root → the user's variables its entries may read (allowed with the approval).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    variables: BTreeMap<PathBuf, BTreeSet<String>>,
}

/// The `.mcp.json` at `root`, if there is one.
pub fn read(root: &Path) -> Result<Option<ProjectServerFile>, std::io::Error> {
    let path = root.join(PROJECT_MCP_FILE);
    match crate::home::files::read_project_file(root, PROJECT_MCP_FILE) {
        Ok(bytes) => {
            let digest = format!("sha256:{}", hex(&Sha256::digest(&bytes)));
            let text = crate::home::files::utf8(bytes).map_err(|e| named(&path, e.to_string()))?;
            Ok(Some(ProjectServerFile { path, text, digest }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(named(&path, e.to_string())),
    }
}

/// An error reading the project's file, naming it.
fn named(path: &Path, why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, format!("cannot read {}: {why}", path.display()))
}

// A file without a version (0) is read as version 1.
crate::versioned_record!(ApprovalsDocument, 0..=1);

const APPROVED: Document<ApprovalsDocument> = Document::new(PROJECT_SERVERS_FILE, Bound::Config);

/// Whether the file of the project at `root` (canonical) is approved as it is.
pub fn approval(home: &ClatHome, root: &Path, file: &ProjectServerFile) -> Result<Approval, HomeError> {
    Ok(match APPROVED.read(home)?.projects.get(root) {
        Some(digest) if *digest == file.digest => Approval::Approved,
        Some(_) => Approval::Changed,
        None => Approval::New,
    })
}

/// The user's variables the entries of the project at `root` (canonical) may read.
pub fn allowed_variables(home: &ClatHome, root: &Path) -> Result<BTreeSet<String>, HomeError> {
    Ok(APPROVED.read(home)?.variables.remove(root).unwrap_or_default())
}

/// Approve the file of the project at `root` (canonical) with its content now;
/// `allow`: the user's variables its entries may read from now on (`None`:
/// those allowed before stay).
pub fn approve(
    home: &ClatHome,
    root: &Path,
    file: &ProjectServerFile,
    allow: Option<&BTreeSet<String>>,
) -> Result<(), HomeError> {
    APPROVED.update(home, |document| {
        document.projects.insert(root.to_path_buf(), file.digest.clone());
        match allow {
            Some(names) if names.is_empty() => drop(document.variables.remove(root)),
            Some(names) => drop(document.variables.insert(root.to_path_buf(), names.clone())),
            None => {}
        }
    })
}

/// Why a project's servers did not start, and what approves them.
pub fn not_approved_reason(approval: &Approval) -> String {
    let why = match approval {
        Approval::Changed => "the project's .mcp.json changed since you approved its servers",
        _ => "the project's .mcp.json servers start only after you approve them",
    };
    format!("{why}: review the file, then run `clat mcp approve` (or answer the prompt at a terminal)")
}
