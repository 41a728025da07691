//! Runs: the `RunContext` every tool call of one run carries (id, mode, cancel
//! token, deadline, event sink, approver, asker, sampling budget and the process
//! groups the run owns) and the `RunEvent` stream, serializable as JSON lines.
//! Ending or cancelling a run kills every process group it still owns.

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::contract::PermissionMode;
use crate::policy::approvals::ApprovalMemory;
use crate::policy::permissions::{Approver, HeadlessApprover, Rule};
use crate::services::asker::{HeadlessAsker, UserAsker};
use crate::services::budget::SamplingBudget;
use crate::services::model::ModelProvider;
use crate::sync::Unpoisoned;

/// What happened in a run. Serialized with a `type` tag, one JSON object per line.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEventKind {
    /// The run began.
    RunStarted {
        /// Its permission mode.
        mode: String,
    },
    /// A tool call was resolved and is about to pass the permission pipeline.
    ToolStarted {
        /// The call's number in the run (1, 2, …).
        call_id: u64,
        /// The registered tool name.
        tool: String,
        /// Where the tool comes from (`native`, `mcp:server/tool`, `wasm:plugin/tool`).
        source: String,
        /// The tool's effect.
        effect: String,
    },
    /// The permission pipeline decided.
    Permission {
        /// The call's number in the run.
        call_id: u64,
        /// The registered tool name.
        tool: String,
        /// The tool's effect.
        effect: String,
        /// What the mode table said: allow, ask or deny.
        rule: Rule,
        /// True when the call may go ahead.
        allowed: bool,
        /// `mode` when the table decided, `stored` when a kept approval did,
        /// `approver` when someone was asked.
        decided_by: String,
        /// Why it was denied, when it was.
        reason: Option<String>,
    },
    /// The tool call ended (successfully, with `is_error`, or with a pipeline error).
    ToolFinished {
        /// The call's number in the run.
        call_id: u64,
        /// The registered tool name.
        tool: String,
        /// How long it took.
        duration_ms: u64,
        /// Whether it ended as an error (a tool-level one, or the pipeline's).
        is_error: bool,
        /// The pipeline's error, when there was one.
        error: Option<String>,
    },
    /// The call's deadline moved out because its extension was waiting on the
    /// host (sampling, elicitation).
    DeadlineExtended {
        /// The call's number in the run.
        call_id: u64,
        /// The registered tool name.
        tool: String,
        /// The total extension so far.
        extended_ms: u64,
    },
    /// A process group owned by the run was killed.
    ProcessKilled {
        /// The group.
        pgid: i32,
        /// Why (the run ended, was cancelled, a command timed out).
        reason: String,
    },
    /// A sampling request was reserved, reconciled or refused (used by the sampling gates).
    Sampling {
        /// The extension that asked (`mcp:srv`, `wasm:plugin`).
        source: String,
        /// `reserved`, `completed`, `refused: …`, `failed: …`, `cancelled`.
        outcome: String,
        /// The tokens counted for what was sent.
        input_tokens: u64,
        /// The tokens counted for the answer.
        output_tokens: u64,
    },
    /// A plugin asked the user to fill in a form.
    Elicitation {
        /// The extension that asked.
        source: String,
        /// How many fields the form has.
        fields: u32,
        /// `accepted`, `declined`, `cancelled`, or why it failed.
        outcome: String,
    },
    /// A plugin called a host tool through host services (the call itself
    /// follows as `tool_started` … `tool_finished`).
    HostToolCall {
        /// The extension that called.
        source: String,
        /// The host tool.
        tool: String,
    },
    /// A plugin wrote a log line through host services (bounded).
    PluginLog {
        /// The plugin.
        source: String,
        /// `trace`, `debug`, `info`, `warn` or `error`.
        level: String,
        /// The line, redacted and cut.
        message: String,
    },
    /// An MCP server reported progress on one of this run's calls (`notifications/progress`).
    Progress {
        /// `mcp:srv`.
        source: String,
        /// How far it is, and of how much when it knows.
        progress: f64,
        #[serde(skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        /// What it is doing, redacted.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// An extension that had stopped was started again for a call of this run.
    ExtensionRestarted {
        /// `mcp:srv`.
        extension: String,
        /// How many times in this scope so far.
        restarts: u32,
        /// Why it had stopped.
        reason: String,
    },
    /// A WASM plugin's outgoing HTTP request (under its grant), once it ended
    /// or was refused: never headers, bodies or the query.
    HttpRequest {
        /// The plugin.
        source: String,
        /// The HTTP method.
        method: String,
        /// `http` or `https`.
        scheme: String,
        /// The host, in canonical form.
        host: String,
        /// The port.
        port: u16,
        /// The path, without its query.
        path: String,
        /// The response's status; absent when no response came.
        status: Option<u16>,
        /// The response body's bytes read.
        bytes: u64,
        /// How long it took.
        duration_ms: u64,
        /// Why it was refused or failed, when it was.
        error: Option<String>,
    },
    /// The run ended.
    RunFinished {
        /// Whether it was cancelled.
        cancelled: bool,
    },
}

/// One event with its run id, sequence number and time since the run started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunEvent {
    /// The run's id.
    pub run_id: String,
    /// The event's number in the run (0, 1, 2, …).
    pub seq: u64,
    /// Time since the run started.
    pub elapsed_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: RunEventKind,
}

impl RunEvent {
    /// The event as one line of JSON (no trailing newline).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).expect("run events always serialize")
    }
}

/// Where a run's events go.
pub trait EventSink: Send + Sync {
    /// Record one event. Must not block for long: runs call it inline.
    fn emit(&self, event: RunEvent);
}

/// Drops every event.
#[derive(Debug, Default)]
pub struct NullSink;
impl EventSink for NullSink {
    fn emit(&self, _event: RunEvent) {}
}

/// Keeps every event in memory (tests, embedding hosts).
#[derive(Debug, Default)]
pub struct CollectingSink(Mutex<Vec<RunEvent>>);
impl CollectingSink {
    /// A copy of the events so far.
    pub fn events(&self) -> Vec<RunEvent> {
        self.0.locked().clone()
    }
}
impl EventSink for CollectingSink {
    fn emit(&self, event: RunEvent) {
        self.0.locked().push(event);
    }
}

/// Writes each event as one JSON line.
pub struct JsonLinesSink<W: Write + Send>(Mutex<W>);
impl<W: Write + Send> JsonLinesSink<W> {
    /// Events as JSON lines into `writer` (stdout, stderr, a file).
    pub fn new(writer: W) -> Self {
        JsonLinesSink(Mutex::new(writer))
    }
}
impl<W: Write + Send> EventSink for JsonLinesSink<W> {
    fn emit(&self, event: RunEvent) {
        let mut w = self.0.locked();
        let _ = writeln!(w, "{}", event.to_json_line());
        let _ = w.flush();
    }
}

/// The process groups a run owns. `kill_all` (run end, cancel, drop) kills each
/// whole group with SIGKILL.
#[derive(Debug, Default)]
pub struct ProcessTable(Mutex<HashSet<i32>>);

impl ProcessTable {
    pub(crate) fn insert(&self, pgid: i32) {
        self.0.locked().insert(pgid);
    }
    pub(crate) fn remove(&self, pgid: i32) {
        self.0.locked().remove(&pgid);
    }
    /// Process groups still alive and owned by the run.
    pub fn live(&self) -> Vec<i32> {
        self.0.locked().iter().copied().collect()
    }
    /// Kill every owned group; returns the groups signalled.
    pub fn kill_all(&self) -> Vec<i32> {
        let groups: Vec<i32> = self.0.locked().drain().collect();
        for pgid in &groups {
            kill_group(*pgid);
        }
        groups
    }
}

struct RunInner {
    run_id: String,
    mode: PermissionMode,
    cancel: CancellationToken,
    started: Instant,
    deadline: Option<Instant>,
    events: Arc<dyn EventSink>,
    seq: AtomicU64,
    next_call: AtomicU64,
    approver: Arc<dyn Approver>,
    approvals: Option<Arc<dyn ApprovalMemory>>,
    asker: Arc<dyn UserAsker>,
    budget: Arc<SamplingBudget>,
    /// The run's own model (`RunBuilder::model`), else the project's.
    model: Option<Arc<dyn ModelProvider>>,
    processes: ProcessTable,
    finished: std::sync::atomic::AtomicBool,
}

impl Drop for RunInner {
    fn drop(&mut self) {
        self.processes.kill_all();
    }
}

/// Everything one run's tool calls share. Cheap to clone.
#[derive(Clone)]
pub struct RunContext {
    inner: Arc<RunInner>,
}

/// Builds a `RunContext`; defaults: mode `ask`, no run deadline (each call still
/// has the 120 s tool-call deadline), no events, headless approver and asker,
/// a fresh sampling budget.
pub struct RunBuilder {
    mode: PermissionMode,
    deadline: Option<Duration>,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
    approvals: Option<Arc<dyn ApprovalMemory>>,
    asker: Arc<dyn UserAsker>,
    budget: Option<Arc<SamplingBudget>>,
    cancel: Option<CancellationToken>,
    model: Option<Arc<dyn ModelProvider>>,
}

impl RunBuilder {
    pub fn mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }
    /// Ends the run's calls this long after it starts.
    pub fn deadline(mut self, after: Duration) -> Self {
        self.deadline = Some(after);
        self
    }
    pub fn events(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.events = sink;
        self
    }
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }
    pub fn asker(mut self, asker: Arc<dyn UserAsker>) -> Self {
        self.asker = asker;
        self
    }
    /// Kept approvals: they answer `ask` before the approver, and the
    /// approver's "always" is kept there (default: none kept).
    pub fn approvals(mut self, approvals: Arc<dyn ApprovalMemory>) -> Self {
        self.approvals = Some(approvals);
        self
    }
    /// Share a budget (normally each run gets its own).
    pub fn budget(mut self, budget: Arc<SamplingBudget>) -> Self {
        self.budget = Some(budget);
        self
    }
    /// Use a caller's cancel token (e.g. a child of the session's).
    pub fn cancel_token(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
    /// The model this run's sampling goes to (default: the project's session model).
    pub fn model(mut self, model: Arc<dyn ModelProvider>) -> Self {
        self.model = Some(model);
        self
    }
    /// Start the run: emits `run_started`.
    pub fn start(self) -> RunContext {
        let started = Instant::now();
        let millis = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
        let run = RunContext {
            inner: Arc::new(RunInner {
                run_id: format!("run-{millis:x}-{:08x}", next_run_suffix()),
                mode: self.mode,
                cancel: self.cancel.unwrap_or_default(),
                started,
                deadline: self.deadline.map(|d| started + d),
                events: self.events,
                seq: AtomicU64::new(0),
                next_call: AtomicU64::new(1),
                approver: self.approver,
                approvals: self.approvals,
                asker: self.asker,
                budget: self.budget.unwrap_or_else(|| Arc::new(SamplingBudget::per_run())),
                model: self.model,
                processes: ProcessTable::default(),
                finished: Default::default(),
            }),
        };
        run.emit(RunEventKind::RunStarted { mode: self.mode.to_string() });
        run
    }
}

/// The last part of a run id: a random start for this process, then one more
/// per run, so ids never repeat within a process and rarely across processes,
/// without asking the kernel for randomness on every run.
fn next_run_suffix() -> u32 {
    static START: LazyLock<u32> = LazyLock::new(|| uuid::Uuid::new_v4().as_u128() as u32);
    static RUNS: AtomicU32 = AtomicU32::new(0);
    START.wrapping_add(RUNS.fetch_add(1, Ordering::Relaxed))
}

impl RunContext {
    /// A run builder with the defaults described on `RunBuilder`.
    pub fn builder() -> RunBuilder {
        RunBuilder {
            mode: PermissionMode::Ask,
            deadline: None,
            events: Arc::new(NullSink),
            approver: Arc::new(HeadlessApprover),
            approvals: None,
            asker: Arc::new(HeadlessAsker),
            budget: None,
            cancel: None,
            model: None,
        }
    }

    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }
    pub fn mode(&self) -> PermissionMode {
        self.inner.mode
    }
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.inner.cancel
    }
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }
    /// Cancel the run: pending calls end promptly and owned process groups die.
    pub fn cancel(&self) {
        self.inner.cancel.cancel();
        self.kill_processes("run cancelled");
    }
    /// The run's own deadline, if it has one.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }
    /// The deadline of a call starting now: the tool-call limit, capped by the run's deadline.
    pub fn call_deadline(&self, limit: Duration) -> Instant {
        let by_limit = Instant::now() + limit;
        self.inner.deadline.map_or(by_limit, |d| d.min(by_limit))
    }
    /// Time left before the run's deadline (`None` when the run has none).
    pub fn remaining(&self) -> Option<Duration> {
        self.inner.deadline.map(|d| d.saturating_duration_since(Instant::now()))
    }
    pub fn approver(&self) -> &dyn Approver {
        self.inner.approver.as_ref()
    }
    /// The run's kept approvals, if it keeps any.
    pub fn approvals(&self) -> Option<&dyn ApprovalMemory> {
        self.inner.approvals.as_deref()
    }
    pub fn asker(&self) -> &dyn UserAsker {
        self.inner.asker.as_ref()
    }
    /// The model this run's sampling goes to, when it is not the project's session model.
    pub fn model(&self) -> Option<&Arc<dyn ModelProvider>> {
        self.inner.model.as_ref()
    }
    pub fn budget(&self) -> &Arc<SamplingBudget> {
        &self.inner.budget
    }
    pub fn processes(&self) -> &ProcessTable {
        &self.inner.processes
    }
    /// A fresh call id, unique within the run.
    pub fn next_call_id(&self) -> u64 {
        self.inner.next_call.fetch_add(1, Ordering::Relaxed)
    }
    /// Emit one event to the run's sink.
    pub fn emit(&self, kind: RunEventKind) {
        let event = RunEvent {
            run_id: self.inner.run_id.clone(),
            seq: self.inner.seq.fetch_add(1, Ordering::Relaxed),
            elapsed_ms: self.inner.started.elapsed().as_millis() as u64,
            kind,
        };
        self.inner.events.emit(event);
    }
    fn kill_processes(&self, reason: &str) {
        for pgid in self.inner.processes.kill_all() {
            self.emit(RunEventKind::ProcessKilled { pgid, reason: reason.to_string() });
        }
    }
    /// End the run: kills every process group it still owns and emits `run_finished` (once).
    pub fn finish(&self) {
        if self.inner.finished.swap(true, Ordering::SeqCst) {
            return;
        }
        self.kill_processes("run ended");
        self.emit(RunEventKind::RunFinished { cancelled: self.is_cancelled() });
    }
}

/// Send SIGKILL to a whole process group (a run's, when it ends); a group that is already gone is fine.
pub fn kill_group(pgid: i32) {
    if pgid > 0 {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
    }
}
