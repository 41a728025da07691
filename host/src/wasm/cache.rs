//! The on-disk cache of compiled components under `$CLAT_HOME/cache/wasm`,
//! keyed by the engine's compatibility hash and the component's SHA-256, so a
//! second start never recompiles. An installed plugin's component also has an
//! entry under its content-addressed artifact name, so a later load maps the
//! compiled file without reading or hashing the component at all. Entries are
//! written atomically; a corrupt or incompatible entry is recompiled and
//! replaced.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

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

/// The compiled-component cache of one engine.
#[derive(Debug)]
pub struct ComponentCache {
    dir: PathBuf,
    engine_key: String,
    pub stats: CacheStats,
}

impl ComponentCache {
    pub fn new(engine: &Engine, dir: &Path) -> Self {
        // DefaultHasher::new() is deterministic for a given std; a new Rust
        // release at worst costs one recompilation.
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        ComponentCache {
            dir: dir.to_path_buf(),
            engine_key: format!("{:016x}", hasher.finish()),
            stats: CacheStats::default(),
        }
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
        artifact: &str,
        read: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> anyhow::Result<(Component, CacheOutcome)> {
        let named = self.entry(format!("installed\0{artifact}").as_bytes());
        if let Some(component) = self.open(engine, &named) {
            return Ok((component, CacheOutcome::Hit));
        }
        let bytes = read()?;
        let (component, outcome) = self.load_or_compile(engine, &bytes)?;
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
    pub fn load_or_compile(&self, engine: &Engine, bytes: &[u8]) -> anyhow::Result<(Component, CacheOutcome)> {
        let path = self.entry(bytes);
        if let Some(component) = self.open(engine, &path) {
            return Ok((component, CacheOutcome::Hit));
        }
        let component =
            Component::new(engine, bytes).map_err(anyhow::Error::from).context("not a valid WebAssembly component")?;
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
}
