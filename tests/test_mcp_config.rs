//! MCP servers configured the way users already configure them, through the
//! built `clat` binary: the `mcpServers` wrapper (server-everything pasted
//! from its README), `${VAR}` expansion into args, env, cwd, URLs and headers
//! (a missing variable fails only its server, naming the variable and never a
//! value), `enabled`/`disabled`, per-server timeouts, tool filters,
//! `env_inherit: false`, and `clat mcp add | remove | get | enable | disable`
//! editing `mcp.json` under the home's lock (the file's shape kept, bad input
//! refused before anything is written, concurrent edits losing nothing).

mod support;

use std::path::PathBuf;

use serde_json::{Value, json};
use support::{HttpServer, TestEnv, clat_concurrently, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn everything() -> (String, String) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(script.exists(), "the test peers are not installed: run scripts/install-test-peers.sh");
    ("node".into(), script.display().to_string())
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)))
}

fn server<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("{status}"))
}

fn tool_names(env: &TestEnv, vars: &[(&str, &str)]) -> Vec<String> {
    let out = env.clat_with_env(&["tools", "--json"], vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    json_of(&out)["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn the_mcp_servers_block_from_a_readme_works_with_the_key_in_the_environment() {
    let env = TestEnv::trusted();
    let (node, script) = everything();
    std::fs::create_dir_all(&env.home).unwrap();
    // As a server's README shows it, with the key left in the environment.
    let block = json!({ "mcpServers": { "everything": {
        "type": "stdio", "command": node, "args": [script, "stdio"],
        "env": { "EVERYTHING_TOKEN": "${EVERYTHING_TOKEN}" },
        "enabled_tools": ["echo", "get-sum", "no-such-tool"]
    } } });
    std::fs::write(env.home.join("mcp.json"), serde_json::to_string_pretty(&block).unwrap()).unwrap();
    let vars = [("EVERYTHING_TOKEN", "tok-everything-0123456789")];
    let names = tool_names(&env, &vars);
    assert!(names.contains(&"mcp_everything_echo".to_string()), "{names:?}");
    let theirs: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp_everything_")).collect();
    assert!(theirs.len() <= 2, "only the enabled tools are registered: {theirs:?}");
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    let status = json_of(&out);
    let everything = server(&status, "everything");
    assert_eq!(everything["state"], "ready", "{status}");
    assert!(
        everything["problems"].as_array().unwrap().iter().any(|p| p.as_str().unwrap().contains("\"no-such-tool\"")),
        "a filter name the server does not list is reported: {status}"
    );
    let out =
        env.clat_with_env(&["call", "mcp_everything_echo", r#"{"message":"pasted"}"#, "--mode", "full-access"], &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("pasted"), "{}", stdout(&out));

    // The same server through `clat mcp add`, in a fresh home.
    let env = TestEnv::trusted();
    let out = env.clat(&["mcp", "add", "everything", "--", &node, &script, "stdio"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(tool_names(&env, &[]).contains(&"mcp_everything_echo".to_string()));
    let out = env.clat(&["mcp", "get", "everything", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = json_of(&out);
    assert_eq!(got["state"], "ready", "{got}");
    assert_eq!(got["entry"]["command"], "node");
    let echo = got["tools"].as_array().unwrap().iter().find(|t| t["tool"] == "echo").expect("its echo tool");
    assert_eq!(echo["name"], "mcp_everything_echo");
    assert!(echo["effect"].is_string(), "{echo}");
}

#[test]
fn variables_reach_args_env_cwd_and_headers_and_a_missing_one_fails_only_its_server() {
    let env = TestEnv::trusted();
    let http = HttpServer::start(&["--require-auth", "tok-header-abcdef0123"]);
    let logs = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(env.home.join("work-from-env")).unwrap();
    env.write_mcp_config(json!({
        "local": { "command": SERVER,
                   "args": ["--log-file", "${LOG_DIR}/local.log", "--echo-env", "SERVER_TOKEN"],
                   "env": { "SERVER_TOKEN": "${TOKEN_FOR_SERVER}" },
                   "cwd": "${WORK_DIR:-unused}" },
        "remote": { "url": "${HTTP_BASE}", "headers": { "Authorization": "Bearer ${HTTP_TOKEN}" } },
        "missing": { "command": SERVER, "env": { "X": "${NOT_SET_ANYWHERE}" } }
    }));
    let vars = [
        ("LOG_DIR", logs.path().to_str().unwrap()),
        ("TOKEN_FOR_SERVER", "tok-server-9876543210"),
        ("WORK_DIR", "work-from-env"),
        ("HTTP_BASE", http.url.as_str()),
        ("HTTP_TOKEN", "tok-header-abcdef0123"),
    ];
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    assert_eq!(out.status.code(), Some(7), "a failed server makes `clat mcp` exit 7: {}", stderr(&out));
    let status = json_of(&out);
    assert_eq!(server(&status, "local")["state"], "ready", "{status}");
    assert_eq!(server(&status, "remote")["state"], "ready", "the header was expanded: {status}");
    let missing = server(&status, "missing");
    assert_eq!(missing["state"], "failed");
    let problem = missing["problems"][0].as_str().unwrap();
    assert!(problem.contains("`env.X` uses ${NOT_SET_ANYWHERE}, which is not set"), "{problem}");
    assert!(logs.path().join("local.log").exists(), "the args were expanded");
    // The server got the expanded value, and no output of clat shows it.
    let tail = server(&status, "local")["stderr_tail"].to_string();
    assert!(tail.contains("config SERVER_TOKEN=[REDACTED]"), "{tail}");
    for out in [&out, &env.clat_with_env(&["tools", "--json"], &vars)] {
        for secret in ["tok-server-9876543210", "tok-header-abcdef0123"] {
            assert!(!stdout(out).contains(secret) && !stderr(out).contains(secret), "{secret} leaked");
        }
    }
    let out = env.clat_with_env(&["call", "mcp_local_cwd", "{}", "--mode", "full-access"], &vars);
    assert!(stdout(&out).contains("work-from-env"), "the cwd was expanded: {}", stdout(&out));
    // Without the header's variable, only that server fails.
    let out = env.clat_with_env(&["mcp", "--json"], &vars[..4]);
    let status = json_of(&out);
    assert_eq!(server(&status, "local")["state"], "ready");
    assert!(server(&status, "remote")["problems"][0].as_str().unwrap().contains("${HTTP_TOKEN}"), "{status}");
}

#[test]
fn disabled_entries_timeouts_and_a_clean_environment() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "off": { "command": SERVER, "disabled": true },
        "slow-start": { "command": SERVER, "args": ["--delay-list", "3000"], "startup_timeout_sec": 1 },
        "quick-calls": { "command": SERVER, "args": ["--tool-names", "slow"], "tool_timeout_sec": 1 },
        "clean": { "command": SERVER, "args": ["--echo-env", "VISIBLE_IN_CLAT"], "env_inherit": false },
        "inherits": { "command": SERVER, "args": ["--echo-env", "VISIBLE_IN_CLAT"] }
    }));
    let vars = [("VISIBLE_IN_CLAT", "plain-value")];
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    let status = json_of(&out);
    assert_eq!(server(&status, "off")["state"], "configured", "{status}");
    assert!(server(&status, "off")["problems"][0].as_str().unwrap().contains("clat mcp enable off"));
    let slow = server(&status, "slow-start");
    assert_eq!(slow["state"], "failed");
    assert!(slow["problems"][0].as_str().unwrap().contains("within 1 s"), "{slow}");
    assert!(server(&status, "clean")["stderr_tail"].to_string().contains("config VISIBLE_IN_CLAT=\""), "{status}");
    assert!(server(&status, "inherits")["stderr_tail"].to_string().contains("config VISIBLE_IN_CLAT=plain-value"));
    let out = env.clat(&["call", "mcp_quick_calls_slow", r#"{"ms":5000}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(6), "its tool_timeout_sec ends the call: {}", stderr(&out));

    // Enabling and disabling edit the entry; the disabled server starts again once enabled.
    let out = env.clat(&["mcp", "enable", "off"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!env.read_home("mcp.json").contains("disabled"));
    let out = env.clat(&["mcp", "get", "off", "--json"]);
    assert_eq!(json_of(&out)["state"], "ready");
    let out = env.clat(&["mcp", "disable", "off", "--json"]);
    assert_eq!(json_of(&out)["disabled"], "off");
    let config: Value = serde_json::from_str(&env.read_home("mcp.json")).unwrap();
    assert_eq!(config["off"]["enabled"], false);
}

#[test]
fn mcp_add_refuses_bad_input_before_writing_and_keeps_the_shape_and_the_other_entries() {
    let env = TestEnv::trusted();
    let original =
        "{\n  \"mcpServers\": {\n    \"first\": { \"command\": \"first-server\", \"args\": [\"--x\"] }\n  }\n}\n";
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(env.home.join("mcp.json"), original).unwrap();
    for (args, why) in [
        (vec!["mcp", "add", "bad name", "--", "x"], "must be 1–64 characters"),
        (vec!["mcp", "add", "first", "--", "x"], "already configured; use --force"),
        (vec!["mcp", "add", "ftp", "--url", "ftp://example.com"], "http:// or https://"),
        (vec!["mcp", "add", "neither"], "COMMAND"),
        (vec!["mcp", "add", "env", "--env", "NOEQUALS", "--", "x"], "NAME=VALUE"),
        (vec!["mcp", "remove", "nobody"], "no server named \"nobody\""),
        (vec!["mcp", "add", "mcpServers", "--", "x"], "\"mcpServers\" is reserved"),
        (vec!["mcp", "add", "MCPSERVERS", "--url", "https://a.example/mcp"], "is reserved"),
    ] {
        let out = env.clat(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
        assert_eq!(env.read_home("mcp.json"), original, "{args:?} changed the file");
    }
    // Both a command and a URL: clap refuses it.
    let out = env.clat(&["mcp", "add", "both", "--url", "https://a", "--", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(env.read_home("mcp.json"), original);

    let out = env.clat(&[
        "mcp",
        "add",
        "web",
        "--url",
        "https://example.com/mcp",
        "--header",
        "Authorization: Bearer ${WEB_KEY}",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json_of(&out)["added"], "web");
    let out = env.clat(&["mcp", "add", "first", "--force", "--env", "A=1", "--", "first-server", "--y"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let config: Value = serde_json::from_str(&env.read_home("mcp.json")).unwrap();
    let servers = config["mcpServers"].as_object().expect("the wrapper is kept");
    assert_eq!(config.as_object().unwrap().len(), 1);
    assert_eq!(
        servers["web"],
        json!({ "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer ${WEB_KEY}" } })
    );
    assert_eq!(servers["first"], json!({ "command": "first-server", "args": ["--y"], "env": { "A": "1" } }));
    // `get` masks every value, naming the variables it uses.
    let out = env.clat(&["mcp", "get", "first", "--json"]);
    assert_eq!(json_of(&out)["entry"]["env"]["A"], "****");
    let out = env.clat(&["mcp", "get", "web", "--json"]);
    assert_eq!(json_of(&out)["entry"]["headers"]["Authorization"], "**** (uses ${WEB_KEY})");
    let out = env.clat(&["mcp", "remove", "first"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let config: Value = serde_json::from_str(&env.read_home("mcp.json")).unwrap();
    assert_eq!(config["mcpServers"].as_object().unwrap().keys().collect::<Vec<_>>(), ["web"]);

    // A malformed file is never overwritten.
    std::fs::write(env.home.join("mcp.json"), "{ \"a\": ").unwrap();
    let out = env.clat(&["mcp", "add", "x", "--", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("malformed") && stderr(&out).contains("nothing was changed"), "{}", stderr(&out));
    assert_eq!(env.read_home("mcp.json"), "{ \"a\": ");
}

#[test]
fn malformed_entries_name_the_file_line_column_entry_and_nearest_key() {
    let env = TestEnv::trusted();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("mcp.json"),
        "{\n  \"good\": { \"command\": \"SERVER\" },\n  \"typo\": { \"comand\": \"x\" },\n  \"old\": { \"type\": \"sse\", \"url\": \"https://a\" }\n}\n"
            .replace("SERVER", SERVER),
    )
    .unwrap();
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(7));
    let status = json_of(&out);
    assert_eq!(server(&status, "good")["state"], "ready");
    let typo = server(&status, "typo")["problems"][0].as_str().unwrap().to_string();
    assert!(
        typo.contains("mcp.json:3:23: entry \"typo\": unknown key `comand`; the nearest known key is `command`"),
        "{typo}"
    );
    assert!(server(&status, "old")["problems"][0].as_str().unwrap().contains("deprecated HTTP+SSE"));
}

#[test]
fn concurrent_adds_and_removes_lose_nothing() {
    let env = TestEnv::trusted();
    let names: Vec<String> = (0..8).map(|i| format!("s{i}")).collect();
    let adds: Vec<Vec<&str>> = names.iter().map(|n| vec!["mcp", "add", n.as_str(), "--", "some-server"]).collect();
    assert!(clat_concurrently(&env, &adds).iter().all(|ok| *ok));
    let config: Value = serde_json::from_str(&env.read_home("mcp.json")).unwrap();
    assert_eq!(config.as_object().unwrap().len(), 8, "{config}");
    let removes: Vec<Vec<&str>> = names[..4].iter().map(|n| vec!["mcp", "remove", n.as_str()]).collect();
    assert!(clat_concurrently(&env, &removes).iter().all(|ok| *ok));
    let config: Value = serde_json::from_str(&env.read_home("mcp.json")).unwrap();
    let mut left: Vec<&String> = config.as_object().unwrap().keys().collect();
    left.sort();
    assert_eq!(left, ["s4", "s5", "s6", "s7"]);
}

#[test]
fn only_variables_expand_and_every_other_dollar_reaches_the_server_as_written() {
    let env = TestEnv::trusted();
    // A launcher that records what it was given, then runs the server.
    let (launcher, record) = (env.dir.path().join("launcher"), env.dir.path().join("record"));
    std::fs::write(
        &launcher,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" \"$PASSWORD\" \"$OTHER\" > '{}'\nexec '{SERVER}'\n",
            record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&launcher, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.write_mcp_config(json!({ "literal": {
        "command": launcher,
        "args": ["pa$$word", "a ${ b", "$${HOME}", "${NAME:-dflt}", "$HOME", "${}", "${1X}", "end$"],
        "env": { "PASSWORD": "pa$$word", "OTHER": "x${y" } } }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(0), "a lone `${{` fails nothing: {}", stdout(&out));
    assert_eq!(server(&json_of(&out), "literal")["state"], "ready");
    let got: Vec<String> = std::fs::read_to_string(&record).unwrap().lines().map(str::to_string).collect();
    assert_eq!(
        got,
        ["pa$$word", "a ${ b", "${HOME}", "dflt", "$HOME", "${}", "${1X}", "end$", "pa$$word", "x${y"],
        "byte for byte, but for the variable and `$${{`"
    );
}

#[test]
fn edits_keep_the_files_mode_and_owner_and_write_through_a_link() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let env = TestEnv::trusted();
    std::fs::create_dir_all(&env.home).unwrap();
    // The user keeps mcp.json in their dotfiles, 0600 (its headers hold a key), linked into the home.
    let dotfiles = env.dir.path().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    let real = dotfiles.join("mcp.json");
    std::fs::write(
        &real,
        r#"{ "a": { "url": "https://a.example/mcp", "headers": { "Authorization": "Bearer k-1234567890" } } }"#,
    )
    .unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
    // Owned by another user where the test may give it one (as root).
    // SAFETY: geteuid has no preconditions.
    let owner = if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(&real, Some(4321), Some(4321)).unwrap();
        (4321, 4321)
    } else {
        let meta = std::fs::metadata(&real).unwrap();
        (meta.uid(), meta.gid())
    };
    let link = env.home.join("mcp.json");
    std::os::unix::fs::symlink("../dotfiles/mcp.json", &link).unwrap();
    for args in [
        &["mcp", "add", "b", "--", "b-server"][..],
        &["mcp", "disable", "b"],
        &["mcp", "enable", "b"],
        &["mcp", "add", "c", "--url", "https://c.example/mcp"],
        &["mcp", "remove", "b"],
    ] {
        let out = env.clat(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{args:?} replaced the link");
        let meta = std::fs::metadata(&real).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{args:?} widened the mode");
        assert_eq!((meta.uid(), meta.gid()), owner, "{args:?} changed the owner");
    }
    let config: Value = serde_json::from_str(&std::fs::read_to_string(&real).unwrap()).unwrap();
    assert_eq!(config.as_object().unwrap().keys().collect::<Vec<_>>(), ["a", "c"], "the target got every edit");
    assert!(std::fs::read_dir(&env.home).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().ends_with(".tmp")));
}

#[test]
fn mcp_get_masks_every_env_and_header_value_unless_asked_to_show_them() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "web": { "url": "http://127.0.0.1:9/mcp",
                 "headers": { "Authorization": "Bearer literal-secret-4711 ${EXTRA:-}", "X-Team": "team-blue ${TEAM:-}" } },
        "local": { "command": SERVER, "env": { "PLAIN": "plain-value-0815", "FROM": "${FROM_VAR:-x}" } } }));
    for name in ["web", "local"] {
        for args in [vec!["mcp", "get", name], vec!["mcp", "get", name, "--json"]] {
            let out = env.clat(&args);
            let shown = format!("{}{}", stdout(&out), stderr(&out));
            for secret in ["literal-secret-4711", "team-blue", "plain-value-0815"] {
                assert!(!shown.contains(secret), "{args:?} showed {secret}: {shown}");
            }
        }
    }
    let web = json_of(&env.clat(&["mcp", "get", "web", "--json"]));
    assert_eq!(web["entry"]["headers"]["Authorization"], "**** (uses ${EXTRA})");
    // A value no key rule would catch, beside a variable: masked all the same.
    assert_eq!(web["entry"]["headers"]["X-Team"], "**** (uses ${TEAM})");
    let local = json_of(&env.clat(&["mcp", "get", "local", "--json"]));
    assert_eq!(local["entry"]["env"]["FROM"], "**** (uses ${FROM_VAR})");
    let shown = json_of(&env.clat(&["mcp", "get", "web", "--json", "--show-secrets"]));
    assert_eq!(shown["entry"]["headers"]["Authorization"], "Bearer literal-secret-4711 ${EXTRA:-}");
}

#[test]
fn a_relative_cwd_never_leaves_the_home() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "up": { "command": SERVER, "cwd": "../outside" },
        "var": { "command": SERVER, "cwd": "${UP_DIR}" },
        "inside": { "command": SERVER, "cwd": "work/../work" } }));
    std::fs::create_dir_all(env.home.join("work")).unwrap();
    let out = env.clat_with_env(&["mcp", "--json"], &[("UP_DIR", "a/../../..")]);
    let status = json_of(&out);
    for name in ["up", "var"] {
        let problem = server(&status, name)["problems"][0].as_str().unwrap_or_default().to_string();
        assert_eq!(server(&status, name)["state"], "failed", "{status}");
        assert!(problem.contains("`cwd` climbs out of CLAT's home"), "{name}: {problem}");
    }
    assert_eq!(server(&status, "inside")["state"], "ready", "{status}");
}

/// A server's name written slightly wrong: `clat mcp get | remove | disable` name the configured one it is near.
#[test]
fn a_server_name_written_slightly_wrong_is_answered_with_the_one_meant() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "github": { "command": "true" }, "memory": { "command": "true" } }));
    for command in [["mcp", "get", "githbu"], ["mcp", "remove", "githbu"], ["mcp", "disable", "githbu"]] {
        let out = env.clat(&command);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {}", stderr(&out));
        assert!(stderr(&out).contains("did you mean \"github\"?"), "{command:?}: {}", stderr(&out));
    }
    let out = env.clat(&["mcp", "remove", "zzz"]);
    assert!(!stderr(&out).contains("did you mean"), "nothing near: {}", stderr(&out));
}

/// A server that starts and lists no tools is `ready` with none (its prompts may still serve), as docs/cli.md says.
#[test]
fn a_server_that_lists_no_tools_is_ready_with_none() {
    let env = TestEnv::trusted();
    let server = clat_test_server_artifact::MCP_TEST_SERVER;
    env.write_mcp_config(json!({ "empty": { "command": server, "args": ["--tools", "0"] } }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let status: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let empty = &status["servers"][0];
    assert_eq!(
        (empty["name"].as_str(), empty["state"].as_str(), empty["tools"].as_u64()),
        (Some("empty"), Some("ready"), Some(0)),
        "{status}"
    );
}
