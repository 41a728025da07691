//! What a mount asks at the terminal (`MountQuestions`): whether a project's
//! servers may start, shown as the door reviews them, and the values of
//! `${input:ID}`s, a password typed unseen. Only when someone is at the
//! terminal (stdin and stderr both one); the door decides what to ask and keeps
//! the answers.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use crate::platform::MountQuestions;
use crate::{ProjectServersReview, ServerInput};

/// The questions of a mount, when someone is at the terminal to answer them.
pub(crate) fn at_terminal() -> Option<Arc<dyn MountQuestions>> {
    (std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
        .then(|| Arc::new(TerminalQuestions) as Arc<dyn MountQuestions>)
}

struct TerminalQuestions;

fn read_line() -> String {
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    answer
}

impl MountQuestions for TerminalQuestions {
    fn approve_project_servers(&self, review: &ProjectServersReview) -> bool {
        let mut err = std::io::stderr().lock();
        let changed = if review.changed { " It changed since you approved it." } else { "" };
        let _ = writeln!(
            err,
            "The project's {} defines servers that run with your permissions:{changed}",
            review.file.display()
        );
        for (_, lines) in &review.servers {
            for line in lines {
                let _ = writeln!(err, "  {line}");
            }
        }
        if let Some(hint) = &review.hint {
            let _ = writeln!(err, "{hint}");
        }
        let _ = write!(err, "Start them in this project? [y/N] ");
        let _ = err.flush();
        drop(err);
        matches!(read_line().trim(), "y" | "Y" | "yes")
    }

    fn input(&self, input: &ServerInput) -> Option<String> {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{} (input {:?}, for {}):", input.description, input.id, input.servers.join(", "));
        for (i, option) in input.options.iter().enumerate() {
            let _ = writeln!(err, "  {}. {option}", i + 1);
        }
        let default = input.default.as_deref().map(|d| format!(" [{d}]")).unwrap_or_default();
        // Echo goes off before the prompt shows, so nothing typed after it is ever echoed.
        let echo_off = input.password.then(EchoOff::start);
        let _ = write!(err, "> {}", if input.password { "(hidden) " } else { "" });
        let _ = write!(err, "{default}");
        let _ = err.flush();
        let answer = read_line();
        drop(echo_off);
        if input.password {
            let _ = writeln!(err);
        }
        let answer = answer.trim_end_matches(['\n', '\r']).to_string();
        Some(match (answer.is_empty(), &input.default) {
            (true, Some(default)) => default.clone(),
            _ => match answer.parse::<usize>().ok().and_then(|n| input.options.get(n.wrapping_sub(1))) {
                Some(option) => option.clone(),
                None => answer,
            },
        })
    }

    fn notice(&self, text: &str) {
        let _ = writeln!(std::io::stderr().lock(), "clat: {text}");
    }
}

/// The terminal's echo, off until dropped (a password is typed unseen).
struct EchoOff(Option<libc::termios>);

impl EchoOff {
    fn start() -> EchoOff {
        // SAFETY: tcgetattr/tcsetattr on stdin's descriptor with a termios we own.
        unsafe {
            let mut attributes: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut attributes) != 0 {
                return EchoOff(None);
            }
            let saved = attributes;
            attributes.c_lflag &= !libc::ECHO;
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &attributes) != 0 {
                return EchoOff(None);
            }
            EchoOff(Some(saved))
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(saved) = self.0 {
            // SAFETY: restores the attributes read in `start`.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &saved);
            }
        }
    }
}
