//! What a build was made from: the sources, the toolchain and the output,
//! hashed (`BuildRecord`), so that an up-to-date build is reused; and which of
//! a project's files are the author's (`project_files`, `authored_sources`).

use std::path::{Path, PathBuf};

use super::super::Language;
use super::{CASES_FILE, which};

/// What a JavaScript or Python build was made from: componentize-js and
/// componentize-py give a different component for the same sources on every
/// run (so the compiled cache would miss every time), and take seconds. The
/// key hashes clat's version, the toolchain (its path, size and time), and
/// every file of the project but dependencies and outputs (`NOT_AUTHORED`)
/// and the cases (copied into each package anew);
/// it is kept beside the output with the output's own hash. A build whose
/// key and output match is not run again.
pub(crate) struct BuildRecord {
    /// `OUT.build-key`.
    path: PathBuf,
    out: PathBuf,
    /// `None`: the key could not be computed (a file could not be read), so nothing is reused or kept.
    key: Option<String>,
}

impl BuildRecord {
    /// `inputs`: files outside the project's own that the build reads (a bundle of its dependencies).
    pub(crate) fn of(dir: &Path, toolchain: &Path, out: &Path, inputs: &[&Path]) -> BuildRecord {
        BuildRecord::keyed(out, sources_key(dir, toolchain, out, inputs))
    }

    /// The record of `out` under a key the caller made (`build_hasher`, then what else the build reads).
    pub(crate) fn keyed(out: &Path, key: Option<String>) -> BuildRecord {
        BuildRecord { path: out.with_extension("build-key"), out: out.to_path_buf(), key }
    }

    /// The last build was made from the same sources by the same toolchain, and its output is intact.
    pub(crate) fn matches(&self) -> bool {
        let Some(key) = &self.key else { return false };
        let Ok(kept) = std::fs::read_to_string(&self.path) else { return false };
        let mut lines = kept.lines();
        lines.next() == Some(key.as_str())
            && lines.next().is_some_and(|hash| file_hash(&self.out).as_deref() == Some(hash))
    }

    /// Keep the key of the build just made (a failure to keep it only costs a rebuild next time).
    pub(crate) fn keep(&self) {
        if let (Some(key), Some(hash)) = (&self.key, file_hash(&self.out)) {
            let _ = std::fs::write(&self.path, format!("{key}\n{hash}\n"));
        }
    }
}

fn file_hash(path: &Path) -> Option<String> {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).ok()?;
    Some(Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect())
}

/// The start of a build's key: clat's version, the output's name, and the toolchain (its path, size and time).
pub(crate) fn build_hasher(toolchain: &Path, out: &Path) -> Option<sha2::Sha256> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    hasher.update([0]);
    hasher.update(out.file_name()?.as_encoded_bytes());
    hasher.update([0]);
    let toolchain = which(toolchain)?;
    let meta = std::fs::metadata(&toolchain).ok()?;
    let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    hasher.update(format!("{}\0{}\0{}\0", toolchain.display(), meta.len(), modified.as_nanos()).as_bytes());
    Some(hasher)
}

/// A finished key, as hex.
pub(crate) fn hex_key(hasher: sha2::Sha256) -> String {
    use sha2::Digest;
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn sources_key(dir: &Path, toolchain: &Path, out: &Path, inputs: &[&Path]) -> Option<String> {
    use sha2::{Digest, Sha256};
    let mut hasher = build_hasher(toolchain, out)?;
    // The cases are not part of the build (each build assembles them anew): editing them reuses it.
    for file in project_files(dir)?.into_iter().filter(|f| f != Path::new(CASES_FILE)) {
        hasher.update(file.as_os_str().as_encoded_bytes());
        hasher.update([0]);
        hasher.update(Sha256::digest(std::fs::read(dir.join(&file)).ok()?));
    }
    for input in inputs {
        hasher.update(Sha256::digest(std::fs::read(input).ok()?));
    }
    Some(hex_key(hasher))
}

/// Every file of the project at `dir` but its dependencies and outputs
/// (`NOT_AUTHORED`), relative, sorted; `None` when a directory cannot be read.
pub fn project_files(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(dir.join(&rel)).ok()?.flatten() {
            let name = entry.file_name();
            let path = rel.join(&name);
            match entry.file_type() {
                Ok(t) if t.is_dir() && !NOT_AUTHORED.contains(&name.to_string_lossy().as_ref()) => stack.push(path),
                Ok(t) if t.is_file() => files.push(path),
                _ => {}
            }
        }
    }
    files.sort();
    Some(files)
}

/// Directories whose files are not the author's sources (dependencies, outputs, caches, tests' mock bindings).
const NOT_AUTHORED: &[&str] = &["node_modules", ".venv", "venv", "dist", "target", "__pycache__", ".git"];

/// The author's source files of `language` under `dir` (`.js`/`.mjs`, `.py`), sorted.
pub(crate) fn authored_sources(dir: &Path, language: Language) -> Vec<PathBuf> {
    let extensions: &[&str] = if language == Language::Python { &["py"] } else { &["js", "mjs"] };
    let mut found = project_files(dir).unwrap_or_default();
    found.retain(|path| path.extension().is_some_and(|e| extensions.contains(&&*e.to_string_lossy())));
    found
}
