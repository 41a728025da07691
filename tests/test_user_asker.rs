//! The UserAsker port: text, yes/no and single-choice questions over a line
//! terminal (defaults, re-asking, Esc and end of input cancel, /decline), and
//! the headless asker that fails cleanly.

use std::io::Cursor;

use clat_host::services::asker::{Answer, AskError, ChoiceItem, HeadlessAsker, LineAsker, Question, UserAsker};

fn asker(input: &str) -> LineAsker<Cursor<Vec<u8>>, Vec<u8>> {
    LineAsker::new(Cursor::new(input.as_bytes().to_vec()), Vec::new())
}

fn choice() -> Question {
    Question::Choice {
        prompt: "Pick a colour".into(),
        options: vec![
            ChoiceItem { value: "r".into(), title: "Red".into() },
            ChoiceItem { value: "g".into(), title: "Green".into() },
        ],
        default: Some(1),
    }
}

#[tokio::test]
async fn text_questions_take_the_answer_or_the_default() {
    let q = Question::Text { prompt: "Name".into(), default: Some("anon".into()) };
    assert_eq!(asker("Ada\n").ask(&q).await, Ok(Answer::Text("Ada".into())));
    assert_eq!(asker("\n").ask(&q).await, Ok(Answer::Text("anon".into())));
}

#[tokio::test]
async fn yes_no_questions_re_ask_until_they_get_an_answer() {
    let q = Question::YesNo { prompt: "Continue?".into(), default: None };
    assert_eq!(asker("maybe\n\ny\n").ask(&q).await, Ok(Answer::YesNo(true)));
    assert_eq!(asker("no\n").ask(&q).await, Ok(Answer::YesNo(false)));
    let q = Question::YesNo { prompt: "Continue?".into(), default: Some(false) };
    assert_eq!(asker("\n").ask(&q).await, Ok(Answer::YesNo(false)));
}

#[tokio::test]
async fn choices_by_number_value_or_title_with_a_default() {
    assert_eq!(asker("1\n").ask(&choice()).await, Ok(Answer::Choice(0)));
    assert_eq!(asker("g\n").ask(&choice()).await, Ok(Answer::Choice(1)));
    assert_eq!(asker("Red\n").ask(&choice()).await, Ok(Answer::Choice(0)));
    assert_eq!(asker("\n").ask(&choice()).await, Ok(Answer::Choice(1)));
    assert_eq!(asker("7\nblue\n2\n").ask(&choice()).await, Ok(Answer::Choice(1)));
}

#[tokio::test]
async fn esc_and_end_of_input_cancel_and_decline_declines() {
    assert_eq!(asker("\u{1b}\n").ask(&choice()).await, Err(AskError::Cancelled));
    assert_eq!(asker("").ask(&choice()).await, Err(AskError::Cancelled));
    assert_eq!(
        asker("nope\n").ask(&Question::YesNo { prompt: "?".into(), default: None }).await,
        Err(AskError::Cancelled)
    );
    assert_eq!(asker("/decline\n").ask(&choice()).await, Err(AskError::Declined));
}

#[tokio::test]
async fn the_prompt_shows_the_question_and_options() {
    let a = asker("1\n");
    a.ask(&choice()).await.unwrap();
    // The output side is inside the asker; render through a second asker to read it.
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    struct Tee(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Tee {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let a = LineAsker::new(Cursor::new(b"2\n".to_vec()), Tee(shared.clone()));
    a.ask(&choice()).await.unwrap();
    let shown = String::from_utf8(shared.lock().unwrap().clone()).unwrap();
    assert!(shown.contains("Pick a colour"));
    assert!(shown.contains("1) Red"));
    assert!(shown.contains("2) Green (default)"));
}

#[tokio::test]
async fn headless_runs_fail_cleanly() {
    let err = HeadlessAsker.ask(&choice()).await.unwrap_err();
    assert!(matches!(&err, AskError::Unavailable(m) if m.contains("headless")), "{err}");
}
