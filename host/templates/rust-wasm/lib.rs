//! {{name}}: a CLAT plugin (a WebAssembly component). Each tool is declared
//! once: its name, description, effect hints and a typed argument struct whose
//! JSON Schema is derived. `clat plugin test .` checks it; `clat plugin call .
//! hello '{"name":"you"}'` runs it without installing.

use clat_guest::{Plugin, Tool};

/// The arguments of `hello`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Hello {
    /// Who to greet.
    name: String,
}

struct Tools;

impl Plugin for Tools {
    fn tools() -> Vec<Tool> {
        let hello = |args: Hello| Ok(format!("Hello, {}!", args.name));
        vec![Tool::new("hello", "Greet someone by name.", hello).read_only().closed_world()]
    }
}

clat_guest::export_plugin!(Tools);
