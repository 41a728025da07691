//! `fetch-json`: one tool that fetches a JSON document over HTTP — only from
//! the origins its manifest declares and its user granted — and summarizes its
//! shape (the top-level type, its keys or length, each value's type), so a
//! model can see what an API returns without reading all of it.

use clat_guest::http;
use clat_guest::{Json, Plugin, Tool, ToolError};
use serde_json::{Map, Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Fetch {
    /// The document's URL (http or https, within the plugin's grant).
    url: String,
}

/// Keys (or elements) described at most.
const SHOWN: usize = 20;

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn shape(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let keys: Map<String, Value> =
                map.iter().take(SHOWN).map(|(k, v)| (k.clone(), Value::from(kind(v)))).collect();
            json!({ "type": "object", "keys": map.len(), "fields": keys })
        }
        Value::Array(items) => {
            let first = items.first().map(shape);
            json!({ "type": "array", "length": items.len(), "first": first })
        }
        other => json!({ "type": kind(other), "value": other }),
    }
}

fn fetch_json(args: Fetch) -> Result<Json<Value>, ToolError> {
    let response = http::Request::get(&args.url).header("accept", "application/json").send()?;
    if !response.is_success() {
        return Err(ToolError::new(format!("{} answered HTTP {}", args.url, response.status)));
    }
    let document: Value = response.json()?;
    Ok(Json(json!({
        "url": args.url,
        "status": response.status,
        "bytes": response.body.len(),
        "shape": shape(&document),
    })))
}

struct FetchJson;

impl Plugin for FetchJson {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new("fetch_json", "Fetch a JSON document from a granted origin and summarize its shape.", fetch_json)
                .read_only(),
        ]
    }
}

clat_guest::export_plugin!(FetchJson);
