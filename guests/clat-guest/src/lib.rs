//! `clat-guest`: write a CLAT plugin in Rust.
//!
//! The contract (`wit/clat.wit`, package `artec:clat@0.1.0`) travels inside
//! this crate, a copy of the repository's `wit/` kept identical by a test, and
//! is bound here once with wit-bindgen. A plugin implements [`Plugin`] — its
//! tool specs and one `call` — and exports it with [`export_plugin!`]. Host services (context, the six
//! host tools, sampling, elicitation, log) are plain functions in [`host`].
//!
//! ```ignore
//! struct Hello;
//! impl clat_guest::Plugin for Hello {
//!     fn tools() -> Vec<clat_guest::ToolSpec> {
//!         vec![clat_guest::tool("greet", "Greet someone").read_only().closed_world()
//!             .schema(serde_json::json!({"type":"object","properties":{"name":{"type":"string"}}}))
//!             .build()]
//!     }
//!     fn call(name: &str, args: clat_guest::Args) -> Result<clat_guest::ToolOutput, String> {
//!         Ok(clat_guest::text(format!("hello, {}", args.str("name").unwrap_or("world"))))
//!     }
//! }
//! clat_guest::export_plugin!(Hello);
//! ```

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        // The contract this SDK binds travels with it (a copy of the repository's wit/, kept
        // identical by tests/test_contract_copies.rs), so the crate builds from anywhere.
        path: "wit",
        world: "clat-plugin",
        pub_export_macro: true,
        export_macro_name: "export_raw",
        default_bindings_module: "clat_guest::bindings",
    });
}

pub use bindings::artec::clat::types::{
    BinaryContent, BooleanField, ChoiceField, ChoiceOption, ContentBlock, ContextSnapshot, ElicitationForm,
    ElicitationResult, FieldAnswer, FieldKind, FieldValue, FormField, HostError, HostTool, LogLevel, NumberField, Role,
    SamplingMessage, SamplingRequest, SamplingResult, TextField, ToolAnnotations, ToolOutput, ToolSpec,
};
use serde_json::Value;

/// What a plugin implements.
pub trait Plugin {
    /// The tools this plugin offers (asked once at load).
    fn tools() -> Vec<ToolSpec>;
    /// Run one tool. `Err` is a plugin failure; a tool-level failure is
    /// `Ok(error(...))`.
    fn call(name: &str, args: Args) -> Result<ToolOutput, String>;
    /// The latest context, or `None` when the run ended. Default: ignore it.
    fn context_changed(_snapshot: Option<ContextSnapshot>) {}
}

#[doc(hidden)]
pub struct Adapter<P>(std::marker::PhantomData<P>);

impl<P: Plugin> bindings::exports::artec::clat::plugin::Guest for Adapter<P> {
    fn list_tools() -> Vec<ToolSpec> {
        P::tools()
    }
    fn call_tool(name: String, arguments: String) -> Result<ToolOutput, String> {
        let value: Value = serde_json::from_str(&arguments).map_err(|e| format!("arguments are not JSON: {e}"))?;
        P::call(&name, Args(value))
    }
    fn context_changed(snapshot: Option<ContextSnapshot>) {
        P::context_changed(snapshot)
    }
}

/// Export a [`Plugin`] implementation as this component's `plugin` interface.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        type __ClatPluginExport = $crate::Adapter<$plugin>;
        $crate::bindings::export_raw!(__ClatPluginExport with_types_in $crate::bindings);
    };
}

/// A tool call's JSON arguments.
#[derive(Debug, Clone)]
pub struct Args(pub Value);

impl Args {
    /// A string argument.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.0.get(key)?.as_str()
    }
    /// An integer argument.
    pub fn i64(&self, key: &str) -> Option<i64> {
        self.0.get(key)?.as_i64()
    }
    /// A boolean argument.
    pub fn bool(&self, key: &str) -> Option<bool> {
        self.0.get(key)?.as_bool()
    }
    /// A required string argument, or an error naming it.
    pub fn required_str(&self, key: &str) -> Result<&str, String> {
        self.str(key).ok_or_else(|| format!("missing string argument `{key}`"))
    }
    /// The whole arguments object deserialized into `T`.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_value(self.0.clone()).map_err(|e| format!("invalid arguments: {e}"))
    }
}

/// A successful output of one text block.
pub fn text(text: impl Into<String>) -> ToolOutput {
    ToolOutput { content: vec![ContentBlock::Text(text.into())], structured: None, is_error: false }
}

/// A tool-level failure of one text block.
pub fn error(text: impl Into<String>) -> ToolOutput {
    ToolOutput { content: vec![ContentBlock::Text(text.into())], structured: None, is_error: true }
}

/// The text blocks of an output, joined by newlines.
pub fn output_text(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Start describing a tool.
pub fn tool(name: &str, description: &str) -> ToolBuilder {
    ToolBuilder {
        spec: ToolSpec {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            annotations: ToolAnnotations {
                title: None,
                read_only: None,
                destructive: None,
                idempotent: None,
                open_world: None,
            },
        },
    }
}

/// Builds a [`ToolSpec`]. Annotations are hints: CLAT derives the effect from
/// them with the same table it uses for MCP servers (no hints: destructive).
pub struct ToolBuilder {
    spec: ToolSpec,
}

impl ToolBuilder {
    pub fn schema(mut self, schema: Value) -> Self {
        self.spec.input_schema = schema.to_string();
        self
    }
    pub fn title(mut self, title: &str) -> Self {
        self.spec.title = Some(title.into());
        self
    }
    pub fn read_only(mut self) -> Self {
        self.spec.annotations.read_only = Some(true);
        self
    }
    pub fn closed_world(mut self) -> Self {
        self.spec.annotations.open_world = Some(false);
        self
    }
    pub fn non_destructive(mut self) -> Self {
        self.spec.annotations.destructive = Some(false);
        self
    }
    pub fn build(self) -> ToolSpec {
        self.spec
    }
}

/// Host services, as plain functions.
pub mod host {
    use super::*;
    use crate::bindings::artec::clat::host_services as hs;

    /// The latest context snapshot.
    pub fn context() -> ContextSnapshot {
        hs::get_context()
    }
    /// Call a host tool with JSON arguments.
    pub fn call(tool: HostTool, arguments: &Value) -> Result<ToolOutput, HostError> {
        hs::call_tool(tool, &arguments.to_string())
    }
    /// `read_file` through the host; the text, or the tool's error text.
    pub fn read_file(path: &str) -> Result<String, String> {
        text_of(call(HostTool::ReadFile, &serde_json::json!({ "path": path })))
    }
    /// `list_files` through the host.
    pub fn list_files(path: &str) -> Result<String, String> {
        text_of(call(HostTool::ListFiles, &serde_json::json!({ "path": path })))
    }
    /// `search` through the host.
    pub fn search(pattern: &str) -> Result<String, String> {
        text_of(call(HostTool::Search, &serde_json::json!({ "pattern": pattern })))
    }
    /// One completion from the session model.
    pub fn sample(request: &SamplingRequest) -> Result<SamplingResult, HostError> {
        hs::create_message(request)
    }
    /// Ask the user one form.
    pub fn elicit(form: &ElicitationForm) -> Result<ElicitationResult, HostError> {
        hs::elicit(form)
    }
    /// Log one line.
    pub fn log(level: LogLevel, message: &str) {
        hs::log(level, message)
    }
    fn text_of(result: Result<ToolOutput, HostError>) -> Result<String, String> {
        match result {
            Ok(out) if !out.is_error => Ok(output_text(&out)),
            Ok(out) => Err(output_text(&out)),
            Err(e) => Err(describe(&e)),
        }
    }
    /// A host error as text.
    pub fn describe(error: &HostError) -> String {
        match error {
            HostError::Denied(m) => format!("denied: {m}"),
            HostError::Cancelled => "cancelled".into(),
            HostError::NoActiveRun => "no active run".into(),
            HostError::Timeout => "timed out".into(),
            HostError::BudgetExhausted(m) => format!("budget exhausted: {m}"),
            HostError::Invalid(m) => format!("invalid: {m}"),
            HostError::Unsupported(m) => format!("unsupported: {m}"),
            HostError::Failed(m) => format!("failed: {m}"),
        }
    }
}
