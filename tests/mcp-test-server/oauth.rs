//! `--oauth`: the HTTP test server as an OAuth-protected MCP server and its
//! own authorization server (issuer `<origin>/as`), on 127.0.0.1 only. MCP
//! requests need a token it issued (else 401 with a `Bearer` challenge naming
//! its protected-resource metadata and the scope `mcp:read`); the tool
//! `write_note` needs `mcp:write` too (else 403 `insufficient_scope`).
//!
//! Its authorization server: RFC 8414 metadata (S256 PKCE, public clients,
//! RFC 9207 `iss`), dynamic registration, an authorization endpoint that
//! approves at once (302 to the redirect URI with the code, the state and
//! `iss`) after checking PKCE and `resource`, and a token endpoint for the
//! authorization code (PKCE verified) and refresh grants. Flags:
//! `--token-ttl SECS` (the access tokens' lifetime, default 3600),
//! `--revoke-refresh` (every refresh is refused with `invalid_grant`),
//! `--wrong-state` (the redirect carries another state), `--token-error` (the
//! token endpoint answers 500), `--other-issuer` (the metadata names another
//! issuer), `--refuse-tokens` (the MCP endpoint refuses every token, fresh ones
//! too), `--forget-tokens-at N` (the Nth `tools/call` finds every access token
//! forgotten, as after a server restart: a 401 mid-session), `--token-hang`
//! (the token endpoint never answers), `--huge-metadata` (the resource
//! metadata is 300 KiB), `--malformed-metadata` (it is not JSON),
//! `--authorization-endpoint URL` and `--token-endpoint URL` (the metadata
//! names these instead of its own endpoints). Each
//! token-endpoint request is logged as `TOKEN grant=…`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest;

pub struct OAuth {
    pub token_ttl: Duration,
    pub revoke_refresh: bool,
    pub wrong_state: bool,
    pub token_error: bool,
    pub other_issuer: bool,
    pub refuse_tokens: bool,
    pub forget_tokens_at: Option<usize>,
    pub token_hang: bool,
    pub huge_metadata: bool,
    pub malformed_metadata: bool,
    pub authorization_endpoint: Option<String>,
    pub token_endpoint: Option<String>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    /// code → (PKCE challenge, scopes)
    codes: HashMap<String, (String, String)>,
    /// access token → (expiry, scopes)
    tokens: HashMap<String, (Instant, String)>,
    /// refresh token → scopes
    refresh: HashMap<String, String>,
    calls: usize,
}

/// What the OAuth part answers: `None` lets the MCP server handle the request.
pub enum Answer {
    Json(&'static str, Vec<(&'static str, String)>, String),
    Redirect(String),
}

pub fn query(text: &str) -> HashMap<String, String> {
    text.split('&').filter_map(|pair| pair.split_once('=')).map(|(k, v)| (decode(k), decode(v))).collect()
}

/// `application/x-www-form-urlencoded` decoding.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl OAuth {
    pub fn new(args: &[String]) -> Option<OAuth> {
        let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
        let has = |flag: &str| args.iter().any(|a| a == flag);
        has("--oauth").then(|| OAuth {
            token_ttl: Duration::from_secs(value("--token-ttl").and_then(|v| v.parse().ok()).unwrap_or(3600)),
            revoke_refresh: has("--revoke-refresh"),
            wrong_state: has("--wrong-state"),
            token_error: has("--token-error"),
            other_issuer: has("--other-issuer"),
            refuse_tokens: has("--refuse-tokens"),
            forget_tokens_at: value("--forget-tokens-at").and_then(|v| v.parse().ok()),
            token_hang: has("--token-hang"),
            huge_metadata: has("--huge-metadata"),
            malformed_metadata: has("--malformed-metadata"),
            authorization_endpoint: value("--authorization-endpoint"),
            token_endpoint: value("--token-endpoint"),
            state: Mutex::default(),
        })
    }

    /// The OAuth endpoints (`origin` is `http://127.0.0.1:PORT`).
    pub fn endpoint(&self, origin: &str, method: &str, target: &str, body: &[u8]) -> Option<Answer> {
        let (path, query_text) = target.split_once('?').unwrap_or((target, ""));
        let issuer = format!("{origin}/as");
        let ok = |body: Value| Some(Answer::Json("200 OK", vec![], body.to_string()));
        let bad = |status: &'static str, error: &str| {
            Some(Answer::Json(status, vec![], json!({ "error": error }).to_string()))
        };
        match (method, path) {
            ("GET", "/.well-known/oauth-protected-resource/mcp") if self.malformed_metadata => {
                Some(Answer::Json("200 OK", vec![], "{\"resource\": ".into()))
            }
            ("GET", "/.well-known/oauth-protected-resource/mcp") if self.huge_metadata => ok(json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [issuer],
                "padding": "x".repeat(300 * 1024),
            })),
            ("GET", "/.well-known/oauth-protected-resource/mcp") => ok(json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [issuer],
                "scopes_supported": ["mcp:read", "mcp:write"],
            })),
            ("GET", "/.well-known/oauth-authorization-server/as") => ok(json!({
                "issuer": if self.other_issuer { format!("{origin}/elsewhere") } else { issuer.clone() },
                "authorization_endpoint": self.authorization_endpoint.clone().unwrap_or(format!("{issuer}/authorize")),
                "token_endpoint": self.token_endpoint.clone().unwrap_or(format!("{issuer}/token")),
                "registration_endpoint": format!("{issuer}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": true,
                "scopes_supported": ["mcp:read", "mcp:write"],
            })),
            ("POST", "/as/register") => {
                let mut state = self.state.lock().unwrap();
                state.next += 1;
                let id = format!("client-{}", state.next);
                Some(Answer::Json(
                    "201 Created",
                    vec![],
                    json!({ "client_id": id, "token_endpoint_auth_method": "none" }).to_string(),
                ))
            }
            ("GET", "/as/authorize") => {
                let q = query(query_text);
                if q.get("code_challenge_method").map(String::as_str) != Some("S256")
                    || q.get("resource") != Some(&format!("{origin}/mcp"))
                {
                    return bad("400 Bad Request", "invalid_request");
                }
                let mut state = self.state.lock().unwrap();
                state.next += 1;
                let code = format!("code-{}", state.next);
                let challenge = q.get("code_challenge").cloned().unwrap_or_default();
                state.codes.insert(code.clone(), (challenge, q.get("scope").cloned().unwrap_or_default()));
                let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
                let given = q.get("state").cloned().unwrap_or_default();
                let returned = if self.wrong_state { format!("{given}x") } else { given };
                Some(Answer::Redirect(format!(
                    "{redirect}?code={}&state={}&iss={}",
                    encode(&code),
                    encode(&returned),
                    encode(&issuer)
                )))
            }
            ("POST", "/as/token") if self.token_hang => {
                std::thread::sleep(std::time::Duration::from_secs(600));
                None
            }
            ("POST", "/as/token") if self.token_error => Some(Answer::Json(
                "500 Internal Server Error",
                vec![],
                json!({ "error": "server_error", "error_description": "the token store is down" }).to_string(),
            )),
            ("POST", "/as/token") => {
                let form = query(&String::from_utf8_lossy(body));
                let grant = form.get("grant_type").cloned().unwrap_or_default();
                if form.get("resource") != Some(&format!("{origin}/mcp")) {
                    return bad("400 Bad Request", "invalid_target");
                }
                let mut state = self.state.lock().unwrap();
                let scopes = match grant.as_str() {
                    "authorization_code" => {
                        let code = form.get("code").cloned().unwrap_or_default();
                        let Some((challenge, scopes)) = state.codes.remove(&code) else {
                            return bad("400 Bad Request", "invalid_grant");
                        };
                        let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                        let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                            .encode(sha2::Sha256::digest(verifier.as_bytes()));
                        if computed != challenge {
                            return bad("400 Bad Request", "invalid_grant");
                        }
                        scopes
                    }
                    "refresh_token" => {
                        let token = form.get("refresh_token").cloned().unwrap_or_default();
                        match state.refresh.get(&token) {
                            Some(scopes) if !self.revoke_refresh => scopes.clone(),
                            _ => return bad("400 Bad Request", "invalid_grant"),
                        }
                    }
                    _ => return bad("400 Bad Request", "unsupported_grant_type"),
                };
                state.next += 1;
                let access = format!("access-token-{}-{}", state.next, std::process::id());
                let refresh = format!("refresh-token-{}-{}", state.next, std::process::id());
                state.tokens.insert(access.clone(), (Instant::now() + self.token_ttl, scopes.clone()));
                state.refresh.insert(refresh.clone(), scopes.clone());
                ok(json!({
                    "access_token": access,
                    "token_type": "Bearer",
                    "expires_in": self.token_ttl.as_secs(),
                    "refresh_token": refresh,
                    "scope": scopes,
                }))
            }
            _ => None,
        }
    }

    /// Whether an MCP request may go on: `Err` is the 401 or 403 to answer.
    pub fn admit(&self, origin: &str, authorization: Option<&str>, tool: Option<&str>) -> Result<(), Answer> {
        let challenge = |extra: &str| {
            format!(
                "Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\", scope=\"mcp:read\"{extra}"
            )
        };
        let mut state = self.state.lock().unwrap();
        if tool.is_some() {
            state.calls += 1;
            if Some(state.calls) == self.forget_tokens_at {
                state.tokens.clear();
            }
        }
        let granted = authorization
            .and_then(|a| a.strip_prefix("Bearer "))
            .and_then(|token| state.tokens.get(token))
            .filter(|(expiry, _)| Instant::now() < *expiry && !self.refuse_tokens)
            .map(|(_, scopes)| scopes.clone());
        let Some(scopes) = granted else {
            return Err(Answer::Json(
                "401 Unauthorized",
                vec![("WWW-Authenticate", challenge(", error=\"invalid_token\""))],
                json!({ "error": "invalid_token" }).to_string(),
            ));
        };
        if tool == Some("write_note") && !scopes.split(' ').any(|s| s == "mcp:write") {
            return Err(Answer::Json(
                "403 Forbidden",
                vec![(
                    "WWW-Authenticate",
                    format!(
                        "Bearer error=\"insufficient_scope\", scope=\"mcp:read mcp:write\", resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
                    ),
                )],
                json!({ "error": "insufficient_scope" }).to_string(),
            ));
        }
        Ok(())
    }
}
