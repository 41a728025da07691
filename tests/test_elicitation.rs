//! Elicitation through the UserAsker port: every field kind, defaults offered,
//! the form message on the first question only, numbers re-asked up to twice,
//! cancel, decline, headless, and the 16-field / 16-choice limits.

mod support;

use std::io::Cursor;
use std::sync::{Arc, Mutex};

use clat_host::contract::{
    BooleanField, ChoiceField, ChoiceOption, ElicitationForm, ElicitationResult, FieldKind, FieldValue, FormField,
    HostError, NumberField, TextField,
};
use clat_host::run::RunContext;
use clat_host::services::asker::LineAsker;
use clat_host::services::elicitation::elicit;

#[derive(Clone, Default)]
struct Screen(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Screen {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn run_with_input(input: &str) -> (RunContext, Screen) {
    let screen = Screen::default();
    let asker = LineAsker::new(Cursor::new(input.as_bytes().to_vec()), screen.clone());
    (RunContext::builder().asker(Arc::new(asker)).start(), screen)
}

fn field(name: &str, kind: FieldKind) -> FormField {
    FormField { name: name.into(), title: None, description: None, required: true, kind }
}

fn number(integer: bool, minimum: Option<f64>, maximum: Option<f64>, default: Option<f64>) -> FieldKind {
    FieldKind::Number(NumberField { integer, minimum, maximum, default })
}

fn all_kinds() -> ElicitationForm {
    ElicitationForm {
        message: "Please fill in".into(),
        fields: vec![
            field(
                "name",
                FieldKind::Text(TextField {
                    min_length: None,
                    max_length: None,
                    format: None,
                    default: Some("Ada".into()),
                }),
            ),
            field("age", number(true, Some(0.0), Some(150.0), None)),
            field("ratio", number(false, None, None, Some(0.5))),
            field("ok", FieldKind::Boolean(BooleanField { default: Some(true) })),
            field(
                "colour",
                FieldKind::Choice(ChoiceField {
                    options: vec![
                        ChoiceOption { value: "r".into(), title: Some("Red".into()) },
                        ChoiceOption { value: "g".into(), title: Some("Green".into()) },
                    ],
                    default: Some("g".into()),
                }),
            ),
        ],
    }
}

fn answers(result: ElicitationResult) -> Vec<(String, FieldValue)> {
    match result {
        ElicitationResult::Accepted(a) => a.into_iter().map(|a| (a.name, a.value)).collect(),
        other => panic!("expected accepted, got {other:?}"),
    }
}

#[tokio::test]
async fn every_field_kind_maps_to_a_question() {
    let (run, screen) = run_with_input("Grace\n42\n0.25\nn\n1\n");
    let got = answers(elicit(&all_kinds(), "wasm:t", &run).await.unwrap());
    assert_eq!(
        got,
        vec![
            ("name".into(), FieldValue::Text("Grace".into())),
            ("age".into(), FieldValue::Number(42.0)),
            ("ratio".into(), FieldValue::Number(0.25)),
            ("ok".into(), FieldValue::Boolean(false)),
            ("colour".into(), FieldValue::Choice("r".into())),
        ]
    );
    let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
    assert_eq!(shown.matches("Please fill in").count(), 1, "the message is on the first question only: {shown}");
    assert!(shown.starts_with("Please fill in"));
    assert!(shown.contains("1) Red") && shown.contains("2) Green (default)"));
    assert!(shown.contains("whole number (0–150)"), "{shown}");
}

#[tokio::test]
async fn defaults_are_offered_and_taken_on_empty_answers() {
    let (run, screen) = run_with_input("\n7\n\n\n\n");
    let got = answers(elicit(&all_kinds(), "wasm:t", &run).await.unwrap());
    assert_eq!(got[0].1, FieldValue::Text("Ada".into()));
    assert_eq!(got[2].1, FieldValue::Number(0.5));
    assert_eq!(got[3].1, FieldValue::Boolean(true));
    assert_eq!(got[4].1, FieldValue::Choice("g".into()));
    let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
    assert!(shown.contains("[Ada]") && shown.contains("[0.5]") && shown.contains("[Y/n]"), "{shown}");
}

#[tokio::test]
async fn an_invalid_number_is_re_asked_twice_then_the_form_fails() {
    let form =
        ElicitationForm { message: String::new(), fields: vec![field("n", number(true, Some(1.0), Some(10.0), None))] };
    let (run, _) = run_with_input("abc\n2.5\n7\n");
    assert_eq!(answers(elicit(&form, "wasm:t", &run).await.unwrap()), vec![("n".into(), FieldValue::Number(7.0))]);
    let (run, screen) = run_with_input("abc\n2.5\n99\n5\n");
    let err = elicit(&form, "wasm:t", &run).await.unwrap_err();
    assert!(
        matches!(&err, HostError::Invalid(m) if m.contains("above the maximum 10") && m.contains("asked 3 times")),
        "{err:?}"
    );
    let shown = String::from_utf8(screen.0.lock().unwrap().clone()).unwrap();
    assert!(shown.contains("\"abc\" is not a number") && shown.contains("not a whole number"), "{shown}");
}

#[tokio::test]
async fn esc_cancels_and_decline_declines_the_whole_form() {
    let (run, _) = run_with_input("Grace\n\u{1b}\n");
    assert_eq!(elicit(&all_kinds(), "wasm:t", &run).await.unwrap(), ElicitationResult::Cancelled);
    let (run, _) = run_with_input("/decline\n");
    assert_eq!(elicit(&all_kinds(), "wasm:t", &run).await.unwrap(), ElicitationResult::Declined);
}

#[tokio::test]
async fn headless_runs_fail_cleanly() {
    let run = RunContext::builder().start();
    let err = elicit(&all_kinds(), "wasm:t", &run).await.unwrap_err();
    assert!(matches!(&err, HostError::Unsupported(m) if m.contains("headless")), "{err:?}");
}

#[tokio::test]
async fn at_most_16_fields_and_16_choices() {
    let bools = |n: usize| ElicitationForm {
        message: String::new(),
        fields: (0..n).map(|i| field(&format!("f{i}"), FieldKind::Boolean(BooleanField { default: None }))).collect(),
    };
    let (run, _) = run_with_input(&"y\n".repeat(16));
    assert_eq!(answers(elicit(&bools(16), "wasm:t", &run).await.unwrap()).len(), 16);
    let (run, _) = run_with_input("");
    let err = elicit(&bools(17), "wasm:t", &run).await.unwrap_err();
    assert!(matches!(&err, HostError::Invalid(m) if m.contains("17 fields")), "{err:?}");
    let choices = |n: usize| ElicitationForm {
        message: String::new(),
        fields: vec![field(
            "c",
            FieldKind::Choice(ChoiceField {
                options: (0..n).map(|i| ChoiceOption { value: format!("v{i}"), title: None }).collect(),
                default: None,
            }),
        )],
    };
    let (run, _) = run_with_input("16\n");
    assert_eq!(
        answers(elicit(&choices(16), "wasm:t", &run).await.unwrap()),
        vec![("c".into(), FieldValue::Choice("v15".into()))]
    );
    let (run, _) = run_with_input("1\n");
    assert!(
        matches!(elicit(&choices(17), "wasm:t", &run).await, Err(HostError::Invalid(m)) if m.contains("17 choices"))
    );
}

#[tokio::test]
async fn optional_fields_can_be_skipped() {
    let mut form = ElicitationForm {
        message: String::new(),
        fields: vec![field(
            "note",
            FieldKind::Text(TextField { min_length: Some(3), max_length: None, format: None, default: None }),
        )],
    };
    form.fields[0].required = false;
    let (run, _) = run_with_input("\n");
    assert_eq!(answers(elicit(&form, "wasm:t", &run).await.unwrap()), vec![]);
    form.fields[0].required = true;
    let (run, _) = run_with_input("ab\nabc\n");
    assert_eq!(
        answers(elicit(&form, "wasm:t", &run).await.unwrap()),
        vec![("note".into(), FieldValue::Text("abc".into()))]
    );
}
