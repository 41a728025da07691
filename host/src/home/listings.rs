//! Each extension's last listing, kept in `$CLAT_HOME/cache/listings.json`
//! by name with the identity it was listed under (an MCP server's command and
//! arguments, URL, or package digest; a plugin's artifact digest). A command
//! given a tool's short name (`get_sum`) starts only the servers whose last
//! listing has a tool of that name, not every server; shell completion offers
//! the tools of every listing. A listing whose identity is not the
//! extension's now is never used, and an extension writes its listing again
//! each time it starts (a plugin also when it is installed), so the next
//! command sees what it offers today. The cache is a hint: losing it (or a
//! write that fails) costs only the start of every server, and a tool a
//! server dropped since its listing is reported unknown once (that start
//! rewrites the listing, so the next command starts everything).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::extension::ExtensionKind;
use crate::home::{Bound, ClatHome, Document, HomeError};
use crate::names::{ExternalKind, names_tool};
use crate::policy::identity::Identity;

/// The cache file, inside `$CLAT_HOME`.
pub const LISTINGS_FILE: &str = "cache/listings.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct Listings {
    /// A file of another version (or none: before versions) is a cache lost.
    #[serde(default)]
    version: u32,
    /// MCP servers, by name.
    #[serde(default)]
    servers: BTreeMap<String, Listing>,
    /// WASM plugins, by name.
    #[serde(default)]
    plugins: BTreeMap<String, Listing>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Listing {
    identity: Identity,
    /// The registered names of its tools.
    tools: Vec<String>,
}

crate::versioned_record!(Listings, 1..=1);

/// The cache, a hint: one that cannot be read is empty.
const LISTINGS: Document<Listings> = Document::new(LISTINGS_FILE, Bound::Record);

/// Keep what `extension` (running as `identity`) registered when it started.
pub fn remember(
    home: &ClatHome,
    kind: ExtensionKind,
    extension: &str,
    identity: &Identity,
    tools: &[String],
) -> Result<(), HomeError> {
    let listing = Listing { identity: identity.clone(), tools: tools.to_vec() };
    // The listing of every start is usually the last one: then nothing is written.
    LISTINGS.update_cache_if(home, |listings| {
        let listed = match kind {
            ExtensionKind::Wasm => &mut listings.plugins,
            _ => &mut listings.servers,
        };
        let previous = listed.insert(extension.to_string(), listing.clone());
        ((), previous.is_none_or(|p| p.identity != listing.identity || p.tools != listing.tools))
    })
}

/// The registered names of the tools `written` names (by any of its names,
/// `names::names_tool`) in the last listings of the servers configured now
/// (`current`: `mcp:NAME` → identity); `None` when none has one (then only
/// starting every extension can tell what it is, or what it is close to).
pub fn registered_names(home: &ClatHome, written: &str, current: &HashMap<String, Identity>) -> Option<Vec<String>> {
    let listings = LISTINGS.read_or_empty(home);
    let found: Vec<String> = listings
        .servers
        .iter()
        .filter(|(server, listing)| current.get(&format!("mcp:{server}")) == Some(&listing.identity))
        .flat_map(|(server, listing)| {
            listing.tools.iter().filter(move |tool| names_tool(ExternalKind::Mcp, server, tool, written)).cloned()
        })
        .collect();
    (!found.is_empty()).then_some(found)
}

/// Every (extension, registered tool name) of the kept listings — a server's
/// whatever the configuration now, a plugin's when `installed` (name →
/// identity) still has it as listed: hints for shell completion.
pub fn all_tools(home: &ClatHome, installed: &HashMap<String, Identity>) -> Vec<(String, String)> {
    let listings = LISTINGS.read_or_empty(home);
    let plugins =
        listings.plugins.into_iter().filter(|(plugin, listing)| installed.get(plugin) == Some(&listing.identity));
    listings
        .servers
        .into_iter()
        .map(|(server, listing)| (format!("server {server}"), listing))
        .chain(plugins.map(|(plugin, listing)| (format!("plugin {plugin}"), listing)))
        .flat_map(|(owner, listing)| listing.tools.into_iter().map(move |tool| (owner.clone(), tool)))
        .collect()
}
