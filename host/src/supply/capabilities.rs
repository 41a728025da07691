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
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use crate::limits::{TOOLS_PER_SERVER_MAX, WASM_ENV_GRANTS_MAX, WASM_HTTP_GRANTS_MAX};

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

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpScheme {
    Http,
    Https,
}

impl HttpScheme {
    pub fn as_str(self) -> &'static str {
        match self {
            HttpScheme::Http => "http",
            HttpScheme::Https => "https",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            HttpScheme::Http => 80,
            HttpScheme::Https => 443,
        }
    }

    pub fn parse(text: &str) -> Option<HttpScheme> {
        match text.to_ascii_lowercase().as_str() {
            "http" => Some(HttpScheme::Http),
            "https" => Some(HttpScheme::Https),
            _ => None,
        }
    }
}

/// The host part of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One host name (lower case).
    Name(String),
    /// `*.example.org`: any name ending in `.example.org` (not `example.org` itself).
    Subdomains(String),
    /// An IP address literal.
    Address(IpAddr),
}

/// The port part of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortPattern {
    One(u16),
    /// `:*`, allowed only for loopback hosts (a local development server).
    Any,
}

/// One parsed `http` grant entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpPattern {
    pub scheme: HttpScheme,
    pub host: HostPattern,
    pub port: PortPattern,
}

impl std::fmt::Display for HttpPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = match &self.host {
            HostPattern::Name(name) => name.clone(),
            HostPattern::Subdomains(suffix) => format!("*.{suffix}"),
            HostPattern::Address(IpAddr::V6(ip)) => format!("[{ip}]"),
            HostPattern::Address(ip) => ip.to_string(),
        };
        match self.port {
            PortPattern::One(port) if port == self.scheme.default_port() => {
                write!(f, "{}://{host}", self.scheme.as_str())
            }
            PortPattern::One(port) => write!(f, "{}://{host}:{port}", self.scheme.as_str()),
            PortPattern::Any => write!(f, "{}://{host}:*", self.scheme.as_str()),
        }
    }
}

impl HttpPattern {
    /// Parse `scheme://host[:port][/]`. Refused: another scheme, a path,
    /// query, fragment or user info, a bare or inner `*`, a `*.` suffix of
    /// fewer than two labels, plain `http://` or `:*` for a host that is not
    /// loopback.
    pub fn parse(text: &str) -> Result<HttpPattern, PatternError> {
        let (scheme, rest) = text.split_once("://").ok_or(PatternError::NoScheme)?;
        let scheme = HttpScheme::parse(scheme).ok_or(PatternError::Scheme)?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(PatternError::NotAnOrigin);
        }
        if rest.contains('@') {
            return Err(PatternError::UserInfo);
        }
        let (host, port) = split_host_port(rest)?;
        let host = parse_host(&host)?;
        let port = match port {
            None => PortPattern::One(scheme.default_port()),
            Some("*") => PortPattern::Any,
            Some(port) => PortPattern::One(
                port.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| PatternError::Port(port.to_string()))?,
            ),
        };
        let pattern = HttpPattern { scheme, host, port };
        let loopback = pattern.is_loopback();
        if scheme == HttpScheme::Http && !loopback {
            return Err(PatternError::PlainHttp);
        }
        if port == PortPattern::Any && !loopback {
            return Err(PatternError::AnyPort);
        }
        Ok(pattern)
    }

    /// Whether the pattern names an internal address (loopback, private, link-local, …).
    pub fn is_internal(&self) -> bool {
        matches!(self.host, HostPattern::Address(ip) if is_internal_address(ip))
    }

    /// Whether the pattern names a loopback host (`localhost` or a loopback address).
    pub fn is_loopback(&self) -> bool {
        match &self.host {
            HostPattern::Name(name) => is_localhost(name),
            HostPattern::Address(ip) => canonical(*ip).is_loopback(),
            HostPattern::Subdomains(_) => false,
        }
    }

    /// Whether a request to `scheme://host:port` is within this pattern.
    /// `host` is as written in the URL (a name, an IPv4 address or a bracketed IPv6 one).
    pub fn matches(&self, scheme: HttpScheme, host: &str, port: u16) -> bool {
        if scheme != self.scheme || !matches!(self.port, PortPattern::Any) && self.port != PortPattern::One(port) {
            return false;
        }
        match (&self.host, canonical_host(host)) {
            (HostPattern::Address(granted), Ok(Host::Address(ip))) => canonical(*granted) == canonical(ip),
            (HostPattern::Name(name), Ok(Host::Name(host))) => *name == host,
            (HostPattern::Subdomains(suffix), Ok(Host::Name(host))) => {
                host.len() > suffix.len() + 1 && host.ends_with(suffix.as_str()) && {
                    let cut = host.len() - suffix.len();
                    host.as_bytes()[cut - 1] == b'.'
                }
            }
            _ => false,
        }
    }
}

/// Whether any pattern of `grant` covers the request.
pub fn grant_allows(grant: &[HttpPattern], scheme: HttpScheme, host: &str, port: u16) -> bool {
    grant.iter().any(|p| p.matches(scheme, host, port))
}

fn split_host_port(rest: &str) -> Result<(String, Option<&str>), PatternError> {
    if let Some(inner) = rest.strip_prefix('[') {
        let (host, after) = inner.split_once(']').ok_or(PatternError::UnclosedIpv6)?;
        return match after {
            "" => Ok((host.to_string(), None)),
            after => match after.strip_prefix(':') {
                Some(port) => Ok((host.to_string(), Some(port))),
                None => Err(PatternError::AfterIpv6),
            },
        };
    }
    Ok(match rest.rsplit_once(':') {
        Some((host, port)) => (host.to_string(), Some(port)),
        None => (rest.to_string(), None),
    })
}

/// A host in canonical form: an address, or a lower-case name (IDNA applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Address(IpAddr),
    Name(String),
}

/// Parse a host as written in a URL or a grant (an IPv6 address with or
/// without its brackets, a trailing dot ignored), the WHATWG way: every
/// numeric IPv4 form is an address.
pub fn canonical_host(host: &str) -> Result<Host, PatternError> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.contains(':') {
        return bare.parse::<IpAddr>().map(Host::Address).map_err(|_| PatternError::Ipv6(host.to_string()));
    }
    match url::Host::parse(host) {
        Ok(url::Host::Ipv4(ip)) => Ok(Host::Address(IpAddr::V4(ip))),
        Ok(url::Host::Ipv6(ip)) => Ok(Host::Address(IpAddr::V6(ip))),
        Ok(url::Host::Domain(name)) => Ok(Host::Name(name.to_ascii_lowercase())),
        Err(e) => Err(PatternError::HostName { host: host.to_string(), because: Some(e.to_string()) }),
    }
}

fn parse_host(host: &str) -> Result<HostPattern, PatternError> {
    let host = host.to_ascii_lowercase();
    if host.is_empty() {
        return Err(PatternError::EmptyHost);
    }
    let (wildcard, name) = match host.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, host.as_str()),
    };
    if name.contains('*') || host == "*" {
        return Err(PatternError::Wildcard);
    }
    let name = match canonical_host(name)? {
        Host::Address(ip) if !wildcard => return Ok(HostPattern::Address(ip)),
        Host::Address(ip) => return Err(PatternError::WildcardAddress(ip)),
        Host::Name(name) => name,
    };
    let labels: Vec<&str> = name.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if name.len() > 253 || !labels.iter().all(label_ok) {
        return Err(PatternError::HostName { host: name, because: None });
    }
    if wildcard {
        if labels.len() < 2 {
            return Err(PatternError::TooBroad(name));
        }
        return Ok(HostPattern::Subdomains(name));
    }
    Ok(HostPattern::Name(name))
}

/// `localhost` and names under it resolve to loopback by definition (RFC 6761).
pub fn is_localhost(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

/// An IPv4-mapped IPv6 address as the IPv4 address it maps.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether an address is not on the public internet: loopback, private,
/// link-local, shared (CGNAT), unspecified, broadcast, multicast, documentation
/// or unique-local. A granted host *name* may resolve only to public addresses.
pub fn is_internal_address(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
}

fn internal_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
}

#[cfg(test)]
mod tests;
