//! Capabilities a WASM plugin asks for and the grants a user gives it: the
//! `[capabilities]` table of `clat-plugin.toml` (`http` patterns of scheme,
//! host or `*.`-suffix and port; `env` names), their validation (every bad
//! entry named), whether a grant covers what a package asks for (an upgrade
//! asking for more asks again), and the matching of one request's scheme,
//! host and port against a grant. Hosts, in grants and in requests alike, are
//! parsed the WHATWG way (the `url` crate, as the HTTP client parses URLs), so
//! `2130706433`, `0x7f000001`, `127.1` and `0177.0.0.1` are the address
//! 127.0.0.1, never a name, and are shown in that canonical form. An
//! internal address is reachable only through a grant that names it as an
//! address, and prompts say it is internal. A `[tools.NAME] uses` table says
//! which tools use which capability (`ToolUses`). The WASM runtime enforces a grant
//! (`wasm/http.rs`); the CLI asks for it (`cli/plugin.rs`). Nothing here
//! performs I/O.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::limits::{TOOLS_PER_SERVER_MAX, WASM_ENV_GRANTS_MAX, WASM_HTTP_GRANTS_MAX};

mod host;

pub use host::*;

/// Why a `[capabilities]` table is refused: the first bad entry and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilitiesError {
    #[error("capabilities.http lists {0} hosts; at most {WASM_HTTP_GRANTS_MAX}")]
    TooManyHosts(usize),
    #[error("capabilities.env lists {0} names; at most {WASM_ENV_GRANTS_MAX}")]
    TooManyNames(usize),
    #[error("capabilities.http entry {entry:?}: {why}")]
    Http { entry: String, why: PatternError },
    #[error(
        "capabilities.env entry {name:?}: an environment variable name is letters, digits and '_', not starting with a digit"
    )]
    EnvName { name: String },
}

/// Why a grant's origin pattern (or a host in it) does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("it must start with https:// or http://")]
    NoScheme,
    #[error("only https:// and http:// are supported")]
    Scheme,
    #[error("a grant names an origin (scheme, host, port), without a path, query or fragment")]
    NotAnOrigin,
    #[error("a grant may not carry user info (credentials belong in a granted environment variable)")]
    UserInfo,
    #[error("an IPv6 address must be closed with ']'")]
    UnclosedIpv6,
    #[error("expected ':port' after the IPv6 address")]
    AfterIpv6,
    #[error("port {0:?} is not 1–65535")]
    Port(String),
    #[error("plain http:// is allowed only for loopback hosts (localhost, 127.0.0.1, [::1]); use https://")]
    PlainHttp,
    #[error("any port (:*) is allowed only for loopback hosts")]
    AnyPort,
    #[error("the host is empty")]
    EmptyHost,
    #[error("'*' may only stand for whole leading labels, as in *.example.org; a grant never matches every host")]
    Wildcard,
    #[error("*.{0} is not a domain: a wildcard covers the names under a domain")]
    WildcardAddress(IpAddr),
    #[error("*.{0} is too broad: name at least a domain and its suffix, as in *.example.org")]
    TooBroad(String),
    #[error("{0:?} is not an IPv6 address")]
    Ipv6(String),
    #[error("{host:?} is not a host name{}", because.as_ref().map(|e| format!(" ({e})")).unwrap_or_default())]
    HostName { host: String, because: Option<String> },
}

/// What a package declares in `[capabilities]`, and what a user granted: the
/// same shape, so a grant is the declaration the user said yes to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// Origins the guest may send HTTP requests to (`https://api.example.com`,
    /// `https://*.example.org:8443`, `http://127.0.0.1:*`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub http: Vec<String>,
    /// Environment variables whose values the guest may read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

impl Capabilities {
    pub fn is_empty(&self) -> bool {
        self.http.is_empty() && self.env.is_empty()
    }

    /// Check every entry; the error names the first bad one and why.
    pub fn validate(&self) -> Result<(), CapabilitiesError> {
        if self.http.len() > WASM_HTTP_GRANTS_MAX {
            return Err(CapabilitiesError::TooManyHosts(self.http.len()));
        }
        if self.env.len() > WASM_ENV_GRANTS_MAX {
            return Err(CapabilitiesError::TooManyNames(self.env.len()));
        }
        for entry in &self.http {
            HttpPattern::parse(entry).map_err(|why| CapabilitiesError::Http { entry: entry.clone(), why })?;
        }
        if let Some(name) = self.env.iter().find(|name| !is_env_name(name)) {
            return Err(CapabilitiesError::EnvName { name: name.clone() });
        }
        Ok(())
    }

    /// The parsed `http` patterns (entries that do not parse are skipped:
    /// a manifest is validated before it is installed).
    pub fn http_patterns(&self) -> Vec<HttpPattern> {
        self.http.iter().filter_map(|p| HttpPattern::parse(p).ok()).collect()
    }

    /// Whether this grant holds everything `asked` asks for (same entries,
    /// compared as parsed patterns, so `HTTPS://X/` covers `https://x`).
    pub fn covers(&self, asked: &Capabilities) -> bool {
        let granted = self.http_patterns();
        asked.http_patterns().iter().all(|p| granted.contains(p)) && asked.env.iter().all(|n| self.env.contains(n))
    }

    /// Entries of `asked` that this grant does not hold, for the "asks for more" prompt.
    pub fn missing_from(&self, asked: &Capabilities) -> Capabilities {
        let granted = self.http_patterns();
        Capabilities {
            http: asked
                .http
                .iter()
                .filter(|p| HttpPattern::parse(p).map_or(true, |p| !granted.contains(&p)))
                .cloned()
                .collect(),
            env: asked.env.iter().filter(|n| !self.env.contains(n)).cloned().collect(),
        }
    }

    /// The entries of this grant that `declared` also holds: a grant never
    /// reaches past what the package declares.
    pub fn within(&self, declared: &Capabilities) -> Capabilities {
        let allowed = declared.http_patterns();
        Capabilities {
            http: self
                .http
                .iter()
                .filter(|g| HttpPattern::parse(g).is_ok_and(|p| allowed.contains(&p)))
                .cloned()
                .collect(),
            env: self.env.iter().filter(|n| declared.env.contains(n)).cloned().collect(),
        }
    }

    /// One line per entry, for prompts and listings: each origin in
    /// canonical form, an internal address said to be one.
    pub fn describe(&self) -> Vec<String> {
        let http = self.http.iter().map(|p| format!("HTTP requests to {}", shown(p)));
        let env = self.env.iter().map(|n| format!("the environment variable {n}"));
        http.chain(env).collect()
    }

    /// A compact form for tables: `http: a, b; env: X`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.http.is_empty() {
            let compact = |p: &String| match HttpPattern::parse(p) {
                Ok(pattern) if pattern.is_internal() => format!("{pattern} (internal)"),
                Ok(pattern) => pattern.to_string(),
                Err(_) => p.clone(),
            };
            parts.push(format!("http: {}", self.http.iter().map(compact).collect::<Vec<_>>().join(", ")));
        }
        if !self.env.is_empty() {
            parts.push(format!("env: {}", self.env.join(", ")));
        }
        if parts.is_empty() { "none".to_string() } else { parts.join("; ") }
    }
}

/// A grant entry as the user sees it: canonical, with a warning for an
/// internal address (as written when it does not parse).
fn shown(entry: &str) -> String {
    match HttpPattern::parse(entry) {
        Ok(pattern) if pattern.is_internal() => {
            format!("{pattern} (an internal address: a service on this machine or its private network)")
        }
        Ok(pattern) => pattern.to_string(),
        Err(_) => entry.to_string(),
    }
}

/// Letters, digits and `_`, not starting with a digit.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// One kind of capability a tool may use: the `http` or the `env` of the
/// plugin's `[capabilities]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    Http,
    Env,
}

impl Capability {
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Http => "http",
            Capability::Env => "env",
        }
    }
}

/// `[tools.NAME]` of a manifest: what one tool uses of its plugin's capabilities.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDeclaration {
    /// The capabilities this tool uses (`["http"]`); a tool not declared uses none.
    #[serde(default)]
    pub uses: Vec<Capability>,
    /// A plain component's tool: its description for the model (else its WIT doc comment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A plain component's tool: its effect, raised from external-read (never below what its grants imply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<DeclaredEffect>,
}

/// The effect a manifest says a plain component's tool has (`effect = "write"`). `read` is not among them: only
/// CLAT's native tools read through the path fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeclaredEffect {
    ExternalRead,
    Network,
    Write,
    Destructive,
}

impl DeclaredEffect {
    /// The pipeline's effect.
    pub fn effect(self) -> crate::contract::Effect {
        use crate::contract::Effect;
        match self {
            DeclaredEffect::ExternalRead => Effect::ExternalRead,
            DeclaredEffect::Network => Effect::Network,
            DeclaredEffect::Write => Effect::Write,
            DeclaredEffect::Destructive => Effect::Destructive,
        }
    }
}

/// Why a `[tools]` table is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolDeclarationError {
    #[error("[tools] declares {0} tools; at most {TOOLS_PER_SERVER_MAX}, as many as a plugin may list")]
    TooMany(usize),
    #[error("tools.{tool} uses {}, which [capabilities] does not declare", capability.as_str())]
    Undeclared { tool: String, capability: Capability },
}

/// Which tools of a plugin may use which of its granted capabilities: every
/// tool (a manifest without `[tools]`), or only the ones `[tools.NAME] uses`
/// names. The WASM runtime enforces it per call (a request from a tool that
/// does not use `http` is refused; the environment is set only for tools that
/// use `env`), and the registry raises to `network` only the tools that use `http`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolUses {
    /// `None`: no `[tools]` table, so every tool uses everything declared.
    declared: Option<BTreeMap<String, Vec<Capability>>>,
}

impl ToolUses {
    /// The uses of a manifest's `[tools]` table (empty: every tool uses everything).
    pub fn of(tools: &BTreeMap<String, ToolDeclaration>) -> ToolUses {
        if tools.is_empty() {
            return ToolUses::default();
        }
        ToolUses { declared: Some(tools.iter().map(|(name, d)| (name.clone(), d.uses.clone())).collect()) }
    }

    /// Check a `[tools]` table against the `[capabilities]` it draws on.
    pub fn validate(
        tools: &BTreeMap<String, ToolDeclaration>,
        declared: &Capabilities,
    ) -> Result<(), ToolDeclarationError> {
        if tools.len() > TOOLS_PER_SERVER_MAX {
            return Err(ToolDeclarationError::TooMany(tools.len()));
        }
        for (tool, declaration) in tools {
            for &capability in &declaration.uses {
                let present = match capability {
                    Capability::Http => !declared.http.is_empty(),
                    Capability::Env => !declared.env.is_empty(),
                };
                if !present {
                    return Err(ToolDeclarationError::Undeclared { tool: tool.clone(), capability });
                }
            }
        }
        Ok(())
    }

    /// Whether `tool` may use `capability`.
    pub fn allows(&self, tool: &str, capability: Capability) -> bool {
        match &self.declared {
            None => true,
            Some(tools) => tools.get(tool).is_some_and(|uses| uses.contains(&capability)),
        }
    }

    /// Whether the plugin says per tool what it uses (a `[tools]` table).
    pub fn is_per_tool(&self) -> bool {
        self.declared.is_some()
    }

    /// The tools `[tools]` names (none without the table), to check against the listing.
    pub fn named_tools(&self) -> impl Iterator<Item = &str> {
        self.declared.iter().flat_map(|tools| tools.keys().map(String::as_str))
    }
}

#[cfg(test)]
mod tests;
