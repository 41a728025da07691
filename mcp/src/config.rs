//! `mcp.json`: the user's servers, name → entry, either as the spec writes it
//! (a flat object), in the `{"mcpServers": {...}}` wrapper that server
//! READMEs and other agents use, or in VS Code's `{"servers": {...},
//! "inputs": [...]}`; a file that mixes shapes is refused. A `${input:ID}`
//! (VS Code's prompted value) is looked up as `input:ID` (the host holds the
//! values the user gave); without one it fails its server with what to write instead. Each
//! entry chooses exactly one transport — `command` (+ `args`, `env`, `cwd`,
//! `env_inherit`) for stdio, or `url` (+ `headers`) for Streamable HTTP, with
//! an optional `type` of `stdio` or `http` (`streamable-http` too; the
//! deprecated `sse` transport is refused) — and may carry `enabled` /
//! `disabled`, `startup_timeout_sec`, `tool_timeout_sec` (bounded by the
//! host's limits), `enabled_tools` / `disabled_tools`, how its tools are
//! offered under progressive discovery: `always_load` (`true`, or some of its
//! tool names; Claude Code's `alwaysLoad` too) and `defer_loading` (`true`;
//! `deferLoading` too), and `from_registry` (the MCP registry version it was
//! added from).
//!
//! Malformed JSON is one error naming the file and position. A bad entry is an
//! error naming the file, line, column, entry and key (an unknown key with the
//! nearest known one) and never stops the others. `${VAR}` and
//! `${VAR:-default}` are kept as written here and expanded per server when it
//! starts (`ServerEntry::expand`), so a missing variable fails only that
//! server; every other `$` is kept byte for byte, and `$${` is a literal `${`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The key of the wrapper shape.
pub const WRAPPER_KEY: &str = "mcpServers";
/// The key of VS Code's wrapper shape (`.vscode/mcp.json`)…
pub const VSCODE_WRAPPER_KEY: &str = "servers";
/// …and of the prompted values VS Code keeps beside it.
pub const VSCODE_INPUTS_KEY: &str = "inputs";

/// The key that wraps a file's entries, if one does: `mcpServers`, or VS
/// Code's `servers` when its value is an object none of whose keys is an entry
/// key (so a flat file's server named "servers" stays a server).
/// `value_of` gives a top-level key's JSON text.
pub fn wrapper_key<'a>(value_of: impl Fn(&str) -> Option<&'a str>) -> Option<&'static str> {
    if value_of(WRAPPER_KEY).is_some() {
        return Some(WRAPPER_KEY);
    }
    let servers = serde_json::from_str::<BTreeMap<String, &RawValue>>(value_of(VSCODE_WRAPPER_KEY)?).ok()?;
    (!servers.keys().any(|k| ENTRY_KEYS.contains(&k.as_str()))).then_some(VSCODE_WRAPPER_KEY)
}

/// Every key an entry may have.
pub const ENTRY_KEYS: [&str; 20] = [
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "env_inherit",
    "url",
    "headers",
    "oauth",
    "enabled",
    "disabled",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "always_load",
    "alwaysLoad",
    "defer_loading",
    "deferLoading",
    "from_registry",
];

/// The transport an entry chooses.
#[derive(Clone, PartialEq, Eq)]
pub enum EntryTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
        /// `false`: the server gets a minimal environment plus `env`, not all of CLAT's.
        env_inherit: bool,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// How to log in when the server asks for OAuth; `None`: discovery
        /// and registration decide everything.
        oauth: Option<OAuthEntry>,
    },
}

/// An HTTP entry's `"oauth"`: a pre-registered client, the scopes to ask
/// for, the loopback port of the login redirect, and the grant.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthEntry {
    pub client_id: Option<String>,
    /// Usually `${VAR}`: a secret.
    pub client_secret: Option<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
    pub callback_port: Option<u16>,
    /// The https URL of a Client ID Metadata Document describing this client.
    pub client_metadata_url: Option<String>,
    /// `"authorization_code"` (a browser login, the default) or `"client_credentials"`.
    #[serde(default)]
    pub grant: crate::auth::Grant,
}

/// The secret is never shown (the settings' `Debug` masks it).
impl std::fmt::Debug for OAuthEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.settings(), f)
    }
}

impl OAuthEntry {
    /// The settings `clat_mcp::auth` logs in with.
    pub fn settings(&self) -> crate::auth::OAuthSettings {
        crate::auth::OAuthSettings {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            scopes: self.scopes.clone(),
            callback_port: self.callback_port,
            client_metadata_url: self.client_metadata_url.clone(),
            grant: self.grant,
            client_name: None,
        }
    }
}

/// Names only: `env` values and `headers` values may be secrets.
impl std::fmt::Debug for EntryTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryTransport::Stdio { command, args, env, cwd, env_inherit } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env_names", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .field("env_inherit", env_inherit)
                .finish(),
            EntryTransport::Http { url, headers, oauth } => f
                .debug_struct("Http")
                .field("url", url)
                .field("header_names", &headers.keys().collect::<Vec<_>>())
                .field("oauth", oauth)
                .finish(),
        }
    }
}

/// Which of a server's tools are registered, by the server's own tool names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// When set, only these.
    pub enabled: Option<Vec<String>>,
    /// Never these.
    pub disabled: Vec<String>,
}

impl ToolFilter {
    /// Whether a tool is registered; `names_it` says whether a name the
    /// filter holds names the tool (the host accepts more than one name per
    /// tool).
    pub fn allows(&self, names_it: impl Fn(&str) -> bool) -> bool {
        self.enabled.as_ref().is_none_or(|e| e.iter().any(|t| names_it(t)))
            && !self.disabled.iter().any(|t| names_it(t))
    }

    /// The names the filter mentions that name none of the listed tools
    /// (`names_listed`: whether a name names one of them).
    pub fn unknown(&self, names_listed: impl Fn(&str) -> bool) -> Vec<&str> {
        let named = self.enabled.iter().flatten().chain(&self.disabled);
        let mut unknown: Vec<&str> = named.map(String::as_str).filter(|t| !names_listed(t)).collect();
        unknown.sort_unstable();
        unknown.dedup();
        unknown
    }
}

/// Which of an extension's tools a model is offered from the first turn
/// when tools are found rather than all offered (progressive discovery):
/// `always_load` — all (`true`) or some, by the extension's own tool names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AlwaysLoad {
    #[default]
    None,
    All(bool),
    Tools(Vec<String>),
}

impl<'de> Deserialize<'de> for AlwaysLoad {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let expected = "true, false, or an array of the extension's tool names";
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::Bool(all) => Ok(AlwaysLoad::All(all)),
            serde_json::Value::Array(names) => names
                .into_iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .map(AlwaysLoad::Tools)
                .ok_or_else(|| serde::de::Error::custom(format!("expected {expected}"))),
            other => Err(serde::de::Error::custom(format!("expected {expected}, not {other}"))),
        }
    }
}

impl AlwaysLoad {
    /// Whether it names the tool (`names_it`: whether a name it holds names the tool).
    pub fn covers(&self, names_it: impl Fn(&str) -> bool) -> bool {
        match self {
            AlwaysLoad::None => false,
            AlwaysLoad::All(all) => *all,
            AlwaysLoad::Tools(names) => names.iter().any(|n| names_it(n)),
        }
    }

    /// Whether it is the default (nothing always loaded).
    pub fn is_none(&self) -> bool {
        matches!(self, AlwaysLoad::None | AlwaysLoad::All(false))
    }
}

/// How an extension's tools are offered under progressive discovery: some
/// or all always (`always_load`), the rest deferred — found by a search,
/// never offered up front, even when every tool would fit the budget —
/// with `defer_loading`; by default, offered while every tool fits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loading {
    #[serde(default, skip_serializing_if = "AlwaysLoad::is_none")]
    pub always_load: AlwaysLoad,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defer_loading: bool,
}

impl Loading {
    /// Both settings from an entry's values; `true` for both is refused.
    pub fn new(always_load: Option<AlwaysLoad>, defer_loading: Option<bool>) -> Result<Loading, String> {
        let loading =
            Loading { always_load: always_load.unwrap_or_default(), defer_loading: defer_loading.unwrap_or(false) };
        loading.check()?;
        Ok(loading)
    }

    /// Whether the two settings make sense together: `true` for both disagree, and a tool name is never empty.
    pub fn check(&self) -> Result<(), String> {
        if self.always_load == AlwaysLoad::All(true) && self.defer_loading {
            return Err("`always_load` true and `defer_loading` true disagree; to defer all but some tools, give \
                        `always_load` their names"
                .into());
        }
        if let AlwaysLoad::Tools(names) = &self.always_load
            && names.iter().any(String::is_empty)
        {
            return Err("`always_load` holds an empty tool name".into());
        }
        Ok(())
    }

    /// What is wrong with these settings for an extension (`what`: "server", "plugin") whose tools `lists`
    /// recognizes by a written name: a `check` failure, and each `always_load` name that names none of its tools.
    pub fn problems(&self, what: &str, lists: impl Fn(&str) -> bool) -> Vec<String> {
        let mut problems: Vec<String> = self.check().err().into_iter().collect();
        if let AlwaysLoad::Tools(names) = &self.always_load {
            for unknown in names.iter().filter(|written| !written.is_empty() && !lists(written)) {
                problems.push(format!("`always_load` names {unknown:?}, which the {what} does not list"));
            }
        }
        problems
    }

    /// How it reads in a listing (`clat mcp`, `clat plugin list`); `None` for the default.
    pub fn describe(&self) -> Option<String> {
        let always = match &self.always_load {
            AlwaysLoad::All(true) => Some("all its tools".to_string()),
            AlwaysLoad::Tools(names) if !names.is_empty() => Some(names.join(", ")),
            _ => None,
        };
        match (always, self.defer_loading) {
            (None, false) => None,
            (Some(always), false) => Some(format!("always loaded: {always}")),
            (None, true) => Some("deferred: its tools are found through search_tools".into()),
            (Some(always), true) => Some(format!("always loaded: {always}; the others deferred")),
        }
    }
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    pub transport: EntryTransport,
    /// `"enabled": false` or `"disabled": true`: kept in the file, never started.
    pub enabled: bool,
    /// How long the server may take to connect and list its tools.
    pub startup_timeout: Option<Duration>,
    /// How long one of its tool calls may take.
    pub tool_timeout: Option<Duration>,
    pub tools: ToolFilter,
    /// How its tools are offered under progressive discovery.
    pub loading: Loading,
    /// The MCP registry version it was added from, if it was.
    pub from_registry: Option<RegistryOrigin>,
}

impl ServerEntry {
    /// An enabled entry with no timeouts or filters of its own.
    pub fn new(transport: EntryTransport) -> ServerEntry {
        ServerEntry {
            transport,
            enabled: true,
            startup_timeout: None,
            tool_timeout: None,
            tools: ToolFilter::default(),
            loading: Loading::default(),
            from_registry: None,
        }
    }
}

/// The largest per-server timeouts an entry may ask for: the host's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeoutBounds {
    /// `startup_timeout_sec` (the host's startup maximum).
    pub startup: Duration,
    /// `tool_timeout_sec` (the host's tool-call limit).
    pub tool_call: Duration,
}

/// Why the file or an entry cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{file} is malformed at line {line}, column {column}: {message}")]
    Malformed { file: String, line: usize, column: usize, message: String },
    #[error("cannot read {file}: {message}")]
    Unreadable { file: String, message: String },
    #[error("{file}:{line}:{column}: entry {name:?}: {message}")]
    Entry {
        file: String,
        name: String,
        line: usize,
        column: usize,
        message: String,
        /// Whether the entry names a `url` (or `type` http): a remote server's, though unusable.
        remote: bool,
    },
}

/// The entries of one file, each parsed on its own.
#[derive(Debug, Default)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerEntry>,
    /// Entries that could not be used, with why.
    pub errors: Vec<ConfigError>,
}

/// An entry as written; what the keys hold is checked by serde, what they mean by `entry`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    #[serde(rename = "type")]
    transport: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<String>,
    env_inherit: Option<bool>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    oauth: Option<OAuthEntry>,
    enabled: Option<bool>,
    disabled: Option<bool>,
    startup_timeout_sec: Option<f64>,
    tool_timeout_sec: Option<f64>,
    enabled_tools: Option<Vec<String>>,
    disabled_tools: Option<Vec<String>>,
    #[serde(alias = "alwaysLoad")]
    always_load: Option<AlwaysLoad>,
    #[serde(alias = "deferLoading")]
    defer_loading: Option<bool>,
    from_registry: Option<RegistryOrigin>,
}

/// Where an entry added from an MCP registry came from (`from_registry`):
/// the registry's URL, the server's registry name and the version pinned.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegistryOrigin {
    pub registry: String,
    pub server: String,
    pub version: String,
}

/// Line and column (1-based, in characters) of byte `offset` of `text`.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
}

/// Where `part` (a slice of `text`) starts in it.
fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

/// The known key nearest to an unknown one, case, `_` and `-` ignored: the
/// same key, else one that contains it (or that it contains), else the
/// closest spelling.
fn nearest_key(unknown: &str) -> &'static str {
    let simple = |k: &str| k.to_ascii_lowercase().replace(['_', '-'], "");
    let wanted = simple(unknown);
    let score = |key: &str| {
        let known = simple(key);
        let similarity = strsim::normalized_damerau_levenshtein(&known, &wanted);
        if known == wanted {
            3.0
        } else if !wanted.is_empty() && (known.contains(&wanted) || wanted.contains(&known)) {
            1.0 + similarity
        } else {
            similarity
        }
    };
    ENTRY_KEYS.iter().copied().max_by(|a, b| score(a).total_cmp(&score(b))).unwrap_or("command")
}

/// A timeout in seconds: positive, finite, at most `max`.
fn timeout(key: &str, seconds: Option<f64>, max: Duration, what: &str) -> Result<Option<Duration>, String> {
    let Some(seconds) = seconds else { return Ok(None) };
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("`{key}` must be a positive number of seconds, not {seconds}"));
    }
    if seconds > max.as_secs_f64() {
        return Err(format!(
            "`{key}` {seconds} is past the {} s {what}; at most {} is allowed",
            max.as_secs(),
            max.as_secs()
        ));
    }
    Ok(Some(Duration::from_secs_f64(seconds)))
}

/// What an entry's checked keys mean.
fn entry(raw: RawEntry, bounds: &TimeoutBounds) -> Result<ServerEntry, String> {
    let kind = match raw.transport.as_deref() {
        None => None,
        Some("stdio") => Some("stdio"),
        Some("http" | "streamable-http" | "streamableHttp") => Some("http"),
        Some("sse") => {
            return Err("`type` \"sse\" is the deprecated HTTP+SSE transport, which CLAT does not speak; give the \
                        server's Streamable HTTP `url` with `type` \"http\""
                .into());
        }
        Some(other) => return Err(format!("`type` {other:?} is not a transport: use \"stdio\" or \"http\"")),
    };
    let transport = match (raw.command, raw.url) {
        (Some(_), Some(_)) => {
            return Err("choose exactly one transport: `command` (stdio) or `url` (HTTP), not both".into());
        }
        (None, None) => return Err("choose exactly one transport: `command` (stdio) or `url` (HTTP)".into()),
        (Some(command), None) => {
            if kind == Some("http") {
                return Err("`type` \"http\" needs a `url`, not a `command`".into());
            }
            if raw.headers.is_some() {
                return Err("`headers` applies to `url` entries only".into());
            }
            if raw.oauth.is_some() {
                return Err("`oauth` applies to `url` entries only".into());
            }
            if command.is_empty() {
                return Err("`command` must be a non-empty string".into());
            }
            // A cwd built from variables is checked once they are expanded.
            if raw.cwd.as_deref().is_some_and(|cwd| !cwd.contains("${") && cwd_leaves_home(cwd)) {
                return Err(CWD_LEAVES_HOME.into());
            }
            EntryTransport::Stdio {
                command,
                args: raw.args.unwrap_or_default(),
                env: raw.env.unwrap_or_default(),
                cwd: raw.cwd,
                env_inherit: raw.env_inherit.unwrap_or(true),
            }
        }
        (None, Some(url)) => {
            if kind == Some("stdio") {
                return Err("`type` \"stdio\" needs a `command`, not a `url`".into());
            }
            let stdio_only = [("args", raw.args.is_some()), ("env", raw.env.is_some()), ("cwd", raw.cwd.is_some())];
            if let Some((key, _)) = stdio_only.iter().chain(&[("env_inherit", raw.env_inherit.is_some())]).find(|k| k.1)
            {
                return Err(format!("`{key}` applies to `command` entries only"));
            }
            // A URL built from variables is checked once they are expanded.
            if !url.contains("${") && !is_http_url(&url) {
                return Err(format!("`url` must be an http:// or https:// URL, not {url:?}"));
            }
            if let Some(oauth) = &raw.oauth {
                if oauth.grant == crate::auth::Grant::ClientCredentials
                    && (oauth.client_id.is_none() || oauth.client_secret.is_none())
                {
                    return Err("`oauth.grant` \"client_credentials\" needs `client_id` and `client_secret`".into());
                }
                if oauth.scopes.iter().any(|s| s.is_empty() || s.contains(char::is_whitespace)) {
                    return Err(
                        "`oauth.scopes` holds an empty scope or one with spaces; give one scope per item".into()
                    );
                }
                if let Some(url) = &oauth.client_metadata_url
                    && !url.starts_with("https://")
                {
                    return Err("`oauth.client_metadata_url` must be an https:// URL".into());
                }
            }
            EntryTransport::Http { url, headers: raw.headers.unwrap_or_default(), oauth: raw.oauth }
        }
    };
    let enabled = match (raw.enabled, raw.disabled) {
        (Some(e), Some(d)) if e == d => return Err("`enabled` and `disabled` disagree".into()),
        (Some(e), _) => e,
        (None, Some(d)) => !d,
        (None, None) => true,
    };
    let startup_timeout = timeout("startup_timeout_sec", raw.startup_timeout_sec, bounds.startup, "startup maximum")?;
    let tool_timeout = timeout("tool_timeout_sec", raw.tool_timeout_sec, bounds.tool_call, "tool-call limit")?;
    for (key, names) in [("enabled_tools", &raw.enabled_tools), ("disabled_tools", &raw.disabled_tools)] {
        if names.iter().flatten().any(String::is_empty) {
            return Err(format!("`{key}` holds an empty tool name"));
        }
    }
    let tools = ToolFilter { enabled: raw.enabled_tools, disabled: raw.disabled_tools.unwrap_or_default() };
    let loading = Loading::new(raw.always_load, raw.defer_loading)?;
    Ok(ServerEntry {
        transport,
        enabled,
        startup_timeout,
        tool_timeout,
        tools,
        loading,
        from_registry: raw.from_registry,
    })
}

fn is_http_url(url: &str) -> bool {
    url.starts_with("http://") || url.starts_with("https://")
}

/// Whether a raw entry names a `url` or says `type` http (it is a remote server's, however malformed).
fn names_a_url(raw: &RawValue) -> bool {
    let Ok(keys) = serde_json::from_str::<BTreeMap<String, serde_json::Value>>(raw.get()) else { return false };
    keys.contains_key("url")
        || keys
            .get("type")
            .and_then(|t| t.as_str())
            .is_some_and(|t| matches!(t, "http" | "streamable-http" | "streamableHttp" | "sse"))
}

/// Whether a relative `cwd` climbs out of the directory it resolves under
/// (`..` past its start); an absolute one is the user's choice.
pub fn cwd_leaves_home(cwd: &str) -> bool {
    let path = Path::new(cwd);
    if path.is_absolute() {
        return false;
    }
    let mut depth = 0i32;
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => depth -= 1,
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return true;
        }
    }
    false
}

/// The error for a `cwd` that leaves CLAT's home.
const CWD_LEAVES_HOME: &str = "`cwd` climbs out of CLAT's home with '..'; a relative cwd stays under it (give an \
                               absolute path to run the server elsewhere)";

/// One entry from its raw text: its keys, then their types, then their meaning.
/// An error carries the byte offset (in `text`) it is about.
fn parse_entry(text: &str, raw: &RawValue, bounds: &TimeoutBounds) -> Result<ServerEntry, (usize, String)> {
    let at_entry = offset_in(text, raw.get());
    let keys = serde_json::from_str::<BTreeMap<String, &RawValue>>(raw.get())
        .map_err(|_| (at_entry, "an entry must be an object".to_string()))?;
    if let Some((key, value)) = keys.iter().find(|(k, _)| !ENTRY_KEYS.contains(&k.as_str())) {
        let hint = nearest_key(key);
        return Err((offset_in(text, value.get()), format!("unknown key `{key}`; the nearest known key is `{hint}`")));
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
    let typed: RawEntry = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let inner = e.inner().to_string();
        let message = inner.rfind(" at line ").map_or(inner.as_str(), |i| &inner[..i]).to_string();
        let key = e.path().to_string();
        // The inner position is within the entry's text.
        let (line, column) = (e.inner().line(), e.inner().column());
        let within = raw.get().split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum::<usize>();
        let column_bytes =
            raw.get()[within..].chars().take(column.saturating_sub(1)).map(char::len_utf8).sum::<usize>();
        (at_entry + within + column_bytes, format!("`{key}`: {message}"))
    })?;
    entry(typed, bounds).map_err(|message| (at_entry, message))
}

/// Parse the text of an `mcp.json` named `file` (for messages).
pub fn parse_config(file: &str, text: &str, bounds: &TimeoutBounds) -> Result<McpConfig, ConfigError> {
    let malformed = |offset: usize, message: String| {
        let (line, column) = position(text, offset);
        ConfigError::Malformed { file: file.to_string(), line, column, message }
    };
    // Values, not raw text: a number out of range is malformed here too, so a file
    // this accepts is one every JSON reader accepts.
    if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
        let message = e.to_string();
        let message = message.rfind(" at line ").map_or(message.as_str(), |i| &message[..i]).to_string();
        return Err(ConfigError::Malformed { file: file.to_string(), line: e.line(), column: e.column(), message });
    }
    let top = serde_json::from_str::<BTreeMap<String, &RawValue>>(text)
        .map_err(|_| malformed(0, "the top level must be an object of server entries".into()))?;
    let entries = match wrapper_key(|key| top.get(key).map(|v| v.get())) {
        None => top,
        Some(wrapper) => {
            // VS Code keeps its `inputs` beside `servers`; nothing else stands beside a wrapper.
            let beside = |k: &str| k == wrapper || (wrapper == VSCODE_WRAPPER_KEY && k == VSCODE_INPUTS_KEY);
            if let Some((other, value)) = top.iter().find(|(k, _)| !beside(k)) {
                return Err(malformed(
                    offset_in(text, value.get()),
                    format!(
                        "the file mixes the two shapes: {other:?} stands beside `{wrapper}`; put every server \
                         inside `{wrapper}`, or write them all at the top level without it"
                    ),
                ));
            }
            let wrapped = top[wrapper];
            serde_json::from_str::<BTreeMap<String, &RawValue>>(wrapped.get()).map_err(|_| {
                malformed(offset_in(text, wrapped.get()), format!("`{wrapper}` must be an object of server entries"))
            })?
        }
    };
    let mut config = McpConfig::default();
    for (name, raw) in entries {
        match parse_entry(text, raw, bounds) {
            Ok(e) => {
                config.servers.insert(name, e);
            }
            Err((offset, message)) => {
                let (line, column) = position(text, offset);
                let remote = names_a_url(raw);
                config.errors.push(ConfigError::Entry { file: file.to_string(), name, line, column, message, remote });
            }
        }
    }
    Ok(config)
}

/// Why an entry's variables could not be expanded. Never holds a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("`{field}` uses ${{{variable}}}, which is not set and has no default")]
    Unset { field: String, variable: String },
    #[error("`url` is not an http:// or https:// URL once its variables are expanded")]
    NotHttp,
    #[error("{CWD_LEAVES_HOME}, once its variables are expanded")]
    CwdLeavesHome,
    #[error(
        "`{field}` uses ${{input:{id}}}, a VS Code input, which is asked for at a terminal and was not given: run \
         at a terminal, or put the value in clat's environment and write ${{env:NAME}} instead"
    )]
    Input { field: String, id: String },
}

/// An entry with its variables expanded, and the values that were
/// substituted (secrets, for redaction).
#[derive(Debug, Clone)]
pub struct Expanded {
    pub entry: ServerEntry,
    pub substituted: Vec<String>,
}

/// A variable reference at the start of `text` (just after its `$`): `{NAME}`
/// or `{NAME:-default}`, NAME an identifier. Returns the name, the default and
/// the length of the reference.
fn variable_at(text: &str) -> Option<(&str, Option<&str>, usize)> {
    let inner = text.strip_prefix('{')?;
    let end = inner.find('}')?;
    let (name, default) = match inner[..end].split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (&inner[..end], None),
    };
    // Cursor's and VS Code's `${env:NAME}` is `${NAME}`.
    let name = name.strip_prefix("env:").unwrap_or(name);
    is_variable_name(name).then_some((name, default, end + 2))
}

/// Expands `${VAR}` and `${VAR:-default}` (the default when VAR is unset or
/// empty) in one field's text, VAR an identifier (`${env:VAR}`, as Cursor and
/// VS Code write it, is `${VAR}`). `$${` writes a literal
/// `${`; every other `$` stays as written, byte for byte (`pa$$word`, a lone
/// `${`, `$HOME`).
fn expand_text(
    text: &str,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    substituted: &mut Vec<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(id) = after.strip_prefix("{input:").and_then(|t| t.split_once('}')).map(|(id, _)| id) {
            // VS Code's input: the value the user gave for this process, which the host's lookup holds as `input:ID`.
            let value = lookup(&format!("input:{id}"))
                .ok_or_else(|| ExpandError::Input { field: field.to_string(), id: id.to_string() })?;
            if !value.is_empty() {
                substituted.push(value.clone());
            }
            out.push_str(&value);
            rest = &after["{input:".len() + id.len() + 1..];
        } else if let Some((name, default, len)) = variable_at(after) {
            let value = match (lookup(name).filter(|v| !v.is_empty() || default.is_none()), default) {
                (Some(value), _) => value,
                (None, Some(default)) => default.to_string(),
                (None, None) => return Err(ExpandError::Unset { field: field.to_string(), variable: name.into() }),
            };
            if !value.is_empty() {
                substituted.push(value.clone());
            }
            out.push_str(&value);
            rest = &after[len..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether `name` can be a variable's name in a reference (`${NAME}`): an identifier.
pub fn is_variable_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The variables `text` refers to (`${VAR}`, `${VAR:-default}`, `${env:VAR}`), as `expand_text` reads them:
/// `$${` is a literal and a VS Code input (`${input:ID}`) is not a variable.
fn referenced_variables(text: &str, into: &mut std::collections::BTreeSet<String>) {
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            rest = tail;
        } else if let Some((name, _, len)) = variable_at(after) {
            into.insert(name.to_string());
            rest = &after[len..];
        } else {
            rest = after;
        }
    }
}

impl ServerEntry {
    /// Every variable of the caller's environment the entry refers to, in any field `expand` expands (defaults
    /// or not: a set variable is read): what an entry from a file someone else wrote would make CLAT send.
    pub fn variables(&self) -> std::collections::BTreeSet<String> {
        let mut names = std::collections::BTreeSet::new();
        match &self.transport {
            EntryTransport::Stdio { command, args, env, cwd, .. } => {
                for text in std::iter::once(command).chain(args).chain(env.values()).chain(cwd) {
                    referenced_variables(text, &mut names);
                }
            }
            EntryTransport::Http { url, headers, oauth } => {
                let oauth = oauth.iter().flat_map(|o| o.client_id.iter().chain(&o.client_secret));
                for text in std::iter::once(url).chain(headers.values()).chain(oauth) {
                    referenced_variables(text, &mut names);
                }
            }
        }
        names
    }

    /// The entry with its variables expanded from `lookup` (CLAT's environment)
    /// in `command`, `args`, `env` values, `cwd`, `url`, `headers` values and
    /// `oauth`'s `client_id` and `client_secret`.
    pub fn expand(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Expanded, ExpandError> {
        let mut substituted = Vec::new();
        let mut one = |text: &str, field: String| expand_text(text, &field, lookup, &mut substituted);
        let transport = match &self.transport {
            EntryTransport::Stdio { command, args, env, cwd, env_inherit } => EntryTransport::Stdio {
                command: one(command, "command".into())?,
                args: args.iter().enumerate().map(|(i, a)| one(a, format!("args[{i}]"))).collect::<Result<_, _>>()?,
                env: env.iter().map(|(k, v)| Ok((k.clone(), one(v, format!("env.{k}"))?))).collect::<Result<_, _>>()?,
                cwd: match cwd.as_deref().map(|c| one(c, "cwd".into())).transpose()? {
                    Some(cwd) if cwd_leaves_home(&cwd) => return Err(ExpandError::CwdLeavesHome),
                    cwd => cwd,
                },
                env_inherit: *env_inherit,
            },
            EntryTransport::Http { url, headers, oauth } => {
                let url = one(url, "url".into())?;
                if !is_http_url(&url) {
                    return Err(ExpandError::NotHttp);
                }
                let headers = headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), one(v, format!("headers.{k}"))?)))
                    .collect::<Result<_, _>>()?;
                let oauth = match oauth {
                    Some(oauth) => Some(OAuthEntry {
                        client_id: oauth.client_id.as_deref().map(|v| one(v, "oauth.client_id".into())).transpose()?,
                        client_secret: oauth
                            .client_secret
                            .as_deref()
                            .map(|v| one(v, "oauth.client_secret".into()))
                            .transpose()?,
                        ..oauth.clone()
                    }),
                    None => None,
                };
                EntryTransport::Http { url, headers, oauth }
            }
        };
        Ok(Expanded { entry: ServerEntry { transport, ..self.clone() }, substituted })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: TimeoutBounds =
        TimeoutBounds { startup: Duration::from_secs(20), tool_call: Duration::from_secs(120) };

    fn parse(text: &str) -> Result<McpConfig, ConfigError> {
        parse_config("mcp.json", text, &BOUNDS)
    }

    #[test]
    fn an_entry_names_every_variable_it_would_read() {
        let c = parse(
            r#"{ "a": { "command": "${BIN}", "args": ["--key=${env:API_KEY}", "$${NOT_ONE}", "${input:tok}",
                                                   "${WITH:-default}", "$HOME"],
                        "env": { "X": "${SECRET}" }, "cwd": "${DIR}" },
                 "b": { "url": "https://${HOST}/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" },
                        "oauth": { "client_secret": "${CLIENT_SECRET}" } } }"#,
        )
        .unwrap();
        let names = |server: &str| c.servers[server].variables().into_iter().collect::<Vec<_>>();
        assert_eq!(names("a"), ["API_KEY", "BIN", "DIR", "SECRET", "WITH"]);
        assert_eq!(names("b"), ["CLIENT_SECRET", "HOST", "TOKEN"]);
    }

    #[test]
    fn an_http_entry_may_carry_oauth_and_its_secret_is_expanded() {
        let c = parse(
            r#"{ "gh": { "url": "https://mcp.example/mcp",
                         "oauth": { "client_id": "cid", "client_secret": "${GH_SECRET}", "scopes": ["repo", "read:org"], "callback_port": 8765 } },
                 "cc": { "url": "https://m.example/mcp", "oauth": { "grant": "client_credentials" } },
                 "odd": { "url": "https://o.example/mcp", "oauth": { "clientid": "x" } },
                 "stdio": { "command": "x", "oauth": {} } }"#,
        )
        .unwrap();
        let env = |k: &str| (k == "GH_SECRET").then(|| "gh-secret-value-123".to_string());
        let gh = c.servers["gh"].expand(&env).unwrap();
        let EntryTransport::Http { oauth: Some(oauth), .. } = &gh.entry.transport else { panic!() };
        assert_eq!(oauth.client_secret.as_deref(), Some("gh-secret-value-123"));
        assert_eq!(oauth.scopes, ["repo", "read:org"]);
        assert_eq!(oauth.callback_port, Some(8765));
        assert!(gh.substituted.contains(&"gh-secret-value-123".to_string()), "the secret is redacted");
        assert!(!format!("{:?}", gh.entry).contains("gh-secret-value-123"));
        let errors: Vec<String> = c.errors.iter().map(|e| e.to_string()).collect();
        assert!(
            errors.iter().any(|e| e.contains("\"cc\"") && e.contains("needs `client_id` and `client_secret`")),
            "{errors:?}"
        );
        assert!(errors.iter().any(|e| e.contains("\"odd\"") && e.contains("clientid")), "{errors:?}");
        assert!(
            errors.iter().any(|e| e.contains("\"stdio\"") && e.contains("`oauth` applies to `url` entries only")),
            "{errors:?}"
        );
    }

    #[test]
    fn the_spec_example_parses() {
        let text = r#"{
          "filesystem": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
          "memory": { "command": "mcp-memory", "env": { "STORE": "/data" }, "cwd": "mcp-work" },
          "web-search": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer YOUR_API_KEY" } }
        }"#;
        let c = parse(text).unwrap();
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert_eq!(c.servers.len(), 3);
        assert!(matches!(&c.servers["memory"].transport,
            EntryTransport::Stdio { cwd: Some(cwd), env, env_inherit: true, .. } if cwd == "mcp-work" && env["STORE"] == "/data"));
        assert!(
            matches!(&c.servers["web-search"].transport, EntryTransport::Http { headers, .. } if headers.len() == 1)
        );
    }

    #[test]
    fn the_wrapper_shape_and_the_common_keys_parse() {
        let text = r#"{ "mcpServers": {
            "everything": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"] },
            "remote": { "type": "streamable-http", "url": "${BASE:-https://example.com}/mcp", "disabled": true },
            "tuned": { "command": "x", "startup_timeout_sec": 5, "tool_timeout_sec": 30.5,
                       "enabled_tools": ["a", "b"], "disabled_tools": ["b"], "env_inherit": false }
        } }"#;
        let c = parse(text).unwrap();
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert!(c.servers["everything"].enabled);
        assert!(!c.servers["remote"].enabled);
        let tuned = &c.servers["tuned"];
        assert_eq!(tuned.startup_timeout, Some(Duration::from_secs(5)));
        assert_eq!(tuned.tool_timeout, Some(Duration::from_millis(30_500)));
        let is = |tool: &'static str| move |name: &str| name == tool;
        assert!(tuned.tools.allows(is("a")) && !tuned.tools.allows(is("b")) && !tuned.tools.allows(is("c")));
        assert_eq!(tuned.tools.unknown(|name| ["a", "c"].contains(&name)), ["b"]);
        assert!(matches!(tuned.transport, EntryTransport::Stdio { env_inherit: false, .. }));
    }

    #[test]
    fn always_load_and_defer_loading_take_the_shapes_other_agents_write() {
        let text = r#"{ "mcpServers": {
            "claude": { "command": "x", "alwaysLoad": true },
            "some": { "command": "x", "always_load": ["search_issues"], "defer_loading": true },
            "later": { "url": "https://a.example/mcp", "deferLoading": true },
            "plain": { "command": "x" },
            "both": { "command": "x", "always_load": true, "defer_loading": true },
            "word": { "command": "x", "always_load": "yes" },
            "empty": { "command": "x", "always_load": [""] }
        } }"#;
        let c = parse(text).unwrap();
        assert_eq!(c.servers["claude"].loading, Loading { always_load: AlwaysLoad::All(true), defer_loading: false });
        let some = &c.servers["some"].loading;
        assert!(some.defer_loading && some.always_load == AlwaysLoad::Tools(vec!["search_issues".into()]));
        assert!(some.always_load.covers(|n| n == "search_issues") && !some.always_load.covers(|n| n == "other"));
        assert!(c.servers["later"].loading.defer_loading);
        assert_eq!(c.servers["plain"].loading, Loading::default());
        let errors: Vec<String> = c.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors.iter().any(|e| e.contains("\"both\"") && e.contains("disagree")), "{errors:?}");
        assert!(
            errors.iter().any(|e| e.contains("\"word\"") && e.contains("`always_load`: expected true, false")),
            "{errors:?}"
        );
        assert!(errors.iter().any(|e| e.contains("\"empty\"") && e.contains("empty tool name")), "{errors:?}");
        assert_eq!(c.servers["claude"].loading.describe().unwrap(), "always loaded: all its tools");
        assert_eq!(some.describe().unwrap(), "always loaded: search_issues; the others deferred");
        assert_eq!(c.servers["plain"].loading.describe(), None);
    }

    #[test]
    fn bad_entries_are_named_with_their_position_and_isolated() {
        let text = "{ \"both\": { \"command\": \"x\", \"url\": \"https://a\" },\n  \"neither\": { \"args\": [] },\n  \
                    \"good\": { \"command\": \"ok\" },\n  \"weird\": { \"command\": \"x\", \"timeout\": 1 },\n  \
                    \"ftp\": { \"url\": \"ftp://x\" },\n  \"typed\": { \"command\": \"x\", \"args\": [\"a\", 3] },\n  \
                    \"old\": { \"type\": \"sse\", \"url\": \"https://a\" },\n  \"slow\": { \"command\": \"x\", \"startup_timeout_sec\": 30 } }";
        let c = parse(text).unwrap();
        assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["good"]);
        let message = |name: &str| {
            c.errors
                .iter()
                .find(|e| matches!(e, ConfigError::Entry { name: n, .. } if n == name))
                .unwrap_or_else(|| panic!("no error for {name}: {:?}", c.errors))
                .to_string()
        };
        assert_eq!(c.errors.len(), 7);
        assert!(
            message("both").starts_with("mcp.json:1:") && message("both").contains("not both"),
            "{}",
            message("both")
        );
        assert!(message("neither").starts_with("mcp.json:2:") && message("neither").contains("exactly one transport"));
        assert!(
            message("weird").starts_with("mcp.json:4:41: entry \"weird\"")
                && message("weird").contains("unknown key `timeout`; the nearest known key is `tool_timeout_sec`"),
            "{}",
            message("weird")
        );
        assert!(message("ftp").contains("http:// or https://"));
        assert!(message("typed").starts_with("mcp.json:6:") && message("typed").contains("`args[1]`: invalid type"));
        assert!(message("old").contains("deprecated HTTP+SSE"));
        assert!(message("slow").contains("`startup_timeout_sec` 30 is past the 20 s startup maximum"));
        let long_calls = parse(r#"{ "l": { "command": "x", "tool_timeout_sec": 121 } }"#).unwrap();
        assert!(long_calls.errors[0].to_string().contains("`tool_timeout_sec` 121 is past the 120 s tool-call limit"));
        let at_the_limits = parse(r#"{ "l": { "command": "x", "tool_timeout_sec": 120, "startup_timeout_sec": 20 } }"#);
        assert!(at_the_limits.unwrap().errors.is_empty(), "the limits themselves are allowed");
        let err = parse(r#"{ "n": { "command": "x", "tool_timeout_sec": 1e400 } }"#).unwrap_err();
        assert!(err.to_string().contains("malformed"), "a number out of range: {err}");
        let err = parse("{\n  \"a\": {,}\n}").unwrap_err();
        assert!(err.to_string().starts_with("mcp.json is malformed at line 2"), "{err}");
        let err = parse(r#"{ "mcpServers": { "a": { "command": "x" } }, "b": { "command": "y" } }"#).unwrap_err();
        assert!(err.to_string().contains("mixes the two shapes") && err.to_string().contains("\"b\""), "{err}");
        assert!(nearest_key("disabledTools") == "disabled_tools" && nearest_key("comand") == "command");
    }

    #[test]
    fn vs_code_s_servers_wrapper_is_read_and_an_input_reference_is_given_or_refused_clearly() {
        let c = parse(
            r#"{ "inputs": [{ "type": "promptString", "id": "key", "password": true }],
                 "servers": { "gh": { "type": "http", "url": "https://api.example/mcp",
                                      "headers": { "Authorization": "Bearer ${input:key}" } },
                              "local": { "command": "npx", "args": ["-y", "pkg"] } } }"#,
        )
        .unwrap();
        assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["gh", "local"]);
        let err = c.servers["gh"].expand(&|_| None).unwrap_err();
        assert!(
            err.to_string().contains("`headers.Authorization` uses ${input:key}, a VS Code input")
                && err.to_string().contains("${env:NAME}"),
            "{err}"
        );
        // A value given for the input (the host's lookup answers `input:ID`) is substituted, and is a secret.
        let given = c.servers["gh"].expand(&|k| (k == "input:key").then(|| "s3cret-token".to_string())).unwrap();
        match &given.entry.transport {
            EntryTransport::Http { headers, .. } => assert_eq!(headers["Authorization"], "Bearer s3cret-token"),
            other => panic!("{other:?}"),
        }
        assert_eq!(given.substituted, ["s3cret-token"]);
        let flat = parse(r#"{ "servers": { "command": "x" } }"#).unwrap();
        assert!(flat.servers.contains_key("servers"), "a flat file's server named servers stays a server");
        let err = parse(r#"{ "servers": { "a": { "command": "x" } }, "b": { "command": "y" } }"#).unwrap_err();
        assert!(err.to_string().contains("mixes the two shapes") && err.to_string().contains("`servers`"), "{err}");
    }

    #[test]
    fn variables_expand_per_field_and_a_missing_one_names_itself_never_a_value() {
        let c = parse(
            r#"{ "s": { "command": "run-${TOOL}", "args": ["--key=${KEY}", "$$HOME", "${UNSET:-fallback}", "$x", "pa$$word", "$${KEY}", "a ${ b", "${}", "${1X}", "$"],
                        "env": { "TOKEN": "${KEY}" }, "cwd": "${DIR:-work}" },
                 "h": { "url": "${BASE}/mcp", "headers": { "Authorization": "Bearer ${KEY}" } },
                 "missing": { "url": "https://a", "headers": { "X-Key": "${NOPE}" } },
                 "bad": { "command": "${}" } }"#,
        )
        .unwrap();
        let env = |k: &str| match k {
            "TOOL" => Some("server".to_string()),
            "KEY" => Some("sk-secret-value-123".to_string()),
            "BASE" => Some("http://127.0.0.1:9".to_string()),
            _ => None,
        };
        let s = c.servers["s"].expand(&env).unwrap();
        let EntryTransport::Stdio { command, args, env: vars, cwd, .. } = &s.entry.transport else { panic!() };
        assert_eq!(command, "run-server");
        assert_eq!(
            args,
            &[
                "--key=sk-secret-value-123",
                "$$HOME",
                "fallback",
                "$x",
                "pa$$word",
                "${KEY}",
                "a ${ b",
                "${}",
                "${1X}",
                "$"
            ]
        );
        assert_eq!(vars["TOKEN"], "sk-secret-value-123");
        assert_eq!(cwd.as_deref(), Some("work"));
        assert!(s.substituted.contains(&"sk-secret-value-123".to_string()));
        let h = c.servers["h"].expand(&env).unwrap();
        assert!(matches!(&h.entry.transport, EntryTransport::Http { url, headers, .. }
            if url == "http://127.0.0.1:9/mcp" && headers["Authorization"] == "Bearer sk-secret-value-123"));
        let err = c.servers["missing"].expand(&env).unwrap_err();
        assert_eq!(err.to_string(), "`headers.X-Key` uses ${NOPE}, which is not set and has no default");
        let bad = c.servers["bad"].expand(&env).unwrap();
        assert!(matches!(&bad.entry.transport, EntryTransport::Stdio { command, .. } if command == "${}"));
        let climbing = parse(r#"{ "up": { "command": "x", "cwd": "a/../../etc" }, "ok": { "command": "x", "cwd": "a/../b" },
                                 "var": { "command": "x", "cwd": "${UP}" }, "abs": { "command": "x", "cwd": "/srv/x" } }"#)
        .unwrap();
        assert!(climbing.errors[0].to_string().contains("`cwd` climbs out of CLAT's home"), "{:?}", climbing.errors);
        assert_eq!(climbing.servers.keys().collect::<Vec<_>>(), ["abs", "ok", "var"]);
        let up = |_: &str| Some("../..".to_string());
        assert_eq!(climbing.servers["var"].expand(&up).unwrap_err(), ExpandError::CwdLeavesHome);
        let not_http = parse(r#"{ "u": { "url": "${BASE}" } }"#).unwrap();
        let err = not_http.servers["u"].expand(&|_| Some("ftp://x".into())).unwrap_err();
        assert!(!err.to_string().contains("ftp"), "never a value: {err}");
    }
}
