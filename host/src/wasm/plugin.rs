//! One loaded WASM plugin (`WasmPlugin`): its listed tools, its store
//! template, its output tail, and its pre-linked component — mapped and
//! linked at load, or, when its listing was kept (`kept.rs`), at the first
//! call that needs it; a fresh store and instance for each call
//! (`call_tool`), a failure described by kind with the tail, and best-effort
//! `context-changed` deliveries. It is an `Extension` of the scope.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;
use wasmtime::Trap;

use super::cache::CacheOutcome;
use super::failure::{FailureReason, GuestFailure};
use super::plain::FunctionDocs;
use super::runtime::{ComponentSource, GuestPre, Prepared, WasmRuntime};
use super::stdio::SharedTail;
use super::store::{GuestState, StoreTemplate};
use crate::contract::{ContextSnapshot, ToolOutput, ToolSpec};
use crate::limits::{
    CONTEXT_DELIVERY_INTERVAL, CONTEXT_DELIVERY_TIMEOUT, HOST_REQUEST_EXTENSION_MAX, TOOL_CALL_TIMEOUT,
    TOOLS_PER_PLUGIN_MAX,
};
use crate::registry::ToolError;
use crate::run::RunContext;
use crate::supply::capabilities::{Capabilities, ToolUses};
use crate::sync::Unpoisoned;

/// A loaded plugin.
pub struct WasmPlugin {
    pub(super) name: String,
    /// What the user granted of what the manifest declares.
    pub(super) granted: Capabilities,
    /// Which tools use the grant (`[tools]` of the manifest).
    pub(super) uses: ToolUses,
    /// The linked component, once mapped: at load, or at the first call when the listing was kept.
    pub(super) prepared: tokio::sync::OnceCell<Prepared>,
    pub(super) source: ComponentSource,
    pub(super) runtime: Arc<WasmRuntime>,
    /// What each call's store is made from (the WASI context's parts, the limits, the grant).
    pub(super) template: StoreTemplate,
    pub(super) tail: SharedTail,
    pub(super) tools: Mutex<Vec<ToolSpec>>,
    pub(super) dropped_tools: std::sync::atomic::AtomicUsize,
    /// Its tools came from a kept listing whose schemas passed registration's check: registering them compiles none.
    pub(super) schemas_checked: bool,
    /// A plain component's functions not offered, each with why.
    pub(super) refused: Mutex<Vec<String>>,
    /// The latest context for `context-changed`: `None` = nothing new,
    /// `Some(None)` = the run ended, `Some(Some(s))` = a new snapshot.
    pub(super) context: tokio::sync::watch::Sender<Option<Option<ContextSnapshot>>>,
    pub(super) delivered: std::sync::atomic::AtomicU64,
    /// The task delivering the context; `close` ends it.
    pub(super) delivery: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Its sampling and elicitation requests waiting on the host.
    pub(super) waits: crate::services::HostWaits,
}

impl WasmPlugin {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the plugin was granted (of what it declares).
    pub fn grants(&self) -> &Capabilities {
        &self.granted
    }

    /// Which of its tools use which capability.
    pub fn tool_uses(&self) -> &ToolUses {
        &self.uses
    }

    /// Whether mapping the component compiled it or reused the cache; `None` while it is not mapped (its listing
    /// was kept and nothing has called it yet).
    pub fn cache_outcome(&self) -> Option<CacheOutcome> {
        self.prepared.get().map(|p| p.cache)
    }

    /// The linked component, mapped now if this is the first call that needs it.
    async fn prepared(&self) -> Result<&Prepared, GuestFailure> {
        let prepared = self
            .prepared
            .get_or_try_init(|| async {
                self.runtime.prepare(&self.name, &self.source).await.map(|(prepared, _)| prepared)
            })
            .await
            .map_err(|e| GuestFailure {
                plugin: self.name.clone(),
                what: "loading".into(),
                reason: FailureReason::Other(e.to_string()),
                output_tail: self.output_tail(),
            })?;
        Ok(prepared)
    }

    /// The tools the plugin listed at load.
    pub fn tools(&self) -> Vec<ToolSpec> {
        self.tools.locked().clone()
    }

    /// A plain component's exported functions not offered as tools, each with why.
    pub fn refused(&self) -> Vec<String> {
        self.refused.locked().clone()
    }

    /// Tools listed past `TOOLS_PER_PLUGIN_MAX` and dropped.
    pub fn dropped_tools(&self) -> usize {
        self.dropped_tools.load(Ordering::Relaxed)
    }

    /// The last lines the guest wrote to stdout/stderr (redacted).
    pub fn output_tail(&self) -> Vec<String> {
        self.tail.locked().lines()
    }

    pub(super) fn store(
        &self,
        engine: &wasmtime::Engine,
        tool: Option<&str>,
        run: Option<&RunContext>,
    ) -> wasmtime::Store<GuestState> {
        // In a run the registry owns the call's deadline (and extends it while the
        // guest waits on the host); the epoch interrupt is the backstop past any
        // extension. Outside a run (list-tools, install validation) it is the bound.
        let deadline = run.map_or_else(
            || Instant::now() + TOOL_CALL_TIMEOUT,
            |r| {
                let backstop = r.call_deadline(TOOL_CALL_TIMEOUT) + HOST_REQUEST_EXTENSION_MAX;
                r.deadline().map_or(backstop, |end| end.min(backstop))
            },
        );
        let http_deadline = run.map_or(deadline, |r| {
            let call = r.call_deadline(TOOL_CALL_TIMEOUT);
            r.deadline().map_or(call, |end| end.min(call))
        });
        self.template.new_store(engine, tool, run.cloned(), deadline, http_deadline)
    }

    /// Describe a guest failure: traps by kind, with the output tail.
    pub(super) fn failure(&self, what: &str, error: wasmtime::Error) -> GuestFailure {
        let reason = match error.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => FailureReason::Interrupted,
            Some(Trap::OutOfFuel) => FailureReason::OutOfFuel,
            Some(trap) => FailureReason::Trap(trap.to_string()),
            None if error.is::<wasmtime::PoolConcurrencyLimitError>() => {
                let pool = self.runtime.allocator().map_or_else(|e| e.to_string(), |a| a.to_string());
                FailureReason::PoolFull { error: error.to_string(), pool }
            }
            None if format!("{error:#}").contains("memory") => FailureReason::ResourceLimit(format!("{error:#}")),
            None => FailureReason::Other(format!("{error:#}")),
        };
        GuestFailure { plugin: self.name.clone(), what: what.to_string(), reason, output_tail: self.output_tail() }
    }

    pub(super) async fn list_tools(&self) -> Result<Vec<ToolSpec>, GuestFailure> {
        let prepared = self.prepared().await?;
        let tools = match &prepared.pre {
            GuestPre::Contract(pre) => {
                let mut store = self.store(&prepared.engine, None, None);
                let instance = pre.instantiate_async(&mut store).await.map_err(|e| self.failure("instantiation", e))?;
                instance
                    .artec_clat_plugin()
                    .call_list_tools(&mut store)
                    .await
                    .map_err(|e| self.failure("list-tools", e))?
            }
            // A plain component's tools are read from its type: nothing runs.
            GuestPre::Plain { exports, source, .. } => {
                let (docs, problem) = FunctionDocs::read(&source.package);
                *self.refused.locked() = exports.refused.iter().cloned().chain(problem).collect();
                exports.tool_specs(&self.name, &source.declared, &docs)
            }
        };
        if tools.len() > TOOLS_PER_PLUGIN_MAX {
            let dropped = tools.len() - TOOLS_PER_PLUGIN_MAX;
            tracing::warn!("plugin {}: {dropped} tools past the first {TOOLS_PER_PLUGIN_MAX} were dropped", self.name);
            self.dropped_tools.store(dropped, Ordering::Relaxed);
        }
        Ok(tools.into_iter().take(TOOLS_PER_PLUGIN_MAX).collect())
    }

    /// Run one of the plugin's tools in `run`, in a fresh store.
    pub async fn call_tool(&self, tool: &str, arguments: &Value, run: &RunContext) -> Result<ToolOutput, ToolError> {
        let prepared = self.prepared().await.map_err(|e| ToolError(anyhow::anyhow!(e)))?;
        let mut store = self.store(&prepared.engine, Some(tool), Some(run));
        let instantiation = |e| ToolError(anyhow::anyhow!(self.failure("instantiation", e)));
        let pre = match &prepared.pre {
            GuestPre::Contract(pre) => pre,
            GuestPre::Plain { pre, exports, .. } => {
                let function = exports.get(tool).ok_or_else(|| {
                    ToolError(anyhow::anyhow!("plugin {} offers no function {tool} any more", self.name))
                })?;
                let instance = pre.instantiate_async(&mut store).await.map_err(instantiation)?;
                let called = function.call(&mut store, &instance, arguments).await;
                let called =
                    called.map_err(|e| ToolError(anyhow::anyhow!(self.failure(&format!("tool {tool}"), e))))?;
                return called.map_err(|e| ToolError(anyhow::anyhow!("plugin {}: {e}", self.name)));
            }
        };
        let instance = pre.instantiate_async(&mut store).await.map_err(instantiation)?;
        let result = instance
            .artec_clat_plugin()
            .call_call_tool(&mut store, tool, &arguments.to_string())
            .await
            .map_err(|e| ToolError(anyhow::anyhow!(self.failure(&format!("tool {tool}"), e))))?;
        result.map_err(|message| {
            let message = crate::redact::redact(&message);
            ToolError(anyhow::anyhow!("plugin {} reported a failure in {tool}: {message}", self.name))
        })
    }

    /// Create a fresh store and instance and drop them: the per-call setup
    /// cost, for benchmarks and health checks.
    pub async fn instantiate_once(&self) -> Result<(), GuestFailure> {
        let prepared = self.prepared().await?;
        let mut store = self.store(&prepared.engine, None, None);
        let instantiated = match &prepared.pre {
            GuestPre::Contract(pre) => pre.instantiate_async(&mut store).await.map(drop),
            GuestPre::Plain { pre, .. } => pre.instantiate_async(&mut store).await.map(drop),
        };
        instantiated.map_err(|e| self.failure("instantiation", e))
    }

    /// Offer the guest the latest context (or `None`: the run ended). Never
    /// blocks: a delivery task hands the newest value to the guest's
    /// `context-changed` export, skipping values superseded meanwhile.
    pub fn notify_context(&self, snapshot: Option<ContextSnapshot>) {
        self.context.send_replace(Some(snapshot));
    }

    /// How many `context-changed` deliveries completed.
    pub fn context_deliveries(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    async fn deliver_context(&self, snapshot: Option<ContextSnapshot>) -> Result<(), GuestFailure> {
        let prepared = self.prepared().await?;
        let GuestPre::Contract(pre) = &prepared.pre else { return Ok(()) };
        let mut store = self.store(&prepared.engine, None, None);
        let instance = pre.instantiate_async(&mut store).await.map_err(|e| self.failure("instantiation", e))?;
        instance
            .artec_clat_plugin()
            .call_context_changed(&mut store, snapshot.as_ref())
            .await
            .map_err(|e| self.failure("context-changed", e))
    }
}

/// The delivery task of one plugin: it holds only a weak reference, so it ends
/// when the plugin is dropped (or the channel closes). A change is delivered
/// at once, then nothing for `CONTEXT_DELIVERY_INTERVAL`: what changed
/// meanwhile arrives as its latest value.
pub(super) fn spawn_context_delivery(plugin: &Arc<WasmPlugin>) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
    let mut rx = plugin.context.subscribe();
    let weak = Arc::downgrade(plugin);
    let task = handle.spawn(async move {
        while rx.changed().await.is_ok() {
            let Some(value) = rx.borrow_and_update().clone() else { continue };
            let Some(plugin) = weak.upgrade() else { return };
            match tokio::time::timeout(CONTEXT_DELIVERY_TIMEOUT, plugin.deliver_context(value)).await {
                Ok(Ok(())) => {
                    plugin.delivered.fetch_add(1, Ordering::Relaxed);
                }
                Ok(Err(e)) => tracing::debug!("context-changed for plugin {}: {e}", plugin.name),
                Err(_) => tracing::debug!("context-changed for plugin {} timed out", plugin.name),
            }
            drop(plugin);
            tokio::time::sleep(CONTEXT_DELIVERY_INTERVAL).await;
        }
    });
    *plugin.delivery.locked() = Some(task);
}

#[async_trait]
impl crate::extension::Extension for WasmPlugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> crate::extension::ExtensionKind {
        crate::extension::ExtensionKind::Wasm
    }

    fn refresh_status(&self, status: &mut crate::extension::ExtensionStatus) {
        status.output_tail = self.output_tail();
    }

    fn notify_context(&self, snapshot: Option<&ContextSnapshot>) {
        WasmPlugin::notify_context(self, snapshot.cloned());
    }

    /// Nothing runs between calls: each call's store is gone when it ends. A
    /// context delivery still running is ended here, before the process's
    /// runtime goes (a guest dropped mid-way through a WASI file read as the
    /// runtime shuts down makes wasmtime-wasi panic on its cancelled task).
    async fn close(&self) {
        let delivery = self.delivery.locked().take();
        if let Some(task) = delivery {
            task.abort();
            let _ = task.await;
        }
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
