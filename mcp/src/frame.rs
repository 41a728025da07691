//! Line framing, the client's and the server's side of stdio alike: one JSON
//! message per line, at most `STDIO_FRAME_MAX_BYTES`, blank lines skipped; and
//! how much a writer gathers into one write.

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::limits::STDIO_FRAME_MAX_BYTES;

/// A writer gathers queued messages into one write up to about this many bytes.
pub(crate) const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Why the next frame could not be read.
#[derive(Debug)]
pub(crate) enum FrameError {
    /// A line longer than `STDIO_FRAME_MAX_BYTES`.
    TooLarge,
    Read(std::io::Error),
}

/// The next frame of a stdio stream, the client's or the server's side: one
/// line, at most `STDIO_FRAME_MAX_BYTES`, blank lines skipped; `None` at the
/// end of the stream.
pub(crate) async fn read_frame<R: tokio::io::AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut frame = Vec::new();
    loop {
        let chunk = reader.fill_buf().await.map_err(FrameError::Read)?;
        if chunk.is_empty() {
            return Ok(None);
        }
        let (take, complete) = match chunk.iter().position(|&b| b == b'\n') {
            Some(pos) => (pos, true),
            None => (chunk.len(), false),
        };
        if frame.len() + take > STDIO_FRAME_MAX_BYTES {
            return Err(FrameError::TooLarge);
        }
        frame.extend_from_slice(&chunk[..take]);
        reader.consume(if complete { take + 1 } else { take });
        if complete {
            if !frame.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(frame));
            }
            frame.clear();
        }
    }
}
