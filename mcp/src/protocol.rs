//! The protocol's vocabulary, shared by the client and the server halves:
//! the versions of each era, the era itself, a peer's identity, the modern
//! `_meta` envelope's keys and MCP's own wire error codes (JSON-RPC's are in
//! `jsonrpc.rs`). Nothing here does anything; both halves read it.

/// The modern protocol version.
pub const MODERN_VERSION: &str = "2026-07-28";

/// Legacy protocol versions, newest first; the first is what we offer.
pub const LEGACY_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// Which protocol era a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` / `notifications/initialized` and sessions (2024-11-05 … 2025-11-25).
    Legacy,
    /// Stateless requests with the `_meta` envelope (2026-07-28).
    Modern,
}

/// A client's identity (ours as a client; the agent's when we serve).
#[derive(Debug, Clone)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

/// `HeaderMismatch` (modern HTTP).
pub const HEADER_MISMATCH: i64 = -32020;
/// `MissingRequiredClientCapabilityError` (modern).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// `UnsupportedProtocolVersionError`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The modern envelope's keys (`params._meta` of a request, `_meta` of a result).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
