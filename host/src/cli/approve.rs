//! `clat mcp approve` and the terminal prompt before servers start: a
//! project's `.mcp.json` as the user reviews it — every field that decides what
//! each server runs or sends, and the variables of the user's it reads, allowed
//! or not — and approves it, with the variables it may read
//! (`mcp::project_servers` keeps the approval).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use clat_mcp::config::ServerEntry;
use serde_json::{Value, json};

use super::exit::{Exit, Failure};
use crate::home::ClatHome;
use crate::home::trust::canonical_project;
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
    let servers = project_servers_of(&file)?;
    project_servers::approve(home, root, &file, Some(&allowed))?;
    let lines: Vec<String> = servers.iter().map(|(name, entry)| entry_line(name, entry)).collect();
    if json {
        let entries: Vec<Value> = servers
            .iter()
            .map(|(name, entry)| {
                json!({ "name": name, "review": project_server_review(name, entry, &allowed),
                        "variables": entry.variables(),
                        "not_allowed": crate::mcp::sources::unallowed_variables(entry, &allowed) })
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
            for line in project_server_review(name, entry, &allowed) {
                outln!("  {line}");
            }
        }
        if let Some(hint) = allow_hint(&servers, &allowed) {
            outln!("{hint}");
        }
    }
    Ok(Exit::Ok)
}

/// `NAME  stdio|http  COMMAND|URL` for an entry, redacted.
pub(super) fn entry_line(name: &str, entry: &ServerEntry) -> String {
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
fn project_servers_of(file: &project_servers::ProjectServerFile) -> Result<BTreeMap<String, ServerEntry>, Failure> {
    let config =
        clat_mcp::config::parse_config(&file.path.display().to_string(), &file.text, &crate::mcp::ENTRY_TIMEOUT_BOUNDS)
            .map_err(|e| Failure::configuration(e.to_string()))?;
    if let Some(error) = config.errors.first() {
        return Err(Failure::configuration(error.to_string()));
    }
    Ok(config.servers.into_iter().collect())
}

/// When some of `servers` read variables of the user's not `allowed`: that they will not start, and what allows them.
fn allow_hint(servers: &BTreeMap<String, ServerEntry>, allowed: &BTreeSet<String>) -> Option<String> {
    let unallowed: BTreeSet<String> =
        servers.values().flat_map(|entry| crate::mcp::sources::unallowed_variables(entry, allowed)).collect();
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
fn project_server_review(name: &str, entry: &ServerEntry, allowed: &BTreeSet<String>) -> Vec<String> {
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
    let own = project_servers::WORKSPACE_FOLDER;
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

/// Before a command starts servers in the trusted project at `dir`: if its
/// `.mcp.json` is not approved as it is and someone is at the terminal, show
/// its servers and ask. Headless, nothing is asked: its servers are reported
/// as not started, with `clat mcp approve`.
pub(crate) fn review_project_servers(home: &ClatHome, dir: &std::path::Path) {
    use std::io::{BufRead, IsTerminal, Write};
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return;
    }
    let Ok(root) = canonical_project(dir) else { return };
    if !crate::home::trust::TrustStore::new(home).is_trusted(&root).unwrap_or(false) {
        return;
    }
    let Ok(Some(file)) = project_servers::read(&root) else { return };
    let approval = match project_servers::approval(home, &root, &file) {
        Ok(project_servers::Approval::Approved) | Err(_) => return,
        Ok(approval) => approval,
    };
    let Ok(servers) = project_servers_of(&file) else { return };
    let allowed = project_servers::allowed_variables(home, &root).unwrap_or_default();
    let mut err = std::io::stderr().lock();
    let changed =
        if approval == project_servers::Approval::Changed { " It changed since you approved it." } else { "" };
    let _ =
        writeln!(err, "The project's {} defines servers that run with your permissions:{changed}", file.path.display());
    for (name, entry) in &servers {
        for line in project_server_review(name, entry, &allowed) {
            let _ = writeln!(err, "  {line}");
        }
    }
    if let Some(hint) = allow_hint(&servers, &allowed) {
        let _ = writeln!(err, "{hint}");
    }
    let _ = write!(err, "Start them in this project? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    if matches!(answer.trim(), "y" | "Y" | "yes")
        && let Err(e) = project_servers::approve(home, &root, &file, None)
    {
        let _ = writeln!(err, "clat: could not keep the approval: {e}");
    }
}
