//! Progress on stderr for work a user did ask for but may wait on: compiling
//! a large component (which plugin, how large, how long so far). On a
//! terminal the line is rewritten in place every second; otherwise one line
//! when it starts to take a while and one when it ends. `-q` silences it.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::wasm::cache::{CompileObserver, CompileProgress};

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
        } else if p.done || p.elapsed < crate::wasm::cache::COMPILE_PROGRESS_AFTER * 2 {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    }
}
