//! Finding where and how to log in to an MCP server (the MCP authorization
//! spec's discovery): the protected-resource metadata (RFC 9728) at the URL a
//! challenge names, else at the well-known URL with the server's path
//! inserted, else at the well-known root; then the authorization server's
//! metadata (RFC 8414 and OpenID discovery, in the spec's order, with the
//! path-inserted forms for an issuer with a path), whose `issuer` must be the
//! issuer it was looked up for. A server that publishes no resource metadata
//! (the 2025-03-26 revision) is its own authorization server, with the
//! default endpoints when it publishes no metadata either.

use reqwest::Url;
use serde_json::Value;

use super::http::AuthHttp;
use super::{AuthError, Step};

const PRM_WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
const OAUTH_WELL_KNOWN: &str = "/.well-known/oauth-authorization-server";
const OPENID_WELL_KNOWN: &str = "/.well-known/openid-configuration";

/// A protected resource's metadata (RFC 9728 §2), as far as a client uses it.
#[derive(Debug, Clone)]
pub struct ResourceMetadata {
    pub resource: Url,
    /// The resource exactly as published: the `resource` parameter sent (RFC 8707).
    pub resource_id: String,
    pub authorization_servers: Vec<Url>,
    pub scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata (RFC 8414 §2), as far as a client uses it.
#[derive(Debug, Clone)]
pub struct ServerMetadata {
    pub issuer: String,
    pub authorization_endpoint: Url,
    pub token_endpoint: Url,
    pub registration_endpoint: Option<Url>,
    pub scopes_supported: Option<Vec<String>>,
    pub grant_types_supported: Option<Vec<String>>,
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// `None` when the metadata does not say (PKCE support is then unknown).
    pub code_challenge_methods_supported: Option<Vec<String>>,
    pub client_id_metadata_document_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    pub iss_parameter_supported: bool,
    /// Found no metadata document: the 2025-03-26 default endpoints.
    pub defaulted: bool,
}

impl ServerMetadata {
    /// Every endpoint a login uses must be `https:`, or `http:` on a loopback
    /// host (a local server): a `file:`, `javascript:`, `smb:` or `ms-msdt:`
    /// authorization endpoint never reaches the browser, and an authorization
    /// code or client secret never crosses a network in cleartext.
    pub fn check_endpoints(&self) -> Result<(), AuthError> {
        let endpoints = [
            ("authorization_endpoint", Some(&self.authorization_endpoint)),
            ("token_endpoint", Some(&self.token_endpoint)),
            ("registration_endpoint", self.registration_endpoint.as_ref()),
        ];
        for (field, url) in endpoints {
            let Some(url) = url else { continue };
            let allowed = match url.scheme() {
                "https" => true,
                "http" => is_loopback_host(url),
                _ => false,
            };
            if !allowed {
                let scheme = url.scheme();
                let host = url.host_str().unwrap_or("no host");
                return Err(AuthError::failed(
                    Step::ServerMetadata,
                    format!(
                        "the authorization server's `{field}` is a {scheme}: URL ({host}); only https:// (or http:// \
                         on this machine's loopback) is opened or sent to, so nothing was"
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Whether a URL's host is this machine's loopback (`localhost`, 127.0.0.0/8, ::1).
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// The server's URL as the resource it is (RFC 8707): no fragment.
pub fn canonical_resource(server: &Url) -> Url {
    let mut url = server.clone();
    url.set_fragment(None);
    url
}

/// The protected-resource metadata for `server`: at `named` (from the
/// challenge) when given, else path-inserted, else at the root. `Ok(None)`
/// when the server publishes none.
pub async fn resource_metadata(
    http: &AuthHttp,
    server: &Url,
    named: Option<&str>,
) -> Result<Option<ResourceMetadata>, AuthError> {
    let step = Step::ResourceMetadata;
    let candidates: Vec<Url> = match named {
        Some(named) => {
            let url = server.join(named).map_err(|e| {
                AuthError::failed(step, format!("the challenge names a bad metadata URL {named:?}: {e}"))
            })?;
            vec![url]
        }
        None => well_known_urls(server, PRM_WELL_KNOWN),
    };
    for url in candidates {
        let Some(document) = http.get_json(&url).await.map_err(|e| AuthError::failed(step, e.0))? else {
            continue;
        };
        let metadata =
            parse_resource_metadata(&document).map_err(|why| AuthError::failed(step, format!("{url}: {why}")))?;
        check_resource(server, &metadata.resource).map_err(|why| AuthError::failed(step, why))?;
        return Ok(Some(metadata));
    }
    Ok(None)
}

/// `https://host/.well-known/x/path` then `https://host/.well-known/x` (just
/// the latter for a server at the root).
fn well_known_urls(server: &Url, well_known: &str) -> Vec<Url> {
    let path = server.path().trim_end_matches('/');
    let mut urls = Vec::new();
    let mut at = |path: String| {
        let mut url = server.clone();
        url.set_path(&path);
        url.set_query(None);
        url.set_fragment(None);
        urls.push(url);
    };
    if !path.is_empty() {
        at(format!("{well_known}{path}"));
    }
    at(well_known.to_string());
    urls
}

fn strings(document: &Value, key: &str) -> Result<Option<Vec<String>>, String> {
    match document.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_string).ok_or_else(|| format!("`{key}` holds a non-string")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("`{key}` is not a list")),
    }
}

fn url_field(document: &Value, key: &str) -> Result<Option<Url>, String> {
    match document.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Url::parse(text).map(Some).map_err(|e| format!("`{key}` is not a URL: {e}")),
        Some(_) => Err(format!("`{key}` is not a string")),
    }
}

fn parse_resource_metadata(document: &Value) -> Result<ResourceMetadata, String> {
    let resource = url_field(document, "resource")?.ok_or("it names no `resource`")?;
    let resource_id = document.get("resource").and_then(Value::as_str).unwrap_or_default().to_string();
    let authorization_servers = strings(document, "authorization_servers")?
        .unwrap_or_default()
        .iter()
        .map(|s| Url::parse(s).map_err(|e| format!("the authorization server {s:?} is not a URL: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    if authorization_servers.is_empty() {
        return Err("it names no authorization server".into());
    }
    Ok(ResourceMetadata {
        resource,
        resource_id,
        authorization_servers,
        scopes_supported: strings(document, "scopes_supported")?,
    })
}

/// Whether `resource` is `server` as RFC 9728 §3.3 and §7.3 mean it: the
/// same origin, and the server's path at or under the resource's path. A
/// token is only ever sent where this holds.
pub fn covers(resource: &Url, server: &Url) -> bool {
    let base = resource.path().trim_end_matches('/');
    let path = server.path().trim_end_matches('/');
    resource.origin() == server.origin() && (base.is_empty() || path == base || path.starts_with(&format!("{base}/")))
}

/// The metadata's `resource` must be the server (see `covers`).
fn check_resource(server: &Url, resource: &Url) -> Result<(), String> {
    if covers(resource, server) {
        Ok(())
    } else {
        Err(format!(
            "the metadata is for the resource {resource}, not for this server ({server}); refusing to send it a token"
        ))
    }
}

/// The metadata of the authorization server `issuer`, found in the spec's
/// order and checked to be `issuer`'s.
pub async fn authorization_server(http: &AuthHttp, issuer: &Url) -> Result<ServerMetadata, AuthError> {
    let step = Step::ServerMetadata;
    let path = issuer.path().trim_end_matches('/');
    let at = |path: String| {
        let mut url = issuer.clone();
        url.set_path(&path);
        url.set_query(None);
        url.set_fragment(None);
        url
    };
    let candidates = if path.is_empty() {
        vec![at(OAUTH_WELL_KNOWN.into()), at(OPENID_WELL_KNOWN.into())]
    } else {
        vec![
            at(format!("{OAUTH_WELL_KNOWN}{path}")),
            at(format!("{OPENID_WELL_KNOWN}{path}")),
            at(format!("{path}{OPENID_WELL_KNOWN}")),
        ]
    };
    for url in &candidates {
        let Some(document) = http.get_json(url).await.map_err(|e| AuthError::failed(step, e.0))? else {
            continue;
        };
        let metadata =
            parse_server_metadata(&document).map_err(|why| AuthError::failed(step, format!("{url}: {why}")))?;
        if !same_issuer(&metadata.issuer, issuer) {
            return Err(AuthError::failed(
                step,
                format!("{url} names the issuer {:?}, not {:?}; refusing to use it", metadata.issuer, issuer.as_str()),
            ));
        }
        return Ok(metadata);
    }
    Err(AuthError::failed(
        step,
        format!("the authorization server {issuer} publishes no metadata (tried {})", list(&candidates)),
    ))
}

/// The metadata of a server that publishes no resource metadata (2025-03-26):
/// its origin's RFC 8414 document, else the default endpoints there.
pub async fn legacy_authorization_server(http: &AuthHttp, server: &Url) -> Result<ServerMetadata, AuthError> {
    let step = Step::ServerMetadata;
    let mut origin = server.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    let url = origin.join(OAUTH_WELL_KNOWN).map_err(|e| AuthError::failed(step, e.to_string()))?;
    if let Some(document) = http.get_json(&url).await.map_err(|e| AuthError::failed(step, e.0))? {
        return parse_server_metadata(&document).map_err(|why| AuthError::failed(step, format!("{url}: {why}")));
    }
    let endpoint = |path: &str| origin.join(path).map_err(|e| AuthError::failed(step, e.to_string()));
    Ok(ServerMetadata {
        issuer: origin.as_str().trim_end_matches('/').to_string(),
        authorization_endpoint: endpoint("/authorize")?,
        token_endpoint: endpoint("/token")?,
        registration_endpoint: Some(endpoint("/register")?),
        scopes_supported: None,
        grant_types_supported: None,
        token_endpoint_auth_methods_supported: None,
        code_challenge_methods_supported: None,
        client_id_metadata_document_supported: false,
        iss_parameter_supported: false,
        defaulted: true,
    })
}

fn list(urls: &[Url]) -> String {
    urls.iter().map(Url::as_str).collect::<Vec<_>>().join(", ")
}

/// RFC 8414 §3.3: the metadata's issuer is the issuer it was looked up for
/// (a trailing slash of an issuer without a path aside, which URL parsing adds).
pub fn same_issuer(named: &str, issuer: &Url) -> bool {
    named == issuer.as_str() || (issuer.path() == "/" && named == issuer.as_str().trim_end_matches('/'))
}

fn parse_server_metadata(document: &Value) -> Result<ServerMetadata, String> {
    let issuer = document.get("issuer").and_then(Value::as_str).ok_or("it names no `issuer`")?.to_string();
    Ok(ServerMetadata {
        issuer,
        authorization_endpoint: url_field(document, "authorization_endpoint")?
            .ok_or("it names no `authorization_endpoint`")?,
        token_endpoint: url_field(document, "token_endpoint")?.ok_or("it names no `token_endpoint`")?,
        registration_endpoint: url_field(document, "registration_endpoint")?,
        scopes_supported: strings(document, "scopes_supported")?,
        grant_types_supported: strings(document, "grant_types_supported")?,
        token_endpoint_auth_methods_supported: strings(document, "token_endpoint_auth_methods_supported")?,
        code_challenge_methods_supported: strings(document, "code_challenge_methods_supported")?,
        client_id_metadata_document_supported: document
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        iss_parameter_supported: document
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        defaulted: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_known_urls_insert_the_path_then_fall_back_to_the_root() {
        let server = Url::parse("https://a.example/tenant/mcp?x=1").unwrap();
        let urls: Vec<String> = well_known_urls(&server, PRM_WELL_KNOWN).iter().map(|u| u.to_string()).collect();
        assert_eq!(
            urls,
            [
                "https://a.example/.well-known/oauth-protected-resource/tenant/mcp",
                "https://a.example/.well-known/oauth-protected-resource"
            ]
        );
        let root = Url::parse("https://a.example/").unwrap();
        assert_eq!(well_known_urls(&root, PRM_WELL_KNOWN).len(), 1);
    }

    #[test]
    fn the_resource_must_be_this_server() {
        let server = Url::parse("https://a.example/tenant/mcp").unwrap();
        for ok in ["https://a.example/tenant/mcp", "https://a.example/tenant", "https://a.example/"] {
            assert!(check_resource(&server, &Url::parse(ok).unwrap()).is_ok(), "{ok}");
        }
        for bad in [
            "https://b.example/tenant/mcp",
            "https://a.example/other",
            "https://a.example/tenant/mcpx",
            "http://a.example/tenant/mcp",
        ] {
            assert!(check_resource(&server, &Url::parse(bad).unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn endpoints_must_be_https_or_loopback_http() {
        let metadata = |authorize: &str, token: &str| ServerMetadata {
            issuer: "https://as.example".into(),
            authorization_endpoint: Url::parse(authorize).unwrap(),
            token_endpoint: Url::parse(token).unwrap(),
            registration_endpoint: None,
            scopes_supported: None,
            grant_types_supported: None,
            token_endpoint_auth_methods_supported: None,
            code_challenge_methods_supported: None,
            client_id_metadata_document_supported: false,
            iss_parameter_supported: false,
            defaulted: false,
        };
        for (authorize, token) in [
            ("https://as.example/authorize", "https://as.example/token"),
            ("http://127.0.0.1:9/authorize", "http://localhost:9/token"),
            ("http://[::1]:9/authorize", "http://127.0.0.2/token"),
        ] {
            assert!(metadata(authorize, token).check_endpoints().is_ok(), "{authorize} {token}");
        }
        for (authorize, token, says) in [
            ("file:///etc/passwd", "https://as.example/token", "`authorization_endpoint` is a file: URL"),
            ("javascript:alert(1)", "https://as.example/token", "is a javascript: URL"),
            ("smb://evil.example/share", "https://as.example/token", "is a smb: URL"),
            ("ms-msdt:/id", "https://as.example/token", "is a ms-msdt: URL"),
            ("https://as.example/authorize", "http://as.example/token", "`token_endpoint` is a http: URL (as.example)"),
            ("http://10.0.0.1/authorize", "https://as.example/token", "is a http: URL (10.0.0.1)"),
        ] {
            let why = metadata(authorize, token).check_endpoints().unwrap_err().to_string();
            assert!(why.contains(says), "{authorize} {token}: {why}");
        }
    }

    #[test]
    fn issuers_compare_as_strings_but_for_the_root_slash() {
        let root = Url::parse("https://as.example").unwrap();
        assert!(same_issuer("https://as.example", &root));
        assert!(same_issuer("https://as.example/", &root));
        assert!(!same_issuer("https://evil.example", &root));
        let tenant = Url::parse("https://as.example/tenant1").unwrap();
        assert!(same_issuer("https://as.example/tenant1", &tenant));
        assert!(!same_issuer("https://as.example/tenant1/", &tenant));
    }
}
