//! Reading the files CLAT is configured by — the home's documents (`mcp.json`,
//! trust, approvals, credentials, the model's config, the plugin index, a
//! plugin's manifest) and a project's `.mcp.json` — each within
//! `CONFIG_FILE_MAX_BYTES`, and the home's records of what extensions listed
//! (pins, listings, kept definitions) within `HOME_RECORD_MAX_BYTES`. Only a
//! regular file is read (a link to `/dev/zero`, a FIFO or a directory is
//! refused before it is opened), never more than its bound, and a project's
//! file that is a link leaving the project is refused. A missing file stays
//! `NotFound` for the caller, which names the file in every other error.

use std::io::{Error, ErrorKind, Read};
use std::path::Path;

use crate::limits::{CONFIG_FILE_MAX_BYTES, HOME_RECORD_MAX_BYTES};

/// The bytes of the configuration file at `path`, within `CONFIG_FILE_MAX_BYTES`.
pub fn read_config_file(path: &Path) -> std::io::Result<Vec<u8>> {
    read_bounded(path, CONFIG_FILE_MAX_BYTES, "a configuration file")
}

/// The bytes of one of the home's records at `path`, within `HOME_RECORD_MAX_BYTES`.
pub fn read_home_record(path: &Path) -> std::io::Result<Vec<u8>> {
    read_bounded(path, HOME_RECORD_MAX_BYTES, "a record of the home")
}

/// The text of one of the home's records at `path`, within `HOME_RECORD_MAX_BYTES`.
pub fn read_home_record_text(path: &Path) -> std::io::Result<String> {
    utf8(read_home_record(path)?)
}

/// A regular file's bytes, at most `max` of them (`what` names the bound in the error).
fn read_bounded(path: &Path, max: u64, what: &str) -> std::io::Result<Vec<u8>> {
    let too_large = || Error::new(ErrorKind::FileTooLarge, format!("it is over the {max}-byte limit for {what}"));
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "it is not a regular file"));
    }
    if metadata.len() > max {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    std::fs::File::open(path)?.take(max + 1).read_to_end(&mut bytes)?;
    // A file that grew after its size was read.
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}

/// A file's bytes as text; not UTF-8 is an `InvalidData` error saying so.
pub fn utf8(bytes: Vec<u8>) -> std::io::Result<String> {
    String::from_utf8(bytes).map_err(|_| Error::new(ErrorKind::InvalidData, "it is not UTF-8"))
}

/// The text of the configuration file at `path`, within the bound.
pub fn read_config_text(path: &Path) -> std::io::Result<String> {
    utf8(read_config_file(path)?)
}

/// The bytes of `relative`, a configuration file of the project at `root`
/// (canonical), within the bound: a link that leads out of the project is
/// refused, whatever it points at.
pub fn read_project_file(root: &Path, relative: &str) -> std::io::Result<Vec<u8>> {
    let root = std::fs::canonicalize(root)?;
    let real = std::fs::canonicalize(root.join(relative))?;
    if !real.starts_with(&root) {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("it is a link to {}, outside the project: a project's file stays in the project", real.display()),
        ));
    }
    read_config_file(&real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn past_its_bound_a_file_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let (config, record) = (dir.path().join("config.json"), dir.path().join("record.json"));
        // Sparse: their sizes are past the bounds, their blocks are not written.
        std::fs::File::create(&config).unwrap().set_len(CONFIG_FILE_MAX_BYTES + 1).unwrap();
        std::fs::File::create(&record).unwrap().set_len(HOME_RECORD_MAX_BYTES + 1).unwrap();
        let error = read_config_file(&config).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge);
        assert!(error.to_string().contains("over the 1048576-byte limit for a configuration file"), "{error}");
        assert_eq!(read_home_record(&record).unwrap_err().kind(), ErrorKind::FileTooLarge);
        // At the bound, a record is read; a configuration file one byte past it is not.
        std::fs::File::create(&record).unwrap().set_len(CONFIG_FILE_MAX_BYTES + 1).unwrap();
        assert_eq!(read_home_record(&record).unwrap().len() as u64, CONFIG_FILE_MAX_BYTES + 1);
        std::fs::File::create(&config).unwrap().set_len(CONFIG_FILE_MAX_BYTES).unwrap();
        assert_eq!(read_config_file(&config).unwrap().len() as u64, CONFIG_FILE_MAX_BYTES);
    }

    #[test]
    fn only_regular_files_are_opened_and_a_project_file_stays_in_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir(&project).unwrap();
        let fifo = project.join("fifo.json");
        let fifo_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads the NUL-terminated path and touches no other memory.
        assert_eq!(unsafe { libc::mkfifo(fifo_path.as_ptr(), 0o600) }, 0);
        // A FIFO nobody writes would block the open: it is refused before.
        for path in [fifo.as_path(), Path::new("/dev/zero"), project.as_path()] {
            let error = read_config_file(path).unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidInput, "{}", path.display());
            assert_eq!(error.to_string(), "it is not a regular file");
        }
        std::fs::write(dir.path().join("outside.json"), "{}").unwrap();
        std::os::unix::fs::symlink("../outside.json", project.join(".mcp.json")).unwrap();
        let error = read_project_file(&project, ".mcp.json").unwrap_err();
        assert!(error.to_string().contains("outside the project"), "{error}");
        std::fs::write(project.join("inside.json"), "{}").unwrap();
        std::os::unix::fs::symlink("inside.json", project.join("linked.json")).unwrap();
        assert_eq!(read_project_file(&project, "linked.json").unwrap(), b"{}");
        assert_eq!(read_project_file(&project, "missing.json").unwrap_err().kind(), ErrorKind::NotFound);
    }
}
