//! Servers from the MCP Registry (`clat mcp add NAME --from-registry
//! SERVER[@VERSION]`): one version's `server.json` read from a registry that
//! speaks the official `/v0.1` API (the official one or a subregistry, by
//! URL), refused unless its status is `active`, and turned into an `mcp.json`
//! entry — an npm, PyPI or OCI package run over stdio (`npx`, `uvx`,
//! `docker run`) or a Streamable HTTP remote — with its version pinned and
//! every value the user supplies (environment variables, headers, arguments)
//! written as a `${VAR}` reference, never as a value. Nothing here starts
//! anything: the entry and what it will do are shown, then written.
//!
//! The document is untrusted: its size and the request's time are bounded
//! (`MCP_REGISTRY_DOCUMENT_MAX_BYTES`, `MCP_REGISTRY_REQUEST_TIMEOUT`), a
//! redirect may not leave the registry's origin, a version that is a range or
//! `latest` is refused (nothing would be pinned; for npm, only a full
//! `MAJOR.MINOR.PATCH` pins), a name or value that would read as an option or
//! break a `${…}` reference is refused, a control character in what the entry
//! runs is refused, and every other text shown is cleaned of them.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::limits::{MCP_REGISTRY_DOCUMENT_MAX_BYTES, MCP_REGISTRY_REDIRECTS_MAX, MCP_REGISTRY_REQUEST_TIMEOUT};
use crate::supply::download::{BodyError, bounded_body, error_chain};

mod entry;

use entry::{Candidate, Made, package_via};
#[cfg(test)]
use entry::{is_full_semver, pinned};

/// The registry `--from-registry` reads when neither `--registry` nor
/// `CLAT_MCP_REGISTRY` names another.
pub const OFFICIAL_MCP_REGISTRY: &str = "https://registry.modelcontextprotocol.io";
/// The environment variable naming the registry (a subregistry's base URL).
pub const MCP_REGISTRY_ENV: &str = "CLAT_MCP_REGISTRY";
/// Where the official registry keeps its metadata of a version.
const OFFICIAL_META_KEY: &str = "io.modelcontextprotocol.registry/official";

/// Which of a server's ways to run `--via` chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Npm,
    Pypi,
    Oci,
    Remote,
}

impl Via {
    pub fn parse(text: &str) -> Option<Via> {
        match text {
            "npm" => Some(Via::Npm),
            "pypi" => Some(Via::Pypi),
            "oci" => Some(Via::Oci),
            "remote" => Some(Via::Remote),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Via::Npm => "npm",
            Via::Pypi => "pypi",
            Via::Oci => "oci",
            Via::Remote => "remote",
        }
    }
}

/// Why a server could not be taken from the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("{0}")]
    Usage(String),
    #[error("the MCP registry at {registry} could not be read: {why}")]
    Unreachable { registry: String, why: String },
    #[error("the MCP registry at {registry} has no server {server:?} at version {version:?}")]
    NotFound { registry: String, server: String, version: String },
    #[error("the MCP registry at {registry} answered what is not a server version: {why}")]
    Malformed { registry: String, why: String },
    #[error("{server} {version} is {status} in the registry{reason}; nothing was added (`@VERSION` chooses another)")]
    NotActive { server: String, version: String, status: String, reason: String },
    #[error("{server} {version} offers no way CLAT can run: {}", .reasons.join("; "))]
    NothingRunnable { server: String, version: String, reasons: Vec<String> },
}

/// Where an entry came from: kept in it as `from_registry`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub registry: String,
    pub server: String,
    pub version: String,
}

/// A value the user supplies through CLAT's environment: the entry holds
/// only `${name}` (or `${name:-default}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    /// The variable's name in CLAT's environment.
    pub variable: String,
    /// What it fills: `env NAME`, `header X-Key`, `argument --port`, `url`.
    pub fills: String,
    pub required: bool,
    pub secret: bool,
    pub default: Option<String>,
    pub choices: Vec<String>,
    pub description: String,
}

/// A server version turned into an `mcp.json` entry, with what it will do.
#[derive(Debug, Clone)]
pub struct RegistryServer {
    pub source: Source,
    pub description: String,
    pub via: Via,
    /// The `mcp.json` entry (with `from_registry`).
    pub entry: Value,
    /// What starting it does: the command line, or the URL contacted.
    pub runs: String,
    /// The effect the server gets, in a sentence.
    pub effect: String,
    pub needs: Vec<Needed>,
    /// The server's other ways CLAT could run, each with the `--via` that takes it.
    pub alternatives: Vec<String>,
    /// Its ways CLAT cannot run, each with why.
    pub passed_over: Vec<String>,
}

/// `SERVER[@VERSION]` (no version: the latest).
pub fn parse_reference(text: &str) -> Result<(String, String), RegistryError> {
    let (server, version) = match text.rsplit_once('@') {
        Some((server, version)) if !server.is_empty() => (server, version),
        _ => (text, "latest"),
    };
    let name_ok = server.split_once('/').is_some_and(|(ns, n)| {
        !ns.is_empty()
            && !n.is_empty()
            && ns.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    });
    if !name_ok {
        return Err(RegistryError::Usage(format!(
            "--from-registry {text:?}: give a registry server name, NAMESPACE/NAME (e.g. io.github.owner/server), \
             optionally @VERSION"
        )));
    }
    if version.is_empty() || version.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(RegistryError::Usage(format!(
            "--from-registry {text:?}: the version after @ is empty or malformed"
        )));
    }
    Ok((server.to_string(), version.to_string()))
}

/// The registry's base URL: `--registry`, else `CLAT_MCP_REGISTRY`, else the
/// official one; https, or http to this machine only.
pub fn registry_base(flag: Option<&str>) -> Result<url::Url, RegistryError> {
    let text = match flag {
        Some(url) => url.to_string(),
        None => std::env::var(MCP_REGISTRY_ENV).ok().filter(|v| !v.is_empty()).unwrap_or(OFFICIAL_MCP_REGISTRY.into()),
    };
    // Shown without its user and password (redaction removes a URL's), even when it does not parse.
    let shown = crate::redact::redact(&text);
    let usage = |why: &str| RegistryError::Usage(format!("the MCP registry URL {shown:?} {why}"));
    let url = url::Url::parse(&text).map_err(|e| usage(&format!("is not a URL: {e}")))?;
    // What would be written into mcp.json as the entry's origin holds no secret.
    if !url.username().is_empty() || url.password().is_some() || url.query().is_some() || url.fragment().is_some() {
        return Err(usage("holds a user, a password, a query or a fragment: give the registry's base URL alone"));
    }
    let loopback = url.host_str().is_some_and(crate::supply::download::is_loopback_host);
    match url.scheme() {
        "https" => Ok(url),
        "http" if loopback => Ok(url),
        "http" => Err(usage("is plain http to another machine: give its https:// URL")),
        _ => Err(usage("is not an https:// URL")),
    }
}

/// `GET {base}/v0.1/servers/{server}/versions/{version}`, bounded.
pub async fn fetch(base: &url::Url, server: &str, version: &str) -> Result<Value, RegistryError> {
    let registry = base.as_str().trim_end_matches('/').to_string();
    let unreachable = |why: String| RegistryError::Unreachable { registry: registry.clone(), why };
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|_| unreachable("its URL cannot hold a path".into()))?
        .pop_if_empty()
        .extend(["v0.1", "servers", server, "versions", version]);
    let origin = base.origin();
    let policy = crate::supply::download::redirect_policy(MCP_REGISTRY_REDIRECTS_MAX, move |_, next| {
        if next.origin() == origin {
            return Ok(());
        }
        Err(format!("a redirect to another origin ({}) is not followed", next.origin().ascii_serialization()))
    });
    let client = reqwest::Client::builder()
        .redirect(policy)
        .timeout(MCP_REGISTRY_REQUEST_TIMEOUT)
        .build()
        .map_err(|e| unreachable(format!("the HTTP client could not be built: {e}")))?;
    let response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| unreachable(error_chain(&e)))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(RegistryError::NotFound { registry, server: server.into(), version: version.into() });
    }
    let body = match bounded_body(response, MCP_REGISTRY_DOCUMENT_MAX_BYTES).await {
        Ok(body) => body,
        Err(BodyError::TooLarge) => {
            let why = format!("the answer is over {MCP_REGISTRY_DOCUMENT_MAX_BYTES} bytes");
            return Err(RegistryError::Malformed { registry, why });
        }
        Err(BodyError::Read(why)) => return Err(unreachable(why)),
    };
    if !status.is_success() {
        let said = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(shown))
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(unreachable(format!("{url} answered {status}{said}")));
    }
    serde_json::from_slice(&body).map_err(|e| RegistryError::Malformed { registry, why: e.to_string() })
}

/// Text of the document as it may be shown: control characters replaced, at most 200 characters.
fn shown(text: &str) -> String {
    let clean: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match clean.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &clean[..at]),
        None => clean,
    }
}

#[derive(Deserialize)]
struct ServerResponse {
    server: ServerDetail,
    #[serde(rename = "_meta", default)]
    meta: Map<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServerDetail {
    name: String,
    #[serde(default)]
    description: String,
    version: Option<String>,
    /// Where documents before the `_meta` split kept it.
    status: Option<String>,
    #[serde(default)]
    packages: Vec<Package>,
    #[serde(default)]
    remotes: Vec<Transport>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Package {
    registry_type: String,
    registry_base_url: Option<String>,
    identifier: String,
    version: Option<String>,
    transport: Option<Transport>,
    #[serde(default)]
    runtime_arguments: Vec<Argument>,
    #[serde(default)]
    package_arguments: Vec<Argument>,
    #[serde(default)]
    environment_variables: Vec<KeyValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Transport {
    #[serde(rename = "type")]
    kind: String,
    url: Option<String>,
    #[serde(default)]
    headers: Vec<KeyValue>,
    #[serde(default)]
    variables: BTreeMap<String, Input>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
struct Input {
    #[serde(default)]
    description: String,
    #[serde(default)]
    is_required: bool,
    value: Option<String>,
    #[serde(default)]
    is_secret: bool,
    default: Option<String>,
    #[serde(default)]
    choices: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Argument {
    #[serde(rename = "type")]
    kind: String,
    name: Option<String>,
    value_hint: Option<String>,
    #[serde(flatten)]
    input: Input,
    #[serde(default)]
    variables: BTreeMap<String, Input>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct KeyValue {
    name: String,
    #[serde(flatten)]
    input: Input,
    #[serde(default)]
    variables: BTreeMap<String, Input>,
}

/// Turns one registry answer (a `ServerResponse`) into the entry of the
/// server CLAT will call `local_name`, or says why not; `asked` (server,
/// version or `latest`): what the answer must be.
pub fn entry_from_document(
    registry: &str,
    local_name: &str,
    asked: Option<(&str, &str)>,
    document: &Value,
    via: Option<Via>,
) -> Result<RegistryServer, RegistryError> {
    let registry = registry.trim_end_matches('/').to_string();
    let response: ServerResponse = serde_json::from_value(document.clone())
        .map_err(|e| RegistryError::Malformed { registry: registry.clone(), why: e.to_string() })?;
    let detail = response.server;
    let server = shown(&detail.name);
    let version = detail.version.clone().map(|v| shown(&v)).unwrap_or_else(|| "(no version)".into());
    let official = response.meta.get(OFFICIAL_META_KEY);
    let status =
        official.and_then(|m| m.get("status")).and_then(Value::as_str).or(detail.status.as_deref()).unwrap_or("active");
    if status != "active" {
        let message = official.and_then(|m| m.get("statusMessage")).and_then(Value::as_str);
        let reason = message.map(|m| format!(": {}", shown(m))).unwrap_or_default();
        return Err(RegistryError::NotActive { server, version, status: shown(status), reason });
    }
    let Some(server_version) = detail.version.clone() else {
        return Err(RegistryError::Malformed { registry, why: format!("{server} declares no version") });
    };
    if let Some((asked, version)) = asked
        && (detail.name != asked || (version != "latest" && server_version != version))
    {
        let why = format!("asked for {asked} {version}, it answered {server} {}", shown(&server_version));
        return Err(RegistryError::Malformed { registry, why });
    }
    let source = Source { registry: registry.clone(), server: detail.name.clone(), version: server_version };
    let mut reasons = Vec::new();
    let mut alternatives = Vec::new();
    let mut chosen = None;
    let candidates = detail
        .packages
        .iter()
        .map(|p| (package_via(p), Candidate::Package(p)))
        .chain(detail.remotes.iter().map(|r| (Ok(Via::Remote), Candidate::Remote(r))));
    for (kind, candidate) in candidates {
        let label = candidate.label();
        let kind = match kind {
            Ok(kind) => kind,
            Err(why) => {
                reasons.push(format!("{label}: {why}"));
                continue;
            }
        };
        let wanted = via.is_none_or(|v| v == kind) && chosen.is_none();
        match candidate.entry(kind, local_name) {
            Ok(made) if wanted => chosen = Some((kind, made)),
            Ok(_) => alternatives.push(format!("{label} (--via {})", kind.as_str())),
            Err(why) => reasons.push(format!("{label}: {why}")),
        }
    }
    let Some((kind, made)) = chosen else {
        if detail.packages.is_empty() && detail.remotes.is_empty() {
            reasons.push("it lists no package and no remote".into());
        } else if let Some(via) = via {
            let offers = if alternatives.is_empty() {
                String::new()
            } else {
                format!("; it offers {}", alternatives.join(", "))
            };
            reasons.push(format!("none is {} (--via){offers}", via.as_str()));
        }
        return Err(RegistryError::NothingRunnable { server, version, reasons });
    };
    let Made { mut entry, runs, effect, needs } = made;
    entry.insert(
        "from_registry".into(),
        json!({ "registry": source.registry, "server": source.server, "version": source.version }),
    );
    Ok(RegistryServer {
        source,
        description: shown(&detail.description),
        via: kind,
        entry: Value::Object(entry),
        runs,
        effect,
        needs,
        alternatives,
        passed_over: reasons,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_names_a_server_and_maybe_a_version() {
        assert_eq!(parse_reference("io.github.a/b").unwrap(), ("io.github.a/b".into(), "latest".into()));
        assert_eq!(parse_reference("io.github.a/b@1.2.3").unwrap(), ("io.github.a/b".into(), "1.2.3".into()));
        for bad in ["b", "/b", "a/", "a/b c", "a/b@", "a/b/c"] {
            assert!(parse_reference(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ranges_and_latest_do_not_pin() {
        for bad in ["latest", "^1.2.3", "~1.2", ">=1", "1.x", "1.*", "", "-rf"] {
            assert!(pinned(Some(bad), "npm package").is_err(), "{bad}");
        }
        assert_eq!(pinned(Some("1.0.0-beta.1+build"), "npm package").unwrap(), "1.0.0-beta.1+build");
        assert!(is_full_semver("1.0.0-beta.1+build") && is_full_semver("2026.8.31"));
        for partial in ["1", "1.2", "next", "1.2.x", "v1.2.3"] {
            assert!(!is_full_semver(partial), "{partial}");
        }
    }

    #[test]
    fn registry_urls_are_https_or_this_machine() {
        assert!(registry_base(Some("https://registry.example.com/sub")).is_ok());
        assert!(registry_base(Some("http://127.0.0.1:9/")).is_ok());
        assert!(registry_base(Some("http://registry.example.com")).is_err());
        assert!(registry_base(Some("file:///etc")).is_err());
        assert!(registry_base(Some("https://user:pw@registry.example.com")).is_err());
        assert!(registry_base(Some("https://registry.example.com/?token=x")).is_err());
    }
}
