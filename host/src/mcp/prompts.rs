//! DSH system prompts from MCP servers: a server that advertises `prompts`
//! is asked for its prompts once its tools are registered; only entries marked
//! `_meta["io.artec.clat/dsh"].systemPrompt == true` are resolved
//! (`prompts/get`) and registered. They freeze with the tools and hold the
//! server's lease; a failure here is reported and never costs the server its
//! tools.

use std::path::Path;

use serde_json::{Value, json};

use super::server::McpServer;
use crate::limits::{DSH_PROMPT_MAX_BYTES, DSH_PROMPTS_PER_SERVER_MAX};
use crate::names::ExternalKind;
use crate::registry::Registry;

/// The `_meta` key that marks a prompt as a system-prompt contribution (DSH):
/// `"_meta": {"io.artec.clat/dsh": {"systemPrompt": true}}` on a `prompts/list` entry.
pub const DSH_PROMPT_MARKER: &str = "io.artec.clat/dsh";

impl McpServer {
    /// Import the server's marked system prompts (if it advertises prompts):
    /// `prompts/list` (paged like tools), the entries marked with
    /// `DSH_PROMPT_MARKER` (at most `DSH_PROMPTS_PER_SERVER_MAX`), each resolved
    /// with `prompts/get` — the project root goes only into an argument named
    /// `cwd`, and only to a prompt that declares it — text only, at most
    /// `DSH_PROMPT_MAX_BYTES`. Returns the registered names and the problems.
    pub async fn register_system_prompts(
        &self,
        registry: &Registry,
        project_root: &Path,
    ) -> (Vec<String>, Vec<String>) {
        let (mut names, mut problems) = (Vec::new(), Vec::new());
        let session = self.session();
        if session.server_capabilities.get("prompts").is_none_or(Value::is_null) {
            return (names, problems);
        }
        let listed = match session.list_prompts().await {
            Ok(listed) => listed,
            Err(e) => {
                problems.push(format!("prompts/list failed: {e}"));
                return (names, problems);
            }
        };
        let marked: Vec<&Value> = listed
            .iter()
            .filter(|p| {
                p.get("_meta").and_then(|m| m.get(DSH_PROMPT_MARKER)).and_then(|d| d.get("systemPrompt"))
                    == Some(&Value::Bool(true))
            })
            .collect();
        if marked.len() > DSH_PROMPTS_PER_SERVER_MAX {
            problems.push(format!(
                "{} marked system prompts past the first {DSH_PROMPTS_PER_SERVER_MAX} were dropped",
                marked.len() - DSH_PROMPTS_PER_SERVER_MAX
            ));
        }
        for prompt in marked.into_iter().take(DSH_PROMPTS_PER_SERVER_MAX) {
            let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                problems.push("a marked prompt has no name; skipped".into());
                continue;
            };
            let takes_cwd = prompt
                .get("arguments")
                .and_then(Value::as_array)
                .is_some_and(|args| args.iter().any(|a| a.get("name").and_then(Value::as_str) == Some("cwd")));
            let arguments = if takes_cwd { json!({ "cwd": project_root.display().to_string() }) } else { json!({}) };
            let resolved = match session.get_prompt(name, arguments).await {
                Ok(result) => result,
                Err(e) => {
                    problems.push(format!("system prompt {name}: prompts/get failed: {e}"));
                    continue;
                }
            };
            let text = match prompt_text(&resolved) {
                Ok(text) => text,
                Err(e) => {
                    problems.push(format!("system prompt {name}: {e}; skipped"));
                    continue;
                }
            };
            if text.len() > DSH_PROMPT_MAX_BYTES {
                problems.push(format!(
                    "system prompt {name} resolved to {} bytes, over the {DSH_PROMPT_MAX_BYTES}-byte limit; skipped",
                    text.len()
                ));
                continue;
            }
            match registry.register_system_prompt(ExternalKind::Mcp, &self.name, name, text) {
                Ok(()) => names.push(name.to_string()),
                Err(e) => problems.push(e.to_string()),
            }
        }
        (names, problems)
    }
}

/// The text of a `prompts/get` result: its messages' text content, joined by blank lines.
fn prompt_text(result: &Value) -> Result<String, String> {
    let messages = result.get("messages").and_then(Value::as_array).ok_or("the result has no `messages` array")?;
    let mut parts = Vec::with_capacity(messages.len());
    for message in messages {
        let content = message.get("content").ok_or("a message has no content")?;
        match (content.get("type").and_then(Value::as_str), content.get("text").and_then(Value::as_str)) {
            (Some("text"), Some(text)) => parts.push(text),
            (kind, _) => {
                return Err(format!(
                    "a message has {} content; only text can join a system prompt",
                    kind.unwrap_or("untyped")
                ));
            }
        }
    }
    Ok(parts.join("\n\n"))
}
