//! CLAT's six native tools — `list_files`, `read_file`, `search`, `write_file`,
//! `edit_file`, `run_command` — with their schemas and effects, registered
//! under reserved names. They are also the only tools a plugin may call back
//! through host services. Files go through the path fence; commands go through
//! the one `ProcessService`. Small reads run on the calling thread, other file
//! work on tokio's blocking pool. A tool-level failure (escaping path, missing file,
//! edit that does not match) is an `is_error` output that says what was wrong.

pub mod fence;
pub mod files;
pub mod process;
pub mod search;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::contract::{Effect, HostTool, ToolOutput};
use crate::limits::{COMMAND_DEFAULT_TIMEOUT, COMMAND_OUTPUT_MAX_BYTES, TOOL_CALL_TIMEOUT};
use crate::registry::{RegistrationError, Registry, ToolError, ToolHandler};
use crate::run::RunContext;
use fence::{FenceError, PathFence};
use process::{CommandRequest, ProcessService};

/// The names only native tools may take.
pub const NATIVE_TOOL_NAMES: [&str; 6] =
    ["list_files", "read_file", "search", "write_file", "edit_file", "run_command"];

/// Why a native tool refused or failed; becomes an `is_error` output.
#[derive(Debug, thiserror::Error)]
pub enum NativeFailure {
    #[error(transparent)]
    Fence(#[from] FenceError),
    #[error("{0}")]
    Invalid(String),
}

/// A walked path shown relative to the project root.
pub(crate) fn display_path(fence: &PathFence, path: &Path) -> String {
    path.strip_prefix(fence.root()).unwrap_or(path).display().to_string()
}

/// What the native tools work on: the fenced project and the process service.
pub struct NativeEnv {
    pub fence: PathFence,
    pub processes: ProcessService,
}

/// One native tool bound to the project.
pub struct NativeTool {
    tool: HostTool,
    env: Arc<NativeEnv>,
}

impl NativeTool {
    /// The tool's effect: reads are `Read`, writes and edits `Write`, commands `Destructive`.
    pub fn effect(tool: HostTool) -> Effect {
        match tool {
            HostTool::ListFiles | HostTool::ReadFile | HostTool::Search => Effect::Read,
            HostTool::WriteFile | HostTool::EditFile => Effect::Write,
            HostTool::RunCommand => Effect::Destructive,
        }
    }

    /// What the model is told about the tool.
    pub fn description(tool: HostTool) -> &'static str {
        match tool {
            HostTool::ListFiles => {
                "List files and directories in the project (directories end in /), respecting .gitignore."
            }
            HostTool::ReadFile => {
                "Read a text file in the project, optionally only lines start_line..=end_line (1-based)."
            }
            HostTool::Search => {
                "Search the project's text files for a regular expression (or a literal string), respecting .gitignore: where a name is defined, called or used, which files mention a word. Results are path:line: text."
            }
            HostTool::WriteFile => {
                "Write a whole file in the project atomically, creating parent directories unless create_dirs is false."
            }
            HostTool::EditFile => {
                "Replace an exact string in a project file. Fails when it matches zero times, or several times unless replace_all is set."
            }
            HostTool::RunCommand => {
                "Run a shell command in the project root (a build, the tests, git, a script) with a timeout; returns exit code, stdout and stderr (bounded)."
            }
        }
    }

    /// The tool's JSON Schema.
    pub fn input_schema(tool: HostTool) -> Value {
        let max_timeout = TOOL_CALL_TIMEOUT.as_secs();
        match tool {
            HostTool::ListFiles => json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": "directory relative to the project root (default: the root)" },
                    "recursive": { "type": "boolean", "default": true },
                    "max_entries": { "type": "integer", "minimum": 1, "maximum": crate::limits::LIST_FILES_MAX_ENTRIES }
                },
                "additionalProperties": false
            }),
            HostTool::ReadFile => json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "start_line": { "type": "integer", "minimum": 1 },
                    "end_line": { "type": "integer", "minimum": 1 }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            HostTool::Search => json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string", "minLength": 1 },
                    "path": { "type": "string" },
                    "literal": { "type": "boolean", "default": false },
                    "case_insensitive": { "type": "boolean", "default": false },
                    "max_results": { "type": "integer", "minimum": 1, "maximum": crate::limits::SEARCH_MAX_RESULTS }
                },
                "required": ["pattern"],
                "additionalProperties": false
            }),
            HostTool::WriteFile => json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "minLength": 1 },
                    "content": { "type": "string" },
                    "create_dirs": { "type": "boolean", "default": true }
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
            HostTool::EditFile => json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "minLength": 1 },
                    "old_string": { "type": "string", "minLength": 1 },
                    "new_string": { "type": "string" },
                    "replace_all": { "type": "boolean", "default": false }
                },
                "required": ["path", "old_string", "new_string"],
                "additionalProperties": false
            }),
            HostTool::RunCommand => json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string", "minLength": 1 },
                    "timeout_secs": { "type": "integer", "minimum": 1, "maximum": max_timeout }
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }
}

fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, NativeFailure> {
    serde_json::from_value(arguments).map_err(|e| NativeFailure::Invalid(format!("invalid arguments: {e}")))
}

#[derive(Deserialize)]
struct RunCommandArgs {
    command: String,
    #[serde(default)]
    timeout_secs: Option<u64>,
}

/// Files up to this size are read on the calling thread: opening and reading
/// a few pages costs less than handing the work to the blocking pool and back.
/// Larger files are read on the pool, so an async worker never waits on a
/// long read.
pub const INLINE_READ_MAX_BYTES: u64 = 64 * 1024;

/// `read_file`: the fence and the open inline, the read inline when the file is
/// small, else on the blocking pool.
async fn read_file(env: &Arc<NativeEnv>, arguments: Value) -> Result<ToolOutput, ToolError> {
    let opened = match parse(arguments).and_then(|args| files::open_read(&env.fence, args)) {
        Ok(opened) => opened,
        Err(failure) => return Ok(ToolOutput::error(failure.to_string())),
    };
    if opened.size() <= INLINE_READ_MAX_BYTES {
        return Ok(text_or_error(opened.read()));
    }
    blocking(env, move |_| opened.read()).await
}

fn text_or_error(result: Result<String, NativeFailure>) -> ToolOutput {
    match result {
        Ok(text) => ToolOutput::text(text),
        Err(failure) => ToolOutput::error(failure.to_string()),
    }
}

/// Blocking file work runs off the async threads.
async fn blocking<F>(env: &Arc<NativeEnv>, f: F) -> Result<ToolOutput, ToolError>
where
    F: FnOnce(&NativeEnv) -> Result<String, NativeFailure> + Send + 'static,
{
    let env = Arc::clone(env);
    let result = tokio::task::spawn_blocking(move || f(&env))
        .await
        .map_err(|e| ToolError(anyhow::anyhow!("native tool task failed: {e}")))?;
    Ok(text_or_error(result))
}

#[async_trait]
impl ToolHandler for NativeTool {
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        match self.tool {
            HostTool::ListFiles => {
                blocking(&self.env, move |env| files::list_files(&env.fence, parse(arguments)?)).await
            }
            HostTool::ReadFile => read_file(&self.env, arguments).await,
            HostTool::Search => blocking(&self.env, move |env| search::search(&env.fence, parse(arguments)?)).await,
            HostTool::WriteFile => {
                blocking(&self.env, move |env| files::write_file(&env.fence, parse(arguments)?)).await
            }
            HostTool::EditFile => blocking(&self.env, move |env| files::edit_file(&env.fence, parse(arguments)?)).await,
            HostTool::RunCommand => {
                let args: RunCommandArgs = match parse(arguments) {
                    Ok(a) => a,
                    Err(e) => return Ok(ToolOutput::error(e.to_string())),
                };
                let timeout = args
                    .timeout_secs
                    .map_or(COMMAND_DEFAULT_TIMEOUT, Duration::from_secs)
                    .min(TOOL_CALL_TIMEOUT)
                    .min(run.remaining().unwrap_or(TOOL_CALL_TIMEOUT));
                let request = CommandRequest { command: args.command, timeout };
                let outcome = self.env.processes.run(&request, run).await?;
                Ok(command_output(&outcome, timeout))
            }
        }
    }
}

/// A command outcome as tool output: readable text plus the structured record.
fn command_output(outcome: &process::CommandOutcome, timeout: Duration) -> ToolOutput {
    let mut text = String::new();
    let status = if outcome.timed_out {
        format!("timed out after {} s; the process group was killed", timeout.as_secs())
    } else if outcome.cancelled {
        "cancelled; the process group was killed".to_string()
    } else if let Some(code) = outcome.exit_code {
        format!("exit code {code}")
    } else {
        format!("killed by signal {}", outcome.signal.unwrap_or(0))
    };
    text.push_str(&status);
    if let process::SandboxStatus::NotEnforced(why) = &outcome.sandbox {
        text.push_str(&format!("\nsandbox: not enforced: {why}"));
    }
    for (name, stream) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
        if !stream.text.is_empty() || stream.dropped_bytes > 0 {
            text.push_str(&format!("\n--- {name} ---\n{}", stream.text));
            if stream.dropped_bytes > 0 {
                text.push_str(&format!(
                    "\n[{} more bytes of {name} dropped after the first {COMMAND_OUTPUT_MAX_BYTES}]",
                    stream.dropped_bytes
                ));
            }
        }
    }
    ToolOutput {
        content: vec![crate::contract::ContentBlock::Text(text)],
        structured: serde_json::to_string(outcome).ok(),
        is_error: !outcome.success(),
    }
}

/// Register the six native tools for the project in `env`.
pub fn register_native_tools(registry: &Registry, env: Arc<NativeEnv>) -> Result<(), RegistrationError> {
    for tool in HostTool::ALL {
        let handler = Arc::new(NativeTool { tool, env: Arc::clone(&env) });
        registry.register_native(
            tool.tool_name(),
            NativeTool::description(tool),
            NativeTool::input_schema(tool),
            NativeTool::effect(tool),
            handler,
        )?;
    }
    Ok(())
}
