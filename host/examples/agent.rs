//! A minimal agent on the platform's front door: mount a project, offer the
//! model its tools through discovery — every tool, native, WASM and MCP
//! alike, each with its schema and effect, while their definitions fit 8 KiB;
//! past that the native and pinned ones and `search_tools` / `load_tools` /
//! `call_tool` — and let it call them through the one permission pipeline
//! until it answers in words. Past the budget, a server listed before starts
//! only when one of its tools is first called (`StartFilter::FirstUse`). Every run event is printed as a JSON line on
//! stderr.
//!
//! The model is an OpenAI-compatible chat-completions endpoint with tool
//! calling when `CLAT_MODEL_BASE_URL` and `CLAT_MODEL` name one (its key in
//! `CLAT_MODEL_API_KEY`); otherwise an offline stand-in that calls the
//! lowest-effect native tool, then WASM tool, then MCP tool it is offered,
//! with arguments made from each tool's schema, and sums up what came back.
//!
//! ```sh
//! cargo run -p clat-host --example agent -- [--home DIR] [--project DIR] [--mode MODE] [TASK...]
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clat_host::{
    CollectingSink, DiscoveryOptions, Effect, EventSink, JsonLinesSink, MountOptions, PermissionMode, Platform,
    RunEvent, RunOptions, StartFilter,
};
use serde_json::{Value, json};

/// What the model wants next.
pub enum Step {
    /// Call these tools (name, arguments, the model's id for the call).
    Call(Vec<(String, Value, String)>),
    /// The final answer.
    Answer(String),
}

/// One turn of a conversation, as the model sees it.
pub enum Turn {
    User(String),
    /// The model asked for calls.
    Calls(Vec<(String, Value, String)>),
    /// A call's result (the call's id, its text).
    Result(String, String),
}

/// A model that can call tools.
#[async_trait::async_trait]
pub trait Model: Send {
    /// What it wants next, given the conversation and the tools it is offered: each definition (`name`,
    /// `description`, `inputSchema`) with CLAT's `effect` and `source` beside it (none for discovery's own).
    async fn next(&mut self, turns: &[Turn], tools: &[Value]) -> Result<Step, String>;
}

/// The offline stand-in: one native, one WASM and one MCP tool, the
/// lowest-effect of each, then an answer.
#[derive(Default)]
pub struct OfflineModel {
    called: bool,
}

/// Arguments that satisfy a schema's `required` properties, made up.
fn arguments_for(schema: &Value) -> Value {
    let mut arguments = serde_json::Map::new();
    for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("clat"),
        };
        arguments.insert(name.to_string(), value);
    }
    Value::Object(arguments)
}

#[async_trait::async_trait]
impl Model for OfflineModel {
    async fn next(&mut self, turns: &[Turn], tools: &[Value]) -> Result<Step, String> {
        if !self.called {
            self.called = true;
            let rank = |t: &Value| {
                Effect::ALL.iter().position(|e| t["effect"] == e.to_string().as_str()).unwrap_or(usize::MAX)
            };
            let lowest = |kind: &str| {
                tools
                    .iter()
                    .filter(|t| t["source"]["kind"] == kind)
                    .min_by_key(|t| (rank(t), t["name"].as_str().unwrap_or_default().to_string()))
            };
            let calls: Vec<_> = [lowest("native"), lowest("wasm"), lowest("mcp")]
                .into_iter()
                .flatten()
                .enumerate()
                .map(|(i, t)| {
                    let name = t["name"].as_str().unwrap_or_default().to_string();
                    (name, arguments_for(&t["inputSchema"]), format!("call-{i}"))
                })
                .collect();
            if !calls.is_empty() {
                return Ok(Step::Call(calls));
            }
        }
        let results = turns.iter().filter(|t| matches!(t, Turn::Result(..))).count();
        Ok(Step::Answer(format!("[offline model] I called {results} tools; their results are above.")))
    }
}

/// An OpenAI-compatible chat-completions endpoint with tool calling.
pub struct ChatModel {
    url: String,
    model: String,
    key: Option<String>,
    client: reqwest::Client,
}

impl ChatModel {
    /// The model `CLAT_MODEL_BASE_URL` and `CLAT_MODEL` name, if they do.
    pub fn from_env() -> Option<ChatModel> {
        let base = std::env::var("CLAT_MODEL_BASE_URL").ok().filter(|b| !b.is_empty())?;
        Some(ChatModel {
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            model: std::env::var("CLAT_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into()),
            key: std::env::var("CLAT_MODEL_API_KEY").ok(),
            client: reqwest::Client::new(),
        })
    }
}

#[async_trait::async_trait]
impl Model for ChatModel {
    async fn next(&mut self, turns: &[Turn], tools: &[Value]) -> Result<Step, String> {
        let mut messages = vec![json!({ "role": "system", "content": "You are a coding agent. Use the tools." })];
        for turn in turns {
            messages.push(match turn {
                Turn::User(text) => json!({ "role": "user", "content": text }),
                Turn::Calls(calls) => json!({ "role": "assistant", "tool_calls": calls.iter().map(|(name, args, id)| json!({
                    "id": id, "type": "function", "function": { "name": name, "arguments": args.to_string() } })).collect::<Vec<_>>() }),
                Turn::Result(id, text) => json!({ "role": "tool", "tool_call_id": id, "content": text }),
            });
        }
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| {
                let description = match t["effect"].as_str() {
                    Some(effect) => format!("{} (effect: {effect})", t["description"].as_str().unwrap_or_default()),
                    None => t["description"].as_str().unwrap_or_default().to_string(),
                };
                json!({ "type": "function", "function": {
                    "name": t["name"], "description": description, "parameters": t["inputSchema"] } })
            })
            .collect();
        let mut request =
            self.client.post(&self.url).json(&json!({ "model": self.model, "messages": messages, "tools": tools }));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.and_then(|r| r.error_for_status()).map_err(|e| e.to_string())?;
        let answer: Value = response.json().await.map_err(|e| e.to_string())?;
        let message = &answer["choices"][0]["message"];
        let calls: Vec<_> = message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                let args =
                    serde_json::from_str(c["function"]["arguments"].as_str().unwrap_or("{}")).unwrap_or(json!({}));
                (
                    c["function"]["name"].as_str().unwrap_or_default().to_string(),
                    args,
                    c["id"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        if calls.is_empty() {
            Ok(Step::Answer(message["content"].as_str().unwrap_or_default().to_string()))
        } else {
            Ok(Step::Call(calls))
        }
    }
}

/// At most this many model turns in one task.
const MAX_TURNS: usize = 8;

/// Run one task on the project at `project`: the events of its run, and the
/// model's answer, written to `out`.
pub async fn run_agent(
    home: Option<&Path>,
    project: &Path,
    mode: PermissionMode,
    task: &str,
    model: &mut dyn Model,
    out: &mut dyn Write,
) -> Result<Vec<RunEvent>, Box<dyn std::error::Error>> {
    let platform = Platform::open(home)?;
    let budget = DiscoveryOptions::default().budget_bytes;
    let project =
        platform.mount(project, MountOptions { start: StartFilter::FirstUse(budget), ..Default::default() })?;
    project.start_extensions();
    let collected = Arc::new(CollectingSink::default());
    let printed = Arc::new(JsonLinesSink::new(std::io::stderr()));
    let events: Arc<dyn EventSink> = Arc::new(Both(collected.clone(), printed));
    let run = project.start_run(RunOptions { mode, events, ..RunOptions::default() }).await?;
    let (tools, discovery) = (project.tools(), project.discovery(&DiscoveryOptions::default()));
    // What the model is offered this turn: each definition with CLAT's effect and source beside it.
    let offered = || -> Vec<Value> {
        let mut offered = discovery.offered();
        for definition in &mut offered {
            if let Some(tool) = tools.iter().find(|t| definition["name"] == t.name.as_str()) {
                definition["effect"] = json!(tool.effect);
                definition["source"] = json!(tool.source);
            }
        }
        offered
    };
    let first = offered();
    let deferred = if discovery.deferring() { ", the others found through search_tools" } else { "" };
    writeln!(
        out,
        "{} tools offered to the model ({} bytes of definitions) of {}{deferred}",
        first.len(),
        discovery.offered_size().bytes,
        tools.len()
    )?;
    let mut turns = vec![Turn::User(task.to_string())];
    for _ in 0..MAX_TURNS {
        match model.next(&turns, &offered()).await? {
            Step::Answer(text) => {
                writeln!(out, "{text}")?;
                break;
            }
            Step::Call(calls) => {
                turns.push(Turn::Calls(calls.clone()));
                for (name, arguments, id) in calls {
                    // Discovery's own tools are answered by it; every other call is the tool's own, through the pipeline.
                    let text = match discovery.call(&run, &name, arguments).await {
                        Ok(output) => output.joined_text(),
                        Err(e) => format!("error: {e}"),
                    };
                    let first = text.lines().next().unwrap_or_default();
                    let shown: String = first.chars().take(100).collect();
                    let cut = if shown.len() < first.len() { "…" } else { "" };
                    writeln!(out, "{name} → {shown}{cut}")?;
                    turns.push(Turn::Result(id, text));
                }
            }
        }
    }
    run.finish();
    project.close().await;
    Ok(collected.events())
}

/// Events to two sinks.
struct Both(Arc<CollectingSink>, Arc<JsonLinesSink<std::io::Stderr>>);

impl EventSink for Both {
    fn emit(&self, event: RunEvent) {
        self.0.emit(event.clone());
        self.1.emit(event);
    }
}

#[allow(dead_code)]
fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut home, mut project, mut mode, mut task) = (None, PathBuf::from("."), PermissionMode::Ask, Vec::new());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--home" => home = args.next().map(PathBuf::from),
            "--project" => project = args.next().map(PathBuf::from).unwrap_or(project),
            "--mode" => match args.next().unwrap_or_default().parse() {
                Ok(m) => mode = m,
                Err(e) => {
                    eprintln!("agent: {e}");
                    return ExitCode::from(2);
                }
            },
            _ => task.push(arg),
        }
    }
    let task = if task.is_empty() { "Look around the project.".to_string() } else { task.join(" ") };
    let mut model: Box<dyn Model> = match ChatModel::from_env() {
        Some(chat) => Box::new(chat),
        None => Box::new(OfflineModel::default()),
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let done =
        runtime.block_on(run_agent(home.as_deref(), &project, mode, &task, model.as_mut(), &mut std::io::stdout()));
    match done {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent: {e}");
            ExitCode::FAILURE
        }
    }
}
