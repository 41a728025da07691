//! WASM plugin costs, next to their native counterparts and to wasmtime's own floor:
//! - a guest tool call (fresh store + instance + call) vs a native tool with
//!   the same body (echo the arguments), both through `Registry::call`;
//! - the floor: the same component instantiated and called on a bare store of
//!   the same engine and allocator (no WASI context — every import a trap —
//!   no pipeline), the least a fresh instance per call can cost;
//! - a guest → host `read_file` round trip vs the native `read_file` call;
//! - cold compile vs cached load of a component;
//! - instantiation per call on its own, ours and the floor's;
//! - a plain component's call (the calculator's `greet`, its arguments and
//!   result converted by the host) vs a contract guest's of the same work
//!   (`hello`'s `greet`, which parses and writes JSON itself);
//! - the JavaScript and Python `hello` guests (built by the pinned toolchains
//!   of `scripts/install-guest-toolchains.sh`; skipped, saying so, without
//!   them): a `greet` call through `Registry::call`, instantiation, sizes.
//!
//! `summary:` lines print the figures and ratios.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clat_guest_artifacts as guests;
use clat_host::contract::ClatPluginPre;
use clat_host::contract::{Effect, PermissionMode, ToolOutput};
use clat_host::home::ClatHome;
use clat_host::home::trust::TrustStore;
use clat_host::registry::{ToolError, ToolHandler};
use clat_host::run::{NullSink, RunContext};
use clat_host::scope::{ProjectScope, ScopeOptions};
use clat_host::wasm::{PluginSetup, WasmPlugin, WasmRuntime, load_file};
use criterion::{Criterion, criterion_group};
use serde_json::{Value, json};
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

mod support;
#[path = "../../tests/support/toolchains.rs"]
mod toolchains;

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
    /// The contract guest `hello` and the plain component `calculator`, both greeting.
    greeters: [Arc<WasmPlugin>; 2],
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
    let greeter = |name: &str, entry: &Path, plain: bool| {
        let setup = PluginSetup { plain, ..PluginSetup::default() };
        let services = Arc::clone(scope.services());
        let plugin = rt.block_on(runtime.load(name, entry.parent().unwrap(), entry, setup, services)).unwrap();
        for r in plugin.register(scope.registry()) {
            r.unwrap();
        }
        plugin
    };
    let greeters = [
        greeter("hello", Path::new(guests::HELLO_WASM), false),
        greeter("calculator", &Path::new(guests::CALCULATOR_PACKAGE).join("calculator.wasm"), true),
    ];
    Fixture { dir, rt, scope, native_echo, plugin, runtime, run, greeters }
}

/// `greet` of the contract guest (`wasm_hello_greet`) or of the plain component (`wasm_calculator_greet`).
fn greet(f: &Fixture, tool: &str) {
    let out = f.rt.block_on(f.scope.registry().call(tool, json!({ "name": "bench" }), &f.run)).unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
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
    assert_eq!(p.cache_outcome(), Some(clat_host::wasm::cache::CacheOutcome::Compiled));
    let _ = std::fs::remove_dir_all(cache);
}

fn cached_load(f: &Fixture) {
    let cache = f.dir.path().join("warm");
    let runtime = WasmRuntime::new(&cache).unwrap();
    let p =
        f.rt.block_on(load_file(&runtime, "t", Path::new(guests::HELLO_WASM), Arc::clone(f.scope.services()))).unwrap();
    black_box(p);
}

/// The same component on a bare store: the engine's floor for a fresh instance and a call.
struct Floor {
    pre: ClatPluginPre<()>,
}

fn floor(f: &Fixture) -> Floor {
    let engine = f.runtime.engine().unwrap();
    let component = Component::from_file(engine, guests::TEST_GUESTS_WASM).unwrap();
    let mut linker = Linker::<()>::new(engine);
    linker.define_unknown_imports_as_traps(&component).unwrap();
    let pre = ClatPluginPre::new(linker.instantiate_pre(&component).unwrap()).unwrap();
    Floor { pre }
}

fn bare_store(f: &Fixture) -> Store<()> {
    let mut store = Store::new(f.runtime.engine().unwrap(), ());
    store.set_epoch_deadline(1_000_000);
    store
}

fn floor_echo(f: &Fixture, floor: &Floor) {
    let mut store = bare_store(f);
    let out = f.rt.block_on(async {
        let instance = floor.pre.instantiate_async(&mut store).await.unwrap();
        instance.artec_clat_plugin().call_call_tool(&mut store, "echo", r#"{"a":1}"#).await.unwrap()
    });
    black_box(out.unwrap());
}

fn floor_instantiate(f: &Fixture, floor: &Floor) {
    let mut store = bare_store(f);
    black_box(f.rt.block_on(floor.pre.instantiate_async(&mut store)).unwrap());
}

/// A JavaScript or Python guest, loaded and registered as `wasm_{plugin}_greet`.
struct LanguageGuest {
    lang: &'static str,
    plugin: Arc<WasmPlugin>,
    tool: String,
    component_bytes: u64,
}

/// The `hello` guest of `lang` (`js`, `python`), or why it is skipped.
fn language_guest(f: &Fixture, lang: &'static str) -> Result<LanguageGuest, String> {
    let tool = match lang {
        "js" => "tests/guest-toolchains/node_modules/.bin/componentize-js",
        _ => "tests/guest-toolchains/.venv/bin/componentize-py",
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if !root.join(tool).is_file() {
        return Err(format!("{tool} is missing (scripts/install-guest-toolchains.sh installs it)"));
    }
    let component = toolchains::component(lang, "hello");
    let name = format!("h{lang}");
    let services = Arc::clone(f.scope.services());
    let plugin = f.rt.block_on(load_file(&f.runtime, &name, &component, services)).map_err(|e| e.to_string())?;
    for r in plugin.register(f.scope.registry()) {
        r.map_err(|e| e.to_string())?;
    }
    let component_bytes = std::fs::metadata(&component).map_err(|e| e.to_string())?.len();
    Ok(LanguageGuest { lang, plugin, tool: format!("wasm_{name}_greet"), component_bytes })
}

fn language_greet(f: &Fixture, guest: &LanguageGuest) {
    let out = f.rt.block_on(f.scope.registry().call(&guest.tool, json!({ "name": "bench" }), &f.run)).unwrap();
    assert!(!out.is_error, "{}", out.joined_text());
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    cached_load(&f); // warm the cache
    let floor = floor(&f);
    let languages: Vec<Result<LanguageGuest, String>> = ["js", "python"].map(|lang| language_guest(&f, lang)).into();
    let mut g = c.benchmark_group("wasm");
    g.bench_function("guest_echo_call", |b| b.iter(|| guest_echo(&f)));
    g.bench_function("floor_echo_call", |b| b.iter(|| floor_echo(&f, &floor)));
    g.bench_function("native_echo_call", |b| b.iter(|| native_echo(&f)));
    g.bench_function("guest_to_host_read_file", |b| b.iter(|| guest_read(&f)));
    g.bench_function("native_read_file", |b| b.iter(|| native_read(&f)));
    g.bench_function("instantiate", |b| b.iter(|| instantiate(&f)));
    g.bench_function("floor_instantiate", |b| b.iter(|| floor_instantiate(&f, &floor)));
    g.bench_function("contract_greet_call", |b| b.iter(|| greet(&f, "wasm_hello_greet")));
    g.bench_function("plain_greet_call", |b| b.iter(|| greet(&f, "wasm_calculator_greet")));
    for guest in languages.iter().flatten() {
        g.bench_function(format!("{}_greet_call", guest.lang), |b| b.iter(|| language_greet(&f, guest)));
        g.bench_function(format!("{}_instantiate", guest.lang), |b| {
            b.iter(|| f.rt.block_on(guest.plugin.instantiate_once()).unwrap())
        });
    }
    g.sample_size(10);
    g.bench_function("cold_compile_load", |b| b.iter(|| cold_compile(&f)));
    g.bench_function("cached_load", |b| b.iter(|| cached_load(&f)));
    g.finish();
    summary(&f, &floor);
    plain_summary(&f);
    languages_summary(&f, &languages);
}

fn plain_summary(f: &Fixture) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let contract = support::per_call(5, 500, || greet(f, "wasm_hello_greet"));
    let plain = support::per_call(5, 500, || greet(f, "wasm_calculator_greet"));
    let [hello, calculator] = &f.greeters;
    let inst = |p: &WasmPlugin| support::per_call(5, 500, || f.rt.block_on(p.instantiate_once()).unwrap());
    println!(
        "summary: plain component greet call {:.1} µs vs the contract guest's {:.1} µs ({:.2}x, goal <= 1.3x); \
         instantiation {:.1} µs vs {:.1} µs",
        us(plain),
        us(contract),
        plain.as_secs_f64() / contract.as_secs_f64(),
        us(inst(calculator)),
        us(inst(hello))
    );
}

fn languages_summary(f: &Fixture, languages: &[Result<LanguageGuest, String>]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (lang, guest) in ["js", "python"].iter().zip(languages) {
        let goal = if *lang == "js" { 1.0 } else { 2.0 };
        match guest {
            Err(why) => println!("summary: the {lang} guest is skipped: {why}"),
            Ok(guest) => {
                let call = support::per_call(5, 20, || language_greet(f, guest));
                let inst = support::per_call(5, 20, || f.rt.block_on(guest.plugin.instantiate_once()).unwrap());
                println!(
                    "summary: {lang} hello: greet call {:.3} ms (goal <= {goal} ms), of which instantiation {:.3} ms; \
                     component {:.1} MB",
                    ms(call),
                    ms(inst),
                    guest.component_bytes as f64 / 1e6
                );
            }
        }
    }
}

fn summary(f: &Fixture, floor: &Floor) {
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let floor_call = support::per_call(5, 500, || floor_echo(f, floor));
    let floor_inst = support::per_call(5, 500, || floor_instantiate(f, floor));
    let guest = support::per_call(5, 500, || guest_echo(f));
    let native = support::per_call(5, 500, || native_echo(f));
    let guest_read_t = support::per_call(5, 300, || guest_read(f));
    let native_read_t = support::per_call(5, 300, || native_read(f));
    let inst = support::per_call(5, 500, || instantiate(f));
    let cold = support::per_call(5, 3, || cold_compile(f));
    let warm = support::per_call(5, 20, || cached_load(f));
    println!(
        "summary: allocator {}; guest echo call {:.1} µs vs wasmtime's floor {:.1} µs ({:.2}x, goal <= 1.3x; native \
         echo {:.1} µs); instantiate per call {:.1} µs vs the floor's {:.1} µs ({:.2}x); guest→host read_file {:.1} µs \
         vs native read_file {:.1} µs ({:.2}x, goal <= 2x); cold compile+load {:.2} ms vs cached load {:.2} ms ({:.1}x \
         faster)",
        f.runtime.allocator().unwrap(),
        us(guest),
        us(floor_call),
        guest.as_secs_f64() / floor_call.as_secs_f64(),
        us(native),
        us(inst),
        us(floor_inst),
        inst.as_secs_f64() / floor_inst.as_secs_f64(),
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
