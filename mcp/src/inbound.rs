//! What the server starts — its requests and notifications — and how a
//! session serves them. A transport only reads them off its wire and hands
//! them over as `Incoming` (through an `Inbox`); the session's `Link` serves
//! them under one set of rules for every transport: `ping` is answered `{}` at
//! once; any other request runs in its own task (a panicking handler answers
//! -32603 and the connection lives on), at most `INBOUND_REQUEST_QUEUE` at a
//! time per connection — one beyond that is refused at once with -32000 and a
//! diagnostic, so a flood never blocks reading or response routing. Answers go
//! back through the transport's `send`.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::jsonrpc::{INTERNAL_ERROR, METHOD_NOT_FOUND, Message, RequestId, SERVER_BUSY, WireError};
use crate::limits::INBOUND_REQUEST_QUEUE;
use crate::transport::{Incoming, Transport};

/// Serves what the server asks of the client. `ping` is answered by the
/// session itself; everything else comes here.
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

tokio::task_local! {
    /// The key a downstream server gave the input request CLAT's client is fulfilling in this task.
    static FORWARDED_KEY: String;
}

/// Run `fulfilment` — the host answering a downstream server's input request asked under `key` — so that the
/// question it forwards to a modern client of `clat serve` (`Peer::forward`, in the same task) is asked under the
/// same key.
pub(crate) async fn forwarding_key<F: Future>(key: &str, fulfilment: F) -> F::Output {
    FORWARDED_KEY.scope(key.to_string(), fulfilment).await
}

/// The key of the input request being fulfilled in this task, if any.
pub(crate) fn current_forwarded_key() -> Option<String> {
    FORWARDED_KEY.try_with(String::clone).ok()
}

/// A connection whose server-started messages are being served: what a
/// session holds. Dropping it stops the serving (and so releases the connection).
pub(crate) struct Link {
    pub(crate) connection: Arc<dyn Transport>,
    /// Also asked to fulfil modern `input_required` results.
    pub(crate) handler: Arc<dyn ServerRequests>,
    serving: JoinHandle<()>,
}

impl Link {
    /// Serve what `connection` receives with `handler`, from now until it closes.
    pub(crate) fn new(connection: Arc<dyn Transport>, handler: Arc<dyn ServerRequests>) -> Link {
        let receiving = Arc::clone(&connection);
        let answering = Arc::downgrade(&connection);
        let serving_handler = Arc::clone(&handler);
        let serving = tokio::spawn(async move {
            let in_flight = inbound_limit();
            while let Some(incoming) = receiving.receive().await {
                let answering = Weak::clone(&answering);
                serve(&serving_handler, &in_flight, incoming, move |response| {
                    Box::pin(async move {
                        // Answers go out while the connection lives.
                        let Some(connection) = answering.upgrade() else { return };
                        if let Err(e) = connection.send(response).await {
                            tracing::warn!("answering a server request failed: {e}");
                        }
                    })
                });
            }
        });
        Link { connection, handler, serving }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// Serve one message the server started: a notification goes to the handler
/// at once, a request under `dispatch_request`'s rules, its response to `answer`.
pub(crate) fn serve<F>(handler: &Arc<dyn ServerRequests>, in_flight: &Arc<Semaphore>, incoming: Incoming, answer: F)
where
    F: FnOnce(Message) -> futures_util::future::BoxFuture<'static, ()> + Send + 'static,
{
    match incoming {
        Incoming::Notification { method, params } => handler.notification(&method, params.as_ref()),
        Incoming::Request { id, method, params, related } => {
            dispatch_request(handler, in_flight, id, method, params, related, answer)
        }
    }
}

/// The bound on server requests served at once on one connection.
pub(crate) fn inbound_limit() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(INBOUND_REQUEST_QUEUE))
}

/// Serve one server request off the reading path under the shared rules;
/// `related` is the tag of the client request it came with, if known;
/// `answer` receives the response message (from another task, later).
fn dispatch_request<F>(
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
