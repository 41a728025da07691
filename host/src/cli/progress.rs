//! Progress on stderr for work a user did ask for but may wait on: compiling
//! a large component (which plugin, how large, how long so far), and
//! extensions still starting (which, for how long). On a terminal the line is
//! rewritten in place; otherwise compilation says one line when it starts to
//! take a while and one when it ends, and starts say nothing. `-q` and
//! `--json` silence the starts.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::ExtensionState;
use crate::platform::Project;

use crate::{COMPILE_PROGRESS_AFTER, CompileObserver, CompileProgress};

static QUIET: AtomicBool = AtomicBool::new(false);

/// Set once from `-q`.
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// The observer the CLI's WASM runtimes report compilations to.
pub(crate) fn compile_observer() -> Option<Arc<dyn CompileObserver>> {
    if QUIET.load(Ordering::Relaxed) {
        return None;
    }
    Some(Arc::new(StderrProgress { terminal: std::io::stderr().is_terminal() }))
}

struct StderrProgress {
    terminal: bool,
}

/// `18.2 MB`, `512 KB`.
pub(crate) fn size(bytes: u64) -> String {
    if bytes >= 1_000_000 { format!("{:.1} MB", bytes as f64 / 1e6) } else { format!("{} KB", bytes.div_ceil(1000)) }
}

impl CompileObserver for StderrProgress {
    fn progress(&self, p: &CompileProgress) {
        let secs = p.elapsed.as_secs_f64();
        let line = if p.done {
            format!("clat: compiled plugin {} ({}) in {secs:.1} s", p.plugin, size(p.bytes))
        } else {
            format!("clat: compiling plugin {} ({})… {secs:.0} s", p.plugin, size(p.bytes))
        };
        let mut err = std::io::stderr().lock();
        // Best effort: a closed stderr must not fail the compilation.
        if self.terminal {
            let _ = write!(err, "\r\x1b[K{line}{}", if p.done { "\n" } else { "" });
        } else if p.done || p.elapsed < COMPILE_PROGRESS_AFTER * 2 {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
}

/// An extension shows as starting once it has taken this long (a fast start shows nothing).
const STARTING_SHOWN_AFTER: Duration = Duration::from_secs(1);
/// How often the starting line is redrawn.
const STARTING_REDRAW: Duration = Duration::from_millis(200);

/// `work`, while a line on stderr says which of `project`'s extensions are
/// still starting and for how long — only at a terminal, and not with `-q`
/// or for `--json` output (`machine_output`).
pub(crate) async fn while_starting<T>(
    project: &Project,
    machine_output: bool,
    work: impl std::future::Future<Output = T>,
) -> T {
    if machine_output || QUIET.load(Ordering::Relaxed) || !std::io::stderr().is_terminal() {
        return work.await;
    }
    // Drawn only once something has been starting for a while.
    let line = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()).with_style(
        ProgressStyle::with_template("{spinner} {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let mut shown = false;
    let mut since: BTreeMap<String, Instant> = BTreeMap::new();
    let mut redraw = tokio::time::interval(STARTING_REDRAW);
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => {
                line.finish_and_clear();
                return done;
            }
            _ = redraw.tick() => {
                let starting: Vec<String> = project
                    .extensions()
                    .into_iter()
                    .filter(|e| e.state == ExtensionState::Starting)
                    .map(|e| e.name)
                    .collect();
                since.retain(|name, _| starting.contains(name));
                match starting_message(&starting, &mut since, Instant::now()) {
                    Some(message) => line.set_message(message),
                    None if shown => line.set_message("finishing…"),
                    None => continue,
                }
                if !shown {
                    line.set_draw_target(ProgressDrawTarget::stderr());
                    shown = true;
                }
                line.tick();
            }
        }
    }
}

/// `starting everything (12 s), fs (3 s)`: the extensions that have been
/// starting for `STARTING_SHOWN_AFTER` or more, longest first.
fn starting_message(starting: &[String], since: &mut BTreeMap<String, Instant>, now: Instant) -> Option<String> {
    let mut slow: Vec<(&String, Duration)> = starting
        .iter()
        .map(|name| (name, now - *since.entry(name.clone()).or_insert(now)))
        .filter(|(_, waited)| *waited >= STARTING_SHOWN_AFTER)
        .collect();
    if slow.is_empty() {
        return None;
    }
    slow.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = slow.iter().map(|(name, waited)| format!("{name} ({} s)", waited.as_secs())).collect();
    Some(format!("starting {}", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_starts_past_a_second_are_shown_longest_first() {
        let now = Instant::now();
        let mut since = BTreeMap::from([
            ("fs".to_string(), now - Duration::from_secs(3)),
            ("everything".to_string(), now - Duration::from_secs(12)),
        ]);
        let starting = ["everything".to_string(), "fs".to_string(), "new".to_string()];
        assert_eq!(
            starting_message(&starting, &mut since, now).as_deref(),
            Some("starting everything (12 s), fs (3 s)"),
            "a start first seen now is not shown yet"
        );
        assert!(since.contains_key("new"), "its start is remembered from now");
        assert_eq!(starting_message(&["new".to_string()], &mut since, now), None);
    }
}
