//! OAuth for Streamable HTTP servers, as the MCP authorization spec describes
//! it. An `Authorizer` belongs to one configured server: it holds the
//! server's current token, puts it on every request, and reacts when the
//! server answers 401 (refresh, else log in) or 403 `insufficient_scope`
//! (log in again for more scope). Logging in is discovery (`discovery.rs`),
//! a client identity (a pre-registered client, a Client ID Metadata Document,
//! or dynamic registration, in that order), then either the authorization
//! code grant with PKCE (S256) and the `resource` parameter through a browser
//! and a loopback redirect (`loopback.rs`), or the client-credentials grant.
//! The `oauth2` crate builds and parses the token requests (`token.rs`);
//! what is written here is the MCP-specific discovery and the choices
//! between its steps. `credentials.rs` holds what a login is configured with
//! and keeps, `error.rs` why one failed.
//!
//! The crate stays host-agnostic: the host stores tokens through
//! `CredentialStore` and shows the user the login page through `Browser`.
//! Without a browser (a headless command) a login that is needed fails at
//! once with `AuthError::LoginRequired`, never waits. Tokens never appear in
//! an error or a `Debug` form, and a token is only ever put on requests to the
//! resource it was issued for.

mod challenge;
mod credentials;
mod discovery;
mod error;
mod http;
mod loopback;
mod token;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use oauth2::{AuthUrl, AuthorizationCode, CsrfToken, PkceCodeChallenge, RedirectUrl, RefreshToken, Scope};
use reqwest::Url;
use serde_json::{Value, json};

pub use challenge::{Challenge, parse_bearer};
pub use credentials::{
    AuthStatus, Browser, ClientAuth, ClientIdentity, CredentialStore, Credentials, Grant, MemoryStore, OAuthSettings,
    ScriptedBrowser,
};
pub use discovery::{ResourceMetadata, ServerMetadata, canonical_resource};
pub use error::{AuthError, BrowserError, LoopbackError, Step, StoreError};
pub use http::AuthHttp;
pub use loopback::Loopback;

use crate::limits::AUTH_LOGIN_TIMEOUT;
use crate::sync::lock;

use token::{apply, check_redirect, credentials_from, pick_auth, short_text, token_client, token_error};

/// The token on the requests, with the generation it was set at (a 401 for an
/// older generation is answered by the newer token, not by another login).
struct Current {
    generation: u64,
    credentials: Credentials,
}

/// One server's OAuth state.
pub struct Authorizer {
    server: String,
    url: Url,
    resource: Url,
    settings: OAuthSettings,
    store: std::sync::Arc<dyn CredentialStore>,
    browser: Option<std::sync::Arc<dyn Browser>>,
    /// Made at the first authorization step (a command that never needs one
    /// never builds an HTTP client for it).
    http: std::sync::OnceLock<AuthHttp>,
    /// The stored token, read from the store at first use (a command that
    /// never talks to the server never reads it); see `state`.
    current: Mutex<Option<Current>>,
    loaded: std::sync::OnceLock<()>,
    generation: AtomicU64,
    /// Held while refreshing or logging in, so concurrent 401s cause one.
    flow: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer").field("server", &self.server).field("resource", &self.resource.as_str()).finish()
    }
}

impl Authorizer {
    /// The authorizer of server `server` at `url`; it reads its stored token
    /// (if issued for this resource) at first use, not here. `browser`: how to
    /// show a login page; `None` for a command that must not wait on a user.
    pub fn new(
        server: &str,
        url: &str,
        settings: OAuthSettings,
        store: std::sync::Arc<dyn CredentialStore>,
        browser: Option<std::sync::Arc<dyn Browser>>,
    ) -> Result<Authorizer, AuthError> {
        let url = Url::parse(url).map_err(|e| AuthError::failed(Step::ResourceMetadata, format!("a bad URL: {e}")))?;
        let resource = canonical_resource(&url);
        Ok(Authorizer {
            server: server.to_string(),
            url,
            resource,
            settings,
            store,
            browser,
            http: std::sync::OnceLock::new(),
            current: Mutex::new(None),
            loaded: std::sync::OnceLock::new(),
            generation: AtomicU64::new(1),
            flow: tokio::sync::Mutex::new(()),
        })
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The current token, loaded from the store the first time (only a
    /// token issued for this resource is taken).
    fn state(&self) -> std::sync::MutexGuard<'_, Option<Current>> {
        self.loaded.get_or_init(|| match self.store.load() {
            Ok(stored) => {
                *lock(&self.current) = stored
                    .filter(|c| Url::parse(&c.resource).is_ok_and(|r| discovery::covers(&r, &self.resource)))
                    .map(|credentials| Current { generation: 1, credentials });
            }
            Err(e) => tracing::warn!("{}: cannot read its stored login ({e}); starting without one", self.server),
        });
        lock(&self.current)
    }

    fn http(&self) -> Result<&AuthHttp, AuthError> {
        if let Some(http) = self.http.get() {
            return Ok(http);
        }
        let made = AuthHttp::new().map_err(|e| AuthError::failed(Step::ResourceMetadata, e.0))?;
        Ok(self.http.get_or_init(|| made))
    }

    /// The login state, if there is a token.
    pub fn status(&self) -> Option<AuthStatus> {
        self.state().as_ref().map(|c| AuthStatus {
            issuer: c.credentials.issuer.clone(),
            client_id: c.credentials.client.client_id.clone(),
            scopes: c.credentials.scopes.clone(),
            expires_at: c.credentials.expires_at,
            refreshable: c.credentials.refresh_token.is_some(),
        })
    }

    /// The `Authorization` value for the next request and its generation,
    /// refreshing first a token that is about to expire.
    pub async fn bearer(&self) -> Option<(u64, String)> {
        let expiring = self
            .state()
            .as_ref()
            .map(|c| (c.generation, c.credentials.expiring() && c.credentials.refresh_token.is_some()));
        if let Some((generation, true)) = expiring {
            let _flow = self.flow.lock().await;
            if self.generation() == generation
                && let Err(e) = self.refresh().await
            {
                tracing::info!("{}: refreshing the expiring token failed: {e}", self.server);
            }
        }
        self.state().as_ref().map(|c| (c.generation, format!("Bearer {}", c.credentials.access_token)))
    }

    fn generation(&self) -> u64 {
        self.state().as_ref().map_or(0, |c| c.generation)
    }

    /// React to a 401, or a 403 with `insufficient_scope`, of a request that
    /// carried the token of generation `used`: when `Ok`, send it again.
    pub async fn challenged(&self, used: Option<u64>, status: u16, challenge: &Challenge) -> Result<(), AuthError> {
        let _flow = self.flow.lock().await;
        let step_up = status == 403 && challenge.is_insufficient_scope();
        let current = self.generation();
        if !step_up && current != 0 && used != Some(current) {
            // Another request refreshed or logged in meanwhile: send this one with that token.
            return Ok(());
        }
        if step_up {
            let mut scopes = self.state().as_ref().map(|c| c.credentials.scopes.clone()).unwrap_or_default();
            for scope in challenge.scope.iter().flatten() {
                if !scopes.contains(scope) {
                    scopes.push(scope.clone());
                }
            }
            return self.authorize(challenge, Some(scopes)).await;
        }
        let refreshable = self.state().as_ref().is_some_and(|c| c.credentials.refresh_token.is_some());
        if refreshable && used.is_some() {
            match self.refresh().await {
                Ok(()) => return Ok(()),
                Err(e) => tracing::info!("{}: the refresh failed ({e}); logging in again", self.server),
            }
        }
        self.authorize(challenge, None).await
    }

    /// Log in now (`clat mcp login`): discovery starts from the challenge of
    /// an unauthenticated request to the server.
    pub async fn login(&self) -> Result<AuthStatus, AuthError> {
        let _flow = self.flow.lock().await;
        let (status, challenge) = self.probe().await?;
        // A server that neither asks (401) nor publishes OAuth metadata has nothing to log in to.
        if status != 401
            && challenge.resource_metadata.is_none()
            && discovery::resource_metadata(self.http()?, &self.url, None).await?.is_none()
        {
            return Err(AuthError::failed(
                Step::ResourceMetadata,
                format!(
                    "the server does not ask for OAuth: it answered a request without a token with {status} and \
                     publishes no OAuth metadata"
                ),
            ));
        }
        self.authorize(&challenge, None).await?;
        self.status().ok_or(AuthError::LoginRequired)
    }

    /// Forget the server's token.
    pub fn logout(&self) -> Result<bool, AuthError> {
        let had = self.state().take().is_some();
        self.store.remove().map_err(|e| AuthError::failed(Step::Storage, e.to_string()))?;
        Ok(had)
    }

    /// The status and challenge an unauthenticated POST gets.
    async fn probe(&self) -> Result<(u16, Challenge), AuthError> {
        let body = json!({ "jsonrpc": "2.0", "id": 0, "method": "ping" });
        let response = self
            .http()?
            .client()
            .post(self.url.clone())
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .json(&body)
            .timeout(crate::limits::AUTH_HTTP_TIMEOUT)
            .send()
            .await
            .map_err(|e| AuthError::failed(Step::ResourceMetadata, format!("the server did not answer: {e}")))?;
        Ok((response.status().as_u16(), Challenge::from_headers(response.headers())))
    }

    /// Refresh the current token (the caller holds `flow`).
    async fn refresh(&self) -> Result<(), AuthError> {
        let credentials = self.state().as_ref().map(|c| c.credentials.clone()).ok_or(AuthError::LoginRequired)?;
        let refresh_token = credentials.refresh_token.clone().ok_or(AuthError::LoginRequired)?;
        let client = token_client(&credentials.client, &credentials.token_endpoint, Step::Refresh)?;
        let refresh_token = RefreshToken::new(refresh_token);
        let answer = client
            .exchange_refresh_token(&refresh_token)
            .add_extra_param("resource", credentials.resource.clone())
            .request_async(self.http()?)
            .await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                // A refresh token the server no longer honours is of no more use.
                if matches!(e, oauth2::RequestTokenError::ServerResponse(_)) {
                    *self.state() = None;
                    let _ = self.store.remove();
                }
                return Err(AuthError::failed(Step::Refresh, token_error(&e)));
            }
        };
        let mut refreshed = credentials.clone();
        apply(&mut refreshed, &answer);
        if refreshed.refresh_token.is_none() {
            refreshed.refresh_token = credentials.refresh_token;
        }
        self.keep(refreshed)
    }

    fn keep(&self, credentials: Credentials) -> Result<(), AuthError> {
        self.store.save(&credentials).map_err(|e| AuthError::failed(Step::Storage, e.to_string()))?;
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        *self.state() = Some(Current { generation, credentials });
        Ok(())
    }

    /// Discover, register and get a token (the caller holds `flow`).
    async fn authorize(&self, challenge: &Challenge, scopes: Option<Vec<String>>) -> Result<(), AuthError> {
        let grant = self.settings.grant;
        if grant == Grant::AuthorizationCode && self.browser.is_none() {
            // Only a server that says it uses OAuth is worth a login.
            let says_oauth = challenge.resource_metadata.is_some()
                || matches!(discovery::resource_metadata(self.http()?, &self.url, None).await, Ok(Some(_)));
            return Err(if says_oauth { AuthError::LoginRequired } else { AuthError::NotOAuth });
        }
        let prm = discovery::resource_metadata(self.http()?, &self.url, challenge.resource_metadata.as_deref()).await?;
        let (resource, metadata) = match &prm {
            Some(prm) => {
                let issuer = &prm.authorization_servers[0];
                (prm.resource_id.clone(), discovery::authorization_server(self.http()?, issuer).await?)
            }
            None => (self.resource.to_string(), discovery::legacy_authorization_server(self.http()?, &self.url).await?),
        };
        metadata.check_endpoints()?;
        let mut scopes = scopes
            .or_else(|| challenge.scope.clone())
            .or_else(|| (!self.settings.scopes.is_empty()).then(|| self.settings.scopes.clone()))
            .or_else(|| prm.as_ref().and_then(|p| p.scopes_supported.clone()))
            .unwrap_or_default();
        let offers_offline =
            metadata.scopes_supported.as_ref().is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if grant == Grant::AuthorizationCode && offers_offline && !scopes.iter().any(|s| s == "offline_access") {
            scopes.push("offline_access".into());
        }
        let credentials = match grant {
            Grant::ClientCredentials => self.client_credentials(&metadata, &resource, &scopes).await?,
            Grant::AuthorizationCode => self.authorization_code(&metadata, &resource, &scopes).await?,
        };
        self.keep(credentials)
    }

    /// The client-credentials grant with the configured client.
    async fn client_credentials(
        &self,
        metadata: &ServerMetadata,
        resource: &str,
        scopes: &[String],
    ) -> Result<Credentials, AuthError> {
        let (Some(client_id), Some(secret)) = (&self.settings.client_id, &self.settings.client_secret) else {
            return Err(AuthError::failed(
                Step::Registration,
                "the client-credentials grant needs a configured client_id and client_secret",
            ));
        };
        let auth = pick_auth(metadata, true);
        let client = ClientIdentity { client_id: client_id.clone(), client_secret: Some(secret.clone()), auth };
        let oauth = token_client(&client, metadata.token_endpoint.as_str(), Step::Token)?;
        let answer = oauth
            .exchange_client_credentials()
            .add_scopes(scopes.iter().cloned().map(Scope::new))
            .add_extra_param("resource", resource.to_string())
            .request_async(self.http()?)
            .await
            .map_err(|e| AuthError::failed(Step::Token, token_error(&e)))?;
        Ok(credentials_from(&answer, resource, metadata, client, Grant::ClientCredentials, scopes))
    }

    /// The authorization code grant through the browser and the loopback redirect.
    async fn authorization_code(
        &self,
        metadata: &ServerMetadata,
        resource: &str,
        scopes: &[String],
    ) -> Result<Credentials, AuthError> {
        let browser = self.browser.clone().ok_or(AuthError::LoginRequired)?;
        // PKCE with S256 is required; metadata that does not offer it (or does
        // not say, outside the 2025-03-26 defaults) is refused.
        let pkce_ok = match &metadata.code_challenge_methods_supported {
            Some(methods) => methods.iter().any(|m| m == "S256"),
            None => metadata.defaulted,
        };
        if !pkce_ok {
            return Err(AuthError::failed(
                Step::Authorization,
                "the authorization server does not offer PKCE with S256; refusing to log in without it",
            ));
        }
        let loopback = Loopback::bind(self.settings.callback_port.unwrap_or(0))
            .await
            .map_err(|e| AuthError::failed(Step::Redirect, e.to_string()))?;
        let redirect = loopback.redirect_uri().clone();
        let client = self.client_identity(metadata, &redirect, scopes).await?;
        let auth_url = AuthUrl::from_url(metadata.authorization_endpoint.clone());
        let oauth = token_client(&client, metadata.token_endpoint.as_str(), Step::Token)?
            .set_auth_uri(auth_url)
            .set_redirect_uri(RedirectUrl::from_url(redirect.clone()));
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (page, state) = oauth
            .authorize_url(CsrfToken::new_random)
            .add_scopes(scopes.iter().cloned().map(Scope::new))
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", resource.to_string())
            .url();
        tracing::info!("{}: logging in at {}", self.server, metadata.authorization_endpoint);
        // The browser and the listener run together: a scripted browser's
        // request to the redirect is only answered once the listener reads it.
        let answer = async {
            let waiting = loopback.wait();
            tokio::pin!(waiting);
            tokio::select! {
                query = &mut waiting => query.map_err(|e| AuthError::failed(Step::Redirect, e.to_string())),
                opened = browser.open(&page) => {
                    opened.map_err(|e| AuthError::failed(Step::Authorization, e.to_string()))?;
                    waiting.await.map_err(|e| AuthError::failed(Step::Redirect, e.to_string()))
                }
            }
        };
        let query = tokio::time::timeout(AUTH_LOGIN_TIMEOUT, answer).await.map_err(|_| {
            AuthError::failed(Step::Redirect, format!("no redirect arrived within {} s", AUTH_LOGIN_TIMEOUT.as_secs()))
        })??;
        let code = check_redirect(&query, state.secret(), metadata)?;
        let answer = oauth
            .exchange_code(AuthorizationCode::new(code))
            .set_pkce_verifier(verifier)
            .add_extra_param("resource", resource.to_string())
            .request_async(self.http()?)
            .await
            .map_err(|e| AuthError::failed(Step::Token, token_error(&e)))?;
        Ok(credentials_from(&answer, resource, metadata, client, Grant::AuthorizationCode, scopes))
    }

    /// The client id to log in with: the configured one, else this client's
    /// metadata document where the server supports it, else a registration.
    async fn client_identity(
        &self,
        metadata: &ServerMetadata,
        redirect: &Url,
        scopes: &[String],
    ) -> Result<ClientIdentity, AuthError> {
        if let Some(client_id) = &self.settings.client_id {
            let secret = self.settings.client_secret.clone();
            return Ok(ClientIdentity {
                client_id: client_id.clone(),
                auth: pick_auth(metadata, secret.is_some()),
                client_secret: secret,
            });
        }
        // A client registered before keeps its identity (and its secret).
        if let Some(current) = self.state().as_ref()
            && current.credentials.issuer == metadata.issuer
            && !current.credentials.client.client_id.starts_with("https://")
        {
            return Ok(current.credentials.client.clone());
        }
        if metadata.client_id_metadata_document_supported
            && let Some(document) = &self.settings.client_metadata_url
        {
            return Ok(ClientIdentity { client_id: document.clone(), client_secret: None, auth: ClientAuth::None });
        }
        let Some(endpoint) = &metadata.registration_endpoint else {
            return Err(AuthError::failed(
                Step::Registration,
                "the authorization server offers no registration; configure a pre-registered `oauth.client_id`",
            ));
        };
        let auth = pick_auth(metadata, false);
        let requested = match metadata.token_endpoint_auth_methods_supported.as_deref() {
            Some(methods) if !methods.iter().any(|m| m == "none") => {
                if methods.iter().any(|m| m == "client_secret_basic") {
                    ClientAuth::ClientSecretBasic
                } else {
                    ClientAuth::ClientSecretPost
                }
            }
            _ => auth,
        };
        let mut body = json!({
            "client_name": self.settings.client_name.clone().unwrap_or_else(|| "CLAT".into()),
            "redirect_uris": [redirect.as_str()],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": requested.name(),
            // A command-line client with a loopback redirect (SEP-837, OpenID DCR §2).
            "application_type": "native",
        });
        if !scopes.is_empty() {
            body["scope"] = json!(scopes.join(" "));
        }
        let request = oauth2::http::Request::builder()
            .method(oauth2::http::Method::POST)
            .uri(endpoint.as_str())
            .header(oauth2::http::header::CONTENT_TYPE, "application/json")
            .header(oauth2::http::header::ACCEPT, "application/json")
            .body(serde_json::to_vec(&body).unwrap_or_default())
            .map_err(|e| AuthError::failed(Step::Registration, e.to_string()))?;
        let answer = self.http()?.send(request).await.map_err(|e| AuthError::failed(Step::Registration, e.0))?;
        if !answer.status().is_success() {
            return Err(AuthError::failed(
                Step::Registration,
                format!("{endpoint} answered {}: {}", answer.status(), short_text(answer.body())),
            ));
        }
        let registered: Value = serde_json::from_slice(answer.body())
            .map_err(|e| AuthError::failed(Step::Registration, format!("the answer is not JSON: {e}")))?;
        let client_id = registered
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or_else(|| AuthError::failed(Step::Registration, "the answer names no client_id"))?
            .to_string();
        let client_secret = registered.get("client_secret").and_then(Value::as_str).map(str::to_string);
        let auth = match registered.get("token_endpoint_auth_method").and_then(Value::as_str) {
            Some("client_secret_basic") if client_secret.is_some() => ClientAuth::ClientSecretBasic,
            Some("client_secret_post") if client_secret.is_some() => ClientAuth::ClientSecretPost,
            Some("none") => ClientAuth::None,
            _ => pick_auth(metadata, client_secret.is_some()),
        };
        Ok(ClientIdentity { client_id, client_secret, auth })
    }
}
