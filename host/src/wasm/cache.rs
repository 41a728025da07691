//! The on-disk cache of compiled components under `$CLAT_HOME/cache/wasm`,
//! keyed by the engine's compatibility hash and the component's SHA-256, so a
//! second start never recompiles. An installed plugin's component also has an
//! entry under its content-addressed artifact name, so a later load maps the
//! compiled file without reading or hashing the component at all. Entries are
//! written atomically; a corrupt or incompatible entry is recompiled and
//! replaced. `retain` sweeps entries nothing installed uses (after a remove,
//! a reinstall or a failed install, and `clat plugin gc`). A compilation that
//! takes longer than `COMPILE_PROGRESS_AFTER` is reported to the runtime's
//! `CompileObserver` (the CLI prints it on stderr).

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::engine::WasmCompiler;

/// Whether a load compiled or reused a cached artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    Hit,
    Compiled,
}

/// Counters a caller (and the tests) can observe.
#[derive(Debug, Default)]
pub struct CacheStats {
    pub hits: AtomicU64,
    pub compiles: AtomicU64,
}

/// A compilation is reported once it has run this long, then every tick.
pub const COMPILE_PROGRESS_AFTER: Duration = Duration::from_secs(1);

/// Temporary files younger than this may belong to a write in progress; a sweep leaves them.
const STALE_TEMP_AGE: Duration = Duration::from_secs(600);

/// One report on a compilation that is taking a while.
#[derive(Debug, Clone)]
pub struct CompileProgress {
    /// The plugin (or file) being compiled.
    pub plugin: String,
    /// The component's size in bytes.
    pub bytes: u64,
    /// Time since the compilation started.
    pub elapsed: Duration,
    /// The last report: the compilation ended (successfully or not).
    pub done: bool,
}

/// Told about compilations that take longer than `COMPILE_PROGRESS_AFTER`.
pub trait CompileObserver: Send + Sync {
    fn progress(&self, progress: &CompileProgress);
}

/// What a sweep removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheSweep {
    pub removed: usize,
    pub bytes: u64,
}

/// The compiled-component cache of one engine.
pub struct ComponentCache {
    dir: PathBuf,
    engine_key: String,
    pub stats: CacheStats,
    observer: Option<Arc<dyn CompileObserver>>,
}

impl std::fmt::Debug for ComponentCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentCache").field("dir", &self.dir).field("engine_key", &self.engine_key).finish()
    }
}

impl ComponentCache {
    pub fn new(
        engine: &Engine,
        compiler: WasmCompiler,
        dir: &Path,
        observer: Option<Arc<dyn CompileObserver>>,
    ) -> Self {
        // DefaultHasher::new() is deterministic for a given std; a new Rust
        // release at worst costs one recompilation. The compiler is in the key
        // whether or not the engine's hash covers it: a baseline entry never
        // stands in for an optimized one.
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        compiler.as_str().hash(&mut hasher);
        ComponentCache {
            dir: dir.to_path_buf(),
            engine_key: format!("{:016x}", hasher.finish()),
            stats: CacheStats::default(),
            observer,
        }
    }

    /// The cache's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, bytes: &[u8]) -> PathBuf {
        let digest: String = Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{}-{}.cwasm", &digest[..32], self.engine_key))
    }

    /// Map a cache entry, if there is a usable one (a hit is counted).
    fn open(&self, engine: &Engine, path: &Path) -> Option<Component> {
        if !path.exists() {
            return None;
        }
        // SAFETY: entries are only written by this cache, from `serialize` of
        // this engine configuration (the key includes its compatibility hash);
        // wasmtime also checks the header and refuses mismatches.
        match unsafe { Component::deserialize_file(engine, path) } {
            Ok(component) => {
                self.stats.hits.fetch_add(1, Ordering::Relaxed);
                Some(component)
            }
            Err(e) => {
                tracing::warn!("discarding unusable cache entry {}: {e}", path.display());
                None
            }
        }
    }

    /// The compiled component named by `artifact` (an installed, content-addressed
    /// artifact's name and entry): mapped straight from its entry when there is
    /// one; otherwise `read` gives the bytes, which load through the content
    /// entry as usual, and the result is kept under the name too.
    pub fn load_named(
        &self,
        engine: &Engine,
        plugin: &str,
        artifact: &str,
        read: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> anyhow::Result<(Component, CacheOutcome)> {
        let named = self.named_entry(artifact);
        if let Some(component) = self.open(engine, &named) {
            return Ok((component, CacheOutcome::Hit));
        }
        let bytes = read()?;
        let (component, outcome) = self.load_or_compile(engine, plugin, &bytes)?;
        let content = self.entry(&bytes);
        let tmp = self.dir.join(format!(".{}.tmp", uuid::Uuid::new_v4().simple()));
        let linked = std::fs::hard_link(&content, &tmp)
            .or_else(|_| std::fs::copy(&content, &tmp).map(|_| ()))
            .and_then(|()| std::fs::rename(&tmp, &named));
        if let Err(e) = linked {
            let _ = std::fs::remove_file(&tmp);
            tracing::debug!("could not name the cache entry {}: {e}", named.display());
        }
        Ok((component, outcome))
    }

    /// The compiled component for `bytes`, from the cache or freshly compiled.
    pub fn load_or_compile(
        &self,
        engine: &Engine,
        plugin: &str,
        bytes: &[u8],
    ) -> anyhow::Result<(Component, CacheOutcome)> {
        let path = self.entry(bytes);
        if let Some(component) = self.open(engine, &path) {
            return Ok((component, CacheOutcome::Hit));
        }
        let watch = self.observer.clone().map(|o| CompileWatch::start(o, plugin, bytes.len() as u64));
        let compiled = Component::new(engine, bytes);
        drop(watch);
        let component = compiled.map_err(anyhow::Error::from).context("not a valid WebAssembly component")?;
        self.stats.compiles.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = self.store(&path, &component) {
            tracing::warn!("could not cache the compiled component at {}: {e:#}", path.display());
        }
        Ok((component, CacheOutcome::Compiled))
    }

    fn store(&self, path: &Path, component: &Component) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let bytes = component.serialize().map_err(anyhow::Error::from)?;
        let tmp = self.dir.join(format!(".{}.tmp", uuid::Uuid::new_v4().simple()));
        std::fs::write(&tmp, &bytes)?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })?;
        Ok(())
    }

    /// The entry an installed artifact (`{artifact dir name}/{entry}`) is kept under.
    fn named_entry(&self, artifact: &str) -> PathBuf {
        self.entry(format!("installed\0{artifact}").as_bytes())
    }

    /// The entries an installed component uses: the one under its artifact
    /// name and the one under its content (`bytes`).
    pub fn entries_of_installed(&self, artifact: &str, bytes: &[u8]) -> [PathBuf; 2] {
        [self.named_entry(artifact), self.entry(bytes)]
    }

    /// Remove every entry not in `keep` (entries of another engine included)
    /// and leftover temporary files. Files are removed one by one: a load that
    /// has one mapped keeps its mapping.
    pub fn retain(&self, keep: &HashSet<PathBuf>) -> std::io::Result<CacheSweep> {
        let mut sweep = CacheSweep::default();
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(sweep),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(meta) = entry.metadata() else { continue };
            let unused = if name.ends_with(".cwasm") {
                !keep.contains(&path)
            } else if name.starts_with('.') && name.ends_with(".tmp") {
                meta.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age > STALE_TEMP_AGE)
            } else {
                false
            };
            if unused && meta.is_file() && std::fs::remove_file(&path).is_ok() {
                sweep.removed += 1;
                sweep.bytes += meta.len();
            }
        }
        Ok(sweep)
    }
}

/// Reports one compilation to an observer while it runs longer than
/// `COMPILE_PROGRESS_AFTER` (from its own thread), and once more when it ends.
struct CompileWatch {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CompileWatch {
    fn start(observer: Arc<dyn CompileObserver>, plugin: &str, bytes: u64) -> CompileWatch {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let plugin = plugin.to_string();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("clat-compile-progress".into())
            .spawn(move || {
                let mut reported = false;
                let mut wait = COMPILE_PROGRESS_AFTER;
                loop {
                    let ended = !matches!(stopped.recv_timeout(wait), Err(std::sync::mpsc::RecvTimeoutError::Timeout));
                    if ended && !reported {
                        return;
                    }
                    reported = true;
                    let progress =
                        CompileProgress { plugin: plugin.clone(), bytes, elapsed: started.elapsed(), done: ended };
                    observer.progress(&progress);
                    if ended {
                        return;
                    }
                    wait = COMPILE_PROGRESS_AFTER;
                }
            })
            .ok();
        CompileWatch { stop: Some(stop), thread }
    }
}

impl Drop for CompileWatch {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<CompileProgress>>);

    impl CompileObserver for Recorder {
        fn progress(&self, progress: &CompileProgress) {
            self.0.lock().unwrap().push(progress.clone());
        }
    }

    #[test]
    fn a_quick_compilation_reports_nothing() {
        let recorder = Arc::new(Recorder::default());
        drop(CompileWatch::start(recorder.clone(), "quick", 10));
        assert!(recorder.0.lock().unwrap().is_empty());
    }

    #[test]
    fn a_long_compilation_is_reported_while_it_runs_and_when_it_ends() {
        let recorder = Arc::new(Recorder::default());
        let watch = CompileWatch::start(recorder.clone(), "big", 18_000_000);
        std::thread::sleep(COMPILE_PROGRESS_AFTER + Duration::from_millis(300));
        drop(watch);
        let reports = recorder.0.lock().unwrap();
        assert!(reports.len() >= 2, "{reports:?}");
        assert!(reports.iter().all(|r| r.plugin == "big" && r.bytes == 18_000_000));
        assert!(!reports[0].done && reports[0].elapsed >= COMPILE_PROGRESS_AFTER, "{reports:?}");
        assert!(reports.last().unwrap().done);
        assert_eq!(reports.iter().filter(|r| r.done).count(), 1);
    }
}
