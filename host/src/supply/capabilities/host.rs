//! One `http` grant's pattern — scheme, host or `*.`-suffix, port — parsed and
//! matched against a request; hosts parsed the WHATWG way (as the HTTP client
//! parses URLs), shown canonical, and the internal-address rule.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::*;

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

pub(super) fn split_host_port(rest: &str) -> Result<(String, Option<&str>), PatternError> {
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

pub(super) fn parse_host(host: &str) -> Result<HostPattern, PatternError> {
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
pub(super) fn canonical(ip: IpAddr) -> IpAddr {
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

pub(super) fn internal_v4(ip: Ipv4Addr) -> bool {
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

pub(super) fn internal_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
}
