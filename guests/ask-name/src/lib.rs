//! `ask-name`: asks the user a small form (elicitation) and greets them.

use clat_guest::{
    Args, ElicitationForm, ElicitationResult, FieldKind, FieldValue, FormField, NumberField, Plugin, TextField,
    ToolOutput, ToolSpec, error, host, text, tool,
};
use serde_json::json;

struct AskName;

impl Plugin for AskName {
    fn tools() -> Vec<ToolSpec> {
        vec![
            tool("greet_user", "Ask the user for their name and age, then greet them.")
                .read_only()
                .closed_world()
                .schema(json!({ "type": "object", "additionalProperties": false }))
                .build(),
        ]
    }

    fn call(name: &str, _args: Args) -> Result<ToolOutput, String> {
        if name != "greet_user" {
            return Err(format!("ask-name has no tool {name:?}"));
        }
        let form = ElicitationForm {
            message: "The ask-name plugin would like to greet you.".into(),
            fields: vec![
                FormField {
                    name: "name".into(),
                    title: Some("Your name".into()),
                    description: None,
                    required: true,
                    kind: FieldKind::Text(TextField {
                        min_length: Some(1),
                        max_length: Some(80),
                        format: None,
                        default: None,
                    }),
                },
                FormField {
                    name: "age".into(),
                    title: Some("Your age".into()),
                    description: None,
                    required: false,
                    kind: FieldKind::Number(NumberField {
                        integer: true,
                        minimum: Some(0.0),
                        maximum: Some(150.0),
                        default: None,
                    }),
                },
            ],
        };
        Ok(match host::elicit(&form) {
            Ok(ElicitationResult::Accepted(answers)) => {
                let mut name = "stranger".to_string();
                let mut age = None;
                for a in answers {
                    match (a.name.as_str(), a.value) {
                        ("name", FieldValue::Text(t)) => name = t,
                        ("age", FieldValue::Number(n)) => age = Some(n as i64),
                        _ => {}
                    }
                }
                match age {
                    Some(age) => text(format!("Nice to meet you, {name} ({age}).")),
                    None => text(format!("Nice to meet you, {name}.")),
                }
            }
            Ok(ElicitationResult::Declined) => text("The user declined to answer."),
            Ok(ElicitationResult::Cancelled) => text("The user cancelled the form."),
            Err(e) => error(format!("could not ask: {}", host::describe(&e))),
        })
    }
}

clat_guest::export_plugin!(AskName);
