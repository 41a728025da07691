//! Redaction of key-shaped values, written once for every diagnostic surface
//! (MCP server stderr, guest stdout/stderr, status and error text), plus the
//! values an extension was configured with (`Redactor`: `env` values, header
//! values), and the bounded tail of the last lines a subprocess or guest wrote.
//! The tail keeps raw lines and redacts when it is shown, so a process can
//! write at pipe speed. Redaction limits secondary leakage; it is not secret
//! storage.

use std::collections::VecDeque;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

use crate::limits::{STDERR_TAIL_LINE_MAX_CHARS, STDERR_TAIL_LINES};
use crate::sync::UnpoisonedRw;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// One redaction rule: every match of `pattern` holds one of `triggers`
/// (compared case-insensitively: the rule's literal part, or a key word its
/// alternatives share), so text holding none of them is never run through it.
/// Most diagnostics ("not needed", "exited with status 1") hold no trigger at
/// all and never pay for compiling the patterns. A rule whose pattern has a
/// `value` group redacts a match only when that value is shaped like a key
/// (`looks_like_key`), so the word after "token" in prose stays.
struct Rule {
    triggers: Triggers,
    pattern: &'static str,
    replacement: &'static str,
}

/// What text must hold for a rule to be worth running.
enum Triggers {
    /// One of these, case-insensitively.
    Words(&'static [&'static str]),
    /// A cheap test of the text's shape (a rule with no literal part).
    Shape(fn(&str) -> bool),
}

const RULES: [Rule; 13] = [
    // A URL's user and password (`https://user:secret@host/`): never shown, whatever their shape.
    Rule {
        triggers: Triggers::Words(&["://"]),
        pattern: r#"\b([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#@"'<>]+@"#,
        replacement: "${1}[REDACTED]@",
    },
    // Bearer tokens: what follows "Bearer" is a credential.
    Rule {
        triggers: Triggers::Words(&["bearer"]),
        pattern: r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*",
        replacement: "$1 [REDACTED]",
    },
    // Basic credentials and `token VALUE`, when the value is key-shaped
    // ("the token endpoint could not be reached" is prose).
    Rule {
        triggers: Triggers::Words(&["basic", "token"]),
        pattern: r"(?i)\b(basic|token)\s+(?P<value>[A-Za-z0-9\-._~+/]{8,}=*)",
        replacement: "$1 [REDACTED]",
    },
    // key=value / key: value / "key": "value" where the key names a secret.
    Rule {
        triggers: Triggers::Words(&["key", "secret", "token", "password", "passwd", "credential", "auth"]),
        pattern: r#"(?i)("?[A-Za-z0-9_\-]*(?:api[_\-]?key|apikey|secret|token|password|passwd|credential|auth)[A-Za-z0-9_\-]*"?\s*[:=]\s*"?)((?:bearer\s+|basic\s+|token\s+)?)([^\s"',;]{4,})"#,
        replacement: "${1}${2}[REDACTED]",
    },
    // Well-known key shapes.
    Rule {
        triggers: Triggers::Words(&["sk-"]),
        pattern: r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}",
        replacement: REDACTED,
    },
    Rule {
        triggers: Triggers::Words(&["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]),
        pattern: r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
        replacement: REDACTED,
    },
    Rule {
        triggers: Triggers::Words(&["github_pat_"]),
        pattern: r"\bgithub_pat_[A-Za-z0-9_]{30,}",
        replacement: REDACTED,
    },
    Rule { triggers: Triggers::Words(&["xox"]), pattern: r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", replacement: REDACTED },
    Rule { triggers: Triggers::Words(&["akia"]), pattern: r"\bAKIA[0-9A-Z]{16}\b", replacement: REDACTED },
    Rule { triggers: Triggers::Words(&["aiza"]), pattern: r"\bAIza[0-9A-Za-z\-_]{35}\b", replacement: REDACTED },
    Rule { triggers: Triggers::Words(&["glpat-"]), pattern: r"\bglpat-[A-Za-z0-9\-_]{20,}", replacement: REDACTED },
    Rule {
        triggers: Triggers::Words(&["eyj"]),
        pattern: r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
        replacement: REDACTED,
    },
    // GLM (Zhipu / Z.ai) API keys: 32 hex digits, a dot, 16 letters and digits.
    Rule {
        triggers: Triggers::Shape(has_glm_key_shape),
        pattern: r"\b[0-9a-fA-F]{32}\.[A-Za-z0-9]{16}\b",
        replacement: REDACTED,
    },
];

/// Whether `text` holds 32 hex digits followed by a dot (the start of a GLM key).
fn has_glm_key_shape(text: &str) -> bool {
    let mut run = 0;
    for byte in text.bytes() {
        if byte == b'.' && run >= 32 {
            return true;
        }
        run = if byte.is_ascii_hexdigit() { run + 1 } else { 0 };
    }
    false
}

/// Whether a value after "token" or "basic" is shaped like a credential: at
/// least 8 characters (a final period aside) with a digit, a symbol, a capital
/// letter past the first, or at least 32 of them. An English word has none.
fn looks_like_key(value: &str) -> bool {
    let value = value.trim_end_matches('.');
    value.len() >= 8
        && (value.len() >= 32
            || value.chars().any(|c| c.is_ascii_digit() || "-._~+/=".contains(c))
            || value.chars().skip(1).any(|c| c.is_ascii_uppercase()))
}

/// The rules' patterns, compiled the first time a text may match one.
static PATTERNS: LazyLock<Vec<Regex>> =
    LazyLock::new(|| RULES.iter().map(|r| Regex::new(r.pattern).expect("redaction patterns are valid")).collect());

/// Every rule's trigger words in one automaton, each word's rule beside it:
/// one pass over a text finds which word rules may match it.
static TRIGGER_WORDS: LazyLock<(AhoCorasick, Vec<usize>)> = LazyLock::new(|| {
    let (mut words, mut rules) = (Vec::new(), Vec::new());
    for (index, rule) in RULES.iter().enumerate() {
        if let Triggers::Words(triggers) = rule.triggers {
            words.extend_from_slice(triggers);
            rules.extend(std::iter::repeat_n(index, triggers.len()));
        }
    }
    let automaton = AhoCorasick::builder().ascii_case_insensitive(true).build(words);
    (automaton.expect("redaction trigger words build"), rules)
});

/// Which rules may match `text`. Text that is not all ASCII may match every
/// word rule: case-insensitive matching folds some other letters onto ASCII
/// ones (the Kelvin sign onto `k`).
fn rules_that_may_match(text: &str) -> [bool; RULES.len()] {
    let mut may = RULES.map(|rule| match rule.triggers {
        Triggers::Words(_) => !text.is_ascii(),
        Triggers::Shape(test) => test(text),
    });
    if text.is_ascii() {
        let (automaton, rules) = &*TRIGGER_WORDS;
        for found in automaton.find_overlapping_iter(text) {
            may[rules[found.pattern().as_usize()]] = true;
        }
    }
    may
}

/// Values this process holds as secrets wherever they appear (the values of
/// the environment variables granted to WASM plugins), longest first.
static PROCESS_SECRETS: std::sync::RwLock<Vec<String>> = std::sync::RwLock::new(Vec::new());

/// Add values that every redaction scrubs from now on (short ones are ignored).
pub fn register_secrets<I: IntoIterator<Item = String>>(values: I) {
    let mut secrets = PROCESS_SECRETS.write_locked();
    secrets.extend(values.into_iter().filter(|v| v.trim().chars().count() >= SECRET_MIN_CHARS));
    secrets.sort_by_key(|v| std::cmp::Reverse(v.len()));
    secrets.dedup();
}

/// Replace every registered secret and every key-shaped value in `text`.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    for secret in PROCESS_SECRETS.read_locked().iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), REDACTED);
        }
    }
    let may_match = rules_that_may_match(&out);
    if !may_match.contains(&true) {
        return out;
    }
    for ((rule, pattern), may) in RULES.iter().zip(PATTERNS.iter()).zip(may_match) {
        if !(may && pattern.is_match(&out)) {
            continue;
        }
        out = pattern
            .replace_all(&out, |caps: &regex::Captures| match caps.name("value") {
                Some(value) if !looks_like_key(value.as_str()) => caps[0].to_string(),
                _ => {
                    let mut replaced = String::new();
                    caps.expand(rule.replacement, &mut replaced);
                    replaced
                }
            })
            .into_owned();
    }
    out
}

/// Values too short to be told from ordinary words are not scrubbed as secrets.
const SECRET_MIN_CHARS: usize = 6;

/// Redaction with the values one extension was configured with: each is
/// replaced wherever it appears, then the key shapes are redacted.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor that also scrubs these values (short ones are ignored).
    pub fn with_secrets<I: IntoIterator<Item = String>>(values: I) -> Redactor {
        let mut secrets: Vec<String> =
            values.into_iter().filter(|v| v.trim().chars().count() >= SECRET_MIN_CHARS).collect();
        // Longest first, so a value containing another is replaced whole.
        secrets.sort_by_key(|v| std::cmp::Reverse(v.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = std::borrow::Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = std::borrow::Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        redact(&out)
    }
}

/// The last `STDERR_TAIL_LINES` lines written to a stream, shown redacted and
/// cut to `STDERR_TAIL_LINE_MAX_CHARS`. Bytes arrive in any chunking; a partial
/// line is held (bounded) until its newline or `lines()`. Lines are kept raw
/// (each at most 4 × the shown length in bytes) and redacted only when shown.
#[derive(Debug, Default, Clone)]
pub struct OutputTail {
    lines: VecDeque<String>,
    partial: Vec<u8>,
    total_lines: u64,
    redactor: Redactor,
}

impl OutputTail {
    pub fn new() -> Self {
        Self::default()
    }

    /// How this tail's lines are redacted (for the extension's other diagnostics too).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// A tail whose lines are shown with `redactor` (the extension's secrets).
    pub fn with_redactor(redactor: Redactor) -> Self {
        OutputTail { redactor, ..Self::default() }
    }

    /// Feed raw bytes.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        for chunk in bytes.split_inclusive(|&b| b == b'\n') {
            let complete = chunk.ends_with(b"\n");
            let body = if complete { &chunk[..chunk.len() - 1] } else { chunk };
            // Keep at most a line's worth (in bytes, generously) of a partial line.
            let room = (STDERR_TAIL_LINE_MAX_CHARS * 4).saturating_sub(self.partial.len());
            self.partial.extend_from_slice(&body[..body.len().min(room)]);
            if complete {
                let line = std::mem::take(&mut self.partial);
                self.push_line(&String::from_utf8_lossy(&line));
            }
        }
    }

    fn push_line(&mut self, line: &str) {
        if self.lines.len() == STDERR_TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line.trim_end_matches('\r').to_string());
        self.total_lines += 1;
    }

    /// One kept line as shown: redacted, then cut.
    fn show(&self, line: &str) -> String {
        let redacted = self.redactor.redact(line);
        let mut shown: String = redacted.chars().take(STDERR_TAIL_LINE_MAX_CHARS).collect();
        if redacted.chars().count() > STDERR_TAIL_LINE_MAX_CHARS {
            shown.push('…');
        }
        shown
    }

    /// The kept lines, oldest first, including a pending partial line, redacted.
    pub fn lines(&self) -> Vec<String> {
        let partial = (!self.partial.is_empty()).then(|| String::from_utf8_lossy(&self.partial).into_owned());
        let skip = usize::from(partial.is_some() && self.lines.len() == STDERR_TAIL_LINES);
        self.lines.iter().skip(skip).map(String::as_str).chain(partial.as_deref()).map(|l| self.show(l)).collect()
    }

    /// How many complete lines were written in all (kept or not).
    pub fn total_lines(&self) -> u64 {
        self.total_lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_no_rule_can_match_skips_the_rules_and_every_key_shape_still_trips_the_filter() {
        for plain in ["not needed", "the server exited (status 1)", "", "ok: 12 files", "v1.2.3.4"] {
            assert!(!rules_that_may_match(plain).contains(&true), "{plain}");
            assert_eq!(redact(plain), plain);
        }
        for shaped in [
            "Authorization: Bearer abcdefghijkl",
            "BASIC dXNlcjpwYXNzd29yZA==",
            "MY_API_KEY=abcd1234",
            "\"client_secret\": \"abcd1234\"",
            "PASSWD=hunter22",
            "credentials: abcd1234",
            "OAUTH=abcd1234",
            "sk-ant-abcdefghijklmnopqrstuvwxyz",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "github_pat_abcdefghijklmnopqrstuvwxyz0123456789",
            "xoxb-abcdefghijkl",
            "AKIAABCDEFGHIJKLMNOP",
            "AIzaabcdefghijklmnopqrstuvwxyz012345678",
            "glpat-abcdefghijklmnopqrstuvwxyz",
            "eyJabcdefghijkl.abcdefghijkl.abcdefghijkl",
            "0123456789abcdef0123456789abcdef.AbCdEfGh12345678",
            "http://user:pw@host",
        ] {
            assert!(rules_that_may_match(shaped).contains(&true), "{shaped}");
            assert!(redact(shaped).contains(REDACTED), "{shaped} → {}", redact(shaped));
        }
        // Text that is not all ASCII always goes to the word rules.
        let may = rules_that_may_match("\u{212A}EY=abcd1234");
        assert!(RULES.iter().zip(may).all(|(rule, may)| may || matches!(rule.triggers, Triggers::Shape(_))));
    }

    #[test]
    fn key_shapes_are_redacted() {
        let cases = [
            ("Authorization: Bearer abcdef1234567890", "Bearer [REDACTED]"),
            ("OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234", "OPENAI_API_KEY=[REDACTED]"),
            ("using key sk-ant-api03-abcdefghijklmnopqrstu", "using key [REDACTED]"),
            (r#"{"api_key": "hunter2hunter2"}"#, r#"{"api_key": "[REDACTED]"}"#),
            ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "token [REDACTED]"),
            ("aws AKIAIOSFODNN7EXAMPLE here", "aws [REDACTED] here"),
            ("password: correcthorse", "password: [REDACTED]"),
            ("https://alice:hunter2x@registry.example/v0.1", "https://[REDACTED]@registry.example/v0.1"),
            ("\"postgres://alice:correcthorse@db:5432/x\"", "\"postgres://[REDACTED]@db:5432/x\""),
        ];
        for (input, expected) in cases {
            let out = redact(input);
            assert!(out.contains(expected), "{input:?} → {out:?}");
            assert!(!out.contains("abcdefghijklmnop1234") && !out.contains("hunter2") && !out.contains("correcthorse"));
        }
        assert_eq!(redact("plain text with no secrets"), "plain text with no secrets");
        let glm = "key 0123456789abcdef0123456789abcdef.AbCdEfGh12345678 refused";
        assert_eq!(redact(glm), "key [REDACTED] refused");
    }

    #[test]
    fn prose_after_token_or_basic_stays_and_key_shaped_values_go() {
        for prose in [
            "the token endpoint could not be reached",
            "the OAuth token expired.",
            "Basic authentication is not offered",
            "the token response was malformed",
        ] {
            assert_eq!(redact(prose), prose);
        }
        for (shaped, kept) in [
            ("token abcd1234efgh", "token [REDACTED]"),
            ("token ya29.a0AfH6SMBx", "token [REDACTED]"),
            ("Basic dXNlcjpwYXNzd29yZA==", "Basic [REDACTED]"),
            ("token AbcdefghIjklmnop", "token [REDACTED]"),
            ("Bearer abcdefghijklmnop", "Bearer [REDACTED]"),
        ] {
            assert_eq!(redact(shaped), kept, "{shaped}");
        }
    }

    #[test]
    fn the_tail_keeps_the_last_lines_redacted_and_bounded() {
        let mut tail = OutputTail::new();
        for i in 0..30 {
            tail.push_bytes(format!("line {i}\n").as_bytes());
        }
        tail.push_bytes(b"Bearer abcdefghijkl");
        tail.push_bytes(b"mnop and more\npartial");
        let lines = tail.lines();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines.last().unwrap(), "partial");
        assert_eq!(lines[lines.len() - 2], "Bearer [REDACTED] and more");
        assert_eq!(lines[0], "line 12");
        assert_eq!(tail.total_lines(), 31);
        let mut long = OutputTail::new();
        long.push_bytes(&vec![b'x'; 100_000]);
        long.push_bytes(b"\n");
        assert!(long.lines()[0].chars().count() <= STDERR_TAIL_LINE_MAX_CHARS + 1);
    }

    #[test]
    fn configured_values_are_scrubbed_wherever_they_appear() {
        let redactor = Redactor::with_secrets(["plain-looking-value".to_string(), "1".to_string()]);
        assert_eq!(redactor.redact("got plain-looking-value, 1 of 1"), "got [REDACTED], 1 of 1");
        let mut tail = OutputTail::with_redactor(redactor);
        tail.push_bytes(b"env STORE_KEY=plain-looking-value\n");
        assert_eq!(tail.lines(), vec!["env STORE_KEY=[REDACTED]"]);
    }
}
