//! `--contract`: the MCP half of CLAT's contract tests. The WASM half is the
//! `contract` guest (`guests/contract`); both offer the same tools with the
//! same schemas, annotations and result texts, so one scenario table runs
//! against either kind. See the guest's module docs for the tools.

use serde_json::{Value, json};

/// What answers a contract call that had to ask the client first.
#[derive(Debug, Clone, Copy)]
pub enum Pending {
    HostTool,
    /// A host tool whose refusal is the call's tool error, its text the host's description (as the SDKs make it).
    HostToolUnchecked,
    Sample,
    Ask,
}

/// What to do for one `tools/call`.
pub enum Step {
    Reply(Value),
    /// Send this request to the client; answer the call with `render` once it answers.
    Ask {
        method: &'static str,
        params: Value,
        pending: Pending,
    },
    /// Never answer (`wait`).
    Silent,
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

/// The contract tools, as `tools/list` entries (read-only, closed world: like the guest's).
pub fn tools() -> Vec<Value> {
    let tool = |name: &str, description: &str, schema: Value| {
        json!({ "name": name, "description": description, "inputSchema": schema,
                "annotations": { "readOnlyHint": true, "openWorldHint": false } })
    };
    vec![
        tool("echo", "Echo the text.", object(json!({ "text": { "type": "string" } }), &["text"])),
        tool(
            "structured",
            "Add two integers, with structured output.",
            object(json!({ "a": { "type": "integer" }, "b": { "type": "integer" } }), &["a", "b"]),
        ),
        tool("fail", "Fail on purpose.", object(json!({}), &[])),
        tool(
            "host_read",
            "Read a project file through the host.",
            object(json!({ "path": { "type": "string" } }), &["path"]),
        ),
        tool(
            "host_write",
            "Write a project file through the host.",
            object(json!({ "path": { "type": "string" }, "content": { "type": "string" } }), &["path", "content"]),
        ),
        tool(
            "host_write_unchecked",
            "Write a project file through the host; a refusal is the SDK's.",
            object(json!({ "path": { "type": "string" }, "content": { "type": "string" } }), &["path", "content"]),
        ),
        tool(
            "sample",
            "Ask the session model.",
            object(
                json!({ "text": { "type": "string" }, "messages": { "type": "integer" }, "max_tokens": { "type": "integer" } }),
                &["text"],
            ),
        ),
        tool("ask", "Ask the user for a name.", object(json!({}), &[])),
        tool("wait", "Never return.", object(json!({}), &[])),
    ]
}

pub fn text(t: impl Into<String>) -> Value {
    json!({ "content": [{ "type": "text", "text": t.into() }] })
}

/// The step for tool `name`, or `None` when it is not a contract tool.
pub fn call(name: &str, args: &Value) -> Option<Step> {
    let str_arg = |key: &str| args[key].as_str().unwrap_or("").to_string();
    Some(match name {
        "echo" => Step::Reply(text(str_arg("text"))),
        "structured" => {
            let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
            let mut result = text(format!("sum={sum}"));
            result["structuredContent"] = json!({ "sum": sum });
            Step::Reply(result)
        }
        "fail" => {
            let mut result = text("the tool failed on purpose");
            result["isError"] = json!(true);
            Step::Reply(result)
        }
        "host_read" => Step::Ask {
            method: "io.artec.clat/tools/call",
            params: json!({ "name": "read_file", "arguments": { "path": str_arg("path") } }),
            pending: Pending::HostTool,
        },
        "host_write" => Step::Ask {
            method: "io.artec.clat/tools/call",
            params: json!({ "name": "write_file", "arguments": { "path": str_arg("path"), "content": str_arg("content") } }),
            pending: Pending::HostTool,
        },
        "host_write_unchecked" => Step::Ask {
            method: "io.artec.clat/tools/call",
            params: json!({ "name": "write_file", "arguments": { "path": str_arg("path"), "content": str_arg("content") } }),
            pending: Pending::HostToolUnchecked,
        },
        "sample" => {
            let count = args["messages"].as_u64().unwrap_or(1).max(1);
            let message = json!({ "role": "user", "content": { "type": "text", "text": str_arg("text") } });
            Step::Ask {
                method: "sampling/createMessage",
                params: json!({ "messages": vec![message; count as usize], "maxTokens": args["max_tokens"].as_u64().unwrap_or(50) }),
                pending: Pending::Sample,
            }
        }
        "ask" => Step::Ask {
            method: "elicitation/create",
            params: json!({ "message": "Who are you?", "requestedSchema": object(
                json!({ "name": { "type": "string" }, "admin": { "type": "boolean" } }), &["name"]) }),
            pending: Pending::Ask,
        },
        "wait" => Step::Silent,
        _ => return None,
    })
}

fn texts(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

/// The call's result once the client answered `response` (a JSON-RPC response).
pub fn render(pending: Pending, response: &Value) -> Value {
    if let (Pending::HostToolUnchecked, Some(error)) = (&pending, response.get("error")) {
        let mut result = text(error["message"].as_str().unwrap_or("failed"));
        result["isError"] = json!(true);
        return result;
    }
    if let Some(error) = response.get("error") {
        return text(format!("error: {}", error["data"]["kind"].as_str().unwrap_or("unknown")));
    }
    let result = &response["result"];
    text(match pending {
        Pending::HostTool if result["isError"] == json!(true) => format!("tool error: {}", texts(result)),
        Pending::HostTool => format!("ok: {}", texts(result)),
        Pending::HostToolUnchecked => texts(result),
        Pending::Sample => format!("model said: {}", result["content"]["text"].as_str().unwrap_or("")),
        Pending::Ask => match result["action"].as_str() {
            Some("accept") => {
                let value = |field: &str| match &result["content"][field] {
                    Value::String(s) => s.clone(),
                    Value::Null => "-".into(),
                    other => other.to_string(),
                };
                format!("accepted name={} admin={}", value("name"), value("admin"))
            }
            Some("decline") => "declined".into(),
            _ => "cancelled".into(),
        },
    })
}
