//! A server's first start that takes long (`npx` / `uvx` downloading their
//! package): `clat mcp` and `clat tools` wait for it, up to
//! `WATCHED_START_TIMEOUT`; `startup_timeout_sec` and `MCP_TIMEOUT` raise the
//! handshake's bound up to `STARTUP_TIMEOUT_MAX`; a run keeps the spec's
//! bounds, and the timeout of a package runner says what to do. The stand-in
//! for `npx` is a script named `npx` that "downloads" on its first start — a
//! start killed midway downloads again, as npx does — and writes one stderr
//! line per process. A probe that got no answer in time is never killed
//! mid-start (npm's cache lock would stay, and every later start wait on it):
//! the second stand-in installs under a lock, as npm does.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

/// `dir/npx`: sleeps `download_secs` on each start until one start got past
/// the download (then it is "cached"), then runs the test server.
fn fake_npx(dir: &Path, download_secs: u32) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cached = dir.join("npx-cache-filled");
    let script = format!(
        "#!/bin/sh\necho 'npx: resolving the package' >&2\nif [ ! -e '{cached}' ]; then sleep {download_secs}; touch \
         '{cached}'; fi\nexec '{SERVER}' \"$@\"\n",
        cached = cached.display()
    );
    let npx = bin.join("npx");
    std::fs::write(&npx, script).unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    npx
}

/// `dir/npx` as npm's is on a cold cache: a start of package `$1` takes the
/// cache's lock (a directory, `mkdir` being atomic), installs the package for
/// `install_secs` if it is not there yet, lets the lock go and runs the test
/// server. Another start waits for the lock — so a start killed mid-install
/// leaves it, and every later start waits on it until its budget ends.
fn locking_npx(dir: &Path, install_secs: u32) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let (lock, cache) = (dir.join("npm-cache.lock"), dir.join("npm-cache"));
    std::fs::create_dir_all(&cache).unwrap();
    let script = format!(
        "#!/bin/sh\npackage=$1; shift\necho \"npx: resolving $package\" >&2\n\
         until mkdir '{lock}' 2>/dev/null; do sleep 0.1; done\n\
         if [ ! -e '{cache}'/\"$package\" ]; then sleep {install_secs}; touch '{cache}'/\"$package\"; fi\n\
         rmdir '{lock}'\nexec '{SERVER}' \"$@\"\n",
        lock = lock.display(),
        cache = cache.display()
    );
    let npx = bin.join("npx");
    std::fs::write(&npx, script).unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    npx
}

fn server<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("{listing}"))
}

#[test]
fn a_first_npx_start_that_downloads_for_15_s_is_ready_on_the_first_try() {
    let env = TestEnv::trusted();
    let npx = fake_npx(env.dir.path(), 15);
    // The README's line, with the stand-in for npx.
    let added = env.clat(&["mcp", "add", "everything", "--", npx.to_str().unwrap(), "--tools", "2"]);
    assert!(added.status.success(), "{}", stderr(&added));

    let out = env.clat(&["mcp", "--json"]);
    assert!(out.status.success(), "the first try works: {}\n{}", stdout(&out), stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let everything = server(&listing, "everything");
    assert_eq!(everything["state"], "ready", "{everything}");
    assert_eq!(everything["tools"], 2);
    let tail: Vec<&str> = everything["stderr_tail"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(
        tail.iter().filter(|l| l.contains("npx: resolving the package")).count(),
        1,
        "the server's stderr appears once, not once for the probe's process and once for the handshake's: {tail:?}"
    );
    assert!(!stderr(&out).contains("starting"), "no progress on a pipe: {}", stderr(&out));

    // Warm now: a run finds its tool at once.
    let call = env.clat(&["call", "mcp_everything_echo", r#"{"n":1}"#, "--mode", "full-access"]);
    assert!(call.status.success(), "{}", stderr(&call));
}

#[test]
fn a_run_keeps_the_10_s_handshake_and_the_npx_timeout_says_what_to_do() {
    let env = TestEnv::trusted();
    let npx = fake_npx(env.dir.path(), 60);
    env.write_mcp_config(json!({ "everything": { "command": npx, "args": ["--tools", "1"] } }));

    let out = env.clat(&["call", "mcp_everything_echo", "{}", "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains("initialize timed out after 10.0 s"), "the spec's handshake bound: {message}");
    assert!(message.contains("`npx` downloads the package on its first start"), "{message}");
    assert!(
        message.contains("`clat mcp` waits up to 60 s") && message.contains("`startup_timeout_sec`"),
        "it says how to give it longer: {message}"
    );
}

#[test]
fn startup_timeout_sec_and_mcp_timeout_bound_the_start_up_to_the_maximum() {
    let env = TestEnv::trusted();
    let npx = fake_npx(env.dir.path(), 60);
    env.write_mcp_config(json!({
        "tuned": { "command": npx, "startup_timeout_sec": 4 },
        "past": { "command": SERVER, "startup_timeout_sec": 301 },
    }));
    let out = env.clat(&["mcp", "--json"]);
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let problems = server(&listing, "tuned")["problems"].to_string();
    assert!(problems.contains("did not finish starting within 4 s"), "its own timeout, not the 60 s: {problems}");
    assert!(problems.contains("`npx` downloads the package"), "{problems}");
    let past = server(&listing, "past")["problems"].to_string();
    assert!(past.contains("`startup_timeout_sec` 301 is past the 300 s startup maximum"), "{past}");

    // MCP_TIMEOUT (milliseconds) for every server that sets none.
    env.write_mcp_config(json!({ "everything": { "command": npx } }));
    let out = env.clat_with_env(&["mcp", "--json"], &[("MCP_TIMEOUT", "4000")]);
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let problems = server(&listing, "everything")["problems"].to_string();
    assert!(problems.contains("did not finish starting within 4 s"), "{problems}");
    env.write_mcp_config(json!({ "quick": { "command": SERVER } }));
    let out = env.clat_with_env(&["mcp", "--json"], &[("MCP_TIMEOUT", "301000")]);
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let problems = server(&listing, "(MCP_TIMEOUT)")["problems"].to_string();
    assert!(problems.contains("MCP_TIMEOUT=301000 is outside 1..=300000 ms"), "{problems}");
    assert_eq!(server(&listing, "quick")["state"], "ready", "a bad MCP_TIMEOUT costs no server");
}

#[test]
fn three_npx_servers_pasted_at_once_on_a_cold_cache_are_ready_on_the_first_clat_mcp() {
    let env = TestEnv::trusted();
    // Each install outlasts the probe and its old 2 s grace: a probe killed then would leave the lock behind.
    let npx = locking_npx(env.dir.path(), 6);
    let npx = npx.to_str().unwrap();
    env.write_mcp_config(json!({
        "files": { "command": npx, "args": ["server-files", "--tools", "1"] },
        "memory": { "command": npx, "args": ["server-memory", "--tools", "1"] },
        "thinking": { "command": npx, "args": ["server-thinking", "--tools", "1"] },
    }));

    let out = env.clat(&["mcp", "--json"]);
    assert!(out.status.success(), "the first try works: {}\n{}", stdout(&out), stderr(&out));
    let listing: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for name in ["files", "memory", "thinking"] {
        assert_eq!(server(&listing, name)["state"], "ready", "{listing}");
    }
    assert!(!env.dir.path().join("npm-cache.lock").exists(), "no start was killed holding the lock");
    for package in ["server-files", "server-memory", "server-thinking"] {
        assert!(env.dir.path().join("npm-cache").join(package).exists(), "{package} was installed whole");
    }
}

/// A legacy server starts once a command once its era is known (`mcp/eras.rs`): twice at its first start (the
/// probe's process, then the fresh one), once after; probed again past `ERA_REPROBE_INTERVAL` and after its legacy
/// handshake failed.
#[test]
fn a_known_legacy_server_starts_once_and_is_probed_again_after_the_interval_or_a_failed_handshake() {
    let env = TestEnv::trusted();
    let (starts, hang) = (env.dir.path().join("starts"), env.dir.path().join("hang"));
    // One command whatever it does, so its identity and era key stay the same: a file decides whether it hangs.
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("legacy-server");
    let script = format!(
        "#!/bin/sh\nif [ -e '{hang}' ]; then exec '{SERVER}' --hang-initialize \"$@\"; fi\nexec '{SERVER}' \"$@\"\n",
        hang = hang.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    env.write_mcp_config(json!({ "old": {
        "command": wrapper, "args": ["--starts-file", starts, "--tools", "1"], "startup_timeout_sec": 3
    } }));
    let count = || std::fs::read_to_string(&starts).map(|s| s.lines().count()).unwrap_or(0);
    let call = || env.clat(&["call", "mcp_old_echo", "{}", "--mode", "full-access"]);

    assert!(call().status.success());
    assert_eq!(count(), 2, "its first start: the probe's process, then the fresh one");
    assert!(call().status.success());
    assert_eq!(count(), 3, "known to be legacy: one start");

    // Learned longer ago than the interval: probed again.
    let record = env.home.join(clat_host::home::listings::SERVER_LISTINGS_DIR).join("old.json");
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_eq!(file["era"]["era"], "legacy", "{file}");
    file["era"]["at"] = json!(0);
    std::fs::write(&record, file.to_string()).unwrap();
    assert!(call().status.success());
    assert_eq!(count(), 5, "past ERA_REPROBE_INTERVAL: the probe again");

    // Its legacy handshake fails: forgotten, so the next start probes.
    std::fs::write(&hang, "").unwrap();
    let failed = call();
    assert_eq!(failed.status.code(), Some(7), "{}", stderr(&failed));
    assert_eq!(count(), 6, "known to be legacy: one start, which failed");
    std::fs::remove_file(&hang).unwrap();
    assert!(call().status.success());
    assert_eq!(count(), 8, "after a failed legacy handshake: the probe again");
}
