//! The author's sources checked by the language's own parser before a
//! toolchain runs (`node --check`, Python's `compile`), so a syntax error is
//! `file:line`, the line and the message, not the toolchain's "failed to parse".

use std::path::Path;
use std::process::Command;

use super::super::{AuthoringError, Language};
use super::authored_sources;

/// The parser that reports a syntax error as `file:line` with the line and
/// the message, and nothing of its own stack: `python3` compiling each file
/// in memory (no `__pycache__` written).
const PYTHON_SYNTAX_CHECK: &str = r#"
import sys
failed = False
for path in sys.argv[1:]:
    try:
        compile(open(path, encoding="utf-8").read(), path, "exec", dont_inherit=True)
    except SyntaxError as e:
        failed = True
        print(f"{e.filename}:{e.lineno}:{e.offset or 0}: SyntaxError: {e.msg}")
        if e.text:
            print("    " + e.text.rstrip())
            print("    " + " " * max((e.offset or 1) - 1, 0) + "^")
sys.exit(1 if failed else 0)
"#;

/// Parse the author's sources with the language's own parser before the
/// toolchain runs (componentize-js says only "failed to parse JS source";
/// componentize-py prints its own Rust backtrace): a syntax error is reported
/// as `file:line`, the line and the message. A parser that cannot be started
/// skips the check (the build still reports the error, less well).
pub(super) fn check_syntax(dir: &Path, language: Language, parser: &Path) -> Result<(), AuthoringError> {
    let sources = authored_sources(dir, language);
    let mut report = String::new();
    if language == Language::Python {
        let Ok(out) = Command::new(parser).arg("-c").arg(PYTHON_SYNTAX_CHECK).args(&sources).current_dir(dir).output()
        else {
            return Ok(());
        };
        if !out.status.success() {
            report.push_str(&String::from_utf8_lossy(&out.stdout));
        }
    } else {
        for source in &sources {
            let Ok(out) = Command::new(parser).arg("--check").arg(source).current_dir(dir).output() else {
                return Ok(());
            };
            if !out.status.success() {
                report.push_str(&node_syntax_report(&String::from_utf8_lossy(&out.stderr)));
            }
        }
    }
    if report.trim().is_empty() {
        return Ok(());
    }
    Err(AuthoringError::Syntax { language: language.as_str(), report: report.trim_end().to_string() })
}

/// `node --check`'s report without node's own stack: `file:line`, the line,
/// the caret, and the `SyntaxError: …` line.
fn node_syntax_report(stderr: &str) -> String {
    let mut kept = Vec::new();
    for line in stderr.lines() {
        kept.push(line);
        if line.starts_with("SyntaxError") {
            break;
        }
    }
    let mut report = kept.join("\n");
    report.push('\n');
    report
}
