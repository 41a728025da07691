//! The extension lifecycle's costs, next to their floors:
//! - `clat call read_file` (the built binary, a native tool) with nothing
//!   installed vs with a server that never finishes its handshake configured
//!   and WASM plugins installed: targeted start means it costs the same;
//! - how long a stdio server's exit takes to fail its pending call while a
//!   child of it still holds its stdout (the connection watches its child);
//! - `clat tools` (which loads every plugin) with nothing installed vs with the
//!   18 MB componentize-py `hello` guest installed: its listing was kept at
//!   install, so the load maps nothing (built by the pinned toolchain of
//!   `scripts/install-guest-toolchains.sh`; skipped, saying so, without it);
//! - `clat call` of a tool of the published npm `server-memory` (legacy, run
//!   by `node`; the test peers of `scripts/install-test-peers.sh`, skipped
//!   without them) once its era is known, vs one start of it by hand (spawn,
//!   `initialize`, the call, close): the known-legacy server starts once;
//! - `clat tools --search` over ten configured servers listed before (issue
//!   #49: within 1 s, starting none): it reads their kept listings.
//!
//! A `summary:` line prints the figures and the ratios.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clat_mcp::{ClientError, ClientInfo, Connection, NoServerRequests, Session, StderrSink, StdioSpec};
use criterion::{Criterion, criterion_group};
use serde_json::json;

#[path = "../../tests/support/toolchains.rs"]
mod toolchains;

struct Ignore;
impl StderrSink for Ignore {
    fn write(&self, _bytes: &[u8]) {}
}

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;
const CLAT: &str = env!("CARGO_BIN_EXE_clat");

/// A trusted project with a file to read, in a fresh home.
fn project(dir: &Path) {
    std::fs::create_dir_all(dir.join("project")).unwrap();
    std::fs::write(dir.join("project/notes.txt"), "hello\n").unwrap();
    let ok = Command::new(CLAT).arg("--home").arg(dir.join("home")).arg("trust").arg(dir.join("project")).status();
    assert!(ok.unwrap().success());
}

fn clat(dir: &Path, args: &[&str]) {
    let out = Command::new(CLAT)
        .arg("--home")
        .arg(dir.join("home"))
        .arg("--project")
        .arg(dir.join("project"))
        .args(args)
        .env_remove("CLAT_HOME")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn read_file(dir: &Path) {
    clat(dir, &["call", "read_file", r#"{"path":"notes.txt"}"#]);
}

fn tools(dir: &Path) {
    clat(dir, &["tools"]);
}

/// A project with ten servers configured, each listed once (by `clat mcp`), so their listings are kept; and the
/// file each of their starts writes a line to.
fn searched_project(dir: &Path) -> std::path::PathBuf {
    project(dir);
    let starts = dir.join("starts");
    let mut servers = serde_json::Map::new();
    for i in 0..10 {
        let tools = format!("list_things_{i},get_thing_{i},create_thing_{i},delete_thing_{i}");
        let args = json!(["--tool-names", tools, "--starts-file", starts.display().to_string()]);
        servers.insert(format!("server{i}"), json!({ "command": SERVER, "args": args }));
    }
    let mail =
        json!(["--tool-names", "send_email_message,list_mailboxes", "--starts-file", starts.display().to_string()]);
    servers.insert("mail".into(), json!({ "command": SERVER, "args": mail }));
    std::fs::write(dir.join("home/mcp.json"), json!({ "mcpServers": servers }).to_string()).unwrap();
    clat(dir, &["mcp"]);
    starts
}

fn search(dir: &Path) {
    clat(dir, &["tools", "--search", "email the team a message"]);
}

/// A project with the Python `hello` guest installed, or why there is none.
fn python_guest_project() -> Result<tempfile::TempDir, String> {
    let toolchain = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guest-toolchains/.venv/bin/componentize-py");
    if !toolchain.is_file() {
        return Err(format!("{} is missing (scripts/install-guest-toolchains.sh installs it)", toolchain.display()));
    }
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    project(dir.path());
    let package = toolchains::package("python", "hello");
    clat(dir.path(), &["plugin", "install", &package.display().to_string()]);
    Ok(dir)
}

/// The published `server-memory` as `node` runs it, or why it is not there.
fn memory_server() -> Result<String, String> {
    let index = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/peers/node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    if !index.is_file() {
        return Err(format!("{} is missing (the test peers install it)", index.display()));
    }
    Ok(index.display().to_string())
}

/// A project whose home configures `server-memory` as `memory`, its era learned by a first call.
fn memory_project(index: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    let memory = dir.path().join("memory.jsonl").display().to_string();
    let config = json!({ "memory": { "command": "node", "args": [index], "env": { "MEMORY_FILE_PATH": memory } } });
    std::fs::write(dir.path().join("home/mcp.json"), config.to_string()).unwrap();
    call_memory(dir.path());
    dir
}

fn call_memory(dir: &Path) {
    clat(dir, &["call", "mcp_memory_read_graph", "{}", "--mode", "full-access"]);
}

/// One start of `server-memory` by hand: spawn, `initialize`, `read_graph`, close.
async fn memory_by_hand(index: &str, dir: &Path) -> Duration {
    let started = Instant::now();
    let memory = dir.join("memory.jsonl").display().to_string();
    let spec = StdioSpec {
        command: "node".into(),
        args: vec![index.into()],
        env: vec![("MEMORY_FILE_PATH".into(), memory)],
        clear_env: false,
        cwd: dir.to_path_buf(),
    };
    let conn = Connection::spawn(&spec, Arc::new(Ignore)).await.unwrap();
    let client = ClientInfo { name: "bench".into(), version: "0".into() };
    let timeout = clat_mcp::limits::LEGACY_HANDSHAKE_TIMEOUT;
    let session = Session::initialize(conn, Arc::new(NoServerRequests), &client, json!({}), timeout).await.unwrap();
    session.call_tool("read_graph", json!({}), Duration::from_secs(30), None).await.unwrap();
    session.close().await;
    started.elapsed()
}

/// One stdio server that exits mid-call while its child holds stdout: the time
/// from the call to its failure.
async fn exit_detection(child_pid: &Path) -> Duration {
    let spec = StdioSpec {
        command: SERVER.into(),
        args: vec!["--grandchild-pid-file".into(), child_pid.display().to_string()],
        env: vec![],
        clear_env: false,
        cwd: std::env::temp_dir(),
    };
    let conn = Connection::spawn(&spec, Arc::new(Ignore)).await.unwrap();
    let client = ClientInfo { name: "bench".into(), version: "0".into() };
    let session = Session::initialize(
        conn,
        Arc::new(NoServerRequests),
        &client,
        json!({}),
        clat_mcp::limits::LEGACY_HANDSHAKE_TIMEOUT,
    )
    .await
    .unwrap();
    let started = Instant::now();
    let error = session.call_tool("exit", json!({}), Duration::from_secs(60), None).await.unwrap_err();
    let took = started.elapsed();
    assert!(matches!(error, ClientError::Closed { .. }), "{error}");
    session.close().await;
    took
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let bare = tempfile::tempdir().unwrap();
    project(bare.path());
    let loaded = tempfile::tempdir().unwrap();
    project(loaded.path());
    for package in [clat_guest_artifacts::HELLO_PACKAGE, clat_guest_artifacts::PROJECT_NOTES_PACKAGE] {
        clat(loaded.path(), &["plugin", "install", package]);
    }
    let config = json!({ "hang": { "command": SERVER, "args": ["--hang-initialize"] } });
    std::fs::write(loaded.path().join("home/mcp.json"), config.to_string()).unwrap();
    let child_pid = bare.path().join("child.pid");
    let python = python_guest_project();
    let memory = memory_server().map(|index| (memory_project(&index), index));
    let searched = tempfile::tempdir().unwrap();
    let starts = searched_project(searched.path());
    let listed = std::fs::read_to_string(&starts).unwrap().lines().count();

    let mut g = c.benchmark_group("lifecycle");
    g.sample_size(20);
    g.bench_function("clat_call_read_file_nothing_installed", |b| b.iter(|| read_file(bare.path())));
    g.bench_function("clat_call_read_file_hanging_server_and_plugins_installed", |b| {
        b.iter(|| read_file(loaded.path()))
    });
    g.bench_function("clat_tools_nothing_installed", |b| b.iter(|| tools(bare.path())));
    g.bench_function("clat_tools_search_eleven_servers_listed_before", |b| b.iter(|| search(searched.path())));
    if let Ok(python) = &python {
        g.bench_function("clat_tools_hello_py_installed", |b| b.iter(|| tools(python.path())));
    }
    if let Ok((dir, index)) = &memory {
        g.bench_function("clat_call_known_legacy_server_memory", |b| b.iter(|| call_memory(dir.path())));
        g.bench_function("server_memory_one_start_by_hand", |b| {
            b.iter_custom(|n| (0..n).map(|_| rt.block_on(memory_by_hand(index, dir.path()))).sum())
        });
    }
    g.sample_size(10);
    g.bench_function("exit_detection_with_a_child_holding_the_pipe", |b| {
        b.iter_custom(|n| (0..n).map(|_| rt.block_on(exit_detection(&child_pid))).sum())
    });
    g.finish();

    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let time = |f: &dyn Fn()| {
        let started = Instant::now();
        f();
        started.elapsed()
    };
    let bare_call = median((0..15).map(|_| time(&|| read_file(bare.path()))).collect());
    let loaded_call = median((0..15).map(|_| time(&|| read_file(loaded.path()))).collect());
    let detection = median((0..7).map(|_| rt.block_on(exit_detection(&child_pid))).collect());
    let searching = median((0..15).map(|_| time(&|| search(searched.path()))).collect());
    let restarted = std::fs::read_to_string(&starts).unwrap().lines().count() - listed;
    assert_eq!(restarted, 0, "a search started a server listed before");
    let tools_line = match &python {
        Ok(python) => {
            let bare_tools = median((0..15).map(|_| time(&|| tools(bare.path()))).collect());
            let python_tools = median((0..15).map(|_| time(&|| tools(python.path()))).collect());
            format!(
                "clat tools {:.1} ms with nothing installed vs {:.1} ms with the 18 MB hello-py installed ({:.2}x, \
                 goal <= 1.2x)",
                bare_tools.as_secs_f64() * 1e3,
                python_tools.as_secs_f64() * 1e3,
                python_tools.as_secs_f64() / bare_tools.as_secs_f64()
            )
        }
        Err(why) => format!("clat tools with hello-py is skipped: {why}"),
    };
    let memory_line = match &memory {
        Ok((dir, index)) => {
            let by_hand = median((0..15).map(|_| rt.block_on(memory_by_hand(index, dir.path()))).collect());
            let through_clat = median((0..15).map(|_| time(&|| call_memory(dir.path()))).collect());
            format!(
                "clat call of server-memory, known legacy, {:.0} ms vs one start of it by hand {:.0} ms ({:.2}x, goal \
                 <= 1.3x)",
                through_clat.as_secs_f64() * 1e3,
                by_hand.as_secs_f64() * 1e3,
                through_clat.as_secs_f64() / by_hand.as_secs_f64()
            )
        }
        Err(why) => format!("the server-memory figure is skipped: {why}"),
    };
    println!(
        "summary: clat call read_file {:.1} ms with nothing installed vs {:.1} ms with a hanging server and two plugins \
         installed ({:.2}x, goal <= 1.2x); {tools_line}; {memory_line}; a server exit with a child holding the pipe \
         fails its call in {:.1} ms; clat tools --search over 11 servers listed before {:.1} ms, starting none (goal \
         <= 1000 ms)",
        bare_call.as_secs_f64() * 1e3,
        loaded_call.as_secs_f64() * 1e3,
        loaded_call.as_secs_f64() / bare_call.as_secs_f64(),
        detection.as_secs_f64() * 1e3,
        searching.as_secs_f64() * 1e3
    );
}

criterion_group!(lifecycle, benches);

fn main() {
    lifecycle();
    Criterion::default().configure_from_args().final_summary();
}
