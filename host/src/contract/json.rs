//! The one mapping between the contract's Rust types and MCP's JSON shapes.
//! The MCP adapter (and the CLI's `--json` output) use these functions and never
//! build these shapes by hand. Parsing is strict about types and lenient about
//! unknown fields, as MCP requires; every failure says which field is wrong.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::{
    BinaryContent, BooleanField, ChoiceField, ChoiceOption, ContentBlock, ContextSnapshot, ElicitationForm,
    ElicitationResult, EmbeddedResource, FieldKind, FieldValue, FormField, HostTool, NumberField, ResourceLink, Role,
    RunSnapshot, SamplingMessage, SamplingRequest, SamplingResult, TextField, ToolAnnotations, ToolOutput, ToolSpec,
};

/// A JSON value did not have the shape the contract needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: {reason}")]
pub struct ShapeError {
    /// Which object was being read (e.g. `content block`).
    pub what: &'static str,
    /// What was wrong with it.
    pub reason: String,
}

fn shape(what: &'static str, reason: impl Into<String>) -> ShapeError {
    ShapeError { what, reason: reason.into() }
}

fn opt_str(obj: &Map<String, Value>, key: &str, what: &'static str) -> Result<Option<String>, ShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(shape(what, format!("`{key}` must be a string"))),
    }
}

fn req_str(obj: &Map<String, Value>, key: &str, what: &'static str) -> Result<String, ShapeError> {
    opt_str(obj, key, what)?.ok_or_else(|| shape(what, format!("`{key}` is missing")))
}

fn opt_bool(obj: &Map<String, Value>, key: &str, what: &'static str) -> Result<Option<bool>, ShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(shape(what, format!("`{key}` must be a boolean"))),
    }
}

fn as_object<'a>(value: &'a Value, what: &'static str) -> Result<&'a Map<String, Value>, ShapeError> {
    value.as_object().ok_or_else(|| shape(what, "expected a JSON object"))
}

fn decode_base64(text: &str, what: &'static str) -> Result<Vec<u8>, ShapeError> {
    BASE64.decode(text).map_err(|e| shape(what, format!("`data` is not valid base64: {e}")))
}

/// MCP content block → contract.
pub fn content_block_from_json(value: &Value) -> Result<ContentBlock, ShapeError> {
    const WHAT: &str = "content block";
    let obj = as_object(value, WHAT)?;
    let kind = req_str(obj, "type", WHAT)?;
    match kind.as_str() {
        "text" => Ok(ContentBlock::Text(req_str(obj, "text", WHAT)?)),
        "image" | "audio" => {
            let data = decode_base64(&req_str(obj, "data", WHAT)?, WHAT)?;
            let content = BinaryContent { data, mime_type: req_str(obj, "mimeType", WHAT)? };
            Ok(if kind == "image" { ContentBlock::Image(content) } else { ContentBlock::Audio(content) })
        }
        "resource_link" => Ok(ContentBlock::ResourceLink(ResourceLink {
            uri: req_str(obj, "uri", WHAT)?,
            name: req_str(obj, "name", WHAT)?,
            description: opt_str(obj, "description", WHAT)?,
            mime_type: opt_str(obj, "mimeType", WHAT)?,
        })),
        "resource" => {
            let res = as_object(obj.get("resource").unwrap_or(&Value::Null), "embedded resource")?;
            let text = opt_str(res, "text", "embedded resource")?;
            let blob = opt_str(res, "blob", "embedded resource")?
                .map(|b| decode_base64(&b, "embedded resource"))
                .transpose()?;
            if text.is_some() == blob.is_some() {
                return Err(shape("embedded resource", "exactly one of `text` and `blob` must be set"));
            }
            Ok(ContentBlock::EmbeddedResource(EmbeddedResource {
                uri: req_str(res, "uri", "embedded resource")?,
                mime_type: opt_str(res, "mimeType", "embedded resource")?,
                text,
                blob,
            }))
        }
        other => Err(shape(WHAT, format!("unknown content type {other:?}"))),
    }
}

/// Contract content block → MCP JSON.
pub fn content_block_to_json(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text(text) => json!({ "type": "text", "text": text }),
        ContentBlock::Image(c) => json!({ "type": "image", "data": BASE64.encode(&c.data), "mimeType": c.mime_type }),
        ContentBlock::Audio(c) => json!({ "type": "audio", "data": BASE64.encode(&c.data), "mimeType": c.mime_type }),
        ContentBlock::ResourceLink(link) => {
            let mut v = json!({ "type": "resource_link", "uri": link.uri, "name": link.name });
            if let Some(d) = &link.description {
                v["description"] = json!(d);
            }
            if let Some(m) = &link.mime_type {
                v["mimeType"] = json!(m);
            }
            v
        }
        ContentBlock::EmbeddedResource(res) => {
            let mut inner = json!({ "uri": res.uri });
            if let Some(m) = &res.mime_type {
                inner["mimeType"] = json!(m);
            }
            if let Some(t) = &res.text {
                inner["text"] = json!(t);
            }
            if let Some(b) = &res.blob {
                inner["blob"] = json!(BASE64.encode(b));
            }
            json!({ "type": "resource", "resource": inner })
        }
    }
}

/// MCP `CallToolResult` → contract. `structuredContent` must be an object when present.
pub fn tool_output_from_json(value: &Value) -> Result<ToolOutput, ShapeError> {
    const WHAT: &str = "tool result";
    let obj = as_object(value, WHAT)?;
    let content = match obj.get("content") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.iter().map(content_block_from_json).collect::<Result<_, _>>()?,
        Some(_) => return Err(shape(WHAT, "`content` must be an array")),
    };
    let structured = match obj.get("structuredContent") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(_) => return Err(shape(WHAT, "`structuredContent` must be an object")),
    };
    Ok(ToolOutput { content, structured, is_error: opt_bool(obj, "isError", WHAT)?.unwrap_or(false) })
}

/// Contract tool output → MCP `CallToolResult`. Structured text that is not JSON
/// is carried as a string rather than dropped.
pub fn tool_output_to_json(output: &ToolOutput) -> Value {
    let mut v = json!({
        "content": output.content.iter().map(content_block_to_json).collect::<Vec<_>>(),
        "isError": output.is_error,
    });
    if let Some(s) = &output.structured {
        v["structuredContent"] = serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()));
    }
    v
}

/// MCP tool `annotations` → contract (absent object → all hints absent).
pub fn tool_annotations_from_json(value: Option<&Value>) -> Result<ToolAnnotations, ShapeError> {
    const WHAT: &str = "tool annotations";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(ToolAnnotations::default());
    };
    let obj = as_object(value, WHAT)?;
    Ok(ToolAnnotations {
        title: opt_str(obj, "title", WHAT)?,
        read_only: opt_bool(obj, "readOnlyHint", WHAT)?,
        destructive: opt_bool(obj, "destructiveHint", WHAT)?,
        idempotent: opt_bool(obj, "idempotentHint", WHAT)?,
        open_world: opt_bool(obj, "openWorldHint", WHAT)?,
    })
}

/// Contract annotations → MCP JSON (absent hints are omitted).
pub fn tool_annotations_to_json(a: &ToolAnnotations) -> Value {
    let mut v = Map::new();
    let pairs = [
        ("readOnlyHint", a.read_only),
        ("destructiveHint", a.destructive),
        ("idempotentHint", a.idempotent),
        ("openWorldHint", a.open_world),
    ];
    if let Some(t) = &a.title {
        v.insert("title".into(), json!(t));
    }
    for (key, hint) in pairs {
        if let Some(h) = hint {
            v.insert(key.into(), json!(h));
        }
    }
    Value::Object(v)
}

/// MCP `Tool` (from `tools/list`) → contract. The input schema must be an object.
pub fn tool_spec_from_json(value: &Value) -> Result<ToolSpec, ShapeError> {
    const WHAT: &str = "tool";
    let obj = as_object(value, WHAT)?;
    let input_schema = match obj.get("inputSchema") {
        Some(v @ Value::Object(_)) => v.to_string(),
        _ => return Err(shape(WHAT, "`inputSchema` must be an object")),
    };
    let output_schema = match obj.get("outputSchema") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(_) => return Err(shape(WHAT, "`outputSchema` must be an object")),
    };
    Ok(ToolSpec {
        name: req_str(obj, "name", WHAT)?,
        title: opt_str(obj, "title", WHAT)?,
        description: opt_str(obj, "description", WHAT)?.unwrap_or_default(),
        input_schema,
        output_schema,
        annotations: tool_annotations_from_json(obj.get("annotations"))?,
    })
}

/// Contract tool spec → MCP `Tool` JSON.
pub fn tool_spec_to_json(spec: &ToolSpec) -> Value {
    let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or_else(|_| json!({ "type": "object" }));
    let mut v = json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": parse(&spec.input_schema),
        "annotations": tool_annotations_to_json(&spec.annotations),
    });
    if let Some(t) = &spec.title {
        v["title"] = json!(t);
    }
    if let Some(o) = &spec.output_schema {
        v["outputSchema"] = parse(o);
    }
    v
}

/// Contract context snapshot → the JSON of `io.artec.clat/context/get` and
/// `io.artec.clat/context/changed`.
pub fn context_snapshot_to_json(snapshot: &ContextSnapshot) -> Value {
    let run = snapshot.run.as_ref().map(|r: &RunSnapshot| {
        json!({
            "runId": r.run_id,
            "mode": r.mode.as_str(),
            "remainingMs": r.remaining_ms,
            "samplingRequestsLeft": r.sampling_requests_left,
            "samplingTokensLeft": r.sampling_tokens_left,
        })
    });
    json!({
        "projectRoot": snapshot.project_root,
        "projectName": snapshot.project_name,
        "sessionId": snapshot.session_id,
        "run": run,
    })
}

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

/// Why an elicitation request cannot become a form. `Unsupported` shapes are
/// valid MCP that CLAT does not offer (nested objects, multi-select, URL mode);
/// `Invalid` ones are malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormShapeError {
    #[error("unsupported elicitation: {0}")]
    Unsupported(String),
    #[error("invalid elicitation: {0}")]
    Invalid(String),
}

fn opt_u32(obj: &Map<String, Value>, key: &str, field: &str) -> Result<Option<u32>, FormShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            v.as_u64().and_then(|n| u32::try_from(n).ok()).map(Some).ok_or_else(|| {
                FormShapeError::Invalid(format!("field {field:?}: `{key}` must be a non-negative integer"))
            })
        }
    }
}

fn opt_f64(obj: &Map<String, Value>, key: &str, field: &str) -> Result<Option<f64>, FormShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .map(Some)
            .ok_or_else(|| FormShapeError::Invalid(format!("field {field:?}: `{key}` must be a number"))),
    }
}

fn field_str(obj: &Map<String, Value>, key: &str, field: &str) -> Result<Option<String>, FormShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(FormShapeError::Invalid(format!("field {field:?}: `{key}` must be a string"))),
    }
}

/// The options of a single-choice field: `oneOf: [{const, title}]` (titled),
/// or `enum` with optional legacy `enumNames`.
fn choice_options(obj: &Map<String, Value>, name: &str) -> Result<Option<Vec<ChoiceOption>>, FormShapeError> {
    let invalid = |why: &str| FormShapeError::Invalid(format!("field {name:?}: {why}"));
    if let Some(one_of) = obj.get("oneOf") {
        let items = one_of.as_array().ok_or_else(|| invalid("`oneOf` must be an array"))?;
        let options = items
            .iter()
            .map(|item| {
                let value = item
                    .get("const")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("each `oneOf` entry needs a string `const`"))?;
                let title = item.get("title").and_then(Value::as_str).map(str::to_owned);
                Ok(ChoiceOption { value: value.to_owned(), title })
            })
            .collect::<Result<Vec<_>, FormShapeError>>()?;
        return Ok(Some(options));
    }
    let Some(values) = obj.get("enum") else { return Ok(None) };
    let values = values.as_array().ok_or_else(|| invalid("`enum` must be an array"))?;
    let names = match obj.get("enumNames") {
        None | Some(Value::Null) => None,
        Some(Value::Array(n)) if n.len() == values.len() => Some(n),
        Some(_) => return Err(invalid("`enumNames` must be an array as long as `enum`")),
    };
    let options = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let value = v.as_str().ok_or_else(|| invalid("enum values must be strings"))?;
            let title = names.and_then(|n| n[i].as_str()).map(str::to_owned);
            Ok(ChoiceOption { value: value.to_owned(), title })
        })
        .collect::<Result<Vec<_>, FormShapeError>>()?;
    Ok(Some(options))
}

fn form_field(name: &str, schema: &Value, required: bool) -> Result<FormField, FormShapeError> {
    let obj =
        schema.as_object().ok_or_else(|| FormShapeError::Invalid(format!("field {name:?} is not a schema object")))?;
    let kind = match obj.get("type").and_then(Value::as_str) {
        Some("string") => match choice_options(obj, name)? {
            Some(options) => FieldKind::Choice(ChoiceField { options, default: field_str(obj, "default", name)? }),
            None => FieldKind::Text(TextField {
                min_length: opt_u32(obj, "minLength", name)?,
                max_length: opt_u32(obj, "maxLength", name)?,
                format: field_str(obj, "format", name)?,
                default: field_str(obj, "default", name)?,
            }),
        },
        Some(t @ ("number" | "integer")) => FieldKind::Number(NumberField {
            integer: t == "integer",
            minimum: opt_f64(obj, "minimum", name)?,
            maximum: opt_f64(obj, "maximum", name)?,
            default: opt_f64(obj, "default", name)?,
        }),
        Some("boolean") => FieldKind::Boolean(BooleanField {
            default: match obj.get("default") {
                None | Some(Value::Null) => None,
                Some(Value::Bool(b)) => Some(*b),
                Some(_) => return Err(FormShapeError::Invalid(format!("field {name:?}: `default` must be a boolean"))),
            },
        }),
        Some("array") => {
            return Err(FormShapeError::Unsupported(format!(
                "field {name:?} is a multi-select (array); only single choices are supported"
            )));
        }
        Some("object") => {
            return Err(FormShapeError::Unsupported(format!(
                "field {name:?} is a nested object; only primitive fields are supported"
            )));
        }
        Some(other) => {
            return Err(FormShapeError::Unsupported(format!("field {name:?} has unsupported type {other:?}")));
        }
        None => return Err(FormShapeError::Unsupported(format!("field {name:?} has no primitive `type`"))),
    };
    Ok(FormField {
        name: name.to_string(),
        title: field_str(obj, "title", name)?,
        description: field_str(obj, "description", name)?,
        required,
        kind,
    })
}

/// MCP `elicitation/create` params → one primitive form. URL mode, nested
/// objects, multi-select and other shapes are `Unsupported`. Field and choice
/// counts are not checked here: the elicitation gate checks every form, from
/// any source, against the spec's limits.
pub fn elicitation_form_from_json(params: &Value) -> Result<ElicitationForm, FormShapeError> {
    let obj = params.as_object().ok_or_else(|| FormShapeError::Invalid("params must be an object".into()))?;
    if let Some(mode) = obj.get("mode").and_then(Value::as_str)
        && mode != "form"
    {
        return Err(FormShapeError::Unsupported(format!("{mode:?} mode elicitation; only forms are supported")));
    }
    let message = obj.get("message").and_then(Value::as_str).unwrap_or_default().to_string();
    let schema = obj
        .get("requestedSchema")
        .and_then(Value::as_object)
        .ok_or_else(|| FormShapeError::Invalid("`requestedSchema` must be an object".into()))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(FormShapeError::Invalid("`requestedSchema` must have type \"object\"".into()));
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let properties = match schema.get("properties") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p.clone(),
        Some(_) => return Err(FormShapeError::Invalid("`properties` must be an object".into())),
    };
    let fields = properties
        .iter()
        .map(|(name, field)| form_field(name, field, required.contains(&name.as_str())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ElicitationForm { message, fields })
}

/// Contract elicitation result → MCP `ElicitResult`. Integral numbers are sent as integers.
pub fn elicitation_result_to_json(result: &ElicitationResult) -> Value {
    match result {
        ElicitationResult::Accepted(answers) => {
            let content: Map<String, Value> = answers
                .iter()
                .map(|a| {
                    let value = match &a.value {
                        FieldValue::Text(t) | FieldValue::Choice(t) => json!(t),
                        FieldValue::Boolean(b) => json!(b),
                        FieldValue::Number(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => json!(*n as i64),
                        FieldValue::Number(n) => json!(n),
                    };
                    (a.name.clone(), value)
                })
                .collect();
            json!({ "action": "accept", "content": content })
        }
        ElicitationResult::Declined => json!({ "action": "decline" }),
        ElicitationResult::Cancelled => json!({ "action": "cancel" }),
    }
}

/// An `f32` from the contract (e.g. a sampling temperature) as a JSON number
/// with its shortest decimal form: `0.7`, not `0.699999988079071`.
pub fn f32_to_json(value: f32) -> Value {
    format!("{value}").parse::<f64>().ok().and_then(serde_json::Number::from_f64).map_or(Value::Null, Value::Number)
}

/// `io.artec.clat/tools/call` params (`{name, arguments?}`) → the host tool and its arguments as JSON text.
pub fn host_tool_call_from_json(params: &Value) -> Result<(HostTool, String), ShapeError> {
    let obj = as_object(params, "host tool call")?;
    let name = req_str(obj, "name", "host tool call")?;
    let tool = HostTool::from_tool_name(&name).ok_or_else(|| {
        let allowed: Vec<&str> = HostTool::ALL.iter().map(|t| t.tool_name()).collect();
        shape("host tool call", format!("{name:?} is not a host tool; only {} are", allowed.join(", ")))
    })?;
    let arguments = match obj.get("arguments") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return Err(shape("host tool call", "`arguments` must be an object")),
    };
    Ok((tool, arguments))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_values_keep_their_shortest_decimal_form() {
        assert_eq!(f32_to_json(0.7).to_string(), "0.7");
        assert_eq!(f32_to_json(1.0).to_string(), "1.0");
        assert_eq!(f32_to_json(f32::NAN), Value::Null);
    }

    #[test]
    fn tool_output_round_trips_through_mcp_json() {
        let mcp = json!({
            "content": [
                { "type": "text", "text": "hi" },
                { "type": "image", "data": "AAEC", "mimeType": "image/png" },
                { "type": "resource_link", "uri": "file:///a", "name": "a" },
                { "type": "resource", "resource": { "uri": "file:///b", "text": "b" } }
            ],
            "structuredContent": { "n": 1 },
            "isError": true
        });
        let output = tool_output_from_json(&mcp).unwrap();
        assert!(output.is_error);
        assert_eq!(output.content.len(), 4);
        assert!(matches!(&output.content[1], ContentBlock::Image(c) if c.data == vec![0, 1, 2]));
        assert_eq!(tool_output_to_json(&output), mcp);
    }

    #[test]
    fn bad_shapes_name_the_field() {
        let err = tool_output_from_json(&json!({ "content": [{ "type": "video" }] })).unwrap_err();
        assert!(err.to_string().contains("unknown content type \"video\""), "{err}");
        let err = tool_spec_from_json(&json!({ "name": "x", "inputSchema": 3 })).unwrap_err();
        assert!(err.to_string().contains("inputSchema"), "{err}");
        let err = tool_annotations_from_json(Some(&json!({ "readOnlyHint": "yes" }))).unwrap_err();
        assert!(err.to_string().contains("readOnlyHint"), "{err}");
    }

    #[test]
    fn sampling_request_keeps_text_and_rejects_images() {
        let params = json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "hello" } }],
            "systemPrompt": "be brief",
            "maxTokens": 100,
            "modelPreferences": { "hints": [{ "name": "claude" }] },
            "includeContext": "allServers"
        });
        let req = sampling_request_from_json(&params).unwrap();
        assert_eq!(req.messages[0].text, "hello");
        assert_eq!(req.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(req.model_hints, vec!["claude".to_string()]);
        let image = json!({
            "messages": [{ "role": "user", "content": { "type": "image", "data": "AA==", "mimeType": "image/png" } }],
            "maxTokens": 1
        });
        assert!(sampling_request_from_json(&image).unwrap_err().reason.contains("not text"));
    }

    #[test]
    fn elicitation_forms_map_primitive_fields_and_refuse_other_shapes() {
        let params = json!({
            "message": "Tell me",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": { "type": "string", "title": "Name", "maxLength": 20, "default": "ada" },
                    "age": { "type": "integer", "minimum": 0, "maximum": 150 },
                    "ok": { "type": "boolean", "default": true },
                    "colour": { "type": "string", "oneOf": [{ "const": "r", "title": "Red" }, { "const": "g" }] },
                    "size": { "type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"], "default": "m" }
                },
                "required": ["name"]
            }
        });
        let form = elicitation_form_from_json(&params).unwrap();
        assert_eq!(form.message, "Tell me");
        assert_eq!(form.fields.len(), 5);
        let by_name = |n: &str| form.fields.iter().find(|f| f.name == n).unwrap();
        assert!(by_name("name").required && !by_name("age").required);
        assert!(
            matches!(&by_name("name").kind, FieldKind::Text(t) if t.default.as_deref() == Some("ada") && t.max_length == Some(20))
        );
        assert!(matches!(&by_name("age").kind, FieldKind::Number(n) if n.integer && n.maximum == Some(150.0)));
        assert!(matches!(&by_name("ok").kind, FieldKind::Boolean(b) if b.default == Some(true)));
        assert!(
            matches!(&by_name("colour").kind, FieldKind::Choice(c) if c.options[0].title.as_deref() == Some("Red") && c.options[1].title.is_none())
        );
        assert!(
            matches!(&by_name("size").kind, FieldKind::Choice(c) if c.options[1].title.as_deref() == Some("Medium") && c.default.as_deref() == Some("m"))
        );

        let nested = json!({ "message": "", "requestedSchema": { "type": "object", "properties": { "a": { "type": "object" } } } });
        assert!(
            matches!(elicitation_form_from_json(&nested), Err(FormShapeError::Unsupported(m)) if m.contains("nested"))
        );
        let multi = json!({ "message": "", "requestedSchema": { "type": "object", "properties": { "a": { "type": "array", "items": { "enum": ["x"] } } } } });
        assert!(
            matches!(elicitation_form_from_json(&multi), Err(FormShapeError::Unsupported(m)) if m.contains("multi-select"))
        );
        let url = json!({ "mode": "url", "message": "", "url": "https://example.invalid", "elicitationId": "1" });
        assert!(matches!(elicitation_form_from_json(&url), Err(FormShapeError::Unsupported(m)) if m.contains("url")));
    }

    #[test]
    fn elicitation_results_map_to_mcp_actions() {
        let accepted = ElicitationResult::Accepted(vec![
            crate::contract::FieldAnswer { name: "n".into(), value: FieldValue::Number(3.0) },
            crate::contract::FieldAnswer { name: "x".into(), value: FieldValue::Number(2.5) },
            crate::contract::FieldAnswer { name: "c".into(), value: FieldValue::Choice("r".into()) },
        ]);
        assert_eq!(
            elicitation_result_to_json(&accepted),
            json!({ "action": "accept", "content": { "n": 3, "x": 2.5, "c": "r" } })
        );
        assert_eq!(elicitation_result_to_json(&ElicitationResult::Declined), json!({ "action": "decline" }));
        assert_eq!(elicitation_result_to_json(&ElicitationResult::Cancelled), json!({ "action": "cancel" }));
    }
}
