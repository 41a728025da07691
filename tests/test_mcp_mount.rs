//! MCP servers mounted into a project scope through the `clat` binary:
//! `mcp.json` entries beside installed packages, names and effects in the
//! registry, calls, the cwd rules, isolated failures with a redacted stderr
//! tail, nothing started before trust, and teardown reaping the server.

mod support;

use clat_host::extension::ExtensionState;
use serde_json::{Value, json};
use support::{TestEnv, pid_alive, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn tools_json(env: &TestEnv) -> Value {
    let out = env.clat(&["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

#[test]
fn servers_join_the_registry_and_failures_are_isolated() {
    let env = TestEnv::trusted();
    let pid_file = env.dir.path().join("srv.pid");
    env.write_mcp_config(json!({
        "srv": { "command": SERVER, "args": ["--stderr-noise", "--tools", "3", "--pid-file", pid_file] },
        "broken": { "command": "/nonexistent/server" },
        // Nothing listens on 127.0.0.1:9: a remote server that cannot be reached.
        "web": { "url": "http://127.0.0.1:9/mcp", "headers": { "Authorization": "Bearer abcdefghijklmnop" } },
        "both": { "command": "x", "url": "https://a.invalid" }
    }));
    let v = tools_json(&env);
    let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.starts_with(&["list_files", "read_file", "search", "write_file", "edit_file", "run_command"]));
    assert!(names.contains(&"mcp_srv_echo") && names.contains(&"mcp_srv_big_result"), "{names:?}");
    let echo = v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp_srv_echo").unwrap();
    assert_eq!(echo["source"], json!({ "kind": "mcp", "server": "srv", "tool": "echo" }));
    assert_eq!(echo["effect"], "destructive", "no annotations: destructive");

    let ext = |name: &str| v["extensions"].as_array().unwrap().iter().find(|e| e["name"] == name).cloned().unwrap();
    let srv = ext("srv");
    assert_eq!(srv["state"], "ready");
    // The tail is bounded to the last 20 lines (the server wrote 50 before the handshake).
    let kept = srv["output_tail"].as_array().unwrap().len();
    assert!((1..=20).contains(&kept), "{srv}");
    let tail: Vec<&str> = srv["output_tail"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(tail.iter().any(|l| l.contains("Bearer [REDACTED]")), "{srv}");
    assert!(tail.iter().all(|l| !l.contains("sk-test-abcdef")), "redacted: {srv}");
    assert_eq!(srv["protocol"], "2025-11-25 (legacy)", "the probe failed, so a fresh process did the legacy handshake");
    assert_eq!(ext("broken")["state"], "failed");
    assert!(ext("broken")["problems"][0].as_str().unwrap().contains("cannot start /nonexistent/server"));
    assert_eq!(ext("web")["state"], "failed");
    assert_eq!(ext("web")["kind"], "mcp-http");
    assert!(ext("web")["problems"][0].as_str().unwrap().contains("HTTP"), "{}", ext("web"));
    assert_eq!(ext("both")["state"], "failed");
    assert!(ext("both")["problems"][0].as_str().unwrap().contains("not both"));
    assert!(!stdout(&env.clat(&["tools", "--json"])).contains("abcdefghijklmnop"), "headers never leave memory");
    assert!(!pid_alive(&pid_file), "the server was closed and reaped when clat exited");
}

#[test]
fn calls_reach_the_server_which_runs_in_clat_home() {
    let env = TestEnv::trusted();
    std::fs::create_dir_all(env.home.join("work")).unwrap();
    env.write_mcp_config(json!({
        "srv": { "command": SERVER },
        "rel": { "command": SERVER, "cwd": "work" }
    }));
    let out = env.clat(&["call", "mcp_srv_echo", r#"{"x":1}"#, "--mode", "full-access", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"][0]["text"], r#"{"x":1}"#);
    let out = env.clat(&["call", "mcp_srv_cwd", "{}", "--mode", "full-access"]);
    assert_eq!(stdout(&out).trim(), env.home.canonicalize().unwrap().display().to_string(), "never the project");
    let out = env.clat(&["call", "mcp_rel_cwd", "{}", "--mode", "full-access"]);
    assert_eq!(stdout(&out).trim(), env.home.join("work").canonicalize().unwrap().display().to_string());
    // Destructive by default: a headless ask is denied before anything reaches the server.
    let out = env.clat(&["call", "mcp_srv_echo", "{}"]);
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn nothing_is_started_for_an_untrusted_project() {
    let env = TestEnv::new();
    let pid_file = env.dir.path().join("srv.pid");
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--pid-file", pid_file] } }));
    let out = env.clat(&["tools", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!pid_file.exists(), "the server was never spawned");
}

#[test]
fn a_malformed_mcp_json_is_reported_and_the_rest_still_works() {
    let env = TestEnv::trusted();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(env.home.join("mcp.json"), "{\n  \"srv\": { \"command\": \n}").unwrap();
    let v = tools_json(&env);
    let problem = v["extensions"][0]["problems"][0].as_str().unwrap().to_string();
    assert!(problem.contains("mcp.json is malformed at line 3"), "{problem}");
    assert_eq!(v["tools"].as_array().unwrap().len(), 6, "the native tools are still there");
}

#[test]
fn installed_mcp_stdio_packages_run_in_their_artifact_dir() {
    let env = TestEnv::trusted();
    env.install_test_server_package("packaged", &["--tools", "2"]);
    let out = env.clat(&["call", "mcp_packaged_cwd", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let cwd = stdout(&out).trim().to_string();
    let v = tools_json(&env);
    let reports: Vec<&Value> = v["extensions"].as_array().unwrap().iter().filter(|e| e["name"] == "packaged").collect();
    assert_eq!(reports.len(), 1, "an mcp-stdio package is reported once: {reports:?}");
    assert_eq!(reports[0]["state"], "ready");
    assert!(
        cwd.starts_with(&env.home.join("plugins/artifacts").canonicalize().unwrap().display().to_string()),
        "{cwd}"
    );
    // A same-named mcp.json entry wins over the package.
    env.write_mcp_config(json!({ "packaged": { "command": SERVER, "args": ["--tools", "3"] } }));
    let v = tools_json(&env);
    let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"mcp_packaged_big_result"), "{names:?}");
}

#[test]
fn clat_mcp_shows_counts_transports_versions_and_failures() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "legacy": { "command": SERVER, "args": ["--tools", "3"] },
        "modern": { "command": SERVER, "args": ["--modern", "--tools", "2"] },
        "broken": { "command": SERVER, "args": ["--offer", "1999-01-01", "--stderr-noise"] },
        "web": { "url": "http://127.0.0.1:9/mcp" }
    }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(7), "a configured server failed: {}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["configured"].as_u64(), v["connected"].as_u64(), v["failed"].as_u64(), v["not_started"].as_u64()),
        (Some(4), Some(2), Some(2), Some(0)),
        "{v}"
    );
    let server = |name: &str| v["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned().unwrap();
    assert_eq!(server("legacy")["protocol"], "2025-11-25 (legacy)");
    assert_eq!(server("legacy")["tools"], 3);
    assert_eq!(server("modern")["protocol"], "2026-07-28 (modern)");
    assert_eq!(server("modern")["transport"], "stdio");
    assert_eq!(server("web")["transport"], "streamable-http");
    let broken = server("broken");
    assert_eq!(broken["state"], "failed");
    assert!(broken["problems"][0].as_str().unwrap().contains("1999-01-01"), "{broken}");
    let tail = broken["stderr_tail"].as_array().unwrap();
    assert!(!tail.is_empty() && tail.iter().all(|l| !l.as_str().unwrap().contains("sk-test-abcdef")), "{broken}");
    let out = env.clat(&["mcp"]);
    assert!(
        stdout(&out).starts_with("MCP servers: 4 configured, 0 connecting, 2 connected, 2 failed, 0 not started"),
        "{}",
        stdout(&out)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_run_waits_for_the_initial_surface_then_freezes_and_late_servers_are_rejected() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "fast": { "command": SERVER, "args": ["--tools", "1"] },
        "slow": { "command": SERVER, "args": ["--tools", "1", "--delay-initialize", "3000"] }
    }));
    let scope = std::sync::Arc::new(env.mount());
    scope.start_extensions();
    // The worker runs in the background; meanwhile the caller could do anything.
    let run =
        scope.start_run_within(clat_host::run::RunContext::builder(), std::time::Duration::from_millis(1500)).await;
    assert!(scope.registry().is_frozen());
    let names: Vec<String> = scope.registry().list().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"mcp_fast_echo".to_string()), "the fast server made the initial surface: {names:?}");
    assert!(!names.contains(&"mcp_slow_echo".to_string()), "{names:?}");
    assert!(scope.wait_for_initial_surface(std::time::Duration::from_secs(30)).await, "the worker finishes");
    let slow = scope.extensions().into_iter().find(|e| e.name == "slow").unwrap();
    assert!(slow.problems.iter().any(|p| p.contains("after the registry froze")), "{slow:?}");
    assert!(!scope.registry().list().iter().any(|t| t.name == "mcp_slow_echo"), "the registry never thaws");
    scope.finish_run(&run);
    scope.close().await;
}

/// The initial surface is waited for once per scope: a second run starts at once, though a server is still
/// starting (it would have finished within the second run's bound), and the server's status says it missed the
/// surface once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initial_surface_is_waited_for_once_and_a_later_run_starts_at_once() {
    let env = TestEnv::trusted();
    env.write_mcp_config(
        json!({ "slow": { "command": SERVER, "args": ["--tools", "1", "--delay-initialize", "3000"] } }),
    );
    let scope = std::sync::Arc::new(env.mount());
    scope.start_extensions();
    let builder = clat_host::run::RunContext::builder;
    let first = scope.start_run_within(builder(), std::time::Duration::from_millis(200)).await;
    let second = scope.start_run_within(builder(), std::time::Duration::from_secs(30)).await;
    let slow = scope.extensions().into_iter().find(|e| e.name == "slow").unwrap();
    assert_eq!(slow.state, ExtensionState::Starting, "the second run did not wait for it: {slow:?}");
    let missed = slow.problems.iter().filter(|p| p.contains("missed the")).count();
    assert_eq!(missed, 1, "{slow:?}");
    assert_eq!(scope.missed_initial_surface().len(), 1);
    scope.finish_run(&first);
    scope.finish_run(&second);
    scope.close().await;
}

#[test]
fn an_mcp_result_over_1_mib_is_cut_with_a_marker_and_the_server_keeps_working() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER } }));
    let out = env.clat(&["call", "mcp_srv_big_result", r#"{"bytes":2097152}"#, "--mode", "full-access", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.len() <= 1024 * 1024 + 4096, "what the model gets stays within the limit: {}", out.stdout.len());
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["isError"], false);
    let content = v["content"].as_array().unwrap();
    assert!(content[0]["text"].as_str().unwrap().len() > 1_000_000, "the leading content is kept");
    let marker = content.last().unwrap()["text"].as_str().unwrap();
    assert!(marker.contains("exceeds the 1048576-byte limit; it was cut here and"), "{marker}");
    let out = env.clat(&["call", "mcp_srv_big_result", r#"{"bytes":1000}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "a smaller result from the same server is fine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_before_the_freeze_registers_the_new_tools() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--tools", "3", "--list-changed"] } }));
    let scope = env.mount();
    let statuses = scope.load_mcp_servers().await;
    assert_eq!(statuses[0].state, "ready", "{statuses:?}");
    let mut names = Vec::new();
    for _ in 0..500 {
        names = scope.registry().list().into_iter().map(|t| t.name).collect::<Vec<_>>();
        if names.iter().any(|n| n == "mcp_srv_late_tool") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(names.iter().any(|n| n == "mcp_srv_late_tool"), "the re-listing added the new tool: {names:?}");
    assert_eq!(names.iter().filter(|n| *n == "mcp_srv_echo").count(), 1, "known tools are not registered twice");
    assert!(scope.registry().reports().is_empty(), "no collisions reported: {:?}", scope.registry().reports());
    scope.close().await;
}

#[test]
fn colliding_and_long_tool_names_are_reported_skipped_or_hashed() {
    let env = TestEnv::trusted();
    let long = "a_tool_name_so_long_that_the_registered_name_would_pass_sixty_four_characters";
    let names = format!("echo,a-b,a_b,{long}");
    env.write_mcp_config(json!({
        "my-srv": { "command": SERVER, "args": ["--tool-names", names] },
        // The same server segment after normalization: its `echo` collides across servers.
        "my_srv": { "command": SERVER, "args": ["--tool-names", "echo,cwd"] }
    }));
    let v = tools_json(&env);
    let registered: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    let count = |name: &str| registered.iter().filter(|n| **n == name).count();
    assert_eq!((count("mcp_my_srv_echo"), count("mcp_my_srv_a_b")), (1, 1), "{registered:?}");
    let problems: Vec<String> = v["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()))
        .collect();
    let reported = |name: &str| problems.iter().filter(|p| p.contains(name) && p.contains("collides")).count();
    assert_eq!(
        (reported("mcp_my_srv_echo"), reported("mcp_my_srv_a_b")),
        (1, 1),
        "the losers are reported: {problems:?}"
    );
    assert!(registered.contains(&"mcp_my_srv_cwd"), "the other tools still register: {registered:?}");
    let ext = |name: &str| v["extensions"].as_array().unwrap().iter().find(|e| e["name"] == name).cloned().unwrap();
    assert_eq!((ext("my-srv")["state"].clone(), ext("my_srv")["state"].clone()), (json!("ready"), json!("ready")));

    let hashed = v["tools"].as_array().unwrap().iter().find(|t| t["original_name"] == long).expect("the long tool");
    let hashed_name = hashed["name"].as_str().unwrap();
    assert_eq!(hashed_name.len(), 64, "{hashed_name}");
    assert!(hashed_name.starts_with("mcp_my_srv_a_tool_name_so_long"), "{hashed_name}");
    let suffix = &hashed_name[54..];
    assert!(hashed_name.as_bytes()[53] == b'_' && suffix.chars().all(|c| c.is_ascii_hexdigit()), "{hashed_name}");
    // The call goes out under the server's own name.
    let out = env.clat(&["call", hashed_name, "{}", "--mode", "full-access", "--json"]);
    assert!(stdout(&out).contains(&format!("unknown tool {long}")), "the server saw its own name: {}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_later_than_the_real_20_s_wait_is_rejected_and_closed() {
    let env = TestEnv::trusted();
    let pid_file = env.dir.path().join("late.pid");
    env.write_mcp_config(json!({
        "fast": { "command": SERVER, "args": ["--tools", "1"] },
        // Its tools/list answers after 22 s: inside the 30 s page bound, past the 20 s wait.
        "late": { "command": SERVER, "args": ["--tools", "1", "--delay-list", "22000", "--pid-file", pid_file] }
    }));
    let scope = std::sync::Arc::new(env.mount());
    scope.start_extensions();
    let run = scope.start_run_when_ready(clat_host::run::RunContext::builder()).await;
    assert!(scope.registry().is_frozen());
    assert!(!scope.wait_for_initial_surface(std::time::Duration::ZERO).await, "the run did not wait for `late`");
    let names: Vec<String> = scope.registry().list().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"mcp_fast_echo".to_string()) && !names.contains(&"mcp_late_echo".to_string()));
    assert!(scope.wait_for_initial_surface(std::time::Duration::from_secs(60)).await);
    let late = scope.extensions().into_iter().find(|e| e.name == "late").unwrap();
    assert_eq!(late.state, "failed", "{late:?}");
    assert!(
        late.problems.iter().any(|p| p.contains("mcp_late_echo") && p.contains("arrived after the registry froze")),
        "{late:?}"
    );
    assert!(!pid_alive(&pid_file), "a server that can contribute nothing is not kept running");
    scope.finish_run(&run);
    scope.close().await;
}

#[test]
fn refused_tools_are_named_duplicates_reported_and_ambiguous_hints_destructive() {
    let env = TestEnv::trusted();
    let tools = json!([
        { "name": "good", "inputSchema": { "type": "object" } },
        { "name": "bad", "inputSchema": 3 },
        { "name": "good", "inputSchema": { "type": "object" }, "description": "a second good" },
        { "name": "vague", "inputSchema": { "type": "object" }, "annotations": { "readOnlyHint": "yes" } },
    ]);
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--tools-json", tools.to_string()] } }));
    let v = tools_json(&env);
    let srv = v["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "srv").unwrap().clone();
    let problems: Vec<&str> = srv["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(
        problems.iter().any(|p| p.starts_with("skipped tool \"bad\": ") && p.contains("inputSchema")),
        "{problems:?}"
    );
    assert!(problems.contains(&"tool \"good\" is listed twice; the second was skipped"), "{problems:?}");
    let tool = |name: &str| v["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).cloned();
    assert_eq!(tool("mcp_srv_vague").expect("an ambiguous hint keeps the tool")["effect"], "destructive");
    assert!(tool("mcp_srv_good").is_some() && tool("mcp_srv_bad").is_none());
}

#[test]
fn a_server_that_logs_100_mib_before_answering_still_connects() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "chatty": { "command": SERVER, "args": ["--stderr-flood", "100"] } }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["connected"], 1, "{v}");
}

#[test]
fn clat_call_says_which_server_missed_the_initial_surface() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        // Its tools/list answers after 22 s: past the 20 s the run waits.
        "late": { "command": SERVER, "args": ["--tools", "1", "--delay-list", "22000"] }
    }));
    let out = env.clat(&["call", "mcp_late_echo", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(2), "the tool is not registered: {}", stderr(&out));
    assert!(
        stderr(&out).contains("clat: server late missed the 20 s initial surface, so its tools are not in this run"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_malformed_entry_replaces_its_package_too_and_its_error_stays_in_view() {
    let env = TestEnv::trusted();
    env.install_test_server_package("packaged", &[]);
    // The user means to replace the package and mistypes a key; a broken URL entry beside it.
    env.write_mcp_config(
        json!({ "packaged": { "command": SERVER, "timeout": 5 }, "remote": { "url": "ftp://x.example" } }),
    );
    let v = tools_json(&env);
    let names: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(!names.iter().any(|n| n.starts_with("mcp_packaged_")), "the package started behind the entry: {names:?}");
    let reports: Vec<&Value> = v["extensions"].as_array().unwrap().iter().filter(|e| e["name"] == "packaged").collect();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["state"], "failed", "{reports:?}");
    let problems = reports[0]["problems"].to_string();
    assert!(problems.contains("unknown key `timeout`"), "the entry's error is shown: {problems}");
    assert!(problems.contains("replaces the installed mcp-stdio package packaged"), "{problems}");
    let remote = v["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "remote").unwrap();
    assert_eq!(remote["kind"], "mcp-http", "a broken url entry is an HTTP server's: {remote}");
    let out = env.clat(&["mcp", "--json"]);
    let status: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let remote = status["servers"].as_array().unwrap().iter().find(|s| s["name"] == "remote").unwrap();
    assert_eq!(remote["transport"], "streamable-http", "{remote}");
}
