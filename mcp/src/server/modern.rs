//! The modern era (2026-07-28) as a server: no handshake and no session —
//! each request carries its envelope in `params._meta` (the protocol version
//! and the client's capabilities, required; who the client is, the log level
//! it wants and its progress token, optional), read and checked here
//! (`Envelope::read`: a missing field is `-32602`, a version other than
//! `MODERN_VERSION` is `-32022` naming the one we speak). A request speaks
//! this era when it is the era probe (`server/discover`) or carries an
//! envelope version (`speaks_modern`). Every result says it is `complete`
//! and who answered (`complete`); listings carry caching hints
//! (`LIST_TTL`, or what the host says of its tools, `ServedTools::listing_ttl`;
//! private: they are this project's). A modern client is
//! never sent a request: what a call asks it comes as `input_required`
//! rounds (`rounds`).

use serde_json::{Value, json};

use super::ServerInfo;
use crate::jsonrpc::{INVALID_PARAMS, WireError};
use crate::protocol::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, ClientInfo, LOG_LEVEL_KEY, MODERN_VERSION, PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY, UNSUPPORTED_PROTOCOL_VERSION,
};

/// How long a client may keep a listing (`ttlMs`): the served registry is
/// fixed once its initial surface is in; only a server that stops takes
/// tools away, which a client learns when calling them.
pub(crate) const LIST_TTL: std::time::Duration = std::time::Duration::from_secs(60);

/// The versions a modern request may declare.
pub(crate) const MODERN_VERSIONS: [&str; 1] = [MODERN_VERSION];

/// What a modern request says about itself.
#[derive(Debug, Clone)]
pub(crate) struct Envelope {
    pub(crate) client: ClientInfo,
    pub(crate) capabilities: Value,
    /// The least severe log level it wants; none: it gets no log lines.
    pub(crate) log_level: Option<String>,
}

/// Whether a request speaks the modern era: the era probe, or an envelope version.
pub(crate) fn speaks_modern(method: &str, params: Option<&Value>) -> bool {
    method == "server/discover"
        || params.and_then(|p| p.get("_meta")).is_some_and(|m| m.get(PROTOCOL_VERSION_KEY).is_some())
}

/// The envelope version a request declares, if any.
pub(crate) fn declared_version(params: Option<&Value>) -> Option<&str> {
    params?.get("_meta")?.get(PROTOCOL_VERSION_KEY)?.as_str()
}

impl Envelope {
    /// Read and check a request's envelope.
    pub(crate) fn read(params: Option<&Value>) -> Result<Envelope, WireError> {
        let missing = |what: &str| WireError::new(INVALID_PARAMS, format!("the request's _meta lacks {what}"));
        let meta = params.and_then(|p| p.get("_meta")).filter(|m| m.is_object()).ok_or_else(|| {
            WireError::new(INVALID_PARAMS, format!("a {MODERN_VERSION} request carries params._meta"))
        })?;
        let version = meta.get(PROTOCOL_VERSION_KEY).ok_or_else(|| missing(PROTOCOL_VERSION_KEY))?;
        let capabilities = meta.get(CLIENT_CAPABILITIES_KEY).filter(|c| c.is_object());
        let capabilities = capabilities.ok_or_else(|| missing(CLIENT_CAPABILITIES_KEY))?.clone();
        let requested = version.as_str().unwrap_or_default();
        if !MODERN_VERSIONS.contains(&requested) {
            return Err(unsupported_version(version));
        }
        let info = meta.get(CLIENT_INFO_KEY);
        let text = |key: &str| info.and_then(|i| i[key].as_str()).unwrap_or_default().to_string();
        let client =
            ClientInfo { name: info.map_or_else(|| "unknown".to_string(), |_| text("name")), version: text("version") };
        let log_level = meta.get(LOG_LEVEL_KEY).and_then(Value::as_str).map(str::to_string);
        Ok(Envelope { client, capabilities, log_level })
    }
}

/// `-32022`: the version asked for is not one we speak; names those we do.
pub(crate) fn unsupported_version(requested: &Value) -> WireError {
    let mut error = WireError::new(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version");
    error.data = Some(json!({ "supported": MODERN_VERSIONS, "requested": requested }));
    error
}

/// `server/discover`: the versions, what is served, and the instructions.
pub(crate) fn discover(info: &ServerInfo) -> Value {
    let mut result = cacheable(json!({
        "supportedVersions": MODERN_VERSIONS,
        "capabilities": super::served_capabilities(info, true),
    }));
    if let Some(instructions) = &info.instructions {
        result["instructions"] = json!(instructions);
    }
    result
}

/// A listing's caching hints: fresh for `LIST_TTL`, for this client only.
pub(crate) fn cacheable(result: Value) -> Value {
    cacheable_for(result, None)
}

/// A listing's caching hints: fresh for `ttl` (none: `LIST_TTL`), for this client only.
pub(crate) fn cacheable_for(mut result: Value, ttl: Option<std::time::Duration>) -> Value {
    result["ttlMs"] = json!(ttl.unwrap_or(LIST_TTL).as_millis() as u64);
    result["cacheScope"] = json!("private");
    result
}

/// A modern result: `complete`, unless it says otherwise, and who answered.
pub(crate) fn complete(mut result: Value, info: &ServerInfo) -> Value {
    if !result.is_object() {
        return result;
    }
    if result.get("resultType").is_none() {
        result["resultType"] = json!("complete");
    }
    let server = json!({ "name": info.name, "version": info.version });
    match result.get_mut("_meta").and_then(Value::as_object_mut) {
        Some(meta) => {
            meta.insert(SERVER_INFO_KEY.to_string(), server);
        }
        None => result["_meta"] = json!({ SERVER_INFO_KEY: server }),
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(meta: Value) -> Option<Value> {
        Some(json!({ "_meta": meta }))
    }

    #[test]
    fn an_envelope_needs_its_version_and_capabilities_and_a_version_we_speak() {
        let code = |params: Option<Value>| Envelope::read(params.as_ref()).unwrap_err().code;
        assert_eq!(code(None), INVALID_PARAMS);
        assert_eq!(code(meta(json!({ CLIENT_CAPABILITIES_KEY: {} }))), INVALID_PARAMS);
        assert_eq!(code(meta(json!({ PROTOCOL_VERSION_KEY: MODERN_VERSION }))), INVALID_PARAMS);
        let unknown = Envelope::read(meta(json!({ PROTOCOL_VERSION_KEY: "v9", CLIENT_CAPABILITIES_KEY: {} })).as_ref());
        let unknown = unknown.unwrap_err();
        assert_eq!(unknown.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(unknown.data, Some(json!({ "supported": [MODERN_VERSION], "requested": "v9" })));
        let envelope = Envelope::read(
            meta(json!({ PROTOCOL_VERSION_KEY: MODERN_VERSION, CLIENT_CAPABILITIES_KEY: { "sampling": {} },
                         CLIENT_INFO_KEY: { "name": "agent", "version": "2" }, LOG_LEVEL_KEY: "info" }))
            .as_ref(),
        )
        .unwrap();
        assert_eq!((envelope.client.name.as_str(), envelope.log_level.as_deref()), ("agent", Some("info")));
        let anonymous = meta(json!({ PROTOCOL_VERSION_KEY: MODERN_VERSION, CLIENT_CAPABILITIES_KEY: {} }));
        assert_eq!(Envelope::read(anonymous.as_ref()).unwrap().client.name, "unknown", "clientInfo is optional");
    }

    #[test]
    fn results_say_they_are_complete_and_who_answered() {
        let info = ServerInfo { name: "clat".into(), version: "1".into(), instructions: None, tools_change: false };
        let result = complete(json!({ "content": [], "_meta": { "x": 1 } }), &info);
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["_meta"], json!({ "x": 1, SERVER_INFO_KEY: { "name": "clat", "version": "1" } }));
        let discovered = complete(discover(&info), &info);
        assert_eq!(discovered["supportedVersions"], json!([MODERN_VERSION]));
        assert_eq!((discovered["cacheScope"].as_str(), discovered["ttlMs"].is_u64()), (Some("private"), true));
    }
}
