//! `mcp.json`: the user's flat map of server name → entry. Each entry chooses
//! exactly one transport — `command` (+ `args`, `env`, `cwd`) for stdio, or
//! `url` (+ `headers`) for Streamable HTTP. Malformed JSON is one error naming
//! the file and position; a bad entry is an error naming the entry and never
//! stops the others.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// One configured server.
#[derive(Clone, PartialEq, Eq)]
pub enum ServerEntry {
    Stdio { command: String, args: Vec<String>, env: BTreeMap<String, String>, cwd: Option<String> },
    Http { url: String, headers: BTreeMap<String, String> },
}

/// Names only: `env` values and `headers` values may be secrets.
impl std::fmt::Debug for ServerEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerEntry::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env_names", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            ServerEntry::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("header_names", &headers.keys().collect::<Vec<_>>())
                .finish(),
        }
    }
}

/// Why the file or an entry cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{file} is malformed at line {line}, column {column}: {message}")]
    Malformed { file: String, line: usize, column: usize, message: String },
    #[error("cannot read {file}: {message}")]
    Unreadable { file: String, message: String },
    #[error("{file}: entry {name:?}: {message}")]
    Entry { file: String, name: String, message: String },
}

/// The entries of one file, each parsed on its own.
#[derive(Debug, Default)]
pub struct McpConfig {
    pub servers: BTreeMap<String, ServerEntry>,
    /// Entries that could not be used, with why.
    pub errors: Vec<ConfigError>,
}

fn strings(value: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| format!("`{what}` must hold strings")))
            .collect(),
        Some(_) => Err(format!("`{what}` must be an array of strings")),
    }
}

fn string_map(value: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, String> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                v.as_str().map(|s| (k.clone(), s.to_owned())).ok_or_else(|| format!("`{what}.{k}` must be a string"))
            })
            .collect(),
        Some(_) => Err(format!("`{what}` must be an object of strings")),
    }
}

fn entry(value: &Value) -> Result<ServerEntry, String> {
    let obj = value.as_object().ok_or("an entry must be an object")?;
    const KNOWN: [&str; 6] = ["command", "args", "env", "cwd", "url", "headers"];
    if let Some(unknown) = obj.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!("unknown field `{unknown}`"));
    }
    match (obj.get("command"), obj.get("url")) {
        (Some(_), Some(_)) => Err("choose exactly one transport: `command` (stdio) or `url` (HTTP), not both".into()),
        (None, None) => Err("choose exactly one transport: `command` (stdio) or `url` (HTTP)".into()),
        (Some(command), None) => {
            if obj.contains_key("headers") {
                return Err("`headers` applies to `url` entries only".into());
            }
            let command = command.as_str().filter(|c| !c.is_empty()).ok_or("`command` must be a non-empty string")?;
            let cwd = match obj.get("cwd") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => return Err("`cwd` must be a string".into()),
            };
            Ok(ServerEntry::Stdio {
                command: command.to_string(),
                args: strings(obj.get("args"), "args")?,
                env: string_map(obj.get("env"), "env")?,
                cwd,
            })
        }
        (None, Some(url)) => {
            if let Some(k) = ["args", "env", "cwd"].iter().find(|k| obj.contains_key(**k)) {
                return Err(format!("`{k}` applies to `command` entries only"));
            }
            let url = url.as_str().ok_or("`url` must be a string")?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("`url` must be an http:// or https:// URL, not {url:?}"));
            }
            Ok(ServerEntry::Http { url: url.to_string(), headers: string_map(obj.get("headers"), "headers")? })
        }
    }
}

/// Parse the text of an `mcp.json` named `file` (for messages).
pub fn parse_config(file: &str, text: &str) -> Result<McpConfig, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ConfigError::Malformed {
        file: file.to_string(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    let Value::Object(entries) = value else {
        return Err(ConfigError::Malformed {
            file: file.to_string(),
            line: 1,
            column: 1,
            message: "the top level must be an object of server entries".into(),
        });
    };
    let mut config = McpConfig::default();
    for (name, value) in entries {
        match entry(&value) {
            Ok(e) => {
                config.servers.insert(name, e);
            }
            Err(message) => config.errors.push(ConfigError::Entry { file: file.to_string(), name, message }),
        }
    }
    Ok(config)
}

/// Read `mcp.json` at `path`; a missing file is an empty configuration.
pub fn read_config(path: &Path) -> Result<McpConfig, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_config(&path.display().to_string(), &text),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
            Ok(McpConfig::default())
        }
        Err(e) => Err(ConfigError::Unreadable { file: path.display().to_string(), message: e.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_parses() {
        let text = r#"{
          "filesystem": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
          "memory": { "command": "mcp-memory", "env": { "STORE": "/data" }, "cwd": "mcp-work" },
          "web-search": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer YOUR_API_KEY" } }
        }"#;
        let c = parse_config("mcp.json", text).unwrap();
        assert!(c.errors.is_empty(), "{:?}", c.errors);
        assert_eq!(c.servers.len(), 3);
        assert!(
            matches!(&c.servers["memory"], ServerEntry::Stdio { cwd: Some(cwd), env, .. } if cwd == "mcp-work" && env["STORE"] == "/data")
        );
        assert!(matches!(&c.servers["web-search"], ServerEntry::Http { headers, .. } if headers.len() == 1));
    }

    #[test]
    fn bad_entries_are_named_and_isolated() {
        let text = r#"{ "both": { "command": "x", "url": "https://a" }, "neither": { "args": [] },
                        "good": { "command": "ok" }, "weird": { "command": "x", "colour": 1 },
                        "ftp": { "url": "ftp://x" } }"#;
        let c = parse_config("mcp.json", text).unwrap();
        assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["good"]);
        let messages: Vec<String> = c.errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(messages.len(), 4);
        assert!(messages.iter().any(|m| m.contains("\"both\"") && m.contains("not both")));
        assert!(messages.iter().any(|m| m.contains("\"neither\"") && m.contains("exactly one transport")));
        assert!(messages.iter().any(|m| m.contains("\"weird\"") && m.contains("unknown field `colour`")));
        let err = parse_config("mcp.json", "{\n  \"a\": {,}\n}").unwrap_err();
        assert!(err.to_string().starts_with("mcp.json is malformed at line 2"), "{err}");
    }
}
