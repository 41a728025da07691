//! What a login is configured with and what it keeps: the user's OAuth
//! settings, the client's identity, the stored credentials (never shown in a
//! `Debug` form), where they live between commands (`CredentialStore`, the
//! host's), the status a host shows (never a token), and how the user is shown
//! the login page (`Browser`, the host's; `ScriptedBrowser` for tests and the
//! conformance suite).

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use reqwest::Url;
use serde::{Deserialize, Serialize};

use super::error::{BrowserError, StoreError};
use super::http::AuthHttp;
use crate::limits::AUTH_REFRESH_SKEW;
use crate::sync::lock;

/// Which grant gets a token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grant {
    /// A user logs in through a browser (authorization code with PKCE).
    #[default]
    AuthorizationCode,
    /// The client itself is the principal (machine-to-machine, needs a client secret).
    ClientCredentials,
}

/// What the user configured for a server's OAuth (the `oauth` of its entry).
#[derive(Clone, Default)]
pub struct OAuthSettings {
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Scopes to ask for when the server's challenge names none.
    pub scopes: Vec<String>,
    /// The loopback port of the redirect (0 or none: any free port).
    pub callback_port: Option<u16>,
    /// An https URL of this client's Client ID Metadata Document, used as the
    /// client id where the authorization server supports such documents.
    pub client_metadata_url: Option<String>,
    pub grant: Grant,
    /// The name the client registers under.
    pub client_name: Option<String>,
}

impl std::fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[REDACTED]"))
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("grant", &self.grant)
            .finish()
    }
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    ClientSecretBasic,
    ClientSecretPost,
    None,
}

impl ClientAuth {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ClientAuth::ClientSecretBasic => "client_secret_basic",
            ClientAuth::ClientSecretPost => "client_secret_post",
            ClientAuth::None => "none",
        }
    }
}

/// Who the client is to the authorization server.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ClientIdentity {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub auth: ClientAuth,
}

/// A server's tokens, as stored between commands.
#[derive(Clone, Serialize, Deserialize)]
pub struct Credentials {
    /// The resource (the server's canonical URL) the token was issued for; it is sent nowhere else.
    pub resource: String,
    pub issuer: String,
    pub token_endpoint: String,
    pub client: ClientIdentity,
    pub grant: Grant,
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the token was received (seconds since the Unix epoch), for its lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_at: Option<u64>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client.client_id)
            .field("scopes", &self.scopes)
            .field("expires_at", &self.expires_at)
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "[REDACTED]"))
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The token expires within `AUTH_REFRESH_SKEW`, or within half its
    /// lifetime when that is shorter (a token that lives less than the skew
    /// would otherwise be refreshed before every request), or has expired.
    pub fn expiring(&self) -> bool {
        let Some(at) = self.expires_at else { return false };
        let lifetime = self.issued_at.map_or(u64::MAX, |issued| at.saturating_sub(issued));
        at <= now_secs() + AUTH_REFRESH_SKEW.as_secs().min(lifetime / 2)
    }

    /// The secrets in these credentials, for a host's redaction.
    pub fn secrets(&self) -> Vec<String> {
        let mut secrets = vec![self.access_token.clone()];
        secrets.extend(self.refresh_token.clone());
        secrets.extend(self.client.client_secret.clone());
        secrets
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Where a server's credentials live between commands (the host's files, or memory).
pub trait CredentialStore: Send + Sync {
    /// The stored credentials, if any (unreadable ones count as none, with a warning).
    fn load(&self) -> Result<Option<Credentials>, StoreError>;
    /// Keep `credentials`, replacing what was kept.
    fn save(&self, credentials: &Credentials) -> Result<(), StoreError>;
    /// Forget the credentials (nothing kept is not an error).
    fn remove(&self) -> Result<(), StoreError>;
}

/// Credentials kept only for the life of the process.
#[derive(Default)]
pub struct MemoryStore(Mutex<Option<Credentials>>);

impl CredentialStore for MemoryStore {
    fn load(&self) -> Result<Option<Credentials>, StoreError> {
        Ok(lock(&self.0).clone())
    }
    fn save(&self, credentials: &Credentials) -> Result<(), StoreError> {
        *lock(&self.0) = Some(credentials.clone());
        Ok(())
    }
    fn remove(&self) -> Result<(), StoreError> {
        *lock(&self.0) = None;
        Ok(())
    }
}

/// Shows the user the authorization page; the answer arrives at the loopback redirect.
#[async_trait]
pub trait Browser: Send + Sync {
    async fn open(&self, url: &Url) -> Result<(), BrowserError>;
}

/// A browser for tests and the conformance suite: it asks for the page
/// without following redirects and delivers the redirect the authorization
/// server answers with (an automatic approval) to the loopback listener.
pub struct ScriptedBrowser {
    http: AuthHttp,
}

impl ScriptedBrowser {
    pub fn new() -> Result<ScriptedBrowser, BrowserError> {
        Ok(ScriptedBrowser { http: AuthHttp::new().map_err(|e| BrowserError::Open(e.0))? })
    }
}

#[async_trait]
impl Browser for ScriptedBrowser {
    async fn open(&self, url: &Url) -> Result<(), BrowserError> {
        let fetch = |e: reqwest::Error| BrowserError::Open(e.to_string());
        let page = self.http.client().get(url.clone()).send().await.map_err(fetch)?;
        let location = page
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or(BrowserError::NoRedirect { status: page.status() })?;
        let target = url.join(location).map_err(|e| BrowserError::Open(format!("a bad redirect: {e}")))?;
        if !matches!(target.host_str(), Some("127.0.0.1" | "localhost")) {
            return Err(BrowserError::NotLoopback { origin: target.origin().ascii_serialization() });
        }
        self.http.client().get(target).send().await.map_err(fetch)?;
        Ok(())
    }
}

/// What `clat mcp` shows of a server's login, never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuthStatus {
    pub issuer: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub expires_at: Option<u64>,
    pub refreshable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expiring_in(lifetime: u64, left: u64) -> bool {
        let now = now_secs();
        let credentials = Credentials {
            resource: "https://a.example/mcp".into(),
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            client: ClientIdentity { client_id: "c".into(), client_secret: None, auth: ClientAuth::None },
            grant: Grant::AuthorizationCode,
            access_token: "t".into(),
            refresh_token: Some("r".into()),
            expires_at: Some(now + left),
            issued_at: Some(now + left - lifetime),
            scopes: vec![],
        };
        credentials.expiring()
    }

    #[test]
    fn a_token_is_refreshed_within_the_skew_or_half_its_lifetime() {
        let skew = AUTH_REFRESH_SKEW.as_secs();
        assert!(!expiring_in(3600, skew + 5));
        assert!(expiring_in(3600, skew - 5));
        // A token that lives 10 s is refreshed in its last 5 s, not before every request.
        assert!(!expiring_in(10, 8));
        assert!(expiring_in(10, 4));
        assert!(expiring_in(10, 0));
    }
}
