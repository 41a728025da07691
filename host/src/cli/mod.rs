//! The `clat` command line: `trust`, `tools`, `mcp` (and its subcommands),
//! `approvals`, `call`, `exec`, `serve` and `plugin`. It parses and prints:
//! everything it does goes through the front door (`Platform`, its faces and
//! the crate root's re-exports; `tests/test_architecture_map.rs` holds it so),
//! with stable `--json` shapes (see the README) and documented exit codes.
//!
//! - `mod.rs`: the global options, the process's runtime, dispatch;
//! - `commands.rs`: every command and its options (clap);
//! - `questions.rs`: what a mount asks at the terminal;
//! - `exit.rs`: exit codes and the mapping of every error onto them;
//! - `runs.rs`: `clat call` and `clat exec`;
//! - `status.rs`: what `clat tools` and `clat mcp` print;
//! - `mcp.rs`: `clat mcp` and its subcommands;
//! - `approvals.rs`: `clat approvals list | allow | revoke`;
//! - `approve.rs`: what `clat mcp approve` approved, printed;
//! - `plugin.rs`: `clat plugin install | update | push | list | load | remove | grant | revoke | gc`;
//! - `author.rs`: `clat plugin new | build | call | test` (and `install --build`);
//! - `install.rs`: the grant an install asks at a terminal, and imports as people read them;
//! - `shutdown.rs`: every stop signal through one teardown; the subreaper;
//! - `output.rs`: `outln!` / `out!`, through which everything printed on stdout goes.

// First, so that every module below prints through its macros.
#[macro_use]
mod output;
mod approvals;
mod approve;
mod author;
mod commands;
mod completion;
mod exit;
mod install;
mod mcp;
mod plugin;
mod progress;
mod questions;
mod runs;
mod shutdown;
mod status;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use serde_json::json;

pub use exit::Exit;
use exit::Failure;
use shutdown::Shutdown;

pub(crate) use commands::{CallArgs, Command, LoadWhen, PluginCommand};

use crate::ServeOptions;
use crate::platform::{MountOptions, Platform, Project};
use crate::{PermissionMode, SandboxPolicy, StartFilter};

/// `clat --version`: the package version, the commit it was built from and the contract versions it accepts.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let accepted: Vec<String> = crate::contract::ACCEPTED_CONTRACT_VERSIONS
        .iter()
        .map(|v| format!("{}@{v}", crate::contract::CONTRACT_PACKAGE))
        .collect();
    format!("{} ({}; plugin contract {})", env!("CARGO_PKG_VERSION"), env!("CLAT_BUILD_COMMIT"), accepted.join(", "))
});

#[derive(Parser, Debug)]
#[command(name = "clat", version = VERSION.as_str(), about = "CLAT extension platform: tools, plugins and MCP servers in one registry")]
pub struct Cli {
    /// CLAT's home directory (default: $CLAT_HOME, else ~/.clat).
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    /// The project directory (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    project: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug, -vvv trace); overrides CLAT_LOG and RUST_LOG.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    verbose: u8,
    /// Only errors in the log output.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// Run the CLI with the process's arguments.
pub fn main() -> ExitCode {
    completion::answer_if_asked();
    let cli = Cli::parse();
    progress::set_quiet(cli.quiet);
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(log_filter(&cli)).try_init();
    shutdown::become_subreaper();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("clat: error: cannot start the async runtime: {e}");
            return Exit::Internal.into();
        }
    };
    let json_errors = matches!(
        cli.command,
        Command::Tools { json: true, .. }
            | Command::Trust { json: true, .. }
            | Command::Plugin {
                command: PluginCommand::Install { json: true, .. }
                    | PluginCommand::Remove { json: true, .. }
                    | PluginCommand::Gc { json: true }
                    | PluginCommand::Push { json: true, .. }
                    | PluginCommand::Update { json: true, .. }
                    | PluginCommand::New { json: true, .. }
                    | PluginCommand::Build { json: true, .. }
                    | PluginCommand::Call { call: CallArgs { json: true, .. }, .. }
                    | PluginCommand::Test { json: true, .. }
            }
            | Command::Mcp { json: true, .. }
            | Command::Approvals { json: true, .. }
            | Command::Call { call: CallArgs { json: true, .. }, .. }
            | Command::Exec { .. }
            | Command::Plugin { command: PluginCommand::List { json: true } }
    );
    let outcome = runtime.block_on(async {
        let shutdown = Shutdown::listen()
            .map_err(|e| Failure::new(Exit::Internal, "internal", format!("cannot listen for signals: {e}")))?;
        dispatch(cli, &shutdown).await
    });
    // What left its process group (setsid, daemonizing wrappers) dies with the command.
    let leftovers = shutdown::kill_descendants();
    if leftovers > 0 {
        tracing::info!("killed {leftovers} processes that outlived the teardown");
    }
    // A thread still blocked (a terminal prompt, a compile) must not hold the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    match outcome {
        Ok(exit) => exit.into(),
        Err(f) => {
            // Writes are best effort: after SIGHUP the terminal may be gone.
            if json_errors {
                let line = json!({ "error": { "kind": f.kind, "message": f.message }, "exit_code": f.exit as u8 });
                let _ = writeln!(std::io::stdout(), "{line}");
            } else {
                let _ = writeln!(std::io::stderr(), "clat: error: {}", f.message);
            }
            f.exit.into()
        }
    }
}

/// What the log shows: `-v` / `-q` when given, else `CLAT_LOG`, else `RUST_LOG`, else warnings.
fn log_filter(cli: &Cli) -> tracing_subscriber::EnvFilter {
    use tracing_subscriber::EnvFilter;
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => Some("error"),
        (false, 0) => None,
        (false, 1) => Some("info"),
        (false, 2) => Some("debug"),
        (false, _) => Some("trace"),
    };
    let from_env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    match level {
        Some(level) => EnvFilter::new(level),
        None => from_env("CLAT_LOG")
            .or_else(|| from_env("RUST_LOG"))
            .and_then(|directives| EnvFilter::try_new(directives).ok())
            .unwrap_or_else(|| EnvFilter::new("warn")),
    }
}

fn project_dir(cli_project: Option<PathBuf>) -> Result<PathBuf, Failure> {
    match cli_project {
        Some(p) => Ok(p),
        None => std::env::current_dir()
            .map_err(|e| Failure::new(Exit::Usage, "configuration", format!("cannot read the current directory: {e}"))),
    }
}

fn usage(e: String) -> Failure {
    Failure::new(Exit::Usage, "usage", e)
}

async fn dispatch(cli: Cli, shutdown: &Shutdown) -> Result<Exit, Failure> {
    let platform = Platform::open(cli.home.as_deref())?;
    match cli.command {
        Command::Trust { dir, json } => {
            let dir = match dir {
                Some(d) => d,
                None => project_dir(cli.project)?,
            };
            let root = platform.trust(&dir)?;
            if json {
                outln!("{}", json!({ "trusted": root.display().to_string() }));
            } else {
                outln!("trusted {}", root.display());
            }
            Ok(Exit::Ok)
        }
        Command::Completions { shell } => {
            let script = completion::registration(shell)
                .map_err(|e| Failure::new(Exit::Internal, "internal", format!("cannot write the script: {e}")))?;
            output::checked(std::io::stdout().write_all(&script));
            Ok(Exit::Ok)
        }
        Command::Tools { name, search, search_eval, enrich, json } => {
            let cases = match &search_eval {
                Some(path) => Some(crate::SearchCase::read_table(path).map_err(usage)?),
                None => None,
            };
            let model = match enrich {
                true => Some(platform.configured_model()?.ok_or_else(|| {
                    usage(
                        "no model is configured: search enrichment asks the session model (set CLAT_MODEL_BASE_URL \
                         and CLAT_MODEL, or config.json's \"model\"); nothing was asked"
                            .into(),
                    )
                })?),
                false => None,
            };
            // The user watches this start: slow servers get longer, with progress. A search (and its enrichment)
            // starts only the servers it has no kept listing of.
            let searching = search.is_some() || cases.is_some() || enrich;
            let start = if searching { StartFilter::Search } else { StartFilter::All };
            let options = MountOptions {
                default_startup_timeout: Some(crate::limits::WATCHED_START_TIMEOUT),
                ..mount_options(SandboxPolicy::default(), start)
            };
            let project = mount(&platform, cli.project, options)?;
            let loaded = tokio::select! {
                _ = progress::while_starting(&project, json, project.load_extensions()) => true,
                _ = shutdown.token().cancelled() => false,
            };
            project.freeze();
            if let (Some(model), true) = (&model, loaded) {
                let enriched = status::enrich_search(&project, model.as_ref(), json).await;
                project.close().await;
                return enriched;
            }
            let shown = match (&name, loaded) {
                (_, false) => Err(runs::interrupted(shutdown)),
                (None, true) => {
                    match (&search, &cases) {
                        (Some(query), _) => status::print_matches(&project, query, json),
                        (None, Some(cases)) => status::print_search_evaluation(&project, cases, json),
                        (None, None) => status::print_tools(&project, json),
                    }
                    Ok(())
                }
                (Some(name), true) => runs::resolve_tool_quietly(&project, name)
                    .and_then(|name| status::print_tool(&project, &name, json)),
            };
            project.close().await;
            shown.map(|()| Exit::Ok)
        }
        Command::Mcp { json, command } => mcp::mcp(&platform, cli.project, command, json, shutdown).await,
        Command::Plugin { command } => plugin::plugin(&platform, cli.project, command, shutdown).await,
        Command::Approvals { json, command } => approvals::approvals(&platform, cli.project, command, json).await,
        Command::Call { tool, call } => {
            let (request, sandbox) = call.request(tool)?;
            let project = mount_for_runs(&platform, cli.project, sandbox, std::slice::from_ref(&request.tool))?;
            let result = runs::call(&project, request, shutdown).await;
            project.close().await;
            result
        }
        Command::Serve {
            mode,
            sandbox,
            audit,
            http,
            token_file,
            tool_names,
            tool_budget,
            all_tools,
            sampling_budget,
        } => {
            let mode: PermissionMode = mode.parse().map_err(usage)?;
            let sandbox: SandboxPolicy = sandbox.parse().map_err(usage)?;
            let dir = project_dir(cli.project)?;
            let tool_budget = (!all_tools).then_some(tool_budget);
            let options = ServeOptions {
                mode,
                audit,
                http,
                token_file,
                names: tool_names,
                tool_budget,
                sampling_budget,
                listening: Some(Box::new(|url: &str| eprintln!("clat serve: {url}"))),
            };
            // Questions only at a terminal: on stdio, stdin is the protocol, so unapproved project servers and
            // unanswered inputs stay out.
            // Past the budget, a server with a kept listing starts at the first call of one of its tools.
            let mount = mount_options(sandbox, StartFilter::FirstUse(tool_budget.unwrap_or(usize::MAX)));
            crate::serve_project(&platform, &dir, mount, options, shutdown.token().clone()).await?;
            Ok(Exit::Ok)
        }
        Command::Exec { script, mode, sandbox } => {
            let mode: PermissionMode = mode.parse().map_err(usage)?;
            let sandbox: SandboxPolicy = sandbox.parse().map_err(usage)?;
            // The whole script is read and checked before anything is mounted or started.
            let steps = runs::read_script(&script)?;
            let tools: Vec<String> = steps.iter().map(|s| s.tool.clone()).collect();
            let project = mount_for_runs(&platform, cli.project, sandbox, &tools)?;
            let result = runs::exec(&project, &steps, mode, shutdown).await;
            project.close().await;
            result
        }
    }
}

/// Mount the project for runs (`call`, `exec`) and start, in the background,
/// only the extensions that can own one of `tools` (`StartFilter::Tools`).
fn mount_for_runs(
    platform: &Platform,
    project: Option<PathBuf>,
    sandbox: SandboxPolicy,
    tools: &[String],
) -> Result<Project, Failure> {
    let project = mount(platform, project, mount_options(sandbox, StartFilter::Tools(tools.to_vec())))?;
    project.start_extensions();
    Ok(project)
}

/// Mount `project` (default: the current directory) through the front door.
fn mount(platform: &Platform, project: Option<PathBuf>, options: MountOptions) -> Result<Project, Failure> {
    let dir = project_dir(project)?;
    Ok(platform.mount(&dir, options)?)
}

/// How the command line mounts: the session model from the home's
/// configuration (the platform reads it), compile progress on stderr.
fn mount_options(sandbox: SandboxPolicy, start: StartFilter) -> MountOptions {
    MountOptions {
        start,
        sandbox,
        model: None,
        compile_observer: progress::compile_observer(),
        default_startup_timeout: None,
        wasm_compiler: Default::default(),
        questions: questions::at_terminal(),
    }
}
