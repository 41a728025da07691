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

pub(crate) fn is_http_url(url: &str) -> bool {
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
pub(crate) const CWD_LEAVES_HOME: &str = "`cwd` climbs out of CLAT's home with '..'; a relative cwd stays under it (give an \
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

mod entry;
mod expand;

pub use entry::{AlwaysLoad, EntryTransport, Loading, OAuthEntry, ServerEntry, ToolFilter};
pub use expand::{ExpandError, Expanded, is_variable_name};

#[cfg(test)]
mod tests;
