//! Entry points for the fuzz targets in `fuzz/` (feature `fuzzing`, never part
//! of the client's API): the stdio reader's router (with what it hands over
//! served as a session serves it) and the Streamable HTTP event-stream
//! decoder, driven exactly as the client drives them, with what they produced
//! returned so a target can check it.

use std::sync::{Arc, Mutex};

use futures_util::{FutureExt, StreamExt};
use tokio::sync::{mpsc, oneshot};

use crate::inbound::{NoServerRequests, ServerRequests, inbound_limit, serve};
use crate::jsonrpc::{RequestId, encode_line};
use crate::stdio::{Reply, route};
use crate::transport::Inbox;

/// What routing some frames did.
#[derive(Debug, Default)]
pub struct Routed {
    /// Pending requests (ids 0–3 and "s") that got an answer or a malformed-answer error.
    pub settled: Vec<RequestId>,
    /// Pending requests still waiting.
    pub waiting: usize,
    /// Frames the connection wrote back (answers to server requests).
    pub written: Vec<String>,
}

/// Route each frame as the stdio reader does, with the requests 0, 1, 2, 3 and
/// "s" pending; server requests are answered by a handler that knows no method.
/// Runs inside a Tokio runtime (server requests are served on tasks).
pub async fn route_frames(frames: &[&[u8]]) -> Routed {
    let ids: Vec<RequestId> =
        (0..4).map(RequestId::Number).chain(std::iter::once(RequestId::String("s".into()))).collect();
    let pending: crate::stdio::Pending = Arc::new(Mutex::new(Default::default()));
    let mut receivers = Vec::new();
    for id in &ids {
        let (tx, rx) = oneshot::channel();
        pending.lock().unwrap().insert(id.clone(), tx);
        receivers.push((id.clone(), rx));
    }
    let (queue, mut written_rx) = mpsc::channel::<String>(crate::limits::WRITER_QUEUE);
    // No pipe: every line the router sends waits in the queue, where it is read back here.
    let (close_tx, _closed) = tokio::sync::watch::channel(None);
    let outgoing = Arc::new(crate::stdio::Outbox::new(queue, None, Arc::new(close_tx)));
    let handler: Arc<dyn ServerRequests> = Arc::new(NoServerRequests);
    let in_flight = inbound_limit();
    let (incoming, inbox) = Inbox::new();
    let mut written = Vec::new();
    for frame in frames {
        route(frame, &pending, &incoming);
        // Serve what the server started as the session does (`inbound::Link`), answering into the queue.
        while let Some(Some(started)) = inbox.receive().now_or_never() {
            let outgoing = Arc::clone(&outgoing);
            serve(&handler, &in_flight, started, move |response| {
                Box::pin(async move {
                    let _ = outgoing.send(encode_line(&response)).await;
                })
            });
        }
        // Let the tasks serving requests answer, and keep the writer queue drained.
        tokio::task::yield_now().await;
        while let Ok(line) = written_rx.try_recv() {
            written.push(line.trim_end_matches('\n').to_string());
        }
    }
    drop(outgoing);
    // Every request task answers without waiting on anything but the queue.
    while let Some(line) = written_rx.recv().await {
        written.push(line.trim_end_matches('\n').to_string());
    }
    let mut routed = Routed { written, ..Routed::default() };
    for (id, mut rx) in receivers {
        match rx.try_recv() {
            Ok(Reply::Answer(_) | Reply::Malformed(_)) => routed.settled.push(id),
            Err(_) => routed.waiting += 1,
        }
    }
    routed
}

/// What an event stream decoded to.
#[derive(Debug, Default)]
pub struct Decoded {
    /// The bytes handed to the SSE parser (whole lines only).
    pub lines: Vec<u8>,
    /// Each event's data, in order.
    pub events: Vec<String>,
    /// The error that ended the stream, if one did.
    pub error: Option<String>,
    /// The last event id and `retry` the stream set.
    pub last_event_id: Option<String>,
    pub retry: Option<std::time::Duration>,
}

/// Decode an event stream that arrives in `chunks`, as the HTTP transport
/// reads a response: bounded whole lines, then the SSE parser.
pub fn decode_event_stream(chunks: Vec<Vec<u8>>) -> Decoded {
    use eventsource_stream::Eventsource as _;
    let resume = Arc::new(Mutex::new(crate::http::sse::Resume::default()));
    let source = futures_util::stream::iter(chunks.into_iter().map(Ok::<Vec<u8>, reqwest::Error>));
    let mut decoded = Decoded::default();
    let lines: Vec<_> = crate::http::sse::bounded(source, Arc::clone(&resume))
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("a stream of ready chunks decodes without waiting");
    for chunk in &lines {
        match chunk {
            Ok(bytes) => decoded.lines.extend_from_slice(bytes),
            Err(e) => {
                decoded.error = Some(e.clone());
                break;
            }
        }
    }
    let parsed = futures_util::stream::iter(lines.into_iter().map(|r| r.map_err(|e| e.to_string())))
        .eventsource()
        .collect::<Vec<_>>()
        .now_or_never()
        .expect("a stream of ready lines parses without waiting");
    for event in parsed {
        match event {
            Ok(event) => decoded.events.push(event.data),
            Err(_) => break,
        }
    }
    let resume = resume.lock().unwrap().clone();
    decoded.last_event_id = resume.last_event_id;
    decoded.retry = resume.retry;
    decoded
}
