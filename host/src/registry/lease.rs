//! An extension's lease on its tools: calls in flight counted, revoked by
//! `withdraw`, which then waits until none is left running.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::ToolSource;
use crate::sync::Unpoisoned;

/// What lets an extension's tools be called: revoked once, never renewed in the scope.
#[derive(Default)]
pub(super) struct Lease {
    pub(super) revoked: CancellationToken,
    pub(super) reason: std::sync::OnceLock<String>,
    pub(super) in_flight: AtomicUsize,
    pub(super) idle: tokio::sync::Notify,
}

impl Lease {
    pub(super) fn reason(&self) -> String {
        self.reason.get().cloned().unwrap_or_else(|| "its extension was withdrawn".into())
    }
}

/// Counts a call as in flight on its lease until dropped.
pub(super) struct InFlight<'a>(Option<&'a Lease>);

impl<'a> InFlight<'a> {
    pub(super) fn enter(lease: Option<&'a Lease>) -> Self {
        if let Some(lease) = lease {
            lease.in_flight.fetch_add(1, Ordering::SeqCst);
        }
        InFlight(lease)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(lease) = self.0
            && lease.in_flight.fetch_sub(1, Ordering::SeqCst) == 1
        {
            lease.idle.notify_waiters();
        }
    }
}

/// The lease a new entry from `source` holds: its owner's, created on first use.
pub(super) fn entry_lease(leases: &Mutex<HashMap<String, Arc<Lease>>>, source: &ToolSource) -> Option<Arc<Lease>> {
    let key = source.owner_key()?;
    let mut leases = leases.locked();
    Some(Arc::clone(leases.entry(key).or_default()))
}
