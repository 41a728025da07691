//! The process's wasmtime `Engine`: the component model, epoch interruption
//! with its ticker thread, and the instance allocator. Guests are instantiated
//! fresh for every call, so the allocator is the pooling one: memories, tables,
//! fiber stacks and instance metadata come from slots reserved once, and a
//! memory slot is reset to the module's copy-on-write image when an instance is
//! dropped, instead of mapping and unmapping a 4 GiB reservation per call. The
//! pool is sized from the per-store limits (`limits.rs`), so a guest that fits
//! the store fits a slot. Where the address space cannot hold the pool (a
//! `ulimit -v`, a small-VA machine), or `CLAT_WASM_ALLOCATOR=on-demand` asks for
//! it, the engine falls back to the on-demand allocator (the same guarantees,
//! slower per call) and says why. The compiler is Cranelift, or Winch (the
//! baseline compiler) for an author's edit loop, where compile time dominates.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use crate::limits::{
    WASM_EPOCH_TICK, WASM_INSTANCES_MAX, WASM_MEMORY_MAX_BYTES, WASM_POOL_INSTANCES_MAX, WASM_TABLE_ELEMENTS_MAX,
};

/// The environment variable that picks the allocator (`pooling`, the default, or `on-demand`).
pub const ALLOCATOR_ENV: &str = "CLAT_WASM_ALLOCATOR";

/// Which instance allocator the engine runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allocator {
    /// Slots for this many guest instances at once.
    Pooling { instances: u32 },
    /// Memory mapped per instance, because of `reason`.
    OnDemand { reason: String },
}

impl std::fmt::Display for Allocator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Allocator::Pooling { instances } => write!(f, "pooling ({instances} instances at once)"),
            Allocator::OnDemand { reason } => write!(f, "on-demand ({reason})"),
        }
    }
}

/// The engine and what it runs on.
pub struct GuestEngine {
    pub engine: Engine,
    pub allocator: Allocator,
}

/// Which compiler turns a component into machine code.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WasmCompiler {
    /// Cranelift: optimized code; what installed plugins run on.
    #[default]
    Optimizing,
    /// Winch, wasmtime's baseline compiler: one pass, about 5x faster to
    /// compile a 12–18 MB JavaScript or Python guest (2 s instead of 10 s
    /// on the 2-core machine), slower code. What the author's edit loop
    /// compiles anew after each edit (a Rust project, a package) runs on it.
    Baseline,
}

impl WasmCompiler {
    pub fn as_str(self) -> &'static str {
        match self {
            WasmCompiler::Optimizing => "cranelift",
            WasmCompiler::Baseline => "winch",
        }
    }
}

/// What the runtime asks of its engine.
#[derive(Debug, Clone, Copy)]
pub struct EngineOptions {
    /// Guest instances (calls, tool listings, context deliveries) alive at once;
    /// past it an instantiation fails with the pool's error. `0` = on-demand.
    pub instances_max: u32,
    /// The compiler (default: the optimizing one).
    pub compiler: WasmCompiler,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions { instances_max: WASM_POOL_INSTANCES_MAX, compiler: WasmCompiler::default() }
    }
}

/// Bytes of a pooled memory or table kept resident between calls.
const WASM_POOL_KEEP_RESIDENT_BYTES: usize = 1024 * 1024;

fn base_config(compiler: WasmCompiler) -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true);
    if compiler == WasmCompiler::Baseline {
        config.strategy(Strategy::Winch);
    }
    config
}

/// The pool for `instances` guest instances, each allowed what one store is.
fn pooling(instances: u32) -> PoolingAllocationConfig {
    let per_store = WASM_INSTANCES_MAX as u32;
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(instances)
        // A component holds several core modules (the program, the WASI
        // adapter, shims); the pool's totals allow an average of four memories
        // and tables and eight core instances per guest instance.
        .total_core_instances(instances * 8)
        .total_memories(instances * 4)
        .total_tables(instances * 4)
        .total_stacks(instances)
        .max_core_instances_per_component(per_store)
        .max_memories_per_component(per_store)
        .max_tables_per_component(per_store)
        .max_memories_per_module(2)
        .max_tables_per_module(4)
        .max_memory_size(WASM_MEMORY_MAX_BYTES)
        .table_elements(WASM_TABLE_ELEMENTS_MAX)
        // Pages a call dirtied are reset by memset (found with PAGEMAP_SCAN
        // where the kernel has it) instead of being unmapped and faulted in
        // again on the next call; beyond this much they are decommitted.
        .linear_memory_keep_resident(WASM_POOL_KEEP_RESIDENT_BYTES)
        .table_keep_resident(WASM_POOL_KEEP_RESIDENT_BYTES)
        .pagemap_scan(Enabled::Auto);
    pool
}

/// The engine for `options`: pooling when the machine allows it, else on-demand.
pub fn new_engine(options: EngineOptions) -> anyhow::Result<GuestEngine> {
    let on_demand = |reason: String| -> anyhow::Result<GuestEngine> {
        let engine = Engine::new(&base_config(options.compiler)).map_err(anyhow::Error::from)?;
        Ok(GuestEngine { engine, allocator: Allocator::OnDemand { reason } })
    };
    match std::env::var(ALLOCATOR_ENV).ok().as_deref() {
        Some("on-demand") => return on_demand(format!("{ALLOCATOR_ENV}=on-demand")),
        Some("pooling") | Some("") | None => {}
        Some(other) => tracing::warn!("{ALLOCATOR_ENV}={other} is not pooling or on-demand; using pooling"),
    }
    if options.instances_max == 0 {
        return on_demand("no pool was asked for".into());
    }
    let mut config = base_config(options.compiler);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(options.instances_max)));
    match Engine::new(&config) {
        Ok(engine) => Ok(GuestEngine { engine, allocator: Allocator::Pooling { instances: options.instances_max } }),
        Err(e) => {
            let reason = format!("the pool for {} instances could not be reserved: {e:#}", options.instances_max);
            tracing::warn!("WASM guests run on the on-demand allocator: {reason}");
            on_demand(reason)
        }
    }
}

/// Advance `engine`'s epoch every `WASM_EPOCH_TICK` until `stop` is set or
/// the engine is gone.
pub fn spawn_epoch_ticker(engine: &Engine, stop: &Arc<AtomicBool>) -> std::io::Result<()> {
    let (engine, stop) = (engine.weak(), Arc::clone(stop));
    std::thread::Builder::new().name("clat-wasm-epoch".into()).spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(WASM_EPOCH_TICK);
            match engine.upgrade() {
                Some(engine) => engine.increment_epoch(),
                None => break,
            }
        }
    })?;
    Ok(())
}
