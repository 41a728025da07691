//! What each extension listed, one record per extension in
//! `$CLAT_HOME/listings/servers/NAME.json` and `listings/plugins/NAME.json`:
//! the identity it was listed as (`ListingKey`: an MCP server's command and
//! arguments, URL or package digest; a plugin's artifact digest, with the
//! contract version and the grants it was listed under), every tool's
//! definition exactly as listed with its hash (`pins::definition_hash`), the
//! tools' registered names, and a plugin's facts (tools dropped past the cap,
//! schemas checked, whether its component sees the preopens).
//!
//! Three readers sit on top. A command given a tool's short name (`get_sum`)
//! starts only the servers whose last listing has a tool of that name, not
//! every server (`registered_names`); shell completion offers the tools of
//! every listing (`all_tools`); a plugin's load takes its tools from its
//! record when the key matches and maps nothing (`wasm/kept.rs`). A record
//! whose identity is not the extension's now is never used, and an extension
//! writes its record again each time it lists (a plugin also when it is
//! installed or its grants change), so the next command sees what it offers
//! today. The records are a cache: losing one (or a write that fails) costs
//! one listing, or the start of every server once. The per-project accepted
//! definitions are not a cache and are not here: they are the pins
//! (`policy/pins.rs`), which keep each accepted definition beside its hash so
//! a quarantine can show what changed even when this cache is gone.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::contract::{ToolAnnotations, ToolSpec};
use crate::extension::ExtensionKind;
use crate::home::{Bound, ClatHome, Document, HomeError};
use crate::names::{ExternalKind, names_tool};
use crate::policy::identity::Identity;
use crate::supply::capabilities::Capabilities;

/// The servers' records, inside `$CLAT_HOME`: one file per server.
pub const SERVER_LISTINGS_DIR: &str = "listings/servers";
/// The plugins' records, inside `$CLAT_HOME`: one file per installed plugin.
pub const PLUGIN_LISTINGS_DIR: &str = "listings/plugins";
/// Where the listings were kept before they were one record per extension; removed when a record is first written.
const FORMER_PLACES: [&str; 2] = ["cache/listings.json", "plugins/listings"];

/// What a listing was made under: an extension that differs in any of these is listed again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingKey {
    /// The identity it was listed as: a plugin's installed artifact (its digest), a server's command or URL.
    pub artifact: Identity,
    /// The contract version the host binds (a plugin's; empty for a server).
    #[serde(default)]
    pub contract: String,
    /// What was granted of what the manifest declares (a plugin's).
    #[serde(default)]
    pub grants: Capabilities,
}

impl ListingKey {
    /// The key of a server listed as `identity`.
    pub fn server(identity: &Identity) -> ListingKey {
        ListingKey { artifact: identity.clone(), contract: String::new(), grants: Capabilities::default() }
    }
}

/// One extension's record, as its readers see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing {
    /// What it was listed under.
    pub key: ListingKey,
    /// Its tools' definitions, exactly as listed (a server's: those its tool filter offers).
    pub tools: Vec<ToolSpec>,
    /// The registered names of its tools, as its last start registered them.
    pub registered: Vec<String>,
    /// How many tools it listed past its cap (a plugin's).
    pub dropped: usize,
    /// Whether every tool's input schema passed registration's check (a plugin's).
    pub schemas_checked: bool,
    /// Whether its component imports the WASI preopens (a plugin's).
    pub sees_preopens: bool,
    /// A plain component's functions not offered, each with why.
    pub refused: Vec<String>,
}

/// The file: the key, each tool exactly as listed (its schemas as the text it gave, so one registration refuses
/// stays refused) with its definition's hash, the registered names, and a plugin's facts.
#[derive(Default, PartialEq, Serialize, Deserialize)]
struct ListingFile {
    #[serde(default)]
    version: u32,
    /// None only in the empty record, which no extension matches.
    key: Option<ListingKey>,
    #[serde(default)]
    tools: Vec<KeptTool>,
    #[serde(default)]
    registered: Vec<String>,
    #[serde(default)]
    dropped: usize,
    #[serde(default)]
    schemas_checked: bool,
    #[serde(default)]
    sees_preopens: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    refused: Vec<String>,
    /// A stdio server's era, as its last start learned it (`mcp/eras.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    era: Option<LearnedEra>,
}

crate::versioned_record!(ListingFile, 1..=1);

/// A record as a short-name lookup reads it: what it was listed under and the registered names, not the
/// definitions (the other fields are skipped, not built; it is never written).
#[derive(Default, Serialize, Deserialize)]
struct ListedNames {
    #[serde(default)]
    version: u32,
    key: Option<ListingKey>,
    #[serde(default)]
    registered: Vec<String>,
}

crate::versioned_record!(ListedNames, 1..=1);

/// The era a stdio server's start learned, under what (`mcp/eras.rs`'s key) and when (seconds since the epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnedEra {
    /// `legacy` or `modern`.
    pub era: String,
    pub key: String,
    pub at: u64,
}

/// A `ToolSpec`, field for field, and the hash of its definition.
#[derive(PartialEq, Serialize, Deserialize)]
struct KeptTool {
    name: String,
    title: Option<String>,
    description: String,
    input_schema: String,
    output_schema: Option<String>,
    annotations: KeptAnnotations,
    #[serde(default)]
    hash: String,
}

/// `ToolAnnotations`, field for field.
#[derive(PartialEq, Serialize, Deserialize)]
struct KeptAnnotations {
    title: Option<String>,
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
}

impl From<&ToolSpec> for KeptTool {
    fn from(spec: &ToolSpec) -> Self {
        let a = &spec.annotations;
        KeptTool {
            name: spec.name.clone(),
            title: spec.title.clone(),
            description: spec.description.clone(),
            input_schema: spec.input_schema.clone(),
            output_schema: spec.output_schema.clone(),
            annotations: KeptAnnotations {
                title: a.title.clone(),
                read_only: a.read_only,
                destructive: a.destructive,
                idempotent: a.idempotent,
                open_world: a.open_world,
            },
            hash: crate::policy::pins::definition_hash(spec),
        }
    }
}

impl From<KeptTool> for ToolSpec {
    fn from(tool: KeptTool) -> Self {
        let a = tool.annotations;
        ToolSpec {
            name: tool.name,
            title: tool.title,
            description: tool.description,
            input_schema: tool.input_schema,
            output_schema: tool.output_schema,
            annotations: ToolAnnotations {
                title: a.title,
                read_only: a.read_only,
                destructive: a.destructive,
                idempotent: a.idempotent,
                open_world: a.open_world,
            },
        }
    }
}

fn directory(kind: ExtensionKind) -> &'static str {
    match kind {
        ExtensionKind::Wasm => PLUGIN_LISTINGS_DIR,
        _ => SERVER_LISTINGS_DIR,
    }
}

/// One extension's record.
fn document(kind: ExtensionKind, extension: &str) -> Document<ListingFile> {
    Document::at(format!("{}/{extension}.json", directory(kind)), Bound::Record)
}

/// The record of `extension`, whatever it was listed under; `None` when there is none or it cannot be read.
pub fn read(home: &ClatHome, kind: ExtensionKind, extension: &str) -> Option<Listing> {
    let file = document(kind, extension).read(home).ok()?;
    Some(Listing {
        key: file.key?,
        tools: file.tools.into_iter().map(ToolSpec::from).collect(),
        registered: file.registered,
        dropped: file.dropped,
        schemas_checked: file.schemas_checked,
        sees_preopens: file.sees_preopens,
        refused: file.refused,
    })
}

/// Keep `listing` as the record of `extension`, replacing what was kept
/// (a plugin's, when it is listed). Written only when it changed.
pub fn keep_listed(home: &ClatHome, kind: ExtensionKind, extension: &str, listing: &Listing) -> Result<(), HomeError> {
    let kept = ListingFile {
        version: 1,
        key: Some(listing.key.clone()),
        tools: listing.tools.iter().map(KeptTool::from).collect(),
        registered: listing.registered.clone(),
        dropped: listing.dropped,
        schemas_checked: listing.schemas_checked,
        sees_preopens: listing.sees_preopens,
        refused: listing.refused.clone(),
        era: None,
    };
    change(home, kind, extension, |file| {
        let changed = *file != kept;
        *file = kept;
        changed
    })
}

/// Keep what `extension` (listed as `identity`) registered when it started,
/// and a server's definitions as it listed them (`listed`; a plugin's are
/// kept when it is listed, `keep_listed`). A record of another identity is
/// replaced. The registration of every start is usually the last one: then
/// nothing is written.
pub fn remember(
    home: &ClatHome,
    kind: ExtensionKind,
    extension: &str,
    identity: &Identity,
    registered: &[String],
    listed: Option<&[ToolSpec]>,
) -> Result<(), HomeError> {
    let tools: Option<Vec<KeptTool>> = listed.map(|specs| specs.iter().map(KeptTool::from).collect());
    change(home, kind, extension, |file| {
        let mut changed = file.registered != registered;
        if file.key.as_ref().is_none_or(|key| key.artifact != *identity) {
            // The era has its own key, which holds the identity.
            let era = file.era.take();
            *file = ListingFile { version: 1, key: Some(ListingKey::server(identity)), era, ..ListingFile::default() };
            changed = true;
        }
        if let Some(tools) = tools {
            changed |= file.tools != tools;
            file.tools = tools;
        }
        file.registered = registered.to_vec();
        changed
    })
}

/// Change one record under its lock; on the first write of its kind, the listings' former places go.
fn change(
    home: &ClatHome,
    kind: ExtensionKind,
    extension: &str,
    change: impl FnOnce(&mut ListingFile) -> bool,
) -> Result<(), HomeError> {
    let first = !home.path().join(directory(kind)).is_dir();
    document(kind, extension).update_cache_if(home, |file| ((), change(file)))?;
    if first {
        for former in FORMER_PLACES {
            let path = home.path().join(former);
            let _ = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        }
    }
    Ok(())
}

/// Count `tools` (own names) of `server` among what its kept listing registered, when it lists them: their
/// changed definitions were accepted (`clat mcp accept`), so a search of the kept listing finds them before the
/// server starts again.
pub fn accepted(home: &ClatHome, server: &str, tools: &[String]) -> Result<(), HomeError> {
    change(home, ExtensionKind::McpStdio, server, |file| {
        let mut changed = false;
        for own in tools.iter().filter(|own| file.tools.iter().any(|t| &t.name == *own)) {
            let registered = crate::names::external_tool_name(crate::names::ExternalKind::Mcp, server, own);
            if !file.registered.contains(&registered) {
                file.registered.push(registered);
                changed = true;
            }
        }
        changed
    })
}

/// The era `server`'s last start learned, whatever its key.
pub fn learned_era(home: &ClatHome, server: &str) -> Option<LearnedEra> {
    document(ExtensionKind::McpStdio, server).read(home).ok()?.era
}

/// Keep (or, `None`, forget) the era `server`'s start learned. Written only when it changed.
pub fn keep_era(home: &ClatHome, server: &str, era: Option<LearnedEra>) -> Result<(), HomeError> {
    change(home, ExtensionKind::McpStdio, server, |file| {
        let changed = file.era != era;
        file.era = era;
        changed
    })
}

/// Forget an extension's record (a plugin was removed). A record already gone is fine.
pub fn forget(home: &ClatHome, kind: ExtensionKind, extension: &str) {
    let _ = std::fs::remove_file(home.path().join(format!("{}/{extension}.json", directory(kind))));
}

/// Every record of `kind`, by extension name, whatever it was listed under.
fn all(home: &ClatHome, kind: ExtensionKind) -> Vec<(String, Listing)> {
    let Ok(entries) = std::fs::read_dir(home.path().join(directory(kind))) else { return Vec::new() };
    let mut records: Vec<(String, Listing)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.strip_suffix(".json").map(str::to_string))
        .filter_map(|name| read(home, kind, &name).map(|listing| (name, listing)))
        .collect();
    records.sort_by(|a, b| a.0.cmp(&b.0));
    records
}

/// The registered names of the tools `written` names (by any of its names,
/// `names::names_tool`) in the last listings of the servers configured now
/// (`current`: `mcp:NAME` → identity); `None` when none has one (then only
/// starting every extension can tell what it is, or what it is close to).
pub fn registered_names(home: &ClatHome, written: &str, current: &HashMap<String, Identity>) -> Option<Vec<String>> {
    // Only the configured servers' records are read, and of each only its key and names: a `clat call` pays this.
    let found: Vec<String> = current
        .iter()
        .filter_map(|(key, identity)| Some((key.strip_prefix("mcp:")?, identity)))
        .filter_map(|(server, identity)| {
            let document: Document<ListedNames> =
                Document::at(format!("{SERVER_LISTINGS_DIR}/{server}.json"), Bound::Record);
            let names = document.read(home).ok()?;
            (names.key?.artifact == *identity).then_some((server, names.registered))
        })
        .flat_map(|(server, registered)| {
            registered.into_iter().filter(move |tool| names_tool(ExternalKind::Mcp, server, tool, written))
        })
        .collect();
    (!found.is_empty()).then_some(found)
}

/// The records of the configured servers (`current`: `mcp:NAME` → identity)
/// that were listed under their identity now, by server name: what a search
/// reads instead of starting them.
pub fn current_server_listings(home: &ClatHome, current: &HashMap<String, Identity>) -> HashMap<String, Listing> {
    current
        .iter()
        .filter_map(|(key, identity)| Some((key.strip_prefix("mcp:")?, identity)))
        .filter_map(|(server, identity)| {
            let listing = read(home, ExtensionKind::McpStdio, server)?;
            (listing.key.artifact == *identity).then(|| (server.to_string(), listing))
        })
        .collect()
}

/// Every (extension, registered tool name) of the kept listings — a server's
/// whatever the configuration now, a plugin's when `installed` (name →
/// identity) still has it as listed: hints for shell completion.
pub fn all_tools(home: &ClatHome, installed: &HashMap<String, Identity>) -> Vec<(String, String)> {
    let servers = all(home, ExtensionKind::McpStdio).into_iter().map(|(s, l)| (format!("server {s}"), l));
    let plugins = all(home, ExtensionKind::Wasm)
        .into_iter()
        .filter(|(plugin, listing)| installed.get(plugin) == Some(&listing.key.artifact))
        .map(|(p, l)| (format!("plugin {p}"), l));
    servers
        .chain(plugins)
        .flat_map(|(owner, listing)| listing.registered.into_iter().map(move |tool| (owner.clone(), tool)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::json::tool_spec_from_json;
    use serde_json::json;

    fn spec(name: &str) -> ToolSpec {
        tool_spec_from_json(&json!({ "name": name, "description": "d", "inputSchema": { "type": "object" } })).unwrap()
    }

    #[test]
    fn a_server_s_record_keeps_its_definitions_and_is_replaced_under_another_identity() {
        let dir = tempfile::tempdir().unwrap();
        let home = ClatHome::at(dir.path());
        // What the listings were before: removed with the first record.
        std::fs::create_dir_all(dir.path().join("cache")).unwrap();
        std::fs::write(dir.path().join("cache/listings.json"), "{}").unwrap();
        let (kind, old, new) = (ExtensionKind::McpStdio, Identity::package("old"), Identity::package("new"));
        let registered = ["mcp_srv_get_sum".to_string()];
        remember(&home, kind, "srv", &old, &registered, Some(&[spec("get_sum")])).unwrap();
        assert!(!dir.path().join("cache/listings.json").exists());
        let record = read(&home, kind, "srv").unwrap();
        assert_eq!((record.key.artifact.clone(), record.tools.len()), (old.clone(), 1));
        let file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("listings/servers/srv.json")).unwrap())
                .unwrap();
        assert_eq!(file["tools"][0]["hash"], crate::policy::pins::definition_hash(&spec("get_sum")));

        let current = HashMap::from([("mcp:srv".to_string(), old.clone())]);
        assert_eq!(registered_names(&home, "get_sum", &current), Some(registered.to_vec()));
        let moved = HashMap::from([("mcp:srv".to_string(), new.clone())]);
        assert_eq!(registered_names(&home, "get_sum", &moved), None, "a listing of another identity is not used");

        remember(&home, kind, "srv", &new, &[], None).unwrap();
        let record = read(&home, kind, "srv").unwrap();
        assert_eq!((record.key.artifact, record.tools.len()), (new, 0), "replaced, its old definitions with it");
        forget(&home, kind, "srv");
        assert!(read(&home, kind, "srv").is_none());
    }
}
