//! The `mcp.json` parser: any text gives either one error naming the file or
//! a configuration in which every entry is either a server or a reported
//! error naming that entry, the same way every time.
#![no_main]

use clat_mcp::config::{ConfigError, parse_config};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_config("mcp.json", text) {
        Err(e) => assert!(e.to_string().starts_with("mcp.json")),
        Ok(config) => {
            let top = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
                .expect("a configuration came from an object");
            let entries = top;
            assert_eq!(config.servers.len() + config.errors.len(), entries.len());
            for error in &config.errors {
                let ConfigError::Entry { name, .. } = error else { panic!("not an entry error: {error}") };
                assert!(entries.contains_key(name) && !config.servers.contains_key(name));
            }
            let again = parse_config("mcp.json", text).unwrap();
            assert_eq!(again.servers, config.servers);
            assert_eq!(again.errors, config.errors);
        }
    }
});
