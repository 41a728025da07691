//! The HTTP the authorization steps use: one reqwest client that follows no
//! redirects (a metadata or token answer that redirects is refused, so a
//! credential never follows a redirect), with a timeout per request and a
//! bound on every body read, and the adapter that lets the `oauth2` crate's
//! token requests go through it.

use std::time::Duration;

use serde_json::Value;

use crate::body::{BodyError, error_text, read_limited};
use crate::limits::{AUTH_BODY_MAX_BYTES, AUTH_HTTP_TIMEOUT, HTTP_CONNECT_TIMEOUT};

/// Why one authorization request failed, without the request's secrets.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct FetchError(pub String);

/// The client of every authorization step of one server.
#[derive(Clone)]
pub struct AuthHttp {
    client: reqwest::Client,
    timeout: Duration,
}

impl AuthHttp {
    pub fn new() -> Result<AuthHttp, FetchError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(HTTP_CONNECT_TIMEOUT)
            .build()
            .map_err(|e| FetchError(error_text(&e)))?;
        Ok(AuthHttp { client, timeout: AUTH_HTTP_TIMEOUT })
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// GET `url` as JSON: `Ok(None)` for a 404 or another 4xx (the document is
    /// not there), an error for anything else that is not a 2xx JSON object.
    pub async fn get_json(&self, url: &reqwest::Url) -> Result<Option<Value>, FetchError> {
        let response = self
            .client
            .get(url.clone())
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| FetchError(error_text(&e)))?;
        let status = response.status();
        if status.is_client_error() {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(FetchError(format!("{url} answered {status}")));
        }
        let body = read_bounded(response).await?;
        let value: Value =
            serde_json::from_slice(&body).map_err(|e| FetchError(format!("{url} did not answer JSON: {e}")))?;
        if !value.is_object() {
            return Err(FetchError(format!("{url} did not answer a JSON object")));
        }
        Ok(Some(value))
    }

    /// Send an `oauth2` request (a token, refresh or registration request).
    pub async fn send(&self, request: oauth2::HttpRequest) -> Result<oauth2::HttpResponse, FetchError> {
        let (parts, body) = request.into_parts();
        let url = reqwest::Url::parse(&parts.uri.to_string()).map_err(|e| FetchError(format!("a bad URL: {e}")))?;
        let response = self
            .client
            .request(parts.method, url)
            .headers(parts.headers)
            .body(body)
            .timeout(self.timeout)
            .send()
            .await
            .map_err(|e| FetchError(error_text(&e)))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_bounded(response).await?;
        let mut answer = oauth2::http::Response::builder().status(status);
        if let Some(map) = answer.headers_mut() {
            *map = headers;
        }
        answer.body(body).map_err(|e| FetchError(e.to_string()))
    }
}

impl<'c> oauth2::AsyncHttpClient<'c> for AuthHttp {
    type Error = FetchError;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<oauth2::HttpResponse, FetchError>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(self.send(request))
    }
}

/// A body, failing past `AUTH_BODY_MAX_BYTES`.
async fn read_bounded(response: reqwest::Response) -> Result<Vec<u8>, FetchError> {
    read_limited(response, AUTH_BODY_MAX_BYTES).await.map_err(|e| match e {
        BodyError::TooLarge(limit) => FetchError(format!("an answer of more than {limit} bytes")),
        BodyError::Broken(e) => FetchError(error_text(&e)),
    })
}
