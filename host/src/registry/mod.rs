//! The one tool registry: native tools under reserved names, MCP and WASM tools
//! under normalized `mcp_…` / `wasm_…` names, each with its source, original
//! name, effect, description and input schema, and the system prompts
//! extensions contribute. After `freeze()` every registration is rejected and
//! reported. `Registry::call`, the single path every tool call takes, is in
//! `pipeline.rs`.
//!
//! Every extension's tools hold one lease per owner (an MCP server, a WASM
//! plugin). `withdraw` revokes it: the owner's tools leave the listing, new
//! calls fail with `CallError::Withdrawn`, calls in flight are cancelled (their
//! futures dropped, so an MCP request is cancelled on the wire), and it waits,
//! bounded, until none is left running. Scope teardown does this before it
//! closes a server's stdin.
//!
//! What the tools' definitions cost a model is in `cost.rs`, finding the
//! tools a task needs in `search.rs`, what it says of a tool in `tool.rs`, checking an input schema in `schema.rs`,
//! and the registry's refusals and a call's failures in `errors.rs`.

mod cost;
mod errors;
mod lease;
mod pipeline;
mod schema;
mod search;
mod tool;

pub use cost::{ExtensionSchemas, SCHEMA_BYTES_PER_TOKEN, SchemaSize, SchemaTotals, definition, schema_totals};
pub use errors::{CallError, RegistrationError};
use lease::{InFlight, Lease, entry_lease};
pub use pipeline::enforce_result_limit;
pub use schema::check_input_schema;
use schema::{SchemaCheck, compile_schema, parse_input_schema};
pub use search::{
    AnswerMatch, EvaluatedCase, ExtensionMatch, SearchAnswer, SearchCase, SearchEvaluation, TASK_WORDS, ToolIndex,
    ToolMatch,
};
use tool::owner_key;
pub use tool::{ToolInfo, ToolSource};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::contract::{Effect, ToolOutput, ToolSpec};
use crate::limits::TOOL_CALL_TIMEOUT;
use crate::names::{ExternalKind, external_tool_name};
use crate::policy::effects::{effect_from_annotations, effect_reason, with_network_grant};
use crate::policy::identity::Identity;
use crate::run::RunContext;
use crate::sync::{Unpoisoned, UnpoisonedRw};

/// Who makes a call: the agent itself, or an extension calling one of the six
/// host tools through host services. The permission pipeline judges a call
/// as *that caller* calling *that tool*: a kept approval of one never answers
/// the other.
#[derive(Debug, Clone, Copy)]
pub enum Caller<'a> {
    /// The agent (the model, a user's `clat call`).
    Agent,
    /// An extension's host-tool call: its key (`mcp:srv`, `wasm:plugin`) and identity.
    Extension {
        /// `mcp:srv` or `wasm:plugin`.
        key: &'a str,
        /// What the extension is (its launch spec, URL or package).
        identity: &'a Identity,
    },
}

/// A failure inside a tool's implementation (not a tool-level `is_error`
/// result): the plugin crashed, the transport closed, a process could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct ToolError(pub anyhow::Error);

impl From<anyhow::Error> for ToolError {
    fn from(e: anyhow::Error) -> Self {
        ToolError(e)
    }
}

/// Runs one tool. Implemented by native tools and by the MCP and WASM adapters.
#[async_trait]
pub trait ToolHandler: Send + Sync {
    /// Run with arguments already validated against the input schema. Long work
    /// should watch `run.cancel_token()`; the registry also drops the future on
    /// cancel or deadline.
    async fn call(&self, arguments: Value, run: &RunContext) -> Result<ToolOutput, ToolError>;

    /// True while the tool's extension waits on the host for one of its
    /// requests (sampling, elicitation). At the call's deadline the registry
    /// then extends it by `HOST_REQUEST_EXTENSION_STEP`, at most
    /// `HOST_REQUEST_EXTENSION_MAX` in all.
    fn waiting_on_host(&self) -> bool {
        false
    }

    /// How long one call may take before the registry ends it (extensions
    /// aside), capped by the run's deadline: `TOOL_CALL_TIMEOUT`, or less when
    /// the tool's configuration asks for less.
    fn call_timeout(&self) -> Duration {
        TOOL_CALL_TIMEOUT
    }
}

/// A registered tool.
pub struct ToolEntry {
    name: String,
    source: ToolSource,
    original_name: String,
    effect: Effect,
    /// Why it has that effect (the hints it set, the defaults that filled the rest).
    effect_reason: String,
    description: String,
    input_schema: Value,
    /// The JSON Schema of its structured output, when it gave one that is an object.
    output_schema: Option<Value>,
    /// The identity of the tool's extension (`None` for native tools), which
    /// the agent's kept approvals of it are bound to.
    identity: Option<Identity>,
    /// The hash of an extension's tool's definition (`pins::definition_hash`),
    /// which the agent's kept approvals of that one tool are bound to too.
    definition: Option<String>,
    /// Compiled at registration for an extension's tool (a schema that does
    /// not compile refuses the tool); for a native tool, whose schema is ours,
    /// at its first call, so a command pays only for the tools it calls.
    validator: std::sync::OnceLock<Result<jsonschema::Validator, String>>,
    handler: Arc<dyn ToolHandler>,
    /// The owner's lease (`None` for native tools, which are never withdrawn).
    lease: Option<Arc<Lease>>,
}

#[derive(Default)]
struct Tools {
    entries: Vec<Arc<ToolEntry>>,
    by_name: HashMap<String, usize>,
}

/// The registry. Shared by every run of a project scope; registrations come
/// from the startup worker until `freeze()`.
pub struct Registry {
    tools: RwLock<Tools>,
    reserved: Vec<&'static str>,
    frozen: AtomicBool,
    reports: Mutex<Vec<RegistrationError>>,
    /// One lease per extension (`mcp:server`, `wasm:plugin`).
    leases: Mutex<HashMap<String, Arc<Lease>>>,
    /// System-prompt contributions (DSH prompts), in registration order; they
    /// freeze with the tools and hold their extension's lease.
    prompts: RwLock<Vec<(SystemPrompt, Arc<Lease>)>>,
    /// Tools held back because their definition changed since it was pinned, by registered name.
    /// Registered name → the extension's kind and name, and why.
    quarantined: RwLock<HashMap<String, (ExternalKind, String, Quarantine)>>,
    /// Bumped when a registered tool leaves the listing while the registry is in use (a quarantine).
    listing_changes: tokio::sync::watch::Sender<u64>,
}

/// Why a tool is held back: its definition changed since it was pinned (`pins.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantine {
    /// The command that accepts the change (`clat mcp accept SERVER TOOL`).
    pub accept: String,
    /// What changed, one line per part.
    pub changes: Vec<String>,
}

/// A system-prompt contribution: a resolved prompt an MCP server marked for
/// CLAT's system prompt (`_meta["io.artec.clat/dsh"].systemPrompt == true`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SystemPrompt {
    /// `mcp:{server}`.
    pub source: String,
    /// The prompt's name on its server.
    pub name: String,
    /// The resolved text.
    pub text: String,
}

impl Registry {
    /// An empty registry whose `reserved` names only native tools may take.
    pub fn new(reserved: &[&'static str]) -> Self {
        Registry {
            tools: RwLock::default(),
            reserved: reserved.to_vec(),
            frozen: AtomicBool::new(false),
            reports: Mutex::default(),
            leases: Mutex::default(),
            prompts: RwLock::default(),
            quarantined: RwLock::default(),
            listing_changes: tokio::sync::watch::Sender::new(0),
        }
    }

    /// Hold back an extension's tool whose definition changed since it was
    /// pinned: it is not listed, and a call of it is refused
    /// (`CallError::Quarantined`). One registered already leaves the listing
    /// at once, and `listing_changes` says so.
    pub fn quarantine(&self, kind: ExternalKind, owner: &str, tool: &str, why: Quarantine) {
        let name = external_tool_name(kind, owner, tool);
        let registered = self.tools.read_locked().by_name.contains_key(&name);
        self.quarantined.write_locked().insert(name, (kind, owner.to_string(), why));
        if registered {
            self.listing_changes.send_modify(|n| *n += 1);
        }
    }

    /// A receiver that changes when a registered tool leaves the listing (a quarantine while in use).
    pub fn listing_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.listing_changes.subscribe()
    }

    /// Why the tool registered as `name` is quarantined, if it is.
    pub fn quarantined(&self, name: &str) -> Option<Quarantine> {
        self.quarantined.read_locked().get(name).map(|(_, _, why)| why.clone())
    }

    /// The registered name of the quarantined tool `written` names by any of
    /// its names (registered, its extension's own, that normalized), if one does.
    pub fn quarantined_named(&self, written: &str) -> Option<String> {
        let held = self.quarantined.read_locked();
        let mut named = held.iter().filter(|(registered, (kind, owner, _))| {
            registered.as_str() == written || crate::names::names_tool(*kind, owner, registered, written)
        });
        let first = named.next().map(|(registered, _)| registered.clone());
        // Two quarantined tools of that own name: none is meant more than the other.
        if named.next().is_some() { None } else { first }
    }

    fn report(&self, error: RegistrationError) -> RegistrationError {
        tracing::warn!("{error}");
        self.reports.locked().push(error.clone());
        error
    }

    /// Every refused registration so far.
    pub fn reports(&self) -> Vec<RegistrationError> {
        self.reports.locked().clone()
    }

    /// Register a native tool under one of the reserved names.
    pub fn register_native(
        &self,
        name: &'static str,
        description: &str,
        input_schema: Value,
        effect: Effect,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<String, RegistrationError> {
        if !self.reserved.contains(&name) {
            return Err(self.report(RegistrationError::NotNative { name: name.to_string() }));
        }
        let tool = NewTool {
            name: name.to_string(),
            source: ToolSource::Native,
            original_name: name,
            identity: None,
            definition: None,
            effect_reason: "one of CLAT's own tools, whose effect CLAT sets".into(),
            output_schema: None,
        };
        self.insert(tool, effect, description, input_schema, handler, SchemaCheck::Checked)
    }

    /// Register a plugin's tool, as the plugin described it. Its name is built
    /// from `owner` and the spec's name; `identity` is the owner's (what the
    /// agent's kept approvals of the tool are bound to); its effect comes from the annotations
    /// through the spec's table (never `Read`), raised to at least `Network`
    /// when `network_granted` (it uses its plugin's HTTP grant); its input
    /// schema must be a JSON Schema object.
    pub fn register_external(
        &self,
        kind: ExternalKind,
        owner: &str,
        identity: &Identity,
        spec: &ToolSpec,
        network_granted: bool,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<String, RegistrationError> {
        self.register_external_as(kind, owner, identity, spec, network_granted, handler, SchemaCheck::Now)
    }

    /// `register_external` of a tool whose input schema passed `check_input_schema` when its listing was kept
    /// (`wasm::kept`): it is compiled at the tool's first call, as a native tool's is, so a command that registers
    /// it and calls nothing never builds the JSON Schema meta-schema.
    pub fn register_external_checked(
        &self,
        kind: ExternalKind,
        owner: &str,
        identity: &Identity,
        spec: &ToolSpec,
        network_granted: bool,
        handler: Arc<dyn ToolHandler>,
    ) -> Result<String, RegistrationError> {
        self.register_external_as(kind, owner, identity, spec, network_granted, handler, SchemaCheck::Checked)
    }

    /// A server's tool as the registry would list it, from its kept definition
    /// (`home/listings.rs`) under the name it was registered as: what a search
    /// shows of a server it did not start. `None` when its input schema would
    /// be refused.
    pub fn kept_server_tool(server: &str, registered: &str, spec: &ToolSpec) -> Option<ToolInfo> {
        let input_schema = parse_input_schema(&spec.input_schema).ok()?;
        Some(ToolInfo {
            name: registered.to_string(),
            source: ToolSource::Mcp { server: server.into(), tool: spec.name.clone() },
            original_name: spec.name.clone(),
            effect: effect_from_annotations(&spec.annotations),
            effect_reason: effect_reason(&spec.annotations, false),
            schema: cost::size_of(registered, &spec.description, &input_schema),
            output_schema: output_schema(spec),
            description: spec.description.clone(),
            input_schema,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn register_external_as(
        &self,
        kind: ExternalKind,
        owner: &str,
        identity: &Identity,
        spec: &ToolSpec,
        network_granted: bool,
        handler: Arc<dyn ToolHandler>,
        check: SchemaCheck,
    ) -> Result<String, RegistrationError> {
        let tool = spec.name.as_str();
        let name = external_tool_name(kind, owner, tool);
        let source = match kind {
            ExternalKind::Mcp => ToolSource::Mcp { server: owner.into(), tool: tool.into() },
            ExternalKind::Wasm => ToolSource::Wasm { plugin: owner.into(), tool: tool.into() },
        };
        if self.reserved.contains(&name.as_str()) {
            let existing = format!("the native tool {name}");
            return Err(self.report(RegistrationError::Collision { name, source_label: source.label(), existing }));
        }
        let input_schema = match parse_input_schema(&spec.input_schema) {
            Ok(schema) => schema,
            Err(reason) => {
                return Err(self.report(RegistrationError::InvalidSchema {
                    name,
                    source_label: source.label(),
                    reason,
                }));
            }
        };
        let mut effect = effect_from_annotations(&spec.annotations);
        if network_granted {
            effect = with_network_grant(effect);
        }
        debug_assert_ne!(effect, Effect::Read);
        let effect_reason = effect_reason(&spec.annotations, network_granted);
        let new = NewTool {
            name,
            source,
            original_name: tool,
            identity: Some(identity.clone()),
            definition: Some(crate::policy::pins::definition_hash(spec)),
            effect_reason,
            output_schema: output_schema(spec),
        };
        self.insert(new, effect, &spec.description, input_schema, handler, check)
    }

    fn insert(
        &self,
        tool: NewTool<'_>,
        effect: Effect,
        description: &str,
        input_schema: Value,
        handler: Arc<dyn ToolHandler>,
        check: SchemaCheck,
    ) -> Result<String, RegistrationError> {
        let NewTool { name, source, original_name, identity, definition, effect_reason, output_schema } = tool;
        let source_label = source.label();
        if self.is_frozen() {
            return Err(self.report(RegistrationError::Frozen { name, source_label }));
        }
        let validator = std::sync::OnceLock::new();
        if check == SchemaCheck::Now {
            match compile_schema(&input_schema, false) {
                Ok(v) => {
                    let _ = validator.set(Ok(v));
                }
                Err(reason) => {
                    return Err(self.report(RegistrationError::InvalidSchema { name, source_label, reason }));
                }
            }
        }
        let source_lease = entry_lease(&self.leases, &source);
        let mut tools = self.tools.write_locked();
        // Checked again under the write lock: freeze() takes it too.
        if self.is_frozen() {
            drop(tools);
            return Err(self.report(RegistrationError::Frozen { name, source_label }));
        }
        if let Some(&i) = tools.by_name.get(&name) {
            let existing = tools.entries[i].source.label();
            drop(tools);
            return Err(self.report(RegistrationError::Collision { name, source_label, existing }));
        }
        let entry = ToolEntry {
            name: name.clone(),
            source,
            original_name: original_name.to_string(),
            effect,
            effect_reason,
            description: description.to_string(),
            input_schema,
            output_schema,
            identity,
            definition,
            validator,
            handler,
            lease: source_lease,
        };
        let index = tools.entries.len();
        tools.entries.push(Arc::new(entry));
        tools.by_name.insert(name.clone(), index);
        Ok(name)
    }

    /// Freeze the registry: every later registration is rejected and reported.
    /// Once frozen, a no-op that takes no lock (every run start freezes).
    pub fn freeze(&self) {
        if self.is_frozen() {
            return;
        }
        let _tools = self.tools.write_locked();
        let _prompts = self.prompts.write_locked();
        self.frozen.store(true, Ordering::SeqCst);
    }

    /// Register a resolved system prompt of an extension; refused (and
    /// reported) after the freeze, like a tool.
    pub fn register_system_prompt(
        &self,
        kind: ExternalKind,
        owner: &str,
        name: &str,
        text: String,
    ) -> Result<(), RegistrationError> {
        let source = owner_key(kind, owner);
        let lease = {
            let mut leases = self.leases.locked();
            Arc::clone(leases.entry(source.clone()).or_default())
        };
        let mut prompts = self.prompts.write_locked();
        if self.is_frozen() {
            drop(prompts);
            return Err(self.report(RegistrationError::PromptFrozen { name: name.into(), source_label: source }));
        }
        prompts.push((SystemPrompt { source, name: name.into(), text }, lease));
        Ok(())
    }

    /// The system-prompt contributions whose extension still holds its lease.
    pub fn system_prompts(&self) -> Vec<SystemPrompt> {
        let prompts = self.prompts.read_locked();
        prompts.iter().filter(|(_, lease)| !lease.revoked.is_cancelled()).map(|(p, _)| p.clone()).collect()
    }

    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::SeqCst)
    }

    /// Revoke an extension's lease (its tool and prompt leases): its tools and
    /// system prompts leave the listings, new calls fail
    /// with `CallError::Withdrawn`, calls in flight are cancelled; then wait,
    /// at most `wait`, until none of them is still running. Returns how many
    /// were still running when the wait ended (0 when all ended).
    pub async fn withdraw(&self, kind: ExternalKind, owner: &str, reason: &str, wait: std::time::Duration) -> usize {
        let lease = {
            let mut leases = self.leases.locked();
            Arc::clone(leases.entry(owner_key(kind, owner)).or_default())
        };
        let _ = lease.reason.set(reason.to_string());
        lease.revoked.cancel();
        let drained = async {
            loop {
                let idle = lease.idle.notified();
                if lease.in_flight.load(Ordering::SeqCst) == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(wait, drained).await;
        lease.in_flight.load(Ordering::SeqCst)
    }

    /// What a kept approval of the agent's calls of `tool` is keyed by, and
    /// the tool's effect: what answering "always" at a prompt keeps.
    pub fn agent_approval(&self, tool: &str) -> Option<(crate::policy::approvals::ApprovalKey, Effect)> {
        let tools = self.tools.read_locked();
        let entry = tools
            .entries
            .iter()
            .find(|e| e.name == tool && !e.lease.as_ref().is_some_and(|l| l.revoked.is_cancelled()))?;
        Some((pipeline::approval_key(entry, Caller::Agent), entry.effect))
    }

    /// Every registered tool, in registration order (but those withdrawn or quarantined since).
    pub fn list(&self) -> Vec<ToolInfo> {
        let tools = self.tools.read_locked();
        let quarantined = self.quarantined.read_locked();
        tools
            .entries
            .iter()
            .filter(|e| !e.lease.as_ref().is_some_and(|l| l.revoked.is_cancelled()))
            .filter(|e| !quarantined.contains_key(&e.name))
            .map(|e| ToolInfo {
                name: e.name.clone(),
                source: e.source.clone(),
                original_name: e.original_name.clone(),
                effect: e.effect,
                effect_reason: e.effect_reason.clone(),
                description: e.description.clone(),
                input_schema: e.input_schema.clone(),
                output_schema: e.output_schema.clone(),
                schema: cost::size_of(&e.name, &e.description, &e.input_schema),
            })
            .collect()
    }
}

/// What names a tool being registered.
/// An extension's output schema as served: its JSON text parsed, kept only when it is an object (MCP's shape).
fn output_schema(spec: &ToolSpec) -> Option<Value> {
    spec.output_schema.as_deref().and_then(|text| serde_json::from_str::<Value>(text).ok()).filter(Value::is_object)
}

struct NewTool<'a> {
    name: String,
    source: ToolSource,
    original_name: &'a str,
    identity: Option<Identity>,
    definition: Option<String>,
    effect_reason: String,
    output_schema: Option<Value>,
}
