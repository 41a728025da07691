//! `contract`: the WASM half of CLAT's contract tests. The MCP half is
//! `clat-test-mcp-server --contract`; both implement the same tools with the
//! same schemas, annotations and result texts, so one scenario table can run
//! against either kind and expect the same observable results:
//!
//! - `echo {text}` → `text`
//! - `structured {a, b}` → `sum=N` with structured content `{"sum": N}`
//! - `fail {}` → an `isError` result `the tool failed on purpose`
//! - `host_read {path}`, `host_write {path, content}` → the host tool through
//!   host services: `ok: TEXT`, `tool error: TEXT` or `error: KIND`
//! - `sample {text, messages?, max_tokens?}` → `model said: TEXT` or `error: KIND`
//! - `ask {}` → a form (`name` text, required; `admin` yes/no): `accepted
//!   name=… admin=…`, `declined`, `cancelled` or `error: KIND`
//! - `wait {}` → never returns (cancel and deadline tests)
//!
//! `KIND` is the host error's name: denied, cancelled, no_active_run, timeout,
//! budget_exhausted, invalid, unsupported, failed.

use clat_guest::{
    Args, BooleanField, ElicitationForm, ElicitationResult, FieldKind, FieldValue, FormField, HostError, HostTool,
    Plugin, Role, SamplingMessage, SamplingRequest, TextField, ToolOutput, ToolSpec, error, host, output_text, text,
    tool,
};
use serde_json::json;

struct Contract;

fn spec(name: &str, description: &str, schema: serde_json::Value) -> ToolSpec {
    tool(name, description).read_only().closed_world().schema(schema).build()
}

fn kind(e: &HostError) -> &'static str {
    match e {
        HostError::Denied(_) => "denied",
        HostError::Cancelled => "cancelled",
        HostError::NoActiveRun => "no_active_run",
        HostError::Timeout => "timeout",
        HostError::BudgetExhausted(_) => "budget_exhausted",
        HostError::Invalid(_) => "invalid",
        HostError::Unsupported(_) => "unsupported",
        HostError::Failed(_) => "failed",
    }
}

fn host_tool(tool: HostTool, arguments: serde_json::Value) -> ToolOutput {
    match host::call(tool, &arguments) {
        Ok(out) if !out.is_error => text(format!("ok: {}", output_text(&out))),
        Ok(out) => text(format!("tool error: {}", output_text(&out))),
        Err(e) => text(format!("error: {}", kind(&e))),
    }
}

impl Plugin for Contract {
    fn tools() -> Vec<ToolSpec> {
        let object = |properties: serde_json::Value, required: &[&str]| json!({ "type": "object", "properties": properties, "required": required });
        vec![
            spec("echo", "Echo the text.", object(json!({ "text": { "type": "string" } }), &["text"])),
            spec(
                "structured",
                "Add two integers, with structured output.",
                object(json!({ "a": { "type": "integer" }, "b": { "type": "integer" } }), &["a", "b"]),
            ),
            spec("fail", "Fail on purpose.", object(json!({}), &[])),
            spec(
                "host_read",
                "Read a project file through the host.",
                object(json!({ "path": { "type": "string" } }), &["path"]),
            ),
            spec(
                "host_write",
                "Write a project file through the host.",
                object(json!({ "path": { "type": "string" }, "content": { "type": "string" } }), &["path", "content"]),
            ),
            spec(
                "sample",
                "Ask the session model.",
                object(
                    json!({ "text": { "type": "string" }, "messages": { "type": "integer" }, "max_tokens": { "type": "integer" } }),
                    &["text"],
                ),
            ),
            spec("ask", "Ask the user for a name.", object(json!({}), &[])),
            spec("wait", "Never return.", object(json!({}), &[])),
        ]
    }

    fn call(name: &str, args: Args) -> Result<ToolOutput, String> {
        Ok(match name {
            "echo" => text(args.required_str("text")?),
            "structured" => {
                let sum = args.i64("a").unwrap_or(0) + args.i64("b").unwrap_or(0);
                ToolOutput { structured: Some(json!({ "sum": sum }).to_string()), ..text(format!("sum={sum}")) }
            }
            "fail" => error("the tool failed on purpose"),
            "host_read" => host_tool(HostTool::ReadFile, json!({ "path": args.required_str("path")? })),
            "host_write" => host_tool(
                HostTool::WriteFile,
                json!({ "path": args.required_str("path")?, "content": args.required_str("content")? }),
            ),
            "sample" => {
                let count = args.i64("messages").unwrap_or(1).max(1) as usize;
                let request = SamplingRequest {
                    messages: (0..count)
                        .map(|_| SamplingMessage { role: Role::User, text: args.str("text").unwrap_or("").to_string() })
                        .collect(),
                    system_prompt: None,
                    max_tokens: args.i64("max_tokens").unwrap_or(50) as u32,
                    temperature: None,
                    stop_sequences: vec![],
                    model_hints: vec![],
                };
                match host::sample(&request) {
                    Ok(result) => text(format!("model said: {}", result.text)),
                    Err(e) => text(format!("error: {}", kind(&e))),
                }
            }
            "ask" => {
                let form = ElicitationForm {
                    message: "Who are you?".into(),
                    fields: vec![
                        FormField {
                            name: "name".into(),
                            title: None,
                            description: None,
                            required: true,
                            kind: FieldKind::Text(TextField {
                                min_length: None,
                                max_length: None,
                                format: None,
                                default: None,
                            }),
                        },
                        FormField {
                            name: "admin".into(),
                            title: None,
                            description: None,
                            required: false,
                            kind: FieldKind::Boolean(BooleanField { default: None }),
                        },
                    ],
                };
                match host::elicit(&form) {
                    Ok(ElicitationResult::Accepted(answers)) => {
                        let value = |field: &str| {
                            answers.iter().find(|a| a.name == field).map_or("-".to_string(), |a| match &a.value {
                                FieldValue::Text(t) | FieldValue::Choice(t) => t.clone(),
                                FieldValue::Number(n) => n.to_string(),
                                FieldValue::Boolean(b) => b.to_string(),
                            })
                        };
                        text(format!("accepted name={} admin={}", value("name"), value("admin")))
                    }
                    Ok(ElicitationResult::Declined) => text("declined"),
                    Ok(ElicitationResult::Cancelled) => text("cancelled"),
                    Err(e) => text(format!("error: {}", kind(&e))),
                }
            }
            "wait" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            other => return Err(format!("contract has no tool {other:?}")),
        })
    }
}

clat_guest::export_plugin!(Contract);
