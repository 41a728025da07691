//! Plugin listings kept at install. `list-tools` runs when a plugin is
//! installed and when its grants change; what it answered is kept in
//! `$CLAT_HOME/plugins/listings/NAME.json` with what it was listed under
//! (`ListingKey`: the artifact's identity, the contract version, the granted
//! capabilities) and one fact of the component the load needs (whether it
//! imports the WASI preopens). A load whose plugin matches the key takes its
//! tools from here and maps nothing: the component is mapped and
//! instantiated at the first call that needs it. A kept listing that does not
//! match, or cannot be read, is never trusted: the plugin is listed again and
//! the listing kept anew. Losing the file costs one listing.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::capabilities::Capabilities;
use crate::contract::ToolSpec;
use crate::contract::json::{tool_spec_from_json, tool_spec_to_json};
use crate::identity::Identity;
use crate::trust::ClatHome;

/// The kept listings, inside `$CLAT_HOME`: one file per installed plugin.
pub const KEPT_LISTINGS_DIR: &str = "plugins/listings";

/// What a listing was made under: a plugin that differs in any of these is listed again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListingKey {
    /// The installed artifact (its digest).
    pub artifact: Identity,
    /// The contract version the host binds.
    pub contract: String,
    /// What was granted of what the manifest declares.
    pub grants: Capabilities,
}

/// A plugin's listing: its tools (the first `TOOLS_PER_SERVER_MAX`), how many it listed past them, and whether the
/// component imports the WASI preopens (whether a store gives it `/plugin`).
#[derive(Debug, Clone, PartialEq)]
pub struct KeptListing {
    pub tools: Vec<ToolSpec>,
    pub dropped: usize,
    pub sees_preopens: bool,
}

/// The file: the key and the listing, tools in MCP's JSON shape.
#[derive(Serialize, Deserialize)]
struct KeptFile {
    key: ListingKey,
    tools: Vec<Value>,
    dropped: usize,
    sees_preopens: bool,
}

/// Where one plugin's listing is kept, and the key it must match there.
#[derive(Debug, Clone)]
pub struct ListingPlace {
    home: ClatHome,
    plugin: String,
    key: ListingKey,
}

fn relative_path(plugin: &str) -> String {
    format!("{KEPT_LISTINGS_DIR}/{plugin}.json")
}

impl ListingPlace {
    pub fn new(home: &ClatHome, plugin: &str, key: ListingKey) -> ListingPlace {
        ListingPlace { home: home.clone(), plugin: plugin.to_string(), key }
    }

    /// The kept listing, when there is one made under this key; anything else (no file, an unreadable one,
    /// another key, a tool that no longer parses) is `None`.
    pub fn read(&self) -> Option<KeptListing> {
        let text = std::fs::read(self.home.path().join(relative_path(&self.plugin))).ok()?;
        let file: KeptFile = serde_json::from_slice(&text).ok()?;
        if file.key != self.key {
            return None;
        }
        let tools = file.tools.iter().map(tool_spec_from_json).collect::<Result<Vec<_>, _>>().ok()?;
        Some(KeptListing { tools, dropped: file.dropped, sees_preopens: file.sees_preopens })
    }

    /// Keep `listing` under this key, replacing what was kept (written atomically). A failure costs only the
    /// next load's listing, so it is logged, never the load's failure.
    pub fn keep(&self, listing: &KeptListing) {
        let file = KeptFile {
            key: self.key.clone(),
            tools: listing.tools.iter().map(tool_spec_to_json).collect(),
            dropped: listing.dropped,
            sees_preopens: listing.sees_preopens,
        };
        let text = serde_json::to_vec(&file).expect("a listing serializes");
        let written = std::fs::create_dir_all(self.home.path().join(KEPT_LISTINGS_DIR))
            .map_err(|e| e.to_string())
            .and_then(|()| self.home.write_atomic(&relative_path(&self.plugin), &text).map_err(|e| e.to_string()));
        if let Err(e) = written {
            tracing::warn!("cannot keep the listing of plugin {}: {e}", self.plugin);
        }
    }
}

/// Forget a plugin's kept listing (it was removed). A listing already gone is fine.
pub fn forget(home: &ClatHome, plugin: &str) {
    let _ = std::fs::remove_file(home.path().join(relative_path(plugin)));
}
