//! Progressive discovery: what a model is offered when every tool's
//! definition would cost too much. While the definitions of all the tools
//! fit the budget (`DiscoveryOptions::budget_bytes`, by default
//! `DISCOVERY_BUDGET_BYTES`), all are offered but the deferred ones. Past it,
//! the model is offered CLAT's native tools, the pinned ones and those it
//! loaded. Whenever some are not offered, so are three of discovery's own:
//! `search_tools` (a task's words → the best matches, with name, one-line
//! description, effect and source, and the extensions that match best with
//! all their tools' names: `ToolIndex::answer`), `load_tools` (names → their
//! definitions, offered from then on) and `call_tool` (a name and its
//! arguments, for a client that cannot take new definitions mid-session);
//! both take a registered name, `EXTENSION/NAME` or a tool's own name where
//! only one tool has it, and a name they cannot place is a tool error that
//! says what to write instead. A search ranks the pinned and recently used
//! tools (those called through it this session) first. Every tool stays reachable, and every call — `call_tool`'s too — is
//! a call of the tool itself through the one pipeline (`Run::call`): its
//! effect, the mode, approvals and grants judge it as if it had been offered.
//!
//! Pinned and deferred tools come from the caller and from the extensions'
//! own settings (`always_load`, `defer_loading` in `mcp.json` entries and the
//! plugin index: `DiscoveryOptions::with_settings`). One `Discovery` is one
//! session; `Discovery::session` starts another of the same offer. The
//! embedding host and `clat serve` (one per client session) both offer tools
//! through this.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::contract::ToolOutput;
use crate::extension::ExtensionStatus;
use crate::limits::{DISCOVERY_BUDGET_BYTES, SEARCH_RESULTS_DEFAULT, SEARCH_RESULTS_MAX};
use crate::registry::{CallError, SchemaSize, ToolIndex, ToolInfo, ToolSource, definition, schema_totals};
use crate::sync::Unpoisoned;

/// Discovery's own tool that searches the tools not offered.
pub const SEARCH_TOOLS: &str = "search_tools";
/// Discovery's own tool that offers tools found by a search.
pub const LOAD_TOOLS: &str = "load_tools";
/// Discovery's own tool that calls a tool not offered, through its own pipeline.
pub const CALL_TOOL: &str = "call_tool";

/// How a project's tools are offered.
#[derive(Debug, Clone)]
pub struct DiscoveryOptions {
    /// Past this many bytes of definitions, tools are found rather than offered.
    pub budget_bytes: usize,
    /// Registered names always offered.
    pub pinned: Vec<String>,
    /// Registered names never offered up front, even when every tool fits the budget: found by a search.
    pub deferred: Vec<String>,
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        DiscoveryOptions { budget_bytes: DISCOVERY_BUDGET_BYTES, pinned: Vec::new(), deferred: Vec::new() }
    }
}

impl DiscoveryOptions {
    /// These options with the extensions' own settings added: a tool its
    /// extension's `always_load` names (or all of them, `true`) is pinned;
    /// the others of an extension with `defer_loading` are deferred.
    pub fn with_settings(mut self, tools: &[ToolInfo], extensions: &[ExtensionStatus]) -> DiscoveryOptions {
        for tool in tools {
            let (mcp, extension) = match &tool.source {
                ToolSource::Native => continue,
                ToolSource::Mcp { server, .. } => (true, server),
                ToolSource::Wasm { plugin, .. } => (false, plugin),
            };
            let Some(status) = extensions.iter().find(|e| e.kind.is_mcp() == mcp && &e.name == extension) else {
                continue;
            };
            if status.loading.always_load.covers(|name| tool.is_named(name)) {
                self.pinned.push(tool.name.clone());
            } else if status.loading.defer_loading {
                self.deferred.push(tool.name.clone());
            }
        }
        self
    }
}

/// What every session of one offer shares: the tools, the search over them, what is pinned and deferred.
struct Offer {
    tools: Vec<ToolInfo>,
    /// The search, built only when tools are found rather than all offered.
    index: Option<ToolIndex>,
    deferring: bool,
    /// Whether the definitions of all the tools are past the budget.
    over_budget: bool,
    pinned: HashSet<String>,
    deferred: HashSet<String>,
}

/// One session's offer: the tools, the search over them, and what it loaded.
pub struct Discovery {
    offer: Arc<Offer>,
    loaded: Mutex<Vec<String>>,
    /// The tools called through it, most recent last (each once).
    used: Mutex<Vec<String>>,
}

impl Discovery {
    /// The offer of `tools` (a frozen registry's listing) under `options`.
    pub fn new(tools: Vec<ToolInfo>, options: &DiscoveryOptions) -> Discovery {
        Discovery::with_requests(tools, options, &std::collections::HashMap::new())
    }

    /// `new`, its search reading `requests` (by registered name: those kept by search enrichment) with each tool.
    pub fn with_requests(
        tools: Vec<ToolInfo>,
        options: &DiscoveryOptions,
        requests: &std::collections::HashMap<String, Vec<String>>,
    ) -> Discovery {
        let over_budget = schema_totals(&tools).size.bytes > options.budget_bytes;
        let known = |names: &[String]| -> HashSet<String> {
            names.iter().filter(|name| tools.iter().any(|t| &t.name == *name)).cloned().collect()
        };
        let pinned = known(&options.pinned);
        let deferred: HashSet<String> = known(&options.deferred).into_iter().filter(|n| !pinned.contains(n)).collect();
        let deferring = over_budget || !deferred.is_empty();
        let index = deferring.then(|| ToolIndex::with_requests(tools.clone(), requests));
        let offer = Offer { index, tools, deferring, over_budget, pinned, deferred };
        Discovery { offer: Arc::new(offer), loaded: Mutex::default(), used: Mutex::default() }
    }

    /// Another session of the same offer (its tools, search, pinned and deferred ones shared), with nothing
    /// loaded or used yet: `clat serve` keeps one per client session.
    pub fn session(&self) -> Discovery {
        Discovery { offer: Arc::clone(&self.offer), loaded: Mutex::default(), used: Mutex::default() }
    }

    /// Whether tools are found rather than all offered.
    pub fn deferring(&self) -> bool {
        self.offer.deferring
    }

    /// The definitions offered now (name, description, input schema): every tool, or — deferring — the native,
    /// pinned and loaded ones (within the budget: all but the deferred ones) and discovery's own.
    pub fn offered(&self) -> Vec<Value> {
        let offer = &self.offer;
        if !offer.deferring {
            return offer.tools.iter().map(ToolInfo::definition).collect();
        }
        let loaded = self.loaded.locked().clone();
        let up_front = |t: &ToolInfo| {
            let found_later =
                if offer.over_budget { t.source != ToolSource::Native } else { offer.deferred.contains(&t.name) };
            !found_later || offer.pinned.contains(&t.name) || loaded.contains(&t.name)
        };
        let mut offered: Vec<Value> = offer.tools.iter().filter(|t| up_front(t)).map(ToolInfo::definition).collect();
        offered.extend(own_tools());
        offered
    }

    /// What the offered definitions cost.
    pub fn offered_size(&self) -> SchemaSize {
        SchemaSize::of_bytes(self.offered().iter().map(|d| SchemaSize::of_definition(d).bytes).sum())
    }

    /// Whether `name` is one of discovery's own tools, offered now.
    pub fn is_own(&self, name: &str) -> bool {
        self.offer.deferring && [SEARCH_TOOLS, LOAD_TOOLS, CALL_TOOL].contains(&name)
    }

    /// Call `name` in `run`: discovery's own tools here, any other through the pipeline as itself.
    pub async fn call(&self, run: &impl ToolCaller, name: &str, arguments: Value) -> Result<ToolOutput, CallError> {
        if !self.is_own(name) {
            return self.call_tool(run, name, arguments).await;
        }
        let invalid = |reason: &str| CallError::InvalidArguments { tool: name.to_string(), reason: reason.to_string() };
        match name {
            SEARCH_TOOLS => {
                let query = arguments["query"].as_str().ok_or_else(|| invalid("`query` (a string) is required"))?;
                let limit = arguments["limit"].as_u64().map_or(SEARCH_RESULTS_DEFAULT, |l| l as usize);
                let used = self.used.locked().clone();
                let favoured = |name: &str| self.offer.pinned.contains(name) || used.iter().any(|u| u == name);
                let answer = self.index().answer(query, limit.clamp(1, SEARCH_RESULTS_MAX), favoured);
                Ok(structured(json!(answer)))
            }
            LOAD_TOOLS => {
                let names: Vec<&str> = match arguments["names"].as_array() {
                    Some(names) => names.iter().filter_map(Value::as_str).collect(),
                    None => return Err(invalid("`names` (an array of tool names) is required")),
                };
                let mut tools = Vec::new();
                for name in names {
                    match self.index().resolve(name) {
                        Ok(tool) => tools.push(tool),
                        Err(why) => return Ok(ToolOutput::error(format!("nothing was loaded: {why}"))),
                    }
                }
                let mut loaded = self.loaded.locked();
                for tool in &tools {
                    if !loaded.contains(&tool.name) {
                        loaded.push(tool.name.clone());
                    }
                }
                let definitions: Vec<Value> = tools.iter().map(|t| t.definition()).collect();
                Ok(structured(json!({ "tools": definitions })))
            }
            _ => {
                let target = arguments["name"].as_str().ok_or_else(|| invalid("`name` (a string) is required"))?;
                if self.is_own(target) {
                    return Err(invalid("call_tool calls a registered tool, not one of discovery's own"));
                }
                let target = match self.index().resolve(target) {
                    Ok(tool) => tool.name.clone(),
                    Err(why) => return Ok(ToolOutput::error(why)),
                };
                let arguments = arguments.get("arguments").cloned().unwrap_or_else(|| json!({}));
                self.call_tool(run, &target, arguments).await
            }
        }
    }

    /// The search over the tools not offered: built whenever discovery defers, the only time its tools are offered.
    fn index(&self) -> &ToolIndex {
        self.offer.index.as_ref().expect("built when deferring, the only time discovery's own tools are")
    }

    /// A tool's own call through the pipeline; one that succeeds counts as used.
    async fn call_tool(&self, run: &impl ToolCaller, name: &str, arguments: Value) -> Result<ToolOutput, CallError> {
        let called = run.call(name, arguments).await;
        if called.is_ok() {
            let mut used = self.used.locked();
            used.retain(|u| u != name);
            used.push(name.to_string());
        }
        called
    }
}

/// What discovery calls a tool through: a run's own call of it, through the one pipeline (`platform::Run`).
pub trait ToolCaller {
    /// Call `tool` with `arguments` as the run's call of it.
    fn call(
        &self,
        tool: &str,
        arguments: Value,
    ) -> impl std::future::Future<Output = Result<ToolOutput, CallError>> + Send;
}

/// A result as JSON text and structured content.
fn structured(value: Value) -> ToolOutput {
    let mut output = ToolOutput::text(value.to_string());
    output.structured = Some(value.to_string());
    output
}

/// Discovery's own tools' definitions.
fn own_tools() -> Vec<Value> {
    vec![
        definition(
            SEARCH_TOOLS,
            "Find tools for a task among every tool of this project (CLAT's, its MCP servers' and WASM plugins'): the \
             best matches for the task's words (name, description, effect, source), and the extensions that match \
             best with all their tools' names. Words work best; a tool's name, or select:NAME,NAME, finds it first. \
             Load one to call it.",
            &json!({ "type": "object", "properties": {
                "query": { "type": "string", "description": "What the task is, in words" },
                "limit": { "type": "integer", "minimum": 1, "maximum": SEARCH_RESULTS_MAX } },
                "required": ["query"] }),
        ),
        definition(
            LOAD_TOOLS,
            "Load tools found by search_tools: their full definitions, offered from now on. A name is a match's \
             name, or EXTENSION/NAME for an extension's tool (its name alone where only one tool has it).",
            &json!({ "type": "object", "properties": {
                "names": { "type": "array", "items": { "type": "string" } } }, "required": ["names"] }),
        ),
        definition(
            CALL_TOOL,
            "Call a tool search_tools found by its name (as load_tools takes it), with its arguments, without loading \
             it.",
            &json!({ "type": "object", "properties": {
                "name": { "type": "string" }, "arguments": { "type": "object" } }, "required": ["name"] }),
        ),
    ]
}
