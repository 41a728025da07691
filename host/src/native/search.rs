//! The `search` tool: a regular expression over the project's text files,
//! respecting `.gitignore`, skipping binary and oversized files, with bounded
//! results shown as `path:line: text`.

use std::io::{BufRead, BufReader, Read};

use regex::RegexBuilder;
use serde::Deserialize;

use super::fence::PathFence;
use super::files::project_walker;
use super::{NativeFailure, display_path};
use crate::limits::{SEARCH_DEFAULT_RESULTS, SEARCH_MAX_FILE_BYTES, SEARCH_MAX_LINE_CHARS, SEARCH_MAX_RESULTS};

#[derive(Deserialize)]
pub struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    literal: bool,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    max_results: Option<usize>,
}

pub fn search(fence: &PathFence, args: SearchArgs) -> Result<String, NativeFailure> {
    let pattern = if args.literal { regex::escape(&args.pattern) } else { args.pattern.clone() };
    let re = RegexBuilder::new(&pattern)
        .case_insensitive(args.case_insensitive)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| NativeFailure::Invalid(format!("invalid regular expression: {e}")))?;
    let path = args.path.unwrap_or_default();
    let start = fence.resolve_existing(&path)?;
    let cap = args.max_results.unwrap_or(SEARCH_DEFAULT_RESULTS).clamp(1, SEARCH_MAX_RESULTS);
    let mut hits = Vec::new();
    let mut skipped_large = 0usize;
    'files: for entry in project_walker(&start, None).build() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let shown = display_path(fence, entry.path());
        // Re-open through the fence: the walker's path is only a name.
        let Ok((_, file, len)) = fence.open_file(&shown) else { continue };
        if len > SEARCH_MAX_FILE_BYTES {
            skipped_large += 1;
            continue;
        }
        let mut reader = BufReader::new(file.into_std().take(SEARCH_MAX_FILE_BYTES));
        if reader
            .fill_buf()
            .map(|head| head.iter().take(crate::limits::BINARY_SNIFF_BYTES).any(|&b| b == 0))
            .unwrap_or(true)
        {
            continue;
        }
        let mut line = Vec::new();
        let mut line_no = 0usize;
        while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            line_no += 1;
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            if re.is_match(text) {
                if hits.len() == cap {
                    hits.push(format!("[stopped at {cap} matches; narrow the pattern or `path`, or raise `max_results` (at most {SEARCH_MAX_RESULTS})]"));
                    break 'files;
                }
                let shown_text: String = text.chars().take(SEARCH_MAX_LINE_CHARS).collect();
                hits.push(format!("{shown}:{line_no}: {shown_text}"));
            }
            line.clear();
        }
    }
    if hits.is_empty() {
        hits.push("(no matches)".into());
    }
    if skipped_large > 0 {
        hits.push(format!("[{skipped_large} file(s) over {SEARCH_MAX_FILE_BYTES} bytes were not searched]"));
    }
    Ok(hits.join("\n"))
}
