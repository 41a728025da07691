//! Supervised restart of an MCP server (beyond the spec). A server whose
//! connection closed after it was ready — its process exited, or it broke the
//! stdio framing — is started again by the next call that needs it, with
//! back-off (`RESTART_BACKOFF_FIRST`, doubling) and at most
//! `RESTARTS_MAX` restarts within `RESTART_WINDOW`; past that it stays
//! failed with the reason. The call that was in flight when it died has
//! already failed: nothing is replayed, a tool may not be idempotent.
//!
//! The registry is frozen, so its tools keep their registered names: a tool
//! that the restarted server no longer lists fails with a clear error, and
//! new tools are not added. Each restart is a run event
//! (`extension_restarted`) and shows in the extension's status.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use clat_mcp::Session;

use super::server::{McpServer, open_session};
use crate::extension::ExtensionState;
use crate::limits::{RESTART_BACKOFF_FIRST, RESTART_WINDOW, RESTARTS_MAX};
use crate::registry::ToolError;
use crate::run::{RunContext, RunEventKind};
use crate::sync::Unpoisoned;

/// A server's restart history and what the scope should show of it.
#[derive(Default)]
pub(crate) struct Supervisor {
    /// Held while a restart is under way (calls that need the server wait for it).
    restarting: tokio::sync::Mutex<History>,
    shown: std::sync::Mutex<Shown>,
}

#[derive(Default)]
pub(crate) struct History {
    /// When the session in use was started.
    last_start: Option<Instant>,
    /// Restarts within the window, oldest first.
    recent: VecDeque<Instant>,
}

/// What the extension's status shows.
#[derive(Default, Clone)]
pub(crate) struct Shown {
    pub(crate) state: Option<ExtensionState>,
    pub(crate) restarts: u32,
    pub(crate) last_reason: Option<String>,
    /// After a restart: the server's own tool names it lists now.
    pub(crate) offered: Option<HashSet<String>>,
    /// Set when it stays failed for the rest of the scope.
    pub(crate) given_up: Option<String>,
}

impl Supervisor {
    /// The history of a server started just now.
    pub(crate) fn started_now() -> Supervisor {
        let history = History { last_start: Some(Instant::now()), recent: VecDeque::new() };
        Supervisor { restarting: tokio::sync::Mutex::new(history), shown: Default::default() }
    }

    pub(crate) async fn lock(&self) -> tokio::sync::MutexGuard<'_, History> {
        self.restarting.lock().await
    }

    pub(crate) fn shown(&self) -> Shown {
        self.shown.locked().clone()
    }

    fn show(&self, update: impl FnOnce(&mut Shown)) {
        update(&mut self.shown.locked());
    }
}

impl McpServer {
    /// The session a call should use: the live one, or — when it closed after
    /// the server was ready — a restarted one (waiting out the back-off,
    /// racing the run's cancellation). The error says why there is none.
    pub(crate) async fn live_session(&self, run: &RunContext) -> Result<Arc<Session>, String> {
        let current = self.session();
        if current.closed_reason().is_none() {
            return Ok(current);
        }
        let mut history = self.supervisor.lock().await;
        // Another call may have restarted it while this one waited.
        let current = self.session();
        let Some(reason) = current.closed_reason() else { return Ok(current) };
        if self.closed.load(Ordering::SeqCst) {
            return Err(format!("server {} was closed with its project scope", self.name));
        }
        if let Some(given_up) = self.supervisor.shown().given_up {
            return Err(given_up);
        }
        let now = Instant::now();
        history.recent.retain(|t| now.duration_since(*t) < RESTART_WINDOW);
        if history.recent.len() >= RESTARTS_MAX {
            let given_up = format!(
                "server {} stopped ({reason}) after {RESTARTS_MAX} restarts within {} s; it stays failed",
                self.name,
                RESTART_WINDOW.as_secs()
            );
            self.supervisor.show(|s| {
                s.state = Some(ExtensionState::Failed);
                s.given_up = Some(given_up.clone());
                s.last_reason = Some(reason.clone());
            });
            return Err(given_up);
        }
        let backoff = RESTART_BACKOFF_FIRST * 2u32.pow(history.recent.len() as u32);
        let earliest = history.last_start.map_or(now, |started| started + backoff);
        self.supervisor.show(|s| s.state = Some(ExtensionState::Restarting));
        tokio::select! {
            _ = tokio::time::sleep_until(earliest.into()) => {}
            _ = run.cancel_token().cancelled() => {
                self.supervisor.show(|s| s.state = Some(ExtensionState::Failed));
                return Err(format!("server {} stopped ({reason}); the call was cancelled before it restarted", self.name));
            }
        }
        // The old process is gone or going: reap it and its group before the new one starts.
        current.close().await;
        let started = Instant::now();
        history.recent.push_back(started);
        history.last_start = Some(started);
        let attempt = history.recent.len() as u32;
        match self.restart(run, &reason, attempt).await {
            Ok(session) => Ok(session),
            Err(why) => {
                self.supervisor.show(|s| {
                    s.state = Some(ExtensionState::Failed);
                    s.last_reason = Some(why.clone());
                });
                Err(why)
            }
        }
    }

    /// Start the server again, list its tools, and put the new session in place.
    async fn restart(&self, run: &RunContext, reason: &str, attempt: u32) -> Result<Arc<Session>, String> {
        let failed = |why: String| format!("server {} stopped ({reason}) and could not be restarted: {why}", self.name);
        let session =
            open_session(&self.target, &self.options, &self.link, &self.tail).await.map_err(|f| failed(f.reason))?;
        let listing = match session.list_tools().await {
            Ok(listing) => listing,
            Err(e) => {
                session.close().await;
                return Err(failed(format!("tools/list failed: {e}")));
            }
        };
        let offered: HashSet<String> =
            listing.tools.iter().filter_map(|t| t.get("name").and_then(|n| n.as_str())).map(str::to_string).collect();
        // The old session was closed and reaped above; calls still holding it see it closed.
        drop(self.replace_session(session));
        let restarts = self.supervisor.shown().restarts + 1;
        self.supervisor.show(|s| {
            s.state = Some(ExtensionState::Ready);
            s.restarts = restarts;
            s.last_reason = Some(reason.to_string());
            s.offered = Some(offered);
        });
        tracing::info!("server {} restarted ({reason}); restart {attempt} within the window", self.name);
        run.emit(RunEventKind::ExtensionRestarted {
            extension: format!("mcp:{}", self.name),
            restarts,
            reason: reason.to_string(),
        });
        Ok(self.session())
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
        status.oauth = self.target.oauth_status();
        status.last_stop = shown.last_reason.map(|r| self.redact(&r));
        if let Some(given_up) = shown.given_up.map(|g| self.redact(&g))
            && !status.problems.contains(&given_up)
        {
            status.problems.push(given_up);
        }
        // A server that stopped since shows so at once, though it restarts only when a call needs it.
        if status.state == ExtensionState::Ready
            && !self.closed.load(Ordering::SeqCst)
            && let Some(reason) = self.session().closed_reason()
        {
            status.state = ExtensionState::Failed;
            status.last_stop = Some(self.redact(&reason));
        }
        status.output_tail = self.stderr_tail();
    }

    /// Whether the server still offers `tool` (always, until it restarted).
    pub(crate) fn check_offered(&self, tool: &str) -> Result<(), ToolError> {
        match self.supervisor.shown().offered {
            Some(offered) if !offered.contains(tool) => Err(ToolError(anyhow::anyhow!(
                "server {} no longer offers tool {tool:?} since it restarted; restart CLAT to refresh its tools",
                self.name
            ))),
            _ => Ok(()),
        }
    }
}
