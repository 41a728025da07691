//! The author's test cases (`cases.jsonl`): one JSON object per line — the
//! tool, its arguments, the permission mode, and what to expect: an error of
//! the pipeline by kind (`denied`, `invalid_arguments`, …), `is_error`, text
//! that must appear, structured fields that must match. The whole file is
//! read and checked (file and line named) before anything runs.

use std::path::Path;
use std::str::FromStr;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::{AuthoringError, io};
use crate::contract::{PermissionMode, ToolOutput};

/// The error kinds a case may expect (those `clat call --json` reports).
pub const CALL_ERROR_KINDS: [&str; 7] =
    ["unknown_tool", "invalid_arguments", "denied", "cancelled", "timed_out", "failed", "withdrawn"];

/// One or several strings.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Texts {
    One(String),
    Many(Vec<String>),
}

impl Texts {
    fn all(&self) -> Vec<&str> {
        match self {
            Texts::One(t) => vec![t.as_str()],
            Texts::Many(ts) => ts.iter().map(String::as_str).collect(),
        }
    }
}

/// What a case expects of its call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The call fails in the pipeline with this kind.
    pub error: Option<String>,
    /// The tool's result is (`true`) or is not (`false`, the default) an error result.
    pub is_error: Option<bool>,
    /// Text that must appear in the result's text (or the error's message).
    pub text: Option<Texts>,
    /// Fields the structured content must have, with these values.
    pub structured: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseLine {
    name: Option<String>,
    tool: String,
    #[serde(default = "empty_object")]
    arguments: Value,
    mode: Option<String>,
    #[serde(default)]
    expect: Expect,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// One case, checked.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub tool: String,
    pub arguments: Value,
    pub mode: PermissionMode,
    pub expect: Expect,
    /// Its line in the file.
    pub line: usize,
}

/// Read and check a cases file: blank lines and `#` comments are skipped.
pub fn read_cases(path: &Path) -> Result<Vec<Case>, AuthoringError> {
    let text = std::fs::read_to_string(path).map_err(io(format!("cannot read {}", path.display())))?;
    parse_cases(path, &text)
}

/// Check the text of a cases file; `path` names it in errors.
pub fn parse_cases(path: &Path, text: &str) -> Result<Vec<Case>, AuthoringError> {
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let at = |message: String| AuthoringError::Invalid(format!("{}:{}: {message}", path.display(), i + 1));
        let raw: CaseLine = serde_json::from_str(trimmed).map_err(|e| {
            at(format!("expected {{\"tool\": NAME, \"arguments\": {{...}}, \"mode\": MODE, \"expect\": {{...}}}}: {e}"))
        })?;
        if !raw.arguments.is_object() {
            return Err(at("`arguments` must be a JSON object".into()));
        }
        let mode = match &raw.mode {
            Some(mode) => PermissionMode::from_str(mode).map_err(at)?,
            None => PermissionMode::Ask,
        };
        if let Some(kind) = &raw.expect.error {
            if !CALL_ERROR_KINDS.contains(&kind.as_str()) {
                return Err(at(format!("expect.error {kind:?} is not one of {}", CALL_ERROR_KINDS.join(", "))));
            }
            if raw.expect.is_error.is_some() || raw.expect.structured.is_some() {
                return Err(at("expect.error (the call fails) excludes is_error and structured (a result)".into()));
            }
        }
        let name = raw.name.clone().unwrap_or_else(|| format!("line {}: {}", i + 1, raw.tool));
        cases.push(Case { name, tool: raw.tool, arguments: raw.arguments, mode, expect: raw.expect, line: i + 1 });
    }
    Ok(cases)
}

/// How a case's call ended.
pub enum Outcome<'a> {
    Result(&'a ToolOutput),
    /// The pipeline's error: its kind and message.
    Error {
        kind: &'a str,
        message: &'a str,
    },
}

/// How an outcome differs from what its case expects (the first difference).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Mismatch {
    #[error("expected the call to fail with {expected}, it failed with {kind}: {message}")]
    OtherError { expected: String, kind: String, message: String },
    #[error("the call failed with {kind}: {message}")]
    Failed { kind: String, message: String },
    #[error("expected the call to fail with {expected}, it returned: {text}")]
    Returned { expected: String, text: String },
    #[error("expected is_error {expected}, got {}: {text}", if *expected { "a result that is not an error" } else { "an error result" })]
    IsError { expected: bool, text: String },
    #[error("expected structured content, the result has none")]
    NoStructured,
    /// The values as JSON text; `got` is `None` when the field is missing.
    #[error("expected structured.{key} = {expected}, got {}", got.as_deref().unwrap_or("nothing"))]
    Structured { key: String, expected: String, got: Option<String> },
    #[error("expected the text to contain {wanted:?}, got {text:?}")]
    Text { wanted: String, text: String },
}

/// Judge a case: `Ok` when the outcome is what it expects, else how it differs.
pub fn judge(case: &Case, outcome: Outcome<'_>) -> Result<(), Mismatch> {
    let expect = &case.expect;
    let text = match outcome {
        Outcome::Error { kind, message } => {
            match &expect.error {
                Some(expected) if expected == kind => {}
                Some(expected) => {
                    return Err(Mismatch::OtherError {
                        expected: expected.clone(),
                        kind: kind.to_string(),
                        message: message.to_string(),
                    });
                }
                None => return Err(Mismatch::Failed { kind: kind.to_string(), message: message.to_string() }),
            }
            message.to_string()
        }
        Outcome::Result(output) => {
            if let Some(kind) = &expect.error {
                return Err(Mismatch::Returned { expected: kind.clone(), text: output.joined_text() });
            }
            let want_error = expect.is_error.unwrap_or(false);
            if output.is_error != want_error {
                return Err(Mismatch::IsError { expected: want_error, text: output.joined_text() });
            }
            if let Some(fields) = &expect.structured {
                let structured: Option<Value> = output.structured.as_deref().and_then(|s| serde_json::from_str(s).ok());
                let Some(structured) = structured else {
                    return Err(Mismatch::NoStructured);
                };
                for (key, value) in fields {
                    if structured.get(key) != Some(value) {
                        return Err(Mismatch::Structured {
                            key: key.clone(),
                            expected: value.to_string(),
                            got: structured.get(key).map(Value::to_string),
                        });
                    }
                }
            }
            output.joined_text()
        }
    };
    for wanted in expect.text.iter().flat_map(Texts::all) {
        if !text.contains(wanted) {
            return Err(Mismatch::Text { wanted: wanted.to_string(), text });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_line_is_named_with_its_file_and_line() {
        let path = Path::new("cases.jsonl");
        let text = "{\"tool\": \"a\"}\n\n# a comment\n{\"tool\": \"b\", \"colour\": 1}\n";
        let err = parse_cases(path, text).unwrap_err().to_string();
        assert!(err.starts_with("cases.jsonl:4: ") && err.contains("colour"), "{err}");
        let err = parse_cases(path, "{\"tool\": \"a\", \"mode\": \"yolo\"}").unwrap_err().to_string();
        assert!(err.starts_with("cases.jsonl:1: "), "{err}");
        let err = parse_cases(path, "{\"tool\": \"a\", \"expect\": {\"error\": \"nope\"}}").unwrap_err().to_string();
        assert!(err.contains("not one of unknown_tool"), "{err}");
        let cases = parse_cases(path, "{\"tool\": \"a\"}\n{\"name\": \"b\", \"tool\": \"b\"}").unwrap();
        assert_eq!((cases[0].name.as_str(), cases[1].name.as_str(), cases[1].line), ("line 1: a", "b", 2));
    }

    #[test]
    fn outcomes_are_judged_against_every_expectation() {
        let case = |expect: &str| {
            parse_cases(Path::new("c"), &format!("{{\"tool\": \"t\", \"expect\": {expect}}}")).unwrap().remove(0)
        };
        let output = ToolOutput {
            content: vec![crate::contract::ContentBlock::Text("sum=5".into())],
            structured: Some(r#"{"sum":5}"#.into()),
            is_error: false,
        };
        assert!(judge(&case(r#"{"text": "sum=5", "structured": {"sum": 5}}"#), Outcome::Result(&output)).is_ok());
        assert!(
            judge(&case(r#"{"structured": {"sum": 6}}"#), Outcome::Result(&output))
                .unwrap_err()
                .to_string()
                .contains("structured.sum")
        );
        assert!(judge(&case(r#"{"is_error": true}"#), Outcome::Result(&output)).is_err());
        assert!(
            judge(&case(r#"{"text": ["sum", "nope"]}"#), Outcome::Result(&output))
                .unwrap_err()
                .to_string()
                .contains("\"nope\"")
        );
        let denied = Outcome::Error { kind: "denied", message: "denied in read-only" };
        assert!(judge(&case(r#"{"error": "denied", "text": "read-only"}"#), denied).is_ok());
        let denied = Outcome::Error { kind: "denied", message: "x" };
        assert!(judge(&case("{}"), denied).unwrap_err().to_string().contains("failed with denied"));
    }
}
