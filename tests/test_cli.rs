//! The `clat` binary end to end: trust, tools, call, the `--json` shapes
//! documented in docs/cli.md, events as JSON lines, and every exit code.

mod support;

use serde_json::Value;
use support::{TestEnv, stderr, stdout};

fn json_out(out: &std::process::Output) -> Value {
    serde_json::from_str(stdout(out).trim()).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(out)))
}

#[test]
fn trust_then_tools_json_lists_the_six_native_tools_with_effects() {
    let env = TestEnv::new();
    let out = env.clat(&["trust"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("trusted "));
    let out = env.clat(&["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = json_out(&out);
    let tools = v["tools"].as_array().unwrap();
    let got: Vec<(&str, &str)> =
        tools.iter().map(|t| (t["name"].as_str().unwrap(), t["effect"].as_str().unwrap())).collect();
    assert_eq!(
        got,
        [
            ("list_files", "read"),
            ("read_file", "read"),
            ("search", "read"),
            ("write_file", "write"),
            ("edit_file", "write"),
            ("run_command", "destructive")
        ]
    );
    for t in tools {
        assert_eq!(t["source"], serde_json::json!({ "kind": "native" }));
        assert_eq!(t["original_name"], t["name"]);
        assert!(!t["description"].as_str().unwrap().is_empty());
        assert_eq!(t["input_schema"]["type"], "object");
    }
    // The human table has a header, one line per tool, and what their definitions cost.
    let out = env.clat(&["tools"]);
    assert_eq!(stdout(&out).lines().count(), 8);
    assert!(stdout(&out).lines().last().unwrap().starts_with("definitions: "), "{}", stdout(&out));
}

#[test]
fn call_read_file_works_in_a_trusted_project() {
    let env = TestEnv::trusted();
    env.write("notes.txt", "one\ntwo\nthree\n");
    let out = env.clat(&["call", "read_file", r#"{"path":"notes.txt","start_line":2,"end_line":2}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "two\n");
    let out = env.clat(&["call", "read_file", r#"{"path":"notes.txt"}"#, "--json"]);
    let v = json_out(&out);
    assert_eq!(v["tool"], "read_file");
    assert_eq!(v["isError"], false);
    assert_eq!(v["content"][0]["type"], "text");
    assert_eq!(v["content"][0]["text"], "one\ntwo\nthree\n");
    assert!(v["runId"].as_str().unwrap().starts_with("run-"));
}

#[test]
fn outside_the_fence_exits_1_and_untrusted_exits_3() {
    let env = TestEnv::new();
    let out = env.clat(&["call", "read_file", r#"{"path":"x"}"#]);
    assert_eq!(out.status.code(), Some(3));
    let out = env.clat(&["call", "read_file", r#"{"path":"x"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json_out(&out);
    assert_eq!(v["error"]["kind"], "untrusted");
    assert_eq!(v["exit_code"], 3);
    let out = env.clat(&["tools"]);
    assert_eq!(out.status.code(), Some(3));

    env.trust();
    let out = env.clat(&["call", "read_file", r#"{"path":"../../etc/passwd"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("leaves the project root"), "{}", stderr(&out));
    let out = env.clat(&["call", "read_file", r#"{"path":"/etc/passwd"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_out(&out)["isError"], true);
}

#[test]
fn usage_errors_exit_2_with_a_specific_message() {
    let env = TestEnv::trusted();
    let cases: [(&[&str], &str, &str); 5] = [
        (&["call", "read_file", "{\"path\": "], "not valid JSON (line 1", "invalid_arguments"),
        (&["call", "read_file", "[1]"], "must be a JSON object", "invalid_arguments"),
        (&["call", "read_file", "{\"path\": 3}"], "invalid arguments for read_file", "invalid_arguments"),
        (&["call", "no_such_tool"], "unknown tool", "unknown_tool"),
        (&["call", "read_file", "{}", "--mode", "yolo"], "unknown permission mode", "usage"),
    ];
    for (args, message, kind) in cases {
        let out = env.clat(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{args:?}: {}", stderr(&out));
        let mut with_json = args.to_vec();
        with_json.push("--json");
        let out = env.clat(&with_json);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(json_out(&out)["error"]["kind"], kind, "{args:?}");
    }
    let out = env.clat(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2), "clap usage errors are 2");
}

#[test]
fn a_headless_ask_is_denied_with_exit_4_and_nothing_is_written() {
    let env = TestEnv::trusted();
    let out = env.clat(&["call", "write_file", r#"{"path":"a.txt","content":"x"}"#]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("--mode auto-edit"), "{}", stderr(&out));
    assert!(!env.project.join("a.txt").exists());
    let out = env.clat(&["call", "write_file", r#"{"path":"a.txt","content":"x"}"#, "--mode", "read-only", "--json"]);
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(json_out(&out)["error"]["kind"], "denied");
    let out = env.clat(&["call", "write_file", r#"{"path":"a.txt","content":"x"}"#, "--mode", "auto-edit"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(env.read("a.txt"), "x");
}

#[test]
fn a_failing_command_exits_1_with_its_outcome() {
    let env = TestEnv::trusted();
    let out =
        env.clat(&["call", "run_command", r#"{"command":"echo no >&2; exit 7"}"#, "--mode", "full-access", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json_out(&out);
    assert_eq!(v["isError"], true);
    assert_eq!(v["structuredContent"]["exit_code"], 7);
    assert_eq!(v["structuredContent"]["stderr"]["text"], "no\n");
}

#[test]
fn events_are_json_lines_on_stderr() {
    let env = TestEnv::trusted();
    env.write("a.txt", "a");
    let out = env.clat(&["call", "read_file", r#"{"path":"a.txt"}"#, "--events"]);
    assert_eq!(out.status.code(), Some(0));
    let events: Vec<Value> = stderr(&out).lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["run_started", "tool_started", "permission", "tool_finished", "run_finished"]);
    let run_id = events[0]["run_id"].as_str().unwrap();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["run_id"], run_id);
        assert_eq!(e["seq"], i as u64);
    }
    assert_eq!(events[2]["allowed"], true);
    assert_eq!(events[2]["decided_by"], "mode");
    assert_eq!(events[3]["is_error"], false);
    assert_eq!(stdout(&out), "a\n", "a newline ends the output");
}

#[test]
fn home_comes_from_clat_home_when_no_flag_is_given() {
    let env = TestEnv::new();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .env("CLAT_HOME", &env.home)
        .current_dir(&env.project)
        .arg("trust")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(env.home.join("trusted-projects.json").exists());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .env("CLAT_HOME", &env.home)
        .current_dir(&env.project)
        .args(["tools", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "the project defaults to the current directory");
}

/// The failure table of docs/cli.md (`--json` on failure) lists every error kind the
/// code can print, each with the exit code the code gives it: a kind added
/// without its row, or a row whose code drifted, fails here.
#[test]
fn every_error_kind_is_in_the_failure_table_with_its_exit_code() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let exit_rs = std::fs::read_to_string(root.join("src/cli/exit.rs")).unwrap();
    let codes: std::collections::HashMap<String, String> = regex::Regex::new(r"(?m)^\s*([A-Z][A-Za-z]+) = (\d+),$")
        .unwrap()
        .captures_iter(&exit_rs)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    let mut used = std::collections::BTreeMap::new();
    let kind = regex::Regex::new(r#"Exit::([A-Za-z]+),\s*"([a-z_-]+)""#).unwrap();
    let mut files = vec![root.join("src")];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.extension().is_some_and(|x| x == "rs") {
            for c in kind.captures_iter(&std::fs::read_to_string(&path).unwrap()) {
                used.insert(c[2].to_string(), codes[&c[1]].clone());
            }
        }
    }
    assert!(used.len() >= 15, "the scan found the kinds: {used:?}");
    let readme = std::fs::read_to_string(root.join("../docs/cli.md")).unwrap();
    let table = readme.split("#### `--json` on failure").nth(1).unwrap().split("\n\n|").nth(1).unwrap();
    let rows: std::collections::BTreeMap<String, String> = regex::Regex::new(r"(?m)^\| `([a-z_-]+)` \| (\d+) \|")
        .unwrap()
        .captures_iter(&format!("|{table}"))
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect();
    for (kind, code) in &used {
        assert_eq!(
            rows.get(kind),
            Some(code),
            "docs/cli.md failure table: kind `{kind}` (exit {code}); rows: {rows:?}"
        );
    }
}
