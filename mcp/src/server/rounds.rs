//! `input_required` rounds (2026-07-28, multi round-trip requests): a modern
//! client is never sent a request. A call that asks it something answers the
//! request it answers now with `input_required` — the question under a key,
//! and a `requestState` naming the waiting call — and waits for the retry.
//! The client's retry (`tools/call` with the same tool, `inputResponses` and
//! that `requestState`, under a new id) becomes the request the call answers:
//! the answer wakes the call, and its next outcome (its result, or the next
//! round) answers the retry. A state is a random token, good once; an unknown
//! one, or one retried for another tool or with other arguments, is refused
//! (`-32602`: the call it names was not made with them); a retry without the
//! answer is asked again in a new round. A call asks one question
//! per round (its questions take turns), and waits for a retry as long as for
//! an answer to a request (`client_answer`). Closing the request a call answers now
//! (over HTTP: its response) cancels the call.
//!
//! A question's key is CLAT's own (`clat-0`, …), unless the question is one a
//! downstream server asked CLAT's client in a round of its own: that one keeps
//! the server's key (`forwarding_key`, set by the client while its host
//! fulfils the input request). An answer to such a question that the first
//! request already carries under its key (a client that answers up front) is
//! taken without a round; CLAT's own questions (approvals) are always asked
//! before they are answered.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::{Outlet, ServerInfo, modern};
use crate::jsonrpc::{INVALID_PARAMS, Message, RequestId, WireError};
use crate::limits::FORWARDED_INPUT_KEY_MAX_CHARS;
use crate::sync::lock;

/// The forwarded key, when there is one short enough to keep.
fn forwarded_key() -> Option<String> {
    let key = crate::inbound::current_forwarded_key()?;
    (1..=FORWARDED_INPUT_KEY_MAX_CHARS).contains(&key.chars().count()).then_some(key)
}

/// The request a modern call answers now, and where its messages go.
#[derive(Clone)]
pub(crate) struct Route {
    pub(crate) id: RequestId,
    pub(crate) outlet: Outlet,
}

/// One modern call's rounds.
pub(crate) struct CallRounds {
    tool: String,
    /// The call's arguments (none given: `{}`): a retry that names others is not this call's.
    arguments: Value,
    /// None while it waits for a retry: the request it answered last got its round.
    route: Mutex<Option<Route>>,
    /// One question at a time.
    turn: tokio::sync::Mutex<()>,
    asked: AtomicU64,
    /// The call's cancel token, and `done` once it has answered.
    cancel: CancellationToken,
    done: CancellationToken,
    /// The ids of the retries it answered or answers (a stdio client cancels a call by the latest).
    retries: Mutex<Vec<RequestId>>,
    /// The answers the first request carried (`inputResponses`), by key: each taken once, without a round.
    given: Mutex<serde_json::Map<String, Value>>,
}

impl CallRounds {
    /// The rounds of the call `params` (its tool, arguments, and the answers its first request carries, its
    /// `inputResponses`, if any) that answers `route` now; closing it cancels `cancel`.
    pub(crate) fn new(params: Option<&Value>, route: Route, cancel: CancellationToken) -> Arc<CallRounds> {
        let field = |name: &str| params.and_then(|p| p.get(name));
        let given = field("inputResponses").and_then(Value::as_object).cloned().unwrap_or_default();
        let rounds = Arc::new(CallRounds {
            tool: field("name").and_then(Value::as_str).unwrap_or_default().to_string(),
            arguments: called_with(field("arguments")),
            route: Mutex::new(Some(route.clone())),
            turn: tokio::sync::Mutex::new(()),
            asked: AtomicU64::new(0),
            cancel,
            done: CancellationToken::new(),
            retries: Mutex::new(Vec::new()),
            given: Mutex::new(given),
        });
        rounds.cancel_when_closed(&route.outlet);
        rounds
    }

    /// The request the call answers now; none while it waits for a retry (a call given up then answers nobody).
    pub(crate) fn route(&self) -> Option<Route> {
        lock(&self.route).clone()
    }

    /// The call has answered: nothing it answered since may cancel it.
    pub(crate) fn finish(&self) {
        self.done.cancel();
    }

    /// The ids of the retries it took.
    pub(crate) fn retries(&self) -> Vec<RequestId> {
        lock(&self.retries).clone()
    }

    fn cancel_when_closed(&self, outlet: &Outlet) {
        let (closed, cancel, done) = (outlet.closed.clone(), self.cancel.clone(), self.done.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = closed.cancelled() => cancel.cancel(),
                _ = cancel.cancelled() => {}
                _ = done.cancelled() => {}
            }
        });
    }

    /// Ask the client `method` in a round of its own and wait for the retry that answers it; a `forwarded`
    /// question (an extension's) keeps the key of the downstream round it came from, if any.
    pub(crate) async fn ask(
        self: &Arc<Self>,
        parked: &Parked,
        info: &ServerInfo,
        method: &str,
        params: Value,
        forwarded: bool,
    ) -> Result<Value, WireError> {
        let _turn = self.turn.lock().await;
        let own = format!("clat-{}", self.asked.fetch_add(1, Ordering::Relaxed));
        let key = match forwarded.then(forwarded_key).flatten() {
            // A downstream server's question, answered up front: no round.
            Some(key) => match lock(&self.given).remove(&key) {
                Some(answer) => return Ok(answer),
                None => key,
            },
            // CLAT's own (an approval, even one asked while a forwarded question waits): always asked first.
            None => own,
        };
        let (answer, answered) = oneshot::channel();
        let question = json!({ "method": method, "params": params });
        if !parked.park(Waiting { call: Arc::clone(self), key, question, answer }, info).await {
            return Err(WireError::new(INVALID_PARAMS, format!("{method}: no request of the client's to ask it in")));
        }
        let outcome = super::client_answer(answered, method, &self.cancel).await;
        parked.forget(self);
        outcome
    }
}

/// A call's arguments as compared: none given are `{}`.
fn called_with(arguments: Option<&Value>) -> Value {
    arguments.filter(|a| !a.is_null()).cloned().unwrap_or_else(|| json!({}))
}

/// A question waiting for the client's retry.
struct Waiting {
    call: Arc<CallRounds>,
    key: String,
    question: Value,
    answer: oneshot::Sender<Result<Value, WireError>>,
}

/// The calls waiting for a retry, by `requestState`.
#[derive(Default)]
pub(crate) struct Parked(Mutex<HashMap<String, Waiting>>);

impl Parked {
    /// Park `waiting` under a new state and answer its call's current request with `input_required`; false
    /// when the call has no request to answer.
    async fn park(&self, waiting: Waiting, info: &ServerInfo) -> bool {
        let state = uuid::Uuid::new_v4().simple().to_string();
        let Some(Route { id, outlet }) = lock(&waiting.call.route).take() else { return false };
        let result = json!({
            "resultType": "input_required",
            "inputRequests": { waiting.key.as_str(): waiting.question.clone() },
            "requestState": state,
        });
        lock(&self.0).insert(state.clone(), waiting);
        outlet.send(Message::Response { id, result: Ok(modern::complete(result, info)) }).await;
        true
    }

    /// Whether a call is waiting (for `Session::is_quiet`).
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.0).is_empty()
    }

    /// Drop whatever `call` still waits on (its question was answered, or given up).
    fn forget(&self, call: &Arc<CallRounds>) {
        lock(&self.0).retain(|_, waiting| !Arc::ptr_eq(&waiting.call, call));
    }

    /// A retry (`retry`: its params): the call parked under its `requestState` now answers `route`; the answer
    /// in its `inputResponses` wakes it, or, missing, the question is asked again. A retry that leaves out the
    /// arguments is taken as naming the call's own. `calls` (a stdio session's calls in flight), when given, knows
    /// the retry's id as the call's before the call can go on (its end removes it again).
    pub(crate) async fn resume(
        &self,
        retry: &Value,
        route: Route,
        calls: Option<&Mutex<HashMap<RequestId, CancellationToken>>>,
        info: &ServerInfo,
    ) -> Result<(), WireError> {
        let refused = |why: &str| WireError::new(INVALID_PARAMS, format!("requestState: {why}"));
        let state = retry["requestState"].as_str().unwrap_or_default();
        let (tool, arguments, responses) =
            (retry["name"].as_str(), retry.get("arguments"), retry.get("inputResponses"));
        let waiting = {
            let mut parked = lock(&self.0);
            match parked.get(state) {
                None => return Err(refused("not one this server gave, or already used")),
                Some(waiting) if tool != Some(waiting.call.tool.as_str()) => {
                    return Err(refused(&format!("it belongs to a call of {}", waiting.call.tool)));
                }
                Some(waiting) if arguments.is_some_and(|given| called_with(Some(given)) != waiting.call.arguments) => {
                    return Err(refused("it belongs to a call with other arguments"));
                }
                Some(_) => parked.remove(state).expect("just found"),
            }
        };
        let call = Arc::clone(&waiting.call);
        *lock(&call.route) = Some(route.clone());
        lock(&call.retries).push(route.id.clone());
        if let Some(calls) = calls {
            lock(calls).insert(route.id.clone(), call.cancel.clone());
        }
        call.cancel_when_closed(&route.outlet);
        match responses.and_then(|r| r.get(&waiting.key)) {
            Some(answer) => {
                let _ = waiting.answer.send(Ok(answer.clone()));
            }
            None => {
                self.park(waiting, info).await;
            }
        }
        Ok(())
    }
}
