//! The `mcp.json` parser (the flat shape, the `mcpServers` wrapper and VS
//! Code's `servers` one, as `wrapper_key` tells them apart): any
//! text gives either one error naming the file or a configuration in which
//! every entry is either a server or a reported error naming that entry and
//! its position, the same way every time; expanding an entry's variables
//! never panics.
#![no_main]

use std::time::Duration;

use clat_mcp::config::{ConfigError, TimeoutBounds, parse_config, wrapper_key};
use libfuzzer_sys::fuzz_target;

const BOUNDS: TimeoutBounds = TimeoutBounds { startup: Duration::from_secs(20), tool_call: Duration::from_secs(120) };

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_config("mcp.json", text, &BOUNDS) {
        Err(e) => assert!(e.to_string().starts_with("mcp.json")),
        Ok(config) => {
            let top = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
                .expect("a configuration came from an object");
            let texts: std::collections::HashMap<&str, String> =
                top.iter().map(|(key, value)| (key.as_str(), value.to_string())).collect();
            let entries = match wrapper_key(|key| texts.get(key).map(String::as_str)).and_then(|key| top.get(key)) {
                Some(serde_json::Value::Object(wrapped)) => wrapped.clone(),
                _ => top.clone(),
            };
            assert_eq!(config.servers.len() + config.errors.len(), entries.len());
            for error in &config.errors {
                let ConfigError::Entry { name, .. } = error else { panic!("not an entry error: {error}") };
                assert!(entries.contains_key(name) && !config.servers.contains_key(name));
            }
            for entry in config.servers.values() {
                let _ = entry.expand(&|name| (name.len() % 2 == 0).then(|| format!("${{{name}}}")));
            }
            let again = parse_config("mcp.json", text, &BOUNDS).unwrap();
            assert_eq!(again.servers, config.servers);
            assert_eq!(again.errors, config.errors);
        }
    }
});
