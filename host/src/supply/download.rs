//! Talking to an untrusted HTTP service within bounds: a redirect policy that
//! counts redirects and asks the caller's rule about each one, the body taken
//! chunk by chunk and refused as soon as it passes `max` bytes (a declared
//! length past it is refused before anything is read), a request's error told
//! with its causes, redacted, and which hosts are this machine (spoken to over
//! plain http). The MCP Registry client (`mcp/from_registry.rs`) and the OCI
//! pull (`oci.rs`) go through it.

/// Why a body was not read whole.
#[derive(Debug)]
pub enum BodyError {
    /// It declared or sent more than the bound.
    TooLarge,
    /// Reading it failed (a timeout, a broken connection): why, with its causes.
    Read(String),
}

/// The body of `response`, at most `max` bytes.
pub async fn bounded_body(mut response: reqwest::Response, max: u64) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > max) {
        return Err(BodyError::TooLarge);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| BodyError::Read(error_chain(&e)))? {
        if body.len() as u64 + chunk.len() as u64 > max {
            return Err(BodyError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// An error and its causes, `outer: inner: …`, redacted.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    crate::redact::redact(&text)
}

/// A redirect policy: at most `max` redirects, each one allowed by `allow(first, next)` (the URL first asked
/// for, the one redirected to), else refused with what `allow` says.
pub fn redirect_policy(
    max: usize,
    allow: impl Fn(&reqwest::Url, &reqwest::Url) -> Result<(), String> + Send + Sync + 'static,
) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > max {
            return attempt.error(format!("more than {max} redirects"));
        }
        let Some(first) = attempt.previous().first().cloned() else { return attempt.follow() };
        match allow(&first, attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(why) => attempt.error(why),
        }
    })
}

/// Whether `host` (a name or an address, without a port; an IPv6 address in brackets or not) is this machine.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_this_machine_only() {
        for host in ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "LOCALHOST"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["10.0.0.1", "example.com", "localhost.example.com", "[::2]"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
