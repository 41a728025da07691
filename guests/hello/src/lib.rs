//! `hello`: a pure tool. It reads only its arguments and touches nothing.

use clat_guest::{Plugin, Tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Greet {
    /// Who to greet (default: the world).
    name: Option<String>,
}

struct Hello;

impl Plugin for Hello {
    fn tools() -> Vec<Tool> {
        let greet =
            |args: Greet| Ok(format!("Hello, {}! (from a WASM plugin)", args.name.as_deref().unwrap_or("world")));
        vec![Tool::new("greet", "Greet someone by name.", greet).read_only().closed_world()]
    }
}

clat_guest::export_plugin!(Hello);
