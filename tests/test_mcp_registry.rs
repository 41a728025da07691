//! Servers from an MCP registry (`clat mcp add NAME --from-registry
//! SERVER[@VERSION]`), against a loopback mock of the registry's `/v0.1` API
//! serving the 20 recorded `server.json` versions of
//! `tests/fixtures/mcp-registry/` (npm, PyPI and OCI packages, remotes with
//! headers and URL variables, deprecated and deleted versions, kinds CLAT does
//! not run): each becomes a runnable entry or a clear refusal; an npm package
//! and a remote taken this way start and list their tools; a registry that
//! answers too much, too slowly, elsewhere or nonsense hits its bound and
//! adds nothing.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};

/// The registry mock on 127.0.0.1. Under the prefix `""` it serves the
/// fixtures (`latest` is the version marked `isLatest`); `/big` answers 2 MiB
/// without a length, `/slow` sends its head and then nothing, `/elsewhere`
/// redirects to the same path on `localhost` (another origin), `/garbage`
/// answers what is not JSON.
struct RegistryMock {
    port: u16,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp-registry")
}

fn fixture(file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join(file)).unwrap()).unwrap()
}

impl RegistryMock {
    /// Serves the fixtures with each `(from, to)` of `substitutions` applied to their text.
    fn start(substitutions: Vec<(String, String)>) -> RegistryMock {
        let mut documents = Vec::new();
        for entry in std::fs::read_dir(fixtures()).unwrap().flatten() {
            let mut text = std::fs::read_to_string(entry.path()).unwrap();
            for (from, to) in &substitutions {
                text = text.replace(from, to);
            }
            documents.push(text);
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let documents = documents.clone();
                std::thread::spawn(move || serve(stream, port, &documents));
            }
        });
        RegistryMock { port }
    }

    fn url(&self, prefix: &str) -> String {
        format!("http://127.0.0.1:{}{prefix}", self.port)
    }
}

fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&text[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

fn serve(stream: TcpStream, port: u16, documents: &[String]) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim_end().is_empty() {
            break;
        }
    }
    let respond = |out: &mut TcpStream, status: &str, extra: &str, body: &str| {
        let head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n", body.len());
        let _ = out.write_all(head.as_bytes());
        let _ = out.write_all(body.as_bytes());
    };
    if path.starts_with("/big") {
        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n");
        let chunk = vec![b' '; 64 * 1024];
        for _ in 0..32 {
            if out.write_all(&chunk).is_err() {
                return;
            }
        }
        return;
    }
    if path.starts_with("/slow") {
        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\nconnection: close\r\n\r\n{");
        std::thread::sleep(Duration::from_secs(40));
        return;
    }
    if let Some(rest) = path.strip_prefix("/elsewhere") {
        let to = format!("http://localhost:{port}{rest}");
        return respond(&mut out, "302 Found", &format!("location: {to}\r\n"), "");
    }
    if path.starts_with("/garbage") {
        return respond(&mut out, "200 OK", "content-type: application/json\r\n", "<html>not a registry</html>");
    }
    let Some(rest) = path.strip_prefix("/v0.1/servers/") else {
        return respond(&mut out, "404 Not Found", "", r#"{"error":"Not found"}"#);
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let [name, "versions", version] = parts.as_slice() else {
        return respond(&mut out, "404 Not Found", "", r#"{"error":"Not found"}"#);
    };
    let (name, version) = (percent_decoded(name), percent_decoded(version));
    let found = documents.iter().find(|text| {
        let document: Value = serde_json::from_str(text).unwrap();
        let latest = document["_meta"]["io.modelcontextprotocol.registry/official"]["isLatest"] != json!(false);
        document["server"]["name"] == json!(name)
            && (document["server"]["version"] == json!(version) || (version == "latest" && latest))
    });
    match found {
        Some(text) => respond(&mut out, "200 OK", "content-type: application/json\r\n", text),
        None => respond(&mut out, "404 Not Found", "", r#"{"error":"Server not found"}"#),
    }
}

/// What one recorded version must become.
enum Becomes {
    /// This entry (with its `from_registry`).
    Entry(Value),
    /// A refusal whose message holds each of these.
    Refused(&'static [&'static str]),
}

/// `clat mcp add NAME --from-registry SERVER --registry URL --json [extra]` in a fresh home.
fn add(mock: &RegistryMock, name: &str, server: &str, extra: &[&str]) -> (TestEnv, std::process::Output) {
    let env = TestEnv::new();
    let registry = mock.url("");
    let mut args = vec!["mcp", "add", name, "--from-registry", server, "--registry", &registry, "--json"];
    args.extend(extra);
    let out = env.clat(&args);
    (env, out)
}

fn mcp_json(env: &TestEnv) -> Value {
    serde_json::from_str(&env.read_home("mcp.json")).unwrap()
}

#[test]
fn every_recorded_server_becomes_an_entry_or_a_clear_refusal() {
    let mock = RegistryMock::start(vec![("__LOOPBACK_MCP_URL__".into(), "http://127.0.0.1:9/mcp".into())]);
    let cases: Vec<(&str, &str, &[&str], Becomes)> = vec![
        (
            "01-npm-memory.json",
            "memory",
            &[],
            Becomes::Entry(
                json!({ "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@2026.8.31"] }),
            ),
        ),
        (
            "02-npm-secret-env.json",
            "brave",
            &[],
            Becomes::Entry(json!({ "command": "npx", "args": ["-y", "@example/server-brave-search@1.0.2"],
                                   "env": { "BRAVE_API_KEY": "${BRAVE_API_KEY}" } })),
        ),
        (
            "03-npm-positional.json",
            "fs",
            &[],
            Becomes::Entry(
                json!({ "command": "npx", "args": ["-y", "@example/server-filesystem@2026.8.31", "${FS_TARGET_DIR}"],
                                   "env": { "LOG_LEVEL": "${LOG_LEVEL:-info}" } }),
            ),
        ),
        (
            "04-pypi-weather.json",
            "weather",
            &[],
            Becomes::Entry(json!({ "command": "uvx", "args": ["weather-mcp-server==0.5.0"],
                                   "env": { "WEATHER_API_KEY": "${WEATHER_API_KEY}", "WEATHER_UNITS": "${WEATHER_UNITS:-celsius}" } })),
        ),
        (
            "05-pypi-named-args.json",
            "git",
            &[],
            Becomes::Entry(
                json!({ "command": "uvx", "args": ["--index-url", "https://test.pypi.org/simple/", "git-tools-mcp==2.3.1",
                                                              "--repository", "${GIT_REPOSITORY}", "--read-only", "true"] }),
            ),
        ),
        (
            "06-oci-docker-hub.json",
            "db",
            &[],
            Becomes::Entry(json!({ "command": "docker",
                                   "args": ["run", "-i", "--rm", "--network", "host", "-e", "DB_TYPE=${DB_DB_TYPE}",
                                            "-e", "DB_USERNAME", "-e", "DB_PASSWORD", "-e", "SSL_MODE",
                                            "example/database-manager-mcp:3.1.0", "${DB_DATABASE_NAME}"],
                                   "env": { "DB_USERNAME": "${DB_USERNAME}", "DB_PASSWORD": "${DB_PASSWORD}", "SSL_MODE": "${SSL_MODE:-prefer}" } })),
        ),
        (
            "07-oci-ghcr.json",
            "ghcr",
            &[],
            Becomes::Entry(
                json!({ "command": "docker", "args": ["run", "-i", "--rm", "ghcr.io/example/ghcr-server:1.4.0"] }),
            ),
        ),
        (
            "08-oci-digest.json",
            "pinned",
            &[],
            Becomes::Entry(
                json!({ "command": "docker", "args": ["run", "-i", "--rm", format!("quay.io/example/pinned@sha256:{}", "ab".repeat(32))] }),
            ),
        ),
        (
            "09-remote-headers.json",
            "search",
            &[],
            Becomes::Entry(json!({ "url": "https://mcp.example.com/search/mcp",
                                   "headers": { "Authorization": "Bearer ${SEARCH_API_TOKEN}", "X-Region": "${SEARCH_X_REGION:-us-east-1}" } })),
        ),
        (
            "10-remote-url-variables.json",
            "tenant",
            &[],
            Becomes::Entry(json!({ "url": "https://${TENANT_TENANT}.mcp.example.com/${TENANT_PATH:-v1}/mcp" })),
        ),
        (
            "11-hybrid.json",
            "hybrid",
            &[],
            Becomes::Entry(
                json!({ "command": "npx", "args": ["-y", "@example/hybrid-mcp-server@1.5.0", "--mode", "${HYBRID_MODE:-local}"] }),
            ),
        ),
        (
            "11-hybrid.json",
            "hybrid",
            &["--via", "remote"],
            Becomes::Entry(json!({ "url": "https://mcp.example.com/hybrid/mcp" })),
        ),
        (
            "11-hybrid.json",
            "hybrid",
            &["--via", "pypi"],
            Becomes::Refused(&[
                "offers no way CLAT can run",
                "none is pypi (--via); it offers npm package @example/hybrid-mcp-server (--via npm), streamable-http remote https://mcp.example.com/hybrid/mcp (--via remote)",
            ]),
        ),
        ("12-remote-sse-only.json", "legacy", &[], Becomes::Refused(&["offers no way CLAT can run", "HTTP+SSE"])),
        (
            "13-deprecated.json",
            "old",
            &[],
            Becomes::Refused(&["0.9.5 is deprecated in the registry: Use io.github.example/weather-mcp instead"]),
        ),
        (
            "14-deleted.json",
            "gone",
            &[],
            Becomes::Refused(&["2.0.1 is deleted in the registry: Malicious code was found"]),
        ),
        ("15-legacy-status.json", "early", &[], Becomes::Refused(&["0.1.0 is deprecated in the registry"])),
        ("16-nuget.json", "dotnet", &[], Becomes::Refused(&["nuget packages are not run by CLAT"])),
        ("17-mcpb.json", "editor", &[], Becomes::Refused(&["mcpb packages are not run by CLAT"])),
        ("18-npm-range.json", "floating", &[], Becomes::Refused(&["\"^1.2.0\" is not one fixed version"])),
        ("19-local-http-package.json", "serves", &[], Becomes::Refused(&["serves streamable-http itself"])),
        ("20-remote-loopback.json", "loop", &[], Becomes::Entry(json!({ "url": "http://127.0.0.1:9/mcp" }))),
        // Runtime arguments that would make npx / uvx run another package than the pinned one.
        (
            "21-npm-runtime-package.json",
            "smuggled",
            &[],
            Becomes::Refused(&["positional runtime argument", "another package or command"]),
        ),
        ("22-pypi-runtime-with.json", "smuggled", &[], Becomes::Refused(&["--with is not one CLAT passes to uvx"])),
        ("23-npm-runtime-flag.json", "smuggled", &[], Becomes::Refused(&["--package is not one CLAT passes to npx"])),
    ];
    let mut covered = std::collections::BTreeSet::new();
    for (file, name, extra, becomes) in cases {
        covered.insert(file);
        let document = fixture(file);
        let server = document["server"]["name"].as_str().unwrap();
        let version = document["server"]["version"].as_str().unwrap();
        let (env, out) = add(&mock, name, server, extra);
        let what = format!("{file} {extra:?}: {}{}", stdout(&out), stderr(&out));
        match becomes {
            Becomes::Entry(expected) => {
                assert_eq!(out.status.code(), Some(0), "{what}");
                let mut expected = expected;
                expected["from_registry"] = json!({ "registry": mock.url(""), "server": server, "version": version });
                assert_eq!(mcp_json(&env)[name], expected, "{what}");
                let said: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
                assert_eq!(said["entry"], expected, "{what}");
                assert_eq!(
                    (said["server"].as_str(), said["version"].as_str()),
                    (Some(server), Some(version)),
                    "{what}"
                );
                // Every reference the entry makes is one the output says is needed.
                let text = expected.to_string();
                for need in said["needs"].as_array().unwrap() {
                    let variable = need["variable"].as_str().unwrap();
                    assert!(text.contains(&format!("${{{variable}")), "{what}: {variable} is not referred to");
                }
                // And CLAT reads it back as a server it can start.
                let list = env.clat(&["mcp", "list", "--json"]);
                let listed: Value = serde_json::from_str(stdout(&list).trim()).unwrap();
                assert_eq!(listed["errors"], json!([]), "{what}");
                assert_eq!(listed["servers"][0]["name"], json!(name), "{what}");
            }
            Becomes::Refused(holds) => {
                assert_eq!(out.status.code(), Some(2), "{what}");
                let error: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
                assert_eq!(error["error"]["kind"], json!("registry"), "{what}");
                let message = error["error"]["message"].as_str().unwrap();
                for piece in holds {
                    assert!(message.contains(piece), "{what}: the refusal does not say {piece:?}");
                }
                assert!(!env.home.join("mcp.json").exists(), "{what}: a refused server was written");
            }
        }
    }
    let recorded = std::fs::read_dir(fixtures()).unwrap().count();
    assert_eq!((covered.len(), recorded), (23, 23), "every recorded version has its case");
}

#[test]
fn what_the_server_needs_is_shown_and_kept_as_references_never_values() {
    let mock = RegistryMock::start(vec![]);
    let env = TestEnv::new();
    let registry = mock.url("");
    let out = env.clat_with_env(
        &["mcp", "add", "brave", "--from-registry", "io.github.example/brave-search@1.0.2", "--registry", &registry],
        &[("BRAVE_API_KEY", "sk-live-do-not-store-1234")],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("io.github.example/brave-search 1.0.2 (npm) from"), "{text}");
    assert!(text.contains("runs: npx -y @example/server-brave-search@1.0.2"), "{text}");
    assert!(text.contains("effect: npx fetches the package and runs it on this machine as you"), "{text}");
    assert!(
        text.contains("needs ${BRAVE_API_KEY} (required, secret) for env BRAVE_API_KEY: Brave Search API key"),
        "{text}"
    );
    assert!(text.contains("(nothing was started)"), "{text}");
    // The document's terminal escapes are not passed to the terminal.
    assert!(!text.contains('\u{1b}'), "{text:?}");
    let file = env.read_home("mcp.json");
    assert!(file.contains("${BRAVE_API_KEY}") && !file.contains("sk-live-do-not-store-1234"), "{file}");

    // The same, into the project's .mcp.json, approved for its writer.
    let project = env.clat(&[
        "mcp",
        "add",
        "weather",
        "--from-registry",
        "io.github.example/weather-mcp",
        "--registry",
        &registry,
        "--scope",
        "project",
    ]);
    let text = stdout(&project);
    assert_eq!(project.status.code(), Some(0), "{text}{}", stderr(&project));
    assert!(text.contains("io.github.example/weather-mcp 0.5.0 (pypi)"), "{text}");
    assert!(
        text.contains("needs ${WEATHER_UNITS} (optional, default \"celsius\", one of celsius|fahrenheit)"),
        "{text}"
    );
    assert!(text.contains("approved") && text.contains(".mcp.json"), "{text}");
    let written: Value = serde_json::from_str(&env.read(".mcp.json")).unwrap();
    assert_eq!(written["mcpServers"]["weather"]["args"], json!(["weather-mcp-server==0.5.0"]), "{written}");

    // The ways it did not take are named: the ones it could, with their --via, and the ones it cannot, with why.
    let hybrid =
        env.clat(&["mcp", "add", "hybrid", "--from-registry", "io.github.example/hybrid-mcp", "--registry", &registry]);
    let text = stdout(&hybrid);
    assert!(
        text.contains("also offered: streamable-http remote https://mcp.example.com/hybrid/mcp (--via remote)"),
        "{text}"
    );
    assert!(
        text.contains("not usable: sse remote https://mcp.example.com/hybrid/sse: the deprecated HTTP+SSE"),
        "{text}"
    );

    // A name already taken is kept unless --force.
    let again = env.clat(&[
        "mcp",
        "add",
        "brave",
        "--from-registry",
        "io.github.example/brave-search",
        "--registry",
        &registry,
    ]);
    assert_eq!(again.status.code(), Some(2), "{}", stdout(&again));
    assert!(stderr(&again).contains("brave"), "{}", stderr(&again));
}

#[test]
fn a_missing_server_or_version_and_bad_arguments_are_named_and_add_nothing() {
    let mock = RegistryMock::start(vec![]);
    let registry = mock.url("");
    let env = TestEnv::new();
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec!["--from-registry", "io.github.example/nope"],
            "registry",
            "has no server \"io.github.example/nope\" at version \"latest\"",
        ),
        (vec!["--from-registry", "io.github.example/weather-mcp@9.9.9"], "registry", "at version \"9.9.9\""),
        (vec!["--from-registry", "not-a-name"], "usage", "NAMESPACE/NAME"),
        (vec!["--from-registry", "io.github.example/weather-mcp", "--via", "cargo"], "usage", "--via \"cargo\""),
        (
            vec!["--from-registry", "io.github.example/weather-mcp", "--url", "https://x"],
            "usage",
            "--url cannot be given",
        ),
    ];
    for (extra, kind, says) in cases {
        let mut args = vec!["mcp", "add", "w", "--registry", &registry, "--json"];
        args.extend(&extra);
        let out = env.clat(&args);
        let error: Value = serde_json::from_str(stdout(&out).trim()).unwrap_or(Value::Null);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}{}", stdout(&out), stderr(&out));
        assert_eq!(error["error"]["kind"], json!(kind), "{extra:?}: {error}");
        assert!(error["error"]["message"].as_str().unwrap().contains(says), "{extra:?}: {error}");
    }
    // Plain http to another machine is refused before anything is asked.
    let out = env.clat(&[
        "mcp",
        "add",
        "w",
        "--from-registry",
        "a.b/c",
        "--registry",
        "http://registry.example.com",
        "--json",
    ]);
    assert!(stdout(&out).contains("plain http to another machine"), "{}", stdout(&out));
    assert!(!env.home.join("mcp.json").exists());
    // A URL holding a user and a password is refused, and never printed back with them: not from the flag, not from
    // the environment, not in an unparsable URL.
    let with_password = "https://alice:hunter2-Pa55word@registry.example.com/";
    let refused = [
        env.clat(&["mcp", "add", "w", "--from-registry", "a.b/c", "--registry", with_password, "--json"]),
        env.clat(&["mcp", "add", "w", "--from-registry", "a.b/c", "--registry", with_password]),
        env.clat_with_env(&["mcp", "add", "w", "--from-registry", "a.b/c"], &[("CLAT_MCP_REGISTRY", with_password)]),
        env.clat(&["mcp", "add", "w", "--from-registry", "a.b/c", "--registry", "https://alice:hunter2-Pa55word@[bad"]),
    ];
    for out in refused {
        let said = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains("the MCP registry URL"), "{said}");
        assert!(!said.contains("hunter2") && !said.contains("alice"), "{said}");
    }
    assert!(!env.home.join("mcp.json").exists());
}

#[test]
fn a_registry_answer_too_large_too_slow_or_sent_elsewhere_hits_its_bound() {
    let mock = RegistryMock::start(vec![]);
    let cases = [
        ("/big", "over 1048576 bytes"),
        ("/slow", "timed out"),
        ("/elsewhere", "a redirect to another origin (http://localhost:"),
        ("/garbage", "answered what is not a server version"),
    ];
    std::thread::scope(|scope| {
        for (prefix, says) in cases {
            let registry = mock.url(prefix);
            scope.spawn(move || {
                let env = TestEnv::new();
                let args = [
                    "mcp",
                    "add",
                    "w",
                    "--from-registry",
                    "io.github.example/weather-mcp",
                    "--registry",
                    &registry,
                    "--json",
                ];
                let out = env.clat(&args);
                let error: Value = serde_json::from_str(stdout(&out).trim()).unwrap_or(Value::Null);
                assert_eq!(out.status.code(), Some(2), "{prefix}: {}{}", stdout(&out), stderr(&out));
                assert_eq!(error["error"]["kind"], json!("registry"), "{prefix}: {error}");
                let message = error["error"]["message"].as_str().unwrap();
                assert!(message.contains(says), "{prefix}: {message}");
                assert!(!env.home.join("mcp.json").exists(), "{prefix}: something was added");
            });
        }
    });
}

#[test]
fn an_npm_package_from_the_registry_starts_pinned_and_lists_its_tools() {
    let mock = RegistryMock::start(vec![]);
    let env = TestEnv::trusted();
    let out = env.clat(&[
        "mcp",
        "add",
        "memory",
        "--from-registry",
        "io.github.modelcontextprotocol/server-memory",
        "--registry",
        &mock.url(""),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    // User servers run in CLAT's home: npx finds the pinned version installed
    // there (the test peers) and, offline, fetches nothing.
    let peers = support::test_peers();
    std::os::unix::fs::symlink(peers.join("node_modules"), env.home.join("node_modules")).unwrap();
    std::fs::copy(peers.join("package.json"), env.home.join("package.json")).unwrap();
    let tools = env.clat_with_env(&["tools", "--json"], &[("npm_config_offline", "true")]);
    let listed: Value = serde_json::from_str(stdout(&tools).trim()).unwrap();
    let names: Vec<&str> = listed["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.iter().any(|n| n.contains("create_entities")), "{names:?}\n{}", stderr(&tools));
}

#[test]
fn a_remote_from_the_registry_is_reached() {
    let server = support::HttpServer::start(&[]);
    let mock = RegistryMock::start(vec![("__LOOPBACK_MCP_URL__".into(), server.url.clone())]);
    let env = TestEnv::trusted();
    let out = env.clat(&[
        "mcp",
        "add",
        "loop",
        "--from-registry",
        "io.github.example/loopback-remote@1.0.0",
        "--registry",
        &mock.url(""),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("effect: nothing runs on this machine"), "{}", stdout(&out));
    let call = env.clat(&["call", "mcp_loop_echo", r#"{"text":"through the registry"}"#, "--mode", "full-access"]);
    assert_eq!(call.status.code(), Some(0), "{}{}", stdout(&call), stderr(&call));
    assert!(stdout(&call).contains("through the registry"), "{}", stdout(&call));
}
