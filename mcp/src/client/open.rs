//! Opening a session: where the server is (`Target`), how to open (`Opening`),
//! the modern probe — in a first subprocess whose stderr is held until it is
//! kept or dropped (`ProbeStderr`) — and the legacy handshake in a fresh one,
//! or alone for a server known to be legacy.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::error::ClientError;
use crate::http::{HttpConnection, HttpSpec};
use crate::inbound::{Link, ServerRequests};
use crate::jsonrpc::{Message, WireError};
use crate::limits::{
    CLOSE_GRACE, LEGACY_HANDSHAKE_TIMEOUT, MODERN_PROBE_TIMEOUT, PROBE_STDERR_HELD_MAX_BYTES, PROBE_TERM_GRACE,
};
use crate::protocol::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY};
use crate::protocol::{ClientInfo, Era, LEGACY_VERSIONS, MODERN_VERSION, UNSUPPORTED_PROTOCOL_VERSION};
use crate::stdio::{Connection, StderrSink, StdioSpec};
use crate::transport::Transport;

use super::Session;

/// Where a session's server is.
#[derive(Debug, Clone)]
pub enum Target {
    /// A subprocess speaking over its stdio.
    Stdio(StdioSpec),
    /// A Streamable HTTP endpoint.
    Http(HttpSpec),
}

/// How a session opens: who serves the server's requests, where a
/// subprocess's stderr goes, who we are and what we can do, the legacy
/// handshake's bound, and whether the server's era is already known.
pub struct Opening {
    pub handler: Arc<dyn ServerRequests>,
    /// A subprocess's stderr; none: dropped (unused over HTTP).
    pub stderr: Option<Arc<dyn StderrSink>>,
    pub client: ClientInfo,
    pub capabilities: Value,
    /// The bound of the legacy `initialize`.
    pub handshake: Duration,
    /// The server is known to speak the legacy era: no modern probe first.
    pub known_legacy: bool,
}

impl Opening {
    /// Open as `client` with `capabilities`, the server's requests served by
    /// `handler`; stderr dropped, `LEGACY_HANDSHAKE_TIMEOUT`, the era probed.
    pub fn new(handler: Arc<dyn ServerRequests>, client: ClientInfo, capabilities: Value) -> Opening {
        Opening {
            handler,
            stderr: None,
            client,
            capabilities,
            handshake: LEGACY_HANDSHAKE_TIMEOUT,
            known_legacy: false,
        }
    }

    /// A subprocess's stderr goes to `sink`.
    pub fn stderr(mut self, sink: Arc<dyn StderrSink>) -> Opening {
        self.stderr = Some(sink);
        self
    }

    /// The legacy `initialize` may take `handshake` (a slow first start).
    pub fn handshake(mut self, handshake: Duration) -> Opening {
        self.handshake = handshake;
        self
    }

    /// The server is known to be legacy: the legacy handshake alone.
    pub fn known_legacy(mut self, known: bool) -> Opening {
        self.known_legacy = known;
        self
    }
}

/// The stderr of a subprocess nobody asked to see.
struct DroppedStderr;

impl StderrSink for DroppedStderr {
    fn write(&self, _bytes: &[u8]) {}
}

/// What the modern probe learned.
enum Probe {
    Modern(Value),
    /// Not modern, and why; `silent`: the server did not answer in time (it may still be starting).
    Legacy {
        why: String,
        silent: bool,
    },
}

impl Probe {
    fn legacy(why: impl Into<String>) -> Probe {
        Probe::Legacy { why: why.into(), silent: false }
    }
}

fn modern_meta(client: &ClientInfo, capabilities: &Value) -> Value {
    json!({
        PROTOCOL_VERSION_KEY: MODERN_VERSION,
        CLIENT_INFO_KEY: { "name": client.name, "version": client.version },
        CLIENT_CAPABILITIES_KEY: capabilities,
    })
}

async fn probe(connection: &dyn Transport, client: &ClientInfo, capabilities: &Value) -> Result<Probe, ClientError> {
    let params = json!({ "_meta": modern_meta(client, capabilities) });
    let mut answer =
        connection.request("server/discover", Some(params.clone()), MODERN_PROBE_TIMEOUT, None, None).await;
    if let Err(ClientError::Wire(e)) = &answer
        && offers_our_version(e)
    {
        // Rejected although it supports our version: retry once, with a new id.
        answer = connection.request("server/discover", Some(params), MODERN_PROBE_TIMEOUT, None, None).await;
    }
    match answer {
        Ok(result) => {
            let versions: Vec<&str> = result
                .get("supportedVersions")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if versions.contains(&MODERN_VERSION) {
                Ok(Probe::Modern(result))
            } else {
                Ok(Probe::legacy(format!("server/discover lists {versions:?}, not {MODERN_VERSION}")))
            }
        }
        // A modern server that also speaks a legacy version we speak: the legacy era, then.
        Err(ClientError::Wire(WireError { code: UNSUPPORTED_PROTOCOL_VERSION, data, .. }))
            if data
                .as_ref()
                .and_then(|d| d.get("supported"))
                .and_then(Value::as_array)
                .is_some_and(|v| v.iter().any(|s| s.as_str().is_some_and(|s| LEGACY_VERSIONS.contains(&s)))) =>
        {
            Ok(Probe::legacy("the server offers a legacy version CLAT speaks"))
        }
        // A recognized modern error means modern: never fall back.
        Err(ClientError::Wire(WireError { code: UNSUPPORTED_PROTOCOL_VERSION, data, .. })) => {
            let supported = data.as_ref().and_then(|d| d.get("supported")).cloned().unwrap_or(Value::Null);
            Err(ClientError::Unsupported(format!(
                "the server speaks the modern era but none of its versions ({supported}); CLAT speaks {MODERN_VERSION}"
            )))
        }
        // An authorization that failed fails the legacy handshake too.
        Err(e @ ClientError::Auth { .. }) => Err(e),
        Err(other) => {
            let silent = matches!(other, ClientError::Timeout { .. });
            Ok(Probe::Legacy { why: other.to_string(), silent })
        }
    }
}

/// The stderr of the probe's process: held until the probe decides whether
/// that process is kept (then passed on, and everything after it) or
/// discarded (then dropped: the fresh process writes its own).
struct ProbeStderr {
    sink: Arc<dyn StderrSink>,
    /// `Some`: undecided, the bytes so far; `None`: decided.
    held: std::sync::Mutex<Option<Vec<u8>>>,
    kept: std::sync::atomic::AtomicBool,
}

impl ProbeStderr {
    fn new(sink: Arc<dyn StderrSink>) -> ProbeStderr {
        ProbeStderr { sink, held: std::sync::Mutex::new(Some(Vec::new())), kept: false.into() }
    }

    /// Pass on what was held, and everything from now on.
    fn keep(&self) {
        let mut held = crate::sync::lock(&self.held);
        self.kept.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(bytes) = held.take()
            && !bytes.is_empty()
        {
            self.sink.write(&bytes);
        }
    }

    /// Drop what was held, and everything from now on.
    fn discard(&self) {
        crate::sync::lock(&self.held).take();
    }
}

impl StderrSink for ProbeStderr {
    fn write(&self, bytes: &[u8]) {
        let mut held = crate::sync::lock(&self.held);
        match held.as_mut() {
            // Bounded: a server that floods stderr before answering loses its oldest lines.
            Some(buffer) => {
                buffer.extend_from_slice(bytes);
                if buffer.len() > PROBE_STDERR_HELD_MAX_BYTES {
                    let over = buffer.len() - PROBE_STDERR_HELD_MAX_BYTES;
                    let line_end = buffer[over..].iter().position(|&b| b == b'\n').map_or(over, |i| over + i + 1);
                    buffer.drain(..line_end);
                }
            }
            None if self.kept.load(std::sync::atomic::Ordering::SeqCst) => {
                drop(held);
                self.sink.write(bytes);
            }
            None => {}
        }
    }
}

/// A `-32022` whose `data.supported` lists the version we speak: the request may be retried once.
pub(super) fn offers_our_version(error: &WireError) -> bool {
    error.code == UNSUPPORTED_PROTOCOL_VERSION
        && error
            .data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .is_some_and(|v| v.iter().any(|s| s == MODERN_VERSION))
}
impl Session {
    /// Open a session with `target` in whichever era it speaks.
    ///
    /// A subprocess: the modern probe in a first process, kept if modern;
    /// otherwise a fresh process for the legacy handshake (a strict legacy
    /// server never sees the probe followed by `initialize`). A first process
    /// that did not answer the probe in time is never killed mid-start: it is
    /// let end by itself until `PROBE_TERM_GRACE` before `opening.handshake`
    /// counted from its spawn — SIGTERM a grace before that, SIGKILL at it
    /// (`Connection::retire`) — and only then does the fresh one start. The probe
    /// process's stderr reaches `opening.stderr` only if that process is kept
    /// or the probe's failure is the answer.
    ///
    /// Streamable HTTP: a modern request first (`server/discover`); a
    /// recognized modern error means modern without a fallback; anything else
    /// means legacy, so `initialize` on the same URL.
    ///
    /// A server the caller knows to be legacy (`Opening::known_legacy`) gets
    /// the legacy handshake alone, in one process. `initialize` is bounded by
    /// `opening.handshake` either way.
    pub async fn connect(target: &Target, opening: Opening) -> Result<Session, ClientError> {
        let Opening { handler, stderr, client, capabilities, handshake, known_legacy } = opening;
        let stderr = stderr.unwrap_or_else(|| Arc::new(DroppedStderr));
        match target {
            Target::Stdio(spec) if known_legacy => {
                let link = Link::new(Arc::new(Connection::spawn(spec, stderr).await?), handler);
                Session::handshake(link, &client, capabilities, handshake).await
            }
            Target::Stdio(spec) => {
                let probe_stderr = Arc::new(ProbeStderr::new(Arc::clone(&stderr)));
                let spawned = tokio::time::Instant::now();
                let probed = Arc::new(Connection::spawn(spec, probe_stderr.clone()).await?);
                let first = Link::new(Arc::clone(&probed) as Arc<dyn Transport>, Arc::clone(&handler));
                match probe(first.connection.as_ref(), &client, &capabilities).await {
                    Ok(Probe::Modern(discover)) => {
                        probe_stderr.keep();
                        Ok(Session::modern(first, discover, &client, &capabilities))
                    }
                    Ok(Probe::Legacy { why, silent }) => {
                        tracing::debug!(
                            "{}: not modern ({why}); starting a fresh process for the legacy handshake",
                            spec.command
                        );
                        probe_stderr.discard();
                        // Still starting, perhaps installing its package: it ends by itself, within the server's
                        // startup bound counted from its spawn, less a grace left to the fresh one. A bound too
                        // short for that (or a server that answered) gets the usual close and its grace.
                        let bound = handshake.saturating_sub(spawned.elapsed() + PROBE_TERM_GRACE);
                        if silent && bound > CLOSE_GRACE {
                            probed.retire(bound).await;
                        } else {
                            first.connection.close().await;
                        }
                        let fresh = Link::new(Arc::new(Connection::spawn(spec, stderr).await?), handler);
                        Session::handshake(fresh, &client, capabilities, handshake).await
                    }
                    Err(e) => {
                        probe_stderr.keep();
                        first.connection.close().await;
                        Err(e)
                    }
                }
            }
            Target::Http(spec) => {
                let link = Link::new(Arc::new(HttpConnection::new(spec)?), handler);
                if known_legacy {
                    return Session::handshake(link, &client, capabilities, handshake).await;
                }
                match probe(link.connection.as_ref(), &client, &capabilities).await? {
                    Probe::Modern(discover) => Ok(Session::modern(link, discover, &client, &capabilities)),
                    Probe::Legacy { why, .. } => {
                        tracing::debug!("{}: not modern ({why}); initializing", spec.url);
                        Session::handshake(link, &client, capabilities, handshake).await
                    }
                }
            }
        }
    }

    fn modern(link: Link, discover: Value, client: &ClientInfo, capabilities: &Value) -> Session {
        Session {
            link,
            era: Era::Modern,
            protocol_version: MODERN_VERSION.into(),
            server_info: discover.get("_meta").and_then(|m| m.get(SERVER_INFO_KEY)).cloned().unwrap_or(Value::Null),
            server_capabilities: discover.get("capabilities").cloned().unwrap_or(Value::Null),
            meta: modern_meta(client, capabilities),
        }
    }

    /// Run the legacy handshake on a fresh connection, `initialize` bounded by
    /// `handshake`; `handler` serves the server's requests from now on.
    pub async fn initialize<T: Transport + 'static>(
        connection: T,
        handler: Arc<dyn ServerRequests>,
        client: &ClientInfo,
        capabilities: Value,
        handshake: Duration,
    ) -> Result<Session, ClientError> {
        Session::handshake(Link::new(Arc::new(connection), handler), client, capabilities, handshake).await
    }

    /// The legacy handshake: `initialize`, then `notifications/initialized`.
    async fn handshake(
        link: Link,
        client: &ClientInfo,
        capabilities: Value,
        timeout: Duration,
    ) -> Result<Session, ClientError> {
        let connection = link.connection.as_ref();
        let params = json!({
            "protocolVersion": LEGACY_VERSIONS[0],
            "capabilities": capabilities,
            "clientInfo": { "name": client.name, "version": client.version },
        });
        let initialized = async {
            let result = connection.request("initialize", Some(params), timeout, None, None).await?;
            let version = result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .ok_or_else(|| ClientError::Protocol("the initialize result has no protocolVersion".into()))?
                .to_string();
            if !LEGACY_VERSIONS.contains(&version.as_str()) {
                return Err(ClientError::Unsupported(format!(
                    "the server answered with protocol version {version:?}; CLAT speaks {}",
                    LEGACY_VERSIONS.join(", ")
                )));
            }
            connection.send(Message::Notification { method: "notifications/initialized".into(), params: None }).await?;
            Ok((version, result))
        };
        let (version, result) = match initialized.await {
            Ok(initialized) => initialized,
            Err(e) => {
                // Closed, not dropped (as after a failed probe): its last stderr lines reach the sink first.
                connection.close().await;
                return Err(e);
            }
        };
        Ok(Session {
            link,
            era: Era::Legacy,
            meta: Value::Null,
            protocol_version: version,
            server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
            server_capabilities: result.get("capabilities").cloned().unwrap_or(Value::Null),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Collected(Mutex<Vec<u8>>);

    impl StderrSink for Collected {
        fn write(&self, bytes: &[u8]) {
            self.0.lock().unwrap().extend_from_slice(bytes);
        }
    }

    #[test]
    fn the_probe_s_stderr_is_held_bounded_then_kept_or_dropped() {
        let sink = Arc::new(Collected::default());
        let held = ProbeStderr::new(sink.clone());
        for i in 0..2_000 {
            held.write(format!("line {i:04} of the probe's process: {}\n", "x".repeat(40)).as_bytes());
        }
        assert!(sink.0.lock().unwrap().is_empty(), "nothing passes before the probe decides");
        held.keep();
        held.write(b"after the probe\n");
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(text.len() <= PROBE_STDERR_HELD_MAX_BYTES + "after the probe\n".len(), "{}", text.len());
        assert!(text.starts_with("line "), "the oldest lines go whole, never half a line");
        assert!(text.contains("line 1999 ") && text.ends_with("after the probe\n"));

        let sink = Arc::new(Collected::default());
        let dropped = ProbeStderr::new(sink.clone());
        dropped.write(b"the probe's process\n");
        dropped.discard();
        dropped.write(b"still the probe's process, closing\n");
        assert!(sink.0.lock().unwrap().is_empty(), "a discarded process writes nothing");
    }
}
