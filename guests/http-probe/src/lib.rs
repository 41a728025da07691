//! `http-probe`: the test guest of the capability grants. `get` sends a
//! request (optionally several, or with a body) and reports each outcome as
//! the guest saw it; `env` reads an environment variable, granted or not.

use clat_guest::http;
use clat_guest::{Json, Plugin, Tool, ToolError};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Get {
    /// Where to send it.
    url: String,
    /// How many times (default 1).
    times: Option<u32>,
    /// The method (default GET).
    method: Option<String>,
    /// A body of this many bytes.
    body_bytes: Option<u32>,
    /// A header to send, as `name: value`.
    header: Option<String>,
}

fn get(args: Get) -> Result<Json<Value>, ToolError> {
    let mut outcomes = Vec::new();
    for _ in 0..args.times.unwrap_or(1) {
        let mut request = http::Request::new(args.method.as_deref().unwrap_or("GET"), &args.url);
        if let Some(n) = args.body_bytes {
            request = request.body(vec![b'x'; n as usize]);
        }
        if let Some((name, value)) = args.header.as_deref().and_then(|h| h.split_once(':')) {
            request = request.header(name.trim(), value.trim());
        }
        outcomes.push(match request.send() {
            Ok(r) => json!({ "status": r.status, "bytes": r.body.len(), "body": r.text().chars().take(200).collect::<String>() }),
            Err(e) => json!({ "error": e.0 }),
        });
    }
    Ok(Json(json!({ "outcomes": outcomes })))
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Env {
    /// The variable's name.
    name: String,
}

fn env(args: Env) -> Result<Json<Value>, ToolError> {
    let all: Vec<String> = std::env::vars().map(|(k, _)| k).collect();
    Ok(Json(json!({ "value": std::env::var(&args.name).ok(), "names": all })))
}

struct HttpProbe;

impl Plugin for HttpProbe {
    fn tools() -> Vec<Tool> {
        vec![
            Tool::new("get", "Send HTTP requests and report what came back.", get).read_only().closed_world(),
            Tool::new("env", "Read an environment variable.", env).read_only().closed_world(),
        ]
    }
}

clat_guest::export_plugin!(HttpProbe);
