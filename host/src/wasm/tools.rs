//! A WASM plugin's tools in the registry, the twin of `mcp/tools.rs`:
//! registering them as `wasm_{plugin}_{tool}` under the plugin's identity (at
//! least `network` when it holds an HTTP grant the tool uses), and `WasmTool`, the handler
//! that runs one `call-tool` in a fresh instance.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::plugin::WasmPlugin;
use crate::contract::ToolOutput;
use crate::names::ExternalKind;
use crate::registry::{RegistrationError, Registry, ToolError, ToolHandler};
use crate::run::RunContext;
use crate::supply::capabilities::Capability;

impl WasmPlugin {
    /// Register every listed tool; returns what each registration did.
    pub fn register(self: &Arc<Self>, registry: &Registry) -> Vec<Result<String, RegistrationError>> {
        self.tools()
            .iter()
            .map(|spec| {
                let handler = Arc::new(WasmTool { plugin: Arc::clone(self), tool: spec.name.clone() });
                let network = !self.granted.http.is_empty() && self.uses.allows(&spec.name, Capability::Http);
                let (identity, kind) = (self.template.identity(), ExternalKind::Wasm);
                if self.schemas_checked {
                    registry.register_external_checked(kind, &self.name, identity, spec, network, handler)
                } else {
                    registry.register_external(kind, &self.name, identity, spec, network, handler)
                }
            })
            .collect()
    }
}

/// One guest tool in the registry.
struct WasmTool {
    plugin: Arc<WasmPlugin>,
    tool: String,
}

#[async_trait]
impl ToolHandler for WasmTool {
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        self.plugin.call_tool(&self.tool, &arguments, run).await
    }

    fn waiting_on_host(&self) -> bool {
        self.plugin.waits.pending() > 0
    }
}
