//! The file tools: `list_files`, `read_file`, `write_file`, `edit_file`. All go
//! through the path fence; listing respects `.gitignore`; reading is bounded;
//! writes are atomic; edits replace an exact string and refuse ambiguity.

use std::io::{BufRead, BufReader, Read};

use ignore::WalkBuilder;
use serde::Deserialize;

use super::fence::{FenceError, PathFence};
use super::{NativeFailure, display_path};
use crate::limits::{LIST_FILES_DEFAULT_ENTRIES, LIST_FILES_MAX_ENTRIES, READ_FILE_MAX_BYTES, WRITE_FILE_MAX_BYTES};

/// A walker over `start` that respects `.gitignore` (also outside git
/// repositories), shows hidden files, skips `.git` and never follows symlinks.
pub(crate) fn project_walker(start: &std::path::Path, max_depth: Option<usize>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    builder
}

#[derive(Deserialize)]
pub struct ListFilesArgs {
    #[serde(default)]
    path: Option<String>,
    #[serde(default = "yes")]
    recursive: bool,
    #[serde(default)]
    max_entries: Option<usize>,
}

fn yes() -> bool {
    true
}

/// List files and directories (directories end in `/`), relative to the project root.
pub fn list_files(fence: &PathFence, args: ListFilesArgs) -> Result<String, NativeFailure> {
    let path = args.path.unwrap_or_default();
    let start = fence.resolve_existing(&path)?;
    if !start.is_dir() {
        return Err(NativeFailure::Invalid(format!("{path:?} is not a directory")));
    }
    let cap = args.max_entries.unwrap_or(LIST_FILES_DEFAULT_ENTRIES).clamp(1, LIST_FILES_MAX_ENTRIES);
    let mut lines = Vec::new();
    let mut more = false;
    for entry in project_walker(&start, if args.recursive { None } else { Some(1) }).build() {
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if lines.len() == cap {
            more = true;
            break;
        }
        let shown = display_path(fence, entry.path());
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        lines.push(if is_dir { format!("{shown}/") } else { shown });
    }
    if lines.is_empty() {
        lines.push("(no files)".into());
    }
    if more {
        lines.push(format!("[listing stopped at {cap} entries; narrow `path` or raise `max_entries` (at most {LIST_FILES_MAX_ENTRIES})]"));
    }
    Ok(lines.join("\n"))
}

#[derive(Deserialize)]
pub struct ReadFileArgs {
    path: String,
    #[serde(default)]
    start_line: Option<usize>,
    #[serde(default)]
    end_line: Option<usize>,
}

/// Read a text file, or lines `start_line..=end_line` of it (1-based), at most
/// `READ_FILE_MAX_BYTES` of text; a cut is marked with where to continue.
pub fn read_file(fence: &PathFence, args: ReadFileArgs) -> Result<String, NativeFailure> {
    open_read(fence, args)?.read()
}

/// A file opened through the fence for `read_file`, not read yet: its size
/// tells the caller where the read is cheapest to run.
pub struct OpenedRead {
    args: ReadFileArgs,
    file: std::fs::File,
    len: u64,
}

/// Check `args` and open the file through the fence (a few system calls, no reading).
pub fn open_read(fence: &PathFence, args: ReadFileArgs) -> Result<OpenedRead, NativeFailure> {
    let start = args.start_line.unwrap_or(1).max(1);
    if let Some(end) = args.end_line
        && end < start
    {
        return Err(NativeFailure::Invalid(format!("end_line {end} is before start_line {start}")));
    }
    let (_, file, len) = fence.open_file(&args.path)?;
    Ok(OpenedRead { args, file: file.into_std(), len })
}

impl OpenedRead {
    /// The file's size in bytes when it was opened.
    pub fn size(&self) -> u64 {
        self.len
    }

    /// Read the requested lines.
    pub fn read(self) -> Result<String, NativeFailure> {
        let OpenedRead { args, file, len } = self;
        let start = args.start_line.unwrap_or(1).max(1);
        let capacity = usize::try_from(len).unwrap_or(usize::MAX).min(READ_FILE_MAX_BYTES + 1) + 1;
        let mut reader = BufReader::with_capacity(capacity.clamp(8 * 1024, 64 * 1024), file);
        let head = reader.fill_buf().map_err(|e| io_failure(&args.path, e))?;
        if head.iter().take(crate::limits::BINARY_SNIFF_BYTES).any(|&b| b == 0) {
            return Err(NativeFailure::Invalid(format!("{} is a binary file", args.path)));
        }
        let mut out = String::with_capacity(if start == 1 { capacity } else { 0 });
        let mut line_no = 0usize;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(|e| io_failure(&args.path, e))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            if line_no < start {
                continue;
            }
            if args.end_line.is_some_and(|end| line_no > end) {
                break;
            }
            let text = String::from_utf8_lossy(&line);
            if out.len() + text.len() > READ_FILE_MAX_BYTES {
                out.push_str(&format!(
                    "\n[output cut at {READ_FILE_MAX_BYTES} bytes before line {line_no}; continue with start_line={line_no}]"
                ));
                return Ok(out);
            }
            out.push_str(&text);
        }
        if line_no < start && start > 1 {
            return Err(NativeFailure::Invalid(format!(
                "{} has {line_no} lines; start_line {start} is past the end",
                args.path
            )));
        }
        Ok(out)
    }
}

#[derive(Deserialize)]
pub struct WriteFileArgs {
    path: String,
    content: String,
    #[serde(default = "yes")]
    create_dirs: bool,
}

/// Write a whole file atomically.
pub fn write_file(fence: &PathFence, args: WriteFileArgs) -> Result<String, NativeFailure> {
    check_size(&args.path, args.content.len())?;
    let rel = fence.write_atomic(&args.path, args.content.as_bytes(), args.create_dirs)?;
    Ok(format!("wrote {} bytes to {}", args.content.len(), rel.display()))
}

#[derive(Deserialize)]
pub struct EditFileArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// Replace `old_string` with `new_string`: exactly one match unless `replace_all`.
pub fn edit_file(fence: &PathFence, args: EditFileArgs) -> Result<String, NativeFailure> {
    if args.old_string.is_empty() {
        return Err(NativeFailure::Invalid("old_string must not be empty".into()));
    }
    if args.old_string == args.new_string {
        return Err(NativeFailure::Invalid("old_string and new_string are the same; nothing to change".into()));
    }
    let (_, file, _) = fence.open_file(&args.path)?;
    let mut text = String::new();
    file.into_std()
        .take(WRITE_FILE_MAX_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| io_failure(&args.path, e))?;
    check_size(&args.path, text.len())?;
    let count = text.matches(args.old_string.as_str()).count();
    match count {
        0 => {
            return Err(NativeFailure::Invalid(format!(
                "old_string was not found in {}; nothing was changed (it must match exactly, whitespace included)",
                args.path
            )));
        }
        1 => {}
        n if !args.replace_all => {
            return Err(NativeFailure::Invalid(format!(
                "old_string occurs {n} times in {}; nothing was changed. Add surrounding context to make it unique, or set replace_all",
                args.path
            )));
        }
        _ => {}
    }
    let updated = text.replace(args.old_string.as_str(), &args.new_string);
    check_size(&args.path, updated.len())?;
    fence.write_atomic(&args.path, updated.as_bytes(), false)?;
    Ok(format!("replaced {count} occurrence{} in {}", if count == 1 { "" } else { "s" }, args.path))
}

fn check_size(path: &str, len: usize) -> Result<(), NativeFailure> {
    if len > WRITE_FILE_MAX_BYTES {
        return Err(NativeFailure::Invalid(format!(
            "{path}: {len} bytes exceed the {WRITE_FILE_MAX_BYTES}-byte limit for one file"
        )));
    }
    Ok(())
}

fn io_failure(path: &str, source: std::io::Error) -> NativeFailure {
    NativeFailure::Fence(FenceError::Io { path: path.to_string(), source })
}
