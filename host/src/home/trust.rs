//! Project trust: `trusted-projects.json` in the home (`home.rs`), the
//! canonical roots the user has trusted with `clat trust`. Nothing of a
//! project starts before its root is in it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::home::{Bound, ClatHome, Document, HomeError};

/// The trust file inside `$CLAT_HOME`.
pub const TRUST_FILE: &str = "trusted-projects.json";

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    projects: Vec<PathBuf>,
}

crate::versioned_record!(TrustFile, 1..=1);

const TRUST: Document<TrustFile> = Document::new(TRUST_FILE, Bound::Config);

/// The canonical form of a project root.
pub fn canonical_project(path: &Path) -> Result<PathBuf, HomeError> {
    let canonical =
        path.canonicalize().map_err(|source| HomeError::ProjectMissing { path: path.to_path_buf(), source })?;
    if !canonical.is_dir() {
        return Err(HomeError::ProjectMissing {
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

    /// Every trusted root.
    pub fn trusted(&self) -> Result<Vec<PathBuf>, HomeError> {
        Ok(TRUST.read(&self.home)?.projects)
    }

    /// Is this (canonicalized) project trusted?
    pub fn is_trusted(&self, canonical_root: &Path) -> Result<bool, HomeError> {
        Ok(TRUST.read(&self.home)?.projects.iter().any(|p| p == canonical_root))
    }

    /// Record trust for `project`; returns its canonical root.
    pub fn trust(&self, project: &Path) -> Result<PathBuf, HomeError> {
        let root = canonical_project(project)?;
        // Read, add, write under the lock: concurrent `clat trust` lose nothing.
        TRUST.update(&self.home, |file| {
            if !file.projects.contains(&root) {
                file.projects.push(root.clone());
                file.projects.sort();
            }
        })?;
        Ok(root)
    }
}
