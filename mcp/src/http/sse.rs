//! Reading Server-Sent Events: lines bounded by `HTTP_BODY_MAX_BYTES` per
//! event, and the `id` and `retry` fields that say where and when to resume
//! a broken stream.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{Stream, StreamExt};

use super::lock;
use crate::limits::{HTTP_BODY_MAX_BYTES, HTTP_SSE_FIELD_OVERHEAD_BYTES};

/// What a stream said about resuming it: the last event id and the `retry`
/// delay. Kept from the raw lines, so events without `data` (which the parser
/// drops) still count, as SSE says.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Resume {
    pub(crate) last_event_id: Option<String>,
    pub(crate) retry: Option<Duration>,
}

/// The value of an SSE field line `name: value` (one leading space removed).
pub(super) fn sse_field<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let rest = line.strip_prefix(name)?.strip_prefix(b":")?;
    Some(rest.strip_prefix(b" ").unwrap_or(rest))
}

/// Hands the SSE parser whole lines only (so its work stays linear in the
/// bytes), and fails a line or an event (bytes since the last blank line) of
/// more than the frame limit. A partial line at the end is dropped, as SSE says.
/// Records `id` and `retry` in `resume`.
pub(crate) fn bounded<S, B>(stream: S, resume: Arc<Mutex<Resume>>) -> impl Stream<Item = Result<Vec<u8>, String>>
where
    S: Stream<Item = Result<B, reqwest::Error>>,
    B: AsRef<[u8]>,
{
    // An event's field names and separators ride on top of its data.
    let limit = HTTP_BODY_MAX_BYTES + HTTP_SSE_FIELD_OVERHEAD_BYTES;
    let mut pending: Vec<u8> = Vec::new();
    let mut event_bytes = 0usize;
    let mut event_id: Option<String> = None;
    stream.map(move |chunk| {
        let chunk = chunk.map_err(|e| e.to_string())?;
        pending.extend_from_slice(chunk.as_ref());
        let Some(end) = pending.iter().rposition(|&b| b == b'\n') else {
            if pending.len() > limit {
                return Err(format!("an event of more than {HTTP_BODY_MAX_BYTES} bytes"));
            }
            return Ok(Vec::new());
        };
        let rest = pending.split_off(end + 1);
        let lines = std::mem::replace(&mut pending, rest);
        // `lines` ends with its newline: split what precedes it, so no empty piece counts as a blank line.
        for line in lines[..lines.len() - 1].split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(ms) = sse_field(line, b"retry").and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok()) {
                lock(&resume).retry = Some(Duration::from_millis(ms));
            }
            if let Some(id) = sse_field(line, b"id").filter(|id| !id.contains(&0)) {
                event_id = Some(String::from_utf8_lossy(id).into_owned());
            }
            if line.is_empty() {
                event_bytes = 0;
                if let Some(id) = event_id.take() {
                    lock(&resume).last_event_id = Some(id).filter(|id| !id.is_empty());
                }
            } else {
                event_bytes += line.len();
                if event_bytes > limit {
                    return Err(format!("an event of more than {HTTP_BODY_MAX_BYTES} bytes"));
                }
            }
        }
        Ok(lines)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// `bounded` over a fixed list of chunks.
    async fn fields_of(chunks: &[&str]) -> Resume {
        let resume = Arc::new(Mutex::new(Resume::default()));
        let chunks: Vec<Result<Vec<u8>, reqwest::Error>> = chunks.iter().map(|c| Ok(c.as_bytes().to_vec())).collect();
        let lines: Vec<_> = bounded(futures_util::stream::iter(chunks), Arc::clone(&resume)).collect().await;
        assert!(lines.iter().all(Result::is_ok));
        lock(&resume).clone()
    }

    #[tokio::test]
    async fn retry_and_id_count_even_on_events_without_data() {
        // A priming event, then `retry` alone in its own event split across chunks.
        let fields = fields_of(&["id: e1\ndata: \n\n", "ret", "ry: 300\n\n"]).await;
        assert_eq!(fields, Resume { last_event_id: Some("e1".into()), retry: Some(Duration::from_millis(300)) });
        // An id without data still becomes the last event id; an empty id clears it.
        assert_eq!(fields_of(&["id: e7\n\n"]).await.last_event_id.as_deref(), Some("e7"));
        assert_eq!(fields_of(&["id: e7\n\n", "id:\n\n"]).await.last_event_id, None);
        // `retry` must be digits; an id is kept only once its event ends.
        assert_eq!(fields_of(&["retry: soon\n\nid: e9\n"]).await, Resume::default());
    }
}
