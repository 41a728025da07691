//! The permission pipeline: the mode table (mode × effect → allow / ask / deny),
//! the `Approver` port that answers "ask", and its two implementations — an
//! interactive terminal prompt and a headless one that denies with a message
//! saying how to allow. Every tool call of every source, and every host-tool
//! call a plugin makes, is decided with `rule_for` and, on "ask", the run's
//! approver, by `decide` in `registry/pipeline.rs`, which also emits the
//! decision as a run event.

use std::io::{BufRead, IsTerminal, Write};

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::contract::{Effect, PermissionMode};

/// What the mode table says for one (mode, effect), ordered from the most
/// permissive (`Allow`) to the least (`Deny`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Run without asking.
    Allow,
    /// Ask the approver.
    Ask,
    /// Refuse without asking.
    Deny,
}

/// The mode table (ARCHITECTURE §4):
///
/// | effect \ mode | read-only | ask | auto-edit | full-access |
/// |---|---|---|---|---|
/// | Read | allow | allow | allow | allow |
/// | ExternalRead | allow | allow | allow | allow |
/// | Network | ask | ask | ask | allow |
/// | Write | deny | ask | allow | allow |
/// | Destructive | deny | ask | ask | allow |
pub fn rule_for(mode: PermissionMode, effect: Effect) -> Rule {
    use Effect as E;
    use PermissionMode as M;
    match (mode, effect) {
        (_, E::Read | E::ExternalRead) => Rule::Allow,
        (M::FullAccess, _) => Rule::Allow,
        (M::ReadOnly, E::Write | E::Destructive) => Rule::Deny,
        (M::AutoEdit, E::Write) => Rule::Allow,
        (_, E::Network | E::Write | E::Destructive) => Rule::Ask,
    }
}

/// Whether `mode` asks about any effect: kept approvals answer only the `ask`
/// cells of the table, and are kept only from them, so a mode without one
/// (full-access) has no use for them.
pub fn mode_asks(mode: PermissionMode) -> bool {
    Effect::ALL.into_iter().any(|effect| rule_for(mode, effect) == Rule::Ask)
}

/// Whether an approval given for an `approved` effect also answers `effect`:
/// only when every mode orders `effect` at or below it (its rule is never
/// stricter than the approved effect's). Derived from the mode table, so
/// `destructive` answers `write` and `network`, but `write` never answers
/// `network` (auto-edit allows write and asks for network) nor the reverse
/// (read-only asks for network and denies write).
pub fn approval_covers(approved: Effect, effect: Effect) -> bool {
    PermissionMode::ALL.into_iter().all(|mode| rule_for(mode, effect) <= rule_for(mode, approved))
}

/// Everything a person needs to decide: the tool, where it comes from, its
/// effect and the complete arguments (never a shortened preview).
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalRequest {
    /// The registered tool name.
    pub tool: String,
    /// Where the tool comes from (`native`, `mcp:server/tool`, `wasm:plugin/tool`).
    pub source: String,
    /// Who asks: `None` for the agent's own call; the extension (`mcp:srv`,
    /// `wasm:plugin`) that called a host tool.
    pub asked_by: Option<String>,
    /// The tool's effect.
    pub effect: Effect,
    /// Why the tool has that effect, as `clat tools NAME` says it (its hints,
    /// and a grant it uses); empty when there is nothing to say (sampling).
    pub effect_reason: String,
    /// The complete arguments.
    pub arguments: Value,
    /// The run's mode.
    pub mode: PermissionMode,
    /// Whether the answer may be kept ("always"): a tool call in a run that
    /// keeps approvals; never a sampling request.
    pub can_remember: bool,
}

/// The `tool` of an approval request for extension sampling: its prompt shows
/// the complete outbound payload instead of tool arguments.
pub const SAMPLING_APPROVAL: &str = "sampling";

/// How an approver answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Go ahead.
    Approved,
    /// Go ahead, and keep the approval (for this tool, or every tool of its
    /// extension) at this effect or weaker; only when the request `can_remember`,
    /// otherwise it is a plain approval.
    Always(Remember),
    /// Refused, with the reason shown to the caller.
    Denied(String),
}

/// What `always` means at the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remember {
    /// This tool, at most this effect.
    Tool,
    /// Every tool of this extension, at most this effect.
    Extension,
}

/// The port that answers `Rule::Ask`.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decide one request.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;
}

/// How to allow a call that was denied; shown by every denial. A mode that
/// denies outright is never answered by a prompt, so only a mode that would
/// have asked (`asked`) suggests a terminal.
pub fn how_to_allow(effect: Effect, asked: bool) -> String {
    let mode = match effect {
        Effect::Write => "auto-edit or full-access",
        _ => "full-access",
    };
    let terminal = if asked { ", or run at a terminal to approve it" } else { "" };
    format!("run with --mode {mode} to allow {effect} tools without a prompt{terminal}")
}

/// `network`, or `network: readOnlyHint true, …; raised to network: it uses
/// its plugin's http grant` when there is a reason to give.
pub fn effect_with_reason(effect: Effect, reason: &str) -> String {
    if reason.is_empty() { effect.to_string() } else { format!("{effect}: {reason}") }
}

/// An extension as the prompt names it: `server srv`, `plugin p`.
pub fn who_asks(extension: &str) -> String {
    match extension.split_once(':') {
        Some(("mcp", name)) => format!("server {name}"),
        Some(("wasm", name)) => format!("plugin {name}"),
        _ => extension.to_string(),
    }
}

/// Headless runs: every `ask` is denied with a message that says how to allow.
#[derive(Debug, Default, Clone, Copy)]
pub struct HeadlessApprover;

#[async_trait]
impl Approver for HeadlessApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        Approval::Denied(format!(
            "{} ({}){} needs approval in mode {} and there is no interactive terminal; {}",
            request.tool,
            effect_with_reason(request.effect, &request.effect_reason),
            request.asked_by.as_deref().map(|who| format!(" asked for by {}", who_asks(who))).unwrap_or_default(),
            request.mode,
            how_to_allow(request.effect, true)
        ))
    }
}

/// Approves or denies everything (tests, benchmarks, embedding hosts with their own policy).
#[derive(Debug, Clone)]
pub struct FixedApprover(pub Approval);

#[async_trait]
impl Approver for FixedApprover {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.0.clone()
    }
}

/// Interactive approval on the terminal: prints the tool, source, effect and the
/// complete arguments on stderr and reads the answer from stdin: `y` approves,
/// `a` approves and keeps it for this tool, `s` for every tool of its server or
/// plugin (offered only when the request `can_remember`; `s` not for native
/// tools). Anything else (including end of input) denies.
#[derive(Debug, Default)]
pub struct TerminalApprover {
    /// One prompt at a time, even when parallel calls ask together.
    lock: tokio::sync::Mutex<()>,
}

impl TerminalApprover {
    /// True when both stdin and stderr are terminals, i.e. someone can answer.
    pub fn available() -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }

    /// The text shown for one request.
    pub fn render(request: &ApprovalRequest) -> String {
        let args = serde_json::to_string_pretty(&request.arguments).unwrap_or_else(|_| request.arguments.to_string());
        let indented = args.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n");
        if request.tool == SAMPLING_APPROVAL {
            return format!(
                "Allow {} to send this request to the model?\n  mode: {}\n  complete outbound payload:\n{indented}\n",
                request.source, request.mode
            );
        }
        let question = match &request.asked_by {
            Some(who) => format!("{} asks to run `{}`: allow it?", who_asks(who), request.tool),
            None => "Allow tool call?".to_string(),
        };
        format!(
            "{question}\n  tool:   {}\n  source: {}\n  effect: {}\n  mode:   {}\n  arguments:\n{indented}\n",
            request.tool,
            request.source,
            effect_with_reason(request.effect, &request.effect_reason),
            request.mode,
        )
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let text = Self::render(request);
        let extension = request.can_remember && request.source != "native";
        let choices = match (request.can_remember, extension) {
            (false, _) => "[y/N] ",
            (true, false) => "[y]es / [a]lways for this tool / [N]o: ",
            (true, true) => "[y]es / [a]lways for this tool / [s]erver or plugin: always for all its tools / [N]o: ",
        };
        let _guard = self.lock.lock().await;
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{text}{choices}");
            let _ = err.flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer.as_ref().ok().and_then(|r| r.as_deref().ok()).map(str::trim) {
            Some("y" | "Y" | "yes") => Approval::Approved,
            Some("a" | "A" | "always") if request.can_remember => Approval::Always(Remember::Tool),
            Some("s" | "S" | "server" | "plugin") if extension => Approval::Always(Remember::Extension),
            _ => Approval::Denied(format!("the user declined {}", request.tool)),
        }
    }
}
