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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use clat_mcp::Session;

use crate::extension::ExtensionState;
use crate::limits::{RESTART_BACKOFF_FIRST, RESTART_WINDOW, RESTARTS_MAX};
use crate::registry::ToolError;
use crate::run::{RunContext, RunEventKind};
use crate::sync::{Unpoisoned, UnpoisonedRw};

/// A server's live session, its restart history and what the scope should show of it.
pub(crate) struct Supervisor {
    /// The live session; a restart replaces it.
    session: RwLock<Arc<Session>>,
    /// Held while a restart is under way (calls that need the server wait for it).
    restarting: tokio::sync::Mutex<History>,
    shown: std::sync::Mutex<Shown>,
    /// Set by `close`: the server is never started again.
    closed: AtomicBool,
}

#[derive(Default)]
struct History {
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
    /// A server whose `session` started just now.
    pub(crate) fn started_now(session: Session) -> Supervisor {
        let history = History { last_start: Some(Instant::now()), recent: VecDeque::new() };
        Supervisor {
            session: RwLock::new(Arc::new(session)),
            restarting: tokio::sync::Mutex::new(history),
            shown: Default::default(),
            closed: AtomicBool::new(false),
        }
    }

    /// The live session (a restart replaces it).
    pub(crate) fn session(&self) -> Arc<Session> {
        Arc::clone(&self.session.read_locked())
    }

    /// Whether the server was closed with its scope.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Close the live session; the server is never started again. A restart
    /// under way is waited for, so that its session is the one closed.
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _restarting = self.restarting.lock().await;
        self.session().close().await;
    }

    pub(crate) fn shown(&self) -> Shown {
        self.shown.locked().clone()
    }

    fn show(&self, update: impl FnOnce(&mut Shown)) {
        update(&mut self.shown.locked());
    }
}

impl Supervisor {
    /// The session a call should use: the live one, or — when it closed after
    /// the server was ready — a restarted one (waiting out the back-off,
    /// racing the run's cancellation). The error says why there is none.
    /// `name` is the server's; `open` starts it again (spawn or contact and handshake).
    pub(crate) async fn live_session<Open>(
        &self,
        name: &str,
        run: &RunContext,
        open: impl FnOnce() -> Open,
    ) -> Result<Arc<Session>, String>
    where
        Open: Future<Output = Result<Session, String>>,
    {
        let current = self.session();
        if current.closed_reason().is_none() {
            return Ok(current);
        }
        let mut history = self.restarting.lock().await;
        // Another call may have restarted it while this one waited.
        let current = self.session();
        let Some(reason) = current.closed_reason() else { return Ok(current) };
        if self.is_closed() {
            return Err(format!("server {} was closed with its project scope", name));
        }
        if let Some(given_up) = self.shown().given_up {
            return Err(given_up);
        }
        let now = Instant::now();
        history.recent.retain(|t| now.duration_since(*t) < RESTART_WINDOW);
        if history.recent.len() >= RESTARTS_MAX {
            let given_up = format!(
                "server {} stopped ({reason}) after {RESTARTS_MAX} restarts within {} s; it stays failed",
                name,
                RESTART_WINDOW.as_secs()
            );
            self.show(|s| {
                s.state = Some(ExtensionState::Failed);
                s.given_up = Some(given_up.clone());
                s.last_reason = Some(reason.clone());
            });
            return Err(given_up);
        }
        let backoff = RESTART_BACKOFF_FIRST * 2u32.pow(history.recent.len() as u32);
        let earliest = history.last_start.map_or(now, |started| started + backoff);
        self.show(|s| s.state = Some(ExtensionState::Restarting));
        tokio::select! {
            _ = tokio::time::sleep_until(earliest.into()) => {}
            _ = run.cancel_token().cancelled() => {
                self.show(|s| s.state = Some(ExtensionState::Failed));
                return Err(format!("server {} stopped ({reason}); the call was cancelled before it restarted", name));
            }
        }
        // The old process is gone or going: reap it and its group before the new one starts.
        current.close().await;
        let started = Instant::now();
        history.recent.push_back(started);
        history.last_start = Some(started);
        let attempt = history.recent.len() as u32;
        match self.restart(name, run, &reason, attempt, open).await {
            Ok(session) => Ok(session),
            Err(why) => {
                self.show(|s| {
                    s.state = Some(ExtensionState::Failed);
                    s.last_reason = Some(why.clone());
                });
                Err(why)
            }
        }
    }

    /// Start the server again, list its tools, and put the new session in place.
    async fn restart<Open>(
        &self,
        name: &str,
        run: &RunContext,
        reason: &str,
        attempt: u32,
        open: impl FnOnce() -> Open,
    ) -> Result<Arc<Session>, String>
    where
        Open: Future<Output = Result<Session, String>>,
    {
        let failed = |why: String| format!("server {name} stopped ({reason}) and could not be restarted: {why}");
        let session = open().await.map_err(failed)?;
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
        *self.session.write_locked() = Arc::new(session);
        let restarts = self.shown().restarts + 1;
        self.show(|s| {
            s.state = Some(ExtensionState::Ready);
            s.restarts = restarts;
            s.last_reason = Some(reason.to_string());
            s.offered = Some(offered);
        });
        tracing::info!("server {} restarted ({reason}); restart {attempt} within the window", name);
        run.emit(RunEventKind::ExtensionRestarted {
            extension: format!("mcp:{}", name),
            restarts,
            reason: reason.to_string(),
        });
        Ok(self.session())
    }

    /// Whether the server still offers `tool` (always, until it restarted).
    pub(crate) fn check_offered(&self, name: &str, tool: &str) -> Result<(), ToolError> {
        match self.shown().offered {
            Some(offered) if !offered.contains(tool) => Err(ToolError(anyhow::anyhow!(
                "server {} no longer offers tool {tool:?} since it restarted; restart CLAT to refresh its tools",
                name
            ))),
            _ => Ok(()),
        }
    }
}
