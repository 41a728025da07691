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
//!
//! What a person reviews before approving — every field that decides what
//! each server runs or sends, and the variables of theirs it reads, allowed or
//! not — is built here (`pending_review`, `server_review`), for the door's
//! question before a mount and for `clat mcp approve` alike.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clat_mcp::config::ServerEntry;
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

/// What a person is shown before a project's servers may start: the file,
/// whether it changed since approved, every server's review (`server_review`)
/// and what allows the variables not allowed (`allow_hint`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectServersReview {
    pub file: PathBuf,
    /// It was approved before, with other content.
    pub changed: bool,
    /// Each server's name and the lines of its review.
    pub servers: Vec<(String, Vec<String>)>,
    pub hint: Option<String>,
}

/// The review of the `.mcp.json` of the project at `root` (canonical), when
/// it is there and not approved as it is, with the file it is of; `None`
/// otherwise, or when it cannot be read or parsed (the mount reports why).
pub fn pending_review(home: &ClatHome, root: &Path) -> Option<(ProjectServerFile, ProjectServersReview)> {
    let file = read(root).ok()??;
    let changed = match approval(home, root, &file) {
        Ok(Approval::Approved) | Err(_) => return None,
        Ok(approval) => approval == Approval::Changed,
    };
    let servers = servers_of(&file).ok()?;
    let allowed = allowed_variables(home, root).unwrap_or_default();
    let review = ProjectServersReview {
        file: file.path.clone(),
        changed,
        servers: servers.iter().map(|(name, entry)| (name.clone(), server_review(name, entry, &allowed))).collect(),
        hint: allow_hint(&servers, &allowed),
    };
    Some((file, review))
}

/// `NAME  stdio|http  COMMAND|URL` for an entry, redacted.
pub fn entry_line(name: &str, entry: &ServerEntry) -> String {
    let (transport, target) = match &entry.transport {
        clat_mcp::config::EntryTransport::Stdio { command, args, .. } => (
            "stdio",
            std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" "),
        ),
        clat_mcp::config::EntryTransport::Http { url, .. } => ("http", url.clone()),
    };
    let disabled = if entry.enabled { "" } else { "  (disabled)" };
    crate::redact::redact(&format!("{name}  {transport}  {target}{disabled}"))
}

/// The servers a project's `.mcp.json` defines; a file that does not parse is an error (nothing is approved).
pub fn servers_of(file: &ProjectServerFile) -> Result<BTreeMap<String, ServerEntry>, String> {
    let config =
        clat_mcp::config::parse_config(&file.path.display().to_string(), &file.text, &crate::mcp::ENTRY_TIMEOUT_BOUNDS)
            .map_err(|e| e.to_string())?;
    if let Some(error) = config.errors.first() {
        return Err(error.to_string());
    }
    Ok(config.servers.into_iter().collect())
}

/// The user's variables a project's `entry` reads that the user did not allow for the project
/// (`${workspaceFolder}` is the project root, not the user's).
pub fn unallowed_variables(entry: &ServerEntry, allowed: &std::collections::BTreeSet<String>) -> Vec<String> {
    let own = |name: &String| name == WORKSPACE_FOLDER || allowed.contains(name);
    entry.variables().into_iter().filter(|name| !own(name)).collect()
}

/// When some of `servers` read variables of the user's not `allowed`: that they will not start, and what allows them.
pub fn allow_hint(servers: &BTreeMap<String, ServerEntry>, allowed: &BTreeSet<String>) -> Option<String> {
    let unallowed: BTreeSet<String> = servers.values().flat_map(|entry| unallowed_variables(entry, allowed)).collect();
    let flags: Vec<String> = unallowed.iter().map(|n| format!("--allow {n}")).collect();
    (!flags.is_empty()).then(|| {
        format!(
            "a server reading a variable not allowed does not start: `clat mcp approve {}` allows it",
            flags.join(" ")
        )
    })
}

/// What a project server's approval shows, one line each: its line, then every field that decides what runs or
/// is sent — where it runs, its cwd, each env and header (as written, redacted), and the variables of yours it
/// reads, each allowed or not (`allowed`).
pub fn server_review(name: &str, entry: &ServerEntry, allowed: &BTreeSet<String>) -> Vec<String> {
    use clat_mcp::config::EntryTransport;
    let mut lines = vec![entry_line(name, entry)];
    let written = |values: &BTreeMap<String, String>| {
        values.iter().map(|(k, v)| format!("{k}={}", redacted_as_written(v))).collect::<Vec<_>>().join(", ")
    };
    match &entry.transport {
        EntryTransport::Stdio { env, cwd, env_inherit, .. } => {
            let cwd = cwd.as_deref().map(|c| format!(", cwd {c}")).unwrap_or_default();
            lines.push(format!("    runs in your CLAT home{cwd}; the project root only as ${{workspaceFolder}}"));
            if !env.is_empty() {
                lines.push(format!("    env: {}", written(env)));
            }
            if !env_inherit {
                lines.push("    gets a minimal environment plus its env, not all of yours".to_string());
            }
        }
        EntryTransport::Http { headers, oauth, .. } => {
            if !headers.is_empty() {
                lines.push(format!("    headers: {}", written(headers)));
            }
            if oauth.is_some() {
                lines.push("    logs in with OAuth (`clat mcp login`)".to_string());
            }
        }
    }
    let own = WORKSPACE_FOLDER;
    let read: Vec<String> = entry.variables().into_iter().filter(|n| n != own).collect();
    if !read.is_empty() {
        let each: Vec<String> = read
            .iter()
            .map(|n| format!("${{{n}}} ({})", if allowed.contains(n) { "allowed" } else { "not allowed" }))
            .collect();
        lines.push(format!("    reads your variables: {}", each.join(", ")));
    }
    lines
}

/// A value as a file writes it, redacted, its `${…}` references kept whole (`Bearer ${TOKEN}` is no secret; a
/// literal key is).
fn redacted_as_written(value: &str) -> String {
    let mut references = Vec::new();
    let mut masked = String::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        let Some(end) = rest[at..].find('}') else { break };
        masked.push_str(&rest[..at]);
        masked.push_str(&format!("\u{0}{}\u{0}", references.len()));
        references.push(&rest[at..at + end + 1]);
        rest = &rest[at + end + 1..];
    }
    masked.push_str(rest);
    let mut shown = crate::redact::redact(&masked);
    for (i, reference) in references.iter().enumerate() {
        shown = shown.replace(&format!("\u{0}{i}\u{0}"), reference);
    }
    shown
}
