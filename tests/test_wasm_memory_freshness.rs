//! Nothing survives from one guest call to the next under the pooling
//! allocator, whose slots are reused without unmapping (wasmtime issue 14357 is
//! the class of bug this guards against): 1,000 alternating calls of a guest
//! that writes a secret into its linear memory — static data and a heap grown
//! past the pool's `keep_resident` — and a guest that grows its memory as far
//! and scans all of it, never find the secret; nor do they after the pool's
//! pages were paged out (`madvise(MADV_PAGEOUT)`, where the kernel allows).
//! Once through the registry with the test guest component on a pool of one
//! instance; once with core modules on the same engine, planting into a
//! table too (a component written in Rust cannot reach its tables), with more
//! modules than the pool has slots so that one module's slot goes to another.

mod support;

use std::path::Path;
use std::sync::Arc;

use clat_guest_artifacts as guests;
use clat_host::contract::PermissionMode;
use clat_host::wasm::engine::new_engine;
use clat_host::wasm::{Allocator, EngineOptions, WasmRuntime, load_file};
use serde_json::{Value, json};
use support::{TestEnv, run_in, text};
use wasm_encoder::{
    BlockType, CodeSection, ElementSection, Elements, ExportKind, ExportSection, Function, FunctionSection, HeapType,
    Instruction as I, MemArg, MemorySection, MemoryType, Module, RefType, TableSection, TableType, TypeSection,
    ValType,
};

/// Calls in all: half plant, half scan.
const CALLS: usize = 1_000;
/// How far the planter grows its heap: well past the pool's 1 MiB kept resident.
const HEAP_MIB: u64 = 4;
/// Every this many rounds the pool's pages are paged out.
const PAGEOUT_EVERY: usize = 50;

/// Ask the kernel to page out every private writable mapping of this process
/// (the pool's slots among them); how many it accepted. A kernel without
/// MADV_PAGEOUT, or without swap, accepts or refuses without harm.
fn page_out_everything() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut accepted = 0;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
        if !perms.starts_with("rw") || !perms.ends_with('p') {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) else {
            continue;
        };
        // SAFETY: MADV_PAGEOUT is advice; the contents of the range are kept (paged back in on access).
        if unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_PAGEOUT) } == 0 {
            accepted += 1;
        }
    }
    accepted
}

/// A secret of 64 ASCII bytes, new for each test run.
fn new_secret() -> String {
    let secret = format!("clat-freshness-{}-{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
    secret[..64].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_never_sees_what_the_previous_call_left_in_its_memory() {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-wasm-cache");
    let runtime: Arc<WasmRuntime> =
        WasmRuntime::with_options(&cache, None, EngineOptions { instances_max: 1, ..EngineOptions::default() })
            .unwrap();
    assert_eq!(runtime.allocator().unwrap(), &Allocator::Pooling { instances: 1 }, "the pool is what is under test");
    let env = TestEnv::trusted();
    let scope = env.mount();
    let plugin = load_file(&runtime, "t", Path::new(guests::TEST_GUESTS_WASM), Arc::clone(scope.services()))
        .await
        .expect("the guest loads");
    for registered in plugin.register(scope.registry()) {
        registered.unwrap();
    }
    let (run, _) = run_in(PermissionMode::Ask);
    let secret = new_secret();
    let masked: Vec<u8> = secret.bytes().map(|b| b + 1).collect();
    let plant = json!({ "secret": secret, "heap_mib": HEAP_MIB });
    let scan = json!({ "masked": masked, "heap_mib": HEAP_MIB });

    // A scan that plants first, in its own instance, finds the secret: the scan works.
    let check = json!({ "secret": secret, "masked": masked, "heap_mib": HEAP_MIB });
    let out = scope.registry().call("wasm_t_scan_secret", check, &run).await.unwrap();
    let report: Value = serde_json::from_str(&text(&out)).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert!(report["found"].as_u64().unwrap() > (HEAP_MIB << 20) / 64, "{report}");

    let mut paged_out = 0;
    for round in 0..CALLS / 2 {
        let out = scope.registry().call("wasm_t_plant_secret", plant.clone(), &run).await.unwrap();
        assert!(!out.is_error, "{}", text(&out));
        if round % PAGEOUT_EVERY == PAGEOUT_EVERY - 1 {
            paged_out += page_out_everything();
        }
        let out = scope.registry().call("wasm_t_scan_secret", scan.clone(), &run).await.unwrap();
        let report: Value = serde_json::from_str(&text(&out)).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
        assert_eq!(report["found"], 0, "round {round}: the secret survived into the next call: {report}");
        assert!(report["scanned_bytes"].as_u64().unwrap() > HEAP_MIB << 20, "{report}");
    }
    eprintln!("{CALLS} calls, no secret found; madvise(MADV_PAGEOUT) accepted for {paged_out} mappings");
}

/// Grow the memory by `pages`, then run `body` for every 8-byte word of all of
/// it, its address in local 1 (local 2 holds the end).
fn over_memory<'a>(pages: u64, body: &[I<'a>]) -> Vec<I<'a>> {
    let mut code = vec![
        I::I32Const(pages as i32),
        I::MemoryGrow(0),
        I::Drop,
        I::MemorySize(0),
        I::I32Const(65536),
        I::I32Mul,
        I::LocalSet(2),
        I::Block(BlockType::Empty),
        I::Loop(BlockType::Empty),
        I::LocalGet(1),
        I::LocalGet(2),
        I::I32GeU,
        I::BrIf(1),
    ];
    code.extend_from_slice(body);
    code.extend([I::LocalGet(1), I::I32Const(8), I::I32Add, I::LocalSet(1), I::Br(0), I::End, I::End]);
    code
}

/// One core module with a memory (1 page, at most 512) and a funcref table
/// (64 elements, at most 100,000), exporting `plant(secret: i64)` — grow the
/// memory by HEAP_MIB and write the secret into every 8-byte word of it, set
/// every table element and grow the table by 1,000 more — and
/// `scan(secret: i64) -> i32` — grow both as far without writing, then count
/// the words equal to the secret and the table elements that are not null.
fn freshness_module() -> Vec<u8> {
    let pages = (HEAP_MIB << 20) / 65536;
    let mut module = Module::new();
    let mut types = TypeSection::new();
    types.ty().function([ValType::I64], []);
    types.ty().function([ValType::I64], [ValType::I32]);
    types.ty().function([], []);
    module.section(&types);
    let mut functions = FunctionSection::new();
    functions.function(0).function(1).function(2);
    module.section(&functions);
    let mut tables = TableSection::new();
    tables.table(TableType {
        element_type: RefType::FUNCREF,
        table64: false,
        minimum: 64,
        maximum: Some(100_000),
        shared: false,
    });
    module.section(&tables);
    let mut memories = MemorySection::new();
    memories.memory(MemoryType {
        minimum: 1,
        maximum: Some(512),
        memory64: false,
        shared: false,
        page_size_log2: None,
    });
    module.section(&memories);
    let mut exports = ExportSection::new();
    exports.export("plant", ExportKind::Func, 0).export("scan", ExportKind::Func, 1);
    module.section(&exports);
    let mut elements = ElementSection::new();
    elements.declared(Elements::Functions(std::borrow::Cow::Borrowed(&[2])));
    module.section(&elements);

    let word = MemArg { offset: 0, align: 3, memory_index: 0 };
    // Locals after the parameter (0: secret): 1 address, 2 end, 3 count.
    let mut plant = Function::new([(2, ValType::I32)]);
    let write_secret = [I::LocalGet(1), I::LocalGet(0), I::I64Store(word)];
    let fill_table = [
        I::I32Const(0),
        I::RefFunc(2),
        I::TableSize(0),
        I::TableFill(0),
        I::RefFunc(2),
        I::I32Const(1000),
        I::TableGrow(0),
        I::Drop,
        I::End,
    ];
    for instruction in over_memory(pages, &write_secret).iter().chain(&fill_table) {
        plant.instruction(instruction);
    }
    let mut scan = Function::new([(3, ValType::I32)]);
    let count_secret =
        [I::LocalGet(1), I::I64Load(word), I::LocalGet(0), I::I64Eq, I::LocalGet(3), I::I32Add, I::LocalSet(3)];
    // The table: grow by as much (null), then count what is not null.
    let count_table = [
        I::RefNull(HeapType::FUNC),
        I::I32Const(1000),
        I::TableGrow(0),
        I::Drop,
        I::I32Const(0),
        I::LocalSet(1),
        I::Block(BlockType::Empty),
        I::Loop(BlockType::Empty),
        I::LocalGet(1),
        I::TableSize(0),
        I::I32GeU,
        I::BrIf(1),
        I::LocalGet(1),
        I::TableGet(0),
        I::RefIsNull,
        I::I32Eqz,
        I::LocalGet(3),
        I::I32Add,
        I::LocalSet(3),
        I::LocalGet(1),
        I::I32Const(1),
        I::I32Add,
        I::LocalSet(1),
        I::Br(0),
        I::End,
        I::End,
        I::LocalGet(3),
        I::End,
    ];
    for instruction in over_memory(pages, &count_secret).iter().chain(&count_table) {
        scan.instruction(instruction);
    }
    let mut marker = Function::new([]);
    marker.instruction(&I::End);
    let mut code = CodeSection::new();
    code.function(&plant).function(&scan).function(&marker);
    module.section(&code);
    module.finish()
}

#[test]
fn core_instances_never_see_a_previous_instances_memory_or_table() {
    let engine = new_engine(EngineOptions { instances_max: 1, ..EngineOptions::default() }).unwrap();
    assert_eq!(engine.allocator, Allocator::Pooling { instances: 1 });
    let bytes = freshness_module();
    // More modules than the pool has memory and table slots: slots pass from one module to another.
    let modules: Vec<wasmtime::Module> =
        (0..6).map(|_| wasmtime::Module::new(&engine.engine, &bytes).expect("the module compiles")).collect();
    let secret = i64::from_le_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().unwrap()) | 1;
    let instance = |module: &wasmtime::Module| {
        let mut store = wasmtime::Store::new(&engine.engine, ());
        store.set_epoch_deadline(1 << 40);
        let instance = wasmtime::Instance::new(&mut store, module, &[]).expect("it instantiates");
        (store, instance)
    };
    // A scan after a plant in the same instance counts what was planted: the scan works.
    let (mut store, own) = instance(&modules[0]);
    own.get_typed_func::<i64, ()>(&mut store, "plant").unwrap().call(&mut store, secret).unwrap();
    let seen = own.get_typed_func::<i64, i32>(&mut store, "scan").unwrap().call(&mut store, secret).unwrap();
    assert!(seen > (HEAP_MIB << 20) as i32 / 8, "the scan finds what its instance planted: {seen}");
    drop(store);

    let mut paged_out = 0;
    for round in 0..CALLS / 2 {
        let (mut store, planter) = instance(&modules[round % modules.len()]);
        planter.get_typed_func::<i64, ()>(&mut store, "plant").unwrap().call(&mut store, secret).unwrap();
        drop(store);
        if round % PAGEOUT_EVERY == PAGEOUT_EVERY - 1 {
            paged_out += page_out_everything();
        }
        // The same module (its own slot) on even rounds, another one on odd rounds.
        let next = if round % 2 == 0 { round } else { round + 3 };
        let (mut store, scanner) = instance(&modules[next % modules.len()]);
        let found = scanner.get_typed_func::<i64, i32>(&mut store, "scan").unwrap().call(&mut store, secret).unwrap();
        assert_eq!(found, 0, "round {round}: words of the secret or table elements survived into a new instance");
    }
    eprintln!("{CALLS} instances, nothing survived; madvise(MADV_PAGEOUT) accepted for {paged_out} mappings");
}
