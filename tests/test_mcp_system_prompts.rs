//! DSH system prompts: only prompts marked `_meta["io.artec.clat/dsh"].systemPrompt
//! == true` are resolved, the project root goes only into a declared `cwd`
//! argument, at most 128 per server and 256 KiB each, a failure is reported and
//! keeps the server's tools, late prompts are rejected after the freeze, and
//! teardown withdraws them.

mod support;

use std::time::Duration;

use clat_host::registry::SystemPrompt;
use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn names(prompts: &[SystemPrompt]) -> Vec<&str> {
    prompts.iter().map(|p| p.name.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marked_prompts_are_resolved_and_only_a_declared_cwd_gets_the_project_root() {
    let env = TestEnv::trusted();
    let log = env.dir.path().join("srv.log");
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--prompts", "3", "--log-file", log] } }));
    let scope = env.mount();
    let statuses = scope.load_mcp_servers().await;
    assert_eq!(statuses[0].system_prompts, vec!["p0", "p1", "p2"], "{statuses:?}");
    assert!(statuses[0].problems.is_empty(), "{statuses:?}");
    let prompts = scope.system_prompts();
    assert_eq!(names(&prompts), vec!["p0", "p1", "p2"], "unmarked prompts are never imported");
    assert_eq!(prompts[0].source, "mcp:srv");
    let root = env.project.canonicalize().unwrap().display().to_string();
    assert_eq!(prompts[0].text, format!("You are helped by prompt p0. The project is at {root}."));
    assert_eq!(prompts[1].text, "You are helped by prompt p1.", "p1 declares no cwd: no root");
    let got: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("prompt "))
        .map(str::to_string)
        .collect();
    assert_eq!(got.len(), 3, "plain prompts are never fetched: {got:?}");
    assert_eq!(got[1], "prompt p1 {}");

    scope.close().await;
    assert!(scope.system_prompts().is_empty(), "teardown revokes the prompt leases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_than_128_marked_prompts_are_capped_and_over_256_kib_is_skipped() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "many": { "command": SERVER, "args": ["--prompts", "129"] },
        "big": { "command": SERVER, "args": ["--prompts", "2", "--prompt-bytes", "307200"] },
        "fits": { "command": SERVER, "args": ["--prompts", "1", "--prompt-bytes", "262144"] }
    }));
    let scope = env.mount();
    let statuses = scope.load_mcp_servers().await;
    let status = |name: &str| statuses.iter().find(|s| s.name == name).unwrap().clone();
    let many = status("many");
    assert_eq!(many.system_prompts.len(), 128);
    assert!(many.problems.iter().any(|p| p.contains("1 marked system prompts past the first 128 were dropped")));
    let big = status("big");
    assert_eq!(big.system_prompts, vec!["p1"], "{big:?}");
    assert!(big.problems.iter().any(|p| p.contains("p0 resolved to 307200 bytes, over the 262144-byte limit")));
    assert_eq!(status("fits").system_prompts, vec!["p0"], "exactly 256 KiB fits");
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_failure_is_reported_and_the_server_keeps_its_tools() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--prompts", "3", "--prompt-fail", "p1"] } }));
    let scope = env.mount();
    let statuses = scope.load_mcp_servers().await;
    assert_eq!(statuses[0].state, "ready");
    assert_eq!(statuses[0].tools.len(), 3, "{statuses:?}");
    assert_eq!(statuses[0].system_prompts, vec!["p0", "p2"]);
    assert!(statuses[0].problems.iter().any(|p| p.contains("system prompt p1: prompts/get failed")), "{statuses:?}");
    scope.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modern_servers_contribute_prompts_and_late_ones_are_rejected_after_the_freeze() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "modern": { "command": SERVER, "args": ["--modern", "--prompts", "2"] },
        "late": { "command": SERVER, "args": ["--prompts", "1", "--delay-initialize", "2500"] }
    }));
    let scope = std::sync::Arc::new(env.mount());
    scope.start_extensions();
    let run = scope.start_run_within(clat_host::run::RunContext::builder(), Duration::from_millis(1500)).await;
    assert_eq!(names(&scope.system_prompts()), vec!["p0", "p1"]);
    assert!(scope.system_prompts().iter().all(|p| p.source == "mcp:modern"));
    assert!(scope.wait_for_initial_surface(Duration::from_secs(30)).await);
    let late = scope.extensions().into_iter().find(|e| e.name == "late").unwrap();
    assert!(
        late.problems.iter().any(|p| p.contains("system prompt p0 from mcp:late arrived after the registry froze")),
        "{late:?}"
    );
    assert!(scope.system_prompts().iter().all(|p| p.source == "mcp:modern"), "the registry never thaws");
    scope.finish_run(&run);
    scope.close().await;
}

#[test]
fn clat_mcp_shows_the_contributions() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--prompts", "2"] } }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["servers"][0]["system_prompts"], json!(["p0", "p1"]), "{v}");
    let out = env.clat(&["mcp"]);
    assert!(stdout(&out).contains("system prompts: p0, p1"), "{}", stdout(&out));
}
