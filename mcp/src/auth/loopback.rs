//! The loopback redirect of a browser login (RFC 8252 §7.3): a listener on
//! 127.0.0.1 (a configured port, or one the system picks) that waits for the
//! authorization server's redirect to `/callback`, answers the browser with a
//! short page, and hands back the redirect's query parameters. It reads
//! connections side by side, at most `AUTH_CALLBACK_REQUEST_MAX_BYTES` of each
//! request within `AUTH_CALLBACK_READ_TIMEOUT`, answers anything other than
//! `GET /callback` with 404, and ends when the login's wait ends.

use std::collections::HashMap;

use reqwest::Url;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::error::LoopbackError;
use crate::limits::{AUTH_CALLBACK_READ_TIMEOUT, AUTH_CALLBACK_REQUEST_MAX_BYTES};

const CALLBACK_PATH: &str = "/callback";

/// A bound redirect listener.
pub struct Loopback {
    listener: TcpListener,
    redirect_uri: Url,
}

impl Loopback {
    /// Listen on 127.0.0.1:`port` (0: any free port).
    pub async fn bind(port: u16) -> Result<Loopback, LoopbackError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|source| {
            if source.kind() == std::io::ErrorKind::AddrInUse {
                LoopbackError::PortInUse { port }
            } else {
                LoopbackError::Listen { port, source }
            }
        })?;
        let port = listener.local_addr().map_err(|source| LoopbackError::Listen { port, source })?.port();
        let redirect_uri = Url::parse(&format!("http://127.0.0.1:{port}{CALLBACK_PATH}"))
            .expect("a loopback address and a port make a valid URL");
        Ok(Loopback { listener, redirect_uri })
    }

    /// Where the authorization server redirects the browser to.
    pub fn redirect_uri(&self) -> &Url {
        &self.redirect_uri
    }

    /// The query parameters of the first `GET /callback`. Connections are
    /// read side by side, each for at most `AUTH_CALLBACK_READ_TIMEOUT`, so
    /// one a browser opened and left silent (a preconnect) never holds up
    /// the redirect behind it.
    pub async fn wait(&self) -> Result<HashMap<String, String>, LoopbackError> {
        let mut reading = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                accepted = self.listener.accept() => {
                    let (stream, _) = accepted.map_err(LoopbackError::Accept)?;
                    reading.spawn(async move {
                        tokio::time::timeout(AUTH_CALLBACK_READ_TIMEOUT, serve(stream)).await.ok().flatten()
                    });
                }
                Some(served) = reading.join_next(), if !reading.is_empty() => {
                    if let Ok(Some(query)) = served {
                        return Ok(query);
                    }
                }
            }
        }
    }
}

/// Read one request (its head, at most `AUTH_CALLBACK_REQUEST_MAX_BYTES`) and
/// answer it: the callback's query, or `None` (404) for anything else.
async fn serve(mut stream: TcpStream) -> Option<HashMap<String, String>> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < AUTH_CALLBACK_REQUEST_MAX_BYTES {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buffer[..n.min(AUTH_CALLBACK_REQUEST_MAX_BYTES - head.len())]),
        }
    }
    let line = String::from_utf8_lossy(&head).lines().next().unwrap_or_default().to_string();
    let target = match line.split(' ').collect::<Vec<_>>().as_slice() {
        ["GET", target, _] => target.to_string(),
        _ => String::new(),
    };
    let url = Url::parse(&format!("http://127.0.0.1{target}")).ok().filter(|u| u.path() == CALLBACK_PATH);
    let Some(url) = url else {
        let _ = stream.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
        return None;
    };
    let body = "<!doctype html><title>CLAT</title><p>You can close this tab and return to CLAT.</p>";
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    Some(url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
}
