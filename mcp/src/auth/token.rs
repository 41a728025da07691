//! The token endpoint and the redirect, with the `oauth2` crate building the
//! requests: how the client authenticates (from what the server supports),
//! checking the browser's redirect (`state`, RFC 9207 `iss`), and turning a
//! token answer into stored credentials. Errors never carry the request.

use std::collections::HashMap;
use std::time::Duration;

use oauth2::{AuthType, ClientId, ClientSecret, TokenResponse, TokenUrl};

use super::credentials::{ClientAuth, ClientIdentity, Credentials, Grant, now_secs};
use super::discovery::ServerMetadata;
use super::error::{AuthError, Step};

/// How to authenticate at the token endpoint, from what the server supports
/// (RFC 8414: `client_secret_basic` when it does not say).
pub(super) fn pick_auth(metadata: &ServerMetadata, has_secret: bool) -> ClientAuth {
    if !has_secret {
        return ClientAuth::None;
    }
    match metadata.token_endpoint_auth_methods_supported.as_deref() {
        None => ClientAuth::ClientSecretBasic,
        Some(methods) if methods.iter().any(|m| m == "client_secret_basic") => ClientAuth::ClientSecretBasic,
        Some(methods) if methods.iter().any(|m| m == "client_secret_post") => ClientAuth::ClientSecretPost,
        Some(methods) if methods.iter().any(|m| m == "none") => ClientAuth::None,
        Some(_) => ClientAuth::ClientSecretBasic,
    }
}

/// An `oauth2` client that knows its token endpoint.
pub(super) type TokenClient = oauth2::basic::BasicClient<
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

/// The client `identity` at `token_endpoint`, authenticating the way it was
/// registered to (`step` names a bad endpoint URL).
pub(super) fn token_client(
    identity: &ClientIdentity,
    token_endpoint: &str,
    step: Step,
) -> Result<TokenClient, AuthError> {
    let token_url = TokenUrl::new(token_endpoint.to_string()).map_err(|e| AuthError::failed(step, e.to_string()))?;
    let mut client = oauth2::basic::BasicClient::new(ClientId::new(identity.client_id.clone()));
    match (identity.auth, &identity.client_secret) {
        (ClientAuth::ClientSecretBasic, Some(secret)) => {
            client = client.set_client_secret(ClientSecret::new(secret.clone())).set_auth_type(AuthType::BasicAuth);
        }
        (ClientAuth::ClientSecretPost, Some(secret)) => {
            client = client.set_client_secret(ClientSecret::new(secret.clone())).set_auth_type(AuthType::RequestBody);
        }
        _ => client = client.set_auth_type(AuthType::RequestBody),
    }
    Ok(client.set_token_uri(token_url))
}

/// The redirect's `code`, after its `state` and (RFC 9207) `iss` are checked.
pub(super) fn check_redirect(
    query: &HashMap<String, String>,
    state: &str,
    metadata: &ServerMetadata,
) -> Result<String, AuthError> {
    let step = Step::Redirect;
    if query.get("state").map(String::as_str) != Some(state) {
        return Err(AuthError::failed(step, "the redirect's state is not this login's; ignoring it"));
    }
    match query.get("iss") {
        Some(iss) if iss != &metadata.issuer => {
            return Err(AuthError::failed(
                step,
                format!("the redirect names the issuer {iss:?}, not {:?}; refusing it", metadata.issuer),
            ));
        }
        None if metadata.iss_parameter_supported => {
            return Err(AuthError::failed(
                step,
                "the authorization server promises an `iss` in its redirect and sent none; refusing it",
            ));
        }
        _ => {}
    }
    if let Some(error) = query.get("error") {
        let description =
            query.get("error_description").map(|d| format!(": {}", short_text(d.as_bytes()))).unwrap_or_default();
        return Err(AuthError::failed(
            Step::Authorization,
            format!("the authorization server answered {error}{description}"),
        ));
    }
    query.get("code").cloned().ok_or_else(|| AuthError::failed(step, "the redirect carries no code"))
}

pub(super) fn credentials_from(
    answer: &oauth2::basic::BasicTokenResponse,
    resource: &str,
    metadata: &ServerMetadata,
    client: ClientIdentity,
    grant: Grant,
    requested: &[String],
) -> Credentials {
    let mut credentials = Credentials {
        resource: resource.to_string(),
        issuer: metadata.issuer.clone(),
        token_endpoint: metadata.token_endpoint.to_string(),
        client,
        grant,
        access_token: String::new(),
        refresh_token: None,
        expires_at: None,
        issued_at: None,
        scopes: requested.to_vec(),
    };
    apply(&mut credentials, answer);
    credentials
}

pub(super) fn apply(credentials: &mut Credentials, answer: &oauth2::basic::BasicTokenResponse) {
    credentials.access_token = answer.access_token().secret().clone();
    if let Some(refresh) = answer.refresh_token() {
        credentials.refresh_token = Some(refresh.secret().clone());
    }
    let now = now_secs();
    credentials.issued_at = Some(now);
    credentials.expires_at = answer.expires_in().map(|d: Duration| now + d.as_secs());
    if let Some(scopes) = answer.scopes() {
        credentials.scopes = scopes.iter().map(|s| s.to_string()).collect();
    }
}

/// A token endpoint's failure, without the request (which holds secrets).
pub(super) fn token_error<E: std::error::Error>(
    error: &oauth2::RequestTokenError<E, oauth2::basic::BasicErrorResponse>,
) -> String {
    match error {
        oauth2::RequestTokenError::ServerResponse(response) => {
            let mut text = response.error().to_string();
            if let Some(description) = response.error_description() {
                text.push_str(&format!(": {}", short_text(description.as_bytes())));
            }
            format!("the token endpoint refused: {text}")
        }
        oauth2::RequestTokenError::Request(e) => format!("the token endpoint could not be reached: {e}"),
        oauth2::RequestTokenError::Parse(e, _) => format!("the token endpoint's answer is not a token: {e}"),
        oauth2::RequestTokenError::Other(e) => e.clone(),
    }
}

pub(super) fn short_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).chars().take(crate::limits::HTTP_ERROR_TEXT_MAX_CHARS).collect()
}
