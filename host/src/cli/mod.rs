//! The `clat` command line: `trust`, `tools`, `mcp` (and `mcp add | remove |
//! get | enable | disable`), `call`, `exec` and `plugin`. A thin front-end on the library — mount a trusted project, list
//! the registry and the extensions, run tool calls as runs through the whole
//! pipeline, manage plugin packages — with stable `--json` shapes (see the
//! README) and documented exit codes.
//!
//! - `mod.rs`: argument parsing, the process's runtime, dispatch;
//! - `exit.rs`: exit codes and the mapping of every error onto them;
//! - `runs.rs`: `clat call` and `clat exec`;
//! - `status.rs`: what `clat tools` and `clat mcp` print;
//! - `mcp.rs`: `clat mcp` and its subcommands;
//! - `approvals.rs`: `clat approvals list | revoke`;
//! - `approve.rs`: a project's `.mcp.json` reviewed and approved (`clat mcp approve`, the prompt);
//! - `plugin.rs`: `clat plugin install | list | remove | gc`;
//! - `author.rs`: `clat plugin new | build | call | test` (and `install --build`);
//! - `install.rs`: what an install decides first (imports, grants, the staged package's validation);
//! - `shutdown.rs`: every stop signal through one teardown; the subreaper;
//! - `output.rs`: `outln!` / `out!`, through which everything printed on stdout goes.

// First, so that every module below prints through its macros.
#[macro_use]
mod output;
mod approvals;
mod approve;
mod author;
mod completion;
mod exit;
mod install;
mod mcp;
mod plugin;
mod progress;
mod runs;
mod serve;
mod shutdown;
mod status;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::json;

pub use exit::Exit;
use exit::Failure;
use shutdown::Shutdown;

use crate::contract::PermissionMode;
use crate::extension::StartFilter;
use crate::native::NATIVE_TOOL_NAMES;
use crate::native::process::SandboxPolicy;
use crate::platform::{MountOptions, Platform, Project};

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

#[derive(Subcommand, Debug)]
enum Command {
    /// Record trust for a project root (default: --project, else the current directory).
    Trust {
        /// The project directory to trust.
        dir: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the shell's registration of clat's completer, which completes commands, options, `--mode` and
    /// `--sandbox` values, tool, server and plugin names (e.g. `source <(clat completions bash)` in ~/.bashrc).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// List the registry: name, source, effect, description, input schema; or show one tool (by any of
    /// its names): its description, effect and why, source, and arguments.
    Tools {
        /// One tool: its registered name, or its server's or plugin's name for it.
        #[arg(add = clap_complete::ArgValueCandidates::new(completion::tool_names))]
        name: Option<String>,
        /// The tools that best match a task's words (names, descriptions, parameters), best first.
        #[arg(long, value_name = "QUERY", conflicts_with = "name")]
        search: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Mount the project, connect the MCP servers and print their status (the /mcp surface;
    /// exit 7 when one failed), or add, remove, show, enable or disable a server.
    #[command(args_conflicts_with_subcommands = true)]
    Mcp {
        /// Print JSON instead of text.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        command: Option<mcp::McpCommand>,
    },
    /// List or revoke the approvals kept at the prompt ("always for this tool / server").
    Approvals {
        /// Print JSON instead of text.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        command: approvals::ApprovalsCommand,
    },
    /// Write, build, try, test, install, list or remove plugins; push them to and update them from OCI registries; sweep the compiled cache.
    Plugin {
        #[command(subcommand)]
        command: PluginCommand,
    },
    /// Run one tool call as one run, through the whole pipeline.
    Call {
        /// The registered tool name.
        #[arg(add = clap_complete::ArgValueCandidates::new(completion::tool_names))]
        tool: String,
        #[command(flatten)]
        call: CallArgs,
    },
    /// Serve the project's tools (native, WASM plugins, MCP servers) as an MCP server on stdio (or Streamable
    /// HTTP with --http), each call through CLAT's permission pipeline:
    /// `claude mcp add clat -- clat serve --project DIR`.
    Serve {
        /// Permission mode of every call: read-only, ask, auto-edit, full-access (under `ask`, a call that needs
        /// an approval is asked of the client's user in a form when the client takes forms, else denied at once;
        /// kept approvals apply).
        #[arg(long, default_value = "ask", value_parser = Suggested(&MODES))]
        mode: String,
        /// Sandbox policy for commands: none, restrict-writes.
        #[arg(long, default_value = "none", value_parser = Suggested(&SANDBOXES))]
        sandbox: String,
        /// The audit trail's file, one JSON line per call (default: $CLAT_HOME/audit/calls.jsonl).
        #[arg(long, value_name = "FILE")]
        audit: Option<PathBuf>,
        /// Serve Streamable HTTP on ADDR (e.g. 127.0.0.1:8808; port 0 picks one) instead of stdio; the URL
        /// (http://ADDR/mcp) goes to stderr. Off loopback it needs --token-file.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// A file whose first line is the bearer token every HTTP request must carry.
        #[arg(long, value_name = "FILE", requires = "http")]
        token_file: Option<PathBuf>,
        /// What the served tools are called: registry (wasm_…, mcp_…, as `clat tools` shows them) or source (an
        /// extension's tool by its own name when no other tool has or is called that name).
        #[arg(long, value_enum, default_value = "registry")]
        tool_names: serve::ServedNames,
        /// Past this many bytes of tool definitions (name, description, schema), list the native tools and
        /// search_tools / load_tools / call_tool instead of every tool.
        #[arg(long, value_name = "BYTES", default_value_t = crate::limits::DISCOVERY_BUDGET_BYTES)]
        tool_budget: usize,
        /// List every tool, whatever their definitions cost.
        #[arg(long, conflicts_with = "tool_budget")]
        all_tools: bool,
        /// Extension sampling requests one client session allows across all its calls (each call charges the
        /// session's budget; past it sampling is refused).
        #[arg(long, value_name = "REQUESTS", default_value_t = crate::limits::SERVE_SESSION_SAMPLING_REQUESTS)]
        sampling_budget: u32,
    },
    /// Run a script of tool calls headless, as one run: one run id, one mode, one sampling budget.
    /// SCRIPT has one JSON object per line, {"tool": NAME, "arguments": {...}} (`-`: standard input).
    /// Run events and each call's result go to stdout as JSON lines.
    Exec {
        /// The script file, or `-` for standard input.
        script: PathBuf,
        /// Permission mode: read-only, ask, auto-edit, full-access (`ask` denies: nobody can answer).
        #[arg(long, default_value = "ask", value_parser = Suggested(&MODES))]
        mode: String,
        /// Sandbox policy for commands: none, restrict-writes.
        #[arg(long, default_value = "none", value_parser = Suggested(&SANDBOXES))]
        sandbox: String,
    },
}

/// The values `--mode` takes, as `PermissionMode` spells them.
const MODES: [&str; 4] = ["read-only", "ask", "auto-edit", "full-access"];
/// The values `--sandbox` takes, as `SandboxPolicy` spells them.
const SANDBOXES: [&str; 2] = ["none", "restrict-writes"];

/// A string option whose values help and shell completions offer; the
/// command parses it itself, so a wrong value gets the command's own message
/// (and its `--json` error).
#[derive(Clone)]
struct Suggested(&'static [&'static str]);

impl clap::builder::TypedValueParser for Suggested {
    type Value = String;

    fn parse_ref(
        &self,
        command: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(command, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|v| clap::builder::PossibleValue::new(*v))))
    }
}

/// What one tool call takes and how it prints (`clat call`, `clat plugin call`).
#[derive(clap::Args, Debug)]
pub(crate) struct CallArgs {
    /// The arguments as a JSON object (default: {}).
    args_json: Option<String>,
    /// Permission mode: read-only, ask, auto-edit, full-access.
    #[arg(long, default_value = "ask", value_parser = Suggested(&MODES))]
    mode: String,
    /// Print the result (or error) as JSON.
    #[arg(long)]
    json: bool,
    /// Print run events as JSON lines on stderr.
    #[arg(long)]
    events: bool,
    /// Sandbox policy for commands: none, restrict-writes.
    #[arg(long, default_value = "none", value_parser = Suggested(&SANDBOXES))]
    sandbox: String,
}

impl CallArgs {
    /// The checked request for `tool`, and the sandbox policy.
    pub(crate) fn request(self, tool: String) -> Result<(runs::CallRequest, SandboxPolicy), Failure> {
        let mode: PermissionMode = self.mode.parse().map_err(usage)?;
        let sandbox: SandboxPolicy = self.sandbox.parse().map_err(usage)?;
        let arguments = runs::parse_arguments(self.args_json.as_deref())?;
        Ok((runs::CallRequest { tool, arguments, mode, json: self.json, events: self.events }, sandbox))
    }
}

#[derive(Subcommand, Debug)]
pub(crate) enum PluginCommand {
    /// Write a new plugin project NAME (manifest, build files, one tool, its test cases, a README).
    New {
        /// The plugin's name (a-z, 0-9, '-', '_'); also the new directory's.
        name: String,
        /// The language of the project.
        #[arg(long, value_enum, default_value = "rust")]
        lang: crate::authoring::Language,
        /// What the plugin is: a WebAssembly component, or an MCP server over stdio.
        #[arg(long, value_enum, default_value = "wasm")]
        kind: crate::supply::packages::PackageKind,
        /// Where to create it (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Build a plugin project with its language's toolchain and assemble its package in DIR/dist.
    Build {
        /// The project directory (default: the current directory).
        dir: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool of a package (or a project, built first) without installing it, on the --project
    /// directory (default: the current one) trusted for this call only.
    Call {
        /// The project or package directory.
        package: PathBuf,
        /// The tool: its registered or its own name.
        tool: String,
        #[command(flatten)]
        call: CallArgs,
        /// Use the project's last build instead of building it.
        #[arg(long)]
        no_build: bool,
        /// Grant the capabilities the manifest declares for this call without asking.
        #[arg(long)]
        grant: bool,
    },
    /// Check a package (or a project, built first) against the contract and run its cases.jsonl
    /// through the pipeline; exit 1 when anything fails.
    Test {
        /// The project or package directory (default: the current directory).
        package: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Use the project's last build instead of building it.
        #[arg(long)]
        no_build: bool,
        /// Grant the capabilities the manifest declares for these cases without asking.
        #[arg(long)]
        grant: bool,
        /// Run again whenever a file of the project changes, until interrupted (Ctrl-C).
        #[arg(long)]
        watch: bool,
    },
    /// Validate a package directory (clat-plugin.toml + entry), or a WASM plugin in an OCI
    /// registry (`oci://REGISTRY/REPO:TAG` or `@sha256:…`: its tag resolved to a digest once,
    /// every layer checked against its digest), and install it.
    Install {
        /// The package directory, with --build the project directory, or `oci://REGISTRY/REPO:TAG`.
        #[arg(value_name = "DIR|oci://REGISTRY/REPO:TAG")]
        dir: PathBuf,
        /// Build the project first and install its package (DIR/dist).
        #[arg(long)]
        build: bool,
        /// Grant the capabilities the manifest declares (HTTP hosts, environment
        /// variables) without asking; needed when no one is at a terminal.
        #[arg(long)]
        grant: bool,
        /// Replace a plugin of the same name installed from another repository or directory (it keeps none of
        /// its grants).
        #[arg(long)]
        replace: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Grant an installed plugin the capabilities its manifest declares.
    Grant {
        /// The plugin's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(completion::plugin_names))]
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Take back every capability granted to an installed plugin (its calls that need one then fail).
    Revoke {
        /// The plugin's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(completion::plugin_names))]
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Choose when an installed plugin's tools are offered to a model: always (from the first turn),
    /// deferred (found through search_tools, even when every tool fits), or by the budget (the default).
    Load {
        /// The plugin's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(completion::plugin_names))]
        name: String,
        /// When its tools are offered.
        #[arg(value_enum)]
        when: LoadWhen,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List installed packages.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove an installed package (and its compiled cache entries).
    Remove {
        /// The package's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(completion::plugin_names))]
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Publish a WASM plugin package to an OCI registry, in the Wasm OCI artifact layout
    /// (credentials from the Docker config when it has the registry).
    Push {
        /// The package directory (clat-plugin.toml + component).
        dir: PathBuf,
        /// Where: `oci://REGISTRY/REPO:TAG`.
        #[arg(value_name = "oci://REGISTRY/REPO:TAG")]
        reference: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check the registry tag a plugin was installed from; when it has moved,
    /// say from which digest to which and install what it names now.
    Update {
        /// The plugin's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(completion::plugin_names))]
        name: String,
        /// Grant the capabilities the new version declares without asking.
        #[arg(long)]
        grant: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove compiled cache entries no installed plugin uses (install and remove also do).
    Gc {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// When a plugin's tools are offered (`clat plugin load`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LoadWhen {
    /// From the first turn (`always_load`).
    Always,
    /// Found through search_tools, never offered up front (`defer_loading`).
    Deferred,
    /// Offered while every tool's definition fits the budget, found past it.
    Budget,
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
    let home = platform.clat_home().clone();
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
        Command::Tools { name, search, json } => {
            // The user watches this start: slow servers get longer, with progress.
            let options = MountOptions {
                default_startup_timeout: Some(crate::limits::WATCHED_START_TIMEOUT),
                ..mount_options(SandboxPolicy::default(), StartFilter::All)
            };
            let project = mount(&platform, cli.project, options)?;
            let loaded = tokio::select! {
                _ = progress::while_starting(&project, json, project.load_extensions()) => true,
                _ = shutdown.token().cancelled() => false,
            };
            project.freeze();
            let shown = match (&name, loaded) {
                (_, false) => Err(runs::interrupted(shutdown)),
                (None, true) => {
                    match &search {
                        Some(query) => status::print_matches(&project, query, json),
                        None => status::print_tools(&project, json),
                    }
                    Ok(())
                }
                (Some(name), true) => {
                    runs::resolve_tool_quietly(&project, name).map(|name| status::print_tool(&project, &name, json))
                }
            };
            project.close().await;
            shown.map(|()| Exit::Ok)
        }
        Command::Mcp { json, command } => mcp::mcp(&home, cli.project, command, json, shutdown).await,
        Command::Plugin { command } => plugin::plugin(&home, cli.project, command, shutdown).await,
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
            let names = tool_names;
            let options = serve::ServeOptions {
                dir,
                mode,
                sandbox,
                audit,
                http,
                token_file,
                names,
                tool_budget,
                sampling_budget,
            };
            serve::serve(&platform, options, shutdown).await
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
/// only the extensions that can own one of `tools` (a native tool needs none).
fn mount_for_runs(
    platform: &Platform,
    project: Option<PathBuf>,
    sandbox: SandboxPolicy,
    tools: &[String],
) -> Result<Project, Failure> {
    let external: Vec<String> = tools.iter().filter(|t| !NATIVE_TOOL_NAMES.contains(&t.as_str())).cloned().collect();
    let dir = project_dir(project)?;
    let start = start_filter(platform, &dir, external);
    let project = mount(platform, Some(dir), mount_options(sandbox, start))?;
    project.start_extensions();
    Ok(project)
}

/// What to start for these tools of a run. A registered name starts its
/// owner only. A short name (`get_sum`) starts every plugin and the servers
/// whose last listing has a tool of that name (`listings.rs`); one that
/// no listing of a server configured now has starts everything.
fn start_filter(platform: &Platform, dir: &std::path::Path, external: Vec<String>) -> StartFilter {
    let (mut owners, short): (Vec<String>, Vec<String>) =
        external.into_iter().partition(|t| t.starts_with("mcp_") || t.starts_with("wasm_"));
    if short.is_empty() {
        return StartFilter::OwnersOf(owners);
    }
    let home = platform.clat_home();
    let env = |k: &str| std::env::var(k).ok();
    let model = crate::services::model::active_model(home, env).ok().flatten();
    let glm_plan = crate::mcp::glm::coding_plan(model.as_ref(), env);
    let root = crate::home::trust::canonical_project(dir).ok();
    let current = crate::scope::configured_identities(home, root.as_deref(), glm_plan.as_ref());
    for name in &short {
        match crate::home::listings::registered_names(home, name, &current) {
            Some(found) => owners.extend(found),
            None => return StartFilter::All,
        }
    }
    StartFilter::PluginsAndOwnersOf(owners)
}

/// Mount `project` (default: the current directory) through the front door.
fn mount(platform: &Platform, project: Option<PathBuf>, options: MountOptions) -> Result<Project, Failure> {
    let dir = project_dir(project)?;
    approve::review_project_servers(platform.clat_home(), &dir);
    mcp::ask_for_inputs(platform.clat_home(), &options.start);
    Ok(platform.mount(&dir, options)?)
}

/// The session model the home configures (`model.json`, `CLAT_MODEL_*`), as a provider.
fn configured_model(
    home: &crate::home::ClatHome,
) -> Result<std::sync::Arc<dyn crate::services::sampling::ModelProvider>, Failure> {
    let configuration =
        |e: crate::services::model::ModelConfigError| Failure::new(Exit::Usage, "configuration", e.to_string());
    let model = crate::services::model::active_model(home, |k| std::env::var(k).ok()).map_err(configuration)?;
    crate::services::model::provider_for(model.as_ref()).map_err(configuration)
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_suggested_values_are_the_ones_the_commands_parse() {
        let modes: Vec<&str> = PermissionMode::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(modes, MODES);
        for sandbox in SANDBOXES {
            assert!(sandbox.parse::<SandboxPolicy>().is_ok(), "{sandbox}");
        }
    }
}
