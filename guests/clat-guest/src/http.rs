//! Outbound HTTP, for a plugin whose `clat-plugin.toml` declares the origins it
//! talks to (`[capabilities] http = ["https://api.example.com"]`) and whose user
//! granted them at install. Blocking calls over `wasi:http` (through
//! [`wstd`](https://docs.rs/wstd), the Bytecode Alliance's async std for WASI
//! 0.2): the host checks every request against the grant before it connects,
//! follows redirects only within it, bounds bodies and requests per call, and
//! records each request in the run's events. A refusal is an [`HttpError`]
//! saying which rule refused it. Enable with the SDK's `http` feature.
//!
//! ```no_run
//! # fn demo() -> Result<(), clat_guest::http::HttpError> {
//! let response = clat_guest::http::get("https://api.example.com/items")?;
//! let items: serde_json::Value = response.json()?;
//! # Ok(()) }
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;
use wstd::http::error::ErrorCode;

use crate::ToolError;

/// Why a request did not give a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError(pub String);

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for ToolError {
    fn from(error: HttpError) -> Self {
        ToolError(error.0)
    }
}

/// What an error code from the host means for a CLAT plugin.
fn describe(code: &ErrorCode) -> String {
    match code {
        ErrorCode::HttpRequestDenied => {
            "the host refused the request: its origin (or a redirect's) is not in this plugin's http grant, \
             or the grant was revoked (the run's http_request event says which)"
                .into()
        }
        ErrorCode::DestinationIpProhibited => {
            "the host refused the request: the granted host name resolves to an internal address".into()
        }
        ErrorCode::ConnectionLimitReached => "the host refused the request: too many requests in one call".into(),
        ErrorCode::HttpRequestBodySize(_) => "the request body is over the host's limit".into(),
        ErrorCode::HttpResponseBodySize(_) => "the response body is over the host's limit".into(),
        ErrorCode::ConnectionTimeout | ErrorCode::HttpResponseTimeout => "no answer within the call's deadline".into(),
        ErrorCode::ConnectionRefused => "the connection was refused".into(),
        ErrorCode::DnsError(payload) => {
            format!("the host name could not be resolved ({})", payload.rcode.as_deref().unwrap_or("no detail"))
        }
        ErrorCode::HttpRequestUriInvalid => "the URL is not an http(s) URL with a host".into(),
        other => format!("the request failed: {other:?}"),
    }
}

fn failed(error: wstd::http::Error) -> HttpError {
    match error.chain().find_map(|e| e.downcast_ref::<ErrorCode>()) {
        Some(code) => HttpError(describe(code)),
        None => HttpError(format!("the request failed: {error:#}")),
    }
}

/// One request, built up and then [`send`](Request::send)-ed.
#[derive(Debug, Clone)]
pub struct Request {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    pub fn new(method: &str, url: &str) -> Request {
        Request { method: method.to_string(), url: url.to_string(), headers: Vec::new(), body: Vec::new() }
    }

    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    pub fn post(url: &str) -> Request {
        Request::new("POST", url)
    }

    /// Add a header (for a token, read it from a granted environment variable).
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The request body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// A JSON body, with its content type.
    pub fn json<T: Serialize>(self, value: &T) -> Result<Request, HttpError> {
        let body = serde_json::to_vec(value).map_err(|e| HttpError(format!("cannot encode the body: {e}")))?;
        Ok(self.header("content-type", "application/json").body(body))
    }

    /// Send it and read the whole response.
    pub fn send(self) -> Result<Response, HttpError> {
        let mut builder = wstd::http::Request::builder().method(self.method.as_str()).uri(self.url.as_str());
        for (name, value) in &self.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        let request = builder
            .body(wstd::http::Body::from(self.body))
            .map_err(|e| HttpError(format!("not a valid request: {e}")))?;
        wstd::runtime::block_on(async move {
            let response = wstd::http::Client::new().send(request).await.map_err(failed)?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                .collect();
            let mut body = response.into_body();
            let body = body.contents().await.map_err(failed)?.to_vec();
            Ok(Response { status, headers, body })
        })
    }
}

/// A response, read whole.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of a header (names compare case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body).map_err(|e| HttpError(format!("the response is not the JSON expected: {e}")))
    }

    /// 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// `GET url`.
pub fn get(url: &str) -> Result<Response, HttpError> {
    Request::get(url).send()
}
