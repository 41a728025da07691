//! Plugin listings kept at install. `list-tools` runs when a plugin is
//! installed and when its grants change; what it answered is kept in
//! `$CLAT_HOME/plugins/listings/NAME.json` with what it was listed under
//! (`ListingKey`: the artifact's identity, the contract version, the granted
//! capabilities), whether its tools' schemas passed registration's check, and
//! one fact of the component the load needs (whether it imports the WASI
//! preopens). A load whose plugin matches the key takes its
//! tools from here and maps nothing: the component is mapped and
//! instantiated at the first call that needs it. A kept listing that does not
//! match, or cannot be read, is never trusted: the plugin is listed again and
//! the listing kept anew. Losing the file costs one listing.

use serde::{Deserialize, Serialize};

use crate::contract::{ToolAnnotations, ToolSpec};
use crate::home::{Bound, ClatHome, Document};
use crate::policy::identity::Identity;
use crate::supply::capabilities::Capabilities;

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

/// A plugin's listing: its tools (the first `TOOLS_PER_PLUGIN_MAX`), how many it listed past them, whether every
/// tool's input schema passed registration's check (`registry::check_input_schema`; then registering them compiles
/// none), and whether the component imports the WASI preopens (whether a store gives it `/plugin`).
#[derive(Debug, Clone, PartialEq)]
pub struct KeptListing {
    pub tools: Vec<ToolSpec>,
    pub dropped: usize,
    pub schemas_checked: bool,
    pub sees_preopens: bool,
}

impl KeptListing {
    /// What a plugin listed, its schemas checked now.
    pub fn checked(tools: Vec<ToolSpec>, dropped: usize, sees_preopens: bool) -> KeptListing {
        let schemas_checked = tools.iter().all(|t| crate::registry::check_input_schema(&t.input_schema).is_ok());
        KeptListing { tools, dropped, schemas_checked, sees_preopens }
    }
}

/// The file: the key and the listing, each tool exactly as the plugin listed it (its schemas as the text it gave,
/// so one registration refuses stays refused).
#[derive(Default, Serialize, Deserialize)]
struct KeptFile {
    /// Files from before versions (0) are read as version 1.
    #[serde(default)]
    version: u32,
    /// None only in the empty record, which no plugin matches.
    key: Option<ListingKey>,
    tools: Vec<KeptTool>,
    dropped: usize,
    #[serde(default)]
    schemas_checked: bool,
    sees_preopens: bool,
}

crate::versioned_record!(KeptFile, 0..=1);

/// A `ToolSpec`, field for field.
#[derive(Serialize, Deserialize)]
struct KeptTool {
    name: String,
    title: Option<String>,
    description: String,
    input_schema: String,
    output_schema: Option<String>,
    annotations: KeptAnnotations,
}

/// `ToolAnnotations`, field for field.
#[derive(Serialize, Deserialize)]
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

/// One plugin's kept listing.
fn document(plugin: &str) -> Document<KeptFile> {
    Document::at(relative_path(plugin), Bound::Record)
}

impl ListingPlace {
    pub fn new(home: &ClatHome, plugin: &str, key: ListingKey) -> ListingPlace {
        ListingPlace { home: home.clone(), plugin: plugin.to_string(), key }
    }

    /// The kept listing, when there is one made under this key; anything else (no file, an unreadable one,
    /// another key) is `None`.
    pub fn read(&self) -> Option<KeptListing> {
        let file = document(&self.plugin).read(&self.home).ok()?;
        if file.key.as_ref() != Some(&self.key) {
            return None;
        }
        Some(KeptListing {
            tools: file.tools.into_iter().map(ToolSpec::from).collect(),
            dropped: file.dropped,
            schemas_checked: file.schemas_checked,
            sees_preopens: file.sees_preopens,
        })
    }

    /// Keep `listing` under this key, replacing what was kept (written atomically). A failure costs only the
    /// next load's listing, so it is logged, never the load's failure.
    pub fn keep(&self, listing: &KeptListing) {
        let kept = KeptFile {
            version: 1,
            key: Some(self.key.clone()),
            tools: listing.tools.iter().map(KeptTool::from).collect(),
            dropped: listing.dropped,
            schemas_checked: listing.schemas_checked,
            sees_preopens: listing.sees_preopens,
        };
        let written = document(&self.plugin).update_cache_if(&self.home, |file| {
            *file = kept;
            ((), true)
        });
        if let Err(e) = written {
            tracing::warn!("cannot keep the listing of plugin {}: {e}", self.plugin);
        }
    }
}

/// Forget a plugin's kept listing (it was removed). A listing already gone is fine.
pub fn forget(home: &ClatHome, plugin: &str) {
    let _ = std::fs::remove_file(home.path().join(relative_path(plugin)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::json::tool_spec_from_json;
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
