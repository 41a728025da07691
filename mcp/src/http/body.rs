//! The transport's bodies and failures: a server's body within its bound, and
//! a failure status as an error whose text never carries a configured header
//! value.

use super::Inner;
use crate::body::{BodyError, error_text, read_limited};
use crate::error::ClientError;
use crate::jsonrpc::{Message, parse};
use crate::limits::{HTTP_ERROR_BODY_MAX_BYTES, HTTP_ERROR_TEXT_MAX_CHARS};

pub(super) fn http_error(e: reqwest::Error) -> ClientError {
    ClientError::Http(error_text(&e))
}

/// A server's body, failing past `limit` bytes.
pub(super) async fn read_body(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, ClientError> {
    read_limited(response, limit).await.map_err(|e| match e {
        BodyError::TooLarge(limit) => {
            ClientError::Protocol(format!("the server sent a body of more than {limit} bytes"))
        }
        BodyError::Broken(e) => http_error(e),
    })
}

/// A non-success status: the JSON-RPC error in its body if there is one, else the status and a short body.
async fn status_error(response: reqwest::Response, scrub: impl Fn(String) -> String) -> ClientError {
    let status = response.status();
    if status.is_redirection() {
        let to = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| reqwest::Url::parse(l).ok())
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_else(|| "another host".into());
        return ClientError::Http(format!(
            "the server redirected to {to}; CLAT follows redirects only to the same origin"
        ));
    }
    let body = read_body(response, HTTP_ERROR_BODY_MAX_BYTES).await.unwrap_or_default();
    if let Ok(Message::Response { result: Err(mut e), .. } | Message::OrphanError(mut e)) = parse(&body) {
        e.message = scrub(e.message);
        return ClientError::Wire(e);
    }
    let text: String = scrub(String::from_utf8_lossy(&body).chars().take(HTTP_ERROR_TEXT_MAX_CHARS).collect());
    let hint = match status.as_u16() {
        401 | 403 => " (check the credentials in the configured headers)",
        _ => "",
    };
    ClientError::Http(format!(
        "{status}{hint}{}",
        if text.trim().is_empty() { String::new() } else { format!(": {}", text.trim()) }
    ))
}

impl Inner {
    /// A failure status as an error; a server that echoes a configured header
    /// value (a bad key) never gets it into the error's text.
    pub(super) async fn status_error(&self, response: reqwest::Response) -> ClientError {
        status_error(response, |text| {
            self.secrets.iter().fold(text, |text, secret| text.replace(secret.as_str(), "[REDACTED]"))
        })
        .await
    }
}
