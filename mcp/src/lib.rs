//! `clat-mcp`: host-agnostic MCP, both ways. It knows nothing of CLAT: as a
//! client it speaks JSON-RPC to MCP servers, keeps wire errors apart from
//! runtime errors, and hands server-initiated requests to a handler the host
//! provides; as a server (`server`) it serves a host's tools to an agent.
//!
//! The JSON-RPC core, two transports behind one `Transport` trait (stdio
//! subprocesses and Streamable HTTP), both protocol eras on each, the
//! server's own requests served by the session (`inbound`), tools and
//! prompts, modern `input_required` rounds, OAuth for HTTP servers (`auth`),
//! and `mcp.json` parsing.

pub mod auth;
mod body;
pub mod client;
pub mod config;
pub mod error;
mod frame;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod inbound;
pub mod jsonrpc;
pub mod limits;
pub mod protocol;
pub mod server;
pub mod stdio;
pub(crate) mod sync;
pub mod transport;

pub use client::{Opening, Session, Target, ToolListing};
pub use error::ClientError;
pub use http::{HttpConnection, HttpSpec};
pub use inbound::{NoServerRequests, ServerRequests};
pub use jsonrpc::{RequestId, WireError};
pub use protocol::{ClientInfo, Era, LEGACY_VERSIONS, MODERN_VERSION};
pub use stdio::{Connection, StderrSink, StdioSpec};
pub use transport::{Incoming, Transport};
