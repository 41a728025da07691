//! Shared helpers for the integration tests: a temporary CLAT_HOME and project
//! per test (never the real ~/.clat), the built `clat` binary, and small tool
//! handlers for driving the registry.
#![allow(dead_code)]

pub mod http_server;
pub mod oci_registry;
pub mod toolchains;
pub mod wasm;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clat_host::contract::{PermissionMode, ToolOutput};
use clat_host::home::ClatHome;
use clat_host::home::trust::TrustStore;
use clat_host::registry::{ToolError, ToolHandler};
use clat_host::run::{CollectingSink, RunContext};
use clat_host::scope::{ProjectScope, ScopeOptions};
use serde_json::Value;

/// A temporary home and project directory.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("clat-home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        TestEnv { dir, home, project }
    }

    /// A new environment whose project is already trusted.
    pub fn trusted() -> Self {
        let env = TestEnv::new();
        env.trust();
        env
    }

    pub fn clat_home(&self) -> ClatHome {
        ClatHome::at(&self.home)
    }

    pub fn trust(&self) {
        TrustStore::new(&self.clat_home()).trust(&self.project).expect("trust");
    }

    pub fn mount(&self) -> ProjectScope {
        ProjectScope::mount(&self.clat_home(), &self.project, ScopeOptions::default()).expect("mount")
    }

    pub fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let path = self.project.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.project.join(rel)).unwrap()
    }

    /// Write `$CLAT_HOME/mcp.json`.
    /// A file inside the home, as text.
    pub fn read_home(&self, rel: &str) -> String {
        std::fs::read_to_string(self.home.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// Install the MCP test server as the `mcp-stdio` package `name`, started with `args`.
    pub fn install_test_server_package(&self, name: &str, args: &[&str]) {
        let package = self.dir.path().join(format!("pkg-{name}"));
        std::fs::create_dir_all(&package).unwrap();
        std::fs::copy(clat_test_server_artifact::MCP_TEST_SERVER, package.join("server")).unwrap();
        let manifest = format!(
            "name = \"{name}\"\nversion = \"1\"\nkind = \"mcp-stdio\"\nentry = \"server\"\nargs = {}\n",
            serde_json::to_string(args).unwrap()
        );
        std::fs::write(package.join("clat-plugin.toml"), manifest).unwrap();
        let out = self.clat(&["plugin", "install", package.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }

    pub fn write_mcp_config(&self, config: Value) {
        std::fs::create_dir_all(&self.home).unwrap();
        std::fs::write(self.home.join("mcp.json"), config.to_string()).unwrap();
    }

    /// Run the built `clat` binary with this home and project.
    pub fn clat(&self, args: &[&str]) -> Output {
        self.clat_with_env(args, &[])
    }

    /// `clat` with extra environment variables.
    pub fn clat_with_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.clat_command(args).envs(env.iter().copied()).output().expect("run clat")
    }

    /// The `clat` command with this home and project, not started yet (for a
    /// test that sets more on it: limits, a working directory).
    pub fn clat_command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_clat"));
        command
            .arg("--home")
            .arg(&self.home)
            .arg("--project")
            .arg(&self.project)
            .args(args)
            .env_remove("CLAT_HOME")
            // OAuth tokens go to the test's home, never to the user's OS keyring
            // (test_mcp_oauth.rs runs its keyring test on a private one).
            .env("CLAT_CREDENTIAL_STORE", "file")
            .stdin(std::process::Stdio::null());
        command
    }
}

/// A run in `mode` that collects its events and denies every prompt (headless).
pub fn run_in(mode: PermissionMode) -> (RunContext, Arc<CollectingSink>) {
    let sink = Arc::new(CollectingSink::default());
    let run = RunContext::builder().mode(mode).events(sink.clone()).start();
    (run, sink)
}

/// The text of a tool output.
pub fn text(output: &ToolOutput) -> String {
    output.joined_text()
}

/// A handler that returns whatever its closure makes of the arguments.
pub struct FnTool<F>(pub F);

#[async_trait]
impl<F> ToolHandler for FnTool<F>
where
    F: Fn(Value) -> ToolOutput + Send + Sync,
{
    async fn call(&self, arguments: Value, _run: &RunContext) -> Result<ToolOutput, ToolError> {
        Ok((self.0)(arguments))
    }
}

/// A handler that sleeps (without watching the cancel token) then answers.
pub struct SlowTool(pub Duration);

#[async_trait]
impl ToolHandler for SlowTool {
    async fn call(&self, _arguments: Value, _run: &RunContext) -> Result<ToolOutput, ToolError> {
        tokio::time::sleep(self.0).await;
        Ok(ToolOutput::text("finally"))
    }
}

/// The identity a test registers an extension's tools under.
pub fn identity() -> clat_host::policy::identity::Identity {
    clat_host::policy::identity::Identity::stdio("test-extension", &[])
}

/// An always-"ok" handler.
pub fn ok_tool() -> Arc<dyn ToolHandler> {
    Arc::new(FnTool(|_| ToolOutput::text("ok")))
}

/// One process as /proc/PID/stat has it.
pub struct ProcStat {
    pub pid: i32,
    /// `pid (comm)`.
    pub label: String,
    /// R, S, D, Z (zombie), X (dead), …
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
}

/// Every process /proc lists now.
pub fn processes() -> Vec<ProcStat> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid pgrp ...
        let Some(close) = stat.rfind(')') else { continue };
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        let (Some(state), Some(ppid), Some(pgrp)) = (
            fields.first().and_then(|s| s.chars().next()),
            fields.get(1).and_then(|s| s.parse().ok()),
            fields.get(2).and_then(|s| s.parse().ok()),
        ) else {
            continue;
        };
        found.push(ProcStat { pid, label: stat[..close + 1].to_string(), state, ppid, pgrp });
    }
    found
}

/// Live (non-zombie) processes whose process group is `pgid`, from /proc.
pub fn live_processes_in_group(pgid: i32) -> Vec<(i32, String)> {
    processes()
        .into_iter()
        .filter(|p| p.pgrp == pgid && p.state != 'Z' && p.state != 'X')
        .map(|p| (p.pid, p.label))
        .collect()
}

/// Wait (bounded) until no live process is left in `pgid`; returns what is left.
pub fn wait_group_gone(pgid: i32) -> Vec<(i32, String)> {
    for _ in 0..100 {
        let left = live_processes_in_group(pgid);
        if left.is_empty() {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    live_processes_in_group(pgid)
}

/// The installed test peers (`tests/peers`: the npm reference servers, the
/// Python SDK's venv), installed by `scripts/install-test-peers.sh`.
pub fn test_peers() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/peers");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js").exists()
            && dir.join(".venv/bin/python").exists(),
        "the test peers are not installed: run scripts/install-test-peers.sh"
    );
    dir.canonicalize().unwrap()
}

/// The script of an npm reference server (`server-everything`, `server-filesystem`, `server-memory`).
pub fn npm_server(package: &str) -> String {
    let script = test_peers().join(format!("node_modules/@modelcontextprotocol/{package}/dist/index.js"));
    assert!(script.exists(), "{package} is not installed: run scripts/install-test-peers.sh");
    script.display().to_string()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn exists(path: &Path) -> bool {
    path.symlink_metadata().is_ok()
}

/// Whether the process whose pid is in `pid_file` is still alive.
pub fn pid_alive(pid_file: &Path) -> bool {
    let pid: i32 = std::fs::read_to_string(pid_file).unwrap().trim().parse().unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
}

/// Wait (at most about 10 s) for a line starting with `prefix` in the file at `path`; the line.
pub async fn wait_for_line(path: &Path, prefix: &str) -> String {
    for _ in 0..1000 {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.starts_with(prefix)) {
            return line.to_string();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no {prefix:?} line in {}", std::fs::read_to_string(path).unwrap_or_default());
}

/// `clat-test-mcp-server --http` on 127.0.0.1 (its flags: `tests/mcp-test-server/http.rs`), killed when dropped.
pub struct HttpServer {
    child: std::process::Child,
    pub url: String,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl HttpServer {
    pub fn start(flags: &[&str]) -> HttpServer {
        let dir = tempfile::tempdir().unwrap();
        let (port_file, log) = (dir.path().join("url"), dir.path().join("log"));
        let mut child = Command::new(clat_test_server_artifact::MCP_TEST_SERVER)
            .arg("--http")
            .args(flags)
            .arg("--port-file")
            .arg(&port_file)
            .arg("--log-file")
            .arg(&log)
            .spawn()
            .unwrap();
        for _ in 0..500 {
            if let Ok(url) = std::fs::read_to_string(&port_file)
                && !url.is_empty()
            {
                return HttpServer { child, url, log, _dir: dir };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the HTTP test server did not start");
    }

    pub fn log(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).unwrap_or_default().lines().map(str::to_string).collect()
    }

    pub fn spec(&self) -> clat_mcp::HttpSpec {
        clat_mcp::HttpSpec { url: self.url.clone(), headers: vec![], auth: None }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `command` in `env`'s project with `env`'s home, feeding `input` to its stdin.
pub fn output_with_stdin(env: &TestEnv, mut command: Command, input: &[u8]) -> Output {
    let mut child = command
        .current_dir(&env.project)
        .env("CLAT_HOME", &env.home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// Discards a server's stderr.
pub struct NullStderr;

impl clat_mcp::StderrSink for NullStderr {
    fn write(&self, _bytes: &[u8]) {}
}

/// Whether `pid` is a live process (a zombie, dead but not yet reaped, is not).
pub fn pid_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// Wait (at most about 10 s) until the process whose pid is in `pid_file` is
/// gone; true when it is. The file must exist.
pub fn wait_pid_gone(pid_file: &Path) -> bool {
    let pid: i32 = std::fs::read_to_string(pid_file).unwrap().trim().parse().unwrap();
    for _ in 0..1000 {
        if !pid_running(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

/// Start several `clat` commands at once with this home, then wait for all of
/// them; whether each succeeded.
pub fn clat_concurrently(env: &TestEnv, commands: &[Vec<&str>]) -> Vec<bool> {
    let children: Vec<std::process::Child> = commands
        .iter()
        .map(|args| {
            Command::new(env!("CARGO_BIN_EXE_clat"))
                .arg("--home")
                .arg(&env.home)
                .args(args)
                .env_remove("CLAT_HOME")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("run clat")
        })
        .collect();
    children.into_iter().map(|mut child| child.wait().map(|s| s.success()).unwrap_or(false)).collect()
}
