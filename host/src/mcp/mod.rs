//! The MCP adapter, the sibling of `wasm/`: it turns MCP servers into
//! extensions of a project scope, onto the same contract, registry and host
//! services as WASM plugins. The MCP client itself is the `clat-mcp` crate,
//! which knows nothing of CLAT; this module is where the two meet.
//!
//! - `sources.rs`: where servers come from (`mcp.json`, `mcp-stdio` packages,
//!   the GLM pack in `glm.rs`) and where each one runs;
//! - `server.rs`: one server (connect, stderr tail, context notifications, close);
//! - `tools.rs`: its tools in the registry and the `tools/call` handler;
//! - `prompts.rs`: its DSH system prompts;
//! - `supervisor.rs`: its restart after it stopped, with back-off and a cap;
//! - `host_services.rs`: what it asks of CLAT, served by `HostServices` (the
//!   twin of `wasm/host_services.rs`), and the wire form of `HostError`.
//!
//! `start_server` takes one server from `starting` to `ready` (or `failed`);
//! failures are isolated per server.

pub mod glm;
pub mod host_services;
pub mod prompts;
pub mod server;
pub mod sources;
mod supervisor;
pub mod tools;

use std::path::Path;
use std::sync::Arc;

pub use host_services::{
    HOST_SERVICES_CAPABILITY, HOST_SERVICES_VERSION, client_capabilities, host_error_codes, host_error_to_wire,
};
pub use prompts::DSH_PROMPT_MARKER;
pub use server::{ConnectFailure, McpServer, ServerTarget};
pub use sources::{MCP_CONFIG_FILE, ServerSet, configured_servers, http_spec, user_stdio_spec};

use crate::extension::{ExtensionState, ExtensionStatus};
use crate::registry::Registry;
use crate::services::HostServices;

/// Connect one server, list and register its tools, then its marked system
/// prompts. Returns its status and, when it is ready, the live server. A
/// server that could contribute nothing because the registry froze first is
/// closed at once (it would never be used in this scope).
pub async fn start_server(
    name: &str,
    target: &ServerTarget,
    services: &Arc<HostServices>,
    registry: &Arc<Registry>,
    project_root: &Path,
) -> (ExtensionStatus, Option<Arc<McpServer>>) {
    let mut status = ExtensionStatus::new(name, target.kind(), ExtensionState::Ready, None);
    let server = match McpServer::connect(name, target, services).await {
        Ok(server) => server,
        Err(failure) => {
            status.fail(failure.reason);
            status.output_tail = failure.stderr_tail;
            return (status, None);
        }
    };
    status.protocol = Some(server.protocol());
    match server.register(registry).await {
        Ok((tools, problems)) => {
            status.tools = tools;
            status.problems = problems;
            // A prompt failure is reported and never costs the server its tools.
            let (prompts, prompt_problems) = server.register_system_prompts(registry, project_root).await;
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
