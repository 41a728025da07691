//! `run_command` through the one ProcessService: exit codes, bounded output,
//! and the process group — a timeout, a cancelled run, an ended run and a
//! finished command each leave no process of the group alive (grandchildren
//! included). The sandbox policy confines writes or says why it cannot.

mod support;

use std::time::{Duration, Instant};

use clat_host::contract::PermissionMode;
use clat_host::limits::COMMAND_OUTPUT_MAX_BYTES;
use clat_host::native::process::{CommandRequest, ProcessService, SandboxPolicy};
use clat_host::registry::CallError;
use clat_host::run::RunContext;
use clat_host::scope::{ProjectScope, ScopeOptions};
use serde_json::{Value, json};
use support::{TestEnv, run_in, text, wait_group_gone};

fn structured(out: &clat_host::contract::ToolOutput) -> Value {
    serde_json::from_str(out.structured.as_deref().expect("run_command has a structured part")).unwrap()
}

#[tokio::test]
async fn exit_codes_and_output_are_reported() {
    let env = TestEnv::trusted();
    env.write("hello.txt", "hi from the project\n");
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::FullAccess);
    let out =
        scope.registry().call("run_command", json!({ "command": "cat hello.txt; echo oops >&2" }), &run).await.unwrap();
    assert!(!out.is_error, "{}", text(&out));
    let s = structured(&out);
    assert_eq!(s["exit_code"], 0);
    assert_eq!(s["stdout"]["text"], "hi from the project\n", "runs in the project root");
    assert_eq!(s["stderr"]["text"], "oops\n");
    let out = scope.registry().call("run_command", json!({ "command": "exit 3" }), &run).await.unwrap();
    assert!(out.is_error);
    assert_eq!(structured(&out)["exit_code"], 3);
    assert!(text(&out).contains("exit code 3"));
}

#[tokio::test]
async fn spewing_output_is_bounded_and_drained() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::FullAccess);
    let out = scope
        .registry()
        .call("run_command", json!({ "command": "head -c 3000000 /dev/zero | tr '\\0' x; echo done >&2" }), &run)
        .await
        .unwrap();
    let s = structured(&out);
    assert_eq!(s["exit_code"], 0, "the command was never blocked on a full pipe");
    assert_eq!(s["stdout"]["text"].as_str().unwrap().len(), COMMAND_OUTPUT_MAX_BYTES);
    assert_eq!(s["stdout"]["dropped_bytes"], 3_000_000 - COMMAND_OUTPUT_MAX_BYTES as u64);
    assert_eq!(s["stderr"]["text"], "done\n");
    assert!(text(&out).contains("more bytes of stdout dropped"));
}

#[tokio::test]
async fn a_timeout_kills_the_whole_group_grandchildren_included() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::FullAccess);
    let started = Instant::now();
    let out = scope
        .registry()
        .call(
            "run_command",
            json!({ "command": "sleep 300 & (sleep 301 &) ; sh -c 'sleep 302' & wait", "timeout_secs": 1 }),
            &run,
        )
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(60), "the timeout ended the call");
    assert!(out.is_error);
    let s = structured(&out);
    assert_eq!(s["timed_out"], true);
    assert!(text(&out).contains("timed out"));
    let pgid = s["pgid"].as_i64().unwrap() as i32;
    assert_eq!(wait_group_gone(pgid), vec![], "no process of group {pgid} is left");
    assert!(run.processes().live().is_empty());
}

#[tokio::test]
async fn a_finished_command_leaves_no_background_process() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::FullAccess);
    let out =
        scope.registry().call("run_command", json!({ "command": "sleep 300 & echo started" }), &run).await.unwrap();
    let s = structured(&out);
    assert_eq!(s["stdout"]["text"], "started\n");
    let pgid = s["pgid"].as_i64().unwrap() as i32;
    assert_eq!(wait_group_gone(pgid), vec![]);
}

#[tokio::test]
async fn cancelling_the_run_kills_the_group_and_ends_the_call_promptly() {
    let env = TestEnv::trusted();
    let scope = env.mount();
    let (run, sink) = run_in(PermissionMode::FullAccess);
    let canceller = {
        let run = run.clone();
        tokio::spawn(async move {
            // Wait until the command's group exists, then cancel.
            for _ in 0..200 {
                if !run.processes().live().is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let groups = run.processes().live();
            run.cancel();
            groups
        })
    };
    let started = Instant::now();
    let result = scope.registry().call("run_command", json!({ "command": "sleep 300 & sleep 299 & wait" }), &run).await;
    assert!(matches!(result, Err(CallError::Cancelled { .. })), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    let groups = canceller.await.unwrap();
    assert_eq!(groups.len(), 1);
    assert_eq!(wait_group_gone(groups[0]), vec![]);
    assert!(sink.events().iter().any(|e| matches!(e.kind, clat_host::run::RunEventKind::ProcessKilled { .. })));
}

#[tokio::test]
async fn ending_the_run_kills_what_it_still_owns() {
    let env = TestEnv::trusted();
    let service = ProcessService::new(&env.project, SandboxPolicy::None);
    let run = RunContext::builder().start();
    let task = {
        let run = run.clone();
        tokio::spawn(async move {
            let request = CommandRequest { command: "sleep 300".into(), timeout: Duration::from_secs(300) };
            service.run(&request, &run).await
        })
    };
    let mut groups = Vec::new();
    for _ in 0..200 {
        groups = run.processes().live();
        if !groups.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(groups.len(), 1);
    run.finish();
    let outcome = tokio::time::timeout(Duration::from_secs(30), task).await.unwrap().unwrap().unwrap();
    assert_eq!(outcome.signal, Some(9), "the command was killed: {outcome:?}");
    assert_eq!(wait_group_gone(groups[0]), vec![]);
}

#[tokio::test]
async fn restrict_writes_confines_the_command_or_says_why_not() {
    let env = TestEnv::trusted();
    let outside = env.dir.path().join("outside.txt");
    let scope = ProjectScope::mount(
        &env.clat_home(),
        &env.project,
        ScopeOptions { sandbox: SandboxPolicy::RestrictWritesToProject, ..Default::default() },
    )
    .unwrap();
    let (run, _) = run_in(PermissionMode::FullAccess);
    let command = format!("echo in > inside.txt; echo out > {}; echo done", outside.display());
    let out = scope.registry().call("run_command", json!({ "command": command }), &run).await.unwrap();
    let s = structured(&out);
    assert_eq!(env.read("inside.txt"), "in\n", "writes inside the project work");
    match s["sandbox"]["status"].as_str().unwrap() {
        "enforced" => {
            assert!(!outside.exists(), "the write outside the project was blocked");
            assert!(s["stderr"]["text"].as_str().unwrap().contains("ermission denied"), "{s}");
        }
        "not-enforced" => {
            assert!(text(&out).contains("sandbox: not enforced"), "the result says so: {}", text(&out));
        }
        other => panic!("unexpected sandbox status {other}"),
    }
}
