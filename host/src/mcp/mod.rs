//! The MCP adapter, the sibling of `wasm/`: it turns MCP servers into
//! extensions of a project scope, onto the same contract, registry and host
//! services as WASM plugins. The MCP client itself is the `clat-mcp` crate,
//! which knows nothing of CLAT; this module is where the two meet.
//!
//! - `sources.rs`: where servers come from (`mcp.json`, a project's approved
//!   `.mcp.json` in `project_servers.rs`, `mcp-stdio` packages, the GLM pack
//!   in `glm.rs`) and where and how each one runs;
//! - `config_file.rs`: editing `mcp.json` (`clat mcp add | remove | enable | disable`);
//! - `from_registry.rs`: an entry from a server's `server.json` in an MCP registry (`--from-registry`);
//! - `inputs.rs`: VS Code's `inputs` (`${input:ID}`): which entries use them, the values given;
//! - `credentials.rs`: the OAuth tokens of remote servers (`$CLAT_HOME/credentials/`)
//!   and each HTTP server's `Authorizer` on them;
//! - `server.rs`: one server (connect, stderr tail, context notifications, close);
//! - `deferred.rs`: a server whose tools register from its kept listing and which starts at its first call;
//! - `tools.rs`: its tools in the registry and the `tools/call` handler;
//! - `prompts.rs`: its DSH system prompts;
//! - `supervisor.rs`: its restart after it stopped, with back-off and a cap;
//! - `host_services.rs`: what it asks of CLAT, served by `HostServices` (the
//!   twin of `wasm/host_services.rs`), and the wire form of `HostError`.
//!
//! `start_server` takes one server from `starting` to `ready` (or `failed`);
//! failures are isolated per server.

pub mod config_file;
pub mod credentials;
pub(crate) mod deferred;
pub mod eras;
pub mod from_registry;
pub mod glm;
pub mod host_services;
pub mod inputs;
pub mod project_servers;
pub mod prompts;
pub mod server;
pub mod sources;
mod supervisor;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use host_services::{
    HOST_SERVICES_CAPABILITY, HOST_SERVICES_VERSION, client_capabilities, host_error_codes, host_error_to_wire,
};
pub use prompts::DSH_PROMPT_MARKER;
pub use server::{ConnectFailure, McpServer};
pub use sources::{
    ConfiguredServer, ENTRY_TIMEOUT_BOUNDS, MCP_CONFIG_FILE, ServerOptions, ServerSet, configured_servers, http_spec,
    user_stdio_spec,
};

use crate::extension::{ExtensionState, ExtensionStatus};
use crate::limits::CLOSE_GRACE;
use crate::policy::pins::ToolPins;
use crate::registry::Registry;
use crate::services::HostServices;
use crate::sync::Unpoisoned;

/// Connect one server, list and register its tools, then its marked system
/// prompts. Returns its status and, when it is ready, the live server. A
/// server that could contribute nothing because the registry froze first is
/// closed at once (it would never be used in this scope). An entry's
/// `startup_timeout_sec` bounds connecting and listing. When `closing` is
/// cancelled (the scope closes) while it starts, a connection being made is
/// dropped (which kills its process group); a server already connected is
/// torn down in the spec's order — its leases revoked, then closed — however
/// far its registration got.
pub async fn start_server(
    configured: &ConfiguredServer,
    services: &Arc<HostServices>,
    registry: &Arc<Registry>,
    project_root: &Path,
    pins: &ToolPins,
    closing: &CancellationToken,
) -> (ExtensionStatus, Option<Arc<McpServer>>) {
    let registering = Registering::Listed { project_root };
    let (mut status, server) = connect_and_register(configured, services, registry, registering, pins, closing).await;
    // Whether it got there or not, the login it holds now (a refresh or login may have happened).
    status.oauth = sources::target_login(&configured.target);
    (status, server)
}

/// How a starting server's tools reach the registry.
#[derive(Clone, Copy)]
pub(crate) enum Registering<'a> {
    /// As it lists them now, with its marked system prompts (those of `project_root`): a start at mount.
    Listed { project_root: &'a Path },
    /// Already there, from its kept listing (`deferred.rs`): these of its own names. Its listing is checked against
    /// their pins (a changed one is quarantined), nothing registers once the registry froze, and it keeps running
    /// whatever it registers.
    Kept { tools: &'a [String], registered: &'a [String] },
}

/// What stopped a server's start-up once it was connected.
enum Stopped {
    /// Its `startup_timeout_sec` passed.
    TooSlow,
    /// The scope began closing.
    Closing,
}

pub(crate) async fn connect_and_register(
    configured: &ConfiguredServer,
    services: &Arc<HostServices>,
    registry: &Arc<Registry>,
    registering: Registering<'_>,
    pins: &ToolPins,
    closing: &CancellationToken,
) -> (ExtensionStatus, Option<Arc<McpServer>>) {
    let ConfiguredServer { name, target, options, .. } = configured;
    let mut status = ExtensionStatus::new(name, sources::target_kind(target), ExtensionState::Ready, None);
    let deadline = options.startup_timeout.map(|t| tokio::time::Instant::now() + t);
    let too_slow = || {
        let seconds = options.startup_timeout.unwrap_or_default().as_secs_f64();
        let why = format!("it did not finish starting within {seconds} s (its startup timeout)");
        match server::slow_start_hint(target) {
            Some(hint) => format!("{why}; {hint}"),
            None => why,
        }
    };
    let closed = |mut status: ExtensionStatus| {
        status.state = ExtensionState::Closed;
        status.problems.push("the scope closed while it was starting".into());
        (status, None)
    };
    // Dropping a connection being made kills its process group.
    let server = match until(deadline, closing, McpServer::connect(configured, services)).await {
        Ok(Ok(server)) => server,
        Ok(Err(failure)) => {
            status.fail(failure.reason);
            status.output_tail = failure.stderr_tail;
            return (status, None);
        }
        Err(Stopped::TooSlow) => {
            status.fail(too_slow());
            return (status, None);
        }
        Err(Stopped::Closing) => return closed(status),
    };
    status.protocol = Some(server.protocol());
    let _ = server.pins.set(pins.clone());
    let relisting = match registering {
        Registering::Listed { .. } => false,
        Registering::Kept { tools, .. } => {
            server.registered.locked().extend(tools.iter().cloned());
            true
        }
    };
    let registered = match until(deadline, closing, server.register(registry, relisting)).await {
        Ok(registered) => registered,
        Err(Stopped::TooSlow) => Err(too_slow()),
        Err(Stopped::Closing) => {
            teardown(&server, registry).await;
            return closed(status);
        }
    };
    match registered {
        Ok((tools, problems)) => {
            status.tools = tools;
            status.problems = problems;
            status.problems.extend(server.link.declined().map(str::to_string));
            let project_root = match registering {
                Registering::Listed { project_root } => project_root,
                Registering::Kept { registered, .. } => {
                    // Those quarantined now are no longer its tools (nor in the listing kept of it).
                    let held = |name: &String| registry.quarantined(name).is_some();
                    status.tools.splice(0..0, registered.iter().filter(|name| !held(name)).cloned());
                    status.output_tail = server.stderr_tail();
                    server.spawn_relisting(registry);
                    status.problems = status.problems.iter().map(|p| server.redact(p)).collect();
                    return (status, Some(server));
                }
            };
            // A prompt failure is reported and never costs the server its tools.
            let prompts = tokio::select! {
                prompts = server.register_system_prompts(registry, project_root) => prompts,
                _ = closing.cancelled() => {
                    teardown(&server, registry).await;
                    return closed(status);
                }
            };
            let (prompts, prompt_problems) = prompts;
            status.system_prompts = prompts;
            status.problems.extend(prompt_problems);
            status.output_tail = server.stderr_tail();
            if status.tools.is_empty() && status.system_prompts.is_empty() && registry.is_frozen() {
                // Too late for this scope: it could never contribute, so it does not keep running.
                if status.problems.is_empty() {
                    status.problems.push("it finished starting after the registry froze".into());
                }
                status.problems = status.problems.iter().map(|p| server.redact(p)).collect();
                status.state = ExtensionState::Failed;
                server.close().await;
                return (status, None);
            }
            server.spawn_relisting(registry);
            status.problems = status.problems.iter().map(|p| server.redact(p)).collect();
            (status, Some(server))
        }
        Err(reason) => {
            status.fail(server.redact(&format!("tools/list failed: {reason}")));
            status.output_tail = server.stderr_tail();
            server.close().await;
            (status, None)
        }
    }
}

/// The spec's teardown of a server that is not (yet) in the scope's list: its
/// leases revoked (what it registered leaves; calls in flight are cancelled
/// and waited for, bounded), then closed (stdin, grace, kill and reap).
async fn teardown(server: &McpServer, registry: &Registry) {
    let reason = format!("MCP server {} was closed with its project scope", server.name());
    registry.withdraw(crate::names::ExternalKind::Mcp, server.name(), &reason, CLOSE_GRACE).await;
    server.close().await;
}

/// `work`, unless `deadline` passes or `closing` is cancelled first.
async fn until<T>(
    deadline: Option<tokio::time::Instant>,
    closing: &CancellationToken,
    work: impl std::future::Future<Output = T>,
) -> Result<T, Stopped> {
    tokio::select! {
        // A scope already closing starts nothing.
        biased;
        _ = closing.cancelled() => Err(Stopped::Closing),
        done = within(deadline, work) => done.ok_or(Stopped::TooSlow),
    }
}

/// `work`, or `None` if `deadline` comes first.
async fn within<T>(deadline: Option<tokio::time::Instant>, work: impl std::future::Future<Output = T>) -> Option<T> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, work).await.ok(),
        None => Some(work.await),
    }
}
