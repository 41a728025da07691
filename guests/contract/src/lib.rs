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

use clat_guest::{Answer, Form, HostTool, NoArgs, Plugin, Role, SamplingMessage, SamplingRequest, Tool, ToolError};
use clat_guest::{error, host, output_text, structured};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Sum {
    a: i64,
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct Path {
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct Write {
    path: String,
    content: String,
}

#[derive(Deserialize, JsonSchema)]
struct Sample {
    text: String,
    /// How many copies of the message to send (default 1).
    messages: Option<u32>,
    max_tokens: Option<u32>,
}

/// A host tool's outcome as the contract's text.
fn host_tool(tool: HostTool, arguments: serde_json::Value) -> Result<String, ToolError> {
    Ok(match host::call(tool, &arguments) {
        Ok(out) if !out.is_error => format!("ok: {}", output_text(&out)),
        Ok(out) => format!("tool error: {}", output_text(&out)),
        Err(e) => format!("error: {}", e.kind()),
    })
}

fn sample(args: Sample) -> Result<String, ToolError> {
    let message = SamplingMessage { role: Role::User, text: args.text };
    let request = SamplingRequest {
        messages: vec![message; args.messages.unwrap_or(1).max(1) as usize],
        system_prompt: None,
        max_tokens: args.max_tokens.unwrap_or(50),
        temperature: None,
        stop_sequences: vec![],
        model_hints: vec![],
    };
    Ok(match host::sample(&request) {
        Ok(result) => format!("model said: {}", result.text),
        Err(e) => format!("error: {}", e.kind()),
    })
}

fn ask(_: NoArgs) -> Result<String, ToolError> {
    let form = Form::new("Who are you?").text("name", "").required().boolean("admin", "");
    Ok(match form.ask() {
        Ok(Answer::Accepted(answers)) => {
            let value = |field| answers.display(field).unwrap_or_else(|| "-".into());
            format!("accepted name={} admin={}", value("name"), value("admin"))
        }
        Ok(Answer::Declined) => "declined".into(),
        Ok(Answer::Cancelled) => "cancelled".into(),
        Err(e) => format!("error: {}", e.kind()),
    })
}

fn wait(_: NoArgs) -> Result<String, ToolError> {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

struct Contract;

impl Plugin for Contract {
    fn tools() -> Vec<Tool> {
        let sum = |a: Sum| Ok(structured(format!("sum={}", a.a + a.b), &json!({ "sum": a.a + a.b })));
        let read = |a: Path| host_tool(HostTool::ReadFile, json!({ "path": a.path }));
        let write = |a: Write| host_tool(HostTool::WriteFile, json!({ "path": a.path, "content": a.content }));
        // The host's refusal left to the SDK: `?` makes it a tool error.
        let write_unchecked = |a: Write| -> Result<String, ToolError> {
            Ok(output_text(&host::call(HostTool::WriteFile, &json!({ "path": a.path, "content": a.content }))?))
        };
        vec![
            Tool::new("echo", "Echo the text.", |a: Echo| Ok(a.text)),
            Tool::new("structured", "Add two integers, with structured output.", sum),
            Tool::new("fail", "Fail on purpose.", |_: NoArgs| Ok(error("the tool failed on purpose"))),
            Tool::new("host_read", "Read a project file through the host.", read),
            Tool::new("host_write", "Write a project file through the host.", write),
            Tool::new(
                "host_write_unchecked",
                "Write a project file through the host; a refusal is the SDK's.",
                write_unchecked,
            ),
            Tool::new("sample", "Ask the session model.", sample),
            Tool::new("ask", "Ask the user for a name.", ask),
            Tool::new("wait", "Never return.", wait),
        ]
        .into_iter()
        .map(|tool| tool.read_only().closed_world())
        .collect()
    }
}

clat_guest::export_plugin!(Contract);
