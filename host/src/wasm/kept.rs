//! A plugin's listing kept at install: `list-tools` runs when a plugin is
//! installed and when its grants change, and what it answered is its record
//! in the home's listings (`home/listings.rs`) under what it was listed under
//! (`ListingKey`: the artifact's identity, the contract version, the granted
//! capabilities), with whether its tools' schemas passed registration's check
//! and one fact of the component the load needs (whether it imports the WASI
//! preopens). This is the key check on top of that record: a load whose
//! plugin matches the key takes its tools from here and maps nothing — the
//! component is mapped and instantiated at the first call that needs it. A
//! record that does not match, or cannot be read, is never trusted: the
//! plugin is listed again and its record kept anew. Losing it costs one
//! listing.

use crate::contract::ToolSpec;
use crate::extension::ExtensionKind;
use crate::home::ClatHome;
use crate::home::listings::{self, Listing};
use crate::names::{ExternalKind, external_tool_name};

pub use crate::home::listings::ListingKey;

/// A plugin's listing: its tools (the first `TOOLS_PER_PLUGIN_MAX`), how many it listed past them, whether every
/// tool's input schema passed registration's check (`registry::check_input_schema`; then registering them compiles
/// none), and whether the component imports the WASI preopens (whether a store gives it `/plugin`).
#[derive(Debug, Clone, PartialEq)]
pub struct KeptListing {
    pub tools: Vec<ToolSpec>,
    pub dropped: usize,
    pub schemas_checked: bool,
    pub sees_preopens: bool,
    /// A plain component's functions not offered, each with why.
    pub refused: Vec<String>,
}

impl KeptListing {
    /// What a plugin listed, its schemas checked now.
    pub fn checked(tools: Vec<ToolSpec>, dropped: usize, sees_preopens: bool) -> KeptListing {
        let schemas_checked = tools.iter().all(|t| crate::registry::check_input_schema(&t.input_schema).is_ok());
        KeptListing { tools, dropped, schemas_checked, sees_preopens, refused: Vec::new() }
    }
}

/// Where one plugin's listing is kept, and the key it must match there.
#[derive(Debug, Clone)]
pub struct ListingPlace {
    home: ClatHome,
    plugin: String,
    key: ListingKey,
}

impl ListingPlace {
    pub fn new(home: &ClatHome, plugin: &str, key: ListingKey) -> ListingPlace {
        ListingPlace { home: home.clone(), plugin: plugin.to_string(), key }
    }

    /// The kept listing, when there is one made under this key; anything else (no record, an unreadable one,
    /// another key) is `None`.
    pub fn read(&self) -> Option<KeptListing> {
        let record = listings::read(&self.home, ExtensionKind::Wasm, &self.plugin)?;
        if record.key != self.key {
            return None;
        }
        Some(KeptListing {
            tools: record.tools,
            dropped: record.dropped,
            schemas_checked: record.schemas_checked,
            sees_preopens: record.sees_preopens,
            refused: record.refused,
        })
    }

    /// Keep `listing` under this key, replacing what was kept (written atomically), its tools' registered names
    /// with it. A failure costs only the next load's listing, so it is logged, never the load's failure.
    pub fn keep(&self, listing: &KeptListing) {
        let registered: Vec<String> =
            listing.tools.iter().map(|t| external_tool_name(ExternalKind::Wasm, &self.plugin, &t.name)).collect();
        let record = Listing {
            key: self.key.clone(),
            tools: listing.tools.clone(),
            registered,
            dropped: listing.dropped,
            schemas_checked: listing.schemas_checked,
            sees_preopens: listing.sees_preopens,
            refused: listing.refused.clone(),
        };
        if let Err(e) = listings::keep_listed(&self.home, ExtensionKind::Wasm, &self.plugin, &record) {
            tracing::warn!("cannot keep the listing of plugin {}: {e}", self.plugin);
        }
    }
}

/// Forget a plugin's kept listing (it was removed). A listing already gone is fine.
pub fn forget(home: &ClatHome, plugin: &str) {
    listings::forget(home, ExtensionKind::Wasm, plugin);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::json::tool_spec_from_json;
    use crate::policy::identity::Identity;
    use crate::supply::capabilities::Capabilities;
    use serde_json::{Value, json};

    fn spec(schema: Value) -> ToolSpec {
        tool_spec_from_json(&json!({ "name": "t", "description": "d", "inputSchema": schema })).unwrap()
    }

    #[test]
    fn a_listing_is_marked_checked_only_when_every_schema_compiles() {
        let good = spec(json!({ "type": "object", "properties": { "n": { "type": "integer" } } }));
        let bad = spec(json!({ "type": 5 }));
        assert!(KeptListing::checked(vec![good.clone()], 0, false).schemas_checked);
        assert!(!KeptListing::checked(vec![good, bad], 0, false).schemas_checked);
    }

    #[test]
    fn a_tool_is_kept_exactly_as_listed_even_a_schema_registration_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let home = ClatHome::at(dir.path());
        let key = ListingKey {
            artifact: Identity::package("abc"),
            contract: "0.1.0".into(),
            grants: Capabilities::default(),
        };
        let mut broken = spec(json!({ "type": "object" }));
        broken.input_schema = "not json {".into();
        broken.output_schema = Some("{\"type\":\"object\"}".into());
        broken.annotations.destructive = Some(true);
        let listing = KeptListing::checked(vec![broken], 0, false);
        assert!(!listing.schemas_checked);
        let place = ListingPlace::new(&home, "p", key);
        place.keep(&listing);
        assert_eq!(place.read(), Some(listing), "the broken schema stays broken, so registration still refuses it");
    }

    #[test]
    fn a_kept_listing_is_read_back_only_under_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = ClatHome::at(dir.path());
        let key = |contract: &str| ListingKey {
            artifact: Identity::package("abc"),
            contract: contract.into(),
            grants: Capabilities::default(),
        };
        let place = ListingPlace::new(&home, "p", key("0.1.0"));
        assert_eq!(place.read(), None);
        let listing = KeptListing::checked(vec![spec(json!({ "type": "object" }))], 2, true);
        place.keep(&listing);
        assert_eq!(place.read(), Some(listing));
        assert_eq!(ListingPlace::new(&home, "p", key("0.2.0")).read(), None, "another key");
        forget(&home, "p");
        assert_eq!(place.read(), None);
    }
}
