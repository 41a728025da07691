//! Event streams: the answer to one request (plain JSON, or SSE resumed with
//! GET + `Last-Event-ID` when it breaks), the server requests and
//! notifications that arrive on a stream (handed to the session), and the
//! server's own legacy GET stream. Reading one SSE stream is `sse.rs`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use eventsource_stream::Eventsource as _;
use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::Value;

use super::Inner;
use super::body::read_body;
use super::sse::{Resume, bounded};
use crate::error::ClientError;
use crate::jsonrpc::{Message, RequestId, WireError, parse};
use crate::limits::{HTTP_BODY_MAX_BYTES, HTTP_GET_STREAM_DEFAULT_RETRY, HTTP_SSE_DEFAULT_RETRY, HTTP_SSE_RESUMES_MAX};
use crate::sync::lock;
use crate::transport::Incoming;

/// How one event stream ended.
enum Streamed {
    Answer(Result<Value, WireError>),
    /// The stream ended without the answer; resume from this event id after `retry`.
    Ended {
        last_event_id: Option<String>,
        retry: Option<Duration>,
    },
}

impl Inner {
    /// A legacy GET for an event stream (the server's own, or a resumed
    /// answer), from `last_event_id` when given.
    fn get_stream(&self, last_event_id: Option<&str>) -> reqwest::RequestBuilder {
        let mut builder =
            self.client.get(self.url.clone()).headers(self.headers.clone()).header(ACCEPT, "text/event-stream");
        if let Some(last) = last_event_id {
            builder = builder.header("last-event-id", last);
        }
        self.legacy_session_headers(builder, false)
    }

    /// Read an SSE stream: hand over what the server starts (its requests as
    /// related to the request tagged `tag`), and return the answer to `id`. A
    /// modern stream carries no server requests.
    async fn read_stream(
        self: &Arc<Self>,
        response: reqwest::Response,
        id: Option<&RequestId>,
        tag: Option<u64>,
        modern: bool,
    ) -> Result<Streamed, ClientError> {
        let resume = Arc::new(Mutex::new(Resume::default()));
        let mut events = bounded(response.bytes_stream(), Arc::clone(&resume)).eventsource();
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(eventsource_stream::EventStreamError::Transport(e)) if e.starts_with("an event of more") => {
                    return Err(ClientError::Protocol(format!("the server sent {e}")));
                }
                Err(e) => {
                    tracing::debug!("the event stream broke: {e}");
                    break;
                }
            };
            if event.data.trim().is_empty() {
                continue;
            }
            match parse(event.data.as_bytes()) {
                Ok(Message::Response { id: rid, result }) if Some(&rid) == id => return Ok(Streamed::Answer(result)),
                Ok(Message::Response { id: rid, .. }) => {
                    tracing::debug!("a response for {rid} on another stream was ignored")
                }
                Ok(Message::Request { method, .. }) if modern => {
                    tracing::warn!(
                        "ignoring a {method} request on a modern stream: 2026-07-28 servers ask with input_required"
                    );
                }
                Ok(Message::Request { id, method, params }) => {
                    let _ = self.incoming.send(Incoming::Request { id, method, params, related: tag });
                }
                Ok(Message::Notification { method, params }) => {
                    let _ = self.incoming.send(Incoming::Notification { method, params });
                }
                Ok(Message::OrphanError(e)) => tracing::warn!("the server sent an error without an id: {e}"),
                Err(e) => tracing::warn!("ignoring a malformed event from the server: {e}"),
            }
        }
        let Resume { last_event_id, retry } = lock(&resume).clone();
        Ok(Streamed::Ended { last_event_id, retry })
    }

    /// Resume a stream with GET + `Last-Event-ID`.
    async fn resume(&self, last_event_id: &str) -> Result<reqwest::Response, ClientError> {
        let response = self.send(|| self.get_stream(Some(last_event_id))).await?;
        if !response.status().is_success() {
            return Err(self.status_error(response).await);
        }
        Ok(response)
    }

    /// The answer to one request from its HTTP response (JSON or SSE, resumed if it breaks).
    pub(super) async fn answer(
        self: &Arc<Self>,
        id: &RequestId,
        tag: Option<u64>,
        method: &str,
        response: reqwest::Response,
        modern: bool,
    ) -> Result<Value, ClientError> {
        let status = response.status();
        if status == reqwest::StatusCode::ACCEPTED {
            return Err(ClientError::Protocol(format!("the server accepted {method} (202) without answering it")));
        }
        if !status.is_success() {
            return Err(self.status_error(response).await);
        }
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
        if content_type.starts_with("application/json") {
            let body = read_body(response, HTTP_BODY_MAX_BYTES).await?;
            return match parse(&body) {
                Ok(Message::Response { id: rid, result }) if &rid == id => result.map_err(ClientError::Wire),
                Ok(Message::OrphanError(e)) => Err(ClientError::Wire(e)),
                Ok(_) => Err(ClientError::Protocol(format!("the answer to {method} is not its response"))),
                Err(e) => Err(ClientError::Protocol(format!("the answer to {method} is not JSON-RPC: {e}"))),
            };
        }
        if !content_type.starts_with("text/event-stream") {
            return Err(ClientError::Protocol(format!(
                "the answer to {method} has content type {content_type:?}, not JSON or an event stream"
            )));
        }
        let mut streamed = self.read_stream(response, Some(id), tag, modern).await?;
        let mut resumes = 0;
        loop {
            match streamed {
                Streamed::Answer(result) => return result.map_err(ClientError::Wire),
                Streamed::Ended { last_event_id: Some(last), retry } if resumes < HTTP_SSE_RESUMES_MAX && !modern => {
                    resumes += 1;
                    tokio::time::sleep(retry.unwrap_or(HTTP_SSE_DEFAULT_RETRY)).await;
                    let response = self.resume(&last).await?;
                    streamed = match self.read_stream(response, Some(id), tag, modern).await? {
                        Streamed::Ended { last_event_id: None, retry: r } => {
                            Streamed::Ended { last_event_id: Some(last), retry: r.or(retry) }
                        }
                        other => other,
                    };
                }
                Streamed::Ended { .. } => {
                    return Err(ClientError::Protocol(format!(
                        "the event stream for {method} ended without a response"
                    )));
                }
            }
        }
    }

    /// The server's own stream (legacy GET): serve its messages; reconnect after `retry`, a few times.
    pub(super) async fn listen(self: Arc<Self>, opened: tokio::sync::oneshot::Sender<()>) {
        let mut opened = Some(opened);
        let mut last_event_id: Option<String> = None;
        // A server may close the stream and ask to reconnect (SEP-1699) for as long as it likes;
        // only streams that carried nothing count against the bound.
        let mut empty_streams = 0;
        while empty_streams <= HTTP_SSE_RESUMES_MAX {
            let sent = self.send(|| self.get_stream(last_event_id.as_deref())).await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            let Ok(response) = sent else { return };
            let is_stream = response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|t| t.starts_with("text/event-stream"));
            if !response.status().is_success() || !is_stream {
                return;
            }
            match self.read_stream(response, None, None, false).await {
                Ok(Streamed::Ended { last_event_id: last, retry }) => {
                    if last.is_none() && retry.is_none() {
                        return;
                    }
                    if last.is_none() || last == last_event_id {
                        empty_streams += 1;
                    } else {
                        empty_streams = 0;
                    }
                    last_event_id = last.or(last_event_id);
                    tokio::time::sleep(retry.unwrap_or(HTTP_GET_STREAM_DEFAULT_RETRY)).await;
                }
                _ => return,
            }
        }
    }
}
