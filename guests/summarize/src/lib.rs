//! `summarize`: reads a project file through the host and asks the session
//! model (sampling) for a summary. The request passes CLAT's payload, budget
//! and permission gates.

use clat_guest::{Plugin, Role, SamplingMessage, SamplingRequest, Tool, ToolError, host};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct File {
    /// The project file to summarize.
    path: String,
}

fn summarize(args: File) -> Result<String, ToolError> {
    let body = host::read_file(&args.path).map_err(|e| format!("cannot read {}: {e}", args.path))?;
    let request = SamplingRequest {
        messages: vec![SamplingMessage {
            role: Role::User,
            text: format!("Summarize this file ({}):\n\n{body}", args.path),
        }],
        system_prompt: Some("You summarize source files in three sentences.".into()),
        max_tokens: 400,
        temperature: None,
        stop_sequences: vec![],
        model_hints: vec!["any-model-you-like".into()],
    };
    let result = host::sample(&request).map_err(|e| format!("sampling failed: {}", host::describe(&e)))?;
    Ok(format!("{} (model: {})", result.text, result.model))
}

struct Summarize;

impl Plugin for Summarize {
    fn tools() -> Vec<Tool> {
        vec![Tool::new("file", "Summarize one project file with the session model.", summarize).read_only()]
    }
}

clat_guest::export_plugin!(Summarize);
