//! The generated `host-services` trait, implemented for guest stores by
//! delegating to the host core's `HostServices` — the same code MCP servers
//! reach (the twin of `mcp/host_services.rs`). Nothing here decides anything;
//! sampling and elicitation are counted as waiting on the host, which extends
//! the guest's call deadline the way it extends an MCP server's.

use crate::contract::artec::clat::{host_services, types};
use crate::contract::{
    ContextSnapshot, ElicitationForm, ElicitationResult, HostError, HostTool, LogLevel, SamplingRequest,
    SamplingResult, ToolOutput,
};

use super::store::GuestState;

impl types::Host for GuestState {}

impl host_services::Host for GuestState {
    async fn get_context(&mut self) -> wasmtime::Result<ContextSnapshot> {
        Ok(self.services.snapshot(self.run.as_ref()))
    }

    async fn call_tool(
        &mut self,
        tool: HostTool,
        arguments: String,
    ) -> wasmtime::Result<Result<ToolOutput, HostError>> {
        Ok(self.services.call_tool(tool, &arguments, &self.source, &self.identity, self.run.as_ref()).await)
    }

    async fn create_message(
        &mut self,
        request: SamplingRequest,
    ) -> wasmtime::Result<Result<SamplingResult, HostError>> {
        let _waiting = self.waits.enter();
        Ok(self.services.create_message(&request, &self.source, self.run.as_ref()).await)
    }

    async fn elicit(&mut self, form: ElicitationForm) -> wasmtime::Result<Result<ElicitationResult, HostError>> {
        let _waiting = self.waits.enter();
        Ok(self.services.elicit(&form, &self.source, self.run.as_ref()).await)
    }

    async fn log(&mut self, level: LogLevel, message: String) -> wasmtime::Result<()> {
        self.log_lines = self.log_lines.saturating_add(1);
        self.services.log_in_call(self.log_lines, level, &message, &self.source, self.run.as_ref());
        Ok(())
    }
}
