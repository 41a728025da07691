//! `sampling/createMessage`: its params to the contract's request (text only),
//! and the contract's result back — and the other way, for a request CLAT
//! sends to a client's model (`clat serve`).

use serde_json::{Value, json};

use super::{ShapeError, as_object, content_block_from_json, opt_str, req_str, shape};
use crate::contract::{ContentBlock, Role, SamplingMessage, SamplingRequest, SamplingResult};

fn role_from_str(s: &str) -> Result<Role, ShapeError> {
    match s {
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        other => Err(shape("sampling message", format!("unknown role {other:?}"))),
    }
}

fn role_str(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// MCP `sampling/createMessage` params → contract. Only text content maps;
/// any other content type is an error naming the message (the payload gate
/// requires text only). `includeContext` and `modelPreferences` other than
/// name hints are ignored: they never select another model or expose the
/// conversation.
pub fn sampling_request_from_json(params: &Value) -> Result<SamplingRequest, ShapeError> {
    const WHAT: &str = "sampling request";
    let obj = as_object(params, WHAT)?;
    let Some(Value::Array(raw_messages)) = obj.get("messages") else {
        return Err(shape(WHAT, "`messages` must be an array"));
    };
    let mut messages = Vec::with_capacity(raw_messages.len());
    for (i, m) in raw_messages.iter().enumerate() {
        let m = as_object(m, "sampling message")?;
        let role = role_from_str(&req_str(m, "role", "sampling message")?)?;
        let content = m.get("content").unwrap_or(&Value::Null);
        // 2025-11-25 allows an array of blocks; every block must be text.
        let blocks: Vec<&Value> = match content {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        let mut text = String::new();
        for block in blocks {
            match content_block_from_json(block) {
                Ok(ContentBlock::Text(t)) => text.push_str(&t),
                Ok(_) => return Err(shape(WHAT, format!("message {i} is not text (only text content is supported)"))),
                Err(e) => return Err(shape(WHAT, format!("message {i}: {e}"))),
            }
        }
        messages.push(SamplingMessage { role, text });
    }
    let max_tokens = match obj.get("maxTokens") {
        Some(Value::Number(n)) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| shape(WHAT, "`maxTokens` must be a non-negative integer"))?,
        _ => return Err(shape(WHAT, "`maxTokens` is missing")),
    };
    let temperature = match obj.get("temperature") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_f64().map(|f| f as f32),
        Some(_) => return Err(shape(WHAT, "`temperature` must be a number")),
    };
    let stop_sequences = match obj.get("stopSequences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|s| s.as_str().map(str::to_owned).ok_or_else(|| shape(WHAT, "`stopSequences` must be strings")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(shape(WHAT, "`stopSequences` must be an array")),
    };
    let model_hints = obj
        .get("modelPreferences")
        .and_then(|p| p.get("hints"))
        .and_then(Value::as_array)
        .map(|hints| hints.iter().filter_map(|h| h.get("name")?.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    Ok(SamplingRequest {
        messages,
        system_prompt: opt_str(obj, "systemPrompt", WHAT)?,
        max_tokens,
        temperature,
        stop_sequences,
        model_hints,
    })
}

/// Contract sampling result → MCP `CreateMessageResult`.
pub fn sampling_result_to_json(result: &SamplingResult) -> Value {
    let mut v = json!({
        "role": role_str(result.role),
        "content": { "type": "text", "text": result.text },
        "model": result.model,
    });
    if let Some(reason) = &result.stop_reason {
        v["stopReason"] = json!(reason);
    }
    v
}

/// Contract request → MCP `sampling/createMessage` params (text messages).
pub fn sampling_request_to_json(request: &SamplingRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| json!({ "role": role_str(m.role), "content": { "type": "text", "text": m.text } }))
        .collect();
    let mut v = json!({ "messages": messages, "maxTokens": request.max_tokens });
    if let Some(system) = &request.system_prompt {
        v["systemPrompt"] = json!(system);
    }
    if let Some(temperature) = request.temperature {
        v["temperature"] = f32_to_json(temperature);
    }
    if !request.stop_sequences.is_empty() {
        v["stopSequences"] = json!(request.stop_sequences);
    }
    if !request.model_hints.is_empty() {
        let hints: Vec<Value> = request.model_hints.iter().map(|name| json!({ "name": name })).collect();
        v["modelPreferences"] = json!({ "hints": hints });
    }
    v
}

/// MCP `CreateMessageResult` → its text (every text block), model and stop reason.
pub fn create_message_result_from_json(result: &Value) -> Result<(String, String, Option<String>), ShapeError> {
    const WHAT: &str = "sampling result";
    let obj = as_object(result, WHAT)?;
    let blocks: Vec<&Value> = match obj.get("content") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(other) => vec![other],
        None => return Err(shape(WHAT, "`content` is missing")),
    };
    let mut text = String::new();
    for block in blocks {
        match content_block_from_json(block) {
            Ok(ContentBlock::Text(t)) => text.push_str(&t),
            Ok(_) => return Err(shape(WHAT, "the answer is not text (only text content is supported)")),
            Err(e) => return Err(shape(WHAT, e.to_string())),
        }
    }
    Ok((text, opt_str(obj, "model", WHAT)?.unwrap_or_default(), opt_str(obj, "stopReason", WHAT)?))
}

/// An `f32` from the contract (e.g. a sampling temperature) as a JSON number
/// with its shortest decimal form: `0.7`, not `0.699999988079071`.
pub fn f32_to_json(value: f32) -> Value {
    format!("{value}").parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number)
}
