//! The plugin author's path through the `clat` binary: `plugin new` writes a
//! project that `plugin build | test | install --build` and `clat call` take
//! from nothing to a working tool (a real cargo build for wasm32-wasip2);
//! `plugin call` and `plugin test` run a package without installing it (in a
//! throwaway home that is gone afterwards), WASM and MCP alike; and bad input
//! — a name that exists, a bad case line, a missing toolchain, a broken case,
//! a bad schema, a component of another world — is a clear error, before
//! anything is built or installed where the issue says so.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use clat_guest_artifacts as guests;
use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

/// `clat` with a private temporary directory (what the throwaway homes are made in) and, for
/// builds, a target directory shared by this file's tests.
fn clat(env: &TestEnv, args: &[&str]) -> Output {
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-authoring-target");
    env.clat_with_env(args, &[("TMPDIR", tmp.to_str().unwrap()), ("CARGO_TARGET_DIR", target.to_str().unwrap())])
}

/// No throwaway home is left behind.
fn no_throwaway_left(env: &TestEnv) {
    let left: Vec<_> = std::fs::read_dir(env.dir.path().join("tmp")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(left.is_empty(), "throwaway homes left behind: {left:?}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_rust_plugin_goes_from_nothing_to_answering_clat_call_in_four_commands() {
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    // 1. plugin new
    let out = clat(&env, &["plugin", "new", "word-count", "--dir", parent.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let project = parent.join("word-count");
    assert!(stdout(&out).contains("trusted "), "{}", stdout(&out));
    for file in
        ["Cargo.toml", "src/lib.rs", "clat-plugin.toml", "cases.jsonl", "README.md", "vendor/clat-guest/wit/clat.wit"]
    {
        assert!(project.join(file).is_file(), "{file}");
    }
    // 2. edit: a second tool, declared once, with a case of its own.
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    let lib = lib.replace(
        "struct Tools;",
        "#[derive(serde::Deserialize, schemars::JsonSchema)]\nstruct Count {\n    /// The text.\n    text: String,\n}\n\nstruct Tools;",
    );
    let lib = lib.replace(
        "vec![Tool::new(\"hello\", \"Greet someone by name.\", hello).read_only().closed_world()]",
        "let count = |a: Count| Ok(clat_guest::Json(serde_json::json!({ \"words\": a.text.split_whitespace().count() })));\n        \
         vec![\n            Tool::new(\"hello\", \"Greet someone by name.\", hello).read_only().closed_world(),\n            \
         Tool::new(\"count\", \"Count the words of a text.\", count).read_only().closed_world(),\n        ]",
    );
    std::fs::write(project.join("src/lib.rs"), lib).unwrap();
    let mut cases = std::fs::read_to_string(project.join("cases.jsonl")).unwrap();
    cases.push_str(r#"{"name": "counts", "tool": "count", "arguments": {"text": "a b c"}, "expect": {"structured": {"words": 3}}}"#);
    cases.push('\n');
    std::fs::write(project.join("cases.jsonl"), cases).unwrap();

    // The contract kit on it, before installing anything.
    let out = clat(&env, &["plugin", "test", project.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(report["failed"], 0, "{report}");
    assert_eq!(report["cases"].as_array().unwrap().len(), 3, "{report}");
    let checks: Vec<&str> = report["checks"].as_array().unwrap().iter().map(|c| c["check"].as_str().unwrap()).collect();
    assert_eq!(checks, ["package", "interfaces", "load", "tool hello", "tool count"], "{report}");
    assert!(!env.home.join("plugins/installed.json").exists(), "plugin test installs nothing");
    no_throwaway_left(&env);

    // 3. plugin install --build
    let out = clat(&env, &["plugin", "install", "--build", project.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("tool wasm_word_count_count"), "{}", stdout(&out));
    // 4. call (in the new project, which plugin new trusted)
    let call = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
            .args(["--home", env.home.to_str().unwrap(), "--project", project.to_str().unwrap()])
            .args(args)
            .env_remove("CLAT_HOME")
            .output()
            .unwrap()
    };
    let out = call(&["call", "wasm_word_count_count", r#"{"text":"one two"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["structuredContent"]["words"], 2, "{result}");
    let out = call(&["call", "wasm_word_count_hello", r#"{"name":"author"}"#]);
    assert_eq!(stdout(&out), "Hello, author!\n", "{}", stderr(&out));

    // A reinstall of the same version replaces it.
    let out = clat(&env, &["plugin", "install", "--build", project.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = clat(&env, &["plugin", "list", "--json"]);
    let list: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(list["plugins"].as_array().unwrap().len(), 1, "{list}");

    // A tool whose schema does not compile fails the kit, naming it.
    let lib = std::fs::read_to_string(project.join("src/lib.rs")).unwrap();
    let raw = "use clat_guest::{RawPlugin, ToolSpec, Args, ToolOutput, tool};\n\
               struct Raw;\n\
               impl RawPlugin for Raw {\n    fn tools() -> Vec<ToolSpec> { vec![tool(\"broken\", \"b\").schema(serde_json::json!({\"type\": 5})).read_only().build()] }\n    \
               fn call(_: &str, _: Args) -> Result<ToolOutput, String> { Ok(clat_guest::text(\"x\")) }\n}\n\
               clat_guest::export_raw_plugin!(Raw);\n";
    let broken = lib.replace("clat_guest::export_plugin!(Tools);", "") + raw;
    std::fs::write(
        project.join("src/lib.rs"),
        broken.replace("impl Plugin for Tools", "#[allow(dead_code)]\nimpl Plugin for Tools"),
    )
    .unwrap();
    std::fs::write(project.join("cases.jsonl"), "").unwrap();
    let out = clat(&env, &["plugin", "test", project.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}\n{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("FAIL load") && stdout(&out).contains("broken"), "{}", stdout(&out));
    assert!(stdout(&out).contains("schema"), "{}", stdout(&out));
    no_throwaway_left(&env);
}

#[test]
fn plugin_call_runs_a_package_without_installing_it() {
    let env = TestEnv::new();
    let out = clat(&env, &["plugin", "call", guests::HELLO_PACKAGE, "greet", r#"{"name":"tryout"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello, tryout! (from a WASM plugin)\n");
    assert!(stderr(&out).contains("greet is wasm_hello_greet"), "{}", stderr(&out));
    // Same pipeline and output as clat call: --json, --events, the mode table, exit codes.
    let out = clat(&env, &["plugin", "call", guests::HELLO_PACKAGE, "wasm_hello_greet", "{}", "--json", "--events"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(result["content"][0]["text"], "Hello, world! (from a WASM plugin)");
    assert!(stderr(&out).contains("\"type\":\"tool_finished\""), "{}", stderr(&out));
    let out = clat(&env, &["plugin", "call", guests::HELLO_PACKAGE, "greet", r#"{"name": 5}"#]);
    assert_eq!(out.status.code(), Some(2), "invalid arguments: {}", stderr(&out));
    assert!(!env.home.join("plugins/installed.json").exists(), "nothing was installed");
    assert!(!env.home.join("trusted-projects.json").exists(), "the project was trusted for the call only");
    // Compiled by the baseline compiler into the authoring cache, which keeps one build (its content and named
    // entries); installed plugins' cache is untouched.
    let dev: Vec<_> = std::fs::read_dir(env.home.join("cache/wasm-dev")).unwrap().flatten().collect();
    assert_eq!(dev.len(), 2, "one build's entries: {dev:?}");
    assert!(!env.home.join("cache/wasm").exists(), "nothing in the installed plugins' cache");
    no_throwaway_left(&env);
}

/// `clat plugin test --watch` runs the test, then again when a file of the package or project changes (a failing
/// case added here), and ends at Ctrl-C.
#[test]
fn plugin_test_watch_runs_again_on_a_change_until_interrupted() {
    use std::io::{BufRead, BufReader};
    let env = TestEnv::new();
    let package = env.dir.path().join("watched");
    copy_dir(Path::new(guests::HELLO_PACKAGE), &package);
    let ok_case =
        r#"{"name": "greets", "tool": "greet", "arguments": {"name": "Ada"}, "expect": {"text": "Hello, Ada!"}}"#;
    std::fs::write(package.join("cases.jsonl"), format!("{ok_case}\n")).unwrap();
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = env
        .clat_command(&["plugin", "test", package.to_str().unwrap(), "--watch"])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next_summary =
        || lines.by_ref().map_while(Result::ok).find(|l| l.contains(" passed, ")).expect("a summary");
    assert!(next_summary().ends_with(" passed, 0 failed"));
    let failing = r#"{"name": "fails", "tool": "greet", "arguments": {"name": "Ada"}, "expect": {"text": "Bye"}}"#;
    std::fs::write(package.join("cases.jsonl"), format!("{ok_case}\n{failing}\n")).unwrap();
    assert!(next_summary().ends_with(" passed, 1 failed"), "the change ran the cases again");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(status.code().is_some(), "it ended at Ctrl-C: {status:?}");
    no_throwaway_left(&env);
}

#[test]
fn plugin_test_runs_the_contract_on_an_mcp_server_package_too() {
    let env = TestEnv::new();
    let package = env.dir.path().join("contract-server");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("clat-plugin.toml"),
        "name = \"contract\"\nversion = \"1.0.0\"\nkind = \"mcp-stdio\"\nentry = \"server.sh\"\n",
    )
    .unwrap();
    let script = package.join("server.sh");
    std::fs::write(&script, format!("#!/bin/sh\nexec {SERVER} --contract\n")).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    env.write("a.txt", "the contract file");
    let cases = [
        r#"{"name": "echo", "tool": "echo", "arguments": {"text": "hi"}, "expect": {"text": "hi"}}"#,
        r#"{"name": "structured", "tool": "structured", "arguments": {"a": 2, "b": 3}, "expect": {"text": "sum=5", "structured": {"sum": 5}}}"#,
        r#"{"name": "fails", "tool": "fail", "expect": {"is_error": true, "text": "on purpose"}}"#,
        r#"{"name": "reads through the host", "tool": "host_read", "arguments": {"path": "a.txt"}, "expect": {"text": "ok: the contract file"}}"#,
        r#"{"name": "write denied in read-only", "tool": "host_write", "mode": "read-only", "arguments": {"path": "w", "content": "x"}, "expect": {"text": "error: denied"}}"#,
        r#"{"name": "a wrong expectation", "tool": "echo", "arguments": {"text": "hi"}, "expect": {"text": "bye"}}"#,
    ];
    std::fs::write(package.join("cases.jsonl"), cases.join("\n")).unwrap();
    let out = clat(&env, &["plugin", "test", package.to_str().unwrap()]);
    let shown = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "one case fails: {shown}\n{}", stderr(&out));
    assert!(shown.contains("ok   package: contract 1.0.0 (mcp-stdio)"), "{shown}");
    assert!(shown.contains("ok   tool echo: registered as mcp_contract_echo"), "{shown}");
    for ok in ["echo", "structured", "fails", "reads through the host", "write denied in read-only"] {
        assert!(shown.contains(&format!("ok   case {ok} (")), "{ok}: {shown}");
    }
    assert!(
        shown.contains("FAIL case a wrong expectation (cases.jsonl:6): expected the text to contain \"bye\""),
        "{shown}"
    );
    assert!(shown.trim_end().ends_with("1 failed"), "{shown}");
    no_throwaway_left(&env);
}

/// The languages' short names are accepted (`rs`, `js`, `ts`, `py`), and the help of each author's command carries
/// an example.
#[test]
fn short_language_names_work_and_each_author_command_shows_an_example() {
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    for (lang, build_file) in
        [("rs", "Cargo.toml"), ("js", "package.json"), ("ts", "package.json"), ("py", "pyproject.toml")]
    {
        let name = format!("short-{lang}");
        let out = clat(&env, &["plugin", "new", &name, "--lang", lang, "--dir", parent.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{lang}: {}", stderr(&out));
        assert!(parent.join(&name).join(build_file).is_file(), "{lang}");
    }
    for command in ["new", "build", "test", "call", "push", "install"] {
        let out = clat(&env, &["plugin", command, "--help"]);
        let help = stdout(&out);
        assert!(help.contains(&format!("clat plugin {command} ")) && help.contains("Example"), "{command}: {help}");
    }
}

/// An MCP server plugin that fails to start says so, with what it wrote: `plugin test` and `plugin call` of a Python
/// server whose `python3` lacks the `mcp` package name the failure and show the missing module from its stderr.
#[test]
fn a_server_plugin_that_fails_to_start_says_so_with_its_stderr() {
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    // A python3 without the mcp package: a fresh environment of the system's.
    let venv = env.dir.path().join("bare-venv");
    let made = std::process::Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status();
    assert!(made.unwrap().success());
    let path = format!("{}:{}", venv.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let vars = [("PATH", path.as_str())];
    let new = ["plugin", "new", "bare", "--lang", "py", "--kind", "mcp-stdio", "--dir", parent.to_str().unwrap()];
    let out = env.clat_with_env(&new, &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The printed path installs the SDK first.
    assert!(
        stdout(&out).contains("&& python3 -m pip install -r requirements.txt && clat plugin test ."),
        "{}",
        stdout(&out)
    );
    let project = parent.join("bare");

    let out = env.clat_with_env(&["plugin", "test", project.to_str().unwrap()], &vars);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("failed to start") && shown.contains("No module named 'mcp'"), "{shown}");
    let out = env.clat_with_env(&["plugin", "call", project.to_str().unwrap(), "hello", r#"{"name":"x"}"#], &vars);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("plugin bare failed to start") && said.contains("No module named 'mcp'"), "{said}");
}

#[test]
fn bad_input_is_a_clear_error_before_anything_is_built_or_installed() {
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(parent.join("taken")).unwrap();
    let new = |name: &str| clat(&env, &["plugin", "new", name, "--dir", parent.to_str().unwrap()]);
    let out = new("taken");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already exists"), "{}", stderr(&out));
    let out = new("Bad Name");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("1–64 characters of a-z"), "{}", stderr(&out));
    let out = clat(&env, &["plugin", "new", "x", "--kind", "mcp-stdio", "--dir", parent.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("there is no rust template for kind mcp-stdio"), "{}", stderr(&out));
    assert!(!parent.join("x").exists());

    let out = new("ok-plugin");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let project = parent.join("ok-plugin");
    // A bad case line: named with its file and line, before any build.
    std::fs::write(
        project.join("cases.jsonl"),
        "{\"tool\": \"hello\"}\n{\"tool\": \"hello\", \"expect\": {\"txt\": 1}}\n",
    )
    .unwrap();
    let out = clat(&env, &["plugin", "test", project.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cases.jsonl:2: "), "{}", stderr(&out));
    assert!(!project.join("dist").exists(), "nothing was built");
    // A missing toolchain is named, with how to install it.
    let empty = env.dir.path().join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let out = env.clat_with_env(&["plugin", "build", project.to_str().unwrap()], &[("PATH", empty.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cargo is not installed or not on PATH: install Rust with rustup"),
        "{}",
        stderr(&out)
    );
    // Without a toolchain found, the printed next step installs the project's pinned one first.
    for (lang, setup) in [
        ("javascript", "npm install && npm test && clat plugin test ."),
        (
            "python",
            "python3 -m venv .venv && .venv/bin/pip install componentize-py==0.25.1 && .venv/bin/python -m unittest \
             && clat plugin test .",
        ),
    ] {
        let name = format!("{lang}-fresh");
        let out = env
            .clat_command(&["plugin", "new", &name, "--lang", lang, "--dir", parent.to_str().unwrap()])
            .env("PATH", &empty)
            .env_remove("CLAT_COMPONENTIZE_JS")
            .env_remove("CLAT_COMPONENTIZE_PY")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let project = parent.join(&name);
        let expected = format!("next: cd {} && {setup} && clat plugin install --build .\n", project.display());
        assert!(stdout(&out).ends_with(&expected), "{}", stdout(&out));
    }
    // A component of another world is refused at its interfaces, before it is compiled or installed.
    let package = env.dir.path().join("command");
    copy_dir(Path::new(guests::HELLO_PACKAGE), &package);
    std::fs::copy(guests::NOT_A_PLUGIN_WASM, package.join("hello.wasm")).unwrap();
    let out = clat(&env, &["plugin", "test", package.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let interfaces = &report["checks"][1];
    assert_eq!(
        (interfaces["check"].as_str(), interfaces["ok"].as_bool()),
        (Some("interfaces"), Some(false)),
        "{report}"
    );
    assert!(interfaces["detail"].as_str().unwrap().contains("not a CLAT plugin"), "{report}");
    assert!(
        !env.home.join("cache/wasm").exists()
            || std::fs::read_dir(env.home.join("cache/wasm")).unwrap().next().is_none()
    );
}

/// `plugin new --lang LANG --kind KIND` → the printed next step (unit tests, `plugin test`, `plugin install
/// --build`) → `clat call`, with the
/// pinned toolchains (and, for an MCP server, the Python SDK of the test peers as the `python3` on PATH, or the
/// MCP SDK and esbuild of the toolchain directory as the project's `node_modules`).
fn new_test_install_call(lang: &str, kind: &str, tool: &str) {
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/peers/.venv/bin");
    let path = format!("{}:{}", peers.display(), std::env::var("PATH").unwrap_or_default());
    let tmp = env.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut vars = support::toolchains::toolchain_env();
    vars.push(("TMPDIR", tmp.display().to_string()));
    vars.push(("PATH", path));
    let name = format!("{lang}-tool");
    let clat_dir = Path::new(env!("CARGO_BIN_EXE_clat")).parent().unwrap().display().to_string();
    vars.push(("CLAT_HOME", env.home.display().to_string()));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = env.clat_with_env(
        &["plugin", "new", &name, "--lang", lang, "--kind", kind, "--dir", parent.to_str().unwrap()],
        &vars,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let project = parent.join(&name);
    if lang == "javascript" {
        // `npm install`, from the pinned toolchain directory: componentize-js, the MCP SDK, zod and esbuild (so the
        // printed next step has no `npm install`).
        let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guest-toolchains/node_modules");
        std::os::unix::fs::symlink(modules.canonicalize().unwrap(), project.join("node_modules")).unwrap();
    }
    // The printed next step, run as printed (from the parent directory, `clat` on PATH): the unit tests in the
    // language's own runner against the mock host, `clat plugin test .`, `clat plugin install --build .`.
    let next = stdout(&out).lines().find_map(|l| l.strip_prefix("next: ").map(str::to_string)).expect("a next step");
    let unit_tests = match (lang, kind) {
        ("javascript", "wasm") => Some(("npm test", "# pass 3")),
        ("python", "wasm") => Some(("python3 -m unittest", "Ran 2 tests")),
        _ => None,
    };
    if let Some((command, _)) = unit_tests {
        assert!(next.contains(command), "{next}");
    }
    let path = format!("{clat_dir}:{}", vars.iter().find(|(k, _)| *k == "PATH").unwrap().1);
    let out = std::process::Command::new("sh")
        .args(["-c", &next])
        .current_dir(&parent)
        .envs(vars.iter().copied())
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let shown = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{next}:\n{shown}");
    if let Some((_, passed)) = unit_tests {
        assert!(shown.contains(passed), "the unit tests ran: {shown}");
        // `plugin test` ran the edit loop's package (a runtime reading the sources); `install --build` the component.
        assert!(shown.contains("sources ready for the edit loop"), "{shown}");
        assert!(shown.contains(&format!("built {lang} package")), "{shown}");
    }
    assert!(stdout(&out).contains("ok   case greets by name"), "{shown}");
    assert!(stdout(&out).contains(" passed, 0 failed\n"), "{shown}");
    if unit_tests.is_some() {
        // Editing the cases alone does not rebuild the component.
        let cases = std::fs::read_to_string(project.join("cases.jsonl")).unwrap();
        std::fs::write(project.join("cases.jsonl"), format!("# edited\n{cases}")).unwrap();
        let out = env.clat_with_env(&["plugin", "test", project.to_str().unwrap()], &vars);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(stderr(&out).contains(", reused) reads them at each call"), "{}", stderr(&out));
        edit_loop_sees_an_edit_without_a_build(&env, lang, &project, &vars);
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .args(["--home", env.home.to_str().unwrap(), "--project", project.to_str().unwrap()])
        .args(["call", tool, r#"{"name":"author"}"#])
        .envs(vars.iter().copied())
        .env_remove("CLAT_HOME")
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "Hello, author!\n", "{}", stderr(&out));
    if (lang, kind) == ("javascript", "wasm") {
        // The tool's JSON Schema is its zod schema's.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
            .args(["--home", env.home.to_str().unwrap(), "--project", project.to_str().unwrap()])
            .args(["tools", tool, "--json"])
            .output()
            .unwrap();
        let shown: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|_| panic!("{}", stderr(&out)));
        let schema = &shown["input_schema"];
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{shown}");
        assert_eq!(schema["properties"]["name"]["description"], "Who to greet.", "{shown}");
        assert_eq!(schema["required"], serde_json::json!(["name"]), "{shown}");
    }
    no_throwaway_left(&env);
}

/// The edit loop (`plugin call` of a project): a one-line edit of a tool is answered by the runtime already built
/// (the sources are read at each call), and the installed component is not touched (the caller's `clat call` after
/// it still answers the installed "Hello"); in Python a new import line
/// builds the runtime again, so the module it names is in it; in JavaScript a top-level await, which the loop's
/// CommonJS bundle cannot hold, builds the component instead.
fn edit_loop_sees_an_edit_without_a_build(env: &TestEnv, lang: &str, project: &Path, vars: &[(&str, &str)]) {
    let source = project.join(if lang == "python" { "app.py" } else { "src/index.js" });
    let text = std::fs::read_to_string(&source).unwrap();
    std::fs::write(&source, text.replace("Hello, ", "Hi, ")).unwrap();
    let call = |args: &str| env.clat_with_env(&["plugin", "call", project.to_str().unwrap(), "hello", args], vars);
    let out = call(r#"{"name":"Ada"}"#);
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), "Hi, Ada!\n"), "{}", stderr(&out));
    assert!(stderr(&out).contains(", reused) reads them at each call"), "{}", stderr(&out));
    if lang == "python" {
        // A common standard-library module is in the runtime from the start: importing it is an edit like any other.
        let edited = std::fs::read_to_string(&source).unwrap();
        let edited = format!("import textwrap\n{edited}")
            .replace("return f\"Hi, {args.name}!\"", "return textwrap.shorten(f\"Hi, {args.name}!\", width=12)");
        std::fs::write(&source, edited).unwrap();
        let out = call(r#"{"name":"Ada Lovelace"}"#);
        assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), "Hi, [...]\n"), "{}", stderr(&out));
        assert!(stderr(&out).contains(", reused) reads them at each call"), "{}", stderr(&out));
        // Another builds the runtime again, saying so and why while it runs.
        let edited = std::fs::read_to_string(&source).unwrap();
        let edited = format!("import colorsys\n{edited}")
            .replace("width=12)", "width=12) + str(colorsys.rgb_to_hsv(0, 0, 0)[0])");
        std::fs::write(&source, edited).unwrap();
        let out = call(r#"{"name":"Ada Lovelace"}"#);
        assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), "Hi, [...]0.0\n"), "{}", stderr(&out));
        let said = stderr(&out);
        assert!(said.contains("building the edit loop's Python runtime (componentize-py takes a while) because the project imports what it does not hold yet (import colorsys)"), "{said}");
        assert!(said.contains("built once per toolchain and contract"), "{said}");
    } else {
        // Sources esbuild cannot bundle as CommonJS (a top-level await) are built as a component instead.
        let edited = std::fs::read_to_string(&source).unwrap();
        let edited = edited
            .replace("export const plugin", "const greeting = await Promise.resolve(\"Hey, \");\nexport const plugin")
            .replace("`Hi, ${name}!`", "`${greeting}${name}!`");
        std::fs::write(&source, edited).unwrap();
        let out = call(r#"{"name":"Ada"}"#);
        assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), "Hey, Ada!\n"), "{}", stderr(&out));
        let shown = stderr(&out);
        assert!(shown.contains("the edit loop cannot load these sources (Top-level await is currently not"), "{shown}");
        assert!(shown.contains("so the component is built") && shown.contains("built javascript package"), "{shown}");
    }
}

#[test]
fn a_javascript_plugin_goes_from_nothing_to_answering_clat_call() {
    new_test_install_call("javascript", "wasm", "wasm_javascript_tool_hello");
}

#[test]
fn a_python_plugin_goes_from_nothing_to_answering_clat_call() {
    new_test_install_call("python", "wasm", "wasm_python_tool_hello");
}

#[test]
fn a_javascript_mcp_server_plugin_goes_from_nothing_to_answering_clat_call() {
    new_test_install_call("javascript", "mcp-stdio", "mcp_javascript_tool_hello");
}

#[test]
fn a_python_mcp_server_plugin_goes_from_nothing_to_answering_clat_call() {
    new_test_install_call("python", "mcp-stdio", "mcp_python_tool_hello");
}

/// A host refusal a tool lets through is its tool error in every language, through `clat plugin call` as an author
/// runs it: the contract guests' `host_write_unchecked` in read-only mode answers the same text in Rust (its `?`),
/// JavaScript and Python (their SDKs).
#[test]
fn a_host_refusal_a_tool_lets_through_is_the_same_tool_error_in_every_language() {
    let env = TestEnv::new();
    let rust = env.dir.path().join("contract-rs");
    std::fs::create_dir_all(&rust).unwrap();
    std::fs::copy(guests::CONTRACT_WASM, rust.join("contract-rs.wasm")).unwrap();
    let manifest = "name = \"contract-rs\"\nversion = \"0.1.0\"\nkind = \"wasm\"\ndescription = \"The contract guest in Rust\"\nentry = \"contract-rs.wasm\"\n";
    std::fs::write(rust.join("clat-plugin.toml"), manifest).unwrap();
    let denied = "denied: mode read-only does not allow write tools (write_file is write)";
    for package in
        [rust, support::toolchains::package("js", "contract"), support::toolchains::package("python", "contract")]
    {
        let arguments = r#"{"path":"w.txt","content":"x"}"#;
        let call =
            ["plugin", "call", package.to_str().unwrap(), "host_write_unchecked", arguments, "--mode", "read-only"];
        let out = clat(&env, &call);
        let shown = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(1), "{}: {shown}", package.display());
        assert!(shown.contains(denied), "{}: {shown}", package.display());
    }
}

#[test]
fn the_hello_example_answers_alike_in_rust_javascript_and_python() {
    let env = TestEnv::new();
    for (package, language) in [
        (PathBuf::from(guests::HELLO_PACKAGE), "WASM"),
        (support::toolchains::package("js", "hello"), "JavaScript"),
        (support::toolchains::package("python", "hello"), "Python"),
    ] {
        let out = clat(&env, &["plugin", "call", package.to_str().unwrap(), "greet", r#"{"name":"Ada"}"#]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), format!("Hello, Ada! (from a {language} plugin)\n"));
        let out = clat(&env, &["plugin", "call", package.to_str().unwrap(), "greet", r#"{"name": 5}"#]);
        assert_eq!(out.status.code(), Some(2), "the schema each declares is enforced: {}", stderr(&out));
    }
    no_throwaway_left(&env);
}

#[test]
fn a_javascript_component_that_imports_wasi_http_is_refused_with_the_fix() {
    let env = TestEnv::new();
    // Built without `--disable http fetch-event`, as componentize-js does by default.
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../guests/js/hello");
    let package = env.dir.path().join("with-http");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::copy(source.join("clat-plugin.toml"), package.join("clat-plugin.toml")).unwrap();
    let out = std::process::Command::new(support::toolchains::componentize_js())
        .args(["src/index.js", "--wit", "wit", "--world-name", "clat-plugin", "-o"])
        .arg(package.join("hello-js.wasm"))
        .current_dir(&source)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = clat(&env, &["plugin", "test", package.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let shown = stdout(&out);
    assert!(shown.contains("FAIL interfaces: it imports `wasi:http/"), "{shown}");
    assert!(shown.contains("-d http fetch-event"), "{shown}");
    let out = clat(&env, &["plugin", "install", package.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("wasi:http"), "{}", stderr(&out));
    assert!(!env.home.join("plugins/installed.json").exists());
}

/// A tool that fails at run time names the author's file, line and code line — from the JavaScript stack through the
/// bundle's source map, from the Python traceback — in `plugin call` (the edit loop), not only the message.
#[test]
fn runtime_errors_name_the_authors_file_line_and_code() {
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    let vars = support::toolchains::toolchain_env();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for (lang, file, from, to, said) in [
        (
            "javascript",
            "src/index.js",
            "`Hello, ${name}!`",
            "`Hello, ${nam}!`",
            "ReferenceError: nam is not defined (src/index.js, line 18: run: ({ name }) => `Hello, ${nam}!`,)",
        ),
        (
            "python",
            "app.py",
            "{args.name}!",
            "{args.nam}!",
            "AttributeError: 'Hello' object has no attribute 'nam' (app.py, line 29: return f\"Hello, {args.nam}!\")",
        ),
    ] {
        let name = format!("{lang}-failing");
        let out =
            env.clat_with_env(&["plugin", "new", &name, "--lang", lang, "--dir", parent.to_str().unwrap()], &vars);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let project = parent.join(&name);
        if lang == "javascript" {
            let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guest-toolchains/node_modules");
            std::os::unix::fs::symlink(modules.canonicalize().unwrap(), project.join("node_modules")).unwrap();
        }
        let source = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(source.contains(from), "{source}");
        std::fs::write(project.join(file), source.replace(from, to)).unwrap();
        let call = ["plugin", "call", project.to_str().unwrap(), "hello", r#"{"name":"Ada"}"#];
        let out = env.clat_with_env(&call, &vars);
        assert_eq!(out.status.code(), Some(1), "{lang}: {}{}", stdout(&out), stderr(&out));
        let shown = format!("{}{}", stdout(&out), stderr(&out));
        assert!(shown.contains(said), "{lang}: {shown}");
        // The built component: Python's traceback keeps the file and line; JavaScript's has no source map.
        let out = env.clat_with_env(&["plugin", "build", project.to_str().unwrap()], &vars);
        assert_eq!(out.status.code(), Some(0), "{lang}: {}", stderr(&out));
        let dist = project.join("dist");
        let out = env.clat_with_env(&["plugin", "call", dist.to_str().unwrap(), "hello", r#"{"name":"Ada"}"#], &vars);
        let shown = format!("{}{}", stdout(&out), stderr(&out));
        let built = if lang == "python" { "(app.py, line 29)" } else { "nam is not defined" };
        assert!(out.status.code() == Some(1) && shown.contains(built), "{lang}, built: {shown}");
    }
}

/// The SDK is a dependency with a version: `plugin new` records it (`clat-sdk.json`: the version and each file's
/// hash as written); `plugin sdk update` of a project an older template made updates the SDK files as that template
/// wrote them, adds one missing, keeps (and says) one the author edited unless `--force`, and the project still
/// answers afterwards.
#[test]
fn the_sdk_update_rewrites_an_older_templates_files_and_keeps_the_authors_edits() {
    use sha2::{Digest, Sha256};
    let hash = |text: &str| {
        format!("sha256:{}", Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect::<String>())
    };
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    let vars = support::toolchains::toolchain_env();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = env.clat_with_env(&["plugin", "new", "older", "--lang", "js", "--dir", parent.to_str().unwrap()], &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let project = parent.join("older");
    let read = |file: &str| std::fs::read_to_string(project.join(file)).unwrap();
    let mut record: Value = serde_json::from_str(&read("clat-sdk.json")).unwrap();
    assert_eq!(record["version"], env!("CARGO_PKG_VERSION"), "{record}");
    let current_sdk = read("src/clat.js");
    assert_eq!(record["files"]["src/clat.js"], hash(&current_sdk), "{record}");

    // As an older template left it: its clat.js (recorded so), no register-mock-host.js, and a mock host the author
    // edited since.
    let older = current_sdk.replace("withLocation(e)", "e.message");
    std::fs::write(project.join("src/clat.js"), &older).unwrap();
    std::fs::remove_file(project.join("test/register-mock-host.js")).unwrap();
    std::fs::write(project.join("test/mock-host.js"), read("test/mock-host.js") + "// the author's own addition\n")
        .unwrap();
    record["version"] = json!("0.0.9");
    record["files"]["src/clat.js"] = json!(hash(&older));
    std::fs::write(project.join("clat-sdk.json"), record.to_string()).unwrap();

    let update = |extra: &[&str]| {
        let mut args = vec!["plugin", "sdk", "update", project.to_str().unwrap(), "--json"];
        args.extend(extra);
        let out = env.clat_with_env(&args, &vars);
        let report: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|_| panic!("{}", stderr(&out)));
        (out.status.code(), report)
    };
    let (code, report) = update(&[]);
    assert_eq!(code, Some(1), "a file was kept: {report}");
    let change = |report: &Value, path: &str| {
        report["files"].as_array().unwrap().iter().find(|f| f["path"] == path).unwrap()["change"].clone()
    };
    assert_eq!((report["from"].clone(), report["to"].clone()), (json!("0.0.9"), json!(env!("CARGO_PKG_VERSION"))));
    assert_eq!(change(&report, "src/clat.js"), "updated", "{report}");
    assert_eq!(change(&report, "test/register-mock-host.js"), "added", "{report}");
    assert_eq!(change(&report, "test/mock-host.js"), "kept", "{report}");
    assert_eq!(change(&report, "wit/clat.wit"), "up_to_date", "{report}");
    assert_eq!(read("src/clat.js"), current_sdk);
    assert!(read("test/mock-host.js").ends_with("// the author's own addition\n"), "kept as the author left it");
    let out = env.clat_with_env(&["plugin", "sdk", "update", project.to_str().unwrap()], &vars);
    assert!(stdout(&out).contains("kept     test/mock-host.js: edited since it was written"), "{}", stdout(&out));

    let (code, report) = update(&["--force"]);
    assert_eq!((code, change(&report, "test/mock-host.js")), (Some(0), json!("replaced")), "{report}");
    assert!(!read("test/mock-host.js").contains("the author's own addition"));
    let (code, report) = update(&[]);
    assert_eq!(code, Some(0), "{report}");
    assert!(report["files"].as_array().unwrap().iter().all(|f| f["change"] == "up_to_date"), "{report}");

    // The project answers on its updated SDK.
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guest-toolchains/node_modules");
    std::os::unix::fs::symlink(modules.canonicalize().unwrap(), project.join("node_modules")).unwrap();
    let out = env.clat_with_env(&["plugin", "call", project.to_str().unwrap(), "hello", r#"{"name":"Ada"}"#], &vars);
    assert_eq!(stdout(&out), "Hello, Ada!\n", "{}", stderr(&out));
    // A server project carries no CLAT SDK.
    let out =
        clat(&env, &["plugin", "new", "srv", "--lang", "py", "--kind", "mcp-stdio", "--dir", parent.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = clat(&env, &["plugin", "sdk", "update", parent.join("srv").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("carries no CLAT SDK"), "{}", stderr(&out));
}

/// A syntax error is reported by the language's own parser as the author's `file:line`, the line and the message —
/// not componentize-js's "failed to parse JS source", not componentize-py's Rust backtrace — and nothing is built;
/// a component built against another contract version is refused with the fix.
#[test]
fn errors_point_at_the_authors_code_and_name_the_fix() {
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    let mut vars = support::toolchains::toolchain_env();
    vars.push(("RUST_BACKTRACE", "1".into()));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for (lang, file, broken_from, broken_to, at) in [
        ("javascript", "src/index.js", "`Hello, ${name}!`,", "`Hello, ${name}!`,,", "src/index.js:18"),
        ("python", "app.py", "return f\"Hello, {args.name}!\"", "return f\"Hello, {args.name}!\" +", "app.py:29:"),
    ] {
        let name = format!("{lang}-broken");
        let out =
            env.clat_with_env(&["plugin", "new", &name, "--lang", lang, "--dir", parent.to_str().unwrap()], &vars);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let project = parent.join(&name);
        let source = std::fs::read_to_string(project.join(file)).unwrap();
        assert!(source.contains(broken_from), "{source}");
        std::fs::write(project.join(file), source.replace(broken_from, broken_to)).unwrap();
        let out = env.clat_with_env(&["plugin", "build", project.to_str().unwrap()], &vars);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("{lang} syntax error, nothing was built")), "{err}");
        assert!(err.contains(at) && err.contains("SyntaxError"), "the author's file and line: {err}");
        assert!(err.contains(broken_to.trim_end_matches(',')), "the line itself: {err}");
        for noise in ["componentize", "Stack backtrace", "node:internal", "Traceback"] {
            assert!(!err.contains(noise), "no toolchain internals ({noise}): {err}");
        }
        assert!(
            !project.join("dist").exists() && !project.join("__pycache__").exists(),
            "nothing was built or written"
        );
    }
    // A component of another contract version: refused at install, with what to do.
    let package = env.dir.path().join("old-contract");
    copy_dir(Path::new(guests::HELLO_PACKAGE), &package);
    let wasm = std::fs::read(package.join("hello.wasm")).unwrap();
    let (from, to) = (b"artec:clat/plugin@0.1.1", b"artec:clat/plugin@0.0.9");
    let mut patched = wasm.clone();
    let places: Vec<usize> = wasm.windows(from.len()).enumerate().filter(|(_, w)| w == from).map(|(i, _)| i).collect();
    assert!(!places.is_empty(), "the component exports the contract");
    for at in places {
        patched[at..at + to.len()].copy_from_slice(to);
    }
    std::fs::write(package.join("hello.wasm"), patched).unwrap();
    let out = clat(&env, &["plugin", "install", package.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(
            "it was built for the contract artec:clat@0.0.9; this host accepts artec:clat@0.1.0, artec:clat@0.1.1"
        ),
        "{err}"
    );
    assert!(err.contains("take wit/clat.wit") && err.contains("`clat plugin new`"), "the fix: {err}");
}
