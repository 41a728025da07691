//! One wasmtime version's cost of what CLAT does per WASM tool call: a fresh
//! store, an instance of a pre-linked component (every import a trap: no
//! WASI, no host), and a call of its exported `call-tool` — on an engine
//! configured as CLAT's (pooling allocator with CLAT's limits, epoch
//! interruption, Cranelift). `run.sh` builds this once per version; the
//! `summary:` line is what it compares.
//!
//! The component is `$COMPONENT` (CLAT's test guest, `call-tool("echo", …)`
//! answers its arguments).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Linker, Val};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store};

/// The interface the call is exported in, and the function.
const INTERFACE: &str = "artec:clat/plugin@0.1.1";
const FUNCTION: &str = "call-tool";

fn engine() -> Engine {
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true);
    #[cfg(feature = "concurrency-knob")]
    config.concurrency_support(false);
    // CLAT's pool (host/src/wasm/engine.rs): 128 instances, 64 per store.
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(128)
        .total_core_instances(128 * 8)
        .total_memories(128 * 4)
        .total_tables(128 * 4)
        .total_stacks(128)
        .max_core_instances_per_component(64)
        .max_memories_per_component(64)
        .max_tables_per_component(64)
        .max_memories_per_module(2)
        .max_tables_per_module(4)
        .max_memory_size(256 << 20)
        .table_elements(100_000)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(1 << 20);
    // CLAT resets a pooled memory's dirtied pages found with PAGEMAP_SCAN; `CLAT_PAGEMAP=no` leaves wasmtime's default.
    if std::env::var("CLAT_PAGEMAP").as_deref() != Ok("no") {
        pool.pagemap_scan(wasmtime::Enabled::Auto);
    }
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).expect("an engine")
}

struct Guest {
    engine: Engine,
    pre: InstancePre<()>,
    call_tool: ComponentExportIndex,
}

fn guest() -> Guest {
    let path = std::env::var("COMPONENT").expect("COMPONENT names the component to run");
    let engine = engine();
    let component = Component::from_file(&engine, &path).expect("the component compiles");
    let mut linker = Linker::<()>::new(&engine);
    linker.define_unknown_imports_as_traps(&component).expect("imports as traps");
    let (_, interface) = component.get_export(None, INTERFACE).expect("the plugin interface");
    let (_, call_tool) = component.get_export(Some(&interface), FUNCTION).expect("call-tool");
    let pre = linker.instantiate_pre(&component).expect("pre-instantiation");
    Guest { engine, pre, call_tool }
}

fn store(guest: &Guest) -> Store<()> {
    let mut store = Store::new(&guest.engine, ());
    store.set_epoch_deadline(1_000_000);
    store
}

async fn instantiate(guest: &Guest) {
    let mut store = store(guest);
    black_box(guest.pre.instantiate_async(&mut store).await.expect("an instance"));
}

async fn echo(guest: &Guest) {
    let mut store = store(guest);
    let instance = guest.pre.instantiate_async(&mut store).await.expect("an instance");
    let func = instance.get_func(&mut store, guest.call_tool).expect("call-tool");
    let arguments = [Val::String("echo".into()), Val::String(r#"{"a":1}"#.into())];
    let mut results = [Val::Bool(false)];
    func.call_async(&mut store, &arguments, &mut results).await.expect("the call");
    #[allow(deprecated)]
    func.post_return_async(&mut store).await.expect("post-return");
    black_box(results);
}

/// The median over 9 batches of 500 runs, per run.
fn per_run<F: Future<Output = ()>>(runtime: &tokio::runtime::Runtime, f: impl Fn() -> F) -> Duration {
    let mut batches: Vec<Duration> = (0..9)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..500 {
                runtime.block_on(f());
            }
            started.elapsed() / 500
        })
        .collect();
    batches.sort();
    batches[4]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let guest = guest();
    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("wasmtime");
    group.bench_function("instantiate", |b| b.iter(|| runtime.block_on(instantiate(&guest))));
    group.bench_function("instantiate_and_echo", |b| b.iter(|| runtime.block_on(echo(&guest))));
    group.finish();
    let instantiated = per_run(&runtime, || instantiate(&guest));
    let echoed = per_run(&runtime, || echo(&guest));
    println!(
        "summary: wasmtime {}{}: instantiate {:.2} µs, instantiate and echo {:.2} µs",
        option_env!("WASMTIME_VERSION").unwrap_or("?"),
        if std::env::var("CLAT_PAGEMAP").as_deref() == Ok("no") { " (no PAGEMAP_SCAN)" } else { "" },
        instantiated.as_secs_f64() * 1e6,
        echoed.as_secs_f64() * 1e6
    );
    c.final_summary();
}
