//! Editing `$CLAT_HOME/mcp.json` for `clat mcp add | remove | enable |
//! disable` (or, with `--scope project`, the project's checked-in
//! `.mcp.json`, created in Claude Code's `mcpServers` shape): one
//! read-modify-write under the home's advisory lock, replaced atomically, on
//! the file's JSON as written — every other entry is kept as it was, and so
//! is the file's shape (the flat map or the `mcpServers` wrapper). The result is checked with the same parser that reads it for a
//! mount before anything is written; a malformed file is never overwritten.

use clat_mcp::config::{ConfigError, VSCODE_WRAPPER_KEY, WRAPPER_KEY, parse_config, wrapper_key};
use serde_json::{Map, Value};

use super::sources::{ENTRY_TIMEOUT_BOUNDS, MCP_CONFIG_FILE};
use crate::home::{ClatHome, HomeError};
use crate::limits::SERVER_NAME_MAX_CHARS;

/// Why `mcp.json` was not changed.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("cannot read {file}: {message}")]
    Unreadable { file: String, message: String },
    #[error("{0}; fix the file by hand first, nothing was changed")]
    Malformed(ConfigError),
    #[error(
        "server name {0:?} must be 1–{SERVER_NAME_MAX_CHARS} characters of letters, digits, '-' and '_', starting with a letter or digit"
    )]
    BadName(String),
    #[error(
        "{0:?} is reserved: it is the key of mcp.json's wrapper shape (`{{\"mcpServers\": {{...}}}}`); name the server otherwise"
    )]
    ReservedName(String),
    #[error("a server named {0:?} is already configured; use --force to replace it")]
    Exists(String),
    #[error("no server named {name:?} is configured in {file}{}", did_you_mean(nearest))]
    NotConfigured { name: String, file: String, nearest: Option<String> },
    #[error("{0}")]
    BadEntry(ConfigError),
}

/// `; did you mean "NAME"?` when a configured name is near the one written.
pub fn did_you_mean(nearest: &Option<String>) -> String {
    nearest.as_ref().map(|n| format!("; did you mean {n:?}?")).unwrap_or_default()
}

/// The configured server's name nearest to `written`, if one is close.
fn nearest_server(written: &str, entries: &Map<String, Value>) -> Option<String> {
    crate::names::nearest(written, entries.keys().map(|k| (k.as_str(), vec![k.as_str()]))).map(str::to_string)
}

/// Write `path` atomically: a temporary file beside it, then a rename.
fn write_beside(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    let tmp = dir.join(format!(".mcp.json.{}.tmp", uuid::Uuid::new_v4().simple()));
    std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path)).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Whether `name` may be given to `clat mcp add`.
pub fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= SERVER_NAME_MAX_CHARS
        && name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// `$CLAT_HOME/mcp.json` (or a project's `.mcp.json`), for editing.
pub struct McpConfigFile<'h> {
    home: &'h ClatHome,
    /// `None`: the home's `mcp.json`; `Some(root)`: the project's `.mcp.json`.
    project: Option<std::path::PathBuf>,
}

impl<'h> McpConfigFile<'h> {
    pub fn new(home: &'h ClatHome) -> Self {
        McpConfigFile { home, project: None }
    }

    /// The `.mcp.json` of the project at `root` (edited under `home`'s lock).
    pub fn of_project(home: &'h ClatHome, root: &std::path::Path) -> Self {
        McpConfigFile { home, project: Some(root.to_path_buf()) }
    }

    fn path(&self) -> std::path::PathBuf {
        match &self.project {
            Some(root) => root.join(super::project_servers::PROJECT_MCP_FILE),
            None => self.home.path().join(MCP_CONFIG_FILE),
        }
    }

    fn file(&self) -> String {
        self.path().display().to_string()
    }

    /// The file's JSON (when there is none: an empty object, or for a
    /// project Claude Code's `{"mcpServers": {}}`).
    fn read(&self) -> Result<Value, EditError> {
        let path = self.path();
        let read = match &self.project {
            Some(root) => crate::home::files::read_project_file(root, super::project_servers::PROJECT_MCP_FILE),
            None => crate::home::files::read_config_file(&path),
        };
        let text = match read.and_then(crate::home::files::utf8) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.project.is_some() => {
                return Ok(serde_json::json!({ WRAPPER_KEY: {} }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Value::Object(Map::new())),
            Err(e) => return Err(EditError::Unreadable { file: self.file(), message: e.to_string() }),
        };
        // The mount's own parser decides whether the file is usable at all.
        parse_config(&self.file(), &text, &ENTRY_TIMEOUT_BOUNDS).map_err(EditError::Malformed)?;
        serde_json::from_str(&text).map_err(|e| {
            let (line, column) = (e.line(), e.column());
            EditError::Malformed(ConfigError::Malformed { file: self.file(), line, column, message: e.to_string() })
        })
    }

    /// The object that holds the entries: the wrapper's (`mcpServers`, or
    /// VS Code's `servers`), or the file's own.
    fn entries(document: &mut Value) -> &mut Map<String, Value> {
        let top = document.as_object_mut().expect("the parser accepted an object");
        let texts: std::collections::HashMap<&str, String> = [WRAPPER_KEY, VSCODE_WRAPPER_KEY]
            .into_iter()
            .filter_map(|key| Some((key, top.get(key)?.to_string())))
            .collect();
        match wrapper_key(|key| texts.get(key).map(String::as_str)) {
            Some(wrapper) => {
                top.get_mut(wrapper).and_then(Value::as_object_mut).expect("the parser accepted the wrapper")
            }
            None => top,
        }
    }

    /// Read, change, check the changed entry `name` (when it remains), write.
    fn edit(
        &self,
        name: &str,
        change: impl FnOnce(&mut Map<String, Value>) -> Result<(), EditError>,
    ) -> Result<(), EditError> {
        let _lock = self.home.lock(if self.project.is_some() { "project-mcp-json" } else { MCP_CONFIG_FILE })?;
        let mut document = self.read()?;
        change(Self::entries(&mut document))?;
        let text = serde_json::to_string_pretty(&document).expect("JSON values serialize") + "\n";
        let parsed = parse_config(&self.file(), &text, &ENTRY_TIMEOUT_BOUNDS).map_err(EditError::Malformed)?;
        if let Some(error) =
            parsed.errors.into_iter().find(|e| matches!(e, ConfigError::Entry { name: n, .. } if n == name))
        {
            return Err(EditError::BadEntry(error));
        }
        match &self.project {
            None => self.home.write_atomic(MCP_CONFIG_FILE, text.as_bytes())?,
            Some(_) => write_beside(&self.path(), text.as_bytes())
                .map_err(|e| EditError::Unreadable { file: self.file(), message: format!("cannot write it: {e}") })?,
        }
        Ok(())
    }

    /// Add the entry `name` (an `mcp.json` entry object); an existing one is
    /// replaced only with `force`.
    pub fn add(&self, name: &str, entry: Value, force: bool) -> Result<(), EditError> {
        if !valid_server_name(name) {
            return Err(EditError::BadName(name.to_string()));
        }
        if name.eq_ignore_ascii_case(WRAPPER_KEY) {
            return Err(EditError::ReservedName(name.to_string()));
        }
        self.edit(name, |entries| {
            if entries.contains_key(name) && !force {
                return Err(EditError::Exists(name.to_string()));
            }
            entries.insert(name.to_string(), entry);
            Ok(())
        })
    }

    /// Remove the entry `name`.
    pub fn remove(&self, name: &str) -> Result<(), EditError> {
        let file = self.file();
        self.edit(name, |entries| match entries.shift_remove(name) {
            Some(_) => Ok(()),
            None => {
                Err(EditError::NotConfigured { name: name.to_string(), file, nearest: nearest_server(name, entries) })
            }
        })
    }

    /// Enable or disable the entry `name` (`"enabled": false`; enabling removes the mark).
    pub fn set_enabled(&self, name: &str, enabled: bool) -> Result<(), EditError> {
        let file = self.file();
        self.edit(name, |entries| {
            let nearest = nearest_server(name, entries);
            let entry = entries
                .get_mut(name)
                .and_then(Value::as_object_mut)
                .ok_or_else(|| EditError::NotConfigured { name: name.to_string(), file, nearest })?;
            entry.shift_remove("disabled");
            entry.shift_remove("enabled");
            if !enabled {
                entry.insert("enabled".into(), Value::Bool(false));
            }
            Ok(())
        })
    }

    /// The entry `name` as written, if it is configured.
    pub fn entry(&self, name: &str) -> Result<Option<Value>, EditError> {
        let mut document = self.read()?;
        Ok(Self::entries(&mut document).get(name).cloned())
    }
}

/// An entry as `clat mcp get` shows it: every `env` and `headers` value, and
/// `oauth.client_secret`, is masked (`****`, followed by the names of the
/// variables it uses, if any) unless `show_secrets`; the rest as written,
/// key shapes redacted.
pub fn masked_entry(entry: &Value, show_secrets: bool) -> Value {
    if show_secrets {
        return entry.clone();
    }
    fn mask(value: &Value) -> Value {
        let Some(text) = value.as_str() else { return value.clone() };
        let names: Vec<String> = text
            .match_indices("${")
            .filter_map(|(at, _)| {
                let inner = &text[at + 2..];
                let name = &inner[..inner.find(['}', ':'])?];
                let identifier = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                identifier.then(|| format!("${{{name}}}"))
            })
            .collect();
        if names.is_empty() {
            Value::String("****".into())
        } else {
            Value::String(format!("**** (uses {})", names.join(", ")))
        }
    }
    fn mask_values(map: &Value) -> Value {
        match map {
            Value::Object(values) => Value::Object(values.iter().map(|(k, v)| (k.clone(), mask(v))).collect()),
            other => mask(other),
        }
    }
    fn redact_strings(value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(crate::redact::redact(s)),
            Value::Array(items) => Value::Array(items.iter().map(redact_strings).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), redact_strings(v))).collect()),
            other => other.clone(),
        }
    }
    match entry {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let shown = match (k.as_str(), v) {
                        ("env" | "headers", _) => mask_values(v),
                        ("oauth", Value::Object(oauth)) => Value::Object(
                            oauth
                                .iter()
                                .map(|(k, v)| {
                                    let shown = if k == "client_secret" { mask(v) } else { redact_strings(v) };
                                    (k.clone(), shown)
                                })
                                .collect(),
                        ),
                        _ => redact_strings(v),
                    };
                    (k.clone(), shown)
                })
                .collect(),
        ),
        other => redact_strings(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_secret_value_is_masked_unless_asked_for() {
        let entry = serde_json::json!({ "url": "https://a",
            "headers": { "Authorization": "Bearer sk-literal-1234 ${TOKEN:-}", "X-Plain": "plain-value" },
            "oauth": { "client_id": "cid", "client_secret": "s3cr3t-value" } });
        let shown = masked_entry(&entry, false);
        assert_eq!(shown["headers"]["Authorization"], "**** (uses ${TOKEN})");
        assert_eq!(shown["headers"]["X-Plain"], "****");
        assert_eq!(shown["oauth"]["client_secret"], "****");
        assert_eq!(shown["oauth"]["client_id"], "cid");
        assert!(!shown.to_string().contains("literal") && !shown.to_string().contains("s3cr3t"), "{shown}");
        assert_eq!(masked_entry(&entry, true), entry, "--show-secrets shows the entry as written");
        let entry = serde_json::json!({ "command": "x", "env": { "K": "${SECRET}" } });
        assert_eq!(masked_entry(&entry, false)["env"]["K"], "**** (uses ${SECRET})");
    }

    #[test]
    fn server_names_are_bounded_and_plain() {
        assert!(valid_server_name(&"a".repeat(SERVER_NAME_MAX_CHARS)));
        assert!(!valid_server_name(&"a".repeat(SERVER_NAME_MAX_CHARS + 1)));
        for bad in ["", "-lead", "has space", "dot.ted", "é"] {
            assert!(!valid_server_name(bad), "{bad:?}");
        }
        assert!(valid_server_name("server-everything_2"));
    }
}
