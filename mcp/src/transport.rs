//! What a transport is: one connection to a server, whatever carries it (a
//! subprocess's stdio, Streamable HTTP). It sends a request and receives its
//! answer, sends other messages, hands over what the server starts, and
//! closes. Everything else — eras, `_meta`, serving the server's requests,
//! `input_required` rounds, listings — is the session's (`client.rs`,
//! `inbound.rs`).
//!
//! A request is sent and answered in one call rather than through `send` and
//! `receive`, because that is how the answer travels on both transports: over
//! HTTP it comes back on the POST that carried the request (whose stream may
//! break and be resumed, or whose session may expire and be re-opened and the
//! request sent again), and on stdio the reader hands it straight to the
//! waiting caller, with no hop through the session.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::inbound::Incoming;
use crate::jsonrpc::Message;

/// One connection to a server.
#[async_trait]
pub trait Transport: Send + Sync {
    /// Send a request and receive its answer, at most `timeout`, or until
    /// `cancel` fires; a request that ends without its answer is cancelled
    /// the transport's way. A server request the transport can relate to this
    /// one is received tagged `tag` (see `ServerRequests::handle`).
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        tag: Option<u64>,
    ) -> Result<Value, ClientError>;
    /// Send a message that has no answer: a notification, or the response to a
    /// server request.
    async fn send(&self, message: Message) -> Result<(), ClientError>;
    /// The next message the server started (a request or a notification);
    /// `None` once the connection stopped reading.
    async fn receive(&self) -> Option<Incoming>;
    /// Close the connection and release everything it holds.
    async fn close(&self);
    /// Why the connection closed, if it did.
    fn closed_reason(&self) -> Option<String>;
    /// The server's process group, for a subprocess.
    fn process_group(&self) -> Option<i32> {
        None
    }
    /// A modern session listed these tools; a transport may drop tools it
    /// cannot call (returning why) and remember what it needs to call the rest
    /// (HTTP: each tool's `x-mcp-header` declarations).
    fn learn_tools(&self, _tools: &mut Vec<Value>) -> Vec<String> {
        Vec::new()
    }
}
