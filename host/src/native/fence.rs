//! The project path fence. Every native file operation goes through a cap-std
//! `Dir` opened at the canonical project root, so `..`, absolute paths and
//! symlinks that lead outside the root are refused by construction; symlinks
//! that stay inside the root work. Paths given to tools are checked lexically
//! first so that the error says exactly what was wrong.

use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

/// Why a path was refused or an operation on it failed.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    #[error("absolute path {0:?} is outside the project root; use a path relative to the project")]
    Absolute(String),
    #[error("path {0:?} leaves the project root")]
    Escapes(String),
    #[error("path {0:?} resolves through a symlink to a place outside the project root")]
    SymlinkEscapes(String),
    #[error("{path:?}: {source}")]
    Io { path: String, source: io::Error },
}

impl FenceError {
    /// True when the path does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FenceError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// A capability on the project directory and nothing outside it.
#[derive(Debug)]
pub struct PathFence {
    root: PathBuf,
    dir: Dir,
}

impl PathFence {
    /// Open the fence at `root` (canonicalized).
    pub fn open(root: &Path) -> io::Result<Self> {
        let root = root.canonicalize()?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(PathFence { root, dir })
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Check `path` lexically and return it relative to the root, without `.`
    /// components. An absolute path is accepted only when it lies under the
    /// root; `..` may not climb above the root. The empty path is the root.
    pub fn relative(&self, path: &str) -> Result<PathBuf, FenceError> {
        let given = Path::new(path);
        let rest = if given.is_absolute() {
            match given.strip_prefix(&self.root) {
                Ok(rest) => rest,
                Err(_) => return Err(FenceError::Absolute(path.to_string())),
            }
        } else {
            given
        };
        let mut out = PathBuf::new();
        for component in rest.components() {
            match component {
                Component::Normal(part) => out.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if !out.pop() {
                        return Err(FenceError::Escapes(path.to_string()));
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(FenceError::Absolute(path.to_string())),
            }
        }
        Ok(out)
    }

    /// Turn an I/O error on `rel` into a fence error, recognizing symlink escapes.
    fn io_error(&self, path: &str, rel: &Path, source: io::Error) -> FenceError {
        if source.kind() != io::ErrorKind::NotFound
            && let Ok(real) = self.root.join(rel).canonicalize()
            && !real.starts_with(&self.root)
        {
            return FenceError::SymlinkEscapes(path.to_string());
        }
        // cap-std reports an escape as PermissionDenied even when the target is missing.
        if source.kind() == io::ErrorKind::PermissionDenied && source.to_string().contains("outside") {
            return FenceError::SymlinkEscapes(path.to_string());
        }
        FenceError::Io { path: path.to_string(), source }
    }

    /// Resolve an existing path to its real location for walkers that need a std
    /// path (`list_files`, `search`); the result is inside the root.
    pub fn resolve_existing(&self, path: &str) -> Result<PathBuf, FenceError> {
        let rel = self.relative(path)?;
        // Opening through cap-std proves the path stays inside, symlinks included.
        let meta = self.dir.metadata(if rel.as_os_str().is_empty() { Path::new(".") } else { &rel });
        meta.map_err(|e| self.io_error(path, &rel, e))?;
        let real = self.root.join(&rel).canonicalize().map_err(|e| self.io_error(path, &rel, e))?;
        if !real.starts_with(&self.root) {
            return Err(FenceError::SymlinkEscapes(path.to_string()));
        }
        Ok(real)
    }

    /// Open a file for reading: its path relative to the root, the file, and
    /// its size when opened (the caller bounds its read by it if needed).
    pub fn open_file(&self, path: &str) -> Result<(PathBuf, cap_std::fs::File, u64), FenceError> {
        let rel = self.relative(path)?;
        let file = self.dir.open(&rel).map_err(|e| self.io_error(path, &rel, e))?;
        let meta = file.metadata().map_err(|e| self.io_error(path, &rel, e))?;
        if meta.is_dir() {
            return Err(FenceError::Io {
                path: path.to_string(),
                source: io::Error::new(io::ErrorKind::IsADirectory, "is a directory, not a file"),
            });
        }
        Ok((rel, file, meta.len()))
    }

    /// Write `contents` to `path` atomically: a temporary file next to it, synced,
    /// then renamed over the target. Nothing is half-written: on any failure the
    /// temporary file is removed and the target is untouched. An existing
    /// target keeps its permissions.
    pub fn write_atomic(&self, path: &str, contents: &[u8], create_dirs: bool) -> Result<PathBuf, FenceError> {
        let rel = self.relative(path)?;
        let Some(name) = rel.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            return Err(FenceError::Io {
                path: path.to_string(),
                source: io::Error::new(io::ErrorKind::InvalidInput, "needs a file name"),
            });
        };
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
        let parent_or_dot = if parent.as_os_str().is_empty() { PathBuf::from(".") } else { parent.clone() };
        if create_dirs {
            self.dir.create_dir_all(&parent_or_dot).map_err(|e| self.io_error(path, &parent, e))?;
        }
        let existing = match self.dir.metadata(&rel) {
            Ok(meta) if meta.is_dir() => {
                return Err(FenceError::Io {
                    path: path.to_string(),
                    source: io::Error::new(io::ErrorKind::IsADirectory, "is a directory, not a file"),
                });
            }
            Ok(meta) => Some(meta.permissions()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(self.io_error(path, &rel, e)),
        };
        let tmp = parent.join(format!(".{name}.clat-{}.tmp", uuid::Uuid::new_v4().simple()));
        let write = || -> io::Result<()> {
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            let mut file = self.dir.open_with(&tmp, &options)?;
            file.write_all(contents)?;
            if let Some(perms) = existing.clone() {
                file.set_permissions(perms)?;
            }
            file.sync_all()?;
            self.dir.rename(&tmp, &self.dir, &rel)
        };
        write().map_err(|e| {
            let _ = self.dir.remove_file(&tmp);
            self.io_error(path, &rel, e)
        })?;
        Ok(rel)
    }
}
