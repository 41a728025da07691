//! JSON-RPC 2.0 as MCP uses it: typed messages, string and integer ids (0
//! included, never null), and the wire error object — kept apart from the
//! client's runtime errors (`crate::error::ClientError`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id: an integer or a string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(i64),
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error object, as sent or received on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct WireError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Standard codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// Our code for a server request refused because the inbound queue is full.
pub const SERVER_BUSY: i64 = -32000;

impl WireError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        WireError { code, message: message.into(), data: None }
    }
}

/// One message on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request {
        id: RequestId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Response {
        id: RequestId,
        result: Result<Value, WireError>,
    },
    /// An error response without a usable id (allowed from 2025-11-25).
    OrphanError(WireError),
}

/// Why a line is not a valid message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("protocol violation: {0}")]
pub struct Malformed(pub String);

fn id_of(value: &Value) -> Result<Option<RequestId>, Malformed> {
    match value {
        Value::Null => Ok(None),
        Value::Number(n) => {
            n.as_i64().map(|n| Some(RequestId::Number(n))).ok_or_else(|| Malformed(format!("id {n} is not an integer")))
        }
        Value::String(s) => Ok(Some(RequestId::String(s.clone()))),
        other => Err(Malformed(format!("id must be a string or an integer, not {other}"))),
    }
}

/// A message as read in one pass: the members typed, the payload (`params`,
/// `result`, `error`) parsed straight into values, so a frame is never built
/// as a whole object first. A member present as `null` is `Some(Null)`, not
/// absent.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, borrow, deserialize_with = "present_str")]
    method: Option<&'a str>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A member that is present, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A string member (a `null` one is refused, as is a string with escapes:
/// the long way reads those).
fn present_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de str>, D::Error> {
    <&str>::deserialize(d).map(Some)
}

/// Parse one message (one line of stdio, or one JSON body).
pub fn parse(text: &[u8]) -> Result<Message, Malformed> {
    // Most frames are well formed: read them in one pass. Anything that pass
    // does not take (not an object, a duplicate member, a member of the wrong
    // type) goes the long way, which names what is wrong.
    match serde_json::from_slice::<Envelope>(text) {
        Ok(envelope) => from_envelope(envelope),
        Err(_) => parse_value(text),
    }
}

fn from_envelope(envelope: Envelope) -> Result<Message, Malformed> {
    if envelope.jsonrpc != Some("2.0") {
        return Err(Malformed("`jsonrpc` must be \"2.0\"".into()));
    }
    let id = match &envelope.id {
        Some(id) => id_of(id)?,
        None => None,
    };
    if let Some(method) = envelope.method {
        let (method, params) = (method.to_string(), envelope.params);
        return Ok(match id {
            Some(id) => Message::Request { id, method, params },
            None => Message::Notification { method, params },
        });
    }
    if let Some(error) = envelope.error {
        let error: WireError =
            serde_json::from_value(error).map_err(|e| Malformed(format!("bad error object: {e}")))?;
        return Ok(match id {
            Some(id) => Message::Response { id, result: Err(error) },
            None => Message::OrphanError(error),
        });
    }
    if let Some(result) = envelope.result {
        let id = id.ok_or_else(|| Malformed("a result needs an id".into()))?;
        return Ok(Message::Response { id, result: Ok(result) });
    }
    Err(Malformed("neither a request, a notification nor a response".into()))
}

/// The long way: the whole frame as a `Value`, each part checked in turn.
fn parse_value(text: &[u8]) -> Result<Message, Malformed> {
    let value: Value = serde_json::from_slice(text).map_err(|e| Malformed(format!("not JSON: {e}")))?;
    let Value::Object(mut obj) = value else {
        return Err(Malformed("a message must be a JSON object".into()));
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Malformed("`jsonrpc` must be \"2.0\"".into()));
    }
    let id = match obj.get("id") {
        Some(v) => id_of(v)?,
        None => None,
    };
    // The message's parts are moved out of the parsed object, never copied.
    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else { return Err(Malformed("`method` must be a string".into())) };
        let params = obj.remove("params");
        return Ok(match id {
            Some(id) => Message::Request { id, method, params },
            None => Message::Notification { method, params },
        });
    }
    if let Some(error) = obj.remove("error") {
        let error: WireError =
            serde_json::from_value(error).map_err(|e| Malformed(format!("bad error object: {e}")))?;
        return Ok(match id {
            Some(id) => Message::Response { id, result: Err(error) },
            None => Message::OrphanError(error),
        });
    }
    if let Some(result) = obj.remove("result") {
        let id = id.ok_or_else(|| Malformed("a result needs an id".into()))?;
        return Ok(Message::Response { id, result: Ok(result) });
    }
    Err(Malformed("neither a request, a notification nor a response".into()))
}

/// The id of a frame that failed to parse but is meant as a response (it has
/// no `method`), when one can be read: from the JSON object if it is JSON,
/// else from an `"id": 12` or `"id": "x"` in its text. Lets the client fail
/// that request with a protocol error instead of leaving it to its deadline.
pub fn recover_response_id(text: &[u8]) -> Option<RequestId> {
    if let Ok(value) = serde_json::from_slice::<Value>(text) {
        let obj = value.as_object()?;
        if obj.contains_key("method") {
            return None;
        }
        return id_of(obj.get("id")?).ok().flatten();
    }
    let text = std::str::from_utf8(text).ok()?;
    if text.contains("\"method\"") {
        return None;
    }
    let after = text[text.find("\"id\"")? + 4..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(quoted) = after.strip_prefix('"') {
        let end = quoted.find(['"', '\\'])?;
        return (quoted.as_bytes()[end] == b'"').then(|| RequestId::String(quoted[..end].to_string()));
    }
    let digits: &str = &after[..after.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(after.len())];
    digits.parse().ok().map(RequestId::Number)
}

/// A message as written: borrowed parts, serialized straight to the output.
#[derive(Serialize)]
struct Outgoing<'a> {
    jsonrpc: &'static str,
    /// `Some(None)` is the `null` id of an error without a usable one.
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Option<&'a RequestId>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a WireError>,
}

/// Serialize a message compactly (no newlines, as stdio framing requires),
/// without copying its parts.
pub fn encode(message: &Message) -> String {
    let mut out = Vec::with_capacity(128);
    write_message(&mut out, message);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `encode`, ending in the `\n` that frames it on stdio.
pub fn encode_line(message: &Message) -> String {
    let mut out = Vec::with_capacity(128);
    append_line(&mut out, message);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// `encode_line`, appended to `to` (a batch of lines that leave in one write).
pub(crate) fn append_line(to: &mut Vec<u8>, message: &Message) {
    write_message(to, message);
    to.push(b'\n');
}

fn write_message(to: &mut Vec<u8>, message: &Message) {
    let mut out = Outgoing { jsonrpc: "2.0", id: None, method: None, params: None, result: None, error: None };
    match message {
        Message::Request { id, method, params } => {
            (out.id, out.method, out.params) = (Some(Some(id)), Some(method.as_str()), params.as_ref());
        }
        Message::Notification { method, params } => (out.method, out.params) = (Some(method.as_str()), params.as_ref()),
        Message::Response { id, result: Ok(result) } => (out.id, out.result) = (Some(Some(id)), Some(result)),
        Message::Response { id, result: Err(error) } => (out.id, out.error) = (Some(Some(id)), Some(error)),
        Message::OrphanError(error) => (out.id, out.error) = (Some(None), Some(error)),
    }
    serde_json::to_writer(to, &out).expect("a message serializes: its keys are strings")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_of_message_encodes_and_parses_back() {
        let error = WireError { code: -32601, message: "nope".into(), data: Some(json!({ "x": 1 })) };
        for message in [
            Message::Request {
                id: RequestId::Number(0),
                method: "tools/call".into(),
                params: Some(json!({ "a": [1] })),
            },
            Message::Request { id: RequestId::String("s".into()), method: "ping".into(), params: None },
            Message::Notification { method: "notifications/cancelled".into(), params: Some(json!({ "requestId": 3 })) },
            Message::Notification { method: "notifications/initialized".into(), params: None },
            Message::Response { id: RequestId::Number(9), result: Ok(json!({ "content": [] })) },
            Message::Response { id: RequestId::Number(10), result: Err(error.clone()) },
        ] {
            let line = encode(&message);
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(parse(line.as_bytes()).unwrap(), message, "{line}");
        }
        let orphan = encode(&Message::OrphanError(error.clone()));
        let value: serde_json::Value = serde_json::from_str(&orphan).unwrap();
        assert_eq!(value["id"], serde_json::Value::Null, "{orphan}");
        assert_eq!(parse(orphan.as_bytes()).unwrap(), Message::OrphanError(error));
    }

    #[test]
    fn a_response_id_is_recovered_from_a_malformed_frame() {
        assert_eq!(recover_response_id(br#"{"jsonrpc":"2.0","id":7,"result":"#), Some(RequestId::Number(7)));
        assert_eq!(
            recover_response_id(br#"{"jsonrpc":"1.0","id":"a1","result":{}}"#),
            Some(RequestId::String("a1".into()))
        );
        assert_eq!(
            recover_response_id(br#"{"id": 3, "jsonrpc": "2.0", "result": {"x": }"#),
            Some(RequestId::Number(3))
        );
        assert_eq!(recover_response_id(br#"{"jsonrpc":"2.0","id":4,"method":"x","params":"#), None);
        assert_eq!(recover_response_id(b"{this is not json"), None);
    }

    #[test]
    fn ids_zero_strings_and_round_trips() {
        let m = parse(br#"{"jsonrpc":"2.0","id":0,"result":{}}"#).unwrap();
        assert_eq!(m, Message::Response { id: RequestId::Number(0), result: Ok(json!({})) });
        let m = parse(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#).unwrap();
        assert_eq!(m, Message::Request { id: RequestId::String("a".into()), method: "ping".into(), params: None });
        assert_eq!(parse(encode(&m).as_bytes()).unwrap(), m);
        let e = parse(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"nope"}}"#).unwrap();
        assert!(matches!(e, Message::Response { result: Err(WireError { code: -32601, .. }), .. }));
    }

    #[test]
    fn the_one_pass_reading_agrees_with_the_long_way() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"result":null}"#[..],
            br#"{"jsonrpc":"2.0","id":2,"method":"tools\/call","params":{"a":1}}"#,
            br#"{"jsonrpc":"2.0","id":3,"id":4,"result":{}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/x","params":null}"#,
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}"#,
            br#"{"jsonrpc":"2.0","id":5,"result":{"b":[1,"x",{"c":true}]},"extra":0}"#,
        ] {
            let text = String::from_utf8_lossy(line);
            assert_eq!(parse(line), parse_value(line), "{text}");
            assert!(parse(line).is_ok(), "{text}");
        }
        // A present null is not an absent member; a null method is no method.
        assert_eq!(
            parse(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap(),
            Message::Response { id: RequestId::Number(1), result: Ok(Value::Null) }
        );
        assert!(
            parse(br#"{"jsonrpc":"2.0","id":1,"method":null}"#).unwrap_err().0.contains("`method` must be a string")
        );
        // A later duplicate wins, as in the long way.
        assert!(matches!(
            parse(br#"{"jsonrpc":"2.0","id":3,"id":4,"result":{}}"#).unwrap(),
            Message::Response { id: RequestId::Number(4), .. }
        ));
        // Valid syntax, but no value can hold it.
        assert!(parse(br#"{"jsonrpc":"2.0","id":6,"result":1e400}"#).unwrap_err().0.contains("not JSON"));
    }

    #[test]
    fn malformed_messages_are_named() {
        for (line, why) in [
            (&b"{not json"[..], "not JSON"),
            (br#"[1,2]"#, "JSON object"),
            (br#"{"jsonrpc":"1.0","id":1,"result":{}}"#, "jsonrpc"),
            (br#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#, "integer"),
            (br#"{"jsonrpc":"2.0","id":true,"method":"x"}"#, "string or an integer"),
            (br#"{"jsonrpc":"2.0","result":{}}"#, "needs an id"),
        ] {
            let err = parse(line).unwrap_err();
            assert!(err.0.contains(why), "{err} for {}", String::from_utf8_lossy(line));
        }
    }
}
