//! One `Store` per guest call: the guest's WASI context (no ambient authority:
//! no args, no sockets, no project; its own artifact dir read-only at
//! `/plugin`; stdout/stderr into its tail; as environment only the variables
//! its grant names, read when the call starts), its `wasi:http` hooks (the
//! grant, for plugins that declare `http`), its resource limits, the epoch
//! deadline, and what host services need (the scope's services, the current
//! run, the plugin's name).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::{Engine, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::http::{Egress, GuestHttp};
use super::stdio::{SharedTail, TailStream};
use crate::limits::{WASM_INSTANCES_MAX, WASM_TABLE_ELEMENTS_MAX};
use crate::run::RunContext;
use crate::services::{HostServices, HostWaits};

/// Everything a guest call's store holds.
pub struct GuestState {
    wasi: WasiCtx,
    table: ResourceTable,
    http_ctx: WasiHttpCtx,
    http: GuestHttp,
    limits: StoreLimits,
    pub(crate) services: Arc<HostServices>,
    pub(crate) run: Option<RunContext>,
    /// `wasm:{plugin}`, the source label in events and logs.
    pub(crate) source: String,
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

/// What a store is made for.
pub struct StoreSpec<'a> {
    pub plugin: &'a str,
    pub artifact_dir: &'a Path,
    pub memory_max: usize,
    pub tail: &'a SharedTail,
    pub services: Arc<HostServices>,
    pub run: Option<RunContext>,
    pub waits: HostWaits,
    pub deadline: Instant,
    /// The plugin's outbound HTTP (plugins that declare `http`), and the
    /// deadline each request must finish within.
    pub egress: Option<Arc<Egress>>,
    pub http_deadline: Instant,
    /// The environment variables granted to the plugin.
    pub env_grants: &'a [String],
}

/// A fresh store for one call.
pub fn new_store(engine: &Engine, spec: StoreSpec<'_>) -> anyhow::Result<Store<GuestState>> {
    let mut wasi = WasiCtxBuilder::new();
    wasi.stdout(TailStream(Arc::clone(spec.tail)))
        .stderr(TailStream(Arc::clone(spec.tail)))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .preopened_dir(spec.artifact_dir, "/plugin", FsPerms::ReadOnly)
        .map_err(anyhow::Error::from)?;
    for name in spec.env_grants {
        if let Ok(value) = std::env::var(name) {
            wasi.env(name, value);
        }
    }
    let limits = StoreLimitsBuilder::new()
        .memory_size(spec.memory_max)
        .table_elements(WASM_TABLE_ELEMENTS_MAX)
        .instances(WASM_INSTANCES_MAX)
        .tables(WASM_INSTANCES_MAX)
        .memories(WASM_INSTANCES_MAX)
        .trap_on_grow_failure(true)
        .build();
    let source = format!("wasm:{}", spec.plugin);
    let state = GuestState {
        wasi: wasi.build(),
        table: ResourceTable::new(),
        http_ctx: WasiHttpCtx::new(),
        http: GuestHttp::new(spec.egress, spec.run.clone(), &source, spec.http_deadline),
        limits,
        services: spec.services,
        run: spec.run,
        source,
        log_lines: 0,
        waits: spec.waits,
        deadline: spec.deadline,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limits);
    // Check every tick: yield to the executor (so cancellation can drop the
    // call), and interrupt once the call's deadline has passed.
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|ctx| {
        if Instant::now() >= ctx.data().deadline { Ok(UpdateDeadline::Interrupt) } else { Ok(UpdateDeadline::Yield(1)) }
    });
    Ok(store)
}
