//! Values across the line between JSON and a component: a tool's arguments
//! converted to wasmtime's dynamic `Val`s of the function's parameter types,
//! and what the function returns converted back to JSON, by the rules of
//! `schema.rs`. A value converted counts its parts against
//! `COMPONENT_VALUE_PARTS_MAX` (a returned list of millions of numbers fails
//! with a clear error, not a JSON text hundreds of MiB long).

use serde_json::{Map, Value};
use wasmtime::component::Val;
use wasmtime::component::types::Type;

use super::schema::{NON_FINITE, wit_name};
use crate::limits::COMPONENT_VALUE_PARTS_MAX;

/// Why a value could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("{at}: expected {expected}, got {got}")]
    Mismatch { at: String, expected: String, got: String },
    #[error("{at}: {message}")]
    Invalid { at: String, message: String },
    #[error(
        "the value has more than {COMPONENT_VALUE_PARTS_MAX} parts (list items, fields, cases); CLAT converts at most that many"
    )]
    TooLarge,
}

/// Counts the parts of values converted, against `COMPONENT_VALUE_PARTS_MAX`.
#[derive(Debug, Default)]
pub struct Budget {
    parts: usize,
}

impl Budget {
    fn spend(&mut self) -> Result<(), ValueError> {
        self.parts += 1;
        if self.parts > COMPONENT_VALUE_PARTS_MAX { Err(ValueError::TooLarge) } else { Ok(()) }
    }
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

/// The `Val` of `ty` that `value` writes; `at` names it in errors (`point.x`).
pub fn to_val(ty: &Type, value: &Value, at: &str, budget: &mut Budget) -> Result<Val, ValueError> {
    budget.spend()?;
    let mismatch = || ValueError::Mismatch { at: at.to_string(), expected: wit_name(ty), got: kind(value) };
    let invalid = |message: String| ValueError::Invalid { at: at.to_string(), message };
    macro_rules! int {
        ($variant:ident, $t:ty) => {{
            let n = integer(value).ok_or_else(mismatch)?;
            Val::$variant(<$t>::try_from(n).map_err(|_| invalid(format!("{n} is out of range for {}", wit_name(ty))))?)
        }};
    }
    Ok(match ty {
        Type::Bool => Val::Bool(value.as_bool().ok_or_else(mismatch)?),
        Type::S8 => int!(S8, i8),
        Type::U8 => int!(U8, u8),
        Type::S16 => int!(S16, i16),
        Type::U16 => int!(U16, u16),
        Type::S32 => int!(S32, i32),
        Type::U32 => int!(U32, u32),
        Type::S64 => int!(S64, i64),
        Type::U64 => int!(U64, u64),
        Type::Float32 => Val::Float32(float(value).ok_or_else(mismatch)? as f32),
        Type::Float64 => Val::Float64(float(value).ok_or_else(mismatch)?),
        Type::Char => {
            let text = value.as_str().ok_or_else(mismatch)?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(invalid(format!("a char is one character, not {:?}", text))),
            }
        }
        Type::String => Val::String(value.as_str().ok_or_else(mismatch)?.to_string()),
        Type::List(list) => {
            let items = value.as_array().ok_or_else(mismatch)?;
            Val::List(items_to_vals(&list.ty(), items, at, budget)?)
        }
        Type::FixedLengthList(list) => {
            let items = value.as_array().ok_or_else(mismatch)?;
            if items.len() != list.len() as usize {
                return Err(invalid(format!("expected {} items, got {}", list.len(), items.len())));
            }
            Val::FixedLengthList(items_to_vals(&list.ty(), items, at, budget)?)
        }
        Type::Record(record) => {
            let object = value.as_object().ok_or_else(mismatch)?;
            let fields = record.fields().map(|field| (field.name.to_string(), field.ty));
            Val::Record(fields_to_vals(fields, object, at, budget)?)
        }
        Type::Tuple(tuple) => {
            let items = value.as_array().ok_or_else(mismatch)?;
            if items.len() != tuple.types().len() {
                return Err(invalid(format!("expected {} items, got {}", tuple.types().len(), items.len())));
            }
            let vals =
                tuple.types().zip(items).enumerate().map(|(i, (t, v))| to_val(&t, v, &format!("{at}[{i}]"), budget));
            Val::Tuple(vals.collect::<Result<_, _>>()?)
        }
        Type::Variant(variant) => {
            let (name, payload) = one_key(value).ok_or_else(mismatch)?;
            let case = variant.cases().find(|c| c.name == name).ok_or_else(|| {
                let cases: Vec<&str> = variant.cases().map(|c| c.name).collect();
                invalid(format!("{name:?} is not one of its cases ({})", cases.join(", ")))
            })?;
            let payload = match (case.ty, payload) {
                (None, None) => None,
                (Some(t), Some(v)) => Some(Box::new(to_val(&t, v, &format!("{at}.{name}"), budget)?)),
                (None, Some(_)) => {
                    return Err(invalid(format!("the case {name} carries nothing: write it \"{name}\"")));
                }
                (Some(t), None) => {
                    return Err(invalid(format!(
                        "the case {name} carries a {}: write {{\"{name}\": …}}",
                        wit_name(&t)
                    )));
                }
            };
            Val::Variant(name.to_string(), payload)
        }
        Type::Enum(names) => {
            let name = value.as_str().ok_or_else(mismatch)?;
            if !names.names().any(|n| n == name) {
                let all: Vec<&str> = names.names().collect();
                return Err(invalid(format!("{name:?} is not one of {}", all.join(", "))));
            }
            Val::Enum(name.to_string())
        }
        Type::Option(option) => {
            let inner = option.ty();
            match value {
                Value::Null => Val::Option(None),
                _ if matches!(inner, Type::Option(_)) => {
                    let some = value
                        .as_object()
                        .and_then(|o| o.get("some"))
                        .filter(|_| value.as_object().is_some_and(|o| o.len() == 1));
                    let some = some.ok_or_else(|| invalid("an option of an option is null or {\"some\": …}".into()))?;
                    Val::Option(Some(Box::new(to_val(&inner, some, at, budget)?)))
                }
                _ => Val::Option(Some(Box::new(to_val(&inner, value, at, budget)?))),
            }
        }
        Type::Result(result) => {
            let (side, payload) = match one_key(value) {
                Some((side @ ("ok" | "err"), payload)) => (side, payload),
                _ => return Err(invalid("a result is {\"ok\": …} or {\"err\": …}".into())),
            };
            let ty = if side == "ok" { result.ok() } else { result.err() };
            let payload = match (ty, payload) {
                (Some(t), Some(v)) => Some(Box::new(to_val(&t, v, &format!("{at}.{side}"), budget)?)),
                (None, None | Some(Value::Null)) => None,
                (Some(t), None) => return Err(invalid(format!("{side} carries a {}", wit_name(&t)))),
                (None, Some(_)) => return Err(invalid(format!("{side} carries nothing: write {{\"{side}\": null}}"))),
            };
            Val::Result(if side == "ok" { Ok(payload) } else { Err(payload) })
        }
        Type::Flags(flags) => {
            let items = value.as_array().ok_or_else(mismatch)?;
            let mut set = Vec::new();
            for item in items {
                budget.spend()?;
                let name = item.as_str().filter(|n| flags.names().any(|f| f == *n)).ok_or_else(|| {
                    let all: Vec<&str> = flags.names().collect();
                    invalid(format!("{item} is not one of its flags ({})", all.join(", ")))
                })?;
                if !set.iter().any(|s| s == name) {
                    set.push(name.to_string());
                }
            }
            Val::Flags(set)
        }
        Type::Map(_) | Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err(invalid(format!("a {} cannot be passed to a tool", wit_name(ty))));
        }
    })
}

fn items_to_vals(ty: &Type, items: &[Value], at: &str, budget: &mut Budget) -> Result<Vec<Val>, ValueError> {
    items.iter().enumerate().map(|(i, v)| to_val(ty, v, &format!("{at}[{i}]"), budget)).collect()
}

/// Named values from an object (a record's fields, a function's arguments): an option absent is `none`; a name
/// the object has that is not a field is refused.
pub fn fields_to_vals(
    fields: impl Iterator<Item = (String, Type)>,
    object: &Map<String, Value>,
    at: &str,
    budget: &mut Budget,
) -> Result<Vec<(String, Val)>, ValueError> {
    let fields: Vec<(String, Type)> = fields.collect();
    if let Some(extra) = object.keys().find(|k| !fields.iter().any(|(name, _)| name == *k)) {
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        return Err(ValueError::Invalid {
            at: at.to_string(),
            message: format!("{extra:?} is not one of its fields ({})", names.join(", ")),
        });
    }
    let place = |name: &str| if at.is_empty() { name.to_string() } else { format!("{at}.{name}") };
    fields
        .into_iter()
        .map(|(name, ty)| {
            let val = match object.get(&name) {
                Some(value) => to_val(&ty, value, &place(&name), budget)?,
                None if matches!(ty, Type::Option(_)) => Val::Option(None),
                None => {
                    return Err(ValueError::Invalid {
                        at: place(&name),
                        message: format!("missing (a {})", wit_name(&ty)),
                    });
                }
            };
            Ok((name, val))
        })
        .collect()
}

/// A whole number from JSON (`3` or `3.0`).
fn integer(value: &Value) -> Option<i128> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 2f64.powi(64)).then_some(f as i128)
}

fn float(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s == NON_FINITE[0] => Some(f64::NAN),
        Value::String(s) if s == NON_FINITE[1] => Some(f64::INFINITY),
        Value::String(s) if s == NON_FINITE[2] => Some(f64::NEG_INFINITY),
        _ => None,
    }
}

/// `"name"` → (name, None); `{"name": v}` → (name, Some(v)).
fn one_key(value: &Value) -> Option<(&str, Option<&Value>)> {
    match value {
        Value::String(name) => Some((name, None)),
        Value::Object(object) if object.len() == 1 => object.iter().next().map(|(k, v)| (k.as_str(), Some(v))),
        _ => None,
    }
}

/// The JSON of a value a function returned.
pub fn to_json(val: &Val, budget: &mut Budget) -> Result<Value, ValueError> {
    budget.spend()?;
    let float = |f: f64| {
        if f.is_nan() {
            Value::from(NON_FINITE[0])
        } else if f.is_infinite() {
            Value::from(if f > 0.0 { NON_FINITE[1] } else { NON_FINITE[2] })
        } else {
            Value::from(f)
        }
    };
    let list = |items: &[Val], budget: &mut Budget| -> Result<Value, ValueError> {
        Ok(Value::Array(items.iter().map(|v| to_json(v, budget)).collect::<Result<_, _>>()?))
    };
    let boxed = |payload: &Option<Box<Val>>, budget: &mut Budget| match payload {
        Some(v) => to_json(v, budget),
        None => Ok(Value::Null),
    };
    Ok(match val {
        Val::Bool(b) => Value::Bool(*b),
        Val::S8(n) => (*n).into(),
        Val::U8(n) => (*n).into(),
        Val::S16(n) => (*n).into(),
        Val::U16(n) => (*n).into(),
        Val::S32(n) => (*n).into(),
        Val::U32(n) => (*n).into(),
        Val::S64(n) => (*n).into(),
        Val::U64(n) => (*n).into(),
        Val::Float32(f) => float(f64::from(*f)),
        Val::Float64(f) => float(*f),
        Val::Char(c) => Value::String(c.to_string()),
        Val::String(s) => Value::String(s.clone()),
        Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => list(items, budget)?,
        Val::Record(fields) => {
            let mut object = Map::new();
            for (name, v) in fields {
                object.insert(name.clone(), to_json(v, budget)?);
            }
            Value::Object(object)
        }
        Val::Variant(name, None) | Val::Enum(name) => Value::String(name.clone()),
        Val::Variant(name, Some(payload)) => single(name, to_json(payload, budget)?),
        Val::Option(None) => Value::Null,
        Val::Option(Some(inner)) if matches!(**inner, Val::Option(_)) => single("some", to_json(inner, budget)?),
        Val::Option(Some(inner)) => to_json(inner, budget)?,
        Val::Result(Ok(payload)) => single("ok", boxed(payload, budget)?),
        Val::Result(Err(payload)) => single("err", boxed(payload, budget)?),
        Val::Flags(names) => Value::Array(names.iter().map(|n| Value::String(n.clone())).collect()),
        Val::Map(_) | Val::Resource(_) | Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => {
            return Err(ValueError::Invalid {
                at: "the result".into(),
                message: "it holds a value with no JSON form".into(),
            });
        }
    })
}

fn single(name: &str, value: Value) -> Value {
    let mut object = Map::new();
    object.insert(name.to_string(), value);
    Value::Object(object)
}

/// The text a model reads of a returned value: a string as it is, anything else as compact JSON.
pub fn render(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
