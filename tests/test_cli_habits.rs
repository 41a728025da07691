//! The command-line habits users bring from other agents, through the built
//! binary: a did-you-mean on an unknown tool, a server's own tool name
//! resolved when one registered tool has it (listed when several do), shell
//! completions, `--version` naming the commit, `-v` / `-q` and `RUST_LOG`,
//! `--json` on `trust`, `plugin install` and `plugin remove`, and `mcp login
//! --help` saying where the token goes, `clat tools NAME`, and completions of
//! `--mode` / `--sandbox` values.

mod support;

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

#[test]
fn an_unknown_tool_gets_a_did_you_mean_and_a_bare_name_is_resolved_when_it_is_unique() {
    let env = TestEnv::trusted();
    let out = env.clat(&["call", "red_file", r#"{"path":"x"}"#]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(r#"unknown tool "red_file"; did you mean "read_file"?"#), "{}", stderr(&out));
    let out = env.clat(&["call", "zzzz_nothing_like_it"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!stderr(&out).contains("did you mean"), "{}", stderr(&out));

    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--tool-names", "echo,cwd"] } }));
    let out = env.clat(&["call", "echo", r#"{"n":1}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("echo is mcp_srv_echo"), "{}", stderr(&out));
    assert!(stdout(&out).contains(r#"{"n":1}"#), "{}", stdout(&out));

    env.write_mcp_config(json!({
        "srv": { "command": SERVER, "args": ["--tool-names", "echo"] },
        "other": { "command": SERVER, "args": ["--tool-names", "echo"] }
    }));
    let out = env.clat(&["call", "echo", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("mcp_other_echo, mcp_srv_echo") || stderr(&out).contains("mcp_srv_echo, mcp_other_echo")
    );
}

#[test]
fn completions_version_and_log_levels() {
    let env = TestEnv::trusted();
    for (shell, marker) in [
        ("bash", "complete -o nospace -o bashdefault -o nosort -F _clap_complete_clat clat"),
        ("zsh", "#compdef clat"),
        ("fish", "complete --keep-order --exclusive --command clat"),
    ] {
        let out = env.clat(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        assert!(stdout(&out).contains(marker), "{shell}: {}", stdout(&out));
    }
    let out = env.clat(&["--version"]);
    assert!(
        stdout(&out).starts_with("clat 0.1.0 (commit ") || stdout(&out).contains("unknown commit"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).trim_end().ends_with("; plugin contract artec:clat@0.1.0, artec:clat@0.1.1)"),
        "{}",
        stdout(&out)
    );

    // A server line that is not JSON is a warning: shown by default, not with -q or RUST_LOG=error.
    env.write_mcp_config(json!({ "srv": { "command": SERVER, "args": ["--tool-names", "bad_json"] } }));
    let call = ["call", "mcp_srv_bad_json", "{}", "--mode", "full-access"];
    let shown = |out: &std::process::Output| stderr(out).contains("malformed message from the server");
    let out = env.clat_with_env(&call, &[("CLAT_LOG", ""), ("RUST_LOG", "")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(shown(&out), "{}", stderr(&out));
    let quiet: Vec<&str> = ["-q"].iter().chain(call.iter()).copied().collect();
    assert!(!shown(&env.clat(&quiet)));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .args(["--home", env.home.to_str().unwrap(), "--project", env.project.to_str().unwrap()])
        .args(call)
        .env_remove("CLAT_LOG")
        .env("RUST_LOG", "error")
        .output()
        .unwrap();
    assert!(!shown(&out), "RUST_LOG is honoured without CLAT_LOG: {}", stderr(&out));
}

#[test]
fn trust_and_plugin_install_and_remove_print_json() {
    let env = TestEnv::new();
    let out = env.clat(&["trust", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let trusted: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(trusted["trusted"], env.project.canonicalize().unwrap().display().to_string());
    let out = env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let installed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!((installed["installed"].as_str(), installed["kind"].as_str()), (Some("hello"), Some("wasm")));
    assert!(installed["tools"].as_array().unwrap().iter().any(|t| t == "wasm_hello_greet"), "{installed}");
    let out = env.clat(&["plugin", "remove", "hello", "--json"]);
    assert_eq!(serde_json::from_str::<Value>(&stdout(&out)).unwrap()["removed"], "hello");
    let out = env.clat(&["plugin", "remove", "hello", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let error: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("hello"), "{error}");
}

#[test]
fn mcp_login_help_says_where_the_token_goes() {
    let env = TestEnv::new();
    let out = env.clat(&["mcp", "login", "--help"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let help = stdout(&out);
    for said in ["OS keyring", "$CLAT_HOME/credentials/", "CLAT_CREDENTIAL_STORE", "sent only to that server"] {
        assert!(help.contains(said), "{said:?} missing from:\n{help}");
    }
}

#[test]
fn clat_tools_name_shows_one_tool_and_completions_offer_modes_and_sandboxes() {
    let env = TestEnv::trusted();
    let tools = json!([{
        "name": "get-sum",
        "description": "Returns the sum of two numbers",
        "annotations": { "readOnlyHint": true, "openWorldHint": false },
        "inputSchema": { "type": "object", "required": ["a"], "properties": {
            "a": { "type": "number", "description": "First number" },
            "unit": { "enum": ["m", "km"], "default": "m" },
            "tags": { "type": "array", "items": { "type": "string" } } } }
    }]);
    env.write_mcp_config(json!({ "everything": { "command": SERVER, "args": ["--tools-json", tools.to_string()] } }));
    let out = env.clat(&["tools", "get_sum"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = stdout(&out);
    for said in [
        "mcp_everything_get_sum",
        "own name     get-sum",
        "source       mcp:everything/get-sum",
        "effect       external-read — readOnlyHint true, openWorldHint false",
        "description  Returns the sum of two numbers",
        "NAME  TYPE             REQUIRED  DESCRIPTION",
        "a     number           yes       First number",
        "tags  array of string  no",
        "unit  \"m\" | \"km\"       no        (default \"m\")",
    ] {
        assert!(shown.contains(said), "{said:?} missing from:\n{shown}");
    }
    let out = env.clat(&["tools", "mcp_everything_get_sum", "--json"]);
    let tool: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(tool["effect_reason"], "readOnlyHint true, openWorldHint false");
    let out = env.clat(&["tools", "read_fil"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("did you mean \"read_file\""), "{}", stderr(&out));
    let out = env.clat(&["tools", "write_file"]);
    assert!(stdout(&out).contains("effect       write — one of CLAT's own tools"), "{}", stdout(&out));

    // The completer offers option values, tool names (native, a server's last listing, an installed plugin's
    // listing from its install), servers and plugins.
    let script = stdout(&env.clat(&["completions", "bash"]));
    assert!(script.contains("COMPLETE=\"bash\""), "{script}");
    assert!(script.contains(&format!("\"{}\" --", env!("CARGO_BIN_EXE_clat"))), "it calls this clat: {script}");
    assert!(env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE]).status.success());
    for (words, offered) in [
        (vec!["call", "read_file", "{}", "--mode", ""], vec!["read-only", "ask", "auto-edit", "full-access"]),
        (vec!["call", "--sandbox", ""], vec!["none", "restrict-writes"]),
        (vec!["call", ""], vec!["read_file\tnative", "mcp_everything_get_sum\tserver everything"]),
        (vec!["tools", "mcp_every"], vec!["mcp_everything_get_sum\tserver everything"]),
        (vec!["mcp", "get", ""], vec!["everything"]),
        (vec!["plugin", "remove", ""], vec!["hello\t"]),
        (vec!["call", "wasm_"], vec!["wasm_hello_greet\tplugin hello"]),
    ] {
        let candidates = complete(&env, &words);
        for value in offered {
            assert!(candidates.contains(value), "{words:?} offers {value:?}: {candidates}");
        }
    }
    // A removed plugin's tools are not offered.
    assert!(env.clat(&["plugin", "remove", "hello"]).status.success());
    assert!(!complete(&env, &["call", "wasm_"]).contains("wasm_hello_greet"));
}

/// What the completer answers fish for `clat WORDS…` (the last word being typed), as the registration asks it.
fn complete(env: &TestEnv, words: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .arg("--")
        .arg("clat")
        .args(words)
        .env("COMPLETE", "fish")
        .env("CLAT_HOME", &env.home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// `clat … | head -1`: a reader that has gone ends each command quietly with 141 (128 + SIGPIPE), never a panic's
/// backtrace and 101. The pipe's read end is closed before `clat` starts, so its first line already fails.
#[test]
fn a_closed_stdout_ends_every_command_quietly_with_141() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({
        "srv": { "command": SERVER, "args": ["--tool-names", "echo"] },
        "other": { "command": SERVER, "args": ["--tool-names", "echo"] }
    }));
    let commands: [&[&str]; 8] = [
        &["mcp", "list"],
        &["mcp", "list", "--json"],
        &["mcp"],
        &["tools"],
        &["tools", "read_file"],
        &["plugin", "list"],
        &["trust", "--json"],
        &["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = env.clat_command(args).stdout(writer).stderr(std::process::Stdio::piped()).output().unwrap();
        assert_eq!(out.status.code(), Some(141), "clat {args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "clat {args:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("cannot write"), "clat {args:?}: {}", stderr(&out));
    }
}

/// What the help and the docs say matches what happens: under `clat serve --mode ask` an approval becomes a form
/// (it is not simply denied), no `ask_user` tool is named in the CLI docs, and the JavaScript template says how a
/// guest reaches the network (through a grant), not that it never can.
#[test]
fn help_and_docs_say_what_happens() {
    let env = TestEnv::new();
    let help = stdout(&env.clat(&["serve", "--help"]));
    assert!(help.contains("form") && !help.contains("denies what needs"), "{help}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for page in ["cli.md", "serve.md", "plugins.md", "servers.md", "sampling.md"] {
        let text = std::fs::read_to_string(root.join("docs").join(page)).unwrap();
        assert!(!text.contains("`ask_user` tool"), "docs/{page} names a tool that does not exist");
        assert!(!text.contains("have no `--json`"), "docs/{page} says commands lack a --json they have");
    }
    let template = std::fs::read_to_string(root.join("host/templates/javascript-wasm/README.md")).unwrap();
    assert!(!template.contains("CLAT gives guests no network"), "{template}");
    assert!(template.contains("[capabilities] http"), "{template}");
}
