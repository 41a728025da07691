//! Host services with typed results. Each host tool passes the run's
//! permission pipeline, path fence and cancellation, exactly like a native
//! call; its failure is a [`HostFailure`]: the host refused (`Host`, e.g.
//! denied, cancelled) or the tool ran and reported an error (`Tool`).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::bindings::artec::clat::host_services as hs;
use crate::{
    ContextSnapshot, ElicitationForm, ElicitationResult, HostError, HostTool, LogLevel, Role, SamplingMessage,
    SamplingRequest, SamplingResult, ToolOutput,
};

/// Why a host tool call gave no result.
#[derive(Debug, Clone)]
pub enum HostFailure {
    /// The host refused or could not run it (denied, cancelled, timeout, …).
    Host(HostError),
    /// The tool ran and reported an error (a missing file, an edit that did not match, …); its text.
    Tool(String),
}

impl HostFailure {
    /// A short name: the host error's (`denied`, `cancelled`, …) or `tool_error`.
    pub fn kind(&self) -> &'static str {
        match self {
            HostFailure::Host(e) => e.kind(),
            HostFailure::Tool(_) => "tool_error",
        }
    }
}

impl std::fmt::Display for HostFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostFailure::Host(e) => f.write_str(&describe(e)),
            HostFailure::Tool(text) => f.write_str(text),
        }
    }
}

// The same words as CLAT's host: one file, included by both.
include!("host_error_text.rs");

impl HostError {
    /// The error's name: denied, cancelled, no_active_run, timeout, budget_exhausted, invalid, unsupported, failed.
    pub fn kind(&self) -> &'static str {
        host_error_kind!(self)
    }
}

/// The text blocks of an output, joined by newlines.
pub fn output_text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|b| match b {
            crate::ContentBlock::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A host error as text.
pub fn describe(error: &HostError) -> String {
    host_error_text!(error)
}

/// The latest context snapshot (works outside a run too).
pub fn context() -> ContextSnapshot {
    hs::get_context()
}

/// Log one line to CLAT's log (bounded; works outside a run too).
pub fn log(level: LogLevel, message: &str) {
    hs::log(level, message)
}

/// Call a host tool with JSON arguments; the raw output.
pub fn call(tool: HostTool, arguments: &Value) -> Result<ToolOutput, HostError> {
    hs::call_tool(tool, &arguments.to_string())
}

fn checked(tool: HostTool, arguments: Value) -> Result<ToolOutput, HostFailure> {
    match call(tool, &arguments) {
        Ok(out) if out.is_error => Err(HostFailure::Tool(output_text(&out))),
        Ok(out) => Ok(out),
        Err(e) => Err(HostFailure::Host(e)),
    }
}

/// A project file's text (at most 256 KiB; a longer file ends with a note saying where to continue).
pub fn read_file(path: &str) -> Result<String, HostFailure> {
    checked(HostTool::ReadFile, json!({ "path": path })).map(|out| output_text(&out))
}

/// Lines `start..=end` (1-based) of a project file.
pub fn read_lines(path: &str, start: u32, end: u32) -> Result<String, HostFailure> {
    checked(HostTool::ReadFile, json!({ "path": path, "start_line": start, "end_line": end }))
        .map(|out| output_text(&out))
}

/// Write a whole project file atomically (parent directories are created).
pub fn write_file(path: &str, content: &str) -> Result<(), HostFailure> {
    checked(HostTool::WriteFile, json!({ "path": path, "content": content })).map(drop)
}

/// Replace the one occurrence of `old` in a project file with `new`.
pub fn edit_file(path: &str, old: &str, new: &str) -> Result<(), HostFailure> {
    checked(HostTool::EditFile, json!({ "path": path, "old_string": old, "new_string": new })).map(drop)
}

/// What `list_files` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Paths relative to the project root; directories end in `/`.
    pub entries: Vec<String>,
    /// False when the listing stopped at its bound.
    pub complete: bool,
}

/// The files and directories under `path` (`""`: the project root), recursively, respecting `.gitignore`.
pub fn list_files(path: &str) -> Result<Listing, HostFailure> {
    let out = checked(HostTool::ListFiles, json!({ "path": path }))?;
    let text = output_text(&out);
    let (entries, notes) = split_notes(&text, "(no files)");
    Ok(Listing { entries, complete: notes.iter().all(|n| !n.starts_with("[listing stopped")) })
}

/// One line that matched a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchMatch {
    /// The file, relative to the project root.
    pub path: String,
    /// The 1-based line number.
    pub line: u32,
    /// The line's text (bounded).
    pub text: String,
}

/// What `search` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matches {
    pub matches: Vec<SearchMatch>,
    /// False when the search stopped at its bound or skipped files over its size limit.
    pub complete: bool,
}

/// The lines of project files matching a regular expression, respecting `.gitignore`.
pub fn search(pattern: &str) -> Result<Matches, HostFailure> {
    let out = checked(HostTool::Search, json!({ "pattern": pattern }))?;
    let text = output_text(&out);
    let (lines, notes) = split_notes(&text, "(no matches)");
    Ok(Matches { matches: lines.iter().filter_map(|l| parse_match(l)).collect(), complete: notes.is_empty() })
}

/// `path:LINE: text`, the first `:digits: ` after which the text starts.
fn parse_match(line: &str) -> Option<SearchMatch> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(offset) = line[from..].find(':') {
        let colon = from + offset;
        let digits = bytes[colon + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
        let after = colon + 1 + digits;
        if digits > 0 && line[after..].starts_with(": ") {
            return Some(SearchMatch {
                path: line[..colon].to_string(),
                line: line[colon + 1..after].parse().ok()?,
                text: line[after + 2..].to_string(),
            });
        }
        from = colon + 1;
    }
    None
}

/// A listing's lines, without its empty marker, and its `[…]` notes.
fn split_notes(text: &str, empty: &str) -> (Vec<String>, Vec<String>) {
    let (mut lines, mut notes) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| *l != empty && !l.is_empty()) {
        if line.starts_with('[') && line.ends_with(']') {
            notes.push(line.to_string());
        } else {
            lines.push(line.to_string());
        }
    }
    (lines, notes)
}

/// How a command ended (`run_command`).
#[derive(Debug, Clone, Deserialize)]
pub struct CommandOutcome {
    /// The exit code, when the shell exited on its own.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    /// Its standard output (bounded).
    pub stdout: Captured,
    /// Its standard error (bounded).
    pub stderr: Captured,
    /// Its timeout ended it.
    pub timed_out: bool,
    /// The run was cancelled while it ran.
    pub cancelled: bool,
    pub duration_ms: u64,
}

impl CommandOutcome {
    /// True when the command exited with status 0 on its own.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

/// One captured stream of a command.
#[derive(Debug, Clone, Deserialize)]
pub struct Captured {
    pub text: String,
    /// Bytes past the bound that were dropped.
    pub dropped_bytes: u64,
}

/// Run a shell command in the project root, in its own process group. A
/// command that ran is `Ok` whatever its exit status: look at the outcome.
pub fn run_command(command: &str) -> Result<CommandOutcome, HostFailure> {
    let out = match call(HostTool::RunCommand, &json!({ "command": command })) {
        Ok(out) => out,
        Err(e) => return Err(HostFailure::Host(e)),
    };
    match out.structured.as_deref().map(serde_json::from_str::<CommandOutcome>) {
        Some(Ok(outcome)) => Ok(outcome),
        _ => Err(HostFailure::Tool(output_text(&out))),
    }
}

/// One completion from the session model (gated: payload, the run's budget, permission).
pub fn sample(request: &SamplingRequest) -> Result<SamplingResult, HostError> {
    hs::create_message(request)
}

/// Ask the session model one question: a single user message.
pub fn ask_model(prompt: &str, max_tokens: u32) -> Result<SamplingResult, HostError> {
    sample(&SamplingRequest {
        messages: vec![SamplingMessage { role: Role::User, text: prompt.to_string() }],
        system_prompt: None,
        max_tokens,
        temperature: None,
        stop_sequences: vec![],
        model_hints: vec![],
    })
}

/// Ask the user one form (see [`Form`](crate::Form) to build one).
pub fn elicit(form: &ElicitationForm) -> Result<ElicitationResult, HostError> {
    hs::elicit(form)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_lines_parse_with_colons_in_paths_and_text() {
        let m = parse_match("src/a:b.rs:12: let x = y: u8;").unwrap();
        assert_eq!((m.path.as_str(), m.line, m.text.as_str()), ("src/a:b.rs", 12, "let x = y: u8;"));
        assert!(parse_match("[stopped at 50 matches]").is_none());
    }
}
