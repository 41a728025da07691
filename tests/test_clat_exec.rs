//! `clat exec SCRIPT`: several tool calls as one headless run — one run id, one
//! mode, one sampling budget shared by a WASM guest and an MCP server — with
//! run events and results as JSON lines on stdout; elicitation fails cleanly
//! (no question frontend); a bad script starts nothing.

mod support;

use clat_guest_artifacts as guests;
use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn lines(out: &std::process::Output) -> Vec<Value> {
    stdout(out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect()
}

fn sampling(text: &str) -> Value {
    json!({ "messages": [{ "role": "user", "content": { "type": "text", "text": text } }], "maxTokens": 20 })
}

#[test]
fn a_script_is_one_run_with_one_budget_and_json_lines_on_stdout() {
    let env = TestEnv::trusted();
    env.write("a.txt", "CLAT mounts WASM plugins and MCP servers side by side.");
    let out = env.clat(&["plugin", "install", guests::SUMMARIZE_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::write(
        env.home.join("mcp.json"),
        json!({ "srv": { "command": SERVER, "args": ["--host-services", "--tool-names", "ask_host"] } }).to_string(),
    )
    .unwrap();
    let ask = |method: &str, params: Value| json!({ "tool": "mcp_srv_ask_host", "arguments": { "method": method, "params": params } });
    let form = json!({ "message": "Name?", "requestedSchema": { "type": "object", "properties": { "n": { "type": "string" } } } });
    let script = [
        "# a comment, then a blank line".to_string(),
        String::new(),
        json!({ "tool": "read_file", "arguments": { "path": "a.txt" } }).to_string(),
        json!({ "tool": "wasm_summarize_file", "arguments": { "path": "a.txt" } }).to_string(),
        ask("sampling/createMessage", sampling("from the server")).to_string(),
        ask("elicitation/create", form).to_string(),
        ask("io.artec.clat/context/get", json!({})).to_string(),
        json!({ "tool": "no_such_tool" }).to_string(),
    ]
    .join("\n");
    let script_path = env.dir.path().join("script.jsonl");
    std::fs::write(&script_path, script).unwrap();
    let out = env.clat(&["exec", script_path.to_str().unwrap(), "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(2), "the first failing call decides: unknown tool. {}", stderr(&out));
    let lines = lines(&out);

    let run_ids: std::collections::HashSet<&str> = lines.iter().map(|l| l["run_id"].as_str().unwrap()).collect();
    assert_eq!(run_ids.len(), 1, "one run: {run_ids:?}");
    assert_eq!(lines[0]["type"], "run_started");
    assert_eq!(lines[0]["mode"], "full-access");
    assert_eq!(lines.last().unwrap()["type"], "run_finished");
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "call_result").collect();
    assert_eq!(results.iter().map(|r| r["line"].as_u64().unwrap()).collect::<Vec<_>>(), vec![3, 4, 5, 6, 7, 8]);

    assert!(results[0]["result"]["content"][0]["text"].as_str().unwrap().contains("side by side"));
    assert!(results[1]["result"]["content"][0]["text"].as_str().unwrap().contains("[offline model]"), "{}", results[1]);
    let answer: Value = serde_json::from_str(results[2]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer["result"]["model"], "clat-offline-1", "{answer}");
    // Elicitation: no interactive frontend, so a clean failure the server sees.
    let answer: Value = serde_json::from_str(results[3]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer["error"]["data"]["kind"], "unsupported", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("headless"), "{answer}");
    // One budget: the guest's and the server's requests both counted.
    let answer: Value = serde_json::from_str(results[4]["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer["result"]["snapshot"]["run"]["samplingRequestsLeft"], 62, "{answer}");
    assert_eq!(results[5]["error"]["kind"], "unknown_tool");

    let sources: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "sampling" && l["outcome"] == "completed")
        .map(|l| l["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, vec!["wasm:summarize", "mcp:srv"]);
}

#[test]
fn a_bad_script_line_starts_nothing() {
    let env = TestEnv::trusted();
    let pid_file = env.dir.path().join("srv.pid");
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("mcp.json"),
        json!({ "srv": { "command": SERVER, "args": ["--pid-file", pid_file] } }).to_string(),
    )
    .unwrap();
    let script_path = env.dir.path().join("script.jsonl");
    std::fs::write(&script_path, "{\"tool\": \"read_file\"}\n{\"tool\": \"read_file\", \"args\": {}}\n").unwrap();
    let out = env.clat(&["exec", script_path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["error"]["kind"], "invalid_script");
    assert!(v["error"]["message"].as_str().unwrap().contains("line 2"), "{v}");
    assert!(!pid_file.exists(), "no server was started");
}

#[test]
fn a_script_from_stdin_runs_in_the_given_mode() {
    let env = TestEnv::trusted();
    let script = "{\"tool\":\"write_file\",\"arguments\":{\"path\":\"b.txt\",\"content\":\"x\"}}\n";
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_clat"));
    command.args(["exec", "-", "--mode", "read-only"]);
    let out = support::output_with_stdin(&env, command, script.as_bytes());
    assert_eq!(out.status.code(), Some(4), "denied by read-only: {}", stderr(&out));
    let result = lines(&out).into_iter().find(|l| l["type"] == "call_result").unwrap();
    assert_eq!(result["error"]["kind"], "denied", "{result}");
    assert!(!env.project.join("b.txt").exists());
}
