//! A session on a byte stream (stdio): one JSON message per line, at most
//! `STDIO_FRAME_MAX_BYTES`, everything the session says on one writer. A
//! malformed line is answered with a parse error and the session goes on; a
//! frame past the bound, or the end of the input, ends the session.
//!
//! `process_stdio` gives the process's own stdin and stdout to serve on: as
//! non-blocking pipes or sockets on the runtime's reactor when they are (as
//! every agent that spawns a server gives them), else through tokio's
//! blocking-pool `stdin`/`stdout`, which costs two thread hand-offs per
//! message each way.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::{Outlet, ServedTools, ServerInfo, Session};
use crate::frame::{FrameError, WRITE_BATCH_BYTES, read_frame};
use crate::jsonrpc::append_line;
use crate::limits::{CLOSE_GRACE, STDIO_FRAME_MAX_BYTES, WRITER_QUEUE};

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeEnd {
    #[error("the client closed its end")]
    ClientClosed,
    #[error("the client sent a frame of more than {STDIO_FRAME_MAX_BYTES} bytes")]
    FrameTooLarge,
    #[error("reading from the client failed: {0}")]
    Read(String),
    #[error("the session was stopped")]
    Stopped,
}

/// What a session reads its frames from.
pub type ServeInput = Box<dyn AsyncRead + Unpin + Send>;
/// What a session writes its messages to.
pub type ServeOutput = Box<dyn AsyncWrite + Unpin + Send>;

/// The process's stdin and stdout to serve on, on the reactor when they are
/// pipes or sockets. Must be called within a tokio runtime.
pub fn process_stdio() -> (ServeInput, ServeOutput) {
    let input = reactor_input(std::io::stdin().as_fd()).unwrap_or_else(|| Box::new(tokio::io::stdin()));
    let output = reactor_output(std::io::stdout().as_fd()).unwrap_or_else(|| Box::new(tokio::io::stdout()));
    (input, output)
}

/// A duplicate of a standard stream's descriptor, when it is a pipe or a socket.
enum Stream {
    Pipe(std::fs::File),
    Socket(std::os::unix::net::UnixStream),
}

fn stream(fd: BorrowedFd<'_>) -> Option<Stream> {
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    if kind.is_fifo() {
        Some(Stream::Pipe(file))
    } else if kind.is_socket() {
        Some(Stream::Socket(std::os::unix::net::UnixStream::from(OwnedFd::from(file))))
    } else {
        None
    }
}

fn on_reactor(socket: std::os::unix::net::UnixStream) -> Option<tokio::net::UnixStream> {
    socket.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(socket).ok()
}

fn reactor_input(fd: BorrowedFd<'_>) -> Option<ServeInput> {
    Some(match stream(fd)? {
        Stream::Pipe(file) => Box::new(tokio::net::unix::pipe::Receiver::from_file(file).ok()?),
        Stream::Socket(socket) => Box::new(on_reactor(socket)?),
    })
}

fn reactor_output(fd: BorrowedFd<'_>) -> Option<ServeOutput> {
    Some(match stream(fd)? {
        Stream::Pipe(file) => Box::new(tokio::net::unix::pipe::Sender::from_file(file).ok()?),
        Stream::Socket(socket) => Box::new(on_reactor(socket)?),
    })
}

/// Serve one session on `input` / `output` until the client closes its end,
/// sends a frame past the bound, or `stop` fires.
pub async fn serve<R, W>(
    input: R,
    output: W,
    info: ServerInfo,
    tools: Arc<dyn ServedTools>,
    stop: CancellationToken,
) -> ServeEnd
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // On the runtime's workers (not the caller's thread): the calls it starts run beside it.
    let session = tokio::spawn(async move {
        let (outlet, mut queued) = Outlet::new(WRITER_QUEUE);
        let writer = tokio::spawn(async move {
            let (mut output, mut batch) = (output, Vec::with_capacity(8 * 1024));
            while let Some(message) = queued.recv().await {
                // What else is queued goes out in the same write (answers to calls in
                // flight cost one system call per batch, not per message).
                batch.clear();
                append_line(&mut batch, &message);
                while batch.len() < WRITE_BATCH_BYTES {
                    let Ok(next) = queued.try_recv() else { break };
                    append_line(&mut batch, &next);
                }
                if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
                    break;
                }
            }
        });
        let changes = tools.listing_changes();
        let session = Session::new(Arc::new(info), tools);
        // The host's changes of the listing outside calls, announced on this connection (beside the reader:
        // a frame is never read half and dropped for it).
        let announcer = changes.map(|mut changes| {
            let (session, outlet) = (Arc::clone(&session), outlet.clone());
            tokio::spawn(async move {
                while changes.changed().await.is_ok() {
                    session.announce_tools_changed(&outlet);
                }
            })
        });
        let mut reader = BufReader::with_capacity(64 * 1024, input);
        let end = loop {
            let frame = tokio::select! {
                frame = read_frame(&mut reader) => frame,
                _ = stop.cancelled() => break ServeEnd::Stopped,
            };
            match frame {
                Ok(Some(line)) => session.receive_frame(&line, &outlet).await,
                Ok(None) => break ServeEnd::ClientClosed,
                Err(FrameError::TooLarge) => break ServeEnd::FrameTooLarge,
                Err(FrameError::Read(e)) => break ServeEnd::Read(e.to_string()),
            }
        };
        if let Some(announcer) = announcer {
            announcer.abort();
            let _ = announcer.await;
        }
        session.end().await;
        drop((session, outlet));
        let _ = tokio::time::timeout(CLOSE_GRACE, writer).await;
        end
    });
    session.await.unwrap_or(ServeEnd::Stopped)
}

#[cfg(test)]
mod tests;
