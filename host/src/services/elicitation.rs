//! Elicitation: one primitive form, from any source, asked through the
//! `UserAsker` port field by field — strings and numbers as text inputs,
//! booleans as yes/no, enums as single choices — with the form's message on
//! the first question. At most 16 fields and 16 choices; an invalid number is
//! re-asked up to twice; Esc cancels the form, decline declines it; a headless
//! run fails cleanly. Defaults from the schema are offered. An asker that
//! shows whole forms gets the form at once, and every value it returns is
//! checked against its field (`check_value`) before the extension sees it.

use crate::contract::{ElicitationForm, ElicitationResult, FieldAnswer, FieldKind, FieldValue, FormField, HostError};
use crate::limits::{ELICITATION_MAX_CHOICES, ELICITATION_MAX_FIELDS, ELICITATION_NUMBER_RETRIES};
use crate::run::{RunContext, RunEventKind};
use crate::services::asker::{Answer, AskError, ChoiceItem, Question};

/// Check a form against the supported subset before anything is asked.
pub fn check_form(form: &ElicitationForm) -> Result<(), HostError> {
    if form.fields.len() > ELICITATION_MAX_FIELDS {
        return Err(HostError::Invalid(format!(
            "the form has {} fields; at most {ELICITATION_MAX_FIELDS} are supported",
            form.fields.len()
        )));
    }
    for field in &form.fields {
        if let FieldKind::Choice(choice) = &field.kind {
            if choice.options.len() > ELICITATION_MAX_CHOICES {
                return Err(HostError::Invalid(format!(
                    "field {:?} has {} choices; at most {ELICITATION_MAX_CHOICES} are supported",
                    field.name,
                    choice.options.len()
                )));
            }
            if choice.options.is_empty() {
                return Err(HostError::Invalid(format!("field {:?} has no choices", field.name)));
            }
        }
    }
    Ok(())
}

fn prompt(form: &ElicitationForm, index: usize, field: &FormField, hint: &str) -> String {
    let mut text = String::new();
    if index == 0 && !form.message.is_empty() {
        text.push_str(&form.message);
        text.push('\n');
    }
    text.push_str(field.title.as_deref().unwrap_or(&field.name));
    if let Some(d) = &field.description {
        text.push_str(&format!(" ({d})"));
    }
    if !hint.is_empty() {
        text.push_str(&format!(" {hint}"));
    }
    if !field.required {
        text.push_str(" [optional]");
    }
    text
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { n.to_string() }
}

/// Why a typed value does not fit a field, or `None` when it does.
fn number_problem(text: &str, integer: bool, minimum: Option<f64>, maximum: Option<f64>) -> Result<f64, String> {
    let n: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number"))?;
    if !n.is_finite() {
        return Err(format!("{text:?} is not a finite number"));
    }
    if integer && n.fract() != 0.0 {
        return Err(format!("{text:?} is not a whole number"));
    }
    if let Some(min) = minimum
        && n < min
    {
        return Err(format!("{} is below the minimum {}", format_number(n), format_number(min)));
    }
    if let Some(max) = maximum
        && n > max
    {
        return Err(format!("{} is above the maximum {}", format_number(n), format_number(max)));
    }
    Ok(n)
}

enum FieldOutcome {
    Value(Option<FieldValue>),
    Stop(ElicitationResult),
}

async fn ask(run: &RunContext, question: &Question) -> Result<Result<Answer, ElicitationResult>, HostError> {
    let answer = tokio::select! {
        a = run.asker().ask(question) => a,
        _ = run.cancel_token().cancelled() => return Err(HostError::Cancelled),
    };
    match answer {
        Ok(a) => Ok(Ok(a)),
        Err(AskError::Cancelled) => Ok(Err(ElicitationResult::Cancelled)),
        Err(AskError::Declined) => Ok(Err(ElicitationResult::Declined)),
        Err(AskError::Unavailable(why)) => Err(HostError::Unsupported(why)),
    }
}

async fn ask_field(
    run: &RunContext,
    form: &ElicitationForm,
    index: usize,
    field: &FormField,
) -> Result<FieldOutcome, HostError> {
    match &field.kind {
        FieldKind::Text(t) => {
            let question = Question::Text { prompt: prompt(form, index, field, ""), default: t.default.clone() };
            let mut problem = None;
            for _ in 0..=ELICITATION_NUMBER_RETRIES {
                let q = match &problem {
                    None => question.clone(),
                    Some(p) => Question::Text {
                        prompt: format!("{p}; {}", prompt(form, index, field, "")),
                        default: t.default.clone(),
                    },
                };
                let text = match ask(run, &q).await? {
                    Ok(Answer::Text(s)) => s,
                    Ok(_) => {
                        return Err(HostError::Failed("the asker answered a text question with another kind".into()));
                    }
                    Err(stop) => return Ok(FieldOutcome::Stop(stop)),
                };
                if text.is_empty() && !field.required {
                    return Ok(FieldOutcome::Value(None));
                }
                let len = text.chars().count() as u32;
                problem = match (t.min_length, t.max_length) {
                    (Some(min), _) if len < min => Some(format!("at least {min} characters are needed")),
                    (_, Some(max)) if len > max => Some(format!("at most {max} characters are allowed")),
                    _ => None,
                };
                if problem.is_none() {
                    return Ok(FieldOutcome::Value(Some(FieldValue::Text(text))));
                }
            }
            Err(HostError::Invalid(format!(
                "field {:?}: {} (asked {} times)",
                field.name,
                problem.unwrap_or_default(),
                ELICITATION_NUMBER_RETRIES + 1
            )))
        }
        FieldKind::Number(n) => {
            let bounds = match (n.minimum, n.maximum) {
                (Some(a), Some(b)) => format!("({}–{})", format_number(a), format_number(b)),
                (Some(a), None) => format!("(≥ {})", format_number(a)),
                (None, Some(b)) => format!("(≤ {})", format_number(b)),
                (None, None) => String::new(),
            };
            let kind = if n.integer { "whole number" } else { "number" };
            let base = prompt(form, index, field, format!("— a {kind} {bounds}").trim_end());
            let mut problem: Option<String> = None;
            for _ in 0..=ELICITATION_NUMBER_RETRIES {
                let text = match &problem {
                    None => base.clone(),
                    Some(p) => format!("{p}; {base}"),
                };
                let q = Question::Text { prompt: text, default: n.default.map(format_number) };
                let typed = match ask(run, &q).await? {
                    Ok(Answer::Text(s)) => s,
                    Ok(_) => {
                        return Err(HostError::Failed("the asker answered a text question with another kind".into()));
                    }
                    Err(stop) => return Ok(FieldOutcome::Stop(stop)),
                };
                if typed.trim().is_empty() && !field.required {
                    return Ok(FieldOutcome::Value(None));
                }
                match number_problem(&typed, n.integer, n.minimum, n.maximum) {
                    Ok(v) => return Ok(FieldOutcome::Value(Some(FieldValue::Number(v)))),
                    Err(p) => problem = Some(p),
                }
            }
            Err(HostError::Invalid(format!(
                "field {:?}: {} (asked {} times)",
                field.name,
                problem.unwrap_or_default(),
                ELICITATION_NUMBER_RETRIES + 1
            )))
        }
        FieldKind::Boolean(b) => {
            let q = Question::YesNo { prompt: prompt(form, index, field, ""), default: b.default };
            match ask(run, &q).await? {
                Ok(Answer::YesNo(v)) => Ok(FieldOutcome::Value(Some(FieldValue::Boolean(v)))),
                Ok(_) => Err(HostError::Failed("the asker answered a yes/no question with another kind".into())),
                Err(stop) => Ok(FieldOutcome::Stop(stop)),
            }
        }
        FieldKind::Choice(c) => {
            let options: Vec<ChoiceItem> = c
                .options
                .iter()
                .map(|o| ChoiceItem {
                    value: o.value.clone(),
                    title: o.title.clone().unwrap_or_else(|| o.value.clone()),
                })
                .collect();
            let default = c.default.as_ref().and_then(|d| c.options.iter().position(|o| &o.value == d));
            let q = Question::Choice { prompt: prompt(form, index, field, ""), options, default };
            match ask(run, &q).await? {
                Ok(Answer::Choice(i)) if i < c.options.len() => {
                    Ok(FieldOutcome::Value(Some(FieldValue::Choice(c.options[i].value.clone()))))
                }
                Ok(_) => Err(HostError::Failed("the asker answered a choice with something else".into())),
                Err(stop) => Ok(FieldOutcome::Stop(stop)),
            }
        }
    }
}

/// A whole form's values, each checked against its field: the answers, or
/// which value does not fit (a required field left out is one).
fn checked_answers(
    form: &ElicitationForm,
    values: &serde_json::Map<String, serde_json::Value>,
) -> Result<Vec<FieldAnswer>, HostError> {
    let mut answers = Vec::with_capacity(form.fields.len());
    for field in &form.fields {
        let value = match values.get(&field.name) {
            None | Some(serde_json::Value::Null) if field.required => {
                return Err(HostError::Invalid(format!("field {:?} is required and was not answered", field.name)));
            }
            None | Some(serde_json::Value::Null) => continue,
            Some(value) => value,
        };
        let value =
            check_value(field, value).map_err(|why| HostError::Invalid(format!("field {:?}: {why}", field.name)))?;
        answers.push(FieldAnswer { name: field.name.clone(), value });
    }
    Ok(answers)
}

/// One value of a whole form's answer, if it fits its field.
fn check_value(field: &FormField, value: &serde_json::Value) -> Result<FieldValue, String> {
    match (&field.kind, value) {
        (FieldKind::Text(t), serde_json::Value::String(text)) => {
            let len = text.chars().count() as u32;
            match (t.min_length, t.max_length) {
                (Some(min), _) if len < min => Err(format!("at least {min} characters are needed")),
                (_, Some(max)) if len > max => Err(format!("at most {max} characters are allowed")),
                _ => Ok(FieldValue::Text(text.clone())),
            }
        }
        (FieldKind::Number(n), serde_json::Value::Number(number)) => {
            number_problem(&number.to_string(), n.integer, n.minimum, n.maximum).map(FieldValue::Number)
        }
        (FieldKind::Boolean(_), serde_json::Value::Bool(b)) => Ok(FieldValue::Boolean(*b)),
        (FieldKind::Choice(c), serde_json::Value::String(chosen)) if c.options.iter().any(|o| &o.value == chosen) => {
            Ok(FieldValue::Choice(chosen.clone()))
        }
        (FieldKind::Choice(_), other) => Err(format!("{other} is not one of the choices")),
        (_, other) => Err(format!("{other} is not of the field's type")),
    }
}

/// Ask `form` in `run` on behalf of `source`.
pub async fn elicit(form: &ElicitationForm, source: &str, run: &RunContext) -> Result<ElicitationResult, HostError> {
    let result = elicit_inner(form, run).await;
    let outcome = match &result {
        Ok(ElicitationResult::Accepted(_)) => "accepted".to_string(),
        Ok(ElicitationResult::Declined) => "declined".to_string(),
        Ok(ElicitationResult::Cancelled) => "cancelled".to_string(),
        Err(e) => format!("failed: {}", e.describe()),
    };
    run.emit(RunEventKind::Elicitation { source: source.to_string(), fields: form.fields.len() as u32, outcome });
    result
}

async fn elicit_inner(form: &ElicitationForm, run: &RunContext) -> Result<ElicitationResult, HostError> {
    check_form(form)?;
    let whole = tokio::select! {
        whole = run.asker().ask_form(form) => whole,
        _ = run.cancel_token().cancelled() => return Err(HostError::Cancelled),
    };
    match whole {
        Some(Ok(values)) => return checked_answers(form, &values).map(ElicitationResult::Accepted),
        Some(Err(AskError::Cancelled)) => return Ok(ElicitationResult::Cancelled),
        Some(Err(AskError::Declined)) => return Ok(ElicitationResult::Declined),
        Some(Err(AskError::Unavailable(why))) => return Err(HostError::Unsupported(why)),
        None => {}
    }
    let mut answers = Vec::with_capacity(form.fields.len());
    for (index, field) in form.fields.iter().enumerate() {
        match ask_field(run, form, index, field).await? {
            FieldOutcome::Value(Some(value)) => answers.push(FieldAnswer { name: field.name.clone(), value }),
            FieldOutcome::Value(None) => {}
            FieldOutcome::Stop(stop) => return Ok(stop),
        }
    }
    Ok(ElicitationResult::Accepted(answers))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::json::elicitation_form_from_json;
    use serde_json::json;

    #[test]
    fn a_whole_forms_values_are_checked_against_their_fields() {
        let form = elicitation_form_from_json(&json!({ "message": "m", "requestedSchema": { "type": "object",
            "properties": {
                "name": { "type": "string", "maxLength": 5 },
                "age": { "type": "integer", "minimum": 0 },
                "ok": { "type": "boolean" },
                "size": { "type": "string", "enum": ["s", "m"] },
            },
            "required": ["name"] } }))
        .unwrap();
        let values = |v: serde_json::Value| v.as_object().unwrap().clone();
        let answers = checked_answers(&form, &values(json!({ "name": "Ada", "age": 36, "size": "m", "extra": 1 })));
        let answers = answers.unwrap();
        assert_eq!(answers.len(), 3, "the unanswered optional field and the unknown one are left out: {answers:?}");
        assert_eq!(answers[1].value, FieldValue::Number(36.0));
        let refused = |v, why: &str| match checked_answers(&form, &values(v)) {
            Err(HostError::Invalid(message)) => assert_eq!(message, why),
            other => panic!("{other:?}"),
        };
        refused(json!({ "age": 1 }), "field \"name\" is required and was not answered");
        refused(json!({ "name": "Adalbert" }), "field \"name\": at most 5 characters are allowed");
        refused(json!({ "name": "A", "age": 1.5 }), "field \"age\": \"1.5\" is not a whole number");
        refused(json!({ "name": "A", "age": -1 }), "field \"age\": -1 is below the minimum 0");
        refused(json!({ "name": "A", "ok": "yes" }), "field \"ok\": \"yes\" is not of the field's type");
        refused(json!({ "name": "A", "size": "xl" }), "field \"size\": \"xl\" is not one of the choices");
    }
}
