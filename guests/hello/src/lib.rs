//! `hello`: a pure tool. It reads only its arguments and touches nothing.

use clat_guest::{Args, Plugin, ToolOutput, ToolSpec, text, tool};
use serde_json::json;

struct Hello;

impl Plugin for Hello {
    fn tools() -> Vec<ToolSpec> {
        vec![
            tool("greet", "Greet someone by name.")
                .read_only()
                .closed_world()
                .schema(json!({
                    "type": "object",
                    "properties": { "name": { "type": "string", "description": "who to greet" } },
                    "additionalProperties": false
                }))
                .build(),
        ]
    }

    fn call(name: &str, args: Args) -> Result<ToolOutput, String> {
        match name {
            "greet" => Ok(text(format!("Hello, {}! (from a WASM plugin)", args.str("name").unwrap_or("world")))),
            other => Err(format!("hello has no tool {other:?}")),
        }
    }
}

clat_guest::export_plugin!(Hello);
