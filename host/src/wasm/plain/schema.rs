//! A WIT type as JSON: the JSON Schema of its values (what a tool's input and
//! output schemas are made of) and the words for it (`list<f64>`, in a
//! function's signature). One mapping, the table of docs/plugin-authors.md
//! "Plain components": `values.rs` converts by the same rules. A type a tool
//! cannot carry (a resource, a stream, a future, an error context, a map) is
//! named by `unsupported`, and the function that uses it is not offered.

use serde_json::{Value, json};
use wasmtime::component::types::Type;

/// The strings a non-finite float is written as (JSON numbers are finite).
pub const NON_FINITE: [&str; 3] = ["NaN", "Infinity", "-Infinity"];

/// The JSON Schema of a value of `ty`.
pub fn schema_of(ty: &Type) -> Value {
    let integer = |min: i128, max: i128| json!({ "type": "integer", "minimum": min, "maximum": max });
    match ty {
        Type::Bool => json!({ "type": "boolean" }),
        Type::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        Type::U8 => integer(0, u8::MAX.into()),
        Type::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        Type::U16 => integer(0, u16::MAX.into()),
        Type::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        Type::U32 => integer(0, u32::MAX.into()),
        Type::S64 => integer(i64::MIN.into(), i64::MAX.into()),
        Type::U64 => integer(0, u64::MAX.into()),
        Type::Float32 | Type::Float64 => json!({ "anyOf": [{ "type": "number" }, { "enum": NON_FINITE }] }),
        Type::Char => json!({ "type": "string", "minLength": 1, "maxLength": 1 }),
        Type::String => json!({ "type": "string" }),
        Type::List(list) => json!({ "type": "array", "items": schema_of(&list.ty()) }),
        Type::FixedLengthList(list) => {
            json!({ "type": "array", "items": schema_of(&list.ty()), "minItems": list.len(), "maxItems": list.len() })
        }
        Type::Record(record) => object(record.fields().map(|field| (field.name.to_string(), field.ty))),
        Type::Tuple(tuple) => {
            let items: Vec<Value> = tuple.types().map(|t| schema_of(&t)).collect();
            let n = items.len();
            json!({ "type": "array", "prefixItems": items, "items": false, "minItems": n, "maxItems": n })
        }
        Type::Variant(variant) => {
            let mut bare = Vec::new();
            let mut cases = Vec::new();
            for case in variant.cases() {
                match case.ty {
                    None => bare.push(Value::from(case.name)),
                    Some(payload) => cases.push(tagged(case.name, schema_of(&payload))),
                }
            }
            if !bare.is_empty() {
                cases.insert(0, json!({ "type": "string", "enum": bare }));
            }
            json!({ "oneOf": cases })
        }
        Type::Enum(names) => json!({ "type": "string", "enum": names.names().collect::<Vec<_>>() }),
        Type::Option(option) => {
            let inner = option.ty();
            // `option<option<T>>`: the outer `some` is written `{"some": …}`, so that `null` stays one value.
            let some =
                if matches!(inner, Type::Option(_)) { tagged("some", schema_of(&inner)) } else { schema_of(&inner) };
            json!({ "anyOf": [{ "type": "null" }, some] })
        }
        Type::Result(result) => {
            let side = |name: &str, ty: Option<Type>| {
                tagged(name, ty.map_or_else(|| json!({ "type": "null" }), |t| schema_of(&t)))
            };
            json!({ "oneOf": [side("ok", result.ok()), side("err", result.err())] })
        }
        Type::Flags(flags) => {
            json!({ "type": "array", "items": { "enum": flags.names().collect::<Vec<_>>() }, "uniqueItems": true })
        }
        // Never offered (`unsupported`); a schema nothing matches, should one be asked for.
        Type::Map(_) | Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            json!({ "not": {} })
        }
    }
}

/// An object of these named values, each required unless it is an option (absent is `none`), nothing else.
pub fn object(fields: impl Iterator<Item = (String, Type)>) -> Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, ty) in fields {
        if !matches!(ty, Type::Option(_)) {
            required.push(Value::from(name.clone()));
        }
        properties.insert(name, schema_of(&ty));
    }
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// `{"name": value}`, exactly that key.
fn tagged(name: &str, value: Value) -> Value {
    json!({ "type": "object", "properties": { name: value }, "required": [name], "additionalProperties": false })
}

/// Why a value of `ty` cannot go through a tool call (`None`: it can), naming the part that cannot.
pub fn unsupported(ty: &Type) -> Option<String> {
    match ty {
        Type::Own(_) | Type::Borrow(_) => Some(format!(
            "a resource ({}), which lives in its instance between calls, and every tool call has a fresh instance",
            wit_name(ty)
        )),
        Type::Future(_) | Type::Stream(_) => {
            Some(format!("a {}, which a tool's one answer cannot carry", wit_name(ty)))
        }
        Type::ErrorContext => Some("an error-context, which has no JSON form".into()),
        Type::Map(_) => Some(format!("a {}, which CLAT does not map to JSON yet", wit_name(ty))),
        Type::List(list) => unsupported(&list.ty()),
        Type::FixedLengthList(list) => unsupported(&list.ty()),
        Type::Option(option) => unsupported(&option.ty()),
        Type::Record(record) => record.fields().find_map(|field| unsupported(&field.ty)),
        Type::Tuple(tuple) => tuple.types().find_map(|t| unsupported(&t)),
        Type::Variant(variant) => variant.cases().find_map(|case| case.ty.and_then(|t| unsupported(&t))),
        Type::Result(result) => result.ok().into_iter().chain(result.err()).find_map(|t| unsupported(&t)),
        _ => None,
    }
}

/// The WIT words for `ty` (a record or variant, which the binary names only by shape, as its fields or cases).
pub fn wit_name(ty: &Type) -> String {
    let list = |types: Vec<String>| types.join(", ");
    match ty {
        Type::Bool => "bool".into(),
        Type::S8 => "s8".into(),
        Type::U8 => "u8".into(),
        Type::S16 => "s16".into(),
        Type::U16 => "u16".into(),
        Type::S32 => "s32".into(),
        Type::U32 => "u32".into(),
        Type::S64 => "s64".into(),
        Type::U64 => "u64".into(),
        Type::Float32 => "f32".into(),
        Type::Float64 => "f64".into(),
        Type::Char => "char".into(),
        Type::String => "string".into(),
        Type::List(l) => format!("list<{}>", wit_name(&l.ty())),
        Type::FixedLengthList(l) => format!("list<{}, {}>", wit_name(&l.ty()), l.len()),
        Type::Map(m) => format!("map<{}, {}>", wit_name(&m.key()), wit_name(&m.value())),
        Type::Record(r) => {
            format!("record {{ {} }}", list(r.fields().map(|f| format!("{}: {}", f.name, wit_name(&f.ty))).collect()))
        }
        Type::Tuple(t) => format!("tuple<{}>", list(t.types().map(|t| wit_name(&t)).collect())),
        Type::Variant(v) => format!(
            "variant {{ {} }}",
            list(
                v.cases()
                    .map(|c| c.ty.map_or(c.name.to_string(), |t| format!("{}({})", c.name, wit_name(&t))))
                    .collect()
            )
        ),
        Type::Enum(e) => format!("enum {{ {} }}", list(e.names().map(str::to_string).collect())),
        Type::Option(o) => format!("option<{}>", wit_name(&o.ty())),
        Type::Result(r) => match (r.ok(), r.err()) {
            (None, None) => "result".into(),
            (Some(ok), None) => format!("result<{}>", wit_name(&ok)),
            (ok, Some(err)) => format!("result<{}, {}>", ok.map_or("_".into(), |t| wit_name(&t)), wit_name(&err)),
        },
        Type::Flags(f) => format!("flags {{ {} }}", list(f.names().map(str::to_string).collect())),
        Type::Own(_) => "own<resource>".into(),
        Type::Borrow(_) => "borrow<resource>".into(),
        Type::Future(_) => "future".into(),
        Type::Stream(_) => "stream".into(),
        Type::ErrorContext => "error-context".into(),
    }
}
