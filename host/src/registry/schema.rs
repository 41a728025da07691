//! A tool's input schema: parsed from an extension's JSON text, compiled into
//! a validator at registration (an extension's, so one that does not compile
//! is refused there) or at the first call (a native tool's; a kept listing's,
//! checked when it was kept), never fetching a remote `$ref`.

use serde_json::Value;

use super::{ToolEntry, ToolSource};

/// When a tool's input schema is compiled: at registration (an extension's, so that one that does not compile is
/// refused there), or at its first call (a native tool's; a kept listing's, checked when it was kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SchemaCheck {
    Now,
    Checked,
}

/// An extension's input schema, as registration takes it: JSON text holding an object.
pub(super) fn parse_input_schema(text: &str) -> Result<Value, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(schema @ Value::Object(_)) => Ok(schema),
        Ok(_) => Err("the input schema must be a JSON object".to_string()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// Whether `register_external` would take this input schema (JSON text): the check a kept listing makes of its
/// tools once, so that their registration need not (`register_external_checked`).
pub fn check_input_schema(text: &str) -> Result<(), String> {
    compile_schema(&parse_input_schema(text)?, false).map(drop)
}

/// Schemas come from extensions: a `$ref` to another document is never
/// fetched (no network, no file). It validates as `true`, so those values
/// pass to the tool, which checks them itself.
/// A tool's input schema as a validator (never fetching a remote reference).
/// A native tool's schema is ours and uses only keywords every draft shares:
/// it is read as draft 7, whose meta-schema (which every schema is checked
/// against first, built once per process) costs a fraction of 2020-12's, so a
/// command that calls only native tools never builds the bigger one.
pub(super) fn compile_schema(schema: &Value, native: bool) -> Result<jsonschema::Validator, String> {
    let mut options = jsonschema::options().with_retriever(NeverFetch);
    if native {
        options = options.with_draft(jsonschema::Draft::Draft7);
    }
    options.build(schema).map_err(|e| e.to_string())
}

impl ToolEntry {
    /// The input schema's validator, compiled now if it was not at registration.
    pub(super) fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        let native = matches!(self.source, ToolSource::Native);
        self.validator.get_or_init(|| compile_schema(&self.input_schema, native)).as_ref().map_err(String::as_str)
    }
}

struct NeverFetch;

impl jsonschema::Retrieve for NeverFetch {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        tracing::debug!("not fetching the schema reference {uri}; it accepts any value");
        Ok(Value::Bool(true))
    }
}
