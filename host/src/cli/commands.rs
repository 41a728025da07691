//! The command line's grammar: every command and its options as clap parses
//! them (`Cli` itself, the global options, is `mod.rs`'s), with the values
//! help and shell completions offer.

use std::path::PathBuf;

use clap::Subcommand;

use super::exit::Failure;
use super::{approvals, completion, mcp, runs, usage};
use crate::{PermissionMode, SandboxPolicy};

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
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
        /// Measure the search against a table of queries and the tools they should find (JSON:
        /// [{"query": …, "tool": REGISTERED_NAME}, …]): each query's rank, Recall@5 and @10, MRR, and whether
        /// search_tools' first answer names the tool.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["name", "search"])]
        search_eval: Option<std::path::PathBuf>,
        /// Ask the configured session model, once per tool definition, for a few requests in a user's words, and
        /// keep them for the search (off until asked; a definition asked before is not asked again), e.g.
        /// `CLAT_MODEL_BASE_URL=… CLAT_MODEL=… clat tools --enrich`.
        #[arg(long, conflicts_with_all = ["name", "search", "search_eval"])]
        enrich: bool,
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
        tool_names: crate::ServedNames,
        /// Past this many bytes of tool definitions (name, description, schema), list the native tools and
        /// search_tools / load_tools / call_tool instead of every tool; a server listed before then starts at the
        /// first call of one of its tools.
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
    pub(super) json: bool,
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
pub(crate) enum SdkCommand {
    /// Rewrite the project's SDK files (and the contract's WIT) to this clat's SDK and say what changed: a file
    /// still as it was written is updated, one edited since is kept and said, unless --force.
    #[command(after_help = "Example: clat plugin sdk update ./greeter")]
    Update {
        /// The project directory (default: the current directory).
        dir: Option<PathBuf>,
        /// Also replace the SDK files edited since they were written (or in a project with no record).
        #[arg(long)]
        force: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum PluginCommand {
    /// Write a new plugin project NAME (manifest, build files, one tool, its test cases, a README).
    #[command(after_help = "Example: clat plugin new greeter --lang js   (then run the printed next step)")]
    New {
        /// The plugin's name (a-z, 0-9, '-', '_'); also the new directory's.
        name: String,
        /// The language of the project.
        #[arg(long, value_enum, default_value = "rust")]
        lang: crate::platform::Language,
        /// What the plugin is: a WebAssembly component, or an MCP server over stdio.
        #[arg(long, value_enum, default_value = "wasm")]
        kind: crate::PackageKind,
        /// Where to create it (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// The guest SDK a component project carries (`clat-sdk.json` records its version).
    Sdk {
        #[command(subcommand)]
        command: SdkCommand,
    },
    /// Build a plugin project with its language's toolchain and assemble its package in DIR/dist.
    #[command(after_help = "Example: clat plugin build ./greeter")]
    Build {
        /// The project directory (default: the current directory).
        dir: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool of a package (or a project, built first) without installing it, on the --project
    /// directory (default: the current one) trusted for this call only.
    #[command(after_help = "Example: clat plugin call ./greeter hello '{\"name\":\"you\"}'")]
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
    #[command(after_help = "Example: clat plugin test ./greeter --watch")]
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
    #[command(
        after_help = "Examples: clat plugin install --build ./greeter;  clat plugin install oci://ghcr.io/me/greeter:1.0"
    )]
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
    /// Publish a WASM plugin to an OCI registry, in the Wasm OCI artifact layout (credentials from the Docker
    /// config when it has the registry): a project is built first, as `install --build` does (an up-to-date build
    /// reused); a project's dist/ older than its sources is refused. The component is listed before it is pushed;
    /// its digest, tools and what it asks for are printed.
    #[command(after_help = "Example: clat plugin push ./greeter oci://ghcr.io/me/greeter:1.0")]
    Push {
        /// The project directory, or a package directory (clat-plugin.toml + component).
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
