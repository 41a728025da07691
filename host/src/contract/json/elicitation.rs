//! `elicitation/create`: one primitive form from its params (other shapes are
//! refused as unsupported) and back (`elicitation_form_to_json`, to ask a
//! client that takes whole forms), and the user's answers back as an
//! `ElicitResult`.

use serde_json::{Map, Value, json};

use crate::contract::{
    BooleanField, ChoiceField, ChoiceOption, ElicitationForm, ElicitationResult, FieldKind, FieldValue, FormField,
    NumberField, TextField,
};

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

/// One primitive form → `elicitation/create` params (form mode): what
/// `elicitation_form_from_json` reads back as the same form. A choice whose
/// options have titles is a titled `oneOf`, else an `enum`.
pub fn elicitation_form_to_json(form: &ElicitationForm) -> Value {
    let number = |n: f64| if n.fract() == 0.0 && n.abs() < 9.0e15 { json!(n as i64) } else { json!(n) };
    let mut properties = Map::new();
    for field in &form.fields {
        let mut schema = match &field.kind {
            FieldKind::Text(t) => json!({ "type": "string", "minLength": t.min_length, "maxLength": t.max_length,
                                          "format": t.format, "default": t.default }),
            FieldKind::Number(n) => json!({ "type": if n.integer { "integer" } else { "number" },
                                            "minimum": n.minimum.map(number), "maximum": n.maximum.map(number),
                                            "default": n.default.map(number) }),
            FieldKind::Boolean(b) => json!({ "type": "boolean", "default": b.default }),
            FieldKind::Choice(c) if c.options.iter().any(|o| o.title.is_some()) => json!({
                "type": "string", "default": c.default,
                "oneOf": c.options.iter().map(|o| json!({ "const": o.value, "title": o.title.as_deref().unwrap_or(&o.value) }))
                    .collect::<Vec<_>>(),
            }),
            FieldKind::Choice(c) => json!({
                "type": "string", "default": c.default,
                "enum": c.options.iter().map(|o| o.value.as_str()).collect::<Vec<_>>(),
            }),
        };
        schema["title"] = json!(field.title);
        schema["description"] = json!(field.description);
        if let Some(schema) = schema.as_object_mut() {
            schema.retain(|_, v| !v.is_null());
        }
        properties.insert(field.name.clone(), schema);
    }
    let required: Vec<&str> = form.fields.iter().filter(|f| f.required).map(|f| f.name.as_str()).collect();
    json!({
        "mode": "form",
        "message": form.message,
        "requestedSchema": { "type": "object", "properties": properties, "required": required },
    })
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
