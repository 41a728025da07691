//! One `Store` per guest call, made from the plugin's `StoreTemplate`: the
//! guest's WASI context (no ambient authority: no args, no sockets, no
//! project; its own artifact dir read-only at `/plugin`; stdout/stderr into its
//! tail; as environment only the variables its grant names, read when the call
//! starts, and only for a tool that uses `env`), its `wasi:http` hooks (the
//! grant, for plugins that declare `http`; refused for a tool that does not use it),
//! its resource limits, the epoch deadline, and what host services need (the
//! scope's services, the current run, the plugin's name).
//!
//! What does not change between calls is prepared once, at load, in the
//! template: the `/plugin` directory is opened then and handed to each call's
//! `wasi:filesystem/preopens` as a shared read-only handle (`get_directories`
//! below shadows wasmtime-wasi's, which would open the directory again for
//! every store), the source label is formatted then, and the limits are fixed.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::filesystem::{Descriptor, Dir};
use wasmtime_wasi::{FsPerms, OpenMode, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::http::{Egress, GuestHttp};
use super::stdio::{SharedTail, TailStream};
use crate::limits::{WASM_INSTANCES_MAX, WASM_TABLE_ELEMENTS_MAX};
use crate::policy::identity::Identity;
use crate::run::RunContext;
use crate::services::{HostServices, HostWaits};
use crate::supply::capabilities::{Capability, ToolUses};

/// Where a guest sees its own artifact directory.
pub const PLUGIN_DIR_GUEST_PATH: &str = "/plugin";

/// Everything a guest call's store holds.
pub struct GuestState {
    wasi: WasiCtx,
    table: ResourceTable,
    http_ctx: WasiHttpCtx,
    http: GuestHttp,
    limits: StoreLimits,
    /// The plugin's artifact directory, opened once at load (read-only).
    plugin_dir: Option<Dir>,
    pub(crate) services: Arc<HostServices>,
    pub(crate) run: Option<RunContext>,
    /// `wasm:{plugin}`, the source label in events and logs.
    pub(crate) source: Arc<str>,
    /// The plugin's identity: its host-tool calls are judged as its own.
    pub(crate) identity: Arc<Identity>,
    /// Log lines written in this call (capped).
    pub(crate) log_lines: u32,
    /// The plugin's host requests waiting on the host (its calls' deadlines extend meanwhile).
    pub(crate) waits: HostWaits,
    deadline: Instant,
}

impl WasiView for GuestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for GuestState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http_ctx, table: &mut self.table, hooks: &mut self.http }
    }
}

/// What every store of one plugin shares, prepared when the plugin loads.
pub struct StoreTemplate {
    source: Arc<str>,
    identity: Arc<Identity>,
    plugin_dir: Option<Dir>,
    memory_max: usize,
    tail: SharedTail,
    services: Arc<HostServices>,
    waits: HostWaits,
    /// The plugin's outbound HTTP (plugins that declare `http`).
    egress: Option<Arc<Egress>>,
    /// The environment variables granted to the plugin.
    env_grants: Vec<String>,
    /// Which tools use the grant.
    uses: ToolUses,
}

/// How one template is made.
pub struct TemplateSpec<'a> {
    pub plugin: &'a str,
    pub artifact_dir: &'a Path,
    /// Whether the component imports `wasi:filesystem/preopens` (else it can
    /// never see `/plugin`, and nothing is opened).
    pub sees_preopens: bool,
    pub memory_max: usize,
    pub tail: SharedTail,
    pub services: Arc<HostServices>,
    pub waits: HostWaits,
    pub egress: Option<Arc<Egress>>,
    pub env_grants: Vec<String>,
    /// Which tools use the grant (`[tools]` of the manifest).
    pub uses: ToolUses,
    /// What the plugin is (its package's artifact digest).
    pub identity: Identity,
}

impl StoreTemplate {
    pub fn new(spec: TemplateSpec<'_>) -> anyhow::Result<StoreTemplate> {
        let plugin_dir = if spec.sees_preopens {
            let dir = cap_std::fs::Dir::open_ambient_dir(spec.artifact_dir, cap_std::ambient_authority())
                .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", spec.artifact_dir.display()))?;
            Some(Dir::new(dir.into_std_file(), FsPerms::ReadOnly, OpenMode::READ, false))
        } else {
            None
        };
        Ok(StoreTemplate {
            source: format!("wasm:{}", spec.plugin).into(),
            identity: Arc::new(spec.identity),
            plugin_dir,
            memory_max: spec.memory_max,
            tail: spec.tail,
            services: spec.services,
            waits: spec.waits,
            egress: spec.egress,
            env_grants: spec.env_grants,
            uses: spec.uses,
        })
    }

    /// The plugin's identity.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// A fresh store for one call of `tool` (or of no tool: list-tools,
    /// context delivery) in `run` (or none), interrupted at `deadline`; its
    /// HTTP requests must end by `http_deadline`. It gets the granted
    /// environment and HTTP only if the tool uses them.
    pub fn new_store(
        &self,
        engine: &Engine,
        tool: Option<&str>,
        run: Option<RunContext>,
        deadline: Instant,
        http_deadline: Instant,
    ) -> Store<GuestState> {
        let uses = |capability| match tool {
            Some(tool) => self.uses.allows(tool, capability),
            None => !self.uses.is_per_tool(),
        };
        let mut wasi = WasiCtxBuilder::new();
        wasi.stdout(TailStream(Arc::clone(&self.tail)))
            .stderr(TailStream(Arc::clone(&self.tail)))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if uses(Capability::Env) {
            for name in &self.env_grants {
                if let Ok(value) = std::env::var(name) {
                    wasi.env(name, value);
                }
            }
        }
        let mut http = GuestHttp::new(self.egress.clone(), run.clone(), &self.source, http_deadline);
        if let Some(tool) = tool.filter(|_| self.egress.is_some() && !uses(Capability::Http)) {
            http = http.refusing(format!(
                "tool {tool} of {} does not use http: its manifest lists it under [tools] without \
                 `uses = [\"http\"]` (add it there to let this tool reach its plugin's http grant)",
                self.source
            ));
        }
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.memory_max)
            .table_elements(WASM_TABLE_ELEMENTS_MAX)
            .instances(WASM_INSTANCES_MAX)
            .tables(WASM_INSTANCES_MAX)
            .memories(WASM_INSTANCES_MAX)
            .trap_on_grow_failure(true)
            .build();
        let state = GuestState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            http_ctx: WasiHttpCtx::new(),
            http,
            limits,
            plugin_dir: self.plugin_dir.clone(),
            services: Arc::clone(&self.services),
            run,
            source: Arc::clone(&self.source),
            identity: Arc::clone(&self.identity),
            log_lines: 0,
            waits: self.waits.clone(),
            deadline,
        };
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limits);
        // Check every tick: yield to the executor (so cancellation can drop the
        // call), and interrupt once the call's deadline has passed.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|ctx| {
            if Instant::now() >= ctx.data().deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        store
    }
}

/// The `wasi:filesystem/preopens` version wasmtime-wasi links (guests importing
/// an older 0.2 version are matched to it by semver).
const PREOPENS_INTERFACE: &str = "wasi:filesystem/preopens@0.2.12";

/// Replace wasmtime-wasi's `get-directories` with one that hands out the
/// template's already-open `/plugin` directory.
pub fn link_plugin_dir(linker: &mut Linker<GuestState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let linked = linker.instance(PREOPENS_INTERFACE).and_then(|mut preopens| {
        preopens.func_wrap("get-directories", |mut store, (): ()| {
            let state = store.data_mut();
            let mut directories = Vec::new();
            if let Some(dir) = state.plugin_dir.clone() {
                let descriptor: Resource<Descriptor> = state.table.push(Descriptor::Dir(dir))?;
                directories.push((descriptor, PLUGIN_DIR_GUEST_PATH.to_string()));
            }
            Ok((directories,))
        })
    });
    linker.allow_shadowing(false);
    linked.map_err(anyhow::Error::from)
}
