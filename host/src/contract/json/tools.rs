//! Tools and their results: content blocks, `CallToolResult`, annotations and
//! `Tool` (from `tools/list`), both ways.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value, json};

use super::{ShapeError, as_object, decode_base64, opt_bool, opt_str, req_str, shape};
use crate::contract::{
    BinaryContent, ContentBlock, EmbeddedResource, ResourceLink, ToolAnnotations, ToolOutput, ToolSpec,
};

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

/// An upper bound on the length of `tool_output_to_json(output)` serialized,
/// found without building it, for an output of text blocks only (`None`
/// otherwise: the caller measures the JSON itself). A text block is
/// `{"type":"text","text":…}` and a separator; a byte of its text takes at
/// most 6 bytes escaped (a control character), `"` and `\` take 2.
pub fn tool_output_json_len_bound(output: &ToolOutput) -> Option<usize> {
    text_only_json_len(output, |text| {
        text.bytes()
            .map(|b| match b {
                b'"' | b'\\' => 2,
                0..=0x1f | 0x7f => 6,
                _ => 1,
            })
            .sum()
    })
}

/// A looser bound than `tool_output_json_len_bound`, known without reading the text: every byte escaped at its
/// longest (`\u00XX`, six bytes).
pub fn tool_output_json_len_ceiling(output: &ToolOutput) -> Option<usize> {
    text_only_json_len(output, |text| text.len().saturating_mul(6))
}

/// The JSON length of an output of text blocks only, each text's escaped length as `escaped` says; `None` for
/// any other output.
fn text_only_json_len(output: &ToolOutput, escaped: impl Fn(&str) -> usize) -> Option<usize> {
    const ENVELOPE: usize = r#"{"content":[],"isError":false}"#.len();
    const TEXT_BLOCK: usize = r#"{"type":"text","text":""},"#.len();
    if output.structured.is_some() {
        return None;
    }
    output.content.iter().try_fold(ENVELOPE, |total, block| match block {
        ContentBlock::Text(text) => Some(total.saturating_add(TEXT_BLOCK).saturating_add(escaped(text))),
        _ => None,
    })
}

/// MCP tool `annotations` → contract (absent object → all hints absent).
pub fn tool_annotations_from_json(value: Option<&Value>) -> Result<ToolAnnotations, ShapeError> {
    const WHAT: &str = "tool annotations";
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Ok(ToolAnnotations::default());
    };
    // Hints are untrusted and only ever narrow the effect: a hint that is not a
    // boolean (or annotations that are not an object) is ambiguous, and the
    // spec's table makes an ambiguous tool destructive. The tool is kept.
    let ambiguous = ToolAnnotations { read_only: Some(false), destructive: Some(true), ..Default::default() };
    let Value::Object(obj) = value else { return Ok(ambiguous) };
    let hint = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(()),
    };
    let title = opt_str(obj, "title", WHAT).ok().flatten();
    match (hint("readOnlyHint"), hint("destructiveHint"), hint("idempotentHint"), hint("openWorldHint")) {
        (Ok(read_only), Ok(destructive), Ok(idempotent), Ok(open_world)) => {
            Ok(ToolAnnotations { title, read_only, destructive, idempotent, open_world })
        }
        _ => Ok(ToolAnnotations { title, ..ambiguous }),
    }
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
