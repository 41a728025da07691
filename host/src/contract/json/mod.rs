//! The one mapping between the contract's Rust types and MCP's JSON shapes.
//! The MCP adapter (and the CLI's `--json` output) use these functions and never
//! build these shapes by hand. Parsing is strict about types and lenient about
//! unknown fields, as MCP requires; every failure says which field is wrong.
//! By topic: `tools.rs`, `context.rs`, `sampling.rs`, `elicitation.rs`.

mod context;
mod elicitation;
mod sampling;
mod tools;

pub use context::*;
pub use elicitation::*;
pub use sampling::*;
pub use tools::*;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};

/// A JSON value did not have the shape the contract needs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: {reason}")]
pub struct ShapeError {
    /// Which object was being read (e.g. `content block`).
    pub what: &'static str,
    /// What was wrong with it.
    pub reason: String,
}

pub(super) fn shape(what: &'static str, reason: impl Into<String>) -> ShapeError {
    ShapeError { what, reason: reason.into() }
}

pub(super) fn opt_str(obj: &Map<String, Value>, key: &str, what: &'static str) -> Result<Option<String>, ShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(shape(what, format!("`{key}` must be a string"))),
    }
}

pub(super) fn req_str(obj: &Map<String, Value>, key: &str, what: &'static str) -> Result<String, ShapeError> {
    opt_str(obj, key, what)?.ok_or_else(|| shape(what, format!("`{key}` is missing")))
}

pub(super) fn opt_bool(obj: &Map<String, Value>, key: &str, what: &'static str) -> Result<Option<bool>, ShapeError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(shape(what, format!("`{key}` must be a boolean"))),
    }
}

pub(super) fn as_object<'a>(value: &'a Value, what: &'static str) -> Result<&'a Map<String, Value>, ShapeError> {
    value.as_object().ok_or_else(|| shape(what, "expected a JSON object"))
}

pub(super) fn decode_base64(text: &str, what: &'static str) -> Result<Vec<u8>, ShapeError> {
    BASE64.decode(text).map_err(|e| shape(what, format!("`data` is not valid base64: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::*;
    use serde_json::json;

    #[test]
    fn f32_values_keep_their_shortest_decimal_form() {
        assert_eq!(f32_to_json(0.7).to_string(), "0.7");
        assert_eq!(f32_to_json(1.0).to_string(), "1.0");
        assert_eq!(f32_to_json(f32::NAN), Value::Null);
    }

    #[test]
    fn the_json_length_bound_of_a_text_output_is_never_below_its_json_length() {
        let texts = ["", "plain", "quote \" and \\ backslash", "tab\tnew\nline\r\u{1}\u{1f}\u{7f}", "héllo ✓ 𝄞"];
        for is_error in [false, true] {
            for n in 0..=texts.len() {
                let output = ToolOutput {
                    content: texts[..n].iter().map(|t| ContentBlock::Text(t.to_string())).collect(),
                    structured: None,
                    is_error,
                };
                let exact = tool_output_to_json(&output).to_string().len();
                let bound = tool_output_json_len_bound(&output).expect("text blocks only");
                assert!(bound >= exact, "{bound} < {exact} for {:?}", &texts[..n]);
                assert!(bound <= exact + 6 * 16 + 2, "a loose bound: {bound} for {exact}");
                let ceiling = tool_output_json_len_ceiling(&output).expect("text blocks only");
                assert!(ceiling >= bound, "the ceiling {ceiling} is never below the bound {bound}");
            }
        }
        let with_structured = ToolOutput { content: vec![], structured: Some("{\"a\":1}".into()), is_error: false };
        assert_eq!(tool_output_json_len_bound(&with_structured), None);
        assert_eq!(tool_output_json_len_ceiling(&with_structured), None);
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
    }

    #[test]
    fn an_ambiguous_hint_makes_the_tool_destructive() {
        use crate::policy::effects::effect_from_annotations;
        for annotations in [
            json!({ "readOnlyHint": "yes" }),
            json!({ "readOnlyHint": true, "openWorldHint": 0 }),
            json!({ "destructiveHint": "no", "title": "T" }),
            json!(["readOnlyHint"]),
        ] {
            let parsed = tool_annotations_from_json(Some(&annotations)).unwrap();
            assert_eq!(effect_from_annotations(&parsed), Effect::Destructive, "{annotations}");
        }
        let parsed =
            tool_annotations_from_json(Some(&json!({ "readOnlyHint": true, "openWorldHint": false }))).unwrap();
        assert_eq!(effect_from_annotations(&parsed), Effect::ExternalRead);
        assert_eq!(
            tool_annotations_from_json(Some(&json!({ "destructiveHint": "no", "title": "T" })))
                .unwrap()
                .title
                .as_deref(),
            Some("T")
        );
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

        // Back to params (to ask a client the whole form), and read again: the same form; titled options as `oneOf`.
        let again = elicitation_form_to_json(&form);
        let read_again = elicitation_form_from_json(&again).unwrap();
        assert_eq!((&read_again.fields[..3], &read_again.fields[4]), (&form.fields[..3], &form.fields[4]), "{again}");
        assert_eq!(
            again["requestedSchema"]["properties"]["age"],
            json!({ "type": "integer", "minimum": 0, "maximum": 150 })
        );
        assert_eq!(
            again["requestedSchema"]["properties"]["size"]["oneOf"][1],
            json!({ "const": "m", "title": "Medium" })
        );
        assert_eq!(again["requestedSchema"]["required"], json!(["name"]));

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
