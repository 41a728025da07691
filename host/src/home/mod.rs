//! CLAT's home (`$CLAT_HOME`, default `~/.clat`) and its documents.
//!
//! `ClatHome` says where the home is and creates it (mode 0700). `Document` is
//! the one way a JSON record of the home is read and changed — trust,
//! installed plugins, kept approvals, tool pins, approved project servers,
//! extensions' listings, OAuth tokens' index, the model's configuration:
//! read only as a regular file within its bound (`files.rs`); a missing file
//! is the empty record, a malformed one (or one of a version it does not read)
//! an error naming the file and position, never read as empty; changed by
//! read-modify-write under the document's lock (`std::fs::File::lock` on
//! `NAME.lock` beside it, so concurrent `clat` processes lose nothing) and
//! replaced atomically (a synced temporary file renamed over it), written
//! only when its text changed (and not even serialized when the change says it
//! changed nothing: a server start whose pins and listing hold). A new file is 0600; one that exists keeps its
//! mode and owner, and a symlink is written through. `HomeError` is every failure of the
//! home and its documents. Its parts: project trust (`trust.rs`), files read
//! within their bounds (`files.rs`), and each extension's last listing
//! (`listings.rs`).

pub mod files;
pub mod listings;
pub mod trust;

use std::borrow::Cow;
use std::io::Write;
use std::marker::PhantomData;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why the home or one of its documents could not be used.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("cannot find CLAT's home: set CLAT_HOME or HOME, or pass --home")]
    NoHome,
    #[error("cannot write CLAT's home {path}: {source}")]
    HomeUnwritable { path: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// `hint`: what the user can do about it (empty, or starting with `; `).
    #[error("{path} is malformed at line {line}, column {column}: {message}{hint}")]
    Malformed { path: PathBuf, line: usize, column: usize, message: String, hint: &'static str },
    #[error("project directory {path} does not exist or cannot be opened: {source}")]
    ProjectMissing { path: PathBuf, source: std::io::Error },
}

/// CLAT's home directory (`$CLAT_HOME`, default `~/.clat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClatHome {
    path: PathBuf,
}

impl ClatHome {
    /// `explicit` (e.g. `--home`), else `$CLAT_HOME`, else `$HOME/.clat`.
    pub fn resolve(explicit: Option<&Path>) -> Result<Self, HomeError> {
        if let Some(p) = explicit {
            return Ok(ClatHome::at(p));
        }
        if let Some(p) = std::env::var_os("CLAT_HOME").filter(|p| !p.is_empty()) {
            return Ok(ClatHome::at(Path::new(&p)));
        }
        let home = std::env::var_os("HOME").filter(|p| !p.is_empty()).ok_or(HomeError::NoHome)?;
        Ok(ClatHome::at(&Path::new(&home).join(".clat")))
    }

    /// A home at `path` (not created until something is written).
    pub fn at(path: &Path) -> Self {
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().map(|d| d.join(path)).unwrap_or_else(|_| path.to_path_buf())
        };
        ClatHome { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create the home (mode 0700) if needed.
    pub fn ensure(&self) -> Result<(), HomeError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.path).map_err(|e| self.unwritable(e))
    }

    fn unwritable(&self, source: std::io::Error) -> HomeError {
        HomeError::HomeUnwritable { path: self.path.clone(), source }
    }

    /// Take the advisory lock that guards read-modify-write of the file `rel`
    /// inside the home (on `rel.lock` beside it), waiting for another `clat`
    /// that holds it. Readers need none: the file is replaced atomically.
    pub fn lock(&self, rel: &str) -> Result<HomeLock, HomeError> {
        self.ensure()?;
        let path = self.path.join(format!("{rel}.lock"));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.unwritable(e))?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| self.unwritable(e))?;
        file.lock().map_err(|e| self.unwritable(e))?;
        Ok(HomeLock { _file: file })
    }

    /// Write `contents` to `rel` (a path inside the home, e.g. `plugins/installed.json`)
    /// atomically: a temporary file in the same directory, synced, then renamed.
    /// A new file is 0600; a file that exists keeps its mode and owner (an `mcp.json` the user made
    /// 0600 stays 0600), and a symlink is written through: its target is
    /// replaced, the link stays.
    pub fn write_atomic(&self, rel: &str, contents: &[u8]) -> Result<(), HomeError> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        self.ensure()?;
        let target = through_links(&self.path.join(rel));
        let dir = target.parent().unwrap_or(&self.path).to_path_buf();
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        std::fs::create_dir_all(&dir).map_err(|e| self.unwritable(e))?;
        let existing = std::fs::metadata(&target).ok();
        let write = || -> std::io::Result<()> {
            // Removed on any failure (dropped unpersisted).
            let mut file = tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(&dir)?;
            if let Some(meta) = &existing {
                file.as_file().set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
                let mine = file.as_file().metadata()?;
                if (mine.uid(), mine.gid()) != (meta.uid(), meta.gid()) {
                    std::os::unix::fs::fchown(file.as_file(), Some(meta.uid()), Some(meta.gid()))?;
                }
            }
            file.write_all(contents)?;
            file.as_file().sync_all()?;
            file.persist(&target).map_err(|e| e.error)?;
            Ok(())
        };
        write().map_err(|e| self.unwritable(e))
    }
}

/// The file a path names once its symlinks are followed (a dangling link: the
/// path it points at), so a write replaces the target and keeps the link.
fn through_links(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    // As many hops as the kernel follows before ELOOP.
    for _ in 0..40 {
        match std::fs::read_link(&path) {
            Ok(next) => path = path.parent().map_or(next.clone(), |dir| dir.join(&next)),
            Err(_) => break,
        }
    }
    path
}

/// Holds a file's update lock in the home until dropped (closing the
/// descriptor releases it).
#[derive(Debug)]
pub struct HomeLock {
    _file: std::fs::File,
}

/// What a document holds: serialized as its file, empty by default, and
/// versioned (the version is a field of the record).
pub trait Record: Serialize + DeserializeOwned + Default {
    /// The versions read; the last is the one written.
    const VERSIONS: RangeInclusive<u32>;
    /// The version the record declares.
    fn version(&self) -> u32;
    fn set_version(&mut self, version: u32);
    /// What its type cannot say of a well-formed record (e.g. that every
    /// effect is a known one): why it is not, if it is not.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
}

/// `impl Record` for a record whose version is its `version: u32` field, reading `$versions`.
#[macro_export]
#[doc(hidden)]
macro_rules! versioned_record {
    ($record:ty, $versions:expr) => {
        impl $crate::home::Record for $record {
            const VERSIONS: std::ops::RangeInclusive<u32> = $versions;
            fn version(&self) -> u32 {
                self.version
            }
            fn set_version(&mut self, version: u32) {
                self.version = version;
            }
        }
    };
}

/// How big a document's file may be.
#[derive(Debug, Clone, Copy)]
pub enum Bound {
    /// A file a user may write by hand (`CONFIG_FILE_MAX_BYTES`).
    Config,
    /// A record CLAT keeps, which grows with use (`HOME_RECORD_MAX_BYTES`).
    Record,
}

/// One JSON record of the home, at `rel` inside it.
pub struct Document<T> {
    rel: Cow<'static, str>,
    bound: Bound,
    hint: &'static str,
    record: PhantomData<fn() -> T>,
}

impl<T: Record> Document<T> {
    /// The document at `rel` (e.g. `approvals.json`), within `bound`.
    pub const fn new(rel: &'static str, bound: Bound) -> Document<T> {
        Document { rel: Cow::Borrowed(rel), bound, hint: "", record: PhantomData }
    }

    /// A document whose place is known only at run time (one per plugin, …).
    pub fn at(rel: String, bound: Bound) -> Document<T> {
        Document { rel: Cow::Owned(rel), bound, hint: "", record: PhantomData }
    }

    /// The document at `rel`, whose malformed file's error tells the user what to do (`hint`: `; fix it, or …`).
    pub const fn with_hint(rel: &'static str, bound: Bound, hint: &'static str) -> Document<T> {
        Document { rel: Cow::Borrowed(rel), bound, hint, record: PhantomData }
    }

    /// Its file in `home`.
    pub fn path(&self, home: &ClatHome) -> PathBuf {
        home.path().join(&*self.rel)
    }

    /// The record (empty when the file does not exist), and its text as read.
    fn read_with_text(&self, home: &ClatHome) -> Result<(T, Option<String>), HomeError> {
        let path = self.path(home);
        let read = match self.bound {
            Bound::Config => crate::home::files::read_config_text(&path),
            Bound::Record => crate::home::files::read_home_record_text(&path),
        };
        let text = match read {
            Ok(text) => text,
            // No home yet (or a home path that cannot exist): the empty record.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                let mut empty = T::default();
                empty.set_version(*T::VERSIONS.end());
                return Ok((empty, None));
            }
            Err(source) => return Err(HomeError::Unreadable { path, source }),
        };
        let malformed =
            |line, column, message| HomeError::Malformed { path: path.clone(), line, column, message, hint: self.hint };
        let record: T = serde_json::from_str(&text).map_err(|e| malformed(e.line(), e.column(), e.to_string()))?;
        if !T::VERSIONS.contains(&record.version()) {
            let (first, last) = (T::VERSIONS.start(), T::VERSIONS.end());
            let expected = if first == last { format!("{first}") } else { format!("{first} to {last}") };
            return Err(malformed(1, 1, format!("version {} is not {expected}", record.version())));
        }
        record.check().map_err(|problem| malformed(1, 1, problem))?;
        Ok((record, Some(text)))
    }

    /// The record; empty when the file does not exist.
    pub fn read(&self, home: &ClatHome) -> Result<T, HomeError> {
        self.read_with_text(home).map(|(record, _)| record)
    }

    /// The record, or the empty one when it cannot be read: for a cache, which
    /// is a hint and costs only work when lost.
    pub fn read_or_empty(&self, home: &ClatHome) -> T {
        self.read(home).unwrap_or_default()
    }

    /// Read, `change` and write the record under its lock; written (at the
    /// newest version) only when its text changed.
    pub fn update<R>(&self, home: &ClatHome, change: impl FnOnce(&mut T) -> R) -> Result<R, HomeError> {
        self.change(home, |record| (change(record), true), false)
    }

    /// Like `update`, for a change that says whether it changed anything
    /// (`(out, changed)`): one that did not is neither serialized nor written
    /// (what a server start does with its pins when they hold).
    pub fn update_if<R>(&self, home: &ClatHome, change: impl FnOnce(&mut T) -> (R, bool)) -> Result<R, HomeError> {
        self.change(home, change, false)
    }

    /// Like `update_if`, for a cache: the record is empty when it cannot be read.
    pub fn update_cache_if<R>(
        &self,
        home: &ClatHome,
        change: impl FnOnce(&mut T) -> (R, bool),
    ) -> Result<R, HomeError> {
        self.change(home, change, true)
    }

    fn change<R>(
        &self,
        home: &ClatHome,
        change: impl FnOnce(&mut T) -> (R, bool),
        cache: bool,
    ) -> Result<R, HomeError> {
        let _lock = home.lock(&self.rel)?;
        let read = self.read_with_text(home);
        let (mut record, before) = if cache { read.unwrap_or_default() } else { read? };
        let (out, changed) = change(&mut record);
        if !changed {
            return Ok(out);
        }
        record.set_version(*T::VERSIONS.end());
        let text = serde_json::to_string_pretty(&record).expect("a home record serializes") + "\n";
        if before.as_deref() != Some(text.as_str()) {
            home.write_atomic(&self.rel, text.as_bytes())?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Counts {
        version: u32,
        n: u32,
    }

    impl Record for Counts {
        const VERSIONS: RangeInclusive<u32> = 1..=2;
        fn version(&self) -> u32 {
            self.version
        }
        fn set_version(&mut self, version: u32) {
            self.version = version;
        }
    }

    const COUNTS: Document<Counts> = Document::with_hint("counts.json", Bound::Config, "; remove it");

    #[test]
    fn a_document_is_empty_until_written_then_updated_under_its_lock_at_the_newest_version() {
        let dir = tempfile::tempdir().unwrap();
        let home = ClatHome::at(&dir.path().join("home"));
        assert_eq!(COUNTS.read(&home).unwrap(), Counts { version: 2, n: 0 });
        std::fs::create_dir_all(home.path()).unwrap();
        std::fs::write(COUNTS.path(&home), r#"{"version":1,"n":5}"#).unwrap();
        assert_eq!(COUNTS.read(&home).unwrap().n, 5, "an older version is read");
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let home = home.clone();
                std::thread::spawn(move || COUNTS.update(&home, |c| c.n += 1).unwrap())
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(COUNTS.read(&home).unwrap(), Counts { version: 2, n: 13 }, "no update was lost");
        // An unchanged record is not written again.
        let modified = std::fs::metadata(COUNTS.path(&home)).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        COUNTS.update(&home, |_| ()).unwrap();
        assert_eq!(std::fs::metadata(COUNTS.path(&home)).unwrap().modified().unwrap(), modified);
    }

    #[test]
    fn a_malformed_or_unknown_version_is_an_error_with_its_hint_and_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let home = ClatHome::at(dir.path());
        for text in ["{ not json", r#"{"version":3,"n":1}"#] {
            std::fs::write(COUNTS.path(&home), text).unwrap();
            let err = COUNTS.update(&home, |c| c.n += 1).unwrap_err();
            assert!(matches!(err, HomeError::Malformed { .. }), "{err}");
            assert!(
                err.to_string().contains("counts.json is malformed at line 1")
                    && err.to_string().ends_with("; remove it"),
                "{err}"
            );
            assert_eq!(std::fs::read_to_string(COUNTS.path(&home)).unwrap(), text);
            assert_eq!(COUNTS.read_or_empty(&home), Counts::default());
        }
    }
}
