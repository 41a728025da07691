//! `clat mcp`: the servers' status (the /mcp surface; exit 7 when a
//! configured server failed), and `add | remove | get | enable | disable |
//! login | logout | accept | approve`, which the door's administration face
//! does (`Platform::servers`: `mcp.json` edited locked and atomically, its
//! shape kept) and this file prints; what `add` is given, and from where, is
//! `mcp/add.rs`'s.

use std::path::PathBuf;

use std::sync::Arc;

use clap::Subcommand;
use clat_mcp::auth::Browser;
use serde_json::{Value, json};

use super::exit::{Exit, Failure};
use super::shutdown::Shutdown;
use super::{project_dir, runs, status};
use crate::platform::{MountOptions, Platform, ServerScope};
use crate::{ExtensionState, ExtensionStatus, StartFilter, ToolInfo};

mod add;

use add::{add_from_registry, check_command_words, entry_from, entry_from_json, print_added, target};

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

/// `clat mcp list`: the configured servers as `mcp.json` holds them, nothing started.
fn list(platform: &Platform, project: Option<PathBuf>, json: bool) -> Result<(), Failure> {
    let servers = platform.servers();
    let list = servers.list()?;
    // The project's own servers too (the current directory's, or --project's), with whether they are approved.
    let project = match project_dir(project) {
        Ok(dir) => servers.list_project(&dir).ok().flatten(),
        Err(_) => None,
    };
    let entry = |s: &crate::platform::ListedServer| json!({ "name": s.name, "transport": s.transport, "target": s.target, "enabled": s.enabled });
    if json {
        let servers: Vec<Value> = list.servers.iter().map(entry).collect();
        let project = project.as_ref().map(|p| {
            let servers: Vec<Value> = p.servers.iter().map(entry).collect();
            json!({ "file": p.file.display().to_string(), "approval": p.approval, "servers": servers, "errors": p.errors })
        });
        outln!(
            "{}",
            json!({ "file": list.file.display().to_string(), "servers": servers, "errors": list.errors, "project": project })
        );
        return Ok(());
    }
    if list.servers.is_empty() && list.errors.is_empty() {
        outln!("no servers in {} (`clat mcp add NAME -- COMMAND` adds one)", list.file.display());
    }
    for server in &list.servers {
        outln!("{}", server.line);
    }
    for error in &list.errors {
        outln!("{error}");
    }
    if let Some(project) = project {
        let approval = match project.approval {
            "approved" => "approved".to_string(),
            "changed" => "changed since you approved it: review it, then run `clat mcp approve`".to_string(),
            _ => "not approved: review it, then run `clat mcp approve`".to_string(),
        };
        outln!("the project's servers, in {} ({approval}):", project.file.display());
        for server in project.servers.iter().map(|s| &s.line).chain(&project.errors) {
            outln!("  {server}");
        }
    }
    Ok(())
}

/// Where `clat mcp add --scope SCOPE` keeps the entry.
fn add_scope(scope: &str, project: Option<PathBuf>) -> Result<ServerScope, Failure> {
    match scope {
        "user" => Ok(ServerScope::User),
        "project" => Ok(ServerScope::Project(project_dir(project)?)),
        _ => Err(Failure::new(
            Exit::Usage,
            "usage",
            format!("--scope {scope:?}: `user` ($CLAT_HOME/mcp.json) or `project` (the project's .mcp.json)"),
        )),
    }
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
    platform: &Platform,
    project: Option<PathBuf>,
    command: Option<McpCommand>,
    json: bool,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let servers = platform.servers();
    let path = servers.config_file();
    match command {
        None => status_of(platform, project, StartFilter::All, json, shutdown, |servers, _| {
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
            let scope = add_scope(&scope, project)?;
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
                let request = crate::platform::RegistryRequest { reference, registry, via };
                return add_from_registry(platform, scope, &name, request, force, json, shutdown).await;
            }
            check_command_words(&command)?;
            let (url, command) = target(url, transport.as_deref(), command)?;
            let entry = entry_from(url, &headers, &env, cwd, &command)?;
            let added = servers.add(&scope, &name, entry, force)?;
            print_added(&name, &added, json);
            Ok(Exit::Ok)
        }
        Some(McpCommand::AddJson { name, entry, force }) => {
            let entry = entry_from_json(&servers, &name, &entry)?;
            let added = servers.add(&ServerScope::User, &name, entry, force)?;
            print_added(&name, &added, json);
            Ok(Exit::Ok)
        }
        Some(McpCommand::List) => {
            list(platform, project, json)?;
            Ok(Exit::Ok)
        }
        Some(McpCommand::Approve { allow }) => super::approve::approve(platform, &project_dir(project)?, allow, json),
        Some(McpCommand::Remove { name }) => {
            servers.remove(&name)?;
            done(json, "removed", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::Enable { name }) => {
            servers.set_enabled(&name, true)?;
            done(json, "enabled", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::Disable { name }) => {
            servers.set_enabled(&name, false)?;
            done(json, "disabled", &name, &path);
            Ok(Exit::Ok)
        }
        Some(McpCommand::Login { name }) => {
            let login = tokio::select! {
                login = servers.login(&name, Arc::new(SystemBrowser)) => login?,
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
            let had = servers.logout(&name)?;
            match (json, had) {
                (true, _) => outln!("{}", json!({ "logged_out": name, "had_token": had })),
                (false, true) => outln!("logged out of {name}"),
                (false, false) => outln!("{name} had no login"),
            }
            Ok(Exit::Ok)
        }
        Some(McpCommand::Accept { name, tool }) => {
            let accepted = servers.accept(&project_dir(project)?, &name, tool.as_deref())?;
            let (revoked, accepted) = (accepted.approvals_revoked, accepted.accepted);
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
            let entry = servers.entry(&name, show_secrets)?;
            let mut found = false;
            let failed = status_of(
                platform,
                project,
                StartFilter::Named(vec![name.clone()]),
                json,
                shutdown,
                |servers, tools| {
                    let server = servers.iter().find(|s| s.name == name);
                    found = server.is_some() || entry.is_some();
                    if found {
                        status::print_server(&name, entry.as_ref(), server, tools, json);
                    }
                },
            )
            .await?;
            if !found {
                let hint = servers.nearest(&name).map(|n| format!("; did you mean {n:?}?")).unwrap_or_default();
                let message = format!("no server named {name:?} is configured (see `clat mcp`){hint}");
                return Err(Failure::new(Exit::Usage, "configuration", message));
            }
            Ok(if failed { Exit::ServerFailed } else { Exit::Ok })
        }
    }
}

/// Mount the project, start the servers `start` names, show their statuses
/// and the registry's tools through `show`, close; true when one failed.
async fn status_of(
    platform: &Platform,
    project: Option<PathBuf>,
    start: StartFilter,
    json: bool,
    shutdown: &Shutdown,
    show: impl FnOnce(&[ExtensionStatus], &[ToolInfo]),
) -> Result<bool, Failure> {
    // The user watches this start: slow servers get longer, with progress.
    let options = MountOptions {
        start,
        default_startup_timeout: Some(crate::limits::WATCHED_START_TIMEOUT),
        questions: super::questions::at_terminal(),
        ..MountOptions::default()
    };
    let dir = project_dir(project)?;
    let project = platform.mount(&dir, options)?;
    let servers = tokio::select! {
        servers = super::progress::while_starting(&project, json, project.load_mcp_servers()) => Some(servers),
        _ = shutdown.token().cancelled() => None,
    };
    project.freeze();
    // Each server's stderr is read on its own task: show what it wrote by now, not only by the time it was ready.
    let mut servers = servers;
    if let Some(servers) = servers.as_mut() {
        let current = project.extensions();
        for status in servers.iter_mut() {
            if let Some(now) = current.iter().find(|c| c.name == status.name && c.kind == status.kind) {
                status.output_tail = now.output_tail.clone();
            }
        }
    }
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
