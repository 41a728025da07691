//! What the tools' definitions cost a model (`clat tools`): each tool's
//! definition — name, description, input schema as compact JSON — in bytes
//! and estimated tokens, in all and by extension, native tools, an MCP
//! server's and a WASM plugin's alike.

mod support;

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

#[test]
fn clat_tools_gives_each_definitions_size_and_the_totals_by_extension() {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env.write_mcp_config(json!({ "mcpServers": { "srv": { "command": clat_test_server_artifact::MCP_TEST_SERVER } } }));
    let out = env.clat(&["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tools = listed["tools"].as_array().unwrap();
    // Each figure is the size of what a model is offered, measured here on the listing's own fields.
    let mut by_extension: Vec<(String, u64, u64)> = Vec::new();
    for tool in tools {
        let definition =
            json!({ "name": tool["name"], "description": tool["description"], "inputSchema": tool["input_schema"] });
        let bytes = serde_json::to_vec(&definition).unwrap().len() as u64;
        assert_eq!(tool["schema"], json!({ "bytes": bytes, "tokens": bytes.div_ceil(4) }), "{}", tool["name"]);
        let extension = match tool["source"]["kind"].as_str().unwrap() {
            "native" => "native".to_string(),
            "mcp" => format!("mcp:{}", tool["source"]["server"].as_str().unwrap()),
            _ => format!("wasm:{}", tool["source"]["plugin"].as_str().unwrap()),
        };
        match by_extension.iter_mut().find(|(name, ..)| *name == extension) {
            Some(seen) => (seen.1, seen.2) = (seen.1 + 1, seen.2 + bytes),
            None => by_extension.push((extension, 1, bytes)),
        }
    }
    let schemas = &listed["schemas"];
    let total: u64 = by_extension.iter().map(|(.., bytes)| bytes).sum();
    assert_eq!((schemas["tools"].as_u64(), schemas["bytes"].as_u64()), (Some(tools.len() as u64), Some(total)));
    assert_eq!(schemas["tokens"].as_u64(), Some(total.div_ceil(4)));
    let extensions: Vec<(String, u64, u64)> = schemas["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (e["extension"].as_str().unwrap().to_string(), e["tools"].as_u64().unwrap(), e["bytes"].as_u64().unwrap())
        })
        .collect();
    by_extension.sort_by_key(|(.., bytes)| std::cmp::Reverse(*bytes));
    assert_eq!(extensions, by_extension, "by extension, the costliest first");
    let names: Vec<&str> = extensions.iter().map(|(name, ..)| name.as_str()).collect();
    for kind in ["native", "mcp:srv", "wasm:hello"] {
        assert!(names.contains(&kind), "{kind} in {names:?}");
    }

    // The library's front door offers the same definitions.
    let project = env.mount();
    for tool in project.registry().list() {
        let definition = tool.definition();
        assert_eq!(definition["name"], tool.name.as_str());
        assert_eq!(serde_json::to_vec(&definition).unwrap().len(), tool.schema.bytes, "{}", tool.name);
    }

    // The table ends with the same figures, for a reader.
    let out = env.clat(&["tools"]);
    let last = stdout(&out).lines().last().unwrap().to_string();
    let kib = |bytes: u64| format!("{:.1} KiB", bytes as f64 / 1024.0);
    assert!(last.starts_with(&format!("definitions: {}, ~{} tokens", kib(total), total.div_ceil(4))), "{last}");
    let (costliest, tools_of_it, bytes) = &extensions[0];
    assert!(last.contains(&format!(": {costliest} {} ({tools_of_it} tools)", kib(*bytes))), "{last}");
}
