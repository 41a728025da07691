//! Every stop signal goes through one teardown, through the built binary:
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT during start-up stop the servers still
//! starting; during a call they cancel the run (its command dies) and close
//! the servers, killing one that ignores end of input after the grace; a
//! second signal kills everything at once. A process that left its group
//! with `setsid` is still killed when `clat` ends (the child subreaper).

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use support::{TestEnv, wait_pid_gone};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

fn spawn_clat(env: &TestEnv, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_clat"))
        .arg("--home")
        .arg(&env.home)
        .arg("--project")
        .arg(&env.project)
        .args(args)
        .env_remove("CLAT_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run clat")
}

/// Wait (at most about 20 s) for a file to have content.
fn wait_for_file(path: &Path) {
    for _ in 0..2000 {
        if std::fs::read_to_string(path).is_ok_and(|t| !t.trim().is_empty()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} never appeared", path.display());
}

fn signal(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).expect("signal clat");
}

/// The exit code and stderr of a finished `clat`.
fn finish(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().expect("wait for clat");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn each_stop_signal_during_start_up_stops_the_starting_server_and_exits_cleanly() {
    for (sig, name) in [
        (Signal::SIGINT, "SIGINT"),
        (Signal::SIGTERM, "SIGTERM"),
        (Signal::SIGHUP, "SIGHUP"),
        (Signal::SIGQUIT, "SIGQUIT"),
    ] {
        let env = TestEnv::trusted();
        let (pid, child_pid) = (env.dir.path().join("srv.pid"), env.dir.path().join("child.pid"));
        let args = json!(["--hang-initialize", "--pid-file", pid, "--grandchild-pid-file", child_pid]);
        env.write_mcp_config(json!({ "hang": { "command": SERVER, "args": args } }));
        let clat = spawn_clat(&env, &["call", "mcp_hang_echo", "--mode", "full-access"]);
        // The legacy handshake's process is up (the probe's files are replaced by its own).
        wait_for_file(&child_pid);
        std::thread::sleep(Duration::from_millis(300));
        signal(&clat, sig);
        let (code, err) = finish(clat);
        assert_eq!(code, Some(6), "{name}: {err}");
        assert!(err.contains(&format!("interrupted by {name}")), "{name}: {err}");
        assert!(wait_pid_gone(&pid), "{name}: the server survived");
        assert!(wait_pid_gone(&child_pid), "{name}: the server's child survived");
    }
}

/// A script that calls a server that ignores end of input, then a command that runs until killed.
fn stubborn_setup(env: &TestEnv) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let pid = env.dir.path().join("srv.pid");
    env.write_mcp_config(json!({ "stubborn": { "command": SERVER, "args": ["--ignore-eof", "--pid-file", pid] } }));
    let command_pid = env.project.join("cmd.pid");
    let script = env.dir.path().join("script.jsonl");
    let steps = [
        json!({ "tool": "mcp_stubborn_echo", "arguments": {} }),
        json!({ "tool": "run_command", "arguments": { "command": "echo $$ > cmd.pid; exec sleep 300" } }),
    ];
    std::fs::write(&script, steps.iter().map(|s| format!("{s}\n")).collect::<String>()).unwrap();
    (pid, command_pid, script)
}

#[test]
fn sigterm_during_a_call_cancels_the_run_and_tears_the_servers_down() {
    let env = TestEnv::trusted();
    let (pid, command_pid, script) = stubborn_setup(&env);
    let clat = spawn_clat(&env, &["exec", script.to_str().unwrap(), "--mode", "full-access"]);
    wait_for_file(&command_pid);
    signal(&clat, Signal::SIGTERM);
    let out = clat.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(6), "{stdout}");
    assert!(stdout.contains(r#""kind":"cancelled""#), "the command's call was cancelled: {stdout}");
    assert!(wait_pid_gone(&command_pid), "the command survived");
    assert!(wait_pid_gone(&pid), "the server that ignores end of input survived");
}

#[test]
fn a_second_signal_kills_everything_at_once() {
    let env = TestEnv::trusted();
    let (pid, command_pid, script) = stubborn_setup(&env);
    let clat = spawn_clat(&env, &["exec", script.to_str().unwrap(), "--mode", "full-access"]);
    wait_for_file(&command_pid);
    signal(&clat, Signal::SIGTERM);
    // The first teardown waits the 2 s grace for the stubborn server; the second signal cuts it short.
    std::thread::sleep(Duration::from_millis(300));
    signal(&clat, Signal::SIGINT);
    let (code, _) = finish(clat);
    assert_eq!(code, Some(128 + libc::SIGINT));
    assert!(wait_pid_gone(&command_pid), "the command survived");
    assert!(wait_pid_gone(&pid), "the server survived");
}

#[test]
fn a_process_that_left_its_group_with_setsid_dies_when_clat_ends() {
    let env = TestEnv::trusted();
    let command = "setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & \
                   while [ ! -s daemon.pid ]; do sleep 0.05; done; echo started";
    let arguments = json!({ "command": command }).to_string();
    let out = env.clat(&["call", "run_command", &arguments, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    assert!(wait_pid_gone(&env.project.join("daemon.pid")), "the setsid'd process outlived clat");
}

#[test]
fn a_stop_signal_during_a_servers_call_is_a_cancel_never_a_withdrawal() {
    // The run's cancel and the scope's teardown both end the call; either way it is `cancelled`, exit 6.
    for attempt in 0..3 {
        let env = TestEnv::trusted();
        let log = env.dir.path().join("srv.log");
        env.write_mcp_config(
            json!({ "srv": { "command": SERVER, "args": ["--tool-names", "echo,slow", "--log-file", log] } }),
        );
        let script = env.dir.path().join("script.jsonl");
        std::fs::write(&script, format!("{}\n", json!({ "tool": "mcp_srv_slow", "arguments": { "ms": 60_000 } })))
            .unwrap();
        let clat = spawn_clat(&env, &["exec", script.to_str().unwrap(), "--mode", "full-access"]);
        for _ in 0..2000 {
            if std::fs::read_to_string(&log).is_ok_and(|l| l.contains("call slow")) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        signal(&clat, Signal::SIGTERM);
        let out = clat.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(6), "attempt {attempt}: {stdout}");
        assert!(
            stdout.contains(r#""kind":"cancelled""#) && !stdout.contains("withdrawn"),
            "attempt {attempt}: {stdout}"
        );
    }
}
