//! `clat-mcp`: a host-agnostic MCP client. It knows nothing of CLAT: it speaks
//! JSON-RPC to MCP servers, keeps wire errors apart from runtime errors, and
//! hands server-initiated requests to a handler the host provides.
//!
//! Built so far: the JSON-RPC core, the stdio transport, both protocol eras
//! over stdio (the modern probe with a fresh-process legacy fallback), tools
//! listing and calling, and `mcp.json` parsing. Streamable HTTP comes next.

pub mod client;
pub mod config;
pub mod error;
pub mod jsonrpc;
pub mod limits;
pub mod stdio;

pub use client::{ClientInfo, Era, LEGACY_VERSIONS, MODERN_VERSION, Session, ToolListing};
pub use error::ClientError;
pub use jsonrpc::{RequestId, WireError};
pub use stdio::{Connection, NoServerRequests, ServerRequests, StderrSink, StdioSpec};
