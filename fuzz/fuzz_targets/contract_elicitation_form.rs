//! `elicitation/create` params, then answers typed at a line-based asker:
//! the form maps or is refused (unsupported or invalid); a mapped form that
//! passes the gate is asked field by field, and an accepted result holds only
//! the form's fields, numbers within their bounds, choices among the options.
//! Input: the params as JSON, a NUL byte, then the typed lines.
#![no_main]

use std::sync::{Arc, LazyLock};

use clat_host::contract::json::{elicitation_form_from_json, elicitation_result_to_json};
use clat_host::contract::{ElicitationResult, FieldKind, FieldValue};
use clat_host::run::RunContext;
use clat_host::services::asker::LineAsker;
use clat_host::services::elicitation::{check_form, elicit};
use libfuzzer_sys::fuzz_target;

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap());

fuzz_target!(|data: &[u8]| {
    let (params, typed) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(params) else { return };
    let Ok(form) = elicitation_form_from_json(&value) else { return };
    if check_form(&form).is_err() {
        return;
    }
    let asker = LineAsker::new(std::io::Cursor::new(typed.to_vec()), std::io::sink());
    let run = RunContext::builder().asker(Arc::new(asker)).start();
    let Ok(result) = RUNTIME.block_on(elicit(&form, "fuzz", &run)) else { return };
    let _ = elicitation_result_to_json(&result);
    let ElicitationResult::Accepted(answers) = result else { return };
    for answer in answers {
        let field = form.fields.iter().find(|f| f.name == answer.name).expect("an answer names a field of the form");
        match (&field.kind, &answer.value) {
            (FieldKind::Text(_), FieldValue::Text(_)) | (FieldKind::Boolean(_), FieldValue::Boolean(_)) => {}
            (FieldKind::Number(n), FieldValue::Number(v)) => {
                assert!(v.is_finite());
                assert!(n.minimum.is_none_or(|min| *v >= min) && n.maximum.is_none_or(|max| *v <= max));
                assert!(!n.integer || v.fract() == 0.0);
            }
            (FieldKind::Choice(c), FieldValue::Choice(v)) => assert!(c.options.iter().any(|o| &o.value == v)),
            (kind, value) => panic!("{value:?} answers a {kind:?} field"),
        }
    }
});
