//! The `clat` command line: `trust`, `tools`, `call`, `plugin`. It is a thin
//! front-end on the library — mount a trusted project, list the registry, run
//! one tool call as one run through the whole pipeline, manage plugin packages —
//! with stable `--json` shapes (see the README) and documented exit codes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use crate::asker::{HeadlessAsker, TerminalAsker, UserAsker};
use crate::contract::PermissionMode;
use crate::contract::json::tool_output_to_json;
use crate::native::process::SandboxPolicy;
use crate::packages::{PackageError, PackageKind, PackageStore, check_entry, read_manifest};
use crate::permissions::{Approver, HeadlessApprover, TerminalApprover};
use crate::registry::CallError;
use crate::run::{EventSink, JsonLinesSink, NullSink, RunContext};
use crate::scope::{ProjectScope, ScopeError, ScopeOptions};
use crate::trust::{ClatHome, TrustError, TrustStore};

/// Exit codes (documented in the README).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    /// Success.
    Ok = 0,
    /// The tool ran and returned `isError`.
    ToolError = 1,
    /// Usage or configuration error (bad arguments, unknown tool, unwritable home, malformed files).
    Usage = 2,
    /// The project is not trusted.
    Untrusted = 3,
    /// The permission pipeline denied the call.
    Denied = 4,
    /// Internal error (a tool's implementation failed).
    Internal = 5,
    /// The call timed out or was cancelled.
    Interrupted = 6,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

#[derive(Parser, Debug)]
#[command(name = "clat", version, about = "CLAT extension platform: tools, plugins and MCP servers in one registry")]
pub struct Cli {
    /// CLAT's home directory (default: $CLAT_HOME, else ~/.clat).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// The project directory (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    project: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Record trust for a project root (default: --project, else the current directory).
    Trust {
        /// The project directory to trust.
        dir: Option<PathBuf>,
    },
    /// List the registry: name, source, effect, description, input schema.
    Tools {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Mount the project, connect the MCP servers and print their status (the /mcp surface).
    Mcp {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Install, list or remove plugin packages.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Run one tool call as one run, through the whole pipeline.
    Call {
        /// The registered tool name.
        tool: String,
        /// The arguments as a JSON object (default: {}).
        args_json: Option<String>,
        /// Permission mode: read-only, ask, auto-edit, full-access.
        #[arg(long, default_value = "ask")]
        mode: String,
        /// Print the result (or error) as JSON.
        #[arg(long)]
        json: bool,
        /// Print run events as JSON lines on stderr.
        #[arg(long)]
        events: bool,
        /// Sandbox policy for commands: none, restrict-writes.
        #[arg(long, default_value = "none")]
        sandbox: String,
    },
    /// Run a script of tool calls headless, as one run: one run id, one mode, one sampling budget.
    /// SCRIPT has one JSON object per line, {"tool": NAME, "arguments": {...}} (`-`: standard input).
    /// Run events and each call's result go to stdout as JSON lines.
    Exec {
        /// The script file, or `-` for standard input.
        script: PathBuf,
        /// Permission mode: read-only, ask, auto-edit, full-access (`ask` denies: nobody can answer).
        #[arg(long, default_value = "ask")]
        mode: String,
        /// Sandbox policy for commands: none, restrict-writes.
        #[arg(long, default_value = "none")]
        sandbox: String,
    },
}

#[derive(Subcommand, Debug)]
enum PluginCommand {
    /// Validate a package directory (clat-plugin.toml + entry) and install it.
    Install {
        /// The package directory.
        dir: PathBuf,
    },
    /// List installed packages.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed package.
    Remove {
        /// The package's name.
        name: String,
    },
}

/// A failure with its exit code and an error kind for `--json`.
struct Failure {
    exit: Exit,
    kind: &'static str,
    message: String,
}

impl Failure {
    fn new(exit: Exit, kind: &'static str, message: impl Into<String>) -> Self {
        Failure { exit, kind, message: message.into() }
    }
}

impl From<TrustError> for Failure {
    fn from(e: TrustError) -> Self {
        Failure::new(Exit::Usage, "configuration", e.to_string())
    }
}

impl From<ScopeError> for Failure {
    fn from(e: ScopeError) -> Self {
        match e {
            ScopeError::Untrusted { .. } => Failure::new(Exit::Untrusted, "untrusted", e.to_string()),
            ScopeError::Trust(t) => t.into(),
            ScopeError::Project { .. } => Failure::new(Exit::Usage, "configuration", e.to_string()),
            ScopeError::Registration(_) => Failure::new(Exit::Internal, "internal", e.to_string()),
        }
    }
}

impl From<PackageError> for Failure {
    fn from(e: PackageError) -> Self {
        match e {
            PackageError::Io { .. } => Failure::new(Exit::Internal, "internal", e.to_string()),
            PackageError::Home(t) => t.into(),
            _ => Failure::new(Exit::Usage, "package", e.to_string()),
        }
    }
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Self {
        let (exit, kind) = match &e {
            CallError::UnknownTool(_) => (Exit::Usage, "unknown_tool"),
            CallError::InvalidArguments { .. } => (Exit::Usage, "invalid_arguments"),
            CallError::Denied { .. } => (Exit::Denied, "denied"),
            CallError::Cancelled { .. } => (Exit::Interrupted, "cancelled"),
            CallError::TimedOut { .. } => (Exit::Interrupted, "timed_out"),
            CallError::Failed { .. } => (Exit::Internal, "failed"),
            CallError::Withdrawn { .. } => (Exit::Internal, "withdrawn"),
        };
        Failure::new(exit, kind, e.to_string())
    }
}

/// Run the CLI with the process's arguments.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("CLAT_LOG").unwrap_or_else(|_| "warn".into()))
        .try_init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("clat: error: cannot start the async runtime: {e}");
            return Exit::Internal.into();
        }
    };
    let json_errors = matches!(
        cli.command,
        Command::Tools { json: true }
            | Command::Mcp { json: true }
            | Command::Call { json: true, .. }
            | Command::Exec { .. }
            | Command::Plugin { command: PluginCommand::List { json: true } }
    );
    match runtime.block_on(dispatch(cli)) {
        Ok(exit) => exit.into(),
        Err(f) => {
            if json_errors {
                println!("{}", json!({ "error": { "kind": f.kind, "message": f.message }, "exit_code": f.exit as u8 }));
            } else {
                eprintln!("clat: error: {}", f.message);
            }
            f.exit.into()
        }
    }
}

fn project_dir(cli_project: Option<PathBuf>) -> Result<PathBuf, Failure> {
    match cli_project {
        Some(p) => Ok(p),
        None => std::env::current_dir()
            .map_err(|e| Failure::new(Exit::Usage, "configuration", format!("cannot read the current directory: {e}"))),
    }
}

async fn dispatch(cli: Cli) -> Result<Exit, Failure> {
    let home = ClatHome::resolve(cli.home.as_deref())?;
    match cli.command {
        Command::Trust { dir } => {
            let dir = match dir {
                Some(d) => d,
                None => project_dir(cli.project)?,
            };
            let root = TrustStore::new(&home).trust(&dir)?;
            println!("trusted {}", root.display());
            Ok(Exit::Ok)
        }
        Command::Tools { json } => {
            let options = scope_options(&home, SandboxPolicy::default())?;
            let scope = ProjectScope::mount(&home, &project_dir(cli.project)?, options)?;
            scope.load_extensions().await;
            scope.registry().freeze();
            print_tools(&scope, json);
            scope.close().await;
            Ok(Exit::Ok)
        }
        Command::Mcp { json } => {
            let options = scope_options(&home, SandboxPolicy::default())?;
            let scope = ProjectScope::mount(&home, &project_dir(cli.project)?, options)?;
            let servers = scope.load_mcp_servers().await;
            scope.registry().freeze();
            print_mcp(&servers, json);
            scope.close().await;
            Ok(Exit::Ok)
        }
        Command::Plugin { command } => plugin(&home, command).await,
        Command::Call { tool, args_json, mode, json, events, sandbox } => {
            let mode: PermissionMode = mode.parse().map_err(|e: String| Failure::new(Exit::Usage, "usage", e))?;
            let sandbox: SandboxPolicy = sandbox.parse().map_err(|e: String| Failure::new(Exit::Usage, "usage", e))?;
            let arguments = parse_arguments(args_json.as_deref())?;
            let scope = mount_for_runs(&home, cli.project, sandbox)?;
            let result = call(&scope, &tool, arguments, mode, json, events).await;
            scope.close().await;
            result
        }
        Command::Exec { script, mode, sandbox } => {
            let mode: PermissionMode = mode.parse().map_err(|e: String| Failure::new(Exit::Usage, "usage", e))?;
            let sandbox: SandboxPolicy = sandbox.parse().map_err(|e: String| Failure::new(Exit::Usage, "usage", e))?;
            // The whole script is read and checked before anything is mounted or started.
            let steps = read_script(&script)?;
            let scope = mount_for_runs(&home, cli.project, sandbox)?;
            let exit = exec(&scope, &steps, mode).await;
            scope.close().await;
            Ok(exit)
        }
    }
}

/// Mount the project for runs (`call`, `exec`): the session model from the
/// configuration, then the startup worker in the background.
fn mount_for_runs(
    home: &ClatHome,
    project: Option<PathBuf>,
    sandbox: SandboxPolicy,
) -> Result<Arc<ProjectScope>, Failure> {
    let scope = Arc::new(ProjectScope::mount(home, &project_dir(project)?, scope_options(home, sandbox)?)?);
    scope.start_extensions();
    Ok(scope)
}

/// What a mount takes from the configuration: the session model (for sampling)
/// and, when that model is the GLM Coding Plan, its pack of servers.
fn scope_options(home: &ClatHome, sandbox: SandboxPolicy) -> Result<ScopeOptions, Failure> {
    let env = |k: &str| std::env::var(k).ok();
    let configuration = |e: crate::model::ModelConfigError| Failure::new(Exit::Usage, "configuration", e.to_string());
    let model = crate::model::active_model(home, env).map_err(configuration)?;
    let provider = crate::model::provider_for(model.as_ref()).map_err(configuration)?;
    let glm_plan = crate::glm::coding_plan(model.as_ref(), env);
    Ok(ScopeOptions { sandbox, provider: Some(provider), glm_plan })
}

/// One line of a `clat exec` script.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptStep {
    tool: String,
    #[serde(default = "empty_object")]
    arguments: Value,
    #[serde(skip)]
    line: usize,
}

fn empty_object() -> Value {
    json!({})
}

/// Read a script: one JSON object per line; blank lines and lines starting with `#` are skipped.
fn read_script(path: &Path) -> Result<Vec<ScriptStep>, Failure> {
    let text =
        if path == Path::new("-") { std::io::read_to_string(std::io::stdin()) } else { std::fs::read_to_string(path) }
            .map_err(|e| {
                Failure::new(Exit::Usage, "usage", format!("cannot read the script {}: {e}", path.display()))
            })?;
    let mut steps = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut step: ScriptStep = serde_json::from_str(trimmed).map_err(|e| {
            Failure::new(
                Exit::Usage,
                "invalid_script",
                format!("{} line {}: expected {{\"tool\": NAME, \"arguments\": {{...}}}}: {e}", path.display(), i + 1),
            )
        })?;
        if !step.arguments.is_object() {
            let message = format!("{} line {}: `arguments` must be a JSON object", path.display(), i + 1);
            return Err(Failure::new(Exit::Usage, "invalid_script", message));
        }
        step.line = i + 1;
        steps.push(step);
    }
    Ok(steps)
}

/// Run the script's calls in order as one headless run. Every event, and each
/// call's result, is a JSON line on stdout. The exit code is the first failing
/// call's (0 when all succeeded); a cancelled run skips the rest.
async fn exec(scope: &ProjectScope, steps: &[ScriptStep], mode: PermissionMode) -> Exit {
    let run = scope
        .start_run_when_ready(
            RunContext::builder()
                .mode(mode)
                .approver(Arc::new(HeadlessApprover))
                .asker(Arc::new(HeadlessAsker))
                .events(Arc::new(JsonLinesSink::new(std::io::stdout()))),
        )
        .await;
    let interrupt = {
        let run = run.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                run.cancel();
            }
        })
    };
    let mut exit = Exit::Ok;
    for step in steps {
        if run.is_cancelled() {
            break;
        }
        let result = scope.registry().call(&step.tool, step.arguments.clone(), &run).await;
        let (line, step_exit) = match result {
            Ok(output) => {
                let failed = output.is_error;
                let line = json!({ "type": "call_result", "run_id": run.run_id(), "line": step.line, "tool": step.tool,
                                   "result": tool_output_to_json(&output) });
                (line, if failed { Exit::ToolError } else { Exit::Ok })
            }
            Err(e) => {
                let failure = Failure::from(e);
                let line = json!({ "type": "call_result", "run_id": run.run_id(), "line": step.line, "tool": step.tool,
                                   "error": { "kind": failure.kind, "message": failure.message } });
                (line, failure.exit)
            }
        };
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        if exit == Exit::Ok {
            exit = step_exit;
        }
    }
    interrupt.abort();
    scope.finish_run(&run);
    exit
}

/// Parse `ARGS_JSON`: valid JSON, and an object.
fn parse_arguments(text: Option<&str>) -> Result<Value, Failure> {
    let Some(text) = text else { return Ok(json!({})) };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Failure::new(
            Exit::Usage,
            "invalid_arguments",
            format!("ARGS_JSON is not valid JSON (line {}, column {}): {e}", e.line(), e.column()),
        )
    })?;
    if !value.is_object() {
        return Err(Failure::new(
            Exit::Usage,
            "invalid_arguments",
            "ARGS_JSON must be a JSON object, e.g. '{\"path\": \"README.md\"}'",
        ));
    }
    Ok(value)
}

async fn plugin(home: &ClatHome, command: PluginCommand) -> Result<Exit, Failure> {
    let store = PackageStore::new(home);
    match command {
        PluginCommand::Install { dir } => {
            let manifest = read_manifest(&dir)?;
            check_entry(&dir, &manifest)?;
            let runtime = match manifest.kind {
                PackageKind::Wasm => Some(
                    crate::wasm::WasmRuntime::new(&home.path().join(crate::scope::WASM_CACHE_DIR)).map_err(|e| {
                        Failure::new(Exit::Internal, "internal", format!("the WASM runtime could not start: {e:#}"))
                    })?,
                ),
                PackageKind::McpStdio => None,
            };
            let mut tools = Vec::new();
            // Validation runs on the staged copy, the bytes that will be installed.
            let installed = store.install(&dir, |manifest, staged| {
                let Some(runtime) = &runtime else { return Ok(()) };
                let entry = staged.join(&manifest.entry);
                let validated = tokio::task::block_in_place(|| {
                    tokio::runtime::Handle::current().block_on(crate::wasm::validate_component(
                        runtime,
                        &manifest.name,
                        &entry,
                    ))
                });
                tools = validated.map_err(|e| format!("{}: {e}", manifest.entry))?;
                Ok(())
            })?;
            let kind = match installed.manifest.kind {
                PackageKind::Wasm => "wasm",
                PackageKind::McpStdio => "mcp-stdio",
            };
            println!(
                "installed {} {} ({kind}) into {}",
                installed.manifest.name,
                installed.manifest.version,
                installed.dir.display()
            );
            for t in tools {
                println!(
                    "  tool {}",
                    crate::names::external_tool_name(
                        crate::names::ExternalKind::Wasm,
                        &installed.manifest.name,
                        &t.name
                    )
                );
            }
            Ok(Exit::Ok)
        }
        PluginCommand::List { json } => {
            let list = store.list()?;
            if json {
                println!("{}", json!({ "plugins": list }));
            } else if list.is_empty() {
                println!("no plugins installed");
            } else {
                for p in list {
                    let kind = match p.manifest.kind {
                        PackageKind::Wasm => "wasm",
                        PackageKind::McpStdio => "mcp-stdio",
                    };
                    println!("{:20} {:10} {:9} {}", p.manifest.name, p.manifest.version, kind, p.manifest.description);
                }
            }
            Ok(Exit::Ok)
        }
        PluginCommand::Remove { name } => {
            let removed = store.remove(&name)?;
            println!("removed {} {}", removed.manifest.name, removed.manifest.version);
            Ok(Exit::Ok)
        }
    }
}

/// The /mcp surface: counts, then each server's transport, state, protocol,
/// tool count, problems and (redacted) stderr tail.
fn print_mcp(servers: &[crate::scope::ExtensionStatus], json: bool) {
    let count = |state: &str| servers.iter().filter(|s| s.state == state).count();
    let configured = servers.iter().filter(|s| !s.name.starts_with('(')).count();
    if json {
        let list: Vec<Value> = servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "transport": if s.kind == "mcp-http" { "streamable-http" } else { "stdio" },
                    "state": s.state,
                    "protocol": s.protocol,
                    "tools": s.tools.len(),
                    "system_prompts": s.system_prompts,
                    "problems": s.problems,
                    "stderr_tail": s.output_tail,
                })
            })
            .collect();
        println!(
            "{}",
            json!({
                "configured": configured,
                "connecting": 0,
                "connected": count("loaded"),
                "failed": count("failed"),
                "not_loaded": count("not-loaded"),
                "servers": list,
            })
        );
        return;
    }
    println!(
        "MCP servers: {configured} configured, 0 connecting, {} connected, {} failed, {} not loaded",
        count("loaded"),
        count("failed"),
        count("not-loaded")
    );
    for s in servers {
        let transport = if s.kind == "mcp-http" { "streamable-http" } else { "stdio" };
        let protocol = s.protocol.as_deref().unwrap_or("-");
        println!("  {}  {transport}  {}  {protocol}  {} tools", s.name, s.state, s.tools.len());
        if !s.system_prompts.is_empty() {
            println!("    system prompts: {}", s.system_prompts.join(", "));
        }
        for p in &s.problems {
            println!("    problem: {p}");
        }
        if s.state == "failed" {
            for line in &s.output_tail {
                println!("    | {line}");
            }
        }
    }
}

fn print_tools(scope: &ProjectScope, json: bool) {
    let tools = scope.registry().list();
    let extensions = scope.extensions();
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", json!({ "tools": tools, "extensions": extensions }));
        return;
    }
    for e in extensions.iter().filter(|e| !e.problems.is_empty()) {
        eprintln!("plugin {} ({}): {}", e.name, e.state, e.problems.join("; "));
        for line in &e.output_tail {
            eprintln!("  | {line}");
        }
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let source_width = tools.iter().map(|t| t.source.label().len()).max().unwrap_or(6).max(6);
    let _ = writeln!(out, "{:width$}  {:13}  {:source_width$}  DESCRIPTION", "NAME", "EFFECT", "SOURCE");
    for t in &tools {
        let (effect, source) = (t.effect.as_str(), t.source.label());
        let _ = writeln!(out, "{:width$}  {effect:13}  {source:source_width$}  {}", t.name, t.description);
    }
}

async fn call(
    scope: &ProjectScope,
    tool: &str,
    arguments: Value,
    mode: PermissionMode,
    json: bool,
    events: bool,
) -> Result<Exit, Failure> {
    let interactive = TerminalApprover::available();
    let approver: Arc<dyn Approver> =
        if interactive { Arc::new(TerminalApprover::default()) } else { Arc::new(HeadlessApprover) };
    let asker: Arc<dyn UserAsker> =
        if interactive { Arc::new(TerminalAsker::terminal()) } else { Arc::new(HeadlessAsker) };
    let sink: Arc<dyn EventSink> =
        if events { Arc::new(JsonLinesSink::new(std::io::stderr())) } else { Arc::new(NullSink) };
    let run =
        scope.start_run_when_ready(RunContext::builder().mode(mode).approver(approver).asker(asker).events(sink)).await;
    let interrupt = {
        let run = run.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                run.cancel();
            }
        })
    };
    let result = scope.registry().call(tool, arguments, &run).await;
    interrupt.abort();
    scope.finish_run(&run);
    let output = result?;
    if json {
        let mut v = tool_output_to_json(&output);
        v["tool"] = json!(tool);
        v["runId"] = json!(run.run_id());
        println!("{v}");
    } else {
        let mut text = output.joined_text();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if output.is_error {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
    }
    Ok(if output.is_error { Exit::ToolError } else { Exit::Ok })
}
