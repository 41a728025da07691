//! `clat mcp add` as other agents' users type it (Claude Code, Codex, Gemini
//! CLI): `-e/--env`, `-H/--header`, `-t/--transport` (`sse` refused with its
//! reason), `-s/--scope user`, a positional URL, a command without `--` when
//! that is unambiguous (else the error says to use `--`), `add-json`, and
//! `clat mcp list`, which reads the configuration in any directory and starts
//! nothing; Cursor's `${env:NAME}` expands like `${NAME}`; VS Code's
//! `{"servers", "inputs"}` shape is read and kept by edits.

mod support;

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

fn entries(env: &TestEnv) -> Value {
    serde_json::from_str(&env.read_home("mcp.json")).unwrap()
}

#[test]
fn add_takes_short_options_a_positional_url_and_a_command_without_dashes() {
    let env = TestEnv::new();
    let ok = |args: &[&str]| {
        let out = env.clat(args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    };
    ok(&["mcp", "add", "-e", "API_KEY=${API_KEY}", "-s", "user", "everything", "npx", "-y", "pkg@1"]);
    ok(&["mcp", "add", "-t", "http", "-H", "X-Team: a", "remote", "https://example.com/mcp"]);
    ok(&["mcp", "add", "plain", "https://plain.example/mcp"]);
    ok(&["mcp", "add", "-e", "A=1", "dashed", "--", "uvx", "srv", "--env", "inner"]);
    let file = entries(&env);
    assert_eq!(
        file["everything"],
        json!({ "command": "npx", "args": ["-y", "pkg@1"], "env": { "API_KEY": "${API_KEY}" } })
    );
    assert_eq!(file["remote"], json!({ "url": "https://example.com/mcp", "headers": { "X-Team": "a" } }));
    assert_eq!(file["plain"], json!({ "url": "https://plain.example/mcp" }));
    assert_eq!(file["dashed"]["args"], json!(["srv", "--env", "inner"]), "after `--`, everything is the server's");
}

#[test]
fn add_refuses_what_is_ambiguous_or_unsupported_and_says_what_to_do() {
    let env = TestEnv::new();
    for (args, says) in [
        (
            vec!["mcp", "add", "srv", "uvx", "srv", "--env", "X=1"],
            "put clat's options before the name and the command after `--`",
        ),
        (
            vec!["mcp", "add", "-t", "sse", "old", "https://a.example/sse"],
            "deprecated HTTP+SSE transport is not supported",
        ),
        (vec!["mcp", "add", "-t", "http", "cmd", "--", "npx", "x"], "--transport http takes the server's URL"),
        (vec!["mcp", "add", "-t", "stdio", "u", "https://a.example/mcp"], "--transport stdio takes a command"),
        (vec!["mcp", "add", "-s", "local", "p", "--", "x"], "`user` ($CLAT_HOME/mcp.json) or `project`"),
        (vec!["mcp", "add", "-H", "A: b", "h", "--", "x"], "--header applies to HTTP servers"),
    ] {
        let out = env.clat(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    assert!(!env.home.join("mcp.json").exists(), "nothing was written");
}

#[test]
fn add_json_checks_the_entry_as_mcp_json_reads_it() {
    let env = TestEnv::new();
    let out = env.clat(&[
        "mcp",
        "add-json",
        "fs",
        r#"{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(entries(&env)["fs"]["command"], "npx");
    for (text, says) in [
        ("{not json", "not valid JSON"),
        ("[1]", "must be a JSON object"),
        (r#"{"command": "x", "timeout": 3}"#, "unknown key `timeout`"),
        (r#"{"type": "sse", "url": "https://a"}"#, "deprecated HTTP+SSE"),
    ] {
        let out = env.clat(&["mcp", "add-json", "bad", text]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(stderr(&out).contains(says), "{text}: {}", stderr(&out));
    }
    assert!(entries(&env).get("bad").is_none());
}

#[test]
fn mcp_list_reads_the_configuration_anywhere_and_starts_nothing() {
    let env = TestEnv::new(); // not trusted
    let marker = env.dir.path().join("started");
    let out = env.clat(&["mcp", "add", "touchy", "--", "sh", "-c", &format!("touch {}", marker.display())]);
    assert!(out.status.success(), "{}", stderr(&out));
    env.clat(&["mcp", "add", "remote", "https://example.com/mcp"]);
    env.clat(&["mcp", "disable", "remote"]);

    let out = env.clat(&["mcp", "list"]);
    assert!(out.status.success(), "an untrusted directory can read the configuration: {}", stderr(&out));
    assert!(stdout(&out).contains("touchy  stdio  sh -c touch"), "{}", stdout(&out));
    assert!(stdout(&out).contains("remote  http  https://example.com/mcp  (disabled)"), "{}", stdout(&out));
    let out = env.clat(&["mcp", "list", "--json"]);
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed["servers"].as_array().unwrap().len(), 2);
    assert!(!marker.exists(), "listing starts nothing");

    let out = env.clat(&["mcp"]);
    assert_eq!(out.status.code(), Some(3), "starting servers keeps the trust gate");
    assert!(!marker.exists());
}

#[test]
fn cursor_s_env_variables_expand() {
    let env = TestEnv::trusted();
    let server = clat_test_server_artifact::MCP_TEST_SERVER;
    let entry =
        json!({ "command": "sh", "args": ["-c", format!("touch \"${{env:MARK_DIR}}/started\"; exec {server}")] });
    let out = env.clat(&["mcp", "add-json", "cursor-style", &entry.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let marks = env.dir.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let out = env.clat_with_env(&["mcp"], &[("MARK_DIR", marks.to_str().unwrap())]);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(marks.join("started").exists(), "${{env:MARK_DIR}} reached the server as the variable's value");
}

#[test]
fn vs_code_s_shape_is_read_and_kept_by_edits() {
    let env = TestEnv::new();
    std::fs::create_dir_all(&env.home).unwrap();
    let vscode = json!({
        "inputs": [{ "type": "promptString", "id": "key", "password": true }],
        "servers": { "local": { "command": "npx", "args": ["-y", "pkg"] } },
    });
    std::fs::write(env.home.join("mcp.json"), vscode.to_string()).unwrap();
    let out = env.clat(&["mcp", "add", "other", "--", "uvx", "srv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let file = entries(&env);
    assert_eq!(file["inputs"], vscode["inputs"], "VS Code's inputs are kept");
    assert_eq!(file["servers"]["other"]["command"], "uvx", "the new entry joins VS Code's wrapper");
    let out = env.clat(&["mcp", "list"]);
    assert!(stdout(&out).contains("local  stdio  npx -y pkg") && stdout(&out).contains("other  stdio  uvx srv"));
}

/// VS Code's `inputs`: at a terminal each one a server to be started uses is asked once (a password unseen, a
/// `pickString` by number), reaches the server, and never shows; headless the server fails with what to write.
#[test]
fn vs_code_inputs_are_asked_at_a_terminal_and_refused_clearly_headless() {
    let script = std::process::Command::new("script").arg("--version").output();
    assert!(script.is_ok_and(|o| o.status.success()), "util-linux `script` gives the test a terminal");
    let env = TestEnv::trusted();
    let server = clat_test_server_artifact::MCP_TEST_SERVER;
    let logs = env.dir.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    env.write_mcp_config(json!({
        "inputs": [
            { "type": "promptString", "id": "token", "description": "Server token", "password": true },
            { "type": "pickString", "id": "region", "description": "Region", "options": ["eu", "us"] },
            { "type": "promptString", "id": "unused", "description": "Never asked" }
        ],
        "servers": { "vs": { "command": server,
                             "args": ["--echo-env", "VS_TOKEN", "--log-file", format!("{}/${{input:region}}.log", logs.display())],
                             "env": { "VS_TOKEN": "${input:token}" } } }
    }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let status: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let problem = status["servers"][0]["problems"].to_string();
    assert!(problem.contains("uses ${input:region}, a VS Code input, which is asked for at a terminal"), "{problem}");
    assert!(problem.contains("write ${env:NAME} instead"), "{problem}");

    let clat =
        format!("{} --home {} --project {} mcp", env!("CARGO_BIN_EXE_clat"), env.home.display(), env.project.display());
    let shown = at_a_terminal_answering(&env, &clat, &[("(hidden) ", "s3cret-tok-777\n"), ("2. us\n> ", "2\n")]);
    assert!(shown.contains("Server token (input \"token\", for vs):\n> (hidden)"), "{shown}");
    assert!(shown.contains("Region (input \"region\", for vs):\n  1. eu\n  2. us"), "{shown}");
    assert!(!shown.contains("Never asked"), "an input no server uses is not asked: {shown}");
    assert!(shown.contains("vs  stdio  ready"), "{shown}");
    assert!(!shown.contains("s3cret-tok-777"), "the password is typed unseen and redacted: {shown}");
    assert!(logs.join("us.log").exists(), "the picked option reached the server's arguments");
}

/// Run `command` in a terminal (util-linux `script`), typing each answer once its prompt has shown (so nothing is
/// typed ahead of a prompt that turns echo off); the whole screen, without carriage returns.
fn at_a_terminal_answering(env: &TestEnv, command: &str, answers: &[(&str, &str)]) -> String {
    use std::io::{Read, Write};
    let mut child = std::process::Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .current_dir(&env.project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (sent, received) = std::sync::mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || sent.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = String::new();
    for (prompt, answer) in answers {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !screen.replace('\r', "").ends_with(prompt) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let chunk = received.recv_timeout(left).unwrap_or_else(|_| panic!("no prompt {prompt:?}: {screen}"));
            screen.push_str(&String::from_utf8_lossy(&chunk));
        }
        stdin.write_all(answer.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
    drop(stdin);
    child.wait().unwrap();
    reader.join().unwrap();
    while let Ok(chunk) = received.try_recv() {
        screen.push_str(&String::from_utf8_lossy(&chunk));
    }
    screen.replace('\r', "")
}
