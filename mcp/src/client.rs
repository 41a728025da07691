//! The legacy lifecycle over a connection: `initialize` (offering 2025-11-25,
//! accepting a counter-offer of 2025-06-18, 2025-03-26 or 2024-11-05, refusing
//! anything else), `notifications/initialized`, then `tools/list` with the
//! spec's pagination limits and `tools/call` with a deadline and cancellation.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::limits::{LEGACY_HANDSHAKE_TIMEOUT, TOOLS_LIST_MAX_PAGES, TOOLS_LIST_PAGE_TIMEOUT, TOOLS_PER_SERVER_MAX};
use crate::stdio::Connection;

/// Legacy protocol versions, newest first; the first is what we offer.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The client's identity.
#[derive(Debug, Clone)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

/// An initialized session.
pub struct Session {
    pub connection: Connection,
    /// The negotiated protocol version.
    pub protocol_version: String,
    pub server_info: Value,
    pub server_capabilities: Value,
}

/// The tools a server listed, within the limits.
#[derive(Debug, Clone, Default)]
pub struct ToolListing {
    /// Tool objects as the server sent them (at most `TOOLS_PER_SERVER_MAX`).
    pub tools: Vec<Value>,
    /// How many tools past the cap were dropped.
    pub dropped: usize,
    pub pages: usize,
}

impl Session {
    /// Run the legacy handshake on a fresh connection.
    pub async fn initialize(
        connection: Connection,
        client: &ClientInfo,
        capabilities: Value,
    ) -> Result<Session, ClientError> {
        let params = json!({
            "protocolVersion": LEGACY_VERSIONS[0],
            "capabilities": capabilities,
            "clientInfo": { "name": client.name, "version": client.version },
        });
        let result = connection.request("initialize", Some(params), LEGACY_HANDSHAKE_TIMEOUT, None).await?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| ClientError::Protocol("the initialize result has no protocolVersion".into()))?
            .to_string();
        if !LEGACY_VERSIONS.contains(&version.as_str()) {
            return Err(ClientError::Unsupported(format!(
                "the server answered with protocol version {version:?}; CLAT speaks {}",
                LEGACY_VERSIONS.join(", ")
            )));
        }
        connection.notify("notifications/initialized", None).await?;
        Ok(Session {
            connection,
            protocol_version: version,
            server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
            server_capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
        })
    }

    /// `tools/list`, page by page: each page within its timeout, at most
    /// `TOOLS_LIST_MAX_PAGES` pages, a repeated cursor aborts, and tools past
    /// `TOOLS_PER_SERVER_MAX` are dropped and counted.
    pub async fn list_tools(&self) -> Result<ToolListing, ClientError> {
        let mut listing = ToolListing::default();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            if listing.pages == TOOLS_LIST_MAX_PAGES {
                return Err(ClientError::Protocol(format!(
                    "tools/list still had more after {TOOLS_LIST_MAX_PAGES} pages; listing aborted"
                )));
            }
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let page = self.connection.request("tools/list", params, TOOLS_LIST_PAGE_TIMEOUT, None).await?;
            listing.pages += 1;
            let tools = page
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Protocol("a tools/list page has no `tools` array".into()))?;
            for tool in tools {
                if listing.tools.len() < TOOLS_PER_SERVER_MAX {
                    listing.tools.push(tool.clone());
                } else {
                    listing.dropped += 1;
                }
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                None => return Ok(listing),
                Some(next) => {
                    if !seen.insert(next.to_string()) {
                        return Err(ClientError::Protocol(format!(
                            "tools/list repeated the cursor {next:?}; listing aborted"
                        )));
                    }
                    cursor = Some(next.to_string());
                }
            }
        }
    }

    /// `tools/call` within `timeout`; `cancel` ends the wait at once.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
    ) -> Result<Value, ClientError> {
        let params = json!({ "name": name, "arguments": arguments });
        self.connection.request("tools/call", Some(params), timeout, cancel).await
    }
}
