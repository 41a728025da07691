//! The connected client as a call sees it (`Peer`): who it is and what it
//! declared, the call's progress and log lines, and the server's requests to
//! it — a legacy client is sent a request on the call's stream, a modern one is
//! asked in an `input_required` round (`rounds.rs`) — each answered within
//! `SERVE_CLIENT_REQUEST_TIMEOUT`.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{INTERNAL_ERROR, Message, RequestId, WireError};
use crate::limits::SERVE_CLIENT_REQUEST_TIMEOUT;
use crate::protocol::ClientInfo;
use crate::sync::lock;

use super::{Outlet, Session, SessionRef, rounds};

/// The connected client, as a call sees it: who it is, what it declared it
/// can do, and requests to it (`elicitation/create`, …), each answered within
/// `SERVE_CLIENT_REQUEST_TIMEOUT` or failed.
#[derive(Clone)]
pub struct Peer {
    /// Weak: a host that keeps a `Peer` does not keep the session alive.
    pub(super) session: std::sync::Weak<Session>,
    /// Who the client is and what it declared (shared by its calls, never copied per call).
    pub(super) client: Arc<(ClientInfo, Value)>,
    /// Where the call's own messages go (over HTTP: that call's event stream).
    pub(super) outlet: Outlet,
    /// The token the client asked this call's progress under (`_meta.progressToken`).
    pub(super) progress_token: Option<Value>,
    /// A modern (2026-07-28) request: the client is never sent a request (it is asked in `input_required`
    /// rounds, `rounds`), and gets log lines only at the level the request asked for (`modern_log_level`; none:
    /// no log lines).
    pub(super) modern: bool,
    pub(super) modern_log_level: Option<String>,
    pub(super) rounds: Option<Arc<rounds::CallRounds>>,
}

/// MCP's log levels, least severe first.
const LOG_LEVELS: [&str; 8] = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

impl Peer {
    /// The session the request came in.
    pub fn session(&self) -> SessionRef {
        SessionRef(self.session.clone())
    }

    pub fn info(&self) -> &ClientInfo {
        &self.client.0
    }

    /// The client's `capabilities`, as it declared them in `initialize`.
    pub fn capabilities(&self) -> &Value {
        &self.client.1
    }

    /// Whether it takes form elicitation (`elicitation: {}` in 2025-06-18; `{form: {}}`, or `{}`, in 2025-11-25
    /// and 2026-07-28).
    pub fn elicits_forms(&self) -> bool {
        let declared = &self.capabilities()["elicitation"];
        declared.as_object().is_some_and(|e| e.is_empty() || e.contains_key("form"))
    }

    /// Whether it can be asked to sample (`sampling/createMessage`): it declared sampling.
    pub fn samples(&self) -> bool {
        self.capabilities()["sampling"].is_object()
    }

    /// Where the call's messages go now (a modern call's: the request it answers now; none between rounds).
    pub(super) fn outlet(&self) -> Option<Outlet> {
        match &self.rounds {
            Some(rounds) => rounds.route().map(|route| route.outlet),
            None => Some(self.outlet.clone()),
        }
    }

    /// Tell the client how far the call is (`notifications/progress`), when it asked for progress.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress_token else { return };
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        if let Some(outlet) = self.outlet() {
            outlet.offer(Message::Notification { method: "notifications/progress".into(), params: Some(params) });
        }
    }

    /// Send the client a log line (`notifications/message`) at `level` (one of MCP's), unless it asked for
    /// more severe ones only (`logging/setLevel`).
    pub fn log(&self, level: &str, logger: &str, data: &str) {
        let severity = |level: &str| LOG_LEVELS.iter().position(|l| *l == level);
        let wanted = match self.modern {
            true if self.modern_log_level.is_none() => return,
            true => self.modern_log_level.clone(),
            false => self.session.upgrade().and_then(|s| lock(&s.log_level).clone()),
        };
        if wanted.and_then(|w| severity(&w)).is_some_and(|least| severity(level).unwrap_or(0) < least) {
            return;
        }
        let params = json!({ "level": level, "logger": logger, "data": data });
        if let Some(outlet) = self.outlet() {
            outlet.offer(Message::Notification { method: "notifications/message".into(), params: Some(params) });
        }
    }

    /// Tell the client the tool listing changed (`notifications/tools/list_changed`), when the server said it
    /// may (`ServerInfo::tools_change`). A modern client is sent nothing outside its requests: it learns of the
    /// change from the call's result.
    pub fn tools_changed(&self) {
        let changes = self.session.upgrade().is_some_and(|session| session.info.tools_change);
        if self.modern || !changes {
            return;
        }
        if let Some(outlet) = self.outlet() {
            outlet.offer(Message::Notification { method: "notifications/tools/list_changed".into(), params: None });
        }
    }

    /// Ask the client `method` and wait for its answer (a modern client: in an `input_required` round, under
    /// CLAT's own key).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, WireError> {
        self.ask(method, params, false).await
    }

    /// `request`, for a question an extension asks through CLAT (its form, its sampling): one that a downstream
    /// server asked CLAT's client in a round of its own keeps that server's key, and may be answered by what the
    /// call's first request carried under it.
    pub async fn forward(&self, method: &str, params: Value) -> Result<Value, WireError> {
        self.ask(method, params, true).await
    }

    pub(super) async fn ask(&self, method: &str, params: Value, forwarded: bool) -> Result<Value, WireError> {
        let ended = || WireError::new(INTERNAL_ERROR, "the session ended before the client answered");
        let session = self.session.upgrade().ok_or_else(ended)?;
        if let Some(rounds) = &self.rounds {
            return rounds.ask(&session.parked, &session.info, method, params, forwarded).await;
        }
        let number = session.next_request.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = RequestId::String(format!("clat-{number}"));
        let (answer, answered) = tokio::sync::oneshot::channel();
        lock(&session.asked).insert(id.clone(), answer);
        let request = Message::Request { id: id.clone(), method: method.to_string(), params: Some(params) };
        let outcome = if !self.outlet.send(request).await {
            Err(WireError::new(INTERNAL_ERROR, format!("the client stopped reading before {method} could be sent")))
        } else {
            client_answer(answered, method, &session.ending).await
        };
        lock(&session.asked).remove(&id);
        outcome
    }
}

/// The client's answer to `method`: within `SERVE_CLIENT_REQUEST_TIMEOUT`, unless `stop` fires first (the
/// session ended, or the call was cancelled). The same wait for a request and for an `input_required` round.
pub(super) async fn client_answer(
    answered: tokio::sync::oneshot::Receiver<Result<Value, WireError>>,
    method: &str,
    stop: &CancellationToken,
) -> Result<Value, WireError> {
    let ended =
        || WireError::new(INTERNAL_ERROR, "the session ended, or the call was cancelled, before the client answered");
    tokio::select! {
        answer = tokio::time::timeout(SERVE_CLIENT_REQUEST_TIMEOUT, answered) => match answer {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(ended()),
            Err(_) => Err(WireError::new(
                INTERNAL_ERROR,
                format!("the client did not answer {method} within {} s", SERVE_CLIENT_REQUEST_TIMEOUT.as_secs()),
            )),
        },
        _ = stop.cancelled() => Err(ended()),
    }
}
