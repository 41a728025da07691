//! MCP client costs, next to their floors and to the official Rust SDK (rmcp,
//! pinned, a dev-dependency of this benchmark only), all in one run:
//! - a stdio `tools/call` round trip vs rmcp's vs a raw pipe echo (`cat`) of
//!   the same bytes, with client and server on one CPU (the thread and the
//!   processes it starts pinned to CPU 0), so the time is the CPU both sides
//!   spend plus the switches between them; both clients drive the smallest
//!   server (`clat-echo-mcp-server`, optimised), so what is left over is the
//!   client's cost;
//! - 64 calls in flight on one connection, ours vs rmcp's vs the raw pipe,
//!   scheduled freely on every CPU, against the same smallest server;
//! - the same round trip against the test server (a debug build with every
//!   scenario), for comparison with earlier figures;
//! - connecting 20 servers in parallel vs the slowest single start;
//! - a Streamable HTTP `tools/call` round trip on a kept-alive connection vs a
//!   raw HTTP echo of the same bytes from the same server.
//!
//! A `summary:` line prints the figures and ratios.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clat_mcp::{ClientInfo, HttpSpec, NoServerRequests, Opening, Session, StderrSink, StdioSpec, Target};
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

/// The test server, with every scenario (a debug build, as the tests run it).
const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;
/// The smallest server (one `echo` tool, optimised): the peer of the client-cost figures.
const ECHO_SERVER: &str = clat_test_server_artifact::MCP_ECHO_SERVER;
const LONG: Duration = Duration::from_secs(30);

fn spec(server: &str) -> StdioSpec {
    StdioSpec { command: server.into(), args: vec![], env: vec![], clear_env: false, cwd: std::env::temp_dir() }
}

async fn connect() -> Session {
    connect_to(SERVER).await
}

async fn connect_to(server: &str) -> Session {
    let client = ClientInfo { name: "bench".into(), version: "0".into() };
    let opening = Opening::new(Arc::new(NoServerRequests), client, json!({})).stderr(Arc::new(Ignore));
    Session::connect(&Target::Stdio(spec(server)), opening).await.unwrap()
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

async fn rmcp_connect(server: &str) -> RmcpClient {
    let transport = rmcp::transport::TokioChildProcess::builder(tokio::process::Command::new(server))
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

/// The CPU time the calling thread has used (user and system).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Batches of each contender, interleaved round by round so that a slow
/// moment of the machine weighs on all of them alike.
const ROUNDS: usize = 9;

/// One contender's figures, one per round: wall time and the CPU time its
/// thread spent, per run.
#[derive(Clone, Default)]
struct Rounds {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

/// The median over rounds of `a`'s figure over `b`'s, measured in the same round.
fn ratio(a: &[Duration], b: &[Duration]) -> f64 {
    let mut r: Vec<f64> = a.iter().zip(b).map(|(a, b)| a.as_secs_f64() / b.as_secs_f64()).collect();
    r.sort_by(f64::total_cmp);
    r[r.len() / 2]
}

/// `ROUNDS` rounds, each a batch of `n` runs of every contender in turn:
/// per contender, the wall and thread CPU time per run of each round.
fn interleaved(n: u32, contenders: &mut [&mut dyn FnMut()]) -> Vec<Rounds> {
    let mut figures = vec![Rounds::default(); contenders.len()];
    for _ in 0..ROUNDS {
        for (f, rounds) in contenders.iter_mut().zip(figures.iter_mut()) {
            let (t, c) = (Instant::now(), thread_cpu());
            for _ in 0..n {
                f();
            }
            rounds.wall.push(t.elapsed() / n);
            rounds.cpu.push((thread_cpu() - c) / n);
        }
    }
    figures
}

/// How the sequential round trips are scheduled.
#[derive(Clone, Copy)]
enum Scheduling {
    /// A current-thread runtime, with the client, the server and `cat` on CPU 0 (so a client's whole cost is its
    /// thread's CPU time).
    PinnedCurrentThread,
    /// A two-worker runtime, as a host embeds the client, with everything on CPU 0.
    PinnedMultiThread,
    /// A two-worker runtime, scheduled freely on every CPU.
    Free,
}

/// Sequential round trips scheduled as `scheduling` says, interleaved: ours, rmcp's and the raw pipe's figures per
/// round, and whether pinning worked.
fn round_trips(server: &'static str, scheduling: Scheduling) -> (Vec<Rounds>, bool) {
    std::thread::spawn(move || {
        let pinned = match scheduling {
            Scheduling::Free => false,
            _ => pin_to_cpu0(),
        };
        let rt = match scheduling {
            Scheduling::PinnedCurrentThread => tokio::runtime::Builder::new_current_thread().enable_all().build(),
            _ => tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build(),
        }
        .unwrap();
        let ours = rt.block_on(connect_to(server));
        let theirs = rt.block_on(rmcp_connect(server));
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
        let figures = interleaved(1000, &mut [&mut ours_call, &mut theirs_call, &mut raw_call]);
        rt.block_on(ours.close());
        let _ = rt.block_on(theirs.cancel());
        (figures, pinned)
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
        s.close().await;
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
    let echo_session = Arc::new(rt.block_on(connect_to(ECHO_SERVER)));
    let mut raw = rt.block_on(async { RawEcho::start() });
    let line = request_line();
    let http = HttpServer::start();
    let http_session = rt.block_on(async {
        let client = ClientInfo { name: "bench".into(), version: "0".into() };
        let spec = HttpSpec { url: format!("{}/mcp", http.1), headers: vec![], auth: None };
        Session::connect(&Target::Http(spec), Opening::new(Arc::new(NoServerRequests), client, json!({})))
            .await
            .unwrap()
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
        b.iter(|| rt.block_on(echo_session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap())
    });
    g.bench_function("stdio_tools_call_round_trip_test_server", |b| {
        b.iter(|| rt.block_on(session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap())
    });
    g.bench_function("raw_pipe_echo_same_bytes", |b| b.iter(|| rt.block_on(raw.round_trip(&line))));
    {
        let rmcp = rt.block_on(rmcp_connect(ECHO_SERVER));
        g.bench_function("rmcp_stdio_tools_call_round_trip", |b| b.iter(|| rt.block_on(rmcp_call(&rmcp))));
        g.bench_function("rmcp_sixty_four_calls_in_flight", |b| b.iter(|| rt.block_on(rmcp_sixty_four(&rmcp))));
        let _ = rt.block_on(rmcp.cancel());
    }
    g.bench_function("sixty_four_calls_in_flight", |b| b.iter(|| rt.block_on(sixty_four(&echo_session))));
    g.sample_size(10);
    g.bench_function("connect_one_server", |b| b.iter(|| rt.block_on(connect_many(1))));
    g.bench_function("connect_twenty_servers_in_parallel", |b| b.iter(|| rt.block_on(connect_many(20))));
    g.finish();

    let per = |n: u32, f: &mut dyn FnMut()| per_run(n, f);
    let rmcp = rt.block_on(rmcp_connect(ECHO_SERVER));
    let flight = interleaved(
        10,
        &mut [&mut || rt.block_on(sixty_four(&echo_session)), &mut || rt.block_on(rmcp_sixty_four(&rmcp)), &mut || {
            rt.block_on(raw.sixty_four(&line))
        }],
    );
    let _ = rt.block_on(rmcp.cancel());
    let singles: Vec<Duration> = (0..5).map(|_| rt.block_on(connect_many(1))).collect();
    let slowest_single = *singles.iter().max().unwrap();
    let twenty = median((0..3).map(|_| rt.block_on(connect_many(20))).collect());
    let http_call = per(300, &mut || {
        rt.block_on(http_session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap();
    });
    let http_raw = per(300, &mut || raw_http_echo());
    let (echo, pinned) = round_trips(ECHO_SERVER, Scheduling::PinnedCurrentThread);
    let (debug_server, _) = round_trips(SERVER, Scheduling::PinnedCurrentThread);
    let (pinned_multi, _) = round_trips(ECHO_SERVER, Scheduling::PinnedMultiThread);
    let (free, _) = round_trips(ECHO_SERVER, Scheduling::Free);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let med = |v: &Vec<Duration>| median(v.clone());
    println!(
        "summary: HTTP tools/call round trip {:.1} µs vs raw HTTP echo of the same bytes {:.1} µs ({:.1}x), kept-alive",
        us(http_call),
        us(http_raw),
        http_call.as_secs_f64() / http_raw.as_secs_f64()
    );
    let [ours, rmcp, raw] = &echo[..] else { unreachable!("three contenders") };
    println!(
        "summary: stdio tools/call round trip{} with the echo server (medians of {ROUNDS} interleaved rounds): \
         client CPU per call {:.1} µs vs rmcp {:.1} µs vs raw pipe echo {:.1} µs: {:.2}x the raw pipe (goal <= 2x), \
         {:.2}x rmcp (goal <= 0.5x); wall time {:.1} µs vs rmcp {:.1} µs vs raw {:.1} µs ({:.2}x the raw pipe, \
         {:.2}x rmcp); with the debug-built test server: wall {:.1} µs vs rmcp {:.1} µs",
        if pinned { ", client and server on CPU 0," } else { " (could not pin to one CPU)" },
        us(med(&ours.cpu)),
        us(med(&rmcp.cpu)),
        us(med(&raw.cpu)),
        ratio(&ours.cpu, &raw.cpu),
        ratio(&ours.cpu, &rmcp.cpu),
        us(med(&ours.wall)),
        us(med(&rmcp.wall)),
        us(med(&raw.wall)),
        ratio(&ours.wall, &raw.wall),
        ratio(&ours.wall, &rmcp.wall),
        us(med(&debug_server[0].wall)),
        us(med(&debug_server[1].wall)),
    );
    let [ours_pinned, rmcp_pinned, _] = &pinned_multi[..] else { unreachable!("three contenders") };
    let [ours_free, rmcp_free, _] = &free[..] else { unreachable!("three contenders") };
    println!(
        "summary: sequential stdio tools/call with the echo server vs rmcp's client (wall, medians of {ROUNDS} \
         interleaved rounds): pinned to CPU 0 on a current-thread runtime {:.1} µs vs {:.1} µs = {:.2}x (goal <= \
         0.8x); pinned to CPU 0 on a two-worker runtime {:.1} µs vs {:.1} µs = {:.2}x (goal <= 0.8x); free on a \
         two-worker runtime {:.1} µs vs {:.1} µs = {:.2}x",
        us(med(&ours.wall)),
        us(med(&rmcp.wall)),
        ratio(&ours.wall, &rmcp.wall),
        us(med(&ours_pinned.wall)),
        us(med(&rmcp_pinned.wall)),
        ratio(&ours_pinned.wall, &rmcp_pinned.wall),
        us(med(&ours_free.wall)),
        us(med(&rmcp_free.wall)),
        ratio(&ours_free.wall, &rmcp_free.wall),
    );
    let rate = |v: &Vec<Duration>| 64.0 / med(v).as_secs_f64();
    let [ours, rmcp, raw] = &flight[..] else { unreachable!("three contenders") };
    println!(
        "summary: 64 calls in flight (medians of {ROUNDS} interleaved rounds) {:.0} calls/s vs rmcp {:.0} calls/s vs \
         raw pipe {:.0} lines/s: {:.2}x rmcp (goal >= 2x); connect 20 servers in parallel {:.1} ms vs slowest single \
         start {:.1} ms ({:.2}x)",
        rate(&ours.wall),
        rate(&rmcp.wall),
        rate(&raw.wall),
        ratio(&rmcp.wall, &ours.wall),
        twenty.as_secs_f64() * 1e3,
        slowest_single.as_secs_f64() * 1e3,
        twenty.as_secs_f64() / slowest_single.as_secs_f64()
    );
    rt.block_on(session.close());
    rt.block_on(echo_session.close());
    rt.block_on(http_session.close());
}

criterion_group!(mcp, benches);

fn main() {
    mcp();
    Criterion::default().configure_from_args().final_summary();
}
