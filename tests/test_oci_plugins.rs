//! WASM plugins through OCI registries: `clat plugin push` publishes a
//! package to a real registry (Debian's `docker-registry` on 127.0.0.1),
//! `clat plugin install oci://…` pins the digest the tag names, a moved tag
//! changes nothing until `clat plugin update` says what moved and installs it,
//! a layer whose bytes do not match its digest installs nothing; and a hostile
//! registry (a mock on 127.0.0.1) that answers 10 GiB, redirects elsewhere or
//! stalls hits the named bound, with nothing installed.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clat_guest_artifacts as guests;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::oci_registry::OciRegistry;
use support::{TestEnv, stderr, stdout};

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(stdout(out).trim())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(out), stderr(out)))
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// A copy of a built package with its version changed.
fn package_at_version(env: &TestEnv, from: &str, version: &str) -> PathBuf {
    let dir = env.dir.path().join(format!("pkg-{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let manifest = std::fs::read_to_string(dir.join("clat-plugin.toml")).unwrap();
    let changed: Vec<String> = manifest
        .lines()
        .map(|l| if l.starts_with("version") { format!("version = \"{version}\"") } else { l.to_string() })
        .collect();
    std::fs::write(dir.join("clat-plugin.toml"), changed.join("\n")).unwrap();
    dir
}

fn installed_index(env: &TestEnv) -> Option<Value> {
    std::fs::read_to_string(env.home.join("plugins/installed.json")).ok().map(|t| serde_json::from_str(&t).unwrap())
}

#[test]
fn push_then_install_by_tag_pins_the_digest_and_a_moved_tag_waits_for_update() {
    let registry = OciRegistry::start();
    let env = TestEnv::trusted();
    let tag = registry.reference("clat/hello:stable");

    let pushed = json_of(&env.clat(&["plugin", "push", guests::HELLO_PACKAGE, &tag, "--json"]));
    let first = pushed["digest"].as_str().unwrap().to_string();
    assert!(first.starts_with("sha256:") && first.len() == 71, "{pushed}");
    assert_eq!((pushed["pushed"].as_str(), pushed["version"].as_str()), (Some("hello"), Some("0.1.0")), "{pushed}");

    let install = env.clat(&["plugin", "install", &tag, "--json"]);
    let installed = json_of(&install);
    assert_eq!(installed["installed"], json!("hello"), "{installed}");
    assert_eq!(installed["source"], json!({ "oci": tag, "digest": first }), "{installed}");
    assert!(installed["imports"].as_array().unwrap().iter().any(|i| i.as_str().unwrap().starts_with("artec:clat/")));
    assert_eq!(installed_index(&env).unwrap()["plugins"]["hello"]["source"]["digest"], json!(first));
    let call = env.clat(&["call", "wasm_hello_greet", r#"{"name":"OCI"}"#]);
    assert_eq!(call.status.code(), Some(0), "{}{}", stdout(&call), stderr(&call));
    assert!(stdout(&call).contains("OCI"), "{}", stdout(&call));

    // The tag moves to another image: what is installed does not change.
    let next = package_at_version(&env, guests::HELLO_PACKAGE, "0.2.0");
    let moved = json_of(&env.clat(&["plugin", "push", next.to_str().unwrap(), &tag, "--json"]));
    let second = moved["digest"].as_str().unwrap().to_string();
    assert_ne!(first, second);
    let index = installed_index(&env).unwrap();
    assert_eq!(index["plugins"]["hello"]["manifest"]["version"], json!("0.1.0"), "{index}");
    assert_eq!(index["plugins"]["hello"]["source"]["digest"], json!(first), "{index}");
    assert_eq!(env.clat(&["call", "wasm_hello_greet", r#"{"name":"still"}"#]).status.code(), Some(0));

    // `update` says what moved and installs what the tag names now.
    let update = env.clat(&["plugin", "update", "hello"]);
    let text = stdout(&update);
    assert_eq!(update.status.code(), Some(0), "{text}{}", stderr(&update));
    assert!(text.contains(&format!("{tag} moved: {first} → {second}")), "{text}");
    assert!(text.contains("installed hello 0.2.0 (wasm)"), "{text}");
    assert!(text.contains(&format!("from {tag} ({second})")), "{text}");
    let index = installed_index(&env).unwrap();
    assert_eq!(index["plugins"]["hello"]["manifest"]["version"], json!("0.2.0"), "{index}");
    let again = env.clat(&["plugin", "update", "hello", "--json"]);
    assert_eq!(json_of(&again), json!({ "plugin": "hello", "reference": tag, "digest": second, "updated": false }));

    // Installed by digest, the first image comes back exactly, tag or no tag.
    let pinned = registry.reference(&format!("clat/hello@{first}"));
    let by_digest = json_of(&env.clat(&["plugin", "install", &pinned, "--json"]));
    assert_eq!(
        (by_digest["version"].as_str(), by_digest["source"]["digest"].as_str()),
        (Some("0.1.0"), Some(first.as_str()))
    );

    // A plugin installed from a directory has no tag to follow.
    let local = TestEnv::new();
    assert!(local.clat(&["plugin", "install", guests::HELLO_PACKAGE]).status.success());
    let out = local.clat(&["plugin", "update", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("installed from a directory"), "{}", stderr(&out));
}

#[test]
fn a_layer_whose_bytes_do_not_match_its_digest_installs_nothing() {
    let registry = OciRegistry::start();
    let env = TestEnv::new();
    let tag = registry.reference("clat/hello:tampered");
    assert!(env.clat(&["plugin", "push", guests::HELLO_PACKAGE, &tag]).status.success());
    // The registry's stored component (its digest is the component's SHA-256) is altered in place, length kept.
    let component = std::fs::read(Path::new(guests::HELLO_PACKAGE).join("hello.wasm")).unwrap();
    let blob = registry.blob_path(&sha256(&component));
    let mut bytes = std::fs::read(&blob).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();

    let out = env.clat(&["plugin", "install", &tag, "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    let error = json_of(&out);
    assert_eq!(error["error"]["kind"], json!("registry"), "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("bytes do not match its digest") && message.contains("nothing was installed"),
        "{message}"
    );
    assert!(installed_index(&env).is_none(), "something was installed");
}

#[test]
fn the_install_shows_what_the_manifest_asks_and_what_the_component_imports() {
    let registry = OciRegistry::start();
    let env = TestEnv::new();
    let tag = registry.reference("clat/fetch-json:1");
    assert!(env.clat(&["plugin", "push", guests::FETCH_JSON_PACKAGE, &tag]).status.success());
    // Headless without --grant: refused, nothing installed.
    let out = env.clat(&["plugin", "install", &tag]);
    assert_eq!(out.status.code(), Some(4), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("asks for") && stderr(&out).contains(&format!("clat plugin install {tag} --grant")));
    assert!(installed_index(&env).is_none());
    let out = env.clat(&["plugin", "install", &tag, "--grant"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(text.contains("granted HTTP requests to https://api.github.com"), "{text}");
    assert!(text.contains("  imports ") && text.contains("wasi:http@0.2.12 (types, outgoing-handler)"), "{text}");
}

/// A hostile registry on 127.0.0.1. By repository: `huge-manifest` streams a
/// manifest without end; `moved-manifest` redirects it to `localhost` (another
/// host); the others serve a valid manifest whose layers misbehave —
/// `declares-huge` declares 10 GiB, `huge-layer` streams without end,
/// `slow-layer` sends its head and then nothing, `layer-elsewhere` redirects to
/// `localhost` over plain http. Every request's Authorization is recorded.
struct HostileRegistry {
    port: u16,
    authorizations: Arc<Seen>,
}

/// Each request's path and Authorization header.
type Seen = Mutex<Vec<(String, Option<String>)>>;

const LAYER_BYTES: &[u8] = b"not really a component";

impl HostileRegistry {
    fn start() -> HostileRegistry {
        HostileRegistry::challenging(None)
    }

    /// One whose `/v2/` answers 401 with `WWW-Authenticate: challenge`.
    fn challenging(challenge: Option<String>) -> HostileRegistry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let authorizations = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&authorizations);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (seen, challenge) = (Arc::clone(&seen), challenge.clone());
                std::thread::spawn(move || hostile(stream, port, challenge.as_deref(), &seen));
            }
        });
        HostileRegistry { port, authorizations }
    }

    fn reference(&self, repository: &str) -> String {
        format!("oci://127.0.0.1:{}/{repository}:1", self.port)
    }
}

fn hostile(stream: TcpStream, port: u16, challenge: Option<&str>, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut authorization = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim_end().is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("authorization")
            {
                authorization = Some(v.trim().to_string());
            }
        }
        seen.lock().unwrap().push((path.clone(), authorization));
        let respond = |out: &mut TcpStream, status: &str, extra: &str, body: &[u8]| {
            let head = format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\n{extra}\r\n", body.len());
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(body);
        };
        let endless = |out: &mut TcpStream| {
            let _ = out.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n");
            let chunk = vec![b' '; 1 << 20];
            // 10 GiB, or until the client hangs up.
            for _ in 0..10 * 1024 {
                if out.write_all(&chunk).is_err() {
                    return;
                }
            }
        };
        let parts: Vec<&str> = path.trim_start_matches("/v2/").split('/').collect();
        if path == "/v2/" {
            match challenge {
                Some(challenge) => {
                    respond(&mut out, "401 Unauthorized", &format!("www-authenticate: {challenge}\r\n"), b"{}")
                }
                None => respond(&mut out, "200 OK", "content-type: application/json\r\n", b"{}"),
            }
            continue;
        }
        let repository = parts.first().copied().unwrap_or("");
        let manifests = parts.get(1) == Some(&"manifests");
        match (repository, manifests) {
            ("huge-manifest", true) => return endless(&mut out),
            ("moved-manifest", true) => {
                let to = format!("location: http://localhost:{port}{path}\r\n");
                respond(&mut out, "302 Found", &to, b"");
            }
            (_, true) => {
                let size = if repository == "declares-huge" { 10i64 << 30 } else { LAYER_BYTES.len() as i64 };
                // 64 characters after `sha256:`, none of them hex: a path on the registry's host.
                let layer_digest = if repository == "dotted-digest" {
                    format!("sha256:{}a", "../".repeat(21))
                } else {
                    sha256(LAYER_BYTES)
                };
                let manifest = json!({
                    "schemaVersion": 2,
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": sha256(b"{}"), "size": 2 },
                    "layers": [
                        { "mediaType": "application/wasm", "digest": sha256(LAYER_BYTES), "size": size },
                        { "mediaType": "application/vnd.artec.clat.plugin.manifest.v1+toml", "digest": layer_digest, "size": size }
                    ]
                });
                let extra = "content-type: application/vnd.oci.image.manifest.v1+json\r\n";
                respond(&mut out, "200 OK", extra, manifest.to_string().as_bytes());
            }
            ("huge-layer", false) => return endless(&mut out),
            ("slow-layer", false) => {
                let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 22\r\n\r\nnot");
                std::thread::sleep(Duration::from_secs(60));
                return;
            }
            ("layer-elsewhere", false) => {
                let to = format!("location: http://localhost:{port}{path}\r\n");
                respond(&mut out, "307 Temporary Redirect", &to, b"");
            }
            _ => respond(&mut out, "200 OK", "", LAYER_BYTES),
        }
    }
}

#[test]
fn a_registry_that_answers_too_much_redirects_elsewhere_or_stalls_hits_its_bound() {
    let mock = HostileRegistry::start();
    let cases = [
        ("huge-manifest", "the manifest is over 4194304 bytes".to_string()),
        ("moved-manifest", format!("a manifest redirected to another host (localhost:{}) is not followed", mock.port)),
        ("declares-huge", "declares 10737418240 bytes, over the 67108864-byte limit".to_string()),
        ("huge-layer", "is longer than the 22 bytes its manifest declares".to_string()),
        ("slow-layer", "timed out".to_string()),
        (
            "layer-elsewhere",
            format!("a layer redirected to another host over plain http (localhost:{}) is not followed", mock.port),
        ),
        ("dotted-digest", "is not a sha256 digest".to_string()),
    ];
    std::thread::scope(|scope| {
        for (repository, says) in &cases {
            let reference = mock.reference(repository);
            scope.spawn(move || {
                let env = TestEnv::new();
                let out = env.clat(&["plugin", "install", &reference, "--json"]);
                assert_eq!(out.status.code(), Some(2), "{repository}: {}{}", stdout(&out), stderr(&out));
                let error = json_of(&out);
                assert_eq!(error["error"]["kind"], json!("registry"), "{repository}: {error}");
                let message = error["error"]["message"].as_str().unwrap();
                assert!(message.contains(says.as_str()), "{repository}: {message}");
                assert!(installed_index(&env).is_none(), "{repository}: something was installed");
            });
        }
    });
    let seen = mock.authorizations.lock().unwrap().clone();
    assert!(seen.iter().all(|(path, _)| !path.contains("..")), "a digest became a path: {seen:?}");
    // A reference's own digest is checked as well, before anything is asked.
    let env = TestEnv::new();
    let dotted = format!("oci://127.0.0.1:{}/any@sha256:{}a", mock.port, "../".repeat(21));
    let out = env.clat(&["plugin", "install", &dotted]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn credentials_come_from_the_docker_config_and_stay_with_the_registry() {
    let mock = HostileRegistry::start();
    let env = TestEnv::new();
    let docker = env.dir.path().join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    // user:s3cret-token
    let config = json!({ "auths": { format!("127.0.0.1:{}", mock.port): { "auth": "dXNlcjpzM2NyZXQtdG9rZW4=" } } });
    std::fs::write(docker.join("config.json"), config.to_string()).unwrap();
    let docker = docker.to_str().unwrap();
    let out = env.clat_with_env(
        &["plugin", "install", &mock.reference("moved-manifest"), "--json"],
        &[("DOCKER_CONFIG", docker)],
    );
    assert_eq!(out.status.code(), Some(2));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!text.contains("s3cret-token") && !text.contains("dXNlcjpzM2NyZXQtdG9rZW4="), "{text}");
    let seen = mock.authorizations.lock().unwrap().clone();
    let manifest = seen.iter().find(|(path, _)| path.contains("/manifests/")).expect("the manifest was asked for");
    assert_eq!(manifest.1.as_deref(), Some("Basic dXNlcjpzM2NyZXQtdG9rZW4="), "{seen:?}");
    // Without a Docker config, the pull is anonymous.
    let anonymous = TestEnv::new();
    let empty = anonymous.dir.path().join("no-docker");
    let _ = anonymous.clat_with_env(
        &["plugin", "install", &mock.reference("moved-manifest")],
        &[("DOCKER_CONFIG", empty.to_str().unwrap())],
    );
    let seen = mock.authorizations.lock().unwrap().clone();
    assert!(seen.iter().filter(|(p, _)| p.contains("/manifests/")).any(|(_, a)| a.is_none()), "{seen:?}");

    // A registry whose token service is plain http elsewhere gets no credentials sent there: the install stops.
    let challenge = r#"Bearer realm="http://tokens.invalid/token",service="registry""#.to_string();
    let greedy = HostileRegistry::challenging(Some(challenge));
    let config = json!({ "auths": { format!("127.0.0.1:{}", greedy.port): { "auth": "dXNlcjpzM2NyZXQtdG9rZW4=" } } });
    std::fs::write(env.dir.path().join("docker/config.json"), config.to_string()).unwrap();
    let out =
        env.clat_with_env(&["plugin", "install", &greedy.reference("any"), "--json"], &[("DOCKER_CONFIG", docker)]);
    let message = json_of(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("\"http://tokens.invalid/token\", which is not https"), "{message}");
    let seen = greedy.authorizations.lock().unwrap().clone();
    assert!(seen.iter().all(|(path, _)| path == "/v2/"), "only the challenge was asked: {seen:?}");
    // Push keeps the same rule: the challenge is read first and nothing is sent to that token service.
    let out = env.clat_with_env(
        &["plugin", "push", guests::HELLO_PACKAGE, &greedy.reference("pushed"), "--json"],
        &[("DOCKER_CONFIG", docker)],
    );
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    let message = json_of(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("\"http://tokens.invalid/token\", which is not https"), "{message}");
    let seen = greedy.authorizations.lock().unwrap().clone();
    assert!(seen.iter().all(|(path, auth)| path == "/v2/" && auth.is_none()), "only the challenge was asked: {seen:?}");
}

#[test]
fn an_update_never_swaps_one_plugin_for_another() {
    let registry = OciRegistry::start();
    let env = TestEnv::new();
    let tag = registry.reference("clat/tools:latest");
    assert!(env.clat(&["plugin", "push", guests::HELLO_PACKAGE, &tag]).status.success());
    assert!(env.clat(&["plugin", "install", &tag]).status.success());
    assert!(env.clat(&["plugin", "push", guests::PROJECT_NOTES_PACKAGE, &tag]).status.success());
    let out = env.clat(&["plugin", "update", "hello"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("now names plugin \"project-notes\", not \"hello\""), "{}", stderr(&out));
    let index = installed_index(&env).unwrap();
    assert_eq!(index["plugins"].as_object().unwrap().keys().collect::<Vec<_>>(), ["hello"], "{index}");
}

/// A copy of a built package that asks for an environment variable.
fn package_asking_env(env: &TestEnv, from: &str, dir_name: &str) -> PathBuf {
    let dir = env.dir.path().join(dir_name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let manifest = std::fs::read_to_string(dir.join("clat-plugin.toml")).unwrap();
    std::fs::write(dir.join("clat-plugin.toml"), format!("{manifest}\n[capabilities]\nenv = [\"LANG\"]\n")).unwrap();
    dir
}

/// Grants belong to where a plugin came from: a package of the same name from another repository (or directory)
/// is another plugin. Installing it is refused unless `--replace`, and then it gets none of the installed one's
/// grants (headless without `--grant`: refused); from the same repository, a new digest keeps them.
#[test]
fn a_plugin_of_the_same_name_from_elsewhere_is_another_plugin_and_keeps_no_grants() {
    let registry = OciRegistry::start();
    let env = TestEnv::trusted();
    let asking = package_asking_env(&env, guests::HELLO_PACKAGE, "asking");
    let (trusted, other) = (registry.reference("clat/hello:1"), registry.reference("someone/hello:1"));
    assert!(env.clat(&["plugin", "push", asking.to_str().unwrap(), &trusted]).status.success());
    assert!(env.clat(&["plugin", "push", asking.to_str().unwrap(), &other]).status.success());
    let installed = env.clat(&["plugin", "install", &trusted, "--grant", "--json"]);
    assert_eq!(installed.status.code(), Some(0), "{}", stderr(&installed));
    assert_eq!(json_of(&installed)["origin"], json!(trusted.trim_end_matches(":1")), "{}", stdout(&installed));

    // Another repository's hello: refused, saying how to replace; nothing changes.
    let out = env.clat(&["plugin", "install", &other, "--json"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    let message = json_of(&out)["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("is another plugin") && message.contains("--replace"), "{message}");
    let index = installed_index(&env).unwrap();
    assert_eq!(index["plugins"]["hello"]["source"]["oci"], json!(trusted), "{index}");
    // With --replace it asks for its grants anew: headless without --grant, refused.
    let out = env.clat(&["plugin", "install", &other, "--replace", "--json"]);
    assert_eq!(out.status.code(), Some(4), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(json_of(&out)["error"]["kind"], json!("not-granted"), "{}", stdout(&out));
    let out = env.clat(&["plugin", "install", &other, "--replace", "--grant", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The same repository at another digest is the same plugin: its grants cover what it asks.
    let next =
        package_asking_env(&env, package_at_version(&env, guests::HELLO_PACKAGE, "0.2.0").to_str().unwrap(), "next");
    assert!(env.clat(&["plugin", "push", next.to_str().unwrap(), &other]).status.success());
    let out = env.clat(&["plugin", "install", &other, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // A directory is a source too.
    let out = env.clat(&["plugin", "install", asking.to_str().unwrap(), "--grant"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is another plugin"), "{}", stderr(&out));
}

/// `clat plugin push` publishes what the author tested: a project's `dist/` older than its sources (a tool added and
/// tried through the edit loop, which writes no `dist/`) is refused with the command that builds first; `push
/// PROJECT` builds it, lists it and prints its digest, tools and grants; installed elsewhere from the registry, the
/// new tool answers.
#[test]
fn push_of_a_project_builds_what_was_tested_and_a_stale_package_is_refused() {
    let registry = OciRegistry::start();
    let env = TestEnv::new();
    let parent = env.dir.path().join("work");
    std::fs::create_dir_all(&parent).unwrap();
    let vars = support::toolchains::toolchain_env();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let clat = |args: &[&str]| env.clat_with_env(args, &vars);
    // `js` is JavaScript.
    let out = clat(&["plugin", "new", "greeter", "--lang", "js", "--dir", parent.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let project = parent.join("greeter");
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guest-toolchains/node_modules");
    std::os::unix::fs::symlink(modules.canonicalize().unwrap(), project.join("node_modules")).unwrap();
    let out = clat(&["plugin", "build", project.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A tool added, and tried through the edit loop.
    let source = project.join("src/index.js");
    let shout = "  shout: {\n    description: \"Shout a word.\",\n    input: z.object({ word: z.string() }),\n    \
                 readOnly: true,\n    openWorld: false,\n    run: ({ word }) => `${word.toUpperCase()}!`,\n  },\n});";
    let text = std::fs::read_to_string(&source).unwrap().replacen("\n});", &format!("\n{shout}"), 1);
    std::fs::write(&source, text).unwrap();
    let out = clat(&["plugin", "call", project.to_str().unwrap(), "shout", r#"{"word":"hey"}"#]);
    assert_eq!((out.status.code(), stdout(&out).as_str()), (Some(0), "HEY!\n"), "{}", stderr(&out));

    let tag = registry.reference("clat/greeter:1");
    let dist = project.join("dist");
    let out = clat(&["plugin", "push", dist.to_str().unwrap(), &tag]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("older than its project's sources (src/index.js changed"), "{said}");
    assert!(said.contains(&format!("`clat plugin push {} REFERENCE`", project.display())), "{said}");

    let out = clat(&["plugin", "push", project.to_str().unwrap(), &tag, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("built javascript package"), "{}", stderr(&out));
    let pushed = json_of(&out);
    assert_eq!(pushed["tools"], json!(["hello", "shout"]), "{pushed}");
    assert!(pushed["digest"].as_str().unwrap().starts_with("sha256:"), "{pushed}");
    let out = clat(&["plugin", "push", project.to_str().unwrap(), &tag]);
    let shown = stdout(&out);
    assert!(shown.contains("  tools: hello, shout\n") && shown.contains("  asks for: nothing\n"), "{shown}");

    let elsewhere = TestEnv::trusted();
    let out = elsewhere.clat(&["plugin", "install", &tag, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = elsewhere.clat(&["call", "wasm_greeter_shout", r#"{"word":"hey"}"#]);
    assert_eq!(stdout(&out), "HEY!\n", "{}", stderr(&out));
}
