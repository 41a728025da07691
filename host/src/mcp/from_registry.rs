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

enum Candidate<'a> {
    Package(&'a Package),
    Remote(&'a Transport),
}

/// An entry under construction.
struct Made {
    entry: Map<String, Value>,
    runs: String,
    effect: String,
    needs: Vec<Needed>,
}

fn has_control(value: &Value) -> bool {
    match value {
        Value::String(text) => text.chars().any(char::is_control),
        Value::Array(items) => items.iter().any(has_control),
        Value::Object(map) => map.iter().any(|(k, v)| k.chars().any(char::is_control) || has_control(v)),
        _ => false,
    }
}

fn package_via(package: &Package) -> Result<Via, String> {
    match package.registry_type.as_str() {
        "npm" => Ok(Via::Npm),
        "pypi" => Ok(Via::Pypi),
        "oci" => Ok(Via::Oci),
        other => Err(format!("{} packages are not run by CLAT (npm, pypi and oci are)", shown(other))),
    }
}

impl Candidate<'_> {
    fn label(&self) -> String {
        match self {
            Candidate::Package(p) => format!("{} package {}", shown(&p.registry_type), shown(&p.identifier)),
            Candidate::Remote(r) => format!("{} remote {}", shown(&r.kind), shown(r.url.as_deref().unwrap_or("?"))),
        }
    }

    fn entry(&self, via: Via, local_name: &str) -> Result<Made, String> {
        let made = match self {
            Candidate::Package(p) => package_entry(p, via, local_name)?,
            Candidate::Remote(r) => remote_entry(r, local_name)?,
        };
        // What runs is shown and written as it is: a control character in it is refused, not cleaned.
        if has_control(&Value::Object(made.entry.clone())) {
            return Err("its command, arguments, URL or values hold control characters".into());
        }
        Ok(made)
    }
}

/// `NAME` as a variable name: upper case, every other character `_`.
fn variable_name(name: &str) -> String {
    let mut out: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

fn is_identifier(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A literal of the document as `mcp.json` text: `${` is written `$${`, so it is never expanded.
fn literal(text: &str) -> String {
    text.replace("${", "$${")
}

/// A version that pins: not empty, not `latest`, not a range.
fn pinned(version: Option<&str>, what: &str) -> Result<String, String> {
    let Some(version) = version.filter(|v| !v.is_empty()) else {
        return Err(format!("its {what} names no version, so nothing would be pinned"));
    };
    let range = version == "latest"
        || version.ends_with(".x")
        || version.chars().any(|c| matches!(c, '^' | '~' | '>' | '<' | '=' | '*' | '|' | ' ' | ','));
    if range || version.starts_with('-') || version.chars().any(char::is_control) {
        return Err(format!(
            "its {what} version {:?} is not one fixed version, so nothing would be pinned",
            shown(version)
        ));
    }
    Ok(version.to_string())
}

/// `MAJOR.MINOR.PATCH`, with an optional `-prerelease` and `+build`.
fn is_full_semver(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Collects the `${VAR}` references an entry makes and what each fills. A
/// package's environment variable is referred to by its own name (the name
/// its README tells users to set); every other value — an argument, a header,
/// a `{variable}` of a template — by a name derived from the local server
/// name and its key (`SEARCH_API_TOKEN`), so no document can have an entry
/// send `${PATH}` or `${HOME}` somewhere.
struct Inputs {
    prefix: String,
    needs: Vec<Needed>,
}

impl Inputs {
    fn new(local_name: &str) -> Inputs {
        Inputs { prefix: variable_name(local_name), needs: Vec::new() }
    }

    /// The variable for a value of the document's naming: `{PREFIX}_{KEY}`.
    fn derived(&self, key: &str) -> String {
        format!("{}_{}", self.prefix, variable_name(key).trim_start_matches('_'))
    }

    /// The text for one input: its fixed value (its `{var}`s filled), else a
    /// reference to `variable` (with its default), else nothing (an optional
    /// input with neither is left out).
    fn text(
        &mut self,
        input: &Input,
        variables: &BTreeMap<String, Input>,
        variable: &str,
        fills: &str,
    ) -> Result<Option<String>, String> {
        if let Some(value) = &input.value {
            return self.template(value, variables, fills).map(Some);
        }
        if !input.is_required && input.default.is_none() {
            return Ok(None);
        }
        self.reference(input, variable, fills).map(Some)
    }

    fn reference(&mut self, input: &Input, variable: &str, fills: &str) -> Result<String, String> {
        if !is_identifier(variable) {
            return Err(format!("{fills} cannot be named as a variable ({:?})", shown(variable)));
        }
        let default = input.default.clone().filter(|d| !d.contains('}') && !d.contains('$'));
        if !self.needs.iter().any(|n| n.variable == variable) {
            self.needs.push(Needed {
                variable: variable.to_string(),
                fills: fills.to_string(),
                required: input.is_required,
                secret: input.is_secret,
                default: default.as_deref().map(shown),
                choices: input.choices.iter().map(|c| shown(c)).collect(),
                description: shown(&input.description),
            });
        }
        Ok(match default {
            Some(default) => format!("${{{variable}:-{default}}}"),
            None => format!("${{{variable}}}"),
        })
    }

    /// A value whose `{name}`s are the document's variables: each becomes a
    /// reference (or its fixed value); an unknown `{name}` stays as written.
    fn template(&mut self, value: &str, variables: &BTreeMap<String, Input>, fills: &str) -> Result<String, String> {
        // Literal text is gathered and escaped as a whole, so a `$` and a `{`
        // on either side of a piece still read as the literal `${` they are.
        let mut out = String::new();
        let mut pending = String::new();
        let mut rest = value;
        while let Some(open) = rest.find('{') {
            pending.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match after.find('}').map(|close| (&after[..close], close)) {
                Some((name, close)) if variables.contains_key(name) => {
                    let input = &variables[name];
                    match &input.value {
                        Some(fixed) => pending.push_str(fixed),
                        None => {
                            if pending.ends_with('$') {
                                return Err(format!(
                                    "{fills} has a `$` right before {{{name}}}, which cannot be written"
                                ));
                            }
                            let reference =
                                self.reference(input, &self.derived(name), &format!("{{{name}}} of {fills}"))?;
                            out.push_str(&literal(&std::mem::take(&mut pending)));
                            out.push_str(&reference);
                        }
                    }
                    rest = &after[close + 1..];
                }
                _ => {
                    pending.push('{');
                    rest = after;
                }
            }
        }
        pending.push_str(rest);
        out.push_str(&literal(&pending));
        Ok(out)
    }

    /// The command-line words of some arguments.
    fn arguments(&mut self, arguments: &[Argument], what: &str) -> Result<Vec<String>, String> {
        let mut words = Vec::new();
        for argument in arguments {
            match argument.kind.as_str() {
                "positional" => {
                    let hint = argument.value_hint.as_deref().unwrap_or("value");
                    let fills = format!("{what} argument <{}>", shown(hint));
                    let variable = self.derived(hint);
                    if let Some(text) = self.text(&argument.input, &argument.variables, &variable, &fills)? {
                        words.push(text);
                    }
                }
                "named" => {
                    let Some(name) = argument.name.as_deref().filter(|n| !n.is_empty()) else {
                        return Err(format!("a named {what} argument has no name"));
                    };
                    if !name.starts_with('-') || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
                        return Err(format!("the {what} argument name {:?} is not a flag", shown(name)));
                    }
                    let fills = format!("{what} argument {}", shown(name));
                    let variable = self.derived(name.trim_start_matches('-'));
                    let boolean_flag = argument.input.value.is_none()
                        && argument.input.default.is_none()
                        && argument.value_hint.is_none()
                        && argument.input.is_required;
                    if boolean_flag {
                        words.push(literal(name));
                    } else if let Some(text) = self.text(&argument.input, &argument.variables, &variable, &fills)? {
                        words.push(literal(name));
                        words.push(text);
                    }
                }
                other => return Err(format!("a {what} argument is of unknown type {:?}", shown(other))),
            }
        }
        Ok(words)
    }

    /// `env` entries for some environment variables.
    fn environment(&mut self, variables: &[KeyValue]) -> Result<Map<String, Value>, String> {
        let mut env = Map::new();
        for variable in variables {
            if !is_identifier(&variable.name) {
                return Err(format!("the environment variable name {:?} is not an identifier", shown(&variable.name)));
            }
            let fills = format!("env {}", variable.name);
            if let Some(text) = self.text(&variable.input, &variable.variables, &variable.name, &fills)? {
                env.insert(variable.name.clone(), Value::String(text));
            }
        }
        Ok(env)
    }
}

fn package_entry(package: &Package, via: Via, local_name: &str) -> Result<Made, String> {
    if let Some(transport) = &package.transport
        && transport.kind != "stdio"
    {
        return Err(format!("it serves {} itself, and CLAT starts packages over stdio only", shown(&transport.kind)));
    }
    let identifier = &package.identifier;
    if identifier.is_empty() || identifier.starts_with('-') || identifier.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!("its identifier {:?} is not a package name", shown(identifier)));
    }
    if matches!(via, Via::Npm | Via::Pypi) {
        runner_arguments_run_only_the_package(via, &package.runtime_arguments)?;
    }
    let mut inputs = Inputs::new(local_name);
    let runtime = inputs.arguments(&package.runtime_arguments, "runtime")?;
    let arguments = inputs.arguments(&package.package_arguments, "package")?;
    let env = inputs.environment(&package.environment_variables)?;
    let base = package.registry_base_url.as_deref().map(|b| b.trim_end_matches('/'));
    let (command, mut args, effect) = match via {
        Via::Npm => {
            let version = pinned(package.version.as_deref(), "npm package")?;
            // npm reads `1`, `1.2` or a dist-tag (`next`) as a range: only a full version pins.
            if !is_full_semver(&version) {
                return Err(format!(
                    "its npm package version {:?} is not a full version (MAJOR.MINOR.PATCH), so nothing would be pinned",
                    shown(&version)
                ));
            }
            let mut args = vec!["-y".to_string()];
            if let Some(base) = base.filter(|b| *b != "https://registry.npmjs.org") {
                args.push(format!("--registry={}", literal(base)));
            }
            args.extend(runtime);
            args.push(literal(&format!("{identifier}@{version}")));
            ("npx", args, runs_as_you("npx"))
        }
        Via::Pypi => {
            let version = pinned(package.version.as_deref(), "PyPI package")?;
            let mut args = Vec::new();
            if let Some(base) = base.filter(|b| *b != "https://pypi.org") {
                args.push("--index-url".to_string());
                args.push(literal(&format!("{base}/simple/")));
            }
            args.extend(runtime);
            args.push(literal(&format!("{identifier}=={version}")));
            ("uvx", args, runs_as_you("uvx"))
        }
        Via::Oci => {
            let image = oci_reference(package)?;
            let mut args = vec!["run".to_string(), "-i".to_string(), "--rm".to_string()];
            args.extend(runtime);
            for name in env.keys() {
                args.push("-e".to_string());
                args.push(name.clone());
            }
            args.push(literal(&image));
            (
                "docker",
                args,
                "docker runs the image in a container: it sees what its runtime arguments mount and pass, and the \
                 network docker gives it"
                    .to_string(),
            )
        }
        Via::Remote => return Err("a package is not a remote".into()),
    };
    args.extend(arguments);
    let runs = std::iter::once(command.to_string()).chain(args.iter().cloned()).collect::<Vec<_>>().join(" ");
    let mut entry = Map::new();
    entry.insert("command".into(), Value::String(command.into()));
    entry.insert("args".into(), json!(args));
    if !env.is_empty() {
        entry.insert("env".into(), Value::Object(env));
    }
    Ok(Made { entry, runs, effect, needs: inputs.needs })
}

/// The runtime arguments `npx` and `uvx` take from a registry document: only
/// flags that change how the pinned package runs, never what runs. A
/// positional argument is another package or command for the runner, and flags
/// such as `npx --package` / `--call` or `uvx --with` / `--from` /
/// `--index-url` name other packages or sources, at no fixed version: refused,
/// so the entry runs exactly the pinned package.
fn runner_arguments_run_only_the_package(via: Via, arguments: &[Argument]) -> Result<(), String> {
    let (runner, allowed): (&str, &[&str]) = match via {
        Via::Npm => ("npx", &["-y", "--yes", "-q", "--quiet", "--prefer-offline", "--prefer-online", "--no-audit"]),
        _ => ("uvx", &["-q", "--quiet", "--offline", "--no-cache", "--refresh", "--python", "-p", "--isolated"]),
    };
    for argument in arguments {
        match (argument.kind.as_str(), argument.name.as_deref()) {
            ("named", Some(name)) if allowed.contains(&name) => {
                // An interpreter is named by its version, never by a path to run.
                let given = [argument.input.value.as_deref(), argument.input.default.as_deref()];
                if given.into_iter().flatten().any(|v| v.contains('/') || v.contains('\\')) {
                    return Err(format!("its runtime argument {} names a path for {runner} to run", shown(name)));
                }
            }
            ("named", Some(name)) => {
                return Err(format!(
                    "its runtime argument {} is not one CLAT passes to {runner}: it could make {runner} run another \
                     package or fetch from another source than the pinned one",
                    shown(name)
                ));
            }
            _ => {
                return Err(format!(
                    "it gives {runner} a positional runtime argument, which would be another package or command to \
                     run, at no fixed version"
                ));
            }
        }
    }
    Ok(())
}

/// The effect of a package a runner (`npx`, `uvx`) fetches and starts here.
fn runs_as_you(runner: &str) -> String {
    format!(
        "{runner} fetches the package and runs it on this machine as you: it can read, change and run whatever you \
         can, with your network and environment (no sandbox)"
    )
}

/// An OCI package's image reference, pinned: the identifier's own tag or
/// digest, else its `version` as the tag (on its registry's host).
fn oci_reference(package: &Package) -> Result<String, String> {
    let identifier = &package.identifier;
    let last = identifier.rsplit('/').next().unwrap_or(identifier);
    if let Some((_, digest)) = identifier.split_once('@') {
        if !digest.starts_with("sha256:") {
            return Err(format!("its image digest {:?} is not sha256", shown(digest)));
        }
        return Ok(identifier.clone());
    }
    if let Some((_, tag)) = last.split_once(':') {
        pinned(Some(tag), "image tag")?;
        return Ok(identifier.clone());
    }
    let tag = pinned(package.version.as_deref(), "image")?;
    let host = package
        .registry_base_url
        .as_deref()
        .map(|b| b.trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/'))
        .filter(|h| !matches!(*h, "docker.io" | "registry-1.docker.io" | "index.docker.io"));
    Ok(match host {
        Some(host) if !identifier.starts_with(&format!("{host}/")) => format!("{host}/{identifier}:{tag}"),
        _ => format!("{identifier}:{tag}"),
    })
}

fn remote_entry(remote: &Transport, local_name: &str) -> Result<Made, String> {
    match remote.kind.as_str() {
        "streamable-http" => {}
        "sse" => return Err("the deprecated HTTP+SSE transport, which CLAT does not speak".into()),
        other => return Err(format!("transport {:?} is not one CLAT speaks", shown(other))),
    }
    let Some(url) = remote.url.as_deref() else {
        return Err("it names no url".into());
    };
    let mut inputs = Inputs::new(local_name);
    let url = inputs.template(url, &remote.variables, "url")?;
    if !(url.starts_with("https://") || url.starts_with("http://") || url.starts_with("${")) || url.contains(' ') {
        return Err(format!("its url {:?} is not an http(s) URL", shown(&url)));
    }
    let mut headers = Map::new();
    for header in &remote.headers {
        let valid = !header.name.is_empty()
            && header.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(format!("the header name {:?} is not a header name", shown(&header.name)));
        }
        let fills = format!("header {}", header.name);
        let mut variables = header.variables.clone();
        for (name, input) in &remote.variables {
            variables.entry(name.clone()).or_insert_with(|| input.clone());
        }
        let variable = inputs.derived(&header.name);
        if let Some(text) = inputs.text(&header.input, &variables, &variable, &fills)? {
            headers.insert(header.name.clone(), Value::String(text));
        }
    }
    let sends = if headers.is_empty() {
        String::new()
    } else {
        format!(", sending the headers {}", headers.keys().cloned().collect::<Vec<_>>().join(", "))
    };
    let effect = format!(
        "nothing runs on this machine: CLAT contacts the server over the network{sends}; it holds what you send it"
    );
    let mut entry = Map::new();
    entry.insert("url".into(), Value::String(url.clone()));
    if !headers.is_empty() {
        entry.insert("headers".into(), Value::Object(headers));
    }
    Ok(Made { entry, runs: url, effect, needs: inputs.needs })
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
    fn a_template_fills_known_variables_and_keeps_the_rest_literal() {
        let mut inputs = Inputs::new("srv");
        let variables: BTreeMap<String, Input> = serde_json::from_value(json!({
            "tenant": { "isRequired": true, "isSecret": false },
            "region": { "default": "eu" },
            "fixed": { "value": "x" }
        }))
        .unwrap();
        let text = inputs.template("https://{tenant}.{region}.{fixed}/{other}/${HOME}", &variables, "url").unwrap();
        assert_eq!(text, "https://${SRV_TENANT}.${SRV_REGION:-eu}.x/{other}/$${HOME}");
        assert_eq!(inputs.needs.iter().map(|n| n.variable.as_str()).collect::<Vec<_>>(), ["SRV_TENANT", "SRV_REGION"]);
        // A `$` just before a reference would turn it into a literal: refused, not written wrong.
        assert!(inputs.template("pa$${tenant}", &variables, "url").is_err());
        assert_eq!(inputs.template("$${fixed}", &variables, "url").unwrap(), "$$x");
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
