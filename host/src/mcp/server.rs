//! One MCP server as an extension of the scope: connecting it (spawn or
//! contact, then the handshake of its era, through `clat-mcp`), its redacted
//! stderr tail, its status, context notifications to an opted-in stdio
//! server, and closing it. Its tools are in `tools.rs`, its system prompts in
//! `prompts.rs`, what it asks of CLAT in `host_services.rs`, its live session
//! and supervised restart in `supervisor.rs`.

use std::sync::{Arc, Mutex};

use clat_mcp::{ClientError, ClientInfo, Era, Opening, Session, StderrSink, Target};
use serde_json::{Value, json};

use super::host_services::{ServerEvents, ServerLink, client_capabilities};
use super::sources::{ConfiguredServer, ServerOptions};
use super::supervisor::Supervisor;
use crate::contract::ContextSnapshot;
use crate::contract::json::context_snapshot_to_json;
use crate::extension::ExtensionState;
use crate::limits::{CONNECT_FAILURE_TAIL_WAIT, LEGACY_HANDSHAKE_TIMEOUT};
use crate::redact::{OutputTail, Redactor};
use crate::registry::ToolError;
use crate::run::RunContext;
use crate::services::HostServices;
use crate::sync::Unpoisoned;

pub(crate) type SharedTail = Arc<Mutex<OutputTail>>;

struct TailSink(SharedTail);

impl StderrSink for TailSink {
    fn write(&self, bytes: &[u8]) {
        self.0.locked().push_bytes(bytes);
    }
}

/// Why a server could not be connected, with the last lines it wrote (redacted).
#[derive(Debug, Clone)]
pub struct ConnectFailure {
    pub reason: String,
    pub stderr_tail: Vec<String>,
}

/// A connected, initialized server.
pub struct McpServer {
    pub(crate) name: String,
    pub(crate) target: Target,
    /// Its entry's timeouts, tool filter and secrets.
    pub(crate) options: ServerOptions,
    pub(crate) tail: SharedTail,
    pub(crate) link: Arc<ServerLink>,
    /// The latest context for an opted-in server (`io.artec.clat/context/changed`), coalesced.
    context: tokio::sync::watch::Sender<Option<Value>>,
    /// The server's own tool names already registered (re-listing adds only new ones).
    pub(crate) registered: Mutex<std::collections::HashSet<String>>,
    /// The definitions of its last listing that its tool filter offers, as listed (kept in the home's listings).
    pub(crate) listed: Mutex<Vec<crate::contract::ToolSpec>>,
    /// The live session and its restarts: when, how many, why, and what the server offers since.
    pub(crate) supervisor: Supervisor,
    /// The project's tool pins its listings are judged against (`pins.rs`); set before its first listing.
    pub(crate) pins: std::sync::OnceLock<crate::policy::pins::ToolPins>,
}

impl McpServer {
    /// Spawn (or contact), initialize and keep a server; a failure carries the
    /// reason and the stderr tail.
    pub async fn connect(
        configured: &ConfiguredServer,
        services: &Arc<HostServices>,
    ) -> Result<Arc<McpServer>, ConnectFailure> {
        let ConfiguredServer { name, target, options, identity } = configured;
        let redactor = Redactor::with_secrets(options.secrets.iter().cloned());
        let tail: SharedTail = Arc::new(Mutex::new(OutputTail::with_redactor(redactor)));
        let link = Arc::new(ServerLink::new(name, identity, services));
        let session = open_session(target, options, &link, &tail).await?;
        let (context, _) = tokio::sync::watch::channel(None);
        let server = Arc::new(McpServer {
            name: name.to_string(),
            target: target.clone(),
            options: options.clone(),
            tail,
            link,
            context,
            registered: Mutex::default(),
            listed: Mutex::default(),
            supervisor: Supervisor::started_now(session),
            pins: std::sync::OnceLock::new(),
        });
        // Context notifications go to opted-in stdio servers; HTTP peers ask with context/get.
        if server.link.opted_in() && matches!(target, Target::Stdio(_)) {
            server.spawn_context_sender();
        }
        Ok(server)
    }

    /// How many of this server's sampling and elicitation requests wait on the host now.
    pub fn host_requests_pending(&self) -> usize {
        self.link.host_requests_pending()
    }

    /// Whether the server opted into CLAT's host services.
    pub fn opted_in(&self) -> bool {
        self.link.opted_in()
    }

    /// Offer the latest context (`None`: the run ended) to an opted-in server:
    /// never blocks, and a newer snapshot replaces one not sent yet.
    pub fn notify_context(&self, snapshot: Option<&ContextSnapshot>) {
        if self.opted_in() {
            self.context.send_replace(Some(snapshot.map_or(Value::Null, context_snapshot_to_json)));
        }
    }

    fn spawn_context_sender(self: &Arc<Self>) {
        let server = Arc::downgrade(self);
        let mut latest = self.context.subscribe();
        tokio::spawn(async move {
            while latest.changed().await.is_ok() {
                let Some(snapshot) = latest.borrow_and_update().clone() else { continue };
                let Some(server) = server.upgrade() else { return };
                let params = json!({ "snapshot": snapshot });
                let session = server.session();
                if let Err(e) = session.notify("io.artec.clat/context/changed", Some(params)).await {
                    // A restart brings a new session; the next snapshot goes to it.
                    tracing::debug!("server {}: context/changed not sent: {e}", server.name);
                }
            }
        });
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The live session (a restart replaces it).
    pub fn session(&self) -> Arc<Session> {
        self.supervisor.session()
    }

    /// The session a call should use: the live one, or — when it closed after
    /// the server was ready — a restarted one (`supervisor.rs`). The error
    /// says why there is none.
    pub(crate) async fn live_session(&self, run: &RunContext) -> Result<Arc<Session>, String> {
        let open =
            || async { open_session(&self.target, &self.options, &self.link, &self.tail).await.map_err(|f| f.reason) };
        self.supervisor.live_session(&self.name, run, open).await
    }

    /// Whether the server still offers `tool` (always, until it restarted).
    pub(crate) fn check_offered(&self, tool: &str) -> Result<(), ToolError> {
        self.supervisor.check_offered(&self.name, tool)
    }

    /// Bring a status up to date with the restarts since it was recorded, and
    /// with a stop not yet followed by a restart (`failed`, with why, until the
    /// next call that needs the server starts it again).
    pub fn update_status(&self, status: &mut crate::extension::ExtensionStatus) {
        let shown = self.supervisor.shown();
        if let Some(state) = shown.state {
            status.state = state;
        }
        status.restarts = shown.restarts;
        status.oauth = super::sources::target_login(&self.target);
        status.last_stop = shown.last_reason.map(|r| self.redact(&r));
        if let Some(given_up) = shown.given_up.map(|g| self.redact(&g))
            && !status.problems.contains(&given_up)
        {
            status.problems.push(given_up);
        }
        // A server that stopped since shows so at once, though it restarts only when a call needs it.
        if status.state == ExtensionState::Ready
            && !self.supervisor.is_closed()
            && let Some(reason) = self.session().closed_reason()
        {
            status.state = ExtensionState::Failed;
            status.last_stop = Some(self.redact(&reason));
        }
        status.output_tail = self.stderr_tail();
    }

    /// The negotiated protocol version and era, e.g. `2026-07-28 (modern)`.
    pub fn protocol(&self) -> String {
        let session = self.session();
        let era = match session.era {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        };
        format!("{} ({era})", session.protocol_version)
    }

    /// `text` as any diagnostic of this server may show it: key shapes and its
    /// configured secrets redacted.
    pub fn redact(&self, text: &str) -> String {
        self.tail.locked().redactor().redact(text)
    }

    /// The last lines the server wrote to stderr (redacted).
    pub fn stderr_tail(&self) -> Vec<String> {
        self.tail.locked().lines()
    }

    /// The server's process group, for a subprocess.
    pub fn process_group(&self) -> Option<i32> {
        self.session().process_group()
    }

    /// Close the connection and reap the server; it is never started again.
    pub async fn close(&self) {
        self.supervisor.close().await;
    }
}

/// Spawn (or contact) the server and run the handshake of its era; a
/// `startup_timeout_sec` raises the legacy handshake's bound with it. The
/// stderr tail and the inbound link are the server's own, kept across restarts.
pub(crate) async fn open_session(
    target: &Target,
    options: &ServerOptions,
    link: &Arc<ServerLink>,
    tail: &SharedTail,
) -> Result<Session, ConnectFailure> {
    let client = ClientInfo { name: "clat".into(), version: env!("CARGO_PKG_VERSION").into() };
    let sink = Arc::new(TailSink(Arc::clone(tail)));
    let events = Arc::new(ServerEvents(Arc::clone(link)));
    let handshake = options.startup_timeout.unwrap_or(LEGACY_HANDSHAKE_TIMEOUT);
    // A stdio server known to be legacy starts once: no probe's process first (`eras.rs`).
    let recalled = options.eras.as_ref().map(|eras| eras.recall());
    let known_legacy = recalled.as_ref().is_some_and(|recalled| recalled.known_legacy());
    // Its legacy handshake failing (or the start stopped by its deadline) forgets the era: the next start probes.
    let trusted = options.eras.as_ref().filter(|_| known_legacy).map(|eras| eras.trusting_start());
    let opening = Opening::new(events, client, client_capabilities())
        .stderr(sink)
        .handshake(handshake)
        .known_legacy(known_legacy);
    let connected = Session::connect(target, opening).await;
    match connected {
        Ok(session) => {
            if let Some(trusted) = trusted {
                trusted.connected();
            }
            if let Some(recalled) = &recalled {
                recalled.learned(session.era);
            }
            link.connected(&session.protocol_version, &session.server_capabilities);
            Ok(session)
        }
        Err(e) => {
            drop(trusted);
            // Give the server a moment to write why it failed (once something arrived, its reader has caught up).
            let waited = std::time::Instant::now();
            while tail.locked().lines().is_empty() && waited.elapsed() < CONNECT_FAILURE_TAIL_WAIT {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            let mut failure = connect_failure(&e, tail);
            if matches!(&e, ClientError::Timeout { method, .. } if method == "initialize")
                && let Some(hint) = slow_start_hint(target)
            {
                failure.reason = format!("{}; {hint}", failure.reason);
            }
            Err(failure)
        }
    }
}

/// What to do about a server that did not start in time, when its command
/// fetches a package on its first start (`npx`, `uvx`, …).
pub(crate) fn slow_start_hint(target: &Target) -> Option<String> {
    let Target::Stdio(spec) = target else { return None };
    let program = std::path::Path::new(&spec.command).file_name()?.to_str()?;
    let program = program.strip_suffix(".cmd").unwrap_or(program);
    let fetcher = ["npx", "uvx", "bunx", "pnpx", "pipx", "dlx"].contains(&program)
        || (["pnpm", "yarn", "bun"].contains(&program) && spec.args.first().is_some_and(|a| a == "dlx" || a == "x"));
    fetcher.then(|| {
        format!(
            "`{program}` downloads the package on its first start, which can take longer: `clat mcp` waits up to {} s \
             for it (and warms it for later), or give the server more time with `startup_timeout_sec` in mcp.json \
             (at most {}) or {}=MILLISECONDS",
            crate::limits::WATCHED_START_TIMEOUT.as_secs(),
            crate::limits::STARTUP_TIMEOUT_MAX.as_secs(),
            super::sources::STARTUP_TIMEOUT_ENV,
        )
    })
}

/// A connection failure with the server's last stderr lines (redacted).
fn connect_failure(error: &ClientError, tail: &SharedTail) -> ConnectFailure {
    let tail = tail.locked();
    let reason = match error {
        ClientError::Auth { server, error: clat_mcp::auth::AuthError::LoginRequired } => {
            format!("it needs an OAuth login: run `clat mcp login {server}`")
        }
        ClientError::Auth { server, error: clat_mcp::auth::AuthError::NotOAuth } => format!(
            "it refused the request (401 Unauthorized) and publishes no OAuth metadata: give its credentials in \
             mcp.json `headers`, or run `clat mcp login {server}` if it uses OAuth"
        ),
        other => other.to_string(),
    };
    ConnectFailure { reason: tail.redactor().redact(&reason), stderr_tail: tail.lines() }
}

#[async_trait::async_trait]
impl crate::extension::Extension for McpServer {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> crate::extension::ExtensionKind {
        super::sources::target_kind(&self.target)
    }

    fn refresh_status(&self, status: &mut crate::extension::ExtensionStatus) {
        self.update_status(status);
    }

    fn notify_context(&self, snapshot: Option<&ContextSnapshot>) {
        McpServer::notify_context(self, snapshot);
    }

    async fn close(&self) {
        McpServer::close(self).await;
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
