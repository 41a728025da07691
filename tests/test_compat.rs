//! The compatibility suite: published MCP servers, as users configure them,
//! through the built `clat`. Each server of `tests/compat/servers.json` (npm
//! and PyPI, pinned; installed by `scripts/install-compat-servers.sh`) is added
//! in a fresh `CLAT_HOME`, started and listed (`clat mcp get`), called once with
//! an answer checked (`clat call`), and started a third time to see that no
//! tool was quarantined by a listing that only looks different; after every
//! command no process it started may be left (this test process is the child
//! subreaper, so anything that escaped `clat`'s reaping comes back to it). The
//! table of eras and effects it prints is `docs/servers-known-to-work.md`'s,
//! compared here (`CLAT_COMPAT_BLESS=1` rewrites it). The first-start case runs
//! three unpinned `npx` servers on a clean npm cache with the defaults.
//!
//! The servers are installed by `scripts/install-compat-servers.sh` (which
//! `.ci/run` runs before the tests); the table is also written to
//! `compat-table.md` in the tests' temporary directory, which `.ci/run`
//! prints. `scripts/compat.sh` installs and runs just this suite.

mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

/// One suite test at a time: the leftover check counts every orphan of this process.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// How long a process orphaned by `clat` may take to finish dying before it is a leftover.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);

const TABLE_START: &str = "<!-- compatibility table: written by tests/test_compat.rs -->";
const TABLE_END: &str = "<!-- end of the compatibility table -->";

fn compat_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/compat")
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn listing() -> Value {
    let text = std::fs::read_to_string(compat_dir().join("servers.json")).expect("tests/compat/servers.json");
    serde_json::from_str(&text).expect("servers.json is JSON")
}

/// Make this process the child subreaper: a process `clat` started that
/// outlives it is re-parented here instead of to init.
fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers and changes only this process's attribute.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        assert_eq!(rc, 0, "prctl(PR_SET_CHILD_SUBREAPER)");
    });
}

/// This process's children other than the ones it is waiting for: after a
/// `clat` command has been waited for, every one is a process it left.
fn orphans() -> Vec<(i32, char)> {
    let me = std::process::id() as i32;
    support::processes().into_iter().filter(|p| p.ppid == me).map(|p| (p.pid, p.state)).collect()
}

fn command_line(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| String::from_utf8_lossy(&bytes).replace('\0', " ").trim().to_string())
        .unwrap_or_default()
}

/// The processes left after a command: orphans still alive after
/// `LEFTOVER_GRACE` (zombies are reaped as they come). Each is then killed, so
/// one server's leftover does not count against the next.
fn leftovers() -> Vec<String> {
    let deadline = Instant::now() + LEFTOVER_GRACE;
    loop {
        let mut alive = Vec::new();
        for (pid, state) in orphans() {
            if state == 'Z' {
                // SAFETY: waitpid on a zombie child of this process; no memory is shared.
                unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
            } else {
                alive.push(pid);
            }
        }
        if alive.is_empty() {
            return Vec::new();
        }
        if Instant::now() >= deadline {
            let described = alive.iter().map(|pid| format!("{pid} `{}`", command_line(*pid))).collect();
            for pid in alive {
                // SAFETY: kill and waitpid on a child of this process.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, std::ptr::null_mut(), 0);
                }
            }
            return described;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A page on 127.0.0.1 for the fetch server: every request gets it.
fn serve_page() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/page.html", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let _ = stream.read(&mut request);
            let body = PAGE.as_bytes();
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body));
        }
    });
    url
}

const PAGE: &str =
    "<html><head><title>Compatibility</title></head><body><h1>Compatibility heading</h1><p>A page.</p></body></html>";

/// `{project}`, `{dir}` and `{page_url}` replaced in every string of `value`.
fn substitute(value: &Value, places: &[(&str, String)]) -> Value {
    match value {
        Value::String(text) => {
            let mut text = text.clone();
            for (placeholder, with) in places {
                text = text.replace(placeholder, with);
            }
            Value::String(text)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, places)).collect()),
        Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), substitute(v, places))).collect()),
        other => other.clone(),
    }
}

/// What the suite measured of one server: a row of the table.
struct Row {
    name: String,
    registry: String,
    package: String,
    version: String,
    protocol: String,
    tools: usize,
    effects: String,
    call: String,
    why: String,
    /// How its start and call went, as printed.
    measured: String,
}

fn parse_json(out: &Output, what: &str) -> Result<Value, String> {
    serde_json::from_str(&stdout(out)).map_err(|e| {
        format!("{what}: not JSON ({e}); exit {:?}; stdout {}; stderr {}", out.status.code(), stdout(out), stderr(out))
    })
}

/// Run one `clat` command and see that it left no process.
fn clat_leaving_nothing(env: &TestEnv, args: &[&str], what: &str) -> Result<Output, String> {
    let out = env.clat(args);
    let left = leftovers();
    if !left.is_empty() {
        return Err(format!("{what} left processes behind: {left:?}"));
    }
    Ok(out)
}

/// The version the installed package says it is, to keep servers.json honest.
fn installed_version(server: &Value) -> Result<String, String> {
    let package = server["package"].as_str().unwrap();
    match server["registry"].as_str() {
        Some("npm") => {
            let path = compat_dir().join("node_modules").join(package).join("package.json");
            let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let manifest: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
            Ok(manifest["version"].as_str().unwrap_or_default().to_string())
        }
        _ => {
            let python = compat_dir().join("py").join(server["name"].as_str().unwrap()).join("bin/python");
            let out = Command::new(&python)
                .args(["-c", &format!("import importlib.metadata as m; print(m.version({package:?}))")])
                .output()
                .map_err(|e| format!("{}: {e}", python.display()))?;
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        }
    }
}

/// The executable a server's entry names: the npm package's bin, or the script in its own environment.
fn executable(server: &Value) -> PathBuf {
    let command = server["command"].as_str().unwrap();
    match server["registry"].as_str() {
        Some("npm") => compat_dir().join("node_modules/.bin").join(command),
        _ => compat_dir().join("py").join(server["name"].as_str().unwrap()).join("bin").join(command),
    }
}

fn check_server(server: &Value, page_url: &str) -> Result<Row, String> {
    let name = server["name"].as_str().unwrap();
    let version = server["version"].as_str().unwrap();
    let installed = installed_version(server)?;
    if installed != version {
        return Err(format!(
            "servers.json pins {version}, {installed:?} is installed (scripts/install-compat-servers.sh)"
        ));
    }
    let env = TestEnv::trusted();
    std::fs::write(env.project.join("hello.txt"), "hello from the compatibility suite\n").unwrap();
    std::fs::write(env.project.join("page.html"), PAGE).unwrap();
    let places = [
        ("{project}", env.project.display().to_string()),
        ("{dir}", env.dir.path().display().to_string()),
        ("{page_url}", page_url.to_string()),
    ];
    if let Some(setup) = server["setup"].as_str() {
        let setup = substitute(&json!(setup), &places);
        let out = Command::new("sh").arg("-c").arg(setup.as_str().unwrap()).current_dir(&env.project).output().unwrap();
        if !out.status.success() {
            return Err(format!("setup failed: {}", stderr(&out)));
        }
    }

    let mut entry = json!({ "command": executable(server).display().to_string() });
    for key in ["args", "env"] {
        if !server[key].is_null() {
            entry[key] = substitute(&server[key], &places);
        }
    }
    let out = env.clat(&["mcp", "add-json", name, &entry.to_string()]);
    if !out.status.success() {
        return Err(format!("clat mcp add-json: {}", stderr(&out)));
    }

    // First start: ready, listed.
    let started = Instant::now();
    let out = clat_leaving_nothing(&env, &["mcp", "get", name, "--json"], "the first start (clat mcp get)")?;
    let first_start = started.elapsed();
    let shown = parse_json(&out, "clat mcp get")?;
    if shown["state"] != "ready" {
        return Err(format!("not ready on its first start: {shown}"));
    }
    let tools = shown["tools"].as_array().cloned().unwrap_or_default();
    let call = &server["call"];
    let own_name = call["tool"].as_str().unwrap();
    let Some(registered) = tools.iter().find(|t| t["tool"] == own_name).and_then(|t| t["name"].as_str()) else {
        return Err(format!("{own_name} is not listed: {shown}"));
    };

    // Second start: the harmless call, its answer checked.
    let arguments = substitute(&call["arguments"], &places);
    let args = ["call", "--mode", "full-access", "--json", registered, &arguments.to_string()];
    let out = clat_leaving_nothing(&env, &args, "the call (clat call)")?;
    let result = parse_json(&out, "clat call")?;
    let expect_error = call["is_error"].as_bool().unwrap_or(false);
    if result["isError"].as_bool() != Some(expect_error) || out.status.code() != Some(if expect_error { 1 } else { 0 })
    {
        return Err(format!(
            "{registered}: expected isError {expect_error}, got exit {:?}: {result}",
            out.status.code()
        ));
    }
    let text: String = result["content"]
        .as_array()
        .map(|blocks| blocks.iter().filter_map(|b| b["text"].as_str()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default();
    let expect = call["expect"].as_str().unwrap();
    let answered = if expect.is_empty() { text.is_empty() } else { text.contains(expect) };
    if !answered {
        return Err(format!("{registered}: the answer does not contain {expect:?}: {result}"));
    }

    // Third start: the pins hold (a definition that only looks different quarantines nothing).
    let out = clat_leaving_nothing(&env, &["mcp", "get", name, "--json"], "the third start (clat mcp get)")?;
    let again = parse_json(&out, "clat mcp get, again")?;
    let problems: Vec<&str> = again["problems"].as_array().into_iter().flatten().filter_map(|p| p.as_str()).collect();
    if again["state"] != "ready" || problems.iter().any(|p| p.contains("is quarantined")) {
        return Err(format!("the third start is not as the first: {again}"));
    }
    if again["tools"].as_array().map(Vec::len) != Some(tools.len()) {
        return Err(format!("the third start lists {} tools, the first {}", again["tools"], tools.len()));
    }
    let restated = problems.iter().filter(|p| p.contains("not quarantined")).count();
    let measured = format!(
        "{name}: ready in {:.1} s, {} tools, {registered} answered{}",
        first_start.as_secs_f64(),
        tools.len(),
        if restated > 0 {
            format!("; {restated} definitions restated a default, none quarantined")
        } else {
            String::new()
        }
    );
    eprintln!("{measured}");

    let mut counts = Vec::new();
    for effect in ["read", "external-read", "network", "write", "destructive"] {
        let n = tools.iter().filter(|t| t["effect"] == effect).count();
        if n > 0 {
            counts.push(format!("{effect} {n}"));
        }
    }
    Ok(Row {
        name: name.to_string(),
        registry: server["registry"].as_str().unwrap().to_string(),
        package: server["package"].as_str().unwrap().to_string(),
        version: version.to_string(),
        protocol: shown["protocol"].as_str().unwrap_or_default().to_string(),
        tools: tools.len(),
        effects: counts.join(", "),
        call: if expect_error { format!("`{own_name}` (the server's own error)") } else { format!("`{own_name}`") },
        why: server["why"].as_str().unwrap().to_string(),
        measured,
    })
}

fn table(rows: &[Row]) -> String {
    let mut text = String::from(
        "| server | package | protocol (era) | tools | effects | call checked | why it is here |\n|---|---|---|---|---|---|---|\n",
    );
    for row in rows {
        text.push_str(&format!(
            "| {} | {} `{}@{}` | {} | {} | {} | {} | {} |\n",
            row.name, row.registry, row.package, row.version, row.protocol, row.tools, row.effects, row.call, row.why
        ));
    }
    text
}

/// The doc's table replaced by `table`, or None when the doc has no markers.
fn with_table(doc: &str, table: &str) -> Option<String> {
    let start = doc.find(TABLE_START)? + TABLE_START.len();
    let end = doc[start..].find(TABLE_END)? + start;
    Some(format!("{}\n{}{}", &doc[..start], table, &doc[end..]))
}

/// The leftover check can fail: a process whose parent left it behind comes
/// back to this process and is named (then killed).
#[test]
fn the_leftover_check_names_a_process_its_parent_left_behind() {
    let _serial = serial();
    become_subreaper();
    let status = Command::new("sh").args(["-c", "sleep 60 >/dev/null 2>&1 & echo started"]).output().unwrap();
    assert!(status.status.success());
    let left = leftovers();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left[0].contains("sleep 60"), "{left:?}");
    assert!(leftovers().is_empty(), "the leftover was killed and reaped");
}

#[test]
fn every_published_server_of_the_list_starts_lists_answers_and_leaves_nothing() {
    let _serial = serial();
    become_subreaper();
    let page_url = serve_page();
    let listing = listing();
    let servers = listing["servers"].as_array().unwrap();
    assert!(servers.len() >= 20, "the suite keeps at least 20 servers, has {}", servers.len());
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for server in servers {
        let name = server["name"].as_str().unwrap();
        match check_server(server, &page_url) {
            Ok(row) => rows.push(row),
            Err(failure) => failures.push(format!("{name}: {failure}")),
        }
    }
    let table = table(&rows);
    eprintln!("\n{table}");
    let printed = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compat-table.md");
    let measured: Vec<&str> = rows.iter().map(|row| row.measured.as_str()).collect();
    std::fs::write(&printed, format!("{}\n\n{table}", measured.join("\n"))).unwrap();
    assert!(failures.is_empty(), "{} of {} servers failed:\n{}", failures.len(), servers.len(), failures.join("\n"));

    let doc_path = repo_root().join("docs/servers-known-to-work.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/servers-known-to-work.md");
    let updated = with_table(&doc, &table).expect("the doc keeps the table's markers");
    if updated != doc {
        if std::env::var_os("CLAT_COMPAT_BLESS").is_some() {
            std::fs::write(&doc_path, updated).unwrap();
        } else {
            panic!(
                "docs/servers-known-to-work.md does not show what the suite measured (CLAT_COMPAT_BLESS=1 writes it):\n{table}"
            );
        }
    }
}

/// The servers' first start as a user has it: `npx -y PACKAGE` with no
/// version, npm's cache empty (its own directory, as on a fresh machine), all
/// three pasted at once and started by the first `clat mcp` with the
/// defaults. Needs the npm registry.
#[test]
fn three_unpinned_npx_servers_on_a_clean_npm_cache_are_ready_on_the_first_clat_mcp() {
    let _serial = serial();
    become_subreaper();
    let env = TestEnv::trusted();
    let cache = env.dir.path().join("npm-cache");
    let npx = |package: &str, args: &[&str]| {
        let mut all = vec!["-y".to_string(), package.to_string()];
        all.extend(args.iter().map(|a| a.to_string()));
        json!({ "command": "npx", "args": all, "env": { "npm_config_cache": cache.display().to_string() } })
    };
    let mut memory = npx("@modelcontextprotocol/server-memory", &[]);
    memory["env"]["MEMORY_FILE_PATH"] = json!(env.dir.path().join("memory.jsonl").display().to_string());
    env.write_mcp_config(json!({ "mcpServers": {
        "memory": memory,
        "thinking": npx("@modelcontextprotocol/server-sequential-thinking", &[]),
        "everything": npx("@modelcontextprotocol/server-everything", &["stdio"]),
    }}));

    let started = Instant::now();
    let out = env.clat(&["mcp", "--json"]);
    let took = started.elapsed();
    assert!(leftovers().is_empty(), "clat mcp left processes behind");
    let status: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    for server in status["servers"].as_array().unwrap() {
        assert_eq!(server["state"], "ready", "{server}");
    }
    assert_eq!(out.status.code(), Some(0), "{status}");
    eprintln!("three cold npx servers ready on the first clat mcp in {:.1} s", took.as_secs_f64());

    // npm's lock is not left behind for the next start, by clat or any client.
    let npx_dirs =
        std::fs::read_dir(cache.join("_npx")).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or(vec![]);
    assert_eq!(npx_dirs.len(), 3, "one npx install per package: {npx_dirs:?}");
    for dir in npx_dirs {
        assert!(!dir.join("concurrency.lock").exists(), "{} keeps npm's lock", dir.display());
    }

    let out =
        env.clat(&["call", "--mode", "full-access", "--json", "mcp_everything_echo", r#"{"message": "warm now"}"#]);
    assert!(leftovers().is_empty(), "clat call left processes behind");
    assert!(stdout(&out).contains("Echo: warm now"), "{}", stdout(&out));
}
