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
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::jsonrpc::{Message, RequestId};

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

/// A message the server started, as a transport read it.
#[derive(Debug)]
pub enum Incoming {
    /// A request, to be answered with a response of the same id; `related` is
    /// the tag of the client request it came with, when the transport can tell.
    Request { id: RequestId, method: String, params: Option<Value>, related: Option<u64> },
    /// A notification (never answered).
    Notification { method: String, params: Option<Value> },
}

/// Where a transport's reading side puts what the server started. Unbounded:
/// the session takes each message at once (serving a request only spawns it),
/// so reading never waits on serving.
pub(crate) type IncomingSender = mpsc::UnboundedSender<Incoming>;

/// The receiving end a transport keeps for `Transport::receive`; it ends when
/// every sender is gone (the transport stopped reading).
pub(crate) struct Inbox(tokio::sync::Mutex<mpsc::UnboundedReceiver<Incoming>>);

impl Inbox {
    pub(crate) fn new() -> (IncomingSender, Inbox) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, Inbox(tokio::sync::Mutex::new(rx)))
    }

    pub(crate) async fn receive(&self) -> Option<Incoming> {
        self.0.lock().await.recv().await
    }
}
