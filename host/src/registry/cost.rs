//! What the registry's tools cost a model: each tool's definition — its
//! name, description and input schema, as compact JSON, the part of a
//! request that offers it — in bytes, and an estimate of its tokens (bytes ÷
//! `SCHEMA_BYTES_PER_TOKEN`: no tokenizer counts them), in all and by
//! extension (`clat tools`).

use serde::Serialize;
use serde_json::{Value, json};

use super::ToolInfo;

/// About how many bytes of a tool definition's JSON make one model token —
/// the estimate behind every token figure; byte-pair tokenizers average
/// about this on JSON Schema.
pub const SCHEMA_BYTES_PER_TOKEN: usize = 4;

/// The size of one tool's definition, or of several.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SchemaSize {
    /// Bytes of compact JSON.
    pub bytes: usize,
    /// Estimated tokens: `bytes` ÷ `SCHEMA_BYTES_PER_TOKEN`, rounded up.
    pub tokens: usize,
}

impl SchemaSize {
    /// The size of `bytes` bytes of definitions.
    pub fn of_bytes(bytes: usize) -> SchemaSize {
        SchemaSize { bytes, tokens: bytes.div_ceil(SCHEMA_BYTES_PER_TOKEN) }
    }

    /// The size of one definition (`definition`'s JSON).
    pub fn of_definition(definition: &Value) -> SchemaSize {
        SchemaSize::of_bytes(serde_json::to_vec(definition).map_or(0, |json| json.len()))
    }

    fn plus(self, other: SchemaSize) -> SchemaSize {
        SchemaSize::of_bytes(self.bytes + other.bytes)
    }
}

/// A tool as a model is offered it under `name`: its name, description and input schema (`clat serve` lists
/// this, with hints).
pub fn definition(name: &str, description: &str, input_schema: &Value) -> Value {
    json!({ "name": name, "description": description, "inputSchema": input_schema })
}

/// The size of a tool's definition.
pub(super) fn size_of(name: &str, description: &str, input_schema: &Value) -> SchemaSize {
    SchemaSize::of_definition(&definition(name, description, input_schema))
}

/// The definitions of a set of tools, in all and by extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SchemaTotals {
    pub tools: usize,
    #[serde(flatten)]
    pub size: SchemaSize,
    /// By extension (`native`, `mcp:NAME`, `wasm:NAME`), the costliest first.
    pub extensions: Vec<ExtensionSchemas>,
}

/// One extension's tools' definitions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtensionSchemas {
    pub extension: String,
    pub tools: usize,
    #[serde(flatten)]
    pub size: SchemaSize,
}

/// What `tools`' definitions cost together, and by extension.
pub fn schema_totals(tools: &[ToolInfo]) -> SchemaTotals {
    let mut extensions: Vec<ExtensionSchemas> = Vec::new();
    for tool in tools {
        let extension = tool.source.extension();
        match extensions.iter_mut().find(|e| e.extension == extension) {
            Some(seen) => (seen.tools, seen.size) = (seen.tools + 1, seen.size.plus(tool.schema)),
            None => extensions.push(ExtensionSchemas { extension, tools: 1, size: tool.schema }),
        }
    }
    // Stable: extensions that cost the same keep their registration order.
    extensions.sort_by_key(|e| std::cmp::Reverse(e.size.bytes));
    let size = SchemaSize::of_bytes(extensions.iter().map(|e| e.size.bytes).sum());
    SchemaTotals { tools: tools.len(), size, extensions }
}
