//! `clat mcp`: the servers' status (the /mcp surface; exit 7 when a
//! configured server failed), and `add | remove | get | enable | disable`,
//! which edit `$CLAT_HOME/mcp.json` through `mcp::config_file` (locked,
//! atomic, the file's shape kept) or show one server.

use std::path::PathBuf;

use std::sync::Arc;

use clap::Subcommand;
use clat_mcp::auth::{Authorizer, Browser};
use serde_json::{Map, Value, json};

use super::approve::entry_line;
use super::exit::{Exit, Failure};
use super::shutdown::Shutdown;
use super::{project_dir, runs, status};
use crate::extension::{ExtensionState, ExtensionStatus, StartFilter};
use crate::home::ClatHome;
use crate::home::trust::canonical_project;
use crate::mcp::config_file::{McpConfigFile, masked_entry};
use crate::mcp::from_registry;
use crate::mcp::project_servers;
use crate::platform::{MountOptions, Platform};
use crate::registry::ToolInfo;

// Parsed once per process: `Add`'s size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
pub(crate) enum McpCommand {
    /// Add a server to mcp.json: `add NAME -- COMMAND [ARGS...]` (stdio), or `add NAME URL` /
    /// `add NAME --url URL` (Streamable HTTP). Options go before NAME or before `--`; a command
    /// given without `--` is taken when none of its words is one of these options.
    /// Values may name variables of clat's environment: `${VAR}`, `${VAR:-default}`.
    Add {
        /// The server's name.
        name: String,
        /// A Streamable HTTP server's URL.
        #[arg(long)]
        url: Option<String>,
        /// `stdio` (a command) or `http` (a URL); `sse`, the deprecated HTTP+SSE transport, is refused.
        #[arg(short = 't', long, value_name = "stdio|http")]
        transport: Option<String>,
        /// Where the entry is kept: `user` ($CLAT_HOME/mcp.json, the default) or `project` (the project's
        /// checked-in .mcp.json, which others who clone it are asked to approve).
        #[arg(short = 's', long, value_name = "user|project", default_value = "user")]
        scope: String,
        /// An HTTP header for the server, `'NAME: VALUE'` (repeatable).
        #[arg(short = 'H', long = "header", value_name = "'NAME: VALUE'")]
        headers: Vec<String>,
        /// An environment variable for a stdio server, `NAME=VALUE` (repeatable).
        #[arg(short = 'e', long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// A stdio server's working directory (relative: under CLAT's home).
        #[arg(long)]
        cwd: Option<String>,
        /// Replace a server of the same name.
        #[arg(long)]
        force: bool,
        /// Take the server from an MCP registry: `SERVER[@VERSION]` (a registry name such as
        /// io.github.owner/server; no version: the latest). Its version is pinned, the values it
        /// needs are written as `${VAR}`, and nothing is started.
        #[arg(long, value_name = "SERVER[@VERSION]")]
        from_registry: Option<String>,
        /// The registry's base URL (a subregistry's too); default: $CLAT_MCP_REGISTRY, else the official one.
        #[arg(long, value_name = "URL", requires = "from_registry")]
        registry: Option<String>,
        /// Which of the server's ways to run: an `npm`, `pypi` or `oci` package, or a `remote`
        /// (default: the first one CLAT can run, packages before remotes, as the registry lists them).
        #[arg(long, value_name = "npm|pypi|oci|remote", requires = "from_registry")]
        via: Option<String>,
        /// The command and its arguments (best after `--`), or the server's URL.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND|URL")]
        command: Vec<String>,
    },
    /// Add a server from its JSON entry, as server READMEs and other agents write it:
    /// `add-json NAME '{"command": "npx", "args": ["-y", "pkg"]}'`.
    AddJson {
        /// The server's name.
        name: String,
        /// The entry: an object with `command` (+ `args`, `env`, …) or `url` (+ `headers`).
        #[arg(value_name = "JSON")]
        entry: String,
        /// Replace a server of the same name.
        #[arg(long)]
        force: bool,
    },
    /// List the configured servers from mcp.json without starting any (any directory).
    List,
    /// Approve the servers of the project's .mcp.json as the file is now (a changed file is asked again),
    /// showing everything that decides what they run and send.
    Approve {
        /// A variable of yours the project's entries may read (`${VAR}` in them); repeat for more. None is
        /// allowed otherwise, and each approval says again which are.
        #[arg(long = "allow", value_name = "VAR")]
        allow: Vec<String>,
    },
    /// Remove a server from mcp.json.
    Remove {
        /// The server's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::server_names))]
        name: String,
    },
    /// Show one server: its entry (every env and header value masked), state, and tools with their effects.
    Get {
        /// The server's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::server_names))]
        name: String,
        /// Show env and header values (and the OAuth client secret) as written in mcp.json.
        #[arg(long)]
        show_secrets: bool,
    },
    /// Start a disabled server again at the next mount.
    Enable {
        /// The server's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::server_names))]
        name: String,
    },
    /// Keep a server in mcp.json without starting it.
    Disable {
        /// The server's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::server_names))]
        name: String,
    },
    /// Log in to an HTTP server that asks for OAuth: the login page opens in
    /// $BROWSER or the system's browser (its URL is printed too), the answer
    /// comes back to 127.0.0.1, and the token is kept in the OS keyring when
    /// there is one (the Secret Service, the Keychain), else in
    /// $CLAT_HOME/credentials/ (one 0600 file per server);
    /// CLAT_CREDENTIAL_STORE=file|keyring chooses. It is sent only to that server.
    Login {
        /// The server's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::server_names))]
        name: String,
    },
    /// Forget an HTTP server's OAuth token.
    Logout {
        /// The server's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::server_names))]
        name: String,
    },
    /// Accept the changed definitions of a server's quarantined tools in this
    /// project (one tool's, when named): each is pinned as it is listed now, and
    /// the project's kept approvals of the whole server are forgotten (a changed
    /// tool inherits no approval).
    Accept {
        /// The server's name.
        #[arg(add = clap_complete::ArgValueCandidates::new(super::completion::server_names))]
        name: String,
        /// One of its tools (its own name or its registered one); every quarantined tool when omitted.
        tool: Option<String>,
    },
}

/// Shows the login page: prints its URL, and opens it with `$BROWSER` (a
/// command and its arguments) or the system's opener when there is one.
struct SystemBrowser;

#[async_trait::async_trait]
impl Browser for SystemBrowser {
    async fn open(&self, url: &reqwest::Url) -> Result<(), clat_mcp::auth::BrowserError> {
        eprintln!("Log in on this page (it opens in your browser if there is one):\n  {url}");
        let opener: Option<Vec<String>> = match std::env::var("BROWSER").ok().filter(|b| !b.trim().is_empty()) {
            Some(browser) => Some(browser.split_whitespace().map(str::to_string).collect()),
            None => ["xdg-open", "open"]
                .iter()
                .find(|tool| {
                    std::env::var_os("PATH")
                        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
                })
                .map(|tool| vec![tool.to_string()]),
        };
        let Some((program, args)) = opener.as_ref().and_then(|o| o.split_first()) else { return Ok(()) };
        // The browser is the user's, not the command's: it runs in a process
        // group of its own, which neither a signal to clat's group nor the
        // sweep of clat's descendants at exit reaches.
        let spawned = tokio::process::Command::new(program)
            .args(args)
            .arg(url.as_str())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn();
        match spawned {
            // The opener is waited for (reaped) in the background; the login waits for the redirect.
            Ok(mut child) => {
                if let Some(pid) = child.id() {
                    super::shutdown::spare_process_group(pid as i32);
                }
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
            }
            Err(e) => eprintln!("(could not start {program}: {e}; open the page yourself)"),
        }
        Ok(())
    }
}

/// The OAuth of the configured HTTP server `name`, with `browser`.
fn server_oauth(home: &ClatHome, name: &str, browser: Option<Arc<dyn Browser>>) -> Result<Authorizer, Failure> {
    let config = |m: String| Failure::new(Exit::Usage, "configuration", m);
    let entry =
        crate::mcp::sources::user_entry(home, name, &|k| std::env::var(k).ok()).map_err(|e| config(e.to_string()))?;
    match crate::mcp::credentials::authorizer(home, name, &entry, browser) {
        Some(Ok(auth)) => Ok(auth),
        Some(Err(e)) => Err(config(e.to_string())),
        None if matches!(entry.transport, clat_mcp::config::EntryTransport::Stdio { .. }) => {
            Err(config(format!("{name} is a stdio server; OAuth is for HTTP servers")))
        }
        None => Err(config(format!("{name} sends its own Authorization header (mcp.json); OAuth is off for it"))),
    }
}

/// `--env NAME=VALUE` and `--header 'NAME: VALUE'` into an object.
fn pairs(items: &[String], separator: char, flag: &str) -> Result<Map<String, Value>, Failure> {
    items
        .iter()
        .map(|item| match item.split_once(separator) {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_string(), Value::String(value.trim_start().to_string())))
            }
            _ => Err(Failure::new(Exit::Usage, "usage", format!("{flag} {item:?} must be NAME{separator}VALUE"))),
        })
        .collect()
}

/// The options of `clat mcp add`, which a command given without `--` must not
/// hold (whether they were meant for `clat` or for the server is unclear).
const ADD_OPTIONS: [&str; 16] = [
    "-t",
    "--transport",
    "-s",
    "--scope",
    "-H",
    "--header",
    "-e",
    "--env",
    "--cwd",
    "--force",
    "--url",
    "--from-registry",
    "--registry",
    "--via",
    "-h",
    "--help",
];

/// A command given without `--` is taken only when none of its words is one
/// of `clat mcp add`'s options.
fn check_command_words(command: &[String]) -> Result<(), Failure> {
    let separated = std::env::args().skip_while(|a| a != "add").any(|a| a == "--");
    let option = command
        .iter()
        .skip(1)
        .find(|w| ADD_OPTIONS.contains(&w.as_str()) || ADD_OPTIONS.iter().any(|o| w.starts_with(&format!("{o}="))));
    match option {
        Some(word) if !separated => Err(Failure::new(
            Exit::Usage,
            "usage",
            format!(
                "{word:?} could be an option of `clat mcp add` or of the server's command; put clat's options before \
                 the name and the command after `--`: `clat mcp add [OPTIONS] NAME -- {}`",
                command.join(" ")
            ),
        )),
        _ => Ok(()),
    }
}

/// The URL or the command `clat mcp add` was given: `--url URL`, a lone
/// positional `http(s)://` URL, or a command; `--transport` must agree.
fn target(
    url: Option<String>,
    transport: Option<&str>,
    command: Vec<String>,
) -> Result<(Option<String>, Vec<String>), Failure> {
    let usage = |m: String| Failure::new(Exit::Usage, "usage", m);
    let is_url = |w: &str| w.starts_with("http://") || w.starts_with("https://");
    let (url, command) = match (url, command.as_slice()) {
        (None, [one]) if is_url(one) => (Some(one.clone()), Vec::new()),
        (url, _) => (url, command),
    };
    match transport {
        None => {}
        Some("stdio") if url.is_some() => return Err(usage("--transport stdio takes a command, not a URL".into())),
        Some("http" | "streamable-http") if url.is_none() => {
            return Err(usage("--transport http takes the server's URL: `clat mcp add -t http NAME URL`".into()));
        }
        Some("stdio" | "http" | "streamable-http") => {}
        Some("sse") => {
            return Err(usage(
                "--transport sse: the deprecated HTTP+SSE transport is not supported; give the server's Streamable \
                 HTTP endpoint (often its URL ending in /mcp) with --transport http"
                    .into(),
            ));
        }
        Some(other) => return Err(usage(format!("--transport {other:?}: give stdio or http"))),
    }
    Ok((url, command))
}

/// The entry `clat mcp add-json` was given, checked as `mcp.json` would read it.
fn entry_from_json(name: &str, text: &str) -> Result<Value, Failure> {
    let usage = |m: String| Failure::new(Exit::Usage, "usage", m);
    let entry: Value = serde_json::from_str(text).map_err(|e| usage(format!("the entry is not valid JSON: {e}")))?;
    if !entry.is_object() {
        return Err(usage(
            "the entry must be a JSON object, e.g. '{\"command\": \"npx\", \"args\": [\"-y\", \"pkg\"]}'".into(),
        ));
    }
    let document = json!({ name: entry }).to_string();
    let checked = clat_mcp::config::parse_config("the entry", &document, &crate::mcp::ENTRY_TIMEOUT_BOUNDS)
        .map_err(|e| usage(e.to_string()))?;
    if let Some(error) = checked.errors.first() {
        return Err(usage(error.to_string()));
    }
    Ok(entry)
}

/// At a terminal, ask for the VS Code inputs (`${input:ID}`) that the
/// servers this command may start use, once per process (a password without
/// echo; a `pickString` by number); the values are kept in memory only
/// (`mcp/inputs.rs`). Headless nothing is asked, and such a server fails with
/// what to write instead. An empty answer takes the input's default, if any.
pub(crate) fn ask_for_inputs(home: &ClatHome, start: &StartFilter) {
    use std::io::{BufRead, IsTerminal, Write};
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return;
    }
    // Both MCP kinds own tools by the same prefix, so either kind asks the filter the same question.
    let wanted = |server: &String| start.wants(crate::extension::ExtensionKind::McpStdio, server);
    let path = home.path().join(crate::mcp::MCP_CONFIG_FILE);
    for input in crate::mcp::inputs::referenced(&path) {
        if crate::mcp::inputs::is_given(&input.id) || !input.servers.iter().any(wanted) {
            continue;
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{} (input {:?}, for {}):", input.description, input.id, input.servers.join(", "));
        for (i, option) in input.options.iter().enumerate() {
            let _ = writeln!(err, "  {}. {option}", i + 1);
        }
        let default = input.default.as_deref().map(|d| format!(" [{d}]")).unwrap_or_default();
        // Echo goes off before the prompt shows, so nothing typed after it is ever echoed.
        let echo_off = input.password.then(EchoOff::start);
        let _ = write!(err, "> {}", if input.password { "(hidden) " } else { "" });
        let _ = write!(err, "{default}");
        let _ = err.flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        drop(echo_off);
        if input.password {
            let _ = writeln!(err);
        }
        let answer = answer.trim_end_matches(['\n', '\r']).to_string();
        let value = match (answer.is_empty(), &input.default) {
            (true, Some(default)) => default.clone(),
            _ => match answer.parse::<usize>().ok().and_then(|n| input.options.get(n.wrapping_sub(1))) {
                Some(option) => option.clone(),
                None => answer,
            },
        };
        crate::mcp::inputs::provide(&input.id, value);
    }
}

/// The terminal's echo, off until dropped (a password is typed unseen).
struct EchoOff(Option<libc::termios>);

impl EchoOff {
    fn start() -> EchoOff {
        // SAFETY: tcgetattr/tcsetattr on stdin's descriptor with a termios we own.
        unsafe {
            let mut attributes: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut attributes) != 0 {
                return EchoOff(None);
            }
            let saved = attributes;
            attributes.c_lflag &= !libc::ECHO;
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &attributes) != 0 {
                return EchoOff(None);
            }
            EchoOff(Some(saved))
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = self.0 {
            // SAFETY: restores the attributes read in `start`.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &saved);
            }
        }
    }
}

/// `clat mcp list`: the configured servers as `mcp.json` holds them, nothing started.
fn list(home: &ClatHome, json: bool) -> Result<(), Failure> {
    let path = home.path().join(crate::mcp::MCP_CONFIG_FILE);
    let config = crate::mcp::sources::read_config(&path, &crate::mcp::ENTRY_TIMEOUT_BOUNDS)
        .map_err(|e| Failure::configuration(e.to_string()))?;
    if json {
        let servers: Vec<Value> = config
            .servers
            .iter()
            .map(|(name, entry)| {
                let (transport, target) = match &entry.transport {
                    clat_mcp::config::EntryTransport::Stdio { command, args, .. } => {
                        let words: Vec<&str> =
                            std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)).collect();
                        ("stdio", words.join(" "))
                    }
                    clat_mcp::config::EntryTransport::Http { url, .. } => ("http", url.clone()),
                };
                let target = crate::redact::redact(&target);
                json!({ "name": name, "transport": transport, "target": target, "enabled": entry.enabled })
            })
            .collect();
        let errors: Vec<String> = config.errors.iter().map(ToString::to_string).collect();
        outln!("{}", json!({ "file": path.display().to_string(), "servers": servers, "errors": errors }));
        return Ok(());
    }
    if config.servers.is_empty() && config.errors.is_empty() {
        outln!("no servers in {} (`clat mcp add NAME -- COMMAND` adds one)", path.display());
    }
    for (name, entry) in &config.servers {
        outln!("{}", entry_line(name, entry));
    }
    for error in &config.errors {
        outln!("{error}");
    }
    Ok(())
}

/// The `mcp.json` entry `clat mcp add` writes.
fn entry_from(
    url: Option<String>,
    headers: &[String],
    env: &[String],
    cwd: Option<String>,
    command: &[String],
) -> Result<Value, Failure> {
    let usage = |m: &str| Failure::new(Exit::Usage, "usage", m.to_string());
    let mut entry = Map::new();
    match (url, command.split_first()) {
        (Some(_), Some(_)) => return Err(usage("give either `-- COMMAND [ARGS...]` or `--url URL`, not both")),
        (None, None) => return Err(usage("give the server's `-- COMMAND [ARGS...]` or its `--url URL`")),
        (Some(url), None) => {
            if !env.is_empty() || cwd.is_some() {
                return Err(usage("--env and --cwd apply to stdio servers (`-- COMMAND`), not to --url"));
            }
            entry.insert("url".into(), Value::String(url));
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Object(pairs(headers, ':', "--header")?));
            }
        }
        (None, Some((program, args))) => {
            if !headers.is_empty() {
                return Err(usage("--header applies to HTTP servers (a URL), not to a command"));
            }
            entry.insert("command".into(), Value::String(program.clone()));
            if !args.is_empty() {
                entry.insert("args".into(), json!(args));
            }
            if !env.is_empty() {
                entry.insert("env".into(), Value::Object(pairs(env, '=', "--env")?));
            }
            if let Some(cwd) = cwd {
                entry.insert("cwd".into(), Value::String(cwd));
            }
        }
    }
    Ok(Value::Object(entry))
}

/// `clat mcp add --scope project`: the entry goes into the project's
/// `.mcp.json` (created in Claude Code's shape). You wrote it, so the file is
/// approved for you as it now is — but only when it was approved before (or
/// did not exist): a file holding servers you never approved stays
/// unapproved, and `clat mcp approve` is named. Returns the file and whether
/// it is approved.
fn add_to_project(
    home: &ClatHome,
    project: Option<PathBuf>,
    name: &str,
    entry: Value,
    force: bool,
) -> Result<(PathBuf, bool), Failure> {
    let root = canonical_project(&project_dir(project)?)?;
    let before = project_servers::read(&root).map_err(|e| Failure::configuration(e.to_string()))?;
    let was_approved = match &before {
        None => true,
        Some(file) => project_servers::approval(home, &root, file)? == project_servers::Approval::Approved,
    };
    McpConfigFile::of_project(home, &root).add(name, entry, force)?;
    let path = root.join(project_servers::PROJECT_MCP_FILE);
    let after = project_servers::read(&root).map_err(|e| Failure::configuration(e.to_string()))?;
    let approved = match (&after, was_approved) {
        (Some(file), true) => {
            project_servers::approve(home, &root, file, None)?;
            true
        }
        _ => false,
    };
    Ok((path, approved))
}

/// What `clat mcp add --scope project` says it did.
fn print_added_to_project(name: &str, path: &std::path::Path, approved: bool, json: bool) {
    if json {
        outln!("{}", json!({ "added": name, "file": path.display().to_string(), "approved": approved }));
    } else {
        outln!("added {name} to {}", path.display());
        if approved {
            outln!(
                "approved {} for you as it is now; whoever clones the project is asked to approve it",
                path.display()
            );
        } else {
            outln!("{} holds servers you have not approved: review it, then run `clat mcp approve`", path.display());
        }
    }
}

/// What `clat mcp add --from-registry` was asked.
struct RegistryRequest {
    reference: String,
    registry: Option<String>,
    via: Option<String>,
    scope: String,
    force: bool,
}

impl From<from_registry::RegistryError> for Failure {
    fn from(e: from_registry::RegistryError) -> Self {
        let kind = if matches!(e, from_registry::RegistryError::Usage(_)) { "usage" } else { "registry" };
        Failure::new(Exit::Usage, kind, crate::redact::redact(&e.to_string()))
    }
}

/// `clat mcp add NAME --from-registry SERVER[@VERSION]`: read the version
/// from the registry, show what the entry runs, the effect it gets and the
/// values it needs, then write it (user or project scope). Nothing starts.
async fn add_from_registry(
    home: &ClatHome,
    project: Option<PathBuf>,
    name: &str,
    request: RegistryRequest,
    json: bool,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let (server, version) = from_registry::parse_reference(&request.reference)?;
    let via = match request.via.as_deref() {
        None => None,
        Some(text) => Some(from_registry::Via::parse(text).ok_or_else(|| {
            Failure::new(Exit::Usage, "usage", format!("--via {text:?}: give npm, pypi, oci or remote"))
        })?),
    };
    let base = from_registry::registry_base(request.registry.as_deref())?;
    let document = tokio::select! {
        document = from_registry::fetch(&base, &server, &version) => document?,
        _ = shutdown.token().cancelled() => return Err(runs::interrupted(shutdown)),
    };
    let found = from_registry::entry_from_document(base.as_str(), name, Some((&server, &version)), &document, via)?;
    // The entry as mcp.json will read it: a document that yields an entry CLAT would refuse adds nothing.
    entry_from_json(name, &found.entry.to_string()).map_err(|f| {
        Failure::new(
            Exit::Usage,
            "registry",
            format!("{} yields an entry CLAT cannot use: {}", found.source.server, f.message),
        )
    })?;
    let entry = found.entry.clone();
    let (file, approved) = if request.scope == "project" {
        let (path, approved) = add_to_project(home, project, name, entry, request.force)?;
        (path, Some(approved))
    } else {
        McpConfigFile::new(home).add(name, entry, request.force)?;
        (home.path().join(crate::mcp::MCP_CONFIG_FILE), None)
    };
    if json {
        let needs: Vec<Value> = found
            .needs
            .iter()
            .map(|n| {
                json!({ "variable": n.variable, "fills": n.fills, "required": n.required, "secret": n.secret,
                        "default": n.default, "choices": n.choices, "description": n.description })
            })
            .collect();
        outln!(
            "{}",
            json!({ "added": name, "file": file.display().to_string(), "approved": approved,
                    "server": found.source.server, "version": found.source.version,
                    "registry": found.source.registry, "via": found.via.as_str(), "entry": found.entry,
                    "runs": found.runs, "effect": found.effect, "needs": needs, "alternatives": found.alternatives,
                    "passed_over": found.passed_over })
        );
        return Ok(Exit::Ok);
    }
    let source = &found.source;
    outln!("{} {} ({}) from {}", source.server, source.version, found.via.as_str(), source.registry);
    if !found.description.is_empty() {
        outln!("  {}", found.description);
    }
    outln!("  runs: {}", found.runs);
    outln!("  effect: {}", found.effect);
    for need in &found.needs {
        let mut about = vec![if need.required { "required" } else { "optional" }];
        if need.secret {
            about.push("secret");
        }
        let default = need.default.as_ref().map(|d| format!(", default {d:?}")).unwrap_or_default();
        let choices =
            if need.choices.is_empty() { String::new() } else { format!(", one of {}", need.choices.join("|")) };
        let description = if need.description.is_empty() { String::new() } else { format!(": {}", need.description) };
        outln!(
            "  needs ${{{}}} ({}{default}{choices}) for {}{description}",
            need.variable,
            about.join(", "),
            need.fills
        );
    }
    if !found.needs.is_empty() {
        outln!("  the entry holds only these references: set them in CLAT's environment before the server starts");
    }
    for other in &found.alternatives {
        outln!("  also offered: {other}");
    }
    for other in &found.passed_over {
        outln!("  not usable: {other}");
    }
    match approved {
        Some(approved) => print_added_to_project(name, &file, approved, false),
        None => outln!("added {name} to {} (nothing was started)", file.display()),
    }
    Ok(Exit::Ok)
}

fn done(json: bool, what: &str, name: &str, file: &std::path::Path) {
    if json {
        outln!("{}", json!({ what: name, "file": file.display().to_string() }));
    } else {
        outln!("{what} {name} in {}", file.display());
    }
}

/// `clat mcp [COMMAND]`.
pub(crate) async fn mcp(
    home: &ClatHome,
    project: Option<PathBuf>,
    command: Option<McpCommand>,
    json: bool,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let file = McpConfigFile::new(home);
    let path = home.path().join(crate::mcp::MCP_CONFIG_FILE);
    match command {
        None => status_of(home, project, StartFilter::All, json, shutdown, |servers, _| {
            status::print_mcp(servers, json);
        })
        .await
        .map(|failed| if failed { Exit::ServerFailed } else { Exit::Ok }),
        Some(McpCommand::Add {
            name,
            url,
            transport,
            scope,
            headers,
            env,
            cwd,
            force,
            from_registry,
            registry,
            via,
            command,
        }) => {
            if scope != "user" && scope != "project" {
                return Err(Failure::new(
                    Exit::Usage,
                    "usage",
                    format!("--scope {scope:?}: `user` ($CLAT_HOME/mcp.json) or `project` (the project's .mcp.json)"),
                ));
            }
            if let Some(reference) = from_registry {
                let own =
                    [(url.is_some(), "--url"), (transport.is_some(), "--transport"), (!headers.is_empty(), "--header")]
                        .into_iter()
                        .chain([
                            (!env.is_empty(), "--env"),
                            (cwd.is_some(), "--cwd"),
                            (!command.is_empty(), "a command or URL"),
                        ]);
                if let Some((_, given)) = own.into_iter().find(|(given, _)| *given) {
                    let message = format!(
                        "--from-registry takes the server's entry from the registry; {given} cannot be given with it"
                    );
                    return Err(Failure::new(Exit::Usage, "usage", message));
                }
                let request = RegistryRequest { reference, registry, via, scope, force };
                return add_from_registry(home, project, &name, request, json, shutdown).await;
            }
            check_command_words(&command)?;
            let (url, command) = target(url, transport.as_deref(), command)?;
            let entry = entry_from(url, &headers, &env, cwd, &command)?;
            if scope == "project" {
                let (path, approved) = add_to_project(home, project, &name, entry, force)?;
                print_added_to_project(&name, &path, approved, json);
                return Ok(Exit::Ok);
            }
            file.add(&name, entry, force)?;
            done(json, "added", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::AddJson { name, entry, force }) => {
            let entry = entry_from_json(&name, &entry)?;
            file.add(&name, entry, force)?;
            done(json, "added", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::List) => {
            list(home, json)?;
            Ok(Exit::Ok)
        }
        Some(McpCommand::Approve { allow }) => {
            let root = canonical_project(&project_dir(project)?)?;
            super::approve::approve(home, &root, allow, json)
        }
        Some(McpCommand::Remove { name }) => {
            file.remove(&name)?;
            done(json, "removed", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::Enable { name }) => {
            file.set_enabled(&name, true)?;
            done(json, "enabled", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::Disable { name }) => {
            file.set_enabled(&name, false)?;
            done(json, "disabled", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::Login { name }) => {
            let auth = server_oauth(home, &name, Some(Arc::new(SystemBrowser)))?;
            let login = tokio::select! {
                status = auth.login() => status.map(crate::mcp::sources::login).map_err(|e| {
                    Failure::new(Exit::ServerFailed, "oauth", crate::redact::redact(&format!("logging in to {name} failed: {e}")))
                })?,
                _ = shutdown.token().cancelled() => return Err(runs::interrupted(shutdown)),
            };
            if json {
                outln!("{}", json!({ "logged_in": name, "oauth": login }));
            } else {
                outln!("logged in to {name} {}", status::describe_login(&login));
            }
            Ok(Exit::Ok)
        }
        Some(McpCommand::Logout { name }) => {
            let auth = server_oauth(home, &name, None)?;
            let had = auth.logout().map_err(|e| Failure::new(Exit::ServerFailed, "oauth", e.to_string()))?;
            match (json, had) {
                (true, _) => outln!("{}", json!({ "logged_out": name, "had_token": had })),
                (false, true) => outln!("logged out of {name}"),
                (false, false) => outln!("{name} had no login"),
            }
            Ok(Exit::Ok)
        }
        Some(McpCommand::Accept { name, tool }) => {
            let root = canonical_project(&project_dir(project)?)?;
            let accepted = crate::policy::pins::accept(home, &root, &name, tool.as_deref())
                .map_err(|e| Failure::configuration(e.to_string()))?;
            if accepted.is_empty() {
                let which = match &tool {
                    Some(t) => format!("no quarantined tool {t:?}"),
                    None => "no quarantined tool".to_string(),
                };
                let message =
                    format!("{name} has {which} in {} (`clat mcp get {name}` lists its tools)", root.display());
                return Err(Failure::new(Exit::Usage, "usage", message));
            }
            let revoked = crate::policy::approvals::revoke_extension_wide(home, &root, &format!("mcp:{name}"))?;
            if json {
                outln!("{}", json!({ "accepted": accepted, "approvals_revoked": revoked }));
            } else {
                for tool in &accepted {
                    outln!("accepted {name} {}: {}", tool.tool, tool.changes.join("; "));
                }
                if revoked > 0 {
                    outln!("forgot {revoked} kept approval(s) of every tool of {name} in this project: approve again");
                }
            }
            Ok(Exit::Ok)
        }
        Some(McpCommand::Get { name, show_secrets }) => {
            let entry = file.entry(&name)?;
            let mut found = false;
            let failed =
                status_of(home, project, StartFilter::Named(vec![name.clone()]), json, shutdown, |servers, tools| {
                    let server = servers.iter().find(|s| s.name == name);
                    found = server.is_some() || entry.is_some();
                    if found {
                        status::print_server(
                            &name,
                            entry.as_ref().map(|e| masked_entry(e, show_secrets)).as_ref(),
                            server,
                            tools,
                            json,
                        );
                    }
                })
                .await?;
            if !found {
                let message = format!("no server named {name:?} is configured (see `clat mcp`)");
                return Err(Failure::new(Exit::Usage, "configuration", message));
            }
            Ok(if failed { Exit::ServerFailed } else { Exit::Ok })
        }
    }
}

/// Mount the project, start the servers `start` names, show their statuses
/// and the registry's tools through `show`, close; true when one failed.
async fn status_of(
    home: &ClatHome,
    project: Option<PathBuf>,
    start: StartFilter,
    json: bool,
    shutdown: &Shutdown,
    show: impl FnOnce(&[ExtensionStatus], &[ToolInfo]),
) -> Result<bool, Failure> {
    let platform = Platform::open(Some(home.path()))?;
    // The user watches this start: slow servers get longer, with progress.
    let options = MountOptions {
        start,
        default_startup_timeout: Some(crate::limits::WATCHED_START_TIMEOUT),
        ..MountOptions::default()
    };
    let dir = project_dir(project)?;
    super::approve::review_project_servers(home, &dir);
    ask_for_inputs(home, &options.start);
    let project = platform.mount(&dir, options)?;
    let servers = tokio::select! {
        servers = super::progress::while_starting(&project, json, project.load_mcp_servers()) => Some(servers),
        _ = shutdown.token().cancelled() => None,
    };
    project.freeze();
    let failed = servers.as_ref().is_some_and(|s| s.iter().any(|s| s.state == ExtensionState::Failed));
    if let Some(servers) = &servers {
        show(servers, &project.tools());
    }
    project.close().await;
    match servers {
        Some(_) => Ok(failed),
        None => Err(runs::interrupted(shutdown)),
    }
}
