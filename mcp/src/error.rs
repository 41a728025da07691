//! The client's runtime errors, kept apart from JSON-RPC wire errors (which
//! are one variant: the server answered with an error object).

use std::time::Duration;

use crate::jsonrpc::WireError;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    #[error("the server answered with an error: {0}")]
    Wire(WireError),
    #[error("{method} timed out after {:.1} s", after.as_secs_f64())]
    Timeout { method: String, after: Duration },
    #[error("{method} was cancelled")]
    Cancelled { method: String },
    /// The transport is gone (the server exited, sent an oversized frame, …).
    #[error("the connection closed: {reason}")]
    Closed { reason: String },
    /// The server broke the protocol (a bad result shape, a repeated cursor, …).
    #[error("protocol violation: {0}")]
    Protocol(String),
    /// Something the client does not support (an unknown protocol version, …).
    #[error("unsupported: {0}")]
    Unsupported(String),
    #[error("cannot start {command}: {source}")]
    Spawn { command: String, source: std::io::Error },
    /// An HTTP failure: a status without a JSON-RPC answer, a refused redirect,
    /// a connection or TLS error. The text never carries configured headers.
    #[error("HTTP: {0}")]
    Http(String),
    /// The server needs OAuth and it failed (or needs a login this command cannot run).
    #[error("OAuth for {server}: {error}")]
    Auth { server: String, error: crate::auth::AuthError },
}
