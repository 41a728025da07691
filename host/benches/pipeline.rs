//! What the pipeline costs per call next to what a tool body costs.
//!
//! `pipeline/noop` runs a tool whose body does nothing through `Registry::call`
//! (lookup, schema validation, permission decision, three run events, result
//! limit): that is the pipeline's own overhead. `pipeline/read_file` is the
//! real native tool through the pipeline; `body/read_file` is the same read
//! called directly. After the criterion groups, a summary line prints the
//! overhead per call next to the body's own cost and their ratio.

use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use clat_host::contract::{Effect, PermissionMode, ToolOutput};
use clat_host::home::ClatHome;
use clat_host::home::trust::TrustStore;
use clat_host::native::fence::PathFence;
use clat_host::native::files::{ReadFileArgs, read_file};
use clat_host::registry::{Registry, ToolError, ToolHandler};
use clat_host::run::{CollectingSink, RunContext};
use clat_host::scope::{ProjectScope, ScopeOptions};
use criterion::{Criterion, criterion_group};

mod support;
use serde_json::{Value, json};

struct Noop;

#[async_trait]
impl ToolHandler for Noop {
    async fn call(&self, _arguments: Value, _run: &RunContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    scope: ProjectScope,
    noop: Registry,
    fence: PathFence,
    run: RunContext,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let line = "fn example() { let x = 42; println!(\"{x}\"); }\n";
    std::fs::write(project.join("src.rs"), line.repeat(4096 / line.len())).unwrap();
    let home = ClatHome::at(&dir.path().join("home"));
    TrustStore::new(&home).trust(&project).unwrap();
    let scope = ProjectScope::mount(&home, &project, ScopeOptions::default()).unwrap();
    let noop = Registry::new(&["noop"]);
    let schema = json!({ "type": "object", "properties": { "path": { "type": "string" } }, "required": ["path"] });
    noop.register_native("noop", "does nothing", schema, Effect::Read, Arc::new(Noop)).unwrap();
    let run = RunContext::builder().mode(PermissionMode::Ask).events(Arc::new(CollectingSink::default())).start();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let fence = PathFence::open(&project).unwrap();
    Fixture { _dir: dir, runtime, scope, noop, fence, run }
}

fn args() -> Value {
    json!({ "path": "src.rs" })
}

fn body(fence: &PathFence) -> String {
    let parsed: ReadFileArgs = serde_json::from_value(args()).unwrap();
    read_file(fence, parsed).unwrap()
}

fn benches(c: &mut Criterion) {
    let f = fixture();
    let mut group = c.benchmark_group("pipeline");
    group.bench_function("noop", |b| {
        b.iter(|| f.runtime.block_on(f.noop.call("noop", black_box(args()), &f.run)).unwrap())
    });
    group.bench_function("read_file", |b| {
        b.iter(|| f.runtime.block_on(f.scope.registry().call("read_file", black_box(args()), &f.run)).unwrap())
    });
    group.finish();
    c.bench_function("body/read_file", |b| b.iter(|| body(black_box(&f.fence))));
    summary(&f);
}

fn summary(f: &Fixture) {
    let overhead = support::per_call(9, 2_000, || {
        f.runtime.block_on(f.noop.call("noop", args(), &f.run)).unwrap();
    });
    let through = support::per_call(9, 2_000, || {
        f.runtime.block_on(f.scope.registry().call("read_file", args(), &f.run)).unwrap();
    });
    let direct = support::per_call(9, 2_000, || {
        black_box(body(&f.fence));
    });
    let limit = direct + overhead;
    println!(
        "summary: pipeline overhead per call (lookup + schema + permission + events, no-op body) {:.1} µs; \
         read_file body alone {:.1} µs; read_file through the pipeline {:.1} µs = {:.2}x the body + pipeline \
         (goal <= 1.3x); overhead/body ratio {:.2}",
        overhead.as_secs_f64() * 1e6,
        direct.as_secs_f64() * 1e6,
        through.as_secs_f64() * 1e6,
        through.as_secs_f64() / limit.as_secs_f64(),
        overhead.as_secs_f64() / direct.as_secs_f64()
    );
}

criterion_group!(pipeline, benches);

fn main() {
    pipeline();
    criterion::Criterion::default().configure_from_args().final_summary();
}
