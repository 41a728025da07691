//! VS Code's `inputs` in `mcp.json` (`{"servers": {…}, "inputs": [{"type":
//! "promptString", "id": "api-key", "description": "…", "password": true}]}`):
//! which inputs the entries reference (`${input:ID}`), the values the user gave
//! for this process, and the lookup that expands an entry's `${input:ID}` from
//! them (every other variable from the environment). The door asks for them
//! before servers start, through `MountOptions::questions` (the command line's
//! is a terminal's, `cli/questions.rs`), and keeps the answers with `provide`. A value lives in this process's memory only, is a
//! secret in every diagnostic from the moment it is given, and is never
//! written anywhere. Headless, an entry that uses an input fails with what to
//! write instead.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::sync::Unpoisoned;
use serde_json::Value;

fn given() -> &'static Mutex<HashMap<String, String>> {
    static GIVEN: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    GIVEN.get_or_init(Mutex::default)
}

/// Give the value of the input `id` for this process (redacted from now on).
pub fn provide(id: &str, value: String) {
    crate::redact::register_secrets([value.clone()]);
    given().locked().insert(id.to_string(), value);
}

/// Whether the input `id` has a value in this process.
pub fn is_given(id: &str) -> bool {
    given().locked().contains_key(id)
}

/// A variable's value for an entry's expansion: `input:ID` from the values
/// given, anything else from the environment.
pub fn lookup(name: &str) -> Option<String> {
    match name.strip_prefix("input:") {
        Some(id) => given().locked().get(id).cloned(),
        None => std::env::var(name).ok(),
    }
}

/// One declared input an entry references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub id: String,
    /// What to ask (VS Code's `description`), else the id.
    pub description: String,
    /// `promptString` with `"password": true`: typed without echo.
    pub password: bool,
    /// `pickString`'s options (empty for `promptString`).
    pub options: Vec<String>,
    pub default: Option<String>,
    /// The servers whose entries reference it.
    pub servers: Vec<String>,
}

/// The inputs `mcp.json` at `path` declares and its entries reference, in
/// the order declared, with the servers that use each. A file that cannot be
/// read or parsed has none (the mount reports the file's problem).
pub fn referenced(path: &Path) -> Vec<Input> {
    let document =
        crate::home::files::read_config_file(path).ok().and_then(|t| serde_json::from_slice::<Value>(&t).ok());
    let Some(document) = document else {
        return Vec::new();
    };
    let Some(declared) = document.get(clat_mcp::config::VSCODE_INPUTS_KEY).and_then(Value::as_array) else {
        return Vec::new();
    };
    let servers = [clat_mcp::config::VSCODE_WRAPPER_KEY, clat_mcp::config::WRAPPER_KEY]
        .into_iter()
        .find_map(|key| document.get(key))
        .and_then(Value::as_object);
    let Some(servers) = servers else { return Vec::new() };
    let text = |s: &Value, key: &str| s.get(key).and_then(Value::as_str).map(str::to_string);
    declared
        .iter()
        .filter_map(|input| {
            let id = text(input, "id")?;
            let reference = format!("${{input:{id}}}");
            let using: Vec<String> = servers
                .iter()
                .filter(|(_, entry)| entry.to_string().contains(&reference))
                .map(|(n, _)| n.clone())
                .collect();
            if using.is_empty() {
                return None;
            }
            let options = input
                .get("options")
                .and_then(Value::as_array)
                .map(|o| o.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            Some(Input {
                description: text(input, "description").unwrap_or_else(|| id.clone()),
                password: input.get("password").and_then(Value::as_bool).unwrap_or(false),
                options,
                default: text(input, "default"),
                servers: using,
                id,
            })
        })
        .collect()
}
