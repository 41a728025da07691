//! One server's entry as parsed: its transport (stdio or Streamable HTTP, with
//! OAuth settings), whether it is enabled, its timeouts, its tool filter, how
//! its `always_load` / `defer_loading` settings (`Loading`), and where it
//! came from in the MCP Registry.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::RegistryOrigin;

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

/// An entry's `always_load` and `defer_loading`, as written and checked
/// together: some or all of its tools always offered, the rest deferred
/// (what the host makes of them — progressive discovery — is the host's).
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
