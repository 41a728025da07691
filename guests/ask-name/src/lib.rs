//! `ask-name`: asks the user a small form (elicitation) and greets them.

use clat_guest::{Answer, Form, NoArgs, Plugin, Tool, ToolError, host};

fn greet_user(_: NoArgs) -> Result<String, ToolError> {
    let form = Form::new("The ask-name plugin would like to greet you.")
        .text_bounded("name", "Your name", 1, 80)
        .required()
        .integer("age", "Your age", 0, 150);
    Ok(match form.ask().map_err(|e| format!("could not ask: {}", host::describe(&e)))? {
        Answer::Accepted(answers) => {
            let name = answers.text("name").unwrap_or("stranger");
            match answers.number("age") {
                Some(age) => format!("Nice to meet you, {name} ({}).", age as i64),
                None => format!("Nice to meet you, {name}."),
            }
        }
        Answer::Declined => "The user declined to answer.".into(),
        Answer::Cancelled => "The user cancelled the form.".into(),
    })
}

struct AskName;

impl Plugin for AskName {
    fn tools() -> Vec<Tool> {
        let description = "Ask the user for their name and age, then greet them.";
        vec![Tool::new("greet_user", description, greet_user).read_only().closed_world()]
    }
}

clat_guest::export_plugin!(AskName);
