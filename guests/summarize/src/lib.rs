//! `summarize`: reads a project file through the host and asks the session
//! model (sampling) for a summary. The request passes CLAT's payload, budget
//! and permission gates.

use clat_guest::{Args, Plugin, Role, SamplingMessage, SamplingRequest, ToolOutput, ToolSpec, error, host, text, tool};
use serde_json::json;

struct Summarize;

impl Plugin for Summarize {
    fn tools() -> Vec<ToolSpec> {
        vec![
            tool("file", "Summarize one project file with the session model.")
                .read_only()
                .schema(json!({
                    "type": "object",
                    "properties": { "path": { "type": "string" } },
                    "required": ["path"],
                    "additionalProperties": false
                }))
                .build(),
        ]
    }

    fn call(name: &str, args: Args) -> Result<ToolOutput, String> {
        if name != "file" {
            return Err(format!("summarize has no tool {name:?}"));
        }
        let path = args.required_str("path")?;
        let body = match host::read_file(path) {
            Ok(b) => b,
            Err(e) => return Ok(error(format!("cannot read {path}: {e}"))),
        };
        let request = SamplingRequest {
            messages: vec![SamplingMessage {
                role: Role::User,
                text: format!("Summarize this file ({path}):\n\n{body}"),
            }],
            system_prompt: Some("You summarize source files in three sentences.".into()),
            max_tokens: 400,
            temperature: None,
            stop_sequences: vec![],
            model_hints: vec!["any-model-you-like".into()],
        };
        Ok(match host::sample(&request) {
            Ok(result) => text(format!("{} (model: {})", result.text, result.model)),
            Err(e) => error(format!("sampling failed: {}", host::describe(&e))),
        })
    }
}

clat_guest::export_plugin!(Summarize);
