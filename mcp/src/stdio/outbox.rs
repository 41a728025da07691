//! The one way bytes reach a stdio server: whole lines, in the order they were
//! given, at most `WRITER_QUEUE` waiting. A line goes straight into the pipe
//! from the caller when nothing is waiting and the pipe takes it whole at once
//! (a pipe write of at most `PIPE_BUF` bytes is atomic: all of it or none), so
//! a sequential call costs no hop to the writer task; otherwise it waits in the
//! bounded queue for the writer task, which writes what has gathered in one
//! write. While any line is queued or in the writer's hands, nothing is written
//! inline, so lines never overtake each other.

use std::sync::{Arc, Mutex};

use tokio::net::unix::pipe;
use tokio::sync::{mpsc, watch};

use super::{lock, set_reason};

/// The longest line written inline: a pipe write of at most this many bytes is atomic.
const INLINE_LINE_MAX_BYTES: usize = nix::libc::PIPE_BUF;

/// What a write from the caller's side found.
enum Inline {
    Written,
    /// Not written: queue it.
    Queue(String),
    /// The pipe failed (the connection closes with why).
    Failed,
}

struct Wire {
    /// The server's stdin for inline writes; `None` without a pipe or once closed.
    pipe: Option<Arc<pipe::Sender>>,
    /// Lines given to the queue and not yet written.
    queued: usize,
}

/// The sending side of one connection's output.
pub(crate) struct Outbox {
    queue: mpsc::Sender<String>,
    wire: Mutex<Wire>,
    close_tx: Arc<watch::Sender<Option<String>>>,
}

/// Takes a queued line back off the count if its sender gives up before the queue took it.
struct Counted<'a> {
    outbox: &'a Outbox,
    armed: bool,
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        if self.armed {
            lock(&self.outbox.wire).queued -= 1;
        }
    }
}

impl Outbox {
    /// An outbox over `queue`, writing inline into `pipe` when it can (with no
    /// pipe, every line is queued).
    pub(crate) fn new(
        queue: mpsc::Sender<String>,
        pipe: Option<Arc<pipe::Sender>>,
        close_tx: Arc<watch::Sender<Option<String>>>,
    ) -> Outbox {
        Outbox { queue, wire: Mutex::new(Wire { pipe, queued: 0 }), close_tx }
    }

    /// Send one line (ending in `\n`), waiting for room in the queue if it
    /// must; `Err` once the connection is closed.
    pub(crate) async fn send(&self, line: String) -> Result<(), ()> {
        let line = {
            let mut wire = lock(&self.wire);
            match self.inline(&mut wire, line) {
                Inline::Written => return Ok(()),
                Inline::Failed => return Err(()),
                Inline::Queue(line) => {
                    wire.queued += 1;
                    line
                }
            }
        };
        let mut counted = Counted { outbox: self, armed: true };
        self.queue.send(line).await.map_err(|_| ())?;
        counted.armed = false;
        Ok(())
    }

    /// Send one line without waiting: dropped when the queue is full or closed.
    pub(crate) fn try_send(&self, line: String) {
        let mut wire = lock(&self.wire);
        if let Inline::Queue(line) = self.inline(&mut wire, line)
            && self.queue.try_send(line).is_ok()
        {
            wire.queued += 1;
        }
    }

    /// Write `line` now if nothing is waiting and the pipe takes it whole.
    fn inline(&self, wire: &mut Wire, line: String) -> Inline {
        let Some(pipe) = wire.pipe.as_ref().filter(|_| wire.queued == 0 && line.len() <= INLINE_LINE_MAX_BYTES) else {
            return Inline::Queue(line);
        };
        match pipe.try_write(line.as_bytes()) {
            Ok(n) if n == line.len() => Inline::Written,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Inline::Queue(line),
            outcome => {
                let why = match outcome {
                    Ok(n) => format!("wrote {n} of {} bytes of an atomic pipe write", line.len()),
                    Err(e) => e.to_string(),
                };
                self.close_tx.send_if_modified(|c| set_reason(c, format!("writing to the server failed: {why}")));
                wire.pipe = None;
                Inline::Failed
            }
        }
    }

    /// The writer task wrote `n` queued lines.
    pub(crate) fn written(&self, n: usize) {
        lock(&self.wire).queued -= n;
    }

    /// No more inline writes; the pipe closes once the writer task lets go of it too.
    pub(crate) fn close(&self) {
        lock(&self.wire).pipe = None;
    }
}

/// Write all of `bytes` to `pipe`, waiting for room as needed.
pub(crate) async fn write_all(pipe: &pipe::Sender, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match pipe.try_write(bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => pipe.writable().await?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
