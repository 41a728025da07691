//! The guest SDK a project carries, as a versioned dependency: `clat plugin
//! new` writes the SDK's files (Rust's `vendor/clat-guest`, JavaScript's
//! `src/clat.js` with its mock host, Python's `clat.py` and friends, and the
//! contract's WIT) and records, in `SDK_RECORD`, the SDK version and the hash
//! of each file as written. `clat plugin sdk update` rewrites them to the
//! running clat's SDK and says what changed: a file still as it was written
//! is updated, one the author edited since is kept (and said) unless forced,
//! one missing is added. A project made before the record had no way to say
//! which files are untouched: its differing files are kept unless forced.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::templates::template;
use super::{AuthoringError, Language, io};
use crate::supply::packages::PackageKind;

/// The record of the SDK a project carries, in the project.
pub const SDK_RECORD: &str = "clat-sdk.json";

/// The SDK version this clat writes: clat's own.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `SDK_RECORD`'s contents.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SdkRecord {
    /// The SDK version the files were written from.
    pub version: String,
    /// The contract version they bind (`artec:clat@…`).
    pub contract: String,
    /// Each SDK file as written, relative to the project: `sha256:HEX` of its contents.
    pub files: BTreeMap<String, String>,
}

/// What happened to one SDK file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SdkFileChange {
    /// It was already this SDK's.
    UpToDate,
    /// It was as an older SDK wrote it, and is this SDK's now.
    Updated,
    /// It was missing, and is written now.
    Added,
    /// It was edited since it was written (or there is no record of what was written): kept as it is.
    Kept,
    /// It was edited (or unrecorded), and replaced because the update was forced.
    Replaced,
}

/// One SDK file's update: what happened, and how many of its lines changed (added, removed).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SdkFileUpdate {
    pub path: String,
    pub change: SdkFileChange,
    pub lines_added: usize,
    pub lines_removed: usize,
}

/// What `update` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SdkUpdate {
    /// The SDK version the project had (`None`: no record).
    pub from: Option<String>,
    /// The SDK version it has now.
    pub to: String,
    /// The contract version the SDK binds now.
    pub contract: String,
    pub files: Vec<SdkFileUpdate>,
}

/// The files of a component template that are the guest SDK: what `update` rewrites.
fn is_sdk_file(language: Language, path: &str) -> bool {
    let sdk: &[&str] = match language {
        Language::Rust => &["vendor/clat-guest/"],
        Language::Javascript => &["src/clat.js", "test/mock-host.js", "test/register-mock-host.js", "wit/"],
        Language::Python => &["clat.py", "clat_http.py", "clat_testing.py", "wit/"],
    };
    sdk.iter().any(|prefix| path.starts_with(prefix))
}

/// The SDK files of the `language` component template, as this clat writes them (path, text).
fn sdk_files(language: Language) -> Vec<(String, String)> {
    let files = template(language, PackageKind::Wasm).unwrap_or_default();
    files
        .iter()
        .filter(|(path, _)| is_sdk_file(language, path))
        .map(|(path, text)| (path.to_string(), text.replace("{{sdk_version}}", SDK_VERSION)))
        .collect()
}

/// Record the SDK a new project of `language` and `kind` at `dir` carries (a component project's; a server project
/// carries none): the name of the record written, if one was.
pub fn record_new_project(dir: &Path, language: Language, kind: PackageKind) -> Result<Option<String>, AuthoringError> {
    if kind != PackageKind::Wasm {
        return Ok(None);
    }
    write_record(dir, &record_of(&sdk_files(language)))?;
    Ok(Some(SDK_RECORD.to_string()))
}

fn hash(text: &str) -> String {
    format!("sha256:{}", crate::policy::identity::hex(&Sha256::digest(text.as_bytes())))
}

/// The contract version this clat binds.
fn contract_version() -> String {
    crate::contract::CONTRACT_VERSION.to_string()
}

/// The record of the SDK files `written` (path, text) into a project.
fn record_of(written: &[(String, String)]) -> SdkRecord {
    SdkRecord {
        version: SDK_VERSION.into(),
        contract: contract_version(),
        files: written.iter().map(|(path, text)| (path.clone(), hash(text))).collect(),
    }
}

/// Write `record` into the project at `dir`.
fn write_record(dir: &Path, record: &SdkRecord) -> Result<(), AuthoringError> {
    let text = serde_json::to_string_pretty(record).expect("a record serializes") + "\n";
    std::fs::write(dir.join(SDK_RECORD), text).map_err(io(format!("cannot write {SDK_RECORD}")))
}

/// The project's record; `None` when it has none (made before records were kept) or it cannot be read.
pub fn read_record(dir: &Path) -> Option<SdkRecord> {
    let text = crate::home::files::read_config_text(&dir.join(SDK_RECORD)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Lines of `new` not in `old`, and of `old` not in `new` (as multisets).
fn changed_lines(old: &str, new: &str) -> (usize, usize) {
    let mut counts: std::collections::HashMap<&str, isize> = std::collections::HashMap::new();
    for line in new.lines() {
        *counts.entry(line).or_default() += 1;
    }
    for line in old.lines() {
        *counts.entry(line).or_default() -= 1;
    }
    let added = counts.values().filter(|n| **n > 0).map(|n| *n as usize).sum();
    let removed = counts.values().filter(|n| **n < 0).map(|n| n.unsigned_abs()).sum();
    (added, removed)
}

/// Rewrite the SDK files of the `language` project at `dir` to this clat's SDK (`force`: also those edited since
/// they were written), keeping the record; what happened to each.
pub fn update(dir: &Path, language: Language, force: bool) -> Result<SdkUpdate, AuthoringError> {
    let before = read_record(dir);
    let mut record = before.clone().unwrap_or_default();
    let mut files = Vec::new();
    for (path, text) in sdk_files(language) {
        let target = dir.join(&path);
        let current = std::fs::read_to_string(&target).ok();
        let untouched = |now: &str| before.as_ref().and_then(|r| r.files.get(&path)).is_some_and(|h| *h == hash(now));
        let change = match &current {
            Some(now) if *now == text => SdkFileChange::UpToDate,
            None => SdkFileChange::Added,
            Some(now) if untouched(now) => SdkFileChange::Updated,
            Some(_) if force => SdkFileChange::Replaced,
            Some(_) => SdkFileChange::Kept,
        };
        let (lines_added, lines_removed) = match (&current, change) {
            (_, SdkFileChange::UpToDate | SdkFileChange::Kept) => (0, 0),
            (Some(now), _) => changed_lines(now, &text),
            (None, _) => (text.lines().count(), 0),
        };
        if matches!(change, SdkFileChange::Updated | SdkFileChange::Added | SdkFileChange::Replaced) {
            std::fs::create_dir_all(target.parent().unwrap_or(dir)).map_err(io(format!("cannot create {path}")))?;
            std::fs::write(&target, &text).map_err(io(format!("cannot write {path}")))?;
        }
        if change != SdkFileChange::Kept {
            record.files.insert(path.clone(), hash(&text));
        }
        files.push(SdkFileUpdate { path, change, lines_added, lines_removed });
    }
    record.version = SDK_VERSION.into();
    record.contract = contract_version();
    write_record(dir, &record)?;
    Ok(SdkUpdate { from: before.map(|r| r.version), to: SDK_VERSION.into(), contract: contract_version(), files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_count_what_each_side_has_that_the_other_does_not() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nc\nd\ne\n"), (2, 1));
        assert_eq!(changed_lines("x\nx\n", "x\n"), (0, 1));
    }
}
