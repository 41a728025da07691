//! Loading one plugin: how it is set up beyond its component (`PluginSetup`:
//! memory cap, declared and granted capabilities, identity, where its listing
//! is kept), compiling or mapping it through the runtime (`runtime.rs`) unless
//! its listing was kept, its store template, and `list-tools` outside any run;
//! and the loads for a file, for install-time validation and for keeping a
//! listing.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;

use super::http::Egress;
use super::kept::{KeptListing, ListingKey, ListingPlace};
use super::plugin::{WasmPlugin, spawn_context_delivery};
use super::runtime::{ComponentSource, LoadError, PlainSource, WasmRuntime, artifact_key};
use super::stdio::SharedTail;
use super::store::{StoreTemplate, TemplateSpec};
use crate::contract::{CONTRACT_VERSION, ToolSpec};
use crate::home::ClatHome;
use crate::limits::WASM_MEMORY_MAX_BYTES;
use crate::redact::OutputTail;
use crate::registry::Registry;
use crate::services::HostServices;
use crate::supply::capabilities::{Capabilities, ToolUses};
use crate::sync::{Unpoisoned, UnpoisonedRw};

/// How one plugin is set up beyond its component: its memory cap, what its
/// manifest declares, what the user granted of it, and its identity (an
/// installed package's artifact digest; `None`: the component's path).
#[derive(Debug, Clone, Default)]
pub struct PluginSetup {
    pub memory_max: Option<usize>,
    pub declared: Capabilities,
    pub granted: Capabilities,
    /// Which tools use which capability (`[tools]` of the manifest).
    pub uses: ToolUses,
    pub identity: Option<crate::policy::identity::Identity>,
    /// Where its listing is kept (`kept.rs`): an installed package's. `None`: listed at every load.
    pub listing: Option<ListingPlace>,
    /// A plain component (`kind = "component"`): its tools are its exported functions, which its manifest's
    /// `[tools]` may describe.
    pub plain: bool,
    /// `[tools]` of its manifest.
    pub tools: std::collections::BTreeMap<String, crate::supply::capabilities::ToolDeclaration>,
}

/// What a plain component's kept listing is keyed by in place of a contract version: the rules that derive its
/// tools from its exports (a change of them lists it again).
pub const PLAIN_LISTING_RULES: &str = "plain-component/1";

impl PluginSetup {
    /// The setup of an installed package of `home`.
    pub fn of(package: &crate::supply::packages::Installed, home: &ClatHome) -> PluginSetup {
        let mut setup = PluginSetup {
            memory_max: package.manifest.memory_max(),
            declared: package.manifest.capabilities.clone(),
            granted: package.grants.clone(),
            uses: package.manifest.tool_uses(),
            identity: Some(package.identity()),
            listing: None,
            plain: package.manifest.kind == crate::supply::packages::PackageKind::Component,
            tools: package.manifest.tools.clone(),
        };
        let key = ListingKey {
            artifact: package.identity(),
            contract: if setup.plain { PLAIN_LISTING_RULES } else { CONTRACT_VERSION }.to_string(),
            grants: setup.effective(),
        };
        setup.listing = Some(ListingPlace::new(home, &package.manifest.name, key));
        setup
    }

    /// `wasi:http` is linked for a plugin that declares `http`, granted or not
    /// (with no grant every request is refused, with the reason).
    fn links_http(&self) -> bool {
        !self.declared.http.is_empty()
    }

    /// What is granted of what is declared (a grant never widens the declaration).
    fn effective(&self) -> Capabilities {
        self.granted.within(&self.declared)
    }
}

impl WasmRuntime {
    /// Load one plugin: compile (or reuse), link against the contract, and ask
    /// it for its tools (outside any run: it may not call host tools then).
    pub async fn load(
        self: &Arc<Self>,
        name: &str,
        artifact_dir: &Path,
        entry: &Path,
        setup: PluginSetup,
        services: Arc<HostServices>,
    ) -> Result<Arc<WasmPlugin>, LoadError> {
        self.load_from(name, artifact_dir, entry, None, setup, services).await
    }

    /// Load an installed plugin: its artifact directory is content-addressed,
    /// so once its compiled form is cached under that name, loading maps the
    /// compiled file and never reads or hashes the component again.
    pub async fn load_installed(
        self: &Arc<Self>,
        name: &str,
        artifact_dir: &Path,
        entry: &Path,
        setup: PluginSetup,
        services: Arc<HostServices>,
    ) -> Result<Arc<WasmPlugin>, LoadError> {
        let artifact = artifact_key(artifact_dir, entry);
        self.load_from(name, artifact_dir, entry, artifact, setup, services).await
    }

    async fn load_from(
        self: &Arc<Self>,
        name: &str,
        artifact_dir: &Path,
        entry: &Path,
        artifact: Option<String>,
        setup: PluginSetup,
        services: Arc<HostServices>,
    ) -> Result<Arc<WasmPlugin>, LoadError> {
        let plain =
            setup.plain.then(|| PlainSource { declared: setup.tools.clone(), package: artifact_dir.to_path_buf() });
        let source = ComponentSource { entry: entry.to_path_buf(), artifact, links_http: setup.links_http(), plain };
        // A listing kept under this plugin's key (artifact, contract, grants) spares the load the component.
        let kept = setup.listing.as_ref().and_then(ListingPlace::read);
        let (prepared, sees_preopens) = match &kept {
            Some(kept) => (None, kept.sees_preopens),
            None => {
                let (prepared, component) = self.prepare(name, &source).await?;
                // A component that does not import the preopens can never see `/plugin`.
                let sees_preopens = component
                    .component_type()
                    .imports(&prepared.engine)
                    .any(|(import, _)| import.starts_with("wasi:filesystem/preopens@"));
                (Some(prepared), sees_preopens)
            }
        };
        let granted = setup.effective();
        // Granted values are secrets in every diagnostic from now on.
        crate::redact::register_secrets(granted.env.iter().filter_map(|n| std::env::var(n).ok()));
        let egress = setup.links_http().then(|| {
            let lookup = Arc::clone(&self.lookup.read_locked());
            Egress::new(name, granted.http_patterns(), lookup)
        });
        let tail: SharedTail = Arc::new(Mutex::new(OutputTail::new()));
        let waits = crate::services::HostWaits::default();
        let template = StoreTemplate::new(TemplateSpec {
            plugin: name,
            artifact_dir,
            sees_preopens,
            memory_max: setup.memory_max.unwrap_or(WASM_MEMORY_MAX_BYTES).min(WASM_MEMORY_MAX_BYTES),
            tail: Arc::clone(&tail),
            services,
            waits: waits.clone(),
            egress,
            env_grants: granted.env.clone(),
            uses: setup.uses.clone(),
            identity: setup.identity.clone().unwrap_or_else(|| crate::policy::identity::Identity::file(entry)),
        })
        .map_err(LoadError::NotAComponent)?;
        let plugin = Arc::new(WasmPlugin {
            name: name.to_string(),
            granted,
            uses: setup.uses.clone(),
            prepared: tokio::sync::OnceCell::new_with(prepared),
            source,
            runtime: Arc::clone(self),
            template,
            tail,
            tools: Mutex::new(Vec::new()),
            dropped_tools: Default::default(),
            schemas_checked: kept.as_ref().is_some_and(|k| k.schemas_checked),
            refused: Mutex::new(kept.as_ref().map(|k| k.refused.clone()).unwrap_or_default()),
            context: tokio::sync::watch::channel(None).0,
            delivered: Default::default(),
            delivery: Default::default(),
            waits,
        });
        let tools = match kept {
            Some(kept) => {
                plugin.dropped_tools.store(kept.dropped, Ordering::Relaxed);
                kept.tools
            }
            None => {
                let tools = plugin.list_tools().await.map_err(LoadError::ListTools)?;
                if setup.plain && tools.is_empty() {
                    return Err(LoadError::NothingOffered { refused: plugin.refused() });
                }
                if let Some(place) = &setup.listing {
                    let mut listing = KeptListing::checked(tools.clone(), plugin.dropped_tools(), sees_preopens);
                    listing.refused = plugin.refused();
                    place.keep(&listing);
                }
                tools
            }
        };
        *plugin.tools.locked() = tools;
        // A plain component has no `context-changed` to deliver to.
        if !setup.plain {
            spawn_context_delivery(&plugin);
        }
        Ok(plugin)
    }
}

/// Load a component file directly (tests, `clat plugin install` validation).
pub async fn load_file(
    runtime: &Arc<WasmRuntime>,
    name: &str,
    entry: &Path,
    services: Arc<HostServices>,
) -> Result<Arc<WasmPlugin>, LoadError> {
    let dir = entry.parent().context("the component path has no parent directory").map_err(LoadError::NotAComponent)?;
    runtime.load(name, dir, entry, PluginSetup::default(), services).await
}

/// Validate a component for installation: it compiles (warming the cache),
/// implements the `clat-plugin` world and lists its tools without trapping.
/// It runs with a detached set of host services and no run, so it can touch
/// nothing.
pub async fn validate_component(
    runtime: &Arc<WasmRuntime>,
    package: &Path,
    manifest: &crate::supply::packages::Manifest,
) -> Result<Validated, LoadError> {
    let entry = package.join(&manifest.entry);
    let setup = PluginSetup {
        declared: manifest.capabilities.clone(),
        plain: manifest.kind == crate::supply::packages::PackageKind::Component,
        tools: manifest.tools.clone(),
        ..PluginSetup::default()
    };
    let plugin = runtime.load(&manifest.name, package, &entry, setup, detached_services(package)).await?;
    Ok(Validated { tools: plugin.tools(), refused: plugin.refused() })
}

/// What validating a component found: its tools, and a plain component's functions not offered (each with why).
#[derive(Debug, Clone)]
pub struct Validated {
    pub tools: Vec<ToolSpec>,
    pub refused: Vec<String>,
}

/// List an installed plugin under its grants and keep the listing (`kept.rs`), so that loads map nothing: after
/// `clat plugin install` and whenever its grants change. A listing already kept under the same key is kept as
/// it is. Like validation, it runs with a detached set of host services and no run.
pub async fn keep_listing(
    runtime: &Arc<WasmRuntime>,
    home: &ClatHome,
    package: &crate::supply::packages::Installed,
) -> Result<Vec<ToolSpec>, LoadError> {
    let entry = package.entry_path();
    let setup = PluginSetup::of(package, home);
    let services = detached_services(&package.dir);
    let plugin = runtime.load_installed(&package.manifest.name, &package.dir, &entry, setup, services).await?;
    Ok(plugin.tools())
}

/// Host services that reach nothing: no run, no model, a registry of no tools.
fn detached_services(dir: &Path) -> Arc<HostServices> {
    let registry = Arc::new(Registry::new(&[]));
    Arc::new(HostServices::new(
        &registry,
        Arc::new(crate::services::sampling::OfflineProvider),
        dir,
        "install-validation",
    ))
}
