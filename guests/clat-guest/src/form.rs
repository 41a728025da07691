//! Elicitation forms: a builder for the flat, primitive forms the contract
//! allows (at most 16 fields; the host checks the bounds), and typed access to
//! the answers.

use crate::{
    BooleanField, ChoiceField, ChoiceOption, ElicitationForm, ElicitationResult, FieldAnswer, FieldKind, FieldValue,
    FormField, HostError, NumberField, TextField,
};

/// Builds an [`ElicitationForm`]; `ask` asks it through the host.
#[derive(Debug, Clone)]
pub struct Form {
    form: ElicitationForm,
}

impl Form {
    /// A form introduced by `message` (shown with the first question).
    pub fn new(message: &str) -> Form {
        Form { form: ElicitationForm { message: message.into(), fields: Vec::new() } }
    }

    fn field(mut self, name: &str, title: &str, kind: FieldKind) -> Form {
        let title = (!title.is_empty()).then(|| title.to_string());
        self.form.fields.push(FormField { name: name.into(), title, description: None, required: false, kind });
        self
    }

    /// A free-text field (`title`: the question; empty for none).
    pub fn text(self, name: &str, title: &str) -> Form {
        self.field(
            name,
            title,
            FieldKind::Text(TextField { min_length: None, max_length: None, format: None, default: None }),
        )
    }
    /// A free-text field of `min..=max` characters.
    pub fn text_bounded(self, name: &str, title: &str, min: u32, max: u32) -> Form {
        let kind = TextField { min_length: Some(min), max_length: Some(max), format: None, default: None };
        self.field(name, title, FieldKind::Text(kind))
    }
    /// A whole number in `min..=max`.
    pub fn integer(self, name: &str, title: &str, min: i64, max: i64) -> Form {
        let kind = NumberField { integer: true, minimum: Some(min as f64), maximum: Some(max as f64), default: None };
        self.field(name, title, FieldKind::Number(kind))
    }
    /// A number, unbounded.
    pub fn number(self, name: &str, title: &str) -> Form {
        self.field(
            name,
            title,
            FieldKind::Number(NumberField { integer: false, minimum: None, maximum: None, default: None }),
        )
    }
    /// A yes/no field.
    pub fn boolean(self, name: &str, title: &str) -> Form {
        self.field(name, title, FieldKind::Boolean(BooleanField { default: None }))
    }
    /// One of `options` (values, shown as they are).
    pub fn choice(self, name: &str, title: &str, options: &[&str]) -> Form {
        let options = options.iter().map(|v| ChoiceOption { value: v.to_string(), title: None }).collect();
        self.field(name, title, FieldKind::Choice(ChoiceField { options, default: None }))
    }
    /// The field added last must be answered.
    pub fn required(mut self) -> Form {
        if let Some(field) = self.form.fields.last_mut() {
            field.required = true;
        }
        self
    }
    /// Help text for the field added last.
    pub fn describe(mut self, description: &str) -> Form {
        if let Some(field) = self.form.fields.last_mut() {
            field.description = Some(description.into());
        }
        self
    }

    /// The form as the contract's record.
    pub fn build(self) -> ElicitationForm {
        self.form
    }

    /// Ask the user (in a run whose mode and frontend allow it).
    pub fn ask(&self) -> Result<Answer, HostError> {
        Ok(match crate::host::elicit(&self.form)? {
            ElicitationResult::Accepted(answers) => Answer::Accepted(Answers(answers)),
            ElicitationResult::Declined => Answer::Declined,
            ElicitationResult::Cancelled => Answer::Cancelled,
        })
    }
}

/// How the user answered.
#[derive(Debug, Clone)]
pub enum Answer {
    Accepted(Answers),
    Declined,
    Cancelled,
}

/// The answered fields of an accepted form (an optional field may be missing).
#[derive(Debug, Clone)]
pub struct Answers(pub Vec<FieldAnswer>);

impl Answers {
    fn value(&self, name: &str) -> Option<&FieldValue> {
        self.0.iter().find(|a| a.name == name).map(|a| &a.value)
    }
    /// A text or choice answer.
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.value(name)? {
            FieldValue::Text(t) | FieldValue::Choice(t) => Some(t),
            _ => None,
        }
    }
    /// A number answer.
    pub fn number(&self, name: &str) -> Option<f64> {
        match self.value(name)? {
            FieldValue::Number(n) => Some(*n),
            _ => None,
        }
    }
    /// A yes/no answer.
    pub fn boolean(&self, name: &str) -> Option<bool> {
        match self.value(name)? {
            FieldValue::Boolean(b) => Some(*b),
            _ => None,
        }
    }
    /// Any answer as text (`None` when the field was not answered).
    pub fn display(&self, name: &str) -> Option<String> {
        Some(match self.value(name)? {
            FieldValue::Text(t) | FieldValue::Choice(t) => t.clone(),
            FieldValue::Number(n) => n.to_string(),
            FieldValue::Boolean(b) => b.to_string(),
        })
    }
}
