//! CLAT's home directory and project trust. `$CLAT_HOME` (default `~/.clat`)
//! holds `trusted-projects.json`, the canonical roots the user has trusted with
//! `clat trust`. The file is replaced atomically; a malformed file is an error
//! naming the file and position, never silently treated as empty.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The trust file inside `$CLAT_HOME`.
pub const TRUST_FILE: &str = "trusted-projects.json";

/// Errors about CLAT's home and trust records.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot find CLAT's home: set CLAT_HOME or HOME, or pass --home")]
    NoHome,
    #[error("cannot write CLAT's home {path}: {source}")]
    HomeUnwritable { path: PathBuf, source: std::io::Error },
    #[error("cannot read {path}: {source}")]
    Unreadable { path: PathBuf, source: std::io::Error },
    #[error("{path} is malformed at line {line}, column {column}: {message}")]
    Malformed { path: PathBuf, line: usize, column: usize, message: String },
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
    pub fn resolve(explicit: Option<&Path>) -> Result<Self, TrustError> {
        if let Some(p) = explicit {
            return Ok(ClatHome::at(p));
        }
        if let Some(p) = std::env::var_os("CLAT_HOME").filter(|p| !p.is_empty()) {
            return Ok(ClatHome::at(Path::new(&p)));
        }
        let home = std::env::var_os("HOME").filter(|p| !p.is_empty()).ok_or(TrustError::NoHome)?;
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
    pub fn ensure(&self) -> Result<(), TrustError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.path)
            .map_err(|source| TrustError::HomeUnwritable { path: self.path.clone(), source })
    }

    /// Take the advisory lock that guards read-modify-write of the file `rel`
    /// inside the home (`flock` on `rel.lock` beside it), waiting for another
    /// `clat` that holds it. Readers need none: the file is replaced atomically.
    pub fn lock(&self, rel: &str) -> Result<HomeLock, TrustError> {
        use std::os::fd::AsRawFd;
        self.ensure()?;
        let unwritable = |source| TrustError::HomeUnwritable { path: self.path.clone(), source };
        let path = self.path.join(format!("{rel}.lock"));
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(unwritable)?;
        }
        let file =
            std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(unwritable)?;
        loop {
            // SAFETY: flock on a descriptor this function owns; it touches no memory.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(HomeLock { _file: file });
            }
            let error = std::io::Error::last_os_error();
            if error.kind() != std::io::ErrorKind::Interrupted {
                return Err(unwritable(error));
            }
        }
    }

    /// Write `contents` to `rel` (a path inside the home, e.g. `plugins/installed.json`)
    /// atomically: a temporary file in the same directory, synced, then renamed.
    /// A file that exists keeps its mode and owner (an `mcp.json` the user made
    /// 0600 stays 0600), and a symlink is written through: its target is
    /// replaced, the link stays.
    pub fn write_atomic(&self, rel: &str, contents: &[u8]) -> Result<(), TrustError> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        self.ensure()?;
        let target = through_links(&self.path.join(rel));
        let dir = target.parent().unwrap_or(&self.path).to_path_buf();
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let unwritable = |source| TrustError::HomeUnwritable { path: self.path.clone(), source };
        std::fs::create_dir_all(&dir).map_err(unwritable)?;
        let existing = std::fs::metadata(&target).ok();
        let result = (|| {
            let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            if let Some(meta) = &existing {
                f.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
                let mine = f.metadata()?;
                if (mine.uid(), mine.gid()) != (meta.uid(), meta.gid()) {
                    std::os::unix::fs::fchown(&f, Some(meta.uid()), Some(meta.gid()))?;
                }
            }
            f.write_all(contents)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &target)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&tmp);
            return Err(unwritable(e));
        }
        Ok(())
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
/// descriptor releases the `flock`).
#[derive(Debug)]
pub struct HomeLock {
    _file: std::fs::File,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    projects: Vec<PathBuf>,
}

/// The canonical form of a project root.
pub fn canonical_project(path: &Path) -> Result<PathBuf, TrustError> {
    let canonical =
        path.canonicalize().map_err(|source| TrustError::ProjectMissing { path: path.to_path_buf(), source })?;
    if !canonical.is_dir() {
        return Err(TrustError::ProjectMissing {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    Ok(canonical)
}

/// The trusted project roots recorded in a home.
#[derive(Debug, Clone)]
pub struct TrustStore {
    home: ClatHome,
}

impl TrustStore {
    pub fn new(home: &ClatHome) -> Self {
        TrustStore { home: home.clone() }
    }

    fn file(&self) -> PathBuf {
        self.home.path().join(TRUST_FILE)
    }

    fn load(&self) -> Result<TrustFile, TrustError> {
        let path = self.file();
        let text = match crate::files::read_config_text(&path) {
            Ok(t) => t,
            // No home yet (or a home path that cannot exist): nothing is trusted.
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => {
                return Ok(TrustFile { version: 1, projects: vec![] });
            }
            Err(source) => return Err(TrustError::Unreadable { path, source }),
        };
        serde_json::from_str(&text).map_err(|e| TrustError::Malformed {
            path,
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    /// Every trusted root.
    pub fn trusted(&self) -> Result<Vec<PathBuf>, TrustError> {
        Ok(self.load()?.projects)
    }

    /// Is this (canonicalized) project trusted?
    pub fn is_trusted(&self, canonical_root: &Path) -> Result<bool, TrustError> {
        Ok(self.load()?.projects.iter().any(|p| p == canonical_root))
    }

    /// Record trust for `project`; returns its canonical root.
    pub fn trust(&self, project: &Path) -> Result<PathBuf, TrustError> {
        let root = canonical_project(project)?;
        // Read, add, write under the lock: concurrent `clat trust` lose nothing.
        let _lock = self.home.lock(TRUST_FILE)?;
        let mut file = self.load()?;
        file.version = 1;
        if !file.projects.contains(&root) {
            file.projects.push(root.clone());
            file.projects.sort();
        }
        let text = serde_json::to_string_pretty(&file).expect("trust file serializes");
        self.home.write_atomic(TRUST_FILE, text.as_bytes())?;
        Ok(root)
    }
}
