//! The stdio transport: one MCP server subprocess, in its own process group,
//! with one bounded writer queue (a line goes straight into the pipe when
//! nothing waits there: `outbox.rs`), one dedicated reader that routes responses by
//! id in any order straight to their callers and hands what the server starts
//! to the session (`Transport::receive`) without waiting on it. Frames are one
//! JSON message per line, at most `STDIO_FRAME_MAX_BYTES`; a bigger frame fails
//! the connection. stderr never reaches the terminal: it goes to a sink the
//! host provides (CLAT keeps a redacted 20-line tail).
//!
//! The connection also watches its child: when the server process exits, the
//! connection closes at once with "the server exited (…)", so every pending
//! request fails then, even if a descendant still holds the pipes; the whole
//! process group is killed and the child reaped. A response frame that fails
//! to parse but whose id can be read fails that request with a protocol error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::ClientError;
use crate::frame::{FrameError, WRITE_BATCH_BYTES, read_frame};
use crate::jsonrpc::{Message, RequestId, WireError, encode_line, parse, recover_response_id};
use crate::limits::{
    CLOSE_GRACE, EXIT_REPORT_WAIT, EXIT_STDERR_DRAIN_WAIT, PROBE_TERM_GRACE, STDIO_FRAME_MAX_BYTES, WRITER_QUEUE,
};
use crate::sync::lock;
use crate::transport::Transport;
use crate::transport::{Inbox, Incoming, IncomingSender};

mod outbox;
pub(crate) use outbox::Outbox;

/// How to start a server.
#[derive(Clone)]
pub struct StdioSpec {
    pub command: String,
    pub args: Vec<String>,
    /// Added to (and overriding) the client's own environment.
    pub env: Vec<(String, String)>,
    /// Start from an empty environment instead of the client's own: the server gets `env` only.
    pub clear_env: bool,
    /// The working directory (the host decides: never the project).
    pub cwd: PathBuf,
}

/// Names only for `env`: its values may be secrets (an API key for the server).
impl std::fmt::Debug for StdioSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("StdioSpec")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env_names", &names)
            .field("clear_env", &self.clear_env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

/// Where the server's stderr bytes go.
pub trait StderrSink: Send + Sync {
    fn write(&self, bytes: &[u8]);
}

/// What ends a pending request: the server's answer, or a frame meant as its
/// answer that could not be read.
pub(crate) enum Reply {
    Answer(Result<Value, WireError>),
    Malformed(String),
}

/// The requests waiting for their answers, by id. Ordered, not hashed: ids are
/// our own small counters, compared in a few instructions.
pub(crate) type Pending = Arc<Mutex<BTreeMap<RequestId, oneshot::Sender<Reply>>>>;

/// One live stdio connection.
pub struct Connection {
    outgoing: Arc<Outbox>,
    pending: Pending,
    next_id: AtomicI64,
    closed: watch::Receiver<Option<String>>,
    close_tx: Arc<watch::Sender<Option<String>>>,
    /// Set (to how it ended) when the server process has exited and been reaped.
    exited: watch::Receiver<Option<String>>,
    pgid: i32,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// What the server started, as the reader read it.
    inbox: Inbox,
}

fn kill_group(pgid: i32) {
    signal_group(pgid, nix::sys::signal::Signal::SIGKILL);
}

fn signal_group(pgid: i32, signal: nix::sys::signal::Signal) {
    if pgid > 0 {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), signal);
    }
}

impl Connection {
    /// Let a process that has not answered end by itself — a server still
    /// starting, an `npx` still installing its package, which a kill would
    /// leave half-installed and locked for every later start: stop writing
    /// (it sees end of input), wait for it to exit until `PROBE_TERM_GRACE`
    /// before `bound`, then SIGTERM its process group, and SIGKILL it only at
    /// `bound`; reap it, and join the connection's tasks.
    pub async fn retire(&self, bound: Duration) {
        let term_grace = PROBE_TERM_GRACE.min(bound);
        self.end(bound - term_grace, term_grace).await;
    }

    /// Stop writing, wait `patient` for the process to exit; then SIGTERM its
    /// group and wait `term_grace` (none: straight on); then SIGKILL it, reap
    /// it and join the connection's tasks.
    async fn end(&self, patient: Duration, term_grace: Duration) {
        self.close_tx.send_if_modified(|c| set_reason(c, "closed by the client".into()));
        let mut exited = self.exited.clone();
        let mut ended = tokio::time::timeout(patient, exited.wait_for(Option::is_some)).await.is_ok();
        if !ended && !term_grace.is_zero() {
            signal_group(self.pgid, nix::sys::signal::Signal::SIGTERM);
            ended = tokio::time::timeout(term_grace, exited.wait_for(Option::is_some)).await.is_ok();
        }
        if !ended {
            kill_group(self.pgid);
            // The watcher reaps it.
            let _ = exited.wait_for(Option::is_some).await;
        }
        kill_group(self.pgid);
        let tasks: Vec<JoinHandle<()>> = lock(&self.tasks).drain(..).collect();
        for task in tasks {
            task.abort();
            let _ = task.await;
        }
    }

    /// Start the server and the connection's tasks.
    pub async fn spawn(spec: &StdioSpec, stderr_sink: Arc<dyn StderrSink>) -> Result<Connection, ClientError> {
        let mut command = tokio::process::Command::new(&spec.command);
        if spec.clear_env {
            command.env_clear();
        }
        command
            .args(&spec.args)
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child =
            command.spawn().map_err(|source| ClientError::Spawn { command: spec.command.clone(), source })?;
        let pgid = child.id().map(|p| p as i32).unwrap_or(0);
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdin = stdin
            .into_owned_fd()
            .and_then(tokio::net::unix::pipe::Sender::from_owned_fd)
            .map_err(|source| ClientError::Spawn { command: spec.command.clone(), source })?;
        let stdin = Arc::new(stdin);
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");

        let (queue, mut outgoing_rx) = mpsc::channel::<String>(WRITER_QUEUE);
        let (close_tx, closed) = watch::channel::<Option<String>>(None);
        let close_tx = Arc::new(close_tx);
        let outgoing = Arc::new(Outbox::new(queue, Some(Arc::clone(&stdin)), Arc::clone(&close_tx)));
        let pending: Pending = Arc::default();
        let (incoming, inbox) = Inbox::new();
        let mut tasks = Vec::new();

        // The one writer of queued lines.
        {
            let close_tx = Arc::clone(&close_tx);
            let mut closed = closed.clone();
            let outbox = Arc::clone(&outgoing);
            tasks.push(tokio::spawn(async move {
                let mut batch = Vec::with_capacity(8 * 1024);
                loop {
                    // Biased: what is already queued (a last `notifications/cancelled`)
                    // is written before a close ends the writer.
                    tokio::select! {
                        biased;
                        line = outgoing_rx.recv() => {
                            let Some(line) = line else { break };
                            // What else is queued goes out in the same write (calls in flight
                            // cost one system call per batch, not per message).
                            batch.clear();
                            batch.extend_from_slice(line.as_bytes());
                            let mut lines = 1;
                            while batch.len() < WRITE_BATCH_BYTES {
                                let Ok(next) = outgoing_rx.try_recv() else { break };
                                batch.extend_from_slice(next.as_bytes());
                                lines += 1;
                            }
                            if let Err(e) = outbox::write_all(&stdin, &batch).await {
                                close_tx.send_if_modified(|c| set_reason(c, format!("writing to the server failed: {e}")));
                                break;
                            }
                            outbox.written(lines);
                        }
                        _ = closed.changed() => break,
                    }
                }
                // Dropping stdin here and in the outbox closes it: the server sees end of input.
            }));
        }

        // stderr → the host's sink.
        let (stderr_done_tx, stderr_done) = oneshot::channel::<()>();
        tasks.push(tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                stderr_sink.write(&buf[..n]);
            }
            let _ = stderr_done_tx.send(());
        }));

        // The child watcher: the server's exit closes the connection at once.
        let (exited_tx, exited) = watch::channel::<Option<String>>(None);
        {
            let close_tx = Arc::clone(&close_tx);
            tasks.push(tokio::spawn(async move {
                let how = match child.wait().await {
                    Ok(status) => describe_exit(status),
                    Err(e) => format!("could not be waited for: {e}"),
                };
                // Its descendants go with it: they may hold the pipes open.
                kill_group(pgid);
                // Let its last stderr lines reach the sink, so a failure can show them.
                let _ = tokio::time::timeout(EXIT_STDERR_DRAIN_WAIT, stderr_done).await;
                close_tx.send_if_modified(|c| set_reason(c, format!("the server exited ({how})")));
                let _ = exited_tx.send(Some(how));
            }));
        }

        // The one reader.
        {
            let (pending, close_tx) = (Arc::clone(&pending), Arc::clone(&close_tx));
            let mut closed_by_then = closed.clone();
            tasks.push(tokio::spawn(async move {
                let mut reader = BufReader::with_capacity(64 * 1024, stdout);
                let reason = loop {
                    match read_frame(&mut reader).await {
                        Ok(Some(line)) => route(&line, &pending, &incoming),
                        Ok(None) => {
                            // Most often the server is exiting: let the watcher say how.
                            let _ =
                                tokio::time::timeout(EXIT_REPORT_WAIT, closed_by_then.wait_for(Option::is_some)).await;
                            break "the server closed its output".to_string();
                        }
                        Err(FrameError::TooLarge) => {
                            break format!("the server sent a frame of more than {STDIO_FRAME_MAX_BYTES} bytes");
                        }
                        Err(FrameError::Read(e)) => break format!("reading from the server failed: {e}"),
                    }
                };
                close_tx.send_if_modified(|c| set_reason(c, reason));
            }));
        }

        // When the connection closes, every waiting request learns why, and
        // nothing more is written inline.
        {
            let (pending, mut closed, outbox) = (Arc::clone(&pending), closed.clone(), Arc::clone(&outgoing));
            tasks.push(tokio::spawn(async move {
                while closed.borrow().is_none() {
                    if closed.changed().await.is_err() {
                        break;
                    }
                }
                outbox.close();
                lock(&pending).clear();
            }));
        }

        Ok(Connection {
            outgoing,
            pending,
            next_id: AtomicI64::new(0),
            closed,
            close_tx,
            exited,
            pgid,
            tasks: Mutex::new(tasks),
            inbox,
        })
    }

    fn closed_error(&self) -> ClientError {
        ClientError::Closed { reason: self.closed_reason().unwrap_or_else(|| "the connection is closed".into()) }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        kill_group(self.pgid);
        for task in lock(&self.tasks).iter() {
            task.abort();
        }
    }
}

/// How a server process ended, for the error its pending requests get.
fn describe_exit(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => status.to_string(),
    }
}

fn set_reason(current: &mut Option<String>, reason: String) -> bool {
    if current.is_none() {
        *current = Some(reason);
        true
    } else {
        false
    }
}

/// Removes a pending slot and tells the server, when a request ends without
/// its response (timeout, cancel, or the caller dropping the future).
struct PendingGuard<'a> {
    conn: &'a Connection,
    id: RequestId,
    method: &'a str,
    armed: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        lock(&self.conn.pending).remove(&self.id);
        if self.method != "initialize" {
            let note = Message::Notification {
                method: "notifications/cancelled".into(),
                params: Some(json!({ "requestId": self.id, "reason": "cancelled by the client" })),
            };
            self.conn.outgoing.try_send(encode_line(&note));
        }
    }
}

/// Route one frame from the server: an answer to its caller, what the server
/// started to `incoming`; never blocks.
pub(crate) fn route(line: &[u8], pending: &Pending, incoming: &IncomingSender) {
    let message = match parse(line) {
        Ok(m) => m,
        Err(e) => {
            // A broken answer to one of ours fails that request now, not at its deadline.
            if let Some(tx) = recover_response_id(line).and_then(|id| lock(pending).remove(&id)) {
                let _ = tx.send(Reply::Malformed(e.to_string()));
                return;
            }
            tracing::warn!("ignoring a malformed message from the server: {e}");
            return;
        }
    };
    match message {
        Message::Response { id, result } => match lock(pending).remove(&id) {
            Some(tx) => {
                let _ = tx.send(Reply::Answer(result));
            }
            None => tracing::debug!("a response for unknown or finished request {id} was ignored"),
        },
        Message::OrphanError(e) => tracing::warn!("the server sent an error without an id: {e}"),
        Message::Notification { method, params } => {
            let _ = incoming.send(Incoming::Notification { method, params });
        }
        Message::Request { id, method, params } => {
            // One stream carries every request: which call this one belongs to cannot be told.
            let _ = incoming.send(Incoming::Request { id, method, params, related: None });
        }
    }
}

#[async_trait]
impl Transport for Connection {
    /// Send a request and wait for its response, at most `timeout`, or until
    /// `cancel` fires. On timeout or cancel (or if this future is dropped) the
    /// pending slot is removed at once and `notifications/cancelled` is sent
    /// best effort with the original id.
    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
        cancel: Option<&CancellationToken>,
        _tag: Option<u64>,
    ) -> Result<Value, ClientError> {
        if self.closed_reason().is_some() {
            return Err(self.closed_error());
        }
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let mut guard = PendingGuard { conn: self, id: id.clone(), method, armed: true };
        let line = encode_line(&Message::Request { id: id.clone(), method: method.into(), params });
        if self.outgoing.send(line).await.is_err() {
            guard.armed = false;
            lock(&self.pending).remove(&id);
            return Err(self.closed_error());
        }
        let cancelled = async {
            match cancel {
                Some(cancel) => cancel.cancelled().await,
                None => std::future::pending().await,
            }
        };
        // Biased: an answer that is already there wins over a deadline or a
        // cancel that came at the same moment (and no random branch order is drawn).
        let outcome = tokio::select! {
            biased;
            r = rx => r,
            _ = tokio::time::sleep(timeout) => {
                return Err(ClientError::Timeout { method: method.into(), after: timeout });
            }
            _ = cancelled => return Err(ClientError::Cancelled { method: method.into() }),
        };
        guard.armed = false;
        match outcome {
            Ok(Reply::Answer(Ok(value))) => Ok(value),
            Ok(Reply::Answer(Err(wire))) => Err(ClientError::Wire(wire)),
            Ok(Reply::Malformed(why)) => {
                Err(ClientError::Protocol(format!("the answer to {method} is malformed: {why}")))
            }
            Err(_) => Err(self.closed_error()),
        }
    }

    async fn send(&self, message: Message) -> Result<(), ClientError> {
        self.outgoing.send(encode_line(&message)).await.map_err(|_| self.closed_error())
    }

    async fn receive(&self) -> Option<Incoming> {
        self.inbox.receive().await
    }

    fn closed_reason(&self) -> Option<String> {
        self.closed.borrow().clone()
    }

    /// Close: stop writing (the server sees end of input), wait up to
    /// `CLOSE_GRACE`, then kill and reap the whole process group, and join the
    /// connection's tasks.
    async fn close(&self) {
        self.end(CLOSE_GRACE, Duration::ZERO).await;
    }

    fn process_group(&self) -> Option<i32> {
        Some(self.pgid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dropped;

    impl StderrSink for Dropped {
        fn write(&self, _bytes: &[u8]) {}
    }

    async fn spawn(script: &str) -> Connection {
        let spec = StdioSpec {
            command: "sh".into(),
            args: vec!["-c".into(), script.into()],
            env: Vec::new(),
            clear_env: false,
            cwd: std::env::temp_dir(),
        };
        Connection::spawn(&spec, Arc::new(Dropped)).await.unwrap()
    }

    async fn retired(script: &str) -> Option<String> {
        let connection = spawn(script).await;
        connection.retire(PROBE_TERM_GRACE + Duration::from_millis(500)).await;
        connection.exited.borrow().clone()
    }

    #[tokio::test]
    async fn a_retired_process_ends_by_itself_else_gets_sigterm_then_sigkill_at_the_bound() {
        // One that ends at its end of input is let end: its own status.
        assert_eq!(retired("cat > /dev/null").await.as_deref(), Some("status 0"));
        // One that does not, and stops at SIGTERM: SIGTERM, a grace before the bound.
        assert_eq!(retired("while :; do sleep 0.1; done").await.as_deref(), Some("killed by signal 15"));
        // One that ignores SIGTERM too: SIGKILL at the bound.
        assert_eq!(retired("trap '' TERM; while :; do sleep 0.1; done").await.as_deref(), Some("killed by signal 9"));
    }
}
