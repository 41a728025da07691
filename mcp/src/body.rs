//! HTTP bodies read within a bound, and reqwest's errors in words: shared by
//! the Streamable HTTP transport (`http/`) and the authorization steps
//! (`auth/http.rs`), neither of which owns the other.

use futures_util::StreamExt;

/// reqwest's error with its causes. Its text names the URL, never headers
/// or bodies; a timeout says so in words.
pub(crate) fn error_text(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() { format!("{e} (no answer in time)") } else { e.to_string() };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

/// Why a body could not be read whole.
pub(crate) enum BodyError {
    /// It is longer than the limit it was read with.
    TooLarge(usize),
    Broken(reqwest::Error),
}

/// Read a body, failing past `limit` bytes (the transport's answers, and the
/// authorization steps' in `auth/http.rs`).
pub(crate) async fn read_limited(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n as usize > limit) {
        return Err(BodyError::TooLarge(limit));
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(BodyError::Broken)?;
        if body.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge(limit));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
