//! What the benchmarks share: the median per-call time behind their `summary:` lines.

use std::time::{Duration, Instant};

/// The median, over `batches` batches of `batch` calls, of `op`'s time per call.
pub fn per_call(batches: usize, batch: u32, mut op: impl FnMut()) -> Duration {
    let mut samples: Vec<Duration> = (0..batches)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..batch {
                op();
            }
            start.elapsed() / batch
        })
        .collect();
    samples.sort();
    samples[samples.len() / 2]
}
