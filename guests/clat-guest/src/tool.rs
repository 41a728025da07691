//! A typed tool: its spec (the input schema derived from the argument type)
//! and its handler, type-erased so a plugin's tools fit in one list. Parse
//! errors and the handler's `Err` become tool errors (`is-error` outputs) the
//! model can read and correct.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::host::HostFailure;
use crate::{ContentBlock, HostError, ToolAnnotations, ToolOutput, ToolSpec};

/// The arguments of a tool that takes none (`{}`; anything else is refused).
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// A tool-level failure: the call ends as an `is-error` output with this text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        ToolError(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        ToolError(message.to_string())
    }
}

impl From<HostFailure> for ToolError {
    fn from(failure: HostFailure) -> Self {
        ToolError(failure.to_string())
    }
}

impl From<HostError> for ToolError {
    fn from(error: HostError) -> Self {
        ToolError(crate::host::describe(&error))
    }
}

impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        ToolError(error.to_string())
    }
}

/// What a handler may return.
pub trait IntoOutput {
    fn into_output(self) -> ToolOutput;
}

impl IntoOutput for ToolOutput {
    fn into_output(self) -> ToolOutput {
        self
    }
}

impl IntoOutput for String {
    fn into_output(self) -> ToolOutput {
        text(self)
    }
}

impl IntoOutput for &str {
    fn into_output(self) -> ToolOutput {
        text(self)
    }
}

/// A serializable value as output: structured content, and its JSON as text.
pub struct Json<T>(pub T);

impl<T: Serialize> IntoOutput for Json<T> {
    fn into_output(self) -> ToolOutput {
        match serde_json::to_value(&self.0) {
            Ok(value) => structured(serde_json::to_string_pretty(&value).unwrap_or_default(), &value),
            Err(e) => error(format!("the result could not be serialized: {e}")),
        }
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

/// A successful output with text for the model and structured content.
pub fn structured(text: impl Into<String>, value: &Value) -> ToolOutput {
    ToolOutput { structured: Some(value.to_string()), ..self::text(text) }
}

/// The text blocks of an output, joined by newlines (what a host tool answered is read the same way).
pub use crate::host::output_text;

pub(crate) fn bare_spec(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
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
    }
}

/// The JSON Schema of `T` as a tool schema: the root's `$schema` and `title`
/// are dropped (MCP's default dialect is 2020-12, the one generated).
fn schema_of<T: JsonSchema>() -> String {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    schema.to_string()
}

/// The effect hints of a tool, as builder methods of a type with a `spec: ToolSpec` field (`Tool`,
/// `ToolBuilder`): written once, inherent on both, so no trait needs importing.
macro_rules! hint_methods {
    () => {
        /// A display title.
        pub fn title(mut self, title: &str) -> Self {
            self.spec.title = Some(title.into());
            self
        }
        /// It changes nothing (the `external-read` or `network` effect).
        pub fn read_only(mut self) -> Self {
            self.spec.annotations.read_only = Some(true);
            self
        }
        /// It reaches nothing outside its arguments and CLAT's host services.
        pub fn closed_world(mut self) -> Self {
            self.spec.annotations.open_world = Some(false);
            self
        }
        /// It writes, but never destroys or overwrites (the `write` effect).
        pub fn non_destructive(mut self) -> Self {
            self.spec.annotations.destructive = Some(false);
            self
        }
        /// Calling it again with the same arguments has no further effect.
        pub fn idempotent(mut self) -> Self {
            self.spec.annotations.idempotent = Some(true);
            self
        }
    };
}
pub(crate) use hint_methods;

type Handler = Box<dyn Fn(Value) -> ToolOutput>;

/// One tool of a [`Plugin`](crate::Plugin): declared once, dispatched by name.
pub struct Tool {
    spec: ToolSpec,
    input_schema: fn() -> String,
    output_schema: Option<fn() -> String>,
    handler: Handler,
}

impl Tool {
    /// A tool named `name` whose arguments are an `A` (its schema derived) and
    /// whose handler returns text, a [`ToolOutput`] or [`Json`], or a
    /// [`ToolError`]. Without hints CLAT treats the tool as destructive: say
    /// what it does with [`read_only`](Tool::read_only) and the others.
    pub fn new<A, O, F>(name: &str, description: &str, handler: F) -> Tool
    where
        A: DeserializeOwned + JsonSchema + 'static,
        O: IntoOutput,
        F: Fn(A) -> Result<O, ToolError> + 'static,
    {
        let tool_name = name.to_string();
        Tool {
            spec: bare_spec(name, description),
            input_schema: schema_of::<A>,
            output_schema: None,
            handler: Box::new(move |arguments| match serde_json::from_value::<A>(arguments) {
                Ok(args) => match handler(args) {
                    Ok(output) => output.into_output(),
                    Err(e) => error(e.0),
                },
                Err(e) => error(format!("invalid arguments for {tool_name}: {e}")),
            }),
        }
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The spec listed to CLAT.
    pub fn spec(&self) -> ToolSpec {
        let mut spec = self.spec.clone();
        spec.input_schema = (self.input_schema)();
        spec.output_schema = self.output_schema.map(|schema| schema());
        spec
    }

    /// Run the tool on JSON-text arguments.
    pub fn call(&self, arguments: &str) -> ToolOutput {
        match serde_json::from_str::<Value>(arguments) {
            Ok(value) => (self.handler)(value),
            Err(e) => error(format!("arguments are not JSON: {e}")),
        }
    }

    hint_methods!();

    /// Its structured output is a `T` (the output schema derived).
    pub fn output<T: JsonSchema>(mut self) -> Self {
        self.output_schema = Some(schema_of::<T>);
        self
    }
}
