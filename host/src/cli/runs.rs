//! `clat call` and `clat exec`: each is one run through the whole pipeline.
//! The project is mounted with only the extensions the command's tools can
//! come from (`StartFilter`), the run starts once they are up (at most the
//! 20 s initial surface), and a stop signal at any point cancels the run.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use super::exit::{Exit, Failure};
use super::shutdown::Shutdown;
use crate::PermissionMode;
use crate::contract::json::tool_output_to_json;
use crate::platform::{Project, Run, RunOptions};
use crate::{Approver, HeadlessApprover, HeadlessAsker, TerminalApprover, TerminalAsker, UserAsker};
use crate::{EventSink, JsonLinesSink, NullSink};

/// Start the command's run once the initial surface is up; a stop signal
/// before that ends the command (the caller closes the project). While the run
/// lasts, a stop signal cancels it: its calls end and its process groups die.
async fn start_run(project: &Project, options: RunOptions, shutdown: &Shutdown) -> Result<Run, Failure> {
    let run = tokio::select! {
        run = super::progress::while_starting(project, false, project.start_run(options)) => run?,
        _ = shutdown.token().cancelled() => return Err(interrupted(shutdown)),
    };
    for late in project.missed_initial_surface() {
        let what = if late.kind.is_mcp() { "server" } else { "plugin" };
        eprintln!(
            "clat: {what} {} missed the {} s initial surface, so its tools are not in this run; restart after fixing \
             or warming it (`clat mcp` shows how it starts)",
            late.name,
            crate::limits::INITIAL_SURFACE_WAIT.as_secs()
        );
    }
    let (token, cancel) = (shutdown.token().clone(), run.context().clone());
    tokio::spawn(async move {
        token.cancelled().await;
        cancel.cancel();
    });
    Ok(run)
}

/// The failure of a command stopped by a signal.
pub(crate) fn interrupted(shutdown: &Shutdown) -> Failure {
    let signal = shutdown.signal().unwrap_or("a signal");
    Failure::new(Exit::Interrupted, "cancelled", format!("interrupted by {signal}; everything started was torn down"))
}

/// One line of a `clat exec` script.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScriptStep {
    pub(crate) tool: String,
    #[serde(default = "empty_object")]
    arguments: Value,
    #[serde(skip)]
    line: usize,
}

fn empty_object() -> Value {
    json!({})
}

/// Read a script: one JSON object per line; blank lines and lines starting with `#` are skipped.
pub(crate) fn read_script(path: &Path) -> Result<Vec<ScriptStep>, Failure> {
    let text =
        if path == Path::new("-") { std::io::read_to_string(std::io::stdin()) } else { std::fs::read_to_string(path) }
            .map_err(|e| {
                Failure::new(Exit::Usage, "usage", format!("cannot read the script {}: {e}", path.display()))
            })?;
    let mut steps = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut step: ScriptStep = serde_json::from_str(trimmed).map_err(|e| {
            Failure::new(
                Exit::Usage,
                "invalid_script",
                format!("{} line {}: expected {{\"tool\": NAME, \"arguments\": {{...}}}}: {e}", path.display(), i + 1),
            )
        })?;
        if !step.arguments.is_object() {
            let message = format!("{} line {}: `arguments` must be a JSON object", path.display(), i + 1);
            return Err(Failure::new(Exit::Usage, "invalid_script", message));
        }
        step.line = i + 1;
        steps.push(step);
    }
    Ok(steps)
}

/// Run the script's calls in order as one headless run. Every event, and each
/// call's result, is a JSON line on stdout. The exit code is the first failing
/// call's (0 when all succeeded); a cancelled run skips the rest.
pub(crate) async fn exec(
    project: &Project,
    steps: &[ScriptStep],
    mode: PermissionMode,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let events: Arc<dyn EventSink> = Arc::new(JsonLinesSink::new(std::io::stdout()));
    let run = start_run(project, RunOptions { mode, events, ..RunOptions::default() }, shutdown).await?;
    let mut exit = Exit::Ok;
    for step in steps {
        if run.is_cancelled() {
            break;
        }
        let result = match resolve_tool(project, &step.tool) {
            Ok(tool) => run.call(&tool, step.arguments.clone()).await.map_err(Failure::from),
            Err(unknown) => Err(unknown),
        };
        let (line, step_exit) = match result {
            Ok(output) => {
                let failed = output.is_error;
                let line = json!({ "type": "call_result", "run_id": run.id(), "line": step.line, "tool": step.tool,
                                   "result": tool_output_to_json(&output) });
                (line, if failed { Exit::ToolError } else { Exit::Ok })
            }
            Err(failure) => {
                let line = json!({ "type": "call_result", "run_id": run.id(), "line": step.line, "tool": step.tool,
                                   "error": { "kind": failure.kind, "message": failure.message } });
                (line, failure.exit)
            }
        };
        outln!("{line}");
        if exit == Exit::Ok {
            exit = step_exit;
        }
    }
    run.finish();
    Ok(exit)
}

/// Parse `ARGS_JSON`: valid JSON, and an object.
pub(crate) fn parse_arguments(text: Option<&str>) -> Result<Value, Failure> {
    let Some(text) = text else { return Ok(json!({})) };
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Failure::new(
            Exit::Usage,
            "invalid_arguments",
            format!("ARGS_JSON is not valid JSON (line {}, column {}): {e}", e.line(), e.column()),
        )
    })?;
    if !value.is_object() {
        return Err(Failure::new(
            Exit::Usage,
            "invalid_arguments",
            "ARGS_JSON must be a JSON object, e.g. '{\"path\": \"README.md\"}'",
        ));
    }
    Ok(value)
}

/// The registered tool a command-line name means: the name itself; else a
/// server's or plugin's own tool name (`get-sum`) or its normalized form
/// (`get_sum`) when exactly one registered tool has it (said on stderr),
/// listing them when several do; else an unknown tool, with the registered
/// name of the nearest one (by any of its names) when one is close.
pub(crate) fn resolve_tool(project: &Project, name: &str) -> Result<String, Failure> {
    let resolved = resolve_tool_quietly(project, name)?;
    if resolved != name {
        eprintln!("clat: {name} is {resolved}");
    }
    Ok(resolved)
}

/// `resolve_tool` without saying what a bare name resolved to.
pub(crate) fn resolve_tool_quietly(project: &Project, name: &str) -> Result<String, Failure> {
    Ok(project.resolve_tool(name)?)
}

pub(crate) struct CallRequest {
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    pub(crate) mode: PermissionMode,
    pub(crate) json: bool,
    pub(crate) events: bool,
}

pub(crate) async fn call(project: &Project, request: CallRequest, shutdown: &Shutdown) -> Result<Exit, Failure> {
    let CallRequest { tool, arguments, mode, json, events } = request;
    let tool = tool.as_str();
    let interactive = TerminalApprover::available();
    let approver: Arc<dyn Approver> =
        if interactive { Arc::new(TerminalApprover::default()) } else { Arc::new(HeadlessApprover) };
    let asker: Arc<dyn UserAsker> =
        if interactive { Arc::new(TerminalAsker::terminal()) } else { Arc::new(HeadlessAsker) };
    let events: Arc<dyn EventSink> =
        if events { Arc::new(JsonLinesSink::new(std::io::stderr())) } else { Arc::new(NullSink) };
    let run =
        start_run(project, RunOptions { mode, approver, asker, events, ..RunOptions::default() }, shutdown).await?;
    let result = match resolve_tool(project, tool) {
        Ok(resolved) => run.call(&resolved, arguments).await.map_err(Failure::from),
        Err(unknown) => Err(unknown),
    };
    let run_id = run.id().to_string();
    run.finish();
    let output = result?;
    if json {
        let mut v = tool_output_to_json(&output);
        v["tool"] = json!(tool);
        v["runId"] = json!(run_id);
        outln!("{v}");
    } else {
        let mut text = output.joined_text();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if output.is_error {
            eprint!("{text}");
        } else {
            out!("{text}");
        }
    }
    Ok(if output.is_error { Exit::ToolError } else { Exit::Ok })
}
