//! The shared sampling budget: reserve before the provider call, reconcile with
//! actual usage, release on failure; the 65th request and the token guard fail.

use std::sync::Arc;

use clat_host::contract::{Role, SamplingMessage, SamplingRequest};
use clat_host::limits::{SAMPLING_REQUESTS_PER_RUN, SAMPLING_TOKENS_PER_RUN};
use clat_host::run::RunContext;
use clat_host::services::budget::{BudgetError, SamplingBudget, estimate_tokens};

#[test]
fn the_65th_request_is_refused() {
    let budget = Arc::new(SamplingBudget::per_run());
    for i in 0..SAMPLING_REQUESTS_PER_RUN {
        let r = budget.reserve(10).unwrap_or_else(|e| panic!("request {} refused: {e}", i + 1));
        r.reconcile(7);
    }
    assert_eq!(budget.requests(), 64);
    assert_eq!(budget.spent_tokens(), 64 * 7);
    let err = budget.reserve(1).unwrap_err();
    assert_eq!(err, BudgetError::Requests { limit: 64 });
    assert!(err.to_string().contains("64 requests"));
    assert_eq!(budget.left().requests, 0);
}

#[test]
fn the_token_guard_counts_reservations_in_flight() {
    let budget = Arc::new(SamplingBudget::per_run());
    let big = budget.reserve(SAMPLING_TOKENS_PER_RUN - 100).unwrap();
    // Anything over what is left is refused while the big one is in flight.
    let err = budget.reserve(101).unwrap_err();
    assert_eq!(err, BudgetError::Tokens { limit: SAMPLING_TOKENS_PER_RUN, needed: 101, left: 100 });
    let small = budget.reserve(100).unwrap();
    assert_eq!(budget.left().tokens, 0);
    // Reconciling with less than reserved gives the difference back.
    big.reconcile(1_000);
    small.reconcile(50);
    assert_eq!(budget.spent_tokens(), 1_050);
    assert_eq!(budget.left().tokens, SAMPLING_TOKENS_PER_RUN - 1_050);
}

#[test]
fn actual_usage_over_the_estimate_is_what_counts() {
    let budget = Arc::new(SamplingBudget::per_run());
    budget.reserve(10).unwrap().reconcile(SAMPLING_TOKENS_PER_RUN);
    assert_eq!(budget.left().tokens, 0);
    assert!(matches!(budget.reserve(1), Err(BudgetError::Tokens { left: 0, .. })));
}

#[test]
fn a_reservation_dropped_without_reconcile_releases_tokens_but_counts_the_request() {
    let budget = Arc::new(SamplingBudget::with_limits(2, 1_000));
    {
        let _failed_call = budget.reserve(900).unwrap();
        assert_eq!(budget.left().tokens, 100);
    }
    assert_eq!(budget.left().tokens, 1_000);
    assert_eq!(budget.left().requests, 1);
    budget.reserve(1_000).unwrap().reconcile(1);
    assert!(matches!(budget.reserve(1), Err(BudgetError::Requests { limit: 2 })));
}

#[test]
fn every_run_gets_its_own_budget_unless_one_is_shared() {
    let a = RunContext::builder().start();
    let b = RunContext::builder().start();
    a.budget().reserve(5).unwrap().reconcile(5);
    assert_eq!(b.budget().spent_tokens(), 0);
    let shared = Arc::new(SamplingBudget::per_run());
    let c = RunContext::builder().budget(shared.clone()).start();
    c.budget().reserve(5).unwrap().reconcile(5);
    assert_eq!(shared.spent_tokens(), 5);
}

#[test]
fn estimates_count_text_and_requested_output() {
    let request = SamplingRequest {
        messages: vec![SamplingMessage { role: Role::User, text: "x".repeat(400) }],
        system_prompt: Some("y".repeat(100)),
        max_tokens: 1_000,
        temperature: None,
        stop_sequences: vec![],
        model_hints: vec![],
    };
    assert_eq!(estimate_tokens(&request), 125 + 1_000);
}
