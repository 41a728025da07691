// `HostError`'s words, written once: the guest SDK (`host.rs`) and CLAT's host (`host/src/contract/mod.rs`) each
// include this file for their own binding of the contract's `host-error`, so a plugin and CLAT name and describe an
// error alike.

/// The error's name: denied, cancelled, no_active_run, timeout, budget_exhausted, invalid, unsupported, failed.
macro_rules! host_error_kind {
    ($error:expr) => {
        match $error {
            HostError::Denied(_) => "denied",
            HostError::Cancelled => "cancelled",
            HostError::NoActiveRun => "no_active_run",
            HostError::Timeout => "timeout",
            HostError::BudgetExhausted(_) => "budget_exhausted",
            HostError::Invalid(_) => "invalid",
            HostError::Unsupported(_) => "unsupported",
            HostError::Failed(_) => "failed",
        }
    };
}

/// A one-line description for people and events.
macro_rules! host_error_text {
    ($error:expr) => {
        match $error {
            HostError::Denied(m) => format!("denied: {m}"),
            HostError::Cancelled => "cancelled".to_string(),
            HostError::NoActiveRun => "no active run".to_string(),
            HostError::Timeout => "timed out".to_string(),
            HostError::BudgetExhausted(m) => format!("budget exhausted: {m}"),
            HostError::Invalid(m) => format!("invalid: {m}"),
            HostError::Unsupported(m) => format!("unsupported: {m}"),
            HostError::Failed(m) => format!("failed: {m}"),
        }
    };
}
