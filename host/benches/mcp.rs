//! MCP client costs, next to their floors:
//! - a stdio `tools/call` round trip vs a raw pipe echo (`cat`) of the same bytes;
//! - 64 calls in flight on one connection;
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
    g.bench_function("sixty_four_calls_in_flight", |b| b.iter(|| rt.block_on(sixty_four(&session))));
    g.sample_size(10);
    g.bench_function("connect_one_server", |b| b.iter(|| rt.block_on(connect_many(1))));
    g.bench_function("connect_twenty_servers_in_parallel", |b| b.iter(|| rt.block_on(connect_many(20))));
    g.finish();

    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let per = |n: u32, f: &mut dyn FnMut()| {
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
    };
    let call = per(300, &mut || {
        rt.block_on(session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap();
    });
    let pipe = per(300, &mut || {
        rt.block_on(raw.round_trip(&line));
    });
    let batch = per(20, &mut || rt.block_on(sixty_four(&session)));
    let singles: Vec<Duration> = (0..5).map(|_| rt.block_on(connect_many(1))).collect();
    let slowest_single = *singles.iter().max().unwrap();
    let twenty = median((0..3).map(|_| rt.block_on(connect_many(20))).collect());
    let http_call = per(300, &mut || {
        rt.block_on(http_session.call_tool("echo", json!({ "message": "hello" }), LONG, None)).unwrap();
    });
    let http_raw = per(300, &mut || raw_http_echo());
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "summary: HTTP tools/call round trip {:.1} µs vs raw HTTP echo of the same bytes {:.1} µs ({:.1}x), kept-alive",
        us(http_call),
        us(http_raw),
        http_call.as_secs_f64() / http_raw.as_secs_f64()
    );
    println!(
        "summary: stdio tools/call round trip {:.1} µs vs raw pipe echo {:.1} µs ({:.1}x); 64 calls in flight {:.2} ms \
         ({:.1} µs per call); connect 20 servers in parallel {:.1} ms vs slowest single start {:.1} ms ({:.2}x)",
        us(call),
        us(pipe),
        call.as_secs_f64() / pipe.as_secs_f64(),
        batch.as_secs_f64() * 1e3,
        us(batch) / 64.0,
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
