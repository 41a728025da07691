//! WASM plugin costs, next to their native counterparts:
//! - a guest tool call (fresh store + instance + call) vs a native tool with
//!   the same body (echo the arguments), both through `Registry::call`;
//! - a guest → host `read_file` round trip vs the native `read_file` call;
//! - cold compile vs cached load of a component;
//! - instantiation per call on its own.
//!
//! A `summary:` line prints the figures and ratios.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clat_guest_artifacts as guests;
use clat_host::contract::{Effect, PermissionMode, ToolOutput};
use clat_host::registry::{ToolError, ToolHandler};
use clat_host::run::{NullSink, RunContext};
use clat_host::scope::{ProjectScope, ScopeOptions};
use clat_host::trust::{ClatHome, TrustStore};
use clat_host::wasm::{WasmPlugin, WasmRuntime, load_file};
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};

mod support;

struct NativeEcho;

#[async_trait::async_trait]
impl ToolHandler for NativeEcho {
    async fn call(&self, arguments: Value, _run: &RunContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(arguments.to_string()))
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    scope: ProjectScope,
    native_echo: clat_host::registry::Registry,
    plugin: Arc<WasmPlugin>,
    runtime: Arc<WasmRuntime>,
    run: RunContext,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "a line of notes\n".repeat(256)).unwrap();
    let home = ClatHome::at(&dir.path().join("home"));
    TrustStore::new(&home).trust(&project).unwrap();
    let scope = ProjectScope::mount(&home, &project, ScopeOptions::default()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let runtime = WasmRuntime::new(&dir.path().join("cache")).unwrap();
    let plugin = rt
        .block_on(load_file(&runtime, "t", Path::new(guests::TEST_GUESTS_WASM), Arc::clone(scope.services())))
        .unwrap();
    for r in plugin.register(scope.registry()) {
        r.unwrap();
    }
    let native_echo = clat_host::registry::Registry::new(&["echo"]);
    native_echo
        .register_native("echo", "echo", json!({ "type": "object" }), Effect::Read, Arc::new(NativeEcho))
        .unwrap();
    let run = RunContext::builder().mode(PermissionMode::Ask).events(Arc::new(NullSink)).start();
    Fixture { dir, rt, scope, native_echo, plugin, runtime, run }
}

fn guest_echo(f: &Fixture) {
    let out = f.rt.block_on(f.scope.registry().call("wasm_t_echo", json!({ "a": 1 }), &f.run)).unwrap();
    black_box(out);
}

fn native_echo(f: &Fixture) {
    black_box(f.rt.block_on(f.native_echo.call("echo", json!({ "a": 1 }), &f.run)).unwrap());
}

fn guest_read(f: &Fixture) {
    let args = json!({ "tool": "read_file", "arguments": { "path": "notes.txt" } });
    let out = f.rt.block_on(f.scope.registry().call("wasm_t_host_call", args, &f.run)).unwrap();
    assert!(!out.is_error);
}

fn native_read(f: &Fixture) {
    black_box(f.rt.block_on(f.scope.registry().call("read_file", json!({ "path": "notes.txt" }), &f.run)).unwrap());
}

fn instantiate(f: &Fixture) {
    f.rt.block_on(f.plugin.instantiate_once()).unwrap();
}

fn cold_compile(f: &Fixture) {
    let cache = f.dir.path().join(format!("cold-{}", uuid_like()));
    let runtime = WasmRuntime::new(&cache).unwrap();
    let p =
        f.rt.block_on(load_file(&runtime, "t", Path::new(guests::HELLO_WASM), Arc::clone(f.scope.services()))).unwrap();
    assert_eq!(p.cache_outcome(), clat_host::wasm::cache::CacheOutcome::Compiled);
    let _ = std::fs::remove_dir_all(cache);
}

fn cached_load(f: &Fixture) {
    let cache = f.dir.path().join("warm");
    let runtime = WasmRuntime::new(&cache).unwrap();
    let p =
        f.rt.block_on(load_file(&runtime, "t", Path::new(guests::HELLO_WASM), Arc::clone(f.scope.services()))).unwrap();
    black_box(p);
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    cached_load(&f); // warm the cache
    let mut g = c.benchmark_group("wasm");
    g.bench_function("guest_echo_call", |b| b.iter(|| guest_echo(&f)));
    g.bench_function("native_echo_call", |b| b.iter(|| native_echo(&f)));
    g.bench_function("guest_to_host_read_file", |b| b.iter(|| guest_read(&f)));
    g.bench_function("native_read_file", |b| b.iter(|| native_read(&f)));
    g.bench_function("instantiate", |b| b.iter(|| instantiate(&f)));
    g.sample_size(10);
    g.bench_function("cold_compile_load", |b| b.iter(|| cold_compile(&f)));
    g.bench_function("cached_load", |b| b.iter(|| cached_load(&f)));
    g.finish();
    summary(&f);
}

fn summary(f: &Fixture) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let guest = support::per_call(5, 500, || guest_echo(f));
    let native = support::per_call(5, 500, || native_echo(f));
    let guest_read_t = support::per_call(5, 300, || guest_read(f));
    let native_read_t = support::per_call(5, 300, || native_read(f));
    let inst = support::per_call(5, 500, || instantiate(f));
    let cold = support::per_call(5, 3, || cold_compile(f));
    let warm = support::per_call(5, 20, || cached_load(f));
    println!(
        "summary: allocator {}; guest echo call {:.1} µs (goal <= 10 µs) vs native echo {:.1} µs (guest overhead \
         {:.1} µs, {:.1}x); instantiate per call {:.1} µs (goal <= 15 µs); guest→host read_file {:.1} µs vs native \
         read_file {:.1} µs ({:.2}x, goal <= 2x); cold compile+load {:.2} ms vs cached load {:.2} ms ({:.1}x faster)",
        f.runtime.allocator(),
        us(guest),
        us(native),
        us(guest) - us(native),
        guest.as_secs_f64() / native.as_secs_f64(),
        us(inst),
        us(guest_read_t),
        us(native_read_t),
        guest_read_t.as_secs_f64() / native_read_t.as_secs_f64(),
        cold.as_secs_f64() * 1e3,
        warm.as_secs_f64() * 1e3,
        cold.as_secs_f64() / warm.as_secs_f64()
    );
}

criterion_group!(wasm, benches);

fn main() {
    wasm();
    Criterion::default().configure_from_args().final_summary();
}
