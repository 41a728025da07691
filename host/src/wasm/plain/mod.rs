//! Plain components: any WebAssembly component, not only one built for CLAT's
//! contract, as a plugin. Its exported functions — world-level, or in an
//! exported interface — are its tools: each function's input schema derived
//! from its WIT parameter types (`schema.rs`), its description from the WIT's
//! doc comment (`docs.rs`) unless the manifest gives one, its effect
//! external-read unless the manifest raises it; the call converts the
//! arguments to wasmtime's dynamic `Val`s and the returned value back to JSON
//! (`values.rs`) — no code generated per component. A function whose types a
//! tool cannot carry (resources and their methods, streams, futures) is not
//! offered, and the reason is kept for status. The runtime links a plain
//! component against WASI 0.2 only (`imports.rs`), under the same store,
//! limits and grants as a contract guest (`store.rs`).

mod docs;
pub mod schema;
pub mod values;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasmtime::component::types::{ComponentFunc, ComponentItem, Type};
use wasmtime::component::{Component, ComponentExportIndex, Instance, Val};
use wasmtime::{Engine, Store};

pub use docs::{FunctionDocs, WIT_DIR, check_wit_bytes, copy_wit, encode_wit, write_wit};

use crate::contract::{ContentBlock, Effect, ToolOutput, ToolSpec};
use crate::policy::effects::annotations_for_effect;
use crate::supply::capabilities::ToolDeclaration;
use values::{Budget, ValueError};

/// The effect of a plain component's tool its manifest does not raise: it reads what it was given, in a closed
/// world (an `http` grant it uses raises it to network in the registry, whatever the manifest says).
pub const PLAIN_DEFAULT_EFFECT: Effect = Effect::ExternalRead;

/// One exported function offered as a tool.
pub struct PlainFunction {
    /// The tool's own name: the function's, qualified by its interface when another export has the same name.
    pub tool: String,
    /// The exported interface it is in (`example:calculator/math@0.1.0`), `None` at world level.
    pub interface: Option<String>,
    /// Its WIT name.
    pub name: String,
    export: ComponentExportIndex,
    params: Vec<(String, Type)>,
    result: Option<Type>,
}

/// What a plain component offers: its functions, and those it cannot, each with why.
#[derive(Default)]
pub struct PlainExports {
    pub functions: Vec<PlainFunction>,
    pub refused: Vec<String>,
}

/// Whether an export is componentize-py's `init(app-name, symbols, stub-wasi)` (in its interface
/// `componentize-py:init/init`), which every component it builds exports for its build-time initialization and
/// which is no function of the author's.
fn is_componentize_py_init(name: &str, func: &ComponentFunc) -> bool {
    name == "init" && func.params().map(|(p, _)| p).eq(["app-name", "symbols", "stub-wasi"])
}

/// The last part of an interface's name: `example:calculator/math@0.1.0` → `math`.
fn short_name(interface: &str) -> &str {
    let unversioned = interface.split('@').next().unwrap_or(interface);
    unversioned.rsplit('/').next().unwrap_or(unversioned)
}

impl PlainExports {
    /// Read `component`'s exports. WASI interfaces it exports (`wasi:cli/run`, `wasi:http/incoming-handler`) are
    /// how a host runs it, not its functions, and are skipped.
    pub fn read(component: &Component, engine: &Engine) -> PlainExports {
        let mut found: Vec<(Option<String>, String, ComponentFunc, ComponentExportIndex)> = Vec::new();
        let mut skipped = Vec::new();
        let ty = component.component_type();
        for (name, export) in ty.exports(engine) {
            match export.ty {
                ComponentItem::ComponentFunc(func) => {
                    if let Some(index) = component.get_export_index(None, name) {
                        found.push((None, name.to_string(), func, index));
                    }
                }
                ComponentItem::ComponentInstance(_) if name.starts_with("wasi:") => skipped.push(format!(
                    "{name} is a WASI interface, how a host runs the component, not a function of its own"
                )),
                ComponentItem::ComponentInstance(instance) => {
                    let Some(parent) = component.get_export_index(None, name) else { continue };
                    for (function, item) in instance.exports(engine) {
                        if let ComponentItem::ComponentFunc(func) = item.ty
                            && let Some(index) = component.get_export_index(Some(&parent), function)
                        {
                            found.push((Some(name.to_string()), function.to_string(), func, index));
                        }
                    }
                }
                _ => {}
            }
        }
        let mut exports = PlainExports { functions: Vec::new(), refused: skipped };
        let count = |bare: &str| found.iter().filter(|(_, n, _, _)| n == bare).count();
        for (interface, name, func, export) in &found {
            let place = match interface {
                Some(i) => format!("{name} (in {i})"),
                None => name.clone(),
            };
            // Every component componentize-py builds has it: skipped without a word, or every install would name it.
            if is_componentize_py_init(name, func) {
                continue;
            }
            if name.starts_with('[') {
                exports.refused.push(format!(
                    "{place} belongs to a resource, which lives in its instance between calls, and every tool call \
                     has a fresh instance"
                ));
                continue;
            }
            let params: Vec<(String, Type)> = func.params().map(|(n, t)| (n.to_string(), t)).collect();
            let result = func.results().next();
            let why = params
                .iter()
                .find_map(|(p, t)| schema::unsupported(t).map(|why| format!("its parameter {p} is {why}")))
                .or_else(|| result.as_ref().and_then(schema::unsupported).map(|why| format!("it returns {why}")));
            if let Some(why) = why {
                exports.refused.push(format!("{place}: {why}"));
                continue;
            }
            let tool = match interface {
                Some(i) if count(name) > 1 => format!("{}-{name}", short_name(i)),
                _ => name.clone(),
            };
            exports.functions.push(PlainFunction {
                tool,
                interface: interface.clone(),
                name: name.clone(),
                export: *export,
                params,
                result,
            });
        }
        exports
    }

    /// The function offered as `tool`.
    pub fn get(&self, tool: &str) -> Option<&PlainFunction> {
        self.functions.iter().find(|f| f.tool == tool)
    }

    /// Each function as a tool: its schemas, its description (the manifest's, else its WIT doc comment, else its
    /// signature) and its effect's hints (the manifest's `effect`, else `PLAIN_DEFAULT_EFFECT`).
    pub fn tool_specs(
        &self,
        plugin: &str,
        declared: &BTreeMap<String, ToolDeclaration>,
        docs: &FunctionDocs,
    ) -> Vec<ToolSpec> {
        self.functions
            .iter()
            .map(|f| {
                let declaration = declared.get(&f.tool);
                let signature = f.signature();
                let description = match (
                    declaration.and_then(|d| d.description.as_deref()),
                    docs.of(f.interface.as_deref().map(short_name), &f.name),
                ) {
                    (Some(given), _) => given.to_string(),
                    (None, Some(doc)) => format!("{doc}\n\n{signature}"),
                    (None, None) => format!("{signature} (a function of the component {plugin})"),
                };
                let effect = declaration.and_then(|d| d.effect).map_or(PLAIN_DEFAULT_EFFECT, |e| e.effect());
                ToolSpec {
                    name: f.tool.clone(),
                    title: None,
                    description,
                    input_schema: schema::object(f.params.iter().cloned()).to_string(),
                    output_schema: f.output_type().map(|t| result_schema(&t).to_string()),
                    annotations: annotations_for_effect(effect),
                }
            })
            .collect()
    }
}

/// The structured output's schema: `{"result": value}` (MCP's structured content is an object).
fn result_schema(ty: &Type) -> Value {
    json!({ "type": "object", "properties": { "result": schema::schema_of(ty) }, "required": ["result"], "additionalProperties": false })
}

/// Why a plain call failed before or after the function ran (a trap is the runtime's).
#[derive(Debug, thiserror::Error)]
pub enum PlainCallError {
    #[error("the arguments do not fit {function}: {source}")]
    Arguments { function: String, source: ValueError },
    #[error("what {function} returned cannot be given back: {source}")]
    Result { function: String, source: ValueError },
    #[error("the component has no export {0} any more")]
    Missing(String),
}

impl PlainFunction {
    /// `name(a: s32, b: s32) -> s32`.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self.params.iter().map(|(n, t)| format!("{n}: {}", schema::wit_name(t))).collect();
        let result = self.result.as_ref().map(|t| format!(" -> {}", schema::wit_name(t))).unwrap_or_default();
        format!("{}({}){result}", self.name, params.join(", "))
    }

    /// The type of what a successful call gives back as structured output: the result, or a top-level `result`'s
    /// `ok` side (its `err` side is the tool's error); `None` when that is nothing.
    fn output_type(&self) -> Option<Type> {
        match &self.result {
            Some(Type::Result(result)) => result.ok(),
            other => other.clone(),
        }
    }

    /// Call it in a fresh `instance`: the arguments converted, the function run, the value it returns as
    /// structured output and text — or, for a top-level `result`'s `err`, a tool error carrying it.
    pub async fn call<T: Send>(
        &self,
        store: &mut Store<T>,
        instance: &Instance,
        arguments: &Value,
    ) -> Result<Result<ToolOutput, PlainCallError>, wasmtime::Error> {
        let function = self.name.clone();
        let empty = serde_json::Map::new();
        let object = match arguments {
            Value::Object(object) => object,
            Value::Null => &empty,
            other => {
                let source = ValueError::Mismatch {
                    at: "the arguments".into(),
                    expected: "an object".into(),
                    got: other.to_string(),
                };
                return Ok(Err(PlainCallError::Arguments { function, source }));
            }
        };
        let params = match values::fields_to_vals(self.params.iter().cloned(), object, "", &mut Budget::default()) {
            Ok(params) => params.into_iter().map(|(_, v)| v).collect::<Vec<Val>>(),
            Err(source) => return Ok(Err(PlainCallError::Arguments { function, source })),
        };
        let Some(func) = instance.get_func(&mut *store, self.export) else {
            return Ok(Err(PlainCallError::Missing(self.signature())));
        };
        let mut results = vec![Val::Bool(false); usize::from(self.result.is_some())];
        func.call_async(&mut *store, &params, &mut results).await?;
        let mut budget = Budget::default();
        let converted = match results.pop() {
            None => Ok(ToolOutput {
                content: vec![ContentBlock::Text("done (it returns nothing)".into())],
                structured: None,
                is_error: false,
            }),
            Some(Val::Result(Err(error))) => {
                let error = error.map_or(Ok(Value::Null), |e| values::to_json(&e, &mut budget));
                error.map(|e| {
                    let text = if e.is_null() { format!("{function} failed") } else { values::render(&e) };
                    ToolOutput { content: vec![ContentBlock::Text(text)], structured: None, is_error: true }
                })
            }
            Some(Val::Result(Ok(None))) => {
                Ok(ToolOutput { content: vec![ContentBlock::Text("ok".into())], structured: None, is_error: false })
            }
            Some(Val::Result(Ok(Some(value)))) => output(&value, &mut budget),
            Some(value) => output(&value, &mut budget),
        };
        Ok(converted.map_err(|source| PlainCallError::Result { function, source }))
    }
}

fn output(value: &Val, budget: &mut Budget) -> Result<ToolOutput, ValueError> {
    let json = values::to_json(value, budget)?;
    Ok(ToolOutput {
        content: vec![ContentBlock::Text(values::render(&json))],
        structured: Some(json!({ "result": json }).to_string()),
        is_error: false,
    })
}
