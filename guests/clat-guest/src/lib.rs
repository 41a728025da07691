//! `clat-guest`: write a CLAT plugin in Rust.
//!
//! The contract (`wit/clat.wit`, package `artec:clat@0.1.1`) travels inside
//! this crate, a copy of the repository's `wit/` kept identical by a test, and
//! is bound here once with wit-bindgen, so the crate builds from anywhere.
//!
//! A tool is declared once: name, description, effect hints and a typed
//! argument struct whose JSON Schema is derived (`schemars`). Arguments that
//! do not parse become a tool error the model can read; the handler's `Err`
//! does too. A plugin lists its [`Tool`]s and is exported with
//! [`export_plugin!`]; dispatch by name is the SDK's. Host services (context,
//! the six host tools, sampling, elicitation, log) are functions in [`host`]
//! with typed results; [`Form`] builds an elicitation form.
//!
//! ```ignore
//! use clat_guest::{Plugin, Tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! struct Hello;
//! impl Plugin for Hello {
//!     fn tools() -> Vec<Tool> {
//!         vec![Tool::new("greet", "Greet someone.", |a: Greet| Ok(format!("Hello, {}!", a.name))).read_only()]
//!     }
//! }
//! clat_guest::export_plugin!(Hello);
//! ```
//!
//! A plugin that wants the raw `list-tools` / `call-tool` pair (specs written
//! by hand, its own dispatch) implements [`RawPlugin`] and uses
//! [`export_raw_plugin!`].

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

mod form;
pub mod host;
#[cfg(feature = "http")]
pub mod http;
mod tool;

pub use bindings::artec::clat::types::{
    BinaryContent, BooleanField, ChoiceField, ChoiceOption, ContentBlock, ContextSnapshot, ElicitationForm,
    ElicitationResult, FieldAnswer, FieldKind, FieldValue, FormField, HostError, HostTool, LogLevel, NumberField, Role,
    RunSnapshot, SamplingMessage, SamplingRequest, SamplingResult, TextField, ToolAnnotations, ToolOutput, ToolSpec,
};
pub use form::{Answer, Answers, Form};
pub use tool::{IntoOutput, Json, NoArgs, Tool, ToolError, error, output_text, structured, text};

use serde_json::Value;

/// The contract version this SDK binds (`artec:clat@…`).
pub const CONTRACT_VERSION: &str = "0.1.1";

/// What a plugin implements: its tools, and optionally what to do with context changes.
pub trait Plugin {
    /// The plugin's tools. Asked at load for their specs, and at each call to find the one called.
    fn tools() -> Vec<Tool>;
    /// The latest context, or `None` when the run ended. Default: ignore it.
    fn context_changed(_snapshot: Option<ContextSnapshot>) {}
}

/// The low-level form of a plugin: specs and dispatch written by hand.
pub trait RawPlugin {
    /// The tools this plugin offers (asked once at load).
    fn tools() -> Vec<ToolSpec>;
    /// Run one tool. `Err` is a plugin failure; a tool-level failure is `Ok(error(...))`.
    fn call(name: &str, args: Args) -> Result<ToolOutput, String>;
    /// The latest context, or `None` when the run ended. Default: ignore it.
    fn context_changed(_snapshot: Option<ContextSnapshot>) {}
}

#[doc(hidden)]
pub struct Adapter<P>(std::marker::PhantomData<P>);

impl<P: Plugin> bindings::exports::artec::clat::plugin::Guest for Adapter<P> {
    fn list_tools() -> Vec<ToolSpec> {
        P::tools().iter().map(Tool::spec).collect()
    }
    fn call_tool(name: String, arguments: String) -> Result<ToolOutput, String> {
        let tool =
            P::tools().into_iter().find(|t| t.name() == name).ok_or_else(|| format!("no tool named {name:?}"))?;
        Ok(tool.call(&arguments))
    }
    fn context_changed(snapshot: Option<ContextSnapshot>) {
        P::context_changed(snapshot)
    }
}

#[doc(hidden)]
pub struct RawAdapter<P>(std::marker::PhantomData<P>);

impl<P: RawPlugin> bindings::exports::artec::clat::plugin::Guest for RawAdapter<P> {
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

/// Export a [`Plugin`] as this component's `plugin` interface.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        type __ClatPluginExport = $crate::Adapter<$plugin>;
        $crate::bindings::export_raw!(__ClatPluginExport with_types_in $crate::bindings);
    };
}

/// Export a [`RawPlugin`] as this component's `plugin` interface.
#[macro_export]
macro_rules! export_raw_plugin {
    ($plugin:ty) => {
        type __ClatPluginExport = $crate::RawAdapter<$plugin>;
        $crate::bindings::export_raw!(__ClatPluginExport with_types_in $crate::bindings);
    };
}

/// A raw tool call's JSON arguments (for [`RawPlugin`]).
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

/// Start a raw tool spec (for [`RawPlugin`]).
pub fn tool(name: &str, description: &str) -> ToolBuilder {
    ToolBuilder { spec: tool::bare_spec(name, description) }
}

/// Builds a raw [`ToolSpec`]. Annotations are hints: CLAT derives the effect from
/// them with the same table it uses for MCP servers (no hints: destructive).
pub struct ToolBuilder {
    spec: ToolSpec,
}

impl ToolBuilder {
    pub fn schema(mut self, schema: Value) -> Self {
        self.spec.input_schema = schema.to_string();
        self
    }
    tool::hint_methods!();
    pub fn build(self) -> ToolSpec {
        self.spec
    }
}
