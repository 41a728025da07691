//! The MCP adapter's inbound side, the twin of `wasm/host_services.rs`: what a
//! server asks of CLAT is mapped from JSON onto the host's one `HostServices`
//! implementation (the same one guests use), and its answer, or `HostError`,
//! back onto the wire. `sampling/createMessage` and `elicitation/create`
//! (protocol 2025-06-18 or newer) for every server; `io.artec.clat/context/get`
//! and `io.artec.clat/tools/call` only for servers that advertise the
//! `io.artec.clat/hostServices` capability (-32601 otherwise).
//!
//! A request belongs to the run of the `tools/call` it came with and ends (as
//! cancelled) when that call ends. Every call is sent tagged, so where the
//! transport can tell (legacy HTTP: the call's answer stream; modern: the
//! call's `input_required` rounds) the request is judged under that call's
//! run. Where it cannot (stdio), it belongs to the server's call in flight;
//! with none, there is no active run and the services refuse (no model call,
//! no question, no tool); with calls of two runs in flight, the run cannot be
//! told and the request is refused.
//! While a sampling or elicitation request is pending, the server's calls
//! report `waiting_on_host`, which lets the registry extend their deadline.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use async_trait::async_trait;
use clat_mcp::jsonrpc::METHOD_NOT_FOUND;
use clat_mcp::{ServerRequests, WireError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::contract::json::{
    FormShapeError, context_snapshot_to_json, elicitation_form_from_json, elicitation_result_to_json,
    host_tool_call_from_json, sampling_request_from_json, sampling_result_to_json, tool_output_to_json,
};
use crate::contract::{HostError, LogLevel};
use crate::limits::PLUGIN_LOG_LINE_MAX_CHARS;
use crate::policy::identity::Identity;
use crate::run::{RunContext, RunEventKind};
use crate::services::{HostServices, HostWaits};
use crate::sync::Unpoisoned;

/// The capability CLAT advertises in both eras.
pub const HOST_SERVICES_CAPABILITY: &str = "io.artec.clat/hostServices";
/// Its version.
pub const HOST_SERVICES_VERSION: &str = "0.1.0";
/// The versions of it this host implements: a server opts in only by
/// advertising one of these.
pub const HOST_SERVICES_VERSIONS: [&str; 1] = [HOST_SERVICES_VERSION];

/// The first protocol version with elicitation.
const ELICITATION_SINCE: &str = "2025-06-18";

/// The client capabilities sent in `initialize` (and in every modern `_meta`):
/// sampling, form elicitation, and CLAT's host services.
pub fn client_capabilities() -> Value {
    json!({
        "sampling": {},
        "elicitation": { "form": {} },
        "experimental": { HOST_SERVICES_CAPABILITY: { "version": HOST_SERVICES_VERSION } },
    })
}

/// JSON-RPC error codes for `HostError`s answered to a server's request (the
/// `io.artec.clat/*` methods, `sampling/createMessage`, `elicitation/create`).
/// `invalid` is the standard -32602; the others are CLAT's, outside the codes
/// MCP assigns. The error's `data.kind` names the variant too.
pub mod host_error_codes {
    pub const DENIED: i64 = -32051;
    pub const CANCELLED: i64 = -32052;
    pub const NO_ACTIVE_RUN: i64 = -32053;
    pub const TIMEOUT: i64 = -32054;
    pub const BUDGET_EXHAUSTED: i64 = -32055;
    pub const INVALID: i64 = -32602;
    pub const UNSUPPORTED: i64 = -32056;
    pub const FAILED: i64 = -32057;
}

/// Contract host error → the JSON-RPC error a server receives.
pub fn host_error_to_wire(error: &HostError) -> WireError {
    use host_error_codes as c;
    let code = match error {
        HostError::Denied(_) => c::DENIED,
        HostError::Cancelled => c::CANCELLED,
        HostError::NoActiveRun => c::NO_ACTIVE_RUN,
        HostError::Timeout => c::TIMEOUT,
        HostError::BudgetExhausted(_) => c::BUDGET_EXHAUSTED,
        HostError::Invalid(_) => c::INVALID,
        HostError::Unsupported(_) => c::UNSUPPORTED,
        HostError::Failed(_) => c::FAILED,
    };
    let mut wire = WireError::new(code, error.describe());
    wire.data = Some(json!({ "kind": error.kind() }));
    wire
}

/// What one server shares with the handler serving its requests (and with its tools).
pub(crate) struct ServerLink {
    /// `mcp:{name}`, the source in audits and events.
    pub(crate) source: String,
    /// What the server is (its launch spec, URL or package): its host-tool
    /// calls are judged as its own, bound to it.
    pub(crate) identity: Identity,
    services: std::sync::Arc<HostServices>,
    pub(crate) list_changed: tokio::sync::Notify,
    /// This server's `tools/call`s in flight, oldest first.
    active: Mutex<Vec<InFlight>>,
    next_call: AtomicU64,
    /// Sampling and elicitation requests of this server waiting for the host.
    waits: HostWaits,
    /// The server advertised `io.artec.clat/hostServices` at a version this host implements.
    opted_in: AtomicBool,
    /// Why a server that advertised the capability was not opted in.
    declined: OnceLock<String>,
    /// The negotiated protocol version (set once connected).
    protocol_version: OnceLock<String>,
}

/// A `tools/call` in flight: its tag, its run, a token that ends the host
/// requests made for it when the call ends, and the log lines it has had.
struct InFlight {
    tag: u64,
    run: RunContext,
    ended: CancellationToken,
    log_lines: u32,
}

impl ServerLink {
    pub(crate) fn new(name: &str, identity: &Identity, services: &std::sync::Arc<HostServices>) -> ServerLink {
        ServerLink {
            source: format!("mcp:{name}"),
            identity: identity.clone(),
            services: std::sync::Arc::clone(services),
            list_changed: tokio::sync::Notify::new(),
            active: Mutex::default(),
            next_call: AtomicU64::new(0),
            waits: HostWaits::default(),
            opted_in: AtomicBool::new(false),
            declined: OnceLock::new(),
            protocol_version: OnceLock::new(),
        }
    }

    /// The session is open: what was negotiated decides what the server may ask.
    pub(crate) fn connected(&self, protocol_version: &str, server_capabilities: &Value) {
        let _ = self.protocol_version.set(protocol_version.to_string());
        let advertised = server_capabilities.pointer("/experimental").and_then(|e| e.get(HOST_SERVICES_CAPABILITY));
        let Some(advertised) = advertised.filter(|c| !c.is_null()) else { return };
        let version = advertised.get("version").and_then(Value::as_str);
        match version {
            Some(version) if HOST_SERVICES_VERSIONS.contains(&version) => self.opted_in.store(true, Ordering::SeqCst),
            _ => {
                let said = version.map_or("no version".to_string(), |v| format!("version {v:?}"));
                let _ = self.declined.set(format!(
                    "it advertises {HOST_SERVICES_CAPABILITY} with {said}, which this CLAT does not implement \
                     (it implements {}); its host-service requests are refused",
                    HOST_SERVICES_VERSIONS.join(", ")
                ));
            }
        }
    }

    /// Why the server's host-services capability was not accepted, if it advertised one.
    pub(crate) fn declined(&self) -> Option<&str> {
        self.declined.get().map(String::as_str)
    }

    pub(crate) fn opted_in(&self) -> bool {
        self.opted_in.load(Ordering::SeqCst)
    }

    pub(crate) fn host_requests_pending(&self) -> usize {
        self.waits.pending()
    }

    /// Record a `tools/call` in flight for `run` until the returned guard drops.
    pub(crate) fn enter_call(&self, run: &RunContext) -> ActiveCall<'_> {
        let call = self.next_call.fetch_add(1, Ordering::SeqCst);
        let ended = CancellationToken::new();
        let in_flight = InFlight { tag: call, run: run.clone(), ended: ended.clone(), log_lines: 0 };
        self.active.locked().push(in_flight);
        ActiveCall { link: self, call, ended }
    }

    /// The call a server request belongs to. When the transport could tell
    /// (`related`: the tag of the call whose stream or `input_required` result
    /// carried it), that call, or none if it has ended. Otherwise the server's
    /// call in flight; when calls of more than one run are in flight, the
    /// request cannot be told apart (stdio carries no stream per call), so it
    /// is refused rather than judged under another run's mode, approver and
    /// budget.
    fn call_of(&self, related: Option<u64>) -> Result<Option<(RunContext, CancellationToken)>, HostError> {
        let active = self.active.locked();
        if let Some(tag) = related {
            return Ok(active.iter().find(|c| c.tag == tag).map(|c| (c.run.clone(), c.ended.clone())));
        }
        let mut runs: Vec<&str> = active.iter().map(|c| c.run.run_id()).collect();
        runs.sort_unstable();
        runs.dedup();
        if runs.len() > 1 {
            return Err(HostError::Unsupported(format!(
                "calls of {} runs are in flight on {}; CLAT cannot tell which run this request belongs to, so it \
                 is refused (retry it when only one run uses this server)",
                runs.len(),
                self.source
            )));
        }
        Ok(active.last().map(|c| (c.run.clone(), c.ended.clone())))
    }

    /// `notifications/progress` for the call whose tag is its token: a `progress` event in that call's run.
    fn progress(&self, params: &Value) {
        let Some(tag) = params["progressToken"].as_u64() else { return };
        let Some(progress) = params["progress"].as_f64() else { return };
        let active = self.active.locked();
        let Some(call) = active.iter().find(|c| c.tag == tag) else { return };
        let message = params["message"]
            .as_str()
            .map(|m| crate::redact::redact(m).chars().take(PLUGIN_LOG_LINE_MAX_CHARS).collect());
        call.run.emit(RunEventKind::Progress {
            source: self.source.clone(),
            progress,
            total: params["total"].as_f64(),
            message,
        });
    }

    /// `notifications/message`: a log line of the server, in the run of its
    /// call in flight (stdio relates a notification to no call: when calls of
    /// several runs are in flight, or none, it goes to the log only).
    fn log_message(&self, params: &Value) {
        let level = match params["level"].as_str().unwrap_or("info") {
            "debug" => LogLevel::Debug,
            "info" | "notice" => LogLevel::Info,
            "warning" => LogLevel::Warn,
            _ => LogLevel::Error,
        };
        let data = match &params["data"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let line = match params["logger"].as_str() {
            Some(logger) => format!("{logger}: {data}"),
            None => data,
        };
        let counted = {
            let mut active = self.active.locked();
            let one_run = active.windows(2).all(|pair| pair[0].run.run_id() == pair[1].run.run_id());
            match active.last_mut() {
                Some(call) if one_run => {
                    call.log_lines = call.log_lines.saturating_add(1);
                    Some((call.log_lines, call.run.clone()))
                }
                _ => None,
            }
        };
        match counted {
            Some((nth, run)) => self.services.log_in_call(nth, level, &line, &self.source, Some(&run)),
            None => self.services.log(level, &line, &self.source, None),
        }
    }

    /// Serve one request; it ends (as cancelled) if the call it belongs to ends first.
    async fn serve(&self, method: &str, params: Option<Value>, related: Option<u64>) -> Result<Value, WireError> {
        let call = self.call_of(related).map_err(|e| host_error_to_wire(&e))?;
        let ended = call.as_ref().map(|(_, ended)| ended.clone()).unwrap_or_default();
        let run = call.map(|(run, _)| run);
        tokio::select! {
            answer = self.serve_in(method, params, run) => answer,
            _ = ended.cancelled() => Err(host_error_to_wire(&HostError::Cancelled)),
        }
    }

    async fn serve_in(&self, method: &str, params: Option<Value>, run: Option<RunContext>) -> Result<Value, WireError> {
        let params = params.unwrap_or_else(|| json!({}));
        let invalid = |e: String| host_error_to_wire(&HostError::Invalid(e));
        match method {
            "sampling/createMessage" => {
                let request = sampling_request_from_json(&params).map_err(|e| invalid(e.to_string()))?;
                let _waiting = self.waits.enter();
                let result = self.services.create_message(&request, &self.source, run.as_ref()).await;
                result.map(|r| sampling_result_to_json(&r)).map_err(|e| host_error_to_wire(&e))
            }
            "elicitation/create" => {
                let version = self.protocol_version.get().map(String::as_str).unwrap_or("");
                if version < ELICITATION_SINCE {
                    return Err(host_error_to_wire(&HostError::Unsupported(format!(
                        "elicitation needs protocol {ELICITATION_SINCE} or newer; this session speaks {version:?}"
                    ))));
                }
                let form = elicitation_form_from_json(&params).map_err(|e| {
                    host_error_to_wire(&match e {
                        FormShapeError::Unsupported(m) => HostError::Unsupported(m),
                        FormShapeError::Invalid(m) => HostError::Invalid(m),
                    })
                })?;
                let _waiting = self.waits.enter();
                let result = self.services.elicit(&form, &self.source, run.as_ref()).await;
                result.map(|r| elicitation_result_to_json(&r)).map_err(|e| host_error_to_wire(&e))
            }
            "io.artec.clat/context/get" if self.opted_in() => {
                Ok(json!({ "snapshot": context_snapshot_to_json(&self.services.snapshot(run.as_ref())) }))
            }
            "io.artec.clat/tools/call" if self.opted_in() => {
                let (tool, arguments) = host_tool_call_from_json(&params).map_err(|e| invalid(e.to_string()))?;
                let result =
                    self.services.call_tool(tool, &arguments, &self.source, &self.identity, run.as_ref()).await;
                result.map(|o| tool_output_to_json(&o)).map_err(|e| host_error_to_wire(&e))
            }
            _ => Err(WireError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))),
        }
    }
}

/// Removes a call from its server's active calls when it ends (or is
/// dropped), and ends the host requests still being served for it.
pub(crate) struct ActiveCall<'a> {
    link: &'a ServerLink,
    call: u64,
    ended: CancellationToken,
}

impl ActiveCall<'_> {
    /// The tag the call is sent with, so the server requests the transport
    /// relates to it are judged under its run.
    pub(crate) fn tag(&self) -> u64 {
        self.call
    }
}

impl Drop for ActiveCall<'_> {
    fn drop(&mut self) {
        self.ended.cancel();
        self.link.active.locked().retain(|c| c.tag != self.call);
    }
}

/// The connection's handler: server requests go to `ServerLink::serve`;
/// `notifications/tools/list_changed` wakes the re-listing task; progress and
/// log messages go to the run of the call they concern.
pub(crate) struct ServerEvents(pub(crate) std::sync::Arc<ServerLink>);

#[async_trait]
impl ServerRequests for ServerEvents {
    async fn handle(&self, method: &str, params: Option<Value>, related: Option<u64>) -> Result<Value, WireError> {
        self.0.serve(method, params, related).await
    }

    fn notification(&self, method: &str, params: Option<&Value>) {
        match (method, params) {
            ("notifications/tools/list_changed", _) => self.0.list_changed.notify_one(),
            ("notifications/progress", Some(params)) => self.0.progress(params),
            ("notifications/message", Some(params)) => self.0.log_message(params),
            _ => {}
        }
    }
}
