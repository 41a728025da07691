//! Headers of the modern era: `Mcp-Param-*` values from a tool's
//! `x-mcp-header` properties, encoded as RFC 9110 tokens or with the base64
//! sentinel when they are not.

use base64::Engine as _;
use serde_json::Value;

/// Characters allowed in a header token (RFC 9110 `tchar`).
pub(super) fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// A header value as sent: as-is when safe, else the base64 sentinel form.
pub fn encode_header_value(value: &str) -> String {
    let safe = !value.is_empty()
        && value.chars().all(|c| (' '..='~').contains(&c))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if safe || value.is_empty() {
        value.to_string()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value.as_bytes()))
    }
}

/// A header value as received: the base64 sentinel form decoded (as UTF-8), anything else as it is.
pub fn decode_header_value(value: &str) -> std::borrow::Cow<'_, str> {
    let decoded = value
        .strip_prefix("=?base64?")
        .and_then(|b| b.strip_suffix("?="))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok());
    decoded.map_or(std::borrow::Cow::Borrowed(value), std::borrow::Cow::Owned)
}

/// Why a tool's `x-mcp-header` declarations make it uncallable over HTTP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderDeclarationError {
    #[error("property {property:?} has an x-mcp-header that is not a non-empty token")]
    NotAToken { property: String },
    #[error("x-mcp-header {header:?} is declared twice")]
    Repeated { header: String },
    #[error("property {property:?} with x-mcp-header must be a string, integer or boolean")]
    NotAScalar { property: String },
    #[error("x-mcp-header appears below a top-level property")]
    Nested,
}

/// A tool's `x-mcp-header` declarations, or why the tool cannot be called over HTTP.
pub fn tool_header_params(tool: &Value) -> Result<Vec<(String, String)>, HeaderDeclarationError> {
    let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
    let mut found = Vec::new();
    let mut seen = std::collections::HashSet::new();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (property, definition) in properties {
            let Some(header) = definition.get("x-mcp-header") else { continue };
            let Some(header) = header.as_str().filter(|h| !h.is_empty() && h.chars().all(is_tchar)) else {
                return Err(HeaderDeclarationError::NotAToken { property: property.clone() });
            };
            if !seen.insert(header.to_ascii_lowercase()) {
                return Err(HeaderDeclarationError::Repeated { header: header.to_string() });
            }
            match definition.get("type").and_then(Value::as_str) {
                Some("string" | "integer" | "boolean") => {}
                _ => {
                    return Err(HeaderDeclarationError::NotAScalar { property: property.clone() });
                }
            }
            found.push((property.clone(), header.to_string()));
        }
    }
    // Anywhere else (items, anyOf, $defs, nested properties…) the declaration is invalid.
    fn nested(value: &Value, top: bool) -> bool {
        match value {
            Value::Object(obj) => obj.iter().any(|(key, v)| {
                if top && key == "properties" {
                    v.as_object().is_some_and(|props| {
                        props.values().any(|p| p.as_object().is_some_and(|p| p.iter().any(|(_, v)| nested(v, false))))
                    })
                } else {
                    key == "x-mcp-header" && !top || nested(v, false)
                }
            }),
            Value::Array(items) => items.iter().any(|v| nested(v, false)),
            _ => false,
        }
    }
    if nested(&schema, true) {
        return Err(HeaderDeclarationError::Nested);
    }
    Ok(found)
}

pub(super) fn header_value_of(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(encode_header_value(s)),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_encoded_for_a_header_decodes_to_itself() {
        for value in ["plain", "naïve", " padded ", "=?base64?eA==?=", "line\nbreak"] {
            assert_eq!(decode_header_value(&encode_header_value(value)), value, "{value:?}");
        }
        assert_eq!(decode_header_value("=?base64?not base64?="), "=?base64?not base64?=", "not a sentinel: as it is");
    }
}
