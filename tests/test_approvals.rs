//! Approvals that persist: "always for this tool" and "always for this
//! server" kept in `$CLAT_HOME/approvals.json` per project, answering later
//! `ask` cells without asking (`decided_by: "stored"`), asking again once the
//! tool's effect is stronger than approved, never overriding a `deny`, never
//! applying to sampling; `clat approvals list | revoke`; a malformed file is
//! a clear error, never read as empty.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use clat_host::contract::{Effect, PermissionMode, Role, SamplingMessage, SamplingRequest};
use clat_host::policy::approvals::{ApprovalKey, ApprovalMemory, ApprovalStore, Remember};
use clat_host::policy::permissions::{Approval, ApprovalRequest, Approver};
use clat_host::registry::{CallError, Registry};
use clat_host::run::{CollectingSink, RunContext, RunEventKind};
use serde_json::{Value, json};
use support::{TestEnv, ok_tool, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

/// Answers every request the same way and counts them; records whether "always" was offered.
struct Answers {
    answer: Approval,
    asked: AtomicUsize,
    offered_always: AtomicUsize,
}

impl Answers {
    fn new(answer: Approval) -> Arc<Answers> {
        Arc::new(Answers { answer, asked: AtomicUsize::new(0), offered_always: AtomicUsize::new(0) })
    }
    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Approver for Answers {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if request.can_remember {
            self.offered_always.fetch_add(1, Ordering::SeqCst);
        }
        self.answer.clone()
    }
}

fn registry_with(effect: Effect) -> Registry {
    let registry = Registry::new(&["fetch", "remove_all"]);
    let schema = json!({ "type": "object" });
    registry.register_native("fetch", "fetches", schema.clone(), effect, ok_tool()).unwrap();
    registry.register_native("remove_all", "removes", schema, Effect::Destructive, ok_tool()).unwrap();
    registry
}

fn run(
    mode: PermissionMode,
    approver: Arc<Answers>,
    store: Arc<dyn ApprovalMemory>,
) -> (RunContext, Arc<CollectingSink>) {
    let sink = Arc::new(CollectingSink::default());
    let run = RunContext::builder().mode(mode).approver(approver).approvals(store).events(sink.clone()).start();
    (run, sink)
}

fn decided_by(sink: &CollectingSink) -> Vec<String> {
    sink.events()
        .into_iter()
        .filter_map(|e| match e.kind {
            RunEventKind::Permission { decided_by, .. } => Some(decided_by),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn always_for_a_tool_is_kept_per_project_and_never_widens() {
    let env = TestEnv::trusted();
    let root = env.project.canonicalize().unwrap();
    let store = || -> Arc<dyn ApprovalMemory> { Arc::new(ApprovalStore::open(&env.clat_home(), &root).unwrap()) };

    // First run: the user answers "always for this tool".
    let always = Answers::new(Approval::Always(Remember::Tool));
    let (first, sink) = run(PermissionMode::Ask, always.clone(), store());
    registry_with(Effect::Network).call("fetch", json!({}), &first).await.unwrap();
    assert_eq!(always.asked(), 1);
    assert_eq!(always.offered_always.load(Ordering::SeqCst), 1, "a run that keeps approvals offers always");
    assert_eq!(decided_by(&sink), ["approver"]);
    let kept: Value = serde_json::from_str(&env.read_home("approvals.json")).unwrap();
    assert_eq!(kept["approvals"][0]["tool"], "fetch");
    assert_eq!(kept["approvals"][0]["effect"], "network");

    // A later run (a new store, read from the file) is not asked, and says so.
    let never = Answers::new(Approval::Denied("asked again".into()));
    let (later, sink) = run(PermissionMode::Ask, never.clone(), store());
    registry_with(Effect::Network).call("fetch", json!({}), &later).await.unwrap();
    assert_eq!(never.asked(), 0);
    assert_eq!(decided_by(&sink), ["stored"]);
    // Another tool is still asked.
    let err = registry_with(Effect::Network).call("remove_all", json!({}), &later).await.unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    assert_eq!(never.asked(), 1);

    // The same tool with a stronger effect is asked again.
    let err = registry_with(Effect::Destructive).call("fetch", json!({}), &later).await.unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    assert_eq!(never.asked(), 2);

    // A kept approval never overrides a deny: read-only denies a destructive tool.
    let always = Answers::new(Approval::Always(Remember::Tool));
    let (ask, _) = run(PermissionMode::Ask, always.clone(), store());
    registry_with(Effect::Network).call("remove_all", json!({}), &ask).await.unwrap();
    let (read_only, sink) = run(PermissionMode::ReadOnly, never.clone(), store());
    let err = registry_with(Effect::Network).call("remove_all", json!({}), &read_only).await.unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    assert_eq!(decided_by(&sink), ["mode"]);

    // Another project keeps its own approvals.
    let other = tempfile::tempdir().unwrap();
    let other_store: Arc<dyn ApprovalMemory> =
        Arc::new(ApprovalStore::open(&env.clat_home(), &other.path().canonicalize().unwrap()).unwrap());
    let (elsewhere, _) = run(PermissionMode::Ask, never.clone(), other_store);
    assert!(registry_with(Effect::Network).call("fetch", json!({}), &elsewhere).await.is_err());
}

#[tokio::test]
async fn sampling_is_asked_every_time_and_never_kept() {
    let env = TestEnv::trusted();
    let root = env.project.canonicalize().unwrap();
    let always = Answers::new(Approval::Always(Remember::Extension));
    let store: Arc<dyn ApprovalMemory> = Arc::new(ApprovalStore::open(&env.clat_home(), &root).unwrap());
    let (run, _) = run(PermissionMode::Ask, always.clone(), store);
    let request = SamplingRequest {
        messages: vec![SamplingMessage { role: Role::User, text: "hello".into() }],
        system_prompt: None,
        max_tokens: 10,
        temperature: None,
        stop_sequences: vec![],
        model_hints: vec![],
    };
    for _ in 0..2 {
        let provider = clat_host::services::sampling::OfflineProvider;
        clat_host::services::sampling::create_message(&provider, &request, "mcp:srv", &run).await.unwrap();
    }
    assert_eq!(always.asked(), 2, "asked every time");
    assert_eq!(always.offered_always.load(Ordering::SeqCst), 0, "always is never offered for sampling");
    assert!(!env.home.join("approvals.json").exists(), "nothing was kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_for_a_server_covers_its_other_tools_up_to_the_effect() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER } }));
    let scope = env.mount();
    scope.load_mcp_servers().await;
    let root = env.project.canonicalize().unwrap();
    let store = || -> Arc<dyn ApprovalMemory> { Arc::new(ApprovalStore::open(&env.clat_home(), &root).unwrap()) };
    let always = Answers::new(Approval::Always(Remember::Extension));
    let (first, _) = run(PermissionMode::Ask, always.clone(), store());
    scope.registry().call("mcp_srv_echo", json!({}), &first).await.unwrap();
    let never = Answers::new(Approval::Denied("asked again".into()));
    let (later, sink) = run(PermissionMode::Ask, never.clone(), store());
    scope.registry().call("mcp_srv_cwd", json!({}), &later).await.unwrap();
    assert_eq!((never.asked(), decided_by(&sink)), (0, vec!["stored".to_string()]));
    // A native tool is not the server's.
    let err =
        scope.registry().call("write_file", json!({ "path": "a.txt", "content": "x" }), &later).await.unwrap_err();
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    scope.close().await;
}

#[test]
fn clat_approvals_lists_and_revokes_and_a_malformed_file_is_an_error() {
    let env = TestEnv::trusted();
    let root = env.project.canonicalize().unwrap();
    let store = ApprovalStore::open(&env.clat_home(), &root).unwrap();
    let key = |extension: &str, tool: &str| ApprovalKey {
        asked_by: "agent".into(),
        extension: extension.into(),
        tool: tool.into(),
        identity: Some(support::identity()),
        definition: Some("sha256:0".into()),
    };
    store.remember(&key("mcp:srv", "mcp_srv_echo"), Effect::Destructive, Remember::Tool).unwrap();
    store.remember(&key("wasm:notes", "wasm_notes_add"), Effect::Write, Remember::Extension).unwrap();

    let out = env.clat(&["approvals", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed["approvals"].as_array().unwrap().len(), 2, "{listed}");
    let out = env.clat(&["approvals", "revoke", "mcp_srv_echo"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("revoked 1 kept approval"));
    let out = env.clat(&["approvals", "revoke", "mcp_srv_echo"]);
    assert_eq!(out.status.code(), Some(2), "nothing left to revoke");
    let out = env.clat(&["approvals", "revoke", "notes", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&stdout(&out)).unwrap()["revoked"], 1);

    std::fs::write(env.home.join("approvals.json"), "{ \"version\": 1, \"approvals\": [ }").unwrap();
    for args in [&["approvals", "list"][..], &["call", "read_file", r#"{"path":"x"}"#]] {
        let out = env.clat(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains("approvals.json is malformed at line 1"), "{}", stderr(&out));
    }
    // A mode that never asks has no use for kept approvals: the broken file is not read.
    env.write("notes.txt", "kept");
    let out = env.clat(&["call", "read_file", r#"{"path":"notes.txt"}"#, "--mode", "full-access"]);
    assert!(out.status.success() && stdout(&out).contains("kept"), "{}", stderr(&out));
}

#[test]
fn always_at_the_terminal_prompt_lets_a_later_headless_call_through() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER } }));
    // At a terminal (script(1) gives clat one), the prompt offers always; the user answers `a`.
    let command = format!(
        "{} --home {} --project {} call mcp_srv_echo '{{\"n\":1}}'",
        env!("CARGO_BIN_EXE_clat"),
        env.home.display(),
        env.project.display()
    );
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    let out = support::output_with_stdin(&env, script, b"a\n");
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(screen.contains("[a]lways for this tool") && screen.contains("[s]erver or plugin"), "{screen}");
    // Headless now, in ask mode: the kept approval answers, and the event says so.
    let out = env.clat(&["call", "mcp_srv_echo", r#"{"n":2}"#, "--events"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains(r#""decided_by":"stored""#), "{}", stderr(&out));
    // Another of its tools is still refused headless.
    let out = env.clat(&["call", "mcp_srv_cwd", "{}"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
}

/// A stdio server that opts into host services, whose `ask_host` (read-only,
/// so the agent may call it headless in ask mode) forwards one request to CLAT.
const HOST_SERVICES_ARGS: [&str; 4] = ["--host-services", "--tool-names", "echo,ask_host", "--read-only-tools"];

/// `ask_host`'s arguments: the server asks CLAT to run `command` through the host tool `run_command`.
fn server_runs(command: &str) -> String {
    json!({ "method": "io.artec.clat/tools/call",
            "params": { "name": "run_command", "arguments": { "command": command } } })
    .to_string()
}

fn write_approvals(env: &TestEnv, document: Value) {
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(env.home.join("approvals.json"), document.to_string()).unwrap();
}

fn listed(env: &TestEnv) -> Vec<Value> {
    let out = env.clat(&["approvals", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str::<Value>(&stdout(&out)).unwrap()["approvals"].as_array().unwrap().clone()
}

/// `clat ARGS` at a terminal (script(1) gives it one), answering the prompts with `input`; the screen.
fn at_a_terminal(env: &TestEnv, args: &str, input: &[u8]) -> (Option<i32>, String) {
    let command = format!(
        "{} --home {} --project {} {args}",
        env!("CARGO_BIN_EXE_clat"),
        env.home.display(),
        env.project.display()
    );
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    let out = support::output_with_stdin(env, script, input);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_agents_kept_run_command_never_answers_a_servers_host_tool_call() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": HOST_SERVICES_ARGS } }));
    let root = env.project.canonicalize().unwrap();
    // The reproduction: "always" kept for the agent's own run_command (a file as version 1 wrote it).
    write_approvals(
        &env,
        json!({ "version": 1, "approvals": [
            { "project": root, "extension": "native", "tool": "run_command", "effect": "destructive" } ] }),
    );
    let out = env.clat(&["call", "mcp_srv_ask_host", &server_runs("touch planted")]);
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!env.project.join("planted").exists(), "the server ran a command on the agent's approval: {said}");
    assert!(said.contains("-32051") && said.contains("asked for by server srv"), "{said}");
    // The kept approval still answers the agent's own call, headless.
    let out = env.clat(&["call", "run_command", r#"{"command":"touch mine"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(env.project.join("mine").exists());
}

#[test]
fn always_for_a_servers_host_tool_call_is_kept_as_that_server_asking_and_never_answers_the_agent() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": HOST_SERVICES_ARGS } }));
    let args = format!("call mcp_srv_ask_host '{}'", server_runs("touch first"));
    let (code, screen) = at_a_terminal(&env, &args, b"a\n");
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("server srv asks to run `run_command`: allow it?"), "the prompt says who asks: {screen}");
    assert!(!screen.contains("[s]erver"), "a host tool is never 'every tool of' anything: {screen}");
    assert!(env.project.join("first").exists(), "{screen}");

    let kept = listed(&env);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        (&kept[0]["asked_by"], &kept[0]["extension"], &kept[0]["tool"], &kept[0]["effect"]),
        (&json!("mcp:srv"), &json!("native"), &json!("run_command"), &json!("destructive")),
        "{kept:?}"
    );
    let expected = clat_host::policy::identity::Identity::stdio(SERVER, &HOST_SERVICES_ARGS.map(String::from));
    assert_eq!(kept[0]["identity"], expected.as_str(), "bound to the server's launch spec");
    assert_eq!((&kept[0]["bound_to"], &kept[0]["stale"]), (&json!("mcp:srv"), &Value::Null));
    let out = env.clat(&["approvals", "list"]);
    assert!(stdout(&out).contains("mcp:srv → host tool run_command  up to destructive  [stdio "), "{}", stdout(&out));

    // Headless now: the server's call is answered by what was kept for it …
    let out = env.clat(&["call", "mcp_srv_ask_host", &server_runs("touch second"), "--events"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(env.project.join("second").exists(), "{}", stdout(&out));
    assert!(stderr(&out).contains(r#""decided_by":"stored""#), "{}", stderr(&out));
    // … and the agent's own run_command is not.
    let out = env.clat(&["call", "run_command", r#"{"command":"touch agent"}"#]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(!env.project.join("agent").exists());
}

#[test]
fn an_approval_answers_only_effects_every_mode_orders_below_it() {
    let env = TestEnv::trusted();
    // `echo` writes (not read-only, not destructive); `cwd` reaches the network (read-only, open world).
    let tools = json!([
        { "name": "echo", "inputSchema": { "type": "object" },
          "annotations": { "readOnlyHint": false, "destructiveHint": false } },
        { "name": "cwd", "inputSchema": { "type": "object" },
          "annotations": { "readOnlyHint": true, "openWorldHint": true } } ]);
    let args = ["--tools-json".to_string(), tools.to_string()];
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": args } }));
    let root = env.project.canonicalize().unwrap();
    let identity = clat_host::policy::identity::Identity::stdio(SERVER, &args);
    let server_wide = |effect: &str| {
        json!({ "version": 2, "approvals": [ { "project": root, "asked_by": "agent", "extension": "mcp:srv",
                 "tool": null, "effect": effect, "identity": identity } ] })
    };
    write_approvals(&env, server_wide("write"));
    let out = env.clat(&["call", "mcp_srv_echo", "{}"]);
    assert_eq!(out.status.code(), Some(0), "the approved write tool: {}", stderr(&out));
    for mode in ["ask", "auto-edit"] {
        let out = env.clat(&["call", "mcp_srv_cwd", "{}", "--mode", mode]);
        assert_eq!(out.status.code(), Some(4), "a write approval answered a network tool in {mode}: {}", stderr(&out));
    }
    // Approved at network, the write tool is asked again (read-only denies write but asks for network).
    write_approvals(&env, server_wide("network"));
    assert_eq!(env.clat(&["call", "mcp_srv_cwd", "{}"]).status.code(), Some(0));
    assert_eq!(env.clat(&["call", "mcp_srv_echo", "{}"]).status.code(), Some(4));
    // Destructive is ordered above both in every mode.
    write_approvals(&env, server_wide("destructive"));
    for tool in ["mcp_srv_echo", "mcp_srv_cwd"] {
        assert_eq!(env.clat(&["call", tool, "{}"]).status.code(), Some(0), "{tool}");
    }
}

#[test]
fn an_approval_follows_the_server_it_was_given_for_not_its_name() {
    let env = TestEnv::trusted();
    let approved = ["--tools".to_string(), "2".to_string()];
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": approved } }));
    let root = env.project.canonicalize().unwrap();
    let identity = clat_host::policy::identity::Identity::stdio(SERVER, &approved);
    write_approvals(
        &env,
        json!({ "version": 2, "approvals": [
            { "project": root, "asked_by": "agent", "extension": "mcp:srv", "tool": null, "effect": "destructive",
              "identity": identity },
            // Kept before identities were: bound to nothing, so stale.
            { "project": root, "extension": "mcp:old", "tool": null, "effect": "destructive" } ] }),
    );
    assert_eq!(env.clat(&["call", "mcp_srv_echo", "{}"]).status.code(), Some(0), "the approved server");
    let kept = listed(&env);
    assert_eq!(kept[0]["stale"], Value::Null, "{kept:?}");
    assert!(kept[1]["stale"].as_str().unwrap().contains("kept before approvals were bound"), "{kept:?}");

    // Another command under the same name inherits nothing.
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--tools", "3"] } }));
    let out = env.clat(&["call", "mcp_srv_echo", "{}"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let kept = listed(&env);
    let stale = kept[0]["stale"].as_str().unwrap_or_default();
    assert!(stale.contains("mcp:srv now runs another command, URL or package"), "{kept:?}");
    let out = env.clat(&["approvals", "list"]);
    assert!(stdout(&out).contains("STALE: mcp:srv now runs another"), "{}", stdout(&out));
    // So does a URL under that name; and with no server of that name, the approval says so.
    env.write_mcp_config(json!({ "srv": { "url": "http://127.0.0.1:9/mcp" } }));
    assert!(listed(&env)[0]["stale"].as_str().unwrap().contains("now runs another"));
    env.write_mcp_config(json!({}));
    assert!(listed(&env)[0]["stale"].as_str().unwrap().contains("no extension mcp:srv is configured"));
}
