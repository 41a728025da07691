//! How a guest fails outside its own error result — trapped, interrupted,
//! out of fuel or resources, refused by the pool — as one error that names
//! the plugin, what it was doing and the last lines it wrote.

/// A guest that failed outside its own error result: trapped, interrupted,
/// out of resources, or refused by the pool; with the last lines it wrote.
#[derive(Debug, thiserror::Error)]
#[error("plugin {plugin} failed in {what}: {reason}{}", shown_tail(output_tail))]
pub struct GuestFailure {
    pub plugin: String,
    /// What it was doing: `instantiation`, `list-tools`, `tool NAME`, `context-changed`.
    pub what: String,
    pub reason: FailureReason,
    /// The last lines it wrote to stdout/stderr (redacted).
    pub output_tail: Vec<String>,
}

/// Why a guest failed.
#[derive(Debug, thiserror::Error)]
pub enum FailureReason {
    #[error("it ran past its deadline and was interrupted")]
    Interrupted,
    #[error("it ran out of fuel")]
    OutOfFuel,
    #[error("it trapped: {0}")]
    Trap(String),
    #[error("too many guest instances are running at once ({error}; the pool holds {pool})")]
    PoolFull { error: String, pool: String },
    #[error("it hit a resource limit: {0}")]
    ResourceLimit(String),
    #[error("{0}")]
    Other(String),
}

fn shown_tail(tail: &[String]) -> String {
    if tail.is_empty() { String::new() } else { format!("\nlast output lines:\n{}", tail.join("\n")) }
}
