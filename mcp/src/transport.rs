//! What every transport offers a session, and the server-request rules both
//! transports share: `ping` is answered `{}` at once; any other request runs
//! in its own task (a panicking handler answers -32603 and the connection
//! lives on), at most `INBOUND_REQUEST_QUEUE` at a time per connection — one
//! beyond that is refused at once with -32000 and a diagnostic, so a flood
//! never blocks reading or response routing.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::jsonrpc::{INTERNAL_ERROR, METHOD_NOT_FOUND, Message, RequestId, SERVER_BUSY, WireError};
use crate::limits::INBOUND_REQUEST_QUEUE;

/// Serves what the server asks of the client. `ping` is answered by the
/// connection itself; everything else comes here.
///
/// `related` is the tag the caller gave the client request this one came
/// with, when the transport can tell: over legacy HTTP, a request that arrives
/// on the answer stream of a tagged request; in the modern era, the input
/// requests of a tagged call's `input_required` result. `None` when it cannot
/// (stdio has one stream for everything; the legacy GET stream belongs to no
/// request).
#[async_trait]
pub trait ServerRequests: Send + Sync {
    async fn handle(&self, method: &str, params: Option<Value>, related: Option<u64>) -> Result<Value, WireError>;
    /// A notification from the server (never answered).
    fn notification(&self, _method: &str, _params: Option<&Value>) {}
}

/// Answers every server request with -32601.
pub struct NoServerRequests;

#[async_trait]
impl ServerRequests for NoServerRequests {
    async fn handle(&self, method: &str, _params: Option<Value>, _related: Option<u64>) -> Result<Value, WireError> {
        Err(WireError::new(METHOD_NOT_FOUND, format!("method not found: {method}")))
    }
}

/// One connection to a server, whatever carries it (a subprocess's stdio, HTTP).
#[async_trait]
pub trait Transport: Send + Sync {
    /// Send a request and wait for its response, at most `timeout`, or until
    /// `cancel` fires; a request that ends without its response is cancelled
    /// the transport's way. Server requests the transport can relate to this
    /// one reach the handler with `tag` (see `ServerRequests::handle`).
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        tag: Option<u64>,
    ) -> Result<Value, ClientError>;
    /// Send a notification.
    async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), ClientError>;
    /// Why the connection closed, if it did.
    fn closed_reason(&self) -> Option<String>;
    /// What serves this server's requests.
    fn handler(&self) -> &Arc<dyn ServerRequests>;
    /// Close the connection and release everything it holds.
    async fn close(&self);
    /// The server's process group, for a subprocess.
    fn process_group(&self) -> Option<i32> {
        None
    }
    /// The session learned its era and protocol version (HTTP sends it as a header).
    fn negotiated(&self, _version: &str) {}
    /// The session is open (after the legacy handshake, or the modern probe):
    /// start what the transport keeps running (HTTP legacy: the server's GET
    /// stream, which is open, or refused, when this returns).
    async fn session_opened(&self) {}
    /// The session listed these tools; a transport may drop tools it cannot
    /// call (returning why) and remember what it needs to call the rest.
    fn learn_tools(&self, _tools: &mut Vec<Value>) -> Vec<String> {
        Vec::new()
    }
}

/// The bound on server requests served at once on one connection.
pub(crate) fn inbound_limit() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(INBOUND_REQUEST_QUEUE))
}

/// Serve one server request off the reading path under the shared rules;
/// `related` is the tag of the client request it came with, if known;
/// `answer` receives the response message (from another task, later).
pub(crate) fn dispatch_request<F>(
    handler: &Arc<dyn ServerRequests>,
    in_flight: &Arc<Semaphore>,
    id: RequestId,
    method: String,
    params: Option<Value>,
    related: Option<u64>,
    answer: F,
) where
    F: FnOnce(Message) -> futures_util::future::BoxFuture<'static, ()> + Send + 'static,
{
    if method == "ping" {
        tokio::spawn(answer(Message::Response { id, result: Ok(json!({})) }));
        return;
    }
    let Ok(permit) = Arc::clone(in_flight).try_acquire_owned() else {
        tracing::warn!("refusing server request {method}: {INBOUND_REQUEST_QUEUE} requests already in flight");
        let busy = WireError::new(
            SERVER_BUSY,
            format!("the client is already serving {INBOUND_REQUEST_QUEUE} requests from this server"),
        );
        tokio::spawn(answer(Message::Response { id, result: Err(busy) }));
        return;
    };
    let handler = Arc::clone(handler);
    tokio::spawn(async move {
        let work = {
            let handler = Arc::clone(&handler);
            let method = method.clone();
            tokio::spawn(async move { handler.handle(&method, params, related).await })
        };
        let result = match work.await {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(WireError::new(INTERNAL_ERROR, format!("the handler for {method} panicked"))),
            Err(_) => Err(WireError::new(INTERNAL_ERROR, format!("the handler for {method} was stopped"))),
        };
        // The bound is on handlers at work; sending the answer has its own timeout.
        drop(permit);
        answer(Message::Response { id, result }).await;
    });
}
