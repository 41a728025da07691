//! Each stdio server's learned era, so that a legacy server starts once per
//! command rather than twice (the modern probe's process, then the fresh
//! one). It is kept in the server's listing record (`home/listings.rs`)
//! under an era key: the server's identity (its command and arguments, or
//! its package's digest), the names of the environment variables it is given,
//! and the executable its command resolves to with that file's modification
//! time (an upgrade or a reinstall changes it). A server known to be legacy
//! under its key now gets the legacy handshake alone
//! (`Opening::known_legacy`); it is probed again when the key changes, once
//! `ERA_REPROBE_INTERVAL` has passed since its era was learned, or after its
//! legacy handshake failed. A modern server is remembered too, but its start
//! keeps the probe: the probe is its handshake.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use clat_mcp::{Era, StdioSpec};

use crate::home::ClatHome;
use crate::home::listings::{self, LearnedEra};
use crate::limits::ERA_REPROBE_INTERVAL;
use crate::policy::identity::Identity;

const LEGACY: &str = "legacy";
const MODERN: &str = "modern";

/// Where one stdio server's era is kept, and what its key is made of (the
/// key itself is worked out at the server's first start, not when it is configured).
#[derive(Debug, Clone)]
pub struct EraBook {
    home: ClatHome,
    server: String,
    spec: StdioSpec,
    identity: Identity,
    key: std::sync::OnceLock<String>,
}

/// What a start found in the era book: read once, before it connects.
pub struct Recalled<'a> {
    book: &'a EraBook,
    learned: Option<LearnedEra>,
}

impl EraBook {
    /// The era book of `server`, started as `spec` with `identity`.
    pub fn new(home: &ClatHome, server: &str, spec: &StdioSpec, identity: &Identity) -> EraBook {
        let (home, server, spec, identity) = (home.clone(), server.to_string(), spec.clone(), identity.clone());
        EraBook { home, server, spec, identity, key: std::sync::OnceLock::new() }
    }

    fn key(&self) -> &str {
        self.key.get_or_init(|| era_key(&self.spec, &self.identity))
    }

    /// What the server's last start learned, read once for this start.
    pub fn recall(&self) -> Recalled<'_> {
        Recalled { book: self, learned: listings::learned_era(&self.home, &self.server) }
    }

    /// Forget the era (its legacy handshake failed): the next start probes.
    pub fn forget(&self) {
        if let Err(e) = listings::keep_era(&self.home, &self.server, None) {
            tracing::debug!("cannot forget the era of {}: {e}", self.server);
        }
    }

    /// A start that took the server's legacy era on trust: unless it ends
    /// `connected`, however it ends — failed, timed out, cancelled — the era
    /// is forgotten.
    pub fn trusting_start(&self) -> TrustedStart<'_> {
        TrustedStart { book: Some(self) }
    }
}

impl Recalled<'_> {
    /// Whether it learned `era` under the key the server has now, within `ERA_REPROBE_INTERVAL`.
    fn holds(&self, era: &str) -> bool {
        self.learned.as_ref().is_some_and(|learned| {
            learned.era == era
                && learned.key == self.book.key()
                && now().saturating_sub(learned.at) < ERA_REPROBE_INTERVAL.as_secs()
        })
    }

    /// Whether the server is known to be legacy: its start may skip the probe.
    pub fn known_legacy(&self) -> bool {
        self.holds(LEGACY)
    }

    /// Keep the era the start learned, when it is news (another era or key, or a stale one).
    pub fn learned(&self, era: Era) {
        let era = if era == Era::Legacy { LEGACY } else { MODERN };
        if self.holds(era) {
            return;
        }
        let book = self.book;
        let learned = LearnedEra { era: era.to_string(), key: book.key().to_string(), at: now() };
        if let Err(e) = listings::keep_era(&book.home, &book.server, Some(learned)) {
            tracing::debug!("cannot keep the era of {}: {e}", book.server);
        }
    }
}

/// A start on a known legacy era (`EraBook::trusting_start`).
pub struct TrustedStart<'a> {
    book: Option<&'a EraBook>,
}

impl TrustedStart<'_> {
    /// It connected: the era holds.
    pub fn connected(mut self) {
        self.book = None;
    }
}

impl Drop for TrustedStart<'_> {
    fn drop(&mut self) {
        if let Some(book) = self.book {
            book.forget();
        }
    }
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The identity, the environment's names, and the resolved executable with its modification time.
fn era_key(spec: &StdioSpec, identity: &Identity) -> String {
    let mut names: Vec<&str> = spec.env.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    let executable = resolve(spec);
    let modified = executable
        .as_deref()
        .and_then(|path| std::fs::metadata(path).ok()?.modified().ok())
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let executable = executable.map(|p| p.display().to_string()).unwrap_or_default();
    format!("{identity}|{}|{executable}@{modified}", names.join(","))
}

/// The file `spec`'s command runs: a path as it is (under its working directory when relative), a bare name
/// through the `PATH` it is given (else CLAT's own).
fn resolve(spec: &StdioSpec) -> Option<PathBuf> {
    let command = Path::new(&spec.command);
    if command.components().count() > 1 {
        let path = spec.cwd.join(command);
        return path.canonicalize().ok().or(Some(path));
    }
    let given = spec.env.iter().find(|(name, _)| name == "PATH").map(|(_, value)| value.clone());
    let path = given.or_else(|| if spec.clear_env { None } else { std::env::var("PATH").ok() })?;
    std::env::split_paths(&path).map(|dir| dir.join(command)).find(|candidate| candidate.is_file())
}
