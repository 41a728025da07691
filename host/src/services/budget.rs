//! The sampling budget shared by every extension source in one run (MCP, WASM,
//! DSH): at most 64 requests and an approximate 1,000,000-token guard. A request
//! reserves its estimate before the provider call; the reservation is reconciled
//! with the provider's actual usage afterwards, or released if the call never
//! completes. A reservation counts as a request either way.

use std::sync::{Arc, Mutex};

use crate::contract::SamplingRequest;
use crate::limits::{SAMPLING_REQUESTS_PER_RUN, SAMPLING_TOKENS_PER_RUN};
use crate::sync::Unpoisoned;

/// Why a reservation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("the run's sampling budget of {limit} requests is used up")]
    Requests { limit: u32 },
    #[error(
        "the run's sampling budget of about {limit} tokens would be exceeded: this request needs about {needed}, {left} are left"
    )]
    Tokens { limit: u64, needed: u64, left: u64 },
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Usage {
    requests: u32,
    spent_tokens: u64,
    reserved_tokens: u64,
}

/// One run's shared sampling budget.
#[derive(Debug)]
pub struct SamplingBudget {
    max_requests: u32,
    max_tokens: u64,
    usage: Mutex<Usage>,
}

/// A snapshot of what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLeft {
    pub requests: u32,
    pub tokens: u64,
}

impl SamplingBudget {
    /// The spec's budget: 64 requests, about 1,000,000 tokens.
    pub fn per_run() -> Self {
        Self::with_limits(SAMPLING_REQUESTS_PER_RUN, SAMPLING_TOKENS_PER_RUN)
    }

    /// A budget with other limits (embedding hosts may be stricter).
    pub fn with_limits(max_requests: u32, max_tokens: u64) -> Self {
        SamplingBudget { max_requests, max_tokens, usage: Mutex::new(Usage::default()) }
    }

    fn usage(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.locked()
    }

    /// Reserve one request and `estimated_tokens` before calling the provider.
    pub fn reserve(self: &Arc<Self>, estimated_tokens: u64) -> Result<BudgetReservation, BudgetError> {
        let mut usage = self.usage();
        if usage.requests >= self.max_requests {
            return Err(BudgetError::Requests { limit: self.max_requests });
        }
        let committed = usage.spent_tokens + usage.reserved_tokens;
        let left = self.max_tokens.saturating_sub(committed);
        if estimated_tokens > left {
            return Err(BudgetError::Tokens { limit: self.max_tokens, needed: estimated_tokens, left });
        }
        usage.requests += 1;
        usage.reserved_tokens += estimated_tokens;
        Ok(BudgetReservation { budget: Arc::clone(self), tokens: estimated_tokens, settled: false })
    }

    /// What is left, counting reservations in flight as spent.
    pub fn left(&self) -> BudgetLeft {
        let usage = self.usage();
        BudgetLeft {
            requests: self.max_requests.saturating_sub(usage.requests),
            tokens: self.max_tokens.saturating_sub(usage.spent_tokens + usage.reserved_tokens),
        }
    }

    /// Tokens actually spent (reconciled reservations only).
    pub fn spent_tokens(&self) -> u64 {
        self.usage().spent_tokens
    }

    /// Requests counted so far.
    pub fn requests(&self) -> u32 {
        self.usage().requests
    }
}

/// A reservation held while the provider call runs. `reconcile` replaces the
/// estimate with the actual usage; dropping it unreconciled releases the tokens
/// (the request still counts).
#[derive(Debug)]
pub struct BudgetReservation {
    budget: Arc<SamplingBudget>,
    tokens: u64,
    settled: bool,
}

impl BudgetReservation {
    /// The tokens reserved.
    pub fn reserved_tokens(&self) -> u64 {
        self.tokens
    }

    /// Record the provider's actual usage in place of the estimate.
    pub fn reconcile(mut self, actual_tokens: u64) {
        let mut usage = self.budget.usage();
        usage.reserved_tokens -= self.tokens;
        usage.spent_tokens += actual_tokens;
        self.settled = true;
    }
}

impl Drop for BudgetReservation {
    fn drop(&mut self) {
        if !self.settled {
            self.budget.usage().reserved_tokens -= self.tokens;
        }
    }
}

/// The approximate token cost of a request: its text at about four characters a
/// token, plus the output it asks for.
pub fn estimate_tokens(request: &SamplingRequest) -> u64 {
    let chars: usize = request.system_prompt.as_deref().map_or(0, |s| s.chars().count())
        + request.messages.iter().map(|m| m.text.chars().count()).sum::<usize>();
    (chars as u64).div_ceil(4) + u64::from(request.max_tokens)
}
