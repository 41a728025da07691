//! Project servers: a checked-in `.mcp.json` at the project root (Claude
//! Code's shape) starts its servers in a trusted project only after the user
//! approved them, bound to the file's content: headless they are reported
//! with the command that approves them, a changed file is asked again, a
//! same-named user entry wins, and at a terminal the user is asked.

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::{TestEnv, output_with_stdin, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn write_project_file(env: &TestEnv, servers: Value) {
    env.write(".mcp.json", &serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap());
}

fn server(env: &TestEnv, name: &str) -> Value {
    let out = env.clat(&["mcp", "--json"]);
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|_| panic!("{}", stderr(&out)));
    listing["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned().unwrap_or(Value::Null)
}

#[test]
fn project_servers_start_only_once_approved_and_a_changed_file_is_asked_again() {
    let env = TestEnv::trusted();
    write_project_file(&env, json!({ "proj": { "command": SERVER } }));

    let proj = server(&env, "proj");
    assert_eq!(proj["state"], "configured", "not approved: not started: {proj}");
    assert!(proj["problems"].to_string().contains("run `clat mcp approve`"), "{proj}");
    let out = env.clat(&["call", "mcp_proj_cwd", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("which was not started") && stderr(&out).contains("clat mcp approve"),
        "{}",
        stderr(&out)
    );

    let out = env.clat(&["mcp", "approve"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("approved the servers of") && stdout(&out).contains(&format!("proj  stdio  {SERVER}"))
    );
    assert_eq!(server(&env, "proj")["state"], "ready");
    let out = env.clat(&["call", "mcp_proj_cwd", "{}", "--mode", "full-access"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let home = env.home.canonicalize().unwrap();
    assert_eq!(stdout(&out).trim(), home.display().to_string(), "a project server runs in the home, as the user's do");

    // An edited command is not what was approved.
    write_project_file(&env, json!({ "proj": { "command": SERVER, "args": ["--tools", "1"] } }));
    let proj = server(&env, "proj");
    assert_eq!(proj["state"], "configured", "{proj}");
    assert!(proj["problems"].to_string().contains("changed since you approved"), "{proj}");
    env.clat(&["mcp", "approve"]);
    assert_eq!(server(&env, "proj")["state"], "ready");
}

#[test]
fn a_user_entry_of_the_same_name_wins_and_an_approval_holds_for_its_project_only() {
    let env = TestEnv::trusted();
    write_project_file(
        &env,
        json!({
            "shared": { "command": "/nonexistent/project-server" },
            "extra": { "command": SERVER },
        }),
    );
    env.write_mcp_config(json!({ "shared": { "command": SERVER } }));
    env.clat(&["mcp", "approve"]);
    assert_eq!(server(&env, "shared")["state"], "ready", "the user's entry runs, not the project's");
    assert_eq!(server(&env, "extra")["state"], "ready");

    // The same file in another project of the same home is not approved there.
    let other = env.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join(".mcp.json"), env.read(".mcp.json")).unwrap();
    let clat = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_clat"))
            .args(["--home", env.home.to_str().unwrap(), "--project", other.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap()
    };
    assert!(clat(&["trust"]).status.success());
    let out = clat(&["mcp", "--json"]);
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let extra = listing["servers"].as_array().unwrap().iter().find(|s| s["name"] == "extra").unwrap().clone();
    assert_eq!(extra["state"], "configured", "{extra}");
}

#[test]
fn at_a_terminal_the_user_is_asked_and_a_yes_is_kept() {
    let script = Command::new("script").arg("--version").output();
    assert!(script.is_ok_and(|o| o.status.success()), "util-linux `script` gives the test a terminal");
    let env = TestEnv::trusted();
    write_project_file(&env, json!({ "proj": { "command": SERVER } }));
    let clat =
        format!("{} --home {} --project {} mcp", env!("CARGO_BIN_EXE_clat"), env.home.display(), env.project.display());
    let mut command = Command::new("script");
    command.args(["-qec", &clat, "/dev/null"]);
    let out = output_with_stdin(&env, command, b"y\n");
    let shown = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    assert!(shown.contains("defines servers that run with your permissions"), "{shown}");
    assert!(shown.contains("Start them in this project? [y/N]"), "{shown}");
    assert!(shown.contains("proj  stdio  ready"), "{shown}");
    assert_eq!(server(&env, "proj")["state"], "ready", "the yes was kept for later commands");
}

/// `clat mcp add --scope project` writes the project's `.mcp.json` in Claude Code's shape; the user wrote it, so
/// it is approved for them when it was approved before (or new), and never approves servers someone else added.
#[test]
fn mcp_add_with_project_scope_writes_the_checked_in_file_and_approves_only_what_was_approved() {
    let env = TestEnv::trusted();
    let out = env.clat(&["mcp", "add", "-s", "project", "mine", "--", SERVER]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("approved") && !stdout(&out).contains("not approved"), "{}", stdout(&out));
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(written, json!({ "mcpServers": { "mine": { "command": SERVER } } }));
    assert!(!env.home.join("mcp.json").exists(), "the user's mcp.json is untouched");
    assert_eq!(server(&env, "mine")["state"], "ready");

    // A teammate's unapproved server in the file: adding one of your own approves nothing.
    write_project_file(&env, json!({ "mine": { "command": SERVER }, "theirs": { "command": SERVER } }));
    let out = env.clat(&["mcp", "add", "--scope", "project", "second", "--", SERVER]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("holds servers you have not approved"), "{}", stdout(&out));
    assert_eq!(server(&env, "theirs")["state"], "configured", "still not started");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(env.project.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(written["mcpServers"]["theirs"], json!({ "command": SERVER }), "other entries are kept");
    assert!(written["mcpServers"]["second"].is_object());
    let out = env.clat(&["mcp", "add", "-s", "workspace", "x", "--", SERVER]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`user` ($CLAT_HOME/mcp.json) or `project`"), "{}", stderr(&out));
}

/// A project's `.mcp.json` that is a link to `/dev/zero` (or out of the project), or a file past the 1 MiB bound,
/// is refused with the file named — by the mount and by `clat mcp approve` — and nothing else is lost: the user's
/// servers still start. The home's files are bounded the same way.
#[test]
fn an_endless_or_huge_configuration_file_is_refused_by_name() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "mine": { "command": SERVER } }));
    let listing = |env: &TestEnv| {
        let out = env.clat(&["mcp", "--json"]);
        format!("{}{}", stdout(&out), stderr(&out))
    };
    let project_file = env.project.join(".mcp.json");
    std::os::unix::fs::symlink("/dev/zero", &project_file).unwrap();
    let said = listing(&env);
    assert!(said.contains(".mcp.json") && said.contains("outside the project"), "{said}");
    assert_eq!(server(&env, "mine")["state"], "ready", "the user's server still starts");
    let out = env.clat(&["mcp", "approve"]);
    assert_ne!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stderr(&out).contains(".mcp.json") && stderr(&out).contains("outside the project"), "{}", stderr(&out));

    // A link to another file outside the project is refused the same way, whatever it holds.
    let elsewhere = env.dir.path().join("elsewhere.json");
    std::fs::write(&elsewhere, json!({ "mcpServers": { "proj": { "command": SERVER } } }).to_string()).unwrap();
    std::fs::remove_file(&project_file).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &project_file).unwrap();
    assert!(listing(&env).contains("outside the project"));

    // A regular file past the bound.
    std::fs::remove_file(&project_file).unwrap();
    let padding = " ".repeat(1024 * 1024);
    env.write(".mcp.json", &format!("{{ \"mcpServers\": {{}} {padding}}}"));
    let said = listing(&env);
    assert!(said.contains(".mcp.json") && said.contains("over the 1048576-byte limit"), "{said}");
    let out = env.clat(&["mcp", "approve"]);
    assert!(stderr(&out).contains("over the 1048576-byte limit"), "{}", stderr(&out));
    std::fs::remove_file(&project_file).unwrap();

    // The home's mcp.json and trust file, linked to /dev/zero.
    let home_config = env.home.join("mcp.json");
    std::fs::remove_file(&home_config).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &home_config).unwrap();
    let said = listing(&env);
    assert!(said.contains("mcp.json") && said.contains("not a regular file"), "{said}");
    std::fs::remove_file(&home_config).unwrap();
    let trust = env.home.join("trusted-projects.json");
    std::fs::remove_file(&trust).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &trust).unwrap();
    let out = env.clat(&["tools"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        stderr(&out).contains("trusted-projects.json") && stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
}

/// A user's entry wins by normalized name: a project's `my_notes` does not take the tools of the user's `my-notes`
/// (it is reported as shadowed, and calls go to the user's server, which runs in the home), and a malformed
/// same-named user entry stops the project's server too.
#[test]
fn a_user_entry_wins_by_normalized_name_even_malformed_and_the_project_server_is_shadowed() {
    let env = TestEnv::trusted();
    write_project_file(
        &env,
        json!({
            "my_notes": { "command": SERVER, "args": ["--tool-names", "cwd"] },
            "broken": { "command": SERVER },
        }),
    );
    env.write_mcp_config(json!({
        "my-notes": { "command": SERVER, "args": ["--tool-names", "cwd"] },
        "broken": { "command": 7 },
    }));
    assert!(env.clat(&["mcp", "approve"]).status.success());
    let shadowed = server(&env, "my_notes");
    assert_eq!(shadowed["state"], "configured", "{shadowed}");
    assert!(shadowed["problems"].to_string().contains("shadowed"), "{shadowed}");
    assert_eq!(server(&env, "my-notes")["state"], "ready");
    let out = env.clat(&["call", "mcp_my_notes_cwd", "{}", "--mode", "full-access"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let home = env.home.canonicalize().unwrap();
    assert_eq!(stdout(&out).trim(), home.display().to_string(), "the user's server answered");
    let broken = server(&env, "broken");
    assert_eq!(broken["state"], "failed", "the user's malformed entry is what is reported: {broken}");
    let tools = stdout(&env.clat(&["tools", "--json"]));
    assert!(!tools.contains("mcp_broken_"), "the project's server did not start: {tools}");
}

/// The approval shows every field that decides what a project server runs and sends, and which of the user's
/// variables it reads; an entry reads none of them unless the user allowed it for the project (`--allow`), so a
/// checked-in `${SECRET}` sends nothing until then. The project root reaches a server only as `${workspaceFolder}`.
#[test]
fn a_project_entry_reads_only_the_variables_allowed_with_its_approval() {
    let env = TestEnv::trusted();
    write_project_file(
        &env,
        json!({
            "proj": { "command": SERVER, "args": ["--pid-file", "${workspaceFolder}/proj.pid", "--echo-env", "KEY"],
                      "env": { "KEY": "${CLAT_TEST_USER_SECRET}", "MODE": "plain" } },
            "web": { "url": "https://mcp.example.invalid/mcp", "headers": { "Authorization": "Bearer ${CLAT_TEST_USER_SECRET}" } },
        }),
    );
    let secret = [("CLAT_TEST_USER_SECRET", "users-own-secret-value-9")];
    let out = env.clat_with_env(&["mcp", "approve"], &secret);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    for shown in [
        "runs in your CLAT home; the project root only as ${workspaceFolder}",
        "env: KEY=${CLAT_TEST_USER_SECRET}, MODE=plain",
        "headers: Authorization=Bearer ${CLAT_TEST_USER_SECRET}",
        "reads your variables: ${CLAT_TEST_USER_SECRET} (not allowed)",
        "`clat mcp approve --allow CLAT_TEST_USER_SECRET` allows it",
    ] {
        assert!(said.contains(shown), "the approval shows {shown:?}: {said}");
    }
    let listing = |env: &TestEnv| {
        let out = env.clat_with_env(&["mcp", "--json"], &secret);
        serde_json::from_str::<Value>(&stdout(&out)).unwrap_or_else(|_| panic!("{}", stderr(&out)))
    };
    let listed = listing(&env);
    let proj = listed["servers"].as_array().unwrap().iter().find(|s| s["name"] == "proj").unwrap().clone();
    assert_eq!(proj["state"], "failed", "{proj}");
    assert!(proj["problems"].to_string().contains("which this project may not read"), "{proj}");
    assert!(!env.project.join("proj.pid").exists(), "nothing started");
    assert!(!listed.to_string().contains("users-own-secret-value-9"), "{listed}");

    // Allowed with the approval: it starts, with the project root as ${workspaceFolder}.
    let out = env.clat_with_env(&["mcp", "approve", "--allow", "CLAT_TEST_USER_SECRET", "--json"], &secret);
    assert!(out.status.success(), "{}", stderr(&out));
    let approved: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(approved["allowed"], json!(["CLAT_TEST_USER_SECRET"]), "{approved}");
    let listed = listing(&env);
    let proj = listed["servers"].as_array().unwrap().iter().find(|s| s["name"] == "proj").unwrap().clone();
    assert_eq!(proj["state"], "ready", "{proj}");
    assert!(env.project.join("proj.pid").exists(), "${{workspaceFolder}} is the project root");
    // Another approval without --allow allows nothing again.
    assert!(env.clat_with_env(&["mcp", "approve"], &secret).status.success());
    let listed = listing(&env);
    let proj = listed["servers"].as_array().unwrap().iter().find(|s| s["name"] == "proj").unwrap().clone();
    assert_eq!(proj["state"], "failed", "{proj}");
    let out = env.clat(&["mcp", "approve", "--allow", "not a name"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// The project's servers are visible before they start: `clat mcp list` shows them with whether the file is
/// approved, and a short name that may be theirs says they were not started, and what approves them.
#[test]
fn unapproved_project_servers_are_listed_and_named_when_a_short_name_may_be_theirs() {
    let env = TestEnv::trusted();
    let server = clat_test_server_artifact::MCP_TEST_SERVER;
    std::fs::write(
        env.project.join(".mcp.json"),
        serde_json::json!({ "mcpServers": { "team": { "command": server, "args": ["--tools", "1"] } } }).to_string(),
    )
    .unwrap();
    let out = env.clat(&["mcp", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = stdout(&out);
    assert!(listed.contains("the project's servers") && listed.contains("not approved"), "{listed}");
    assert!(listed.contains("team") && listed.contains("clat mcp approve"), "{listed}");
    let out = env.clat(&["mcp", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["project"]["approval"], "new", "{v}");
    assert_eq!(v["project"]["servers"][0]["name"], "team", "{v}");

    let out = env.clat(&["call", "echo", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("unknown tool") && said.contains("team") && said.contains("clat mcp approve"), "{said}");
}
