//! Guest stdout and stderr: never the terminal, never the protocol. Every byte
//! goes into the plugin's bounded, redacted tail (the same `OutputTail` that
//! MCP server stderr uses), shown with failures and in status.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

use crate::redact::OutputTail;
use crate::sync::Unpoisoned;

/// A plugin's shared output tail.
pub type SharedTail = Arc<Mutex<OutputTail>>;

/// A WASI output stream that feeds a tail.
#[derive(Clone)]
pub struct TailStream(pub SharedTail);

struct TailWriter(SharedTail);

impl AsyncWrite for TailWriter {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.0.locked().push_bytes(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for TailStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for TailStream {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(TailWriter(Arc::clone(&self.0)))
    }
}
