//! MCP client costs, next to their floors and to the official Rust SDK (rmcp,
//! pinned, a dev-dependency of this benchmark only), all against the same
//! test server in one run:
//! - a stdio `tools/call` round trip vs rmcp's vs a raw pipe echo (`cat`) of
//!   the same bytes, with client and server on one CPU (the thread and the
//!   processes it starts pinned to CPU 0), so the time is the CPU both sides
//!   spend plus the switches between them;
//! - 64 calls in flight on one connection, ours vs rmcp's vs the raw pipe,
//!   scheduled freely on every CPU;
//! - connecting 20 servers in parallel vs the slowest single start;
//! - a Streamable HTTP `tools/call` round trip on a kept-alive connection vs a
//!   raw HTTP echo of the same bytes from the same server.
//!
//! A `summary:` line prints the figures and ratios.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clat_mcp::{ClientInfo, HttpSpec, NoServerRequests, Session, StderrSink, StdioSpec};
use criterion::{Criterion, criterion_group};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Ignore;
impl StderrSink for Ignore {
    fn write(&self, _bytes: &[u8]) {}
}

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;
const LONG: Duration = Duration::from_secs(30);

fn spec() -> StdioSpec {
    StdioSpec { command: SERVER.into(), args: vec![], env: vec![], clear_env: false, cwd: std::env::temp_dir() }
}

async fn connect() -> Session {
    let client = ClientInfo { name: "bench".into(), version: "0".into() };
    Session::connect(&spec(), Arc::new(NoServerRequests), Arc::new(Ignore), &client, json!({})).await.unwrap()
}

/// A `cat` process: the floor for one line out and back through two pipes.
struct RawEcho {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<tokio::process::ChildStdout>,
}

impl RawEcho {
    fn start() -> RawEcho {
        let mut child = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        RawEcho { _child: child, stdin, stdout }
    }

    async fn round_trip(&mut self, line: &str) -> String {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
        let mut back = String::new();
        self.stdout.read_line(&mut back).await.unwrap();
        back
    }
}

/// The same server driven by rmcp's client.
type RmcpClient = RunningService<RoleClient, ()>;

async fn rmcp_connect() -> RmcpClient {
    let transport = rmcp::transport::TokioChildProcess::builder(tokio::process::Command::new(SERVER))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
        .0;
    ().serve(transport).await.unwrap()
}

fn echo_arguments(message: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("message".into(), json!(message));
    arguments
}

async fn rmcp_call(client: &RmcpClient) {
    let params = CallToolRequestParams::new("echo").with_arguments(echo_arguments("hello"));
    black_box(client.call_tool(params).await.unwrap());
}

/// 64 requests in flight through rmcp's client.
async fn rmcp_sixty_four(client: &RmcpClient) {
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..64 {
        let peer = client.peer().clone();
        calls.spawn(async move {
            let mut arguments = serde_json::Map::new();
            arguments.insert("i".into(), json!(i));
            peer.call_tool(CallToolRequestParams::new("echo").with_arguments(arguments)).await
        });
    }
    while let Some(r) = calls.join_next().await {
        black_box(r.unwrap().unwrap());
    }
}

impl RawEcho {
    /// 64 lines written back to back, then all 64 read back.
    async fn sixty_four(&mut self, line: &str) {
        let batch = line.repeat(64);
        self.stdin.write_all(batch.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
        let mut back = String::new();
        for _ in 0..64 {
            back.clear();
            self.stdout.read_line(&mut back).await.unwrap();
        }
    }
}

/// Pin the calling thread (and what it starts from now on) to CPU 0; false
/// where the machine does not allow it.
fn pin_to_cpu0() -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only read it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The median of 5 batches of `n` runs of `f`, per run.
fn per_run(n: u32, f: &mut dyn FnMut()) -> Duration {
    median(
        (0..5)
            .map(|_| {
                let t = Instant::now();
                for _ in 0..n {
                    f();
                }
                t.elapsed() / n
            })
            .collect(),
    )
}

/// Sequential round trips with the client, the server and `cat` on CPU 0:
/// (ours, rmcp's, the raw pipe's), and whether pinning worked.
fn pinned_round_trips() -> (Duration, Duration, Duration, bool) {
    std::thread::spawn(|| {
        let pinned = pin_to_cpu0();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let ours = rt.block_on(connect());
        let theirs = rt.block_on(rmcp_connect());
        let mut raw = rt.block_on(async { RawEcho::start() });
        let line = request_line();
        let mut ours_call = || {
            rt.block_on(ours.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap();
        };
        let mut theirs_call = || rt.block_on(rmcp_call(&theirs));
        let mut raw_call = || {
            rt.block_on(raw.round_trip(&line));
        };
        for _ in 0..200 {
            ours_call();
            theirs_call();
            raw_call();
        }
        let (a, b, c) = (per_run(1000, &mut ours_call), per_run(1000, &mut theirs_call), per_run(1000, &mut raw_call));
        rt.block_on(ours.connection.close());
        let _ = rt.block_on(theirs.cancel());
        (a, b, c, pinned)
    })
    .join()
    .unwrap()
}

fn request_line() -> String {
    let request = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                          "params": { "name": "echo", "arguments": { "message": "hello" } } });
    format!("{request}\n")
}

/// 64 requests written back to back on one connection, awaited together.
async fn sixty_four(session: &Arc<Session>) {
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..64 {
        let session = Arc::clone(session);
        calls.spawn(async move { session.call_tool("echo", json!({ "i": i }), LONG, None).await });
    }
    while let Some(r) = calls.join_next().await {
        black_box(r.unwrap().unwrap());
    }
}

async fn connect_many(n: usize) -> Duration {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..n {
        tasks.spawn(async { connect().await });
    }
    let mut sessions = Vec::new();
    while let Some(s) = tasks.join_next().await {
        sessions.push(s.unwrap());
    }
    let elapsed = started.elapsed();
    for s in sessions {
        s.connection.close().await;
    }
    elapsed
}

/// The test server over HTTP on 127.0.0.1, and its base URL.
struct HttpServer(std::process::Child, String);

impl HttpServer {
    fn start() -> HttpServer {
        let file = std::env::temp_dir().join(format!("clat-bench-http-{}", std::process::id()));
        let _ = std::fs::remove_file(&file);
        let mut child = std::process::Command::new(SERVER).arg("--http").arg("--port-file").arg(&file).spawn().unwrap();
        for _ in 0..500 {
            if let Ok(url) = std::fs::read_to_string(&file)
                && !url.is_empty()
            {
                let _ = std::fs::remove_file(&file);
                return HttpServer(child, url.trim_end_matches("/mcp").to_string());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the HTTP test server did not start");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let session = Arc::new(rt.block_on(connect()));
    let mut raw = rt.block_on(async { RawEcho::start() });
    let line = request_line();
    let http = HttpServer::start();
    let http_session = rt.block_on(async {
        let client = ClientInfo { name: "bench".into(), version: "0".into() };
        let spec = HttpSpec { url: format!("{}/mcp", http.1), headers: vec![] };
        Session::connect_http(&spec, Arc::new(NoServerRequests), &client, json!({})).await.unwrap()
    });
    let raw_http = reqwest::Client::new();
    let echo_url = format!("{}/echo", http.1);
    let body = request_line().trim_end().to_string();
    let raw_http_echo = || {
        rt.block_on(async {
            let response = raw_http
                .post(&echo_url)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await
                .unwrap();
            black_box(response.bytes().await.unwrap());
        })
    };
    let mut g = c.benchmark_group("mcp");
    g.bench_function("http_tools_call_round_trip", |b| {
        b.iter(|| rt.block_on(http_session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap())
    });
    g.bench_function("raw_http_echo_same_bytes", |b| b.iter(raw_http_echo));
    g.bench_function("stdio_tools_call_round_trip", |b| {
        b.iter(|| rt.block_on(session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap())
    });
    g.bench_function("raw_pipe_echo_same_bytes", |b| b.iter(|| rt.block_on(raw.round_trip(&line))));
    {
        let rmcp = rt.block_on(rmcp_connect());
        g.bench_function("rmcp_stdio_tools_call_round_trip", |b| b.iter(|| rt.block_on(rmcp_call(&rmcp))));
        g.bench_function("rmcp_sixty_four_calls_in_flight", |b| b.iter(|| rt.block_on(rmcp_sixty_four(&rmcp))));
        let _ = rt.block_on(rmcp.cancel());
    }
    g.bench_function("sixty_four_calls_in_flight", |b| b.iter(|| rt.block_on(sixty_four(&session))));
    g.sample_size(10);
    g.bench_function("connect_one_server", |b| b.iter(|| rt.block_on(connect_many(1))));
    g.bench_function("connect_twenty_servers_in_parallel", |b| b.iter(|| rt.block_on(connect_many(20))));
    g.finish();

    let per = |n: u32, f: &mut dyn FnMut()| per_run(n, f);
    let batch = per(20, &mut || rt.block_on(sixty_four(&session)));
    let rmcp = rt.block_on(rmcp_connect());
    let rmcp_batch = per(20, &mut || rt.block_on(rmcp_sixty_four(&rmcp)));
    let raw_batch = per(20, &mut || rt.block_on(raw.sixty_four(&line)));
    let _ = rt.block_on(rmcp.cancel());
    let singles: Vec<Duration> = (0..5).map(|_| rt.block_on(connect_many(1))).collect();
    let slowest_single = *singles.iter().max().unwrap();
    let twenty = median((0..3).map(|_| rt.block_on(connect_many(20))).collect());
    let http_call = per(300, &mut || {
        rt.block_on(http_session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap();
    });
    let http_raw = per(300, &mut || raw_http_echo());
    let (call, rmcp_call_t, pipe, pinned) = pinned_round_trips();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let rate = |d: Duration| 64.0 / d.as_secs_f64();
    println!(
        "summary: HTTP tools/call round trip {:.1} µs vs raw HTTP echo of the same bytes {:.1} µs ({:.1}x), kept-alive",
        us(http_call),
        us(http_raw),
        http_call.as_secs_f64() / http_raw.as_secs_f64()
    );
    println!(
        "summary: stdio tools/call round trip{} {:.1} µs vs rmcp {:.1} µs vs raw pipe echo {:.1} µs: {:.2}x the raw \
         pipe (goal <= 2x), {:.2}x rmcp (goal <= 0.5x)",
        if pinned { ", client and server on CPU 0," } else { " (could not pin to one CPU)" },
        us(call),
        us(rmcp_call_t),
        us(pipe),
        call.as_secs_f64() / pipe.as_secs_f64(),
        call.as_secs_f64() / rmcp_call_t.as_secs_f64()
    );
    println!(
        "summary: 64 calls in flight {:.0} calls/s vs rmcp {:.0} calls/s vs raw pipe {:.0} lines/s: {:.2}x rmcp \
         (goal >= 2x); connect 20 servers in parallel {:.1} ms vs slowest single start {:.1} ms ({:.2}x)",
        rate(batch),
        rate(rmcp_batch),
        rate(raw_batch),
        rmcp_batch.as_secs_f64() / batch.as_secs_f64(),
        twenty.as_secs_f64() * 1e3,
        slowest_single.as_secs_f64() * 1e3,
        twenty.as_secs_f64() / slowest_single.as_secs_f64()
    );
    rt.block_on(session.connection.close());
    rt.block_on(http_session.connection.close());
}

criterion_group!(mcp, benches);

fn main() {
    mcp();
    Criterion::default().configure_from_args().final_summary();
}
