//! The `UserAsker` port: how CLAT asks the person at the keyboard a question
//! (free text, yes/no, or one of several choices). The native ask_user tool and
//! plugin elicitation both go through it. A terminal implementation reads lines;
//! the headless one fails cleanly because nobody can answer. An asker that can
//! show a whole form at once (another agent's user, under `clat serve`) also
//! answers `ask_form`; the elicitation gate checks what comes back.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use crate::sync::Unpoisoned;
use async_trait::async_trait;

/// One option of a single-choice question.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceItem {
    /// The value returned when chosen.
    pub value: String,
    /// What the user sees.
    pub title: String,
}

/// A question of one of three kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// Free text, with an optional default taken on an empty answer.
    Text {
        /// What is asked.
        prompt: String,
        /// The answer an empty reply gives.
        default: Option<String>,
    },
    /// Yes or no, with an optional default taken on an empty answer.
    YesNo {
        /// What is asked.
        prompt: String,
        /// The answer an empty reply gives.
        default: Option<bool>,
    },
    /// One of the options (by index), with an optional default index.
    Choice {
        /// What is asked.
        prompt: String,
        /// The options, in order.
        options: Vec<ChoiceItem>,
        /// The option an empty reply picks.
        default: Option<usize>,
    },
}

/// An answer to a question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The text given.
    Text(String),
    /// Yes (`true`) or no.
    YesNo(bool),
    /// The index of the chosen option.
    Choice(usize),
}

/// Why no answer came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AskError {
    /// The user dismissed the question (Esc, or end of input).
    #[error("the user cancelled the question")]
    Cancelled,
    /// The user explicitly declined to answer.
    #[error("the user declined to answer")]
    Declined,
    /// Nobody can answer here (headless run).
    #[error("{0}")]
    Unavailable(String),
}

/// Asks the user questions.
#[async_trait]
pub trait UserAsker: Send + Sync {
    /// Ask one question; an error when nobody can answer or the user cancelled.
    async fn ask(&self, question: &Question) -> Result<Answer, AskError>;

    /// Ask a whole form at once: the user's values by field name (unchecked:
    /// the caller checks them against the form), or why none came. `None`
    /// (the default): this asker asks one field at a time (`ask`).
    async fn ask_form(
        &self,
        _form: &crate::contract::ElicitationForm,
    ) -> Option<Result<serde_json::Map<String, serde_json::Value>, AskError>> {
        None
    }
}

/// Headless runs: every question fails cleanly.
#[derive(Debug, Default, Clone, Copy)]
pub struct HeadlessAsker;

#[async_trait]
impl UserAsker for HeadlessAsker {
    async fn ask(&self, _question: &Question) -> Result<Answer, AskError> {
        Err(AskError::Unavailable(
            "this is a headless run with no interactive question frontend; run clat in a terminal to answer questions"
                .into(),
        ))
    }
}

/// The line a user types to cancel (Esc, then Enter).
pub const CANCEL_LINE: &str = "\u{1b}";
/// The line a user types to decline.
pub const DECLINE_LINE: &str = "/decline";

/// A line-based asker: writes prompts to `output`, reads answers from `input`.
/// Esc (or end of input) cancels, `/decline` declines; an answer that does not
/// fit the question is asked again. `TerminalAsker` is this over stdin/stderr.
pub struct LineAsker<R, W> {
    io: Arc<Mutex<(R, W)>>,
}

/// The interactive terminal asker (stdin / stderr).
pub type TerminalAsker = LineAsker<std::io::BufReader<std::io::Stdin>, std::io::Stderr>;

impl TerminalAsker {
    pub fn terminal() -> Self {
        LineAsker::new(std::io::BufReader::new(std::io::stdin()), std::io::stderr())
    }
}

impl<R: BufRead + Send + 'static, W: Write + Send + 'static> LineAsker<R, W> {
    pub fn new(input: R, output: W) -> Self {
        LineAsker { io: Arc::new(Mutex::new((input, output))) }
    }
}

fn render(question: &Question) -> String {
    match question {
        Question::Text { prompt, default } => match default {
            Some(d) => format!("{prompt} [{d}]: "),
            None => format!("{prompt}: "),
        },
        Question::YesNo { prompt, default } => {
            let hint = match default {
                Some(true) => "[Y/n]",
                Some(false) => "[y/N]",
                None => "[y/n]",
            };
            format!("{prompt} {hint} ")
        }
        Question::Choice { prompt, options, default } => {
            let mut s = format!("{prompt}\n");
            for (i, o) in options.iter().enumerate() {
                let mark = if Some(i) == *default { " (default)" } else { "" };
                s.push_str(&format!("  {}) {}{mark}\n", i + 1, o.title));
            }
            s.push_str("choice: ");
            s
        }
    }
}

/// Interpret one typed line; `None` means "ask again".
fn interpret(question: &Question, line: &str) -> Option<Answer> {
    let line = line.trim();
    match question {
        Question::Text { default, .. } => match (line.is_empty(), default) {
            (true, Some(d)) => Some(Answer::Text(d.clone())),
            _ => Some(Answer::Text(line.to_string())),
        },
        Question::YesNo { default, .. } => match line.to_ascii_lowercase().as_str() {
            "y" | "yes" => Some(Answer::YesNo(true)),
            "n" | "no" => Some(Answer::YesNo(false)),
            "" => default.map(Answer::YesNo),
            _ => None,
        },
        Question::Choice { options, default, .. } => {
            if line.is_empty() {
                return default.map(Answer::Choice);
            }
            if let Ok(n) = line.parse::<usize>() {
                return (1..=options.len()).contains(&n).then(|| Answer::Choice(n - 1));
            }
            options.iter().position(|o| o.value == line || o.title == line).map(Answer::Choice)
        }
    }
}

#[async_trait]
impl<R: BufRead + Send + 'static, W: Write + Send + 'static> UserAsker for LineAsker<R, W> {
    async fn ask(&self, question: &Question) -> Result<Answer, AskError> {
        let io = Arc::clone(&self.io);
        let question = question.clone();
        tokio::task::spawn_blocking(move || {
            let mut guard = io.locked();
            let (input, output) = &mut *guard;
            let mut prompt = render(&question);
            loop {
                let _ = output.write_all(prompt.as_bytes());
                let _ = output.flush();
                let mut line = String::new();
                match input.read_line(&mut line) {
                    Ok(0) | Err(_) => return Err(AskError::Cancelled),
                    Ok(_) => {}
                }
                let typed = line.trim_end_matches(['\r', '\n']);
                if typed.trim() == CANCEL_LINE {
                    return Err(AskError::Cancelled);
                }
                if typed.trim() == DECLINE_LINE {
                    return Err(AskError::Declined);
                }
                if let Some(answer) = interpret(&question, typed) {
                    return Ok(answer);
                }
                prompt = "please answer one of the offered options: ".to_string();
            }
        })
        .await
        .unwrap_or(Err(AskError::Cancelled))
    }
}
