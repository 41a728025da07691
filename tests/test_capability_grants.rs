//! Capability grants for WASM plugins: outbound HTTP to granted origins and
//! granted environment variables — declared in the manifest, granted at
//! install (`--grant` headless), enforced by the host before any connection
//! (and on every redirect, and against DNS pointing a granted name inward),
//! bounded, raised to the `network` effect, recorded as run events, revoked
//! cleanly. The guests are `fetch-json` (the example) and `http-probe` (the
//! test guest), against a loopback HTTP server that counts its connections.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clat_guest_artifacts as guests;
use clat_host::contract::PermissionMode;
use clat_host::limits::{
    WASM_HTTP_REDIRECTS_MAX, WASM_HTTP_REQUEST_BODY_MAX_BYTES, WASM_HTTP_REQUESTS_PER_CALL,
    WASM_HTTP_RESPONSE_BODY_MAX_BYTES,
};
use clat_host::registry::CallError;
use clat_host::run::{RunContext, RunEventKind};
use clat_host::scope::ProjectScope;
use clat_host::supply::capabilities::Capabilities;
use clat_host::wasm::http::NameLookup;
use clat_host::wasm::{PluginSetup, WasmRuntime};
use serde_json::{Value, json};
use support::http_server::{HttpServer, JSON_DOCUMENT};
use support::{TestEnv, stderr, stdout};

/// A copy of a built package whose `[capabilities]` table is replaced by `capabilities`.
fn package_with(env: &TestEnv, from: &str, capabilities: &str) -> PathBuf {
    let name = Path::new(from).file_name().unwrap().to_string_lossy().into_owned();
    let dir = env.dir.path().join("pkgs").join(format!("{name}-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let manifest = std::fs::read_to_string(dir.join("clat-plugin.toml")).unwrap();
    let head = manifest.split("[capabilities]").next().unwrap().to_string();
    std::fs::write(dir.join("clat-plugin.toml"), format!("{head}[capabilities]\n{capabilities}\n")).unwrap();
    dir
}

fn uuid_like() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

fn install(env: &TestEnv, package: &Path, grant: bool) -> std::process::Output {
    let mut args = vec!["plugin", "install", package.to_str().unwrap()];
    if grant {
        args.push("--grant");
    }
    env.clat(&args)
}

/// `clat call TOOL ARGS --json --events` in `mode`: (exit code, result document, events).
fn call(env: &TestEnv, tool: &str, args: Value, mode: &str, extra_env: &[(&str, &str)]) -> (i32, Value, Vec<Value>) {
    let args = args.to_string();
    let out = env.clat_with_env(&["call", tool, &args, "--json", "--events", "--mode", mode], extra_env);
    let document = serde_json::from_str(stdout(&out).trim()).unwrap_or(Value::Null);
    let events = stderr(&out).lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).collect();
    (out.status.code().unwrap_or(-1), document, events)
}

fn http_events(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["type"] == "http_request").collect()
}

/// The tool's structured result (`Json` outputs are structured content).
fn structured(document: &Value) -> &Value {
    &document["structuredContent"]
}

#[test]
fn a_granted_guest_fetches_and_the_run_records_the_request_without_its_query() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    let out = install(&env, Path::new(guests::FETCH_JSON_PACKAGE), true);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("granted HTTP requests to http://127.0.0.1:*"), "{}", stdout(&out));
    let url = server.url("/json?token=query-secret-value");
    let (code, document, events) = call(&env, "wasm_fetch_json_fetch_json", json!({ "url": url }), "full-access", &[]);
    assert_eq!(code, 0, "{document} {events:?}");
    let summary = structured(&document);
    assert_eq!(summary["status"], 200, "{document}");
    assert_eq!(summary["bytes"], JSON_DOCUMENT.len());
    assert_eq!(summary["shape"]["type"], "object");
    assert_eq!(summary["shape"]["fields"]["items"], "array");
    let http = http_events(&events);
    assert_eq!(http.len(), 1, "{events:?}");
    let event = http[0];
    assert_eq!(event["source"], "wasm:fetch-json");
    assert_eq!(event["method"], "GET");
    assert_eq!((event["scheme"].as_str(), event["host"].as_str()), (Some("http"), Some("127.0.0.1")));
    assert_eq!(event["port"], server.port);
    assert_eq!(event["path"], "/json", "no query in the event");
    assert_eq!(event["status"], 200);
    assert_eq!(event["bytes"], JSON_DOCUMENT.len());
    assert!(event["error"].is_null(), "{event}");
    assert!(!events.iter().any(|e| e.to_string().contains("query-secret-value")), "{events:?}");
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/json?token=query-secret-value", "the guest's request went as it asked");
    // The tool reaches the network: its effect says so.
    let tools = env.clat(&["tools", "--json"]);
    let tools: Value = serde_json::from_str(&stdout(&tools)).unwrap();
    let tool = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "wasm_fetch_json_fetch_json").unwrap();
    assert_eq!(tool["effect"], "network");
}

#[test]
fn a_url_outside_the_grant_is_refused_before_any_connection() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    let package = package_with(&env, guests::FETCH_JSON_PACKAGE, r#"http = ["https://api.github.com"]"#);
    assert!(install(&env, &package, true).status.success());
    let url = server.url("/json");
    let (code, document, events) = call(&env, "wasm_fetch_json_fetch_json", json!({ "url": url }), "full-access", &[]);
    assert_eq!(code, 1, "a tool error: {document}");
    let error = document.to_string();
    assert!(error.contains("not in this plugin's http grant"), "the guest saw a refusal it can report: {error}");
    let http = http_events(&events);
    assert_eq!(http.len(), 1, "{events:?}");
    let why = http[0]["error"].as_str().unwrap();
    assert!(
        why.contains(&format!("http://127.0.0.1:{} is not in plugin fetch-json's http grant", server.port)),
        "{why}"
    );
    assert!(why.contains("https://api.github.com"), "{why}");
    assert!(http[0]["status"].is_null());
    assert_eq!(server.connections(), 0, "no connection was made");
}

#[test]
fn javascript_and_python_guests_fetch_through_the_same_grant() {
    // Built by `clat plugin build`: the manifest declares http, so componentize-js keeps wasi:http and
    // componentize-py builds for the world clat-plugin-http.
    for (lang, plugin) in [("js", "fetch-json-js"), ("python", "fetch-json-py")] {
        let server = HttpServer::start();
        let env = TestEnv::trusted();
        let package = support::toolchains::package(lang, "fetch-json");
        let out = install(&env, &package, true);
        assert!(out.status.success(), "{lang}: {}", stderr(&out));
        let tool = format!("wasm_{}_fetch_json", plugin.replace('-', "_"));
        let (code, document, events) = call(&env, &tool, json!({ "url": server.url("/json") }), "full-access", &[]);
        assert_eq!(code, 0, "{lang}: {document}");
        assert_eq!(structured(&document)["status"], 200, "{lang}: {document}");
        assert_eq!(structured(&document)["shape"]["fields"]["nested"], "object", "{lang}: {document}");
        let http = http_events(&events);
        assert_eq!(http.len(), 1, "{lang}: {events:?}");
        assert_eq!((&http[0]["source"], &http[0]["status"]), (&json!(format!("wasm:{plugin}")), &json!(200)));
        assert_eq!(http[0]["bytes"], JSON_DOCUMENT.len(), "{lang}");
        // The same guest under a grant that does not cover the URL: refused, nothing contacted.
        let narrow = package_with(&env, package.to_str().unwrap(), r#"http = ["https://api.github.com"]"#);
        let replaced = env.clat(&["plugin", "install", narrow.to_str().unwrap(), "--grant", "--replace"]);
        assert!(replaced.status.success(), "{lang}: {}", stderr(&replaced));
        let (code, document, events) = call(&env, &tool, json!({ "url": server.url("/json") }), "full-access", &[]);
        assert_eq!(code, 1, "{lang}: {document}");
        let why = http_events(&events)[0]["error"].as_str().unwrap().to_string();
        assert!(why.contains(&format!("is not in plugin {plugin}'s http grant")), "{lang}: {why}");
        assert_eq!(server.connections(), 1, "{lang}: only the first, granted call connected");
    }
}

#[test]
fn installing_headless_needs_grant_and_an_upgrade_asking_for_more_asks_again() {
    let env = TestEnv::trusted();
    let out = install(&env, Path::new(guests::HTTP_PROBE_PACKAGE), false);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("plugin http-probe asks for HTTP requests to http://127.0.0.1:*"), "{err}");
    assert!(err.contains("the environment variable CLAT_TEST_GRANTED_TOKEN"), "{err}");
    assert!(err.contains("--grant"), "{err}");
    assert!(stdout(&env.clat(&["plugin", "list"])).contains("no plugins installed"));
    // Granted; the same package again asks for nothing new, so it installs without --grant.
    assert!(install(&env, Path::new(guests::HTTP_PROBE_PACKAGE), true).status.success());
    let again = install(&env, Path::new(guests::HTTP_PROBE_PACKAGE), false);
    assert!(again.status.success(), "{}", stderr(&again));
    // A version asking for one more variable must be granted again. From another directory it is another
    // plugin: refused unless it replaces the installed one, and then granted nothing of its grants.
    let more = package_with(
        &env,
        guests::HTTP_PROBE_PACKAGE,
        "http = [\"http://127.0.0.1:*\"]\nenv = [\"CLAT_TEST_GRANTED_TOKEN\", \"ANOTHER_TOKEN\"]",
    );
    let out = install(&env, &more, false);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("is another plugin") && stderr(&out).contains("--replace"), "{}", stderr(&out));
    let out = env.clat(&["plugin", "install", more.to_str().unwrap(), "--replace"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let list = stdout(&env.clat(&["plugin", "list"]));
    assert!(list.contains("grants: http: http://127.0.0.1:* (internal); env: CLAT_TEST_GRANTED_TOKEN"), "{list}");
    assert!(!list.contains("ANOTHER_TOKEN"), "the refused upgrade changed nothing: {list}");
    // A bad pattern or an unknown key is refused at install, naming the entry.
    let bad = package_with(&env, guests::HTTP_PROBE_PACKAGE, r#"http = ["https://*"]"#);
    let err = stderr(&install(&env, &bad, true));
    assert!(err.contains("capabilities.http entry \"https://*\"") && err.contains("never matches every host"), "{err}");
    let bad = package_with(&env, guests::HTTP_PROBE_PACKAGE, r#"sockets = ["tcp"]"#);
    let err = stderr(&install(&env, &bad, true));
    assert!(err.contains("unknown field `sockets`"), "{err}");
}

#[test]
fn plugin_test_reports_a_grant_never_used_and_an_import_never_declared() {
    let env = TestEnv::trusted();
    // hello never imports wasi:http: asking the user for an http grant would be in vain.
    let unused = package_with(&env, guests::HELLO_PACKAGE, r#"http = ["https://api.example.com"]"#);
    let out = env.clat(&["plugin", "test", unused.to_str().unwrap(), "--grant"]);
    assert_eq!(out.status.code(), Some(1), "{} {}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("never imports wasi:http"), "{}", stdout(&out));
    // fetch-json without its [capabilities] table imports what it did not declare.
    let undeclared = package_with(&env, guests::FETCH_JSON_PACKAGE, "");
    let out = env.clat(&["plugin", "test", undeclared.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("wasi:http/") && text.contains("[capabilities] http"), "{text}");
    // A server package may not ask for capabilities: it already runs with CLAT's network and environment.
    let server = env.dir.path().join("server-pkg");
    std::fs::create_dir_all(&server).unwrap();
    std::fs::write(
        server.join("clat-plugin.toml"),
        "name = \"srv\"\nversion = \"1\"\nkind = \"mcp-stdio\"\nentry = \"srv\"\n[capabilities]\nenv = [\"TOKEN\"]\n",
    )
    .unwrap();
    let err = stderr(&install(&env, &server, true));
    assert!(err.contains("capabilities apply to wasm packages only"), "{err}");
}

/// `clat plugin install PACKAGE` at a terminal (script(1) gives clat one), answering `answer`.
fn install_at_a_terminal(env: &TestEnv, package: &str, answer: &[u8]) -> (Option<i32>, String) {
    let command = format!("{} --home {} plugin install {package}", env!("CARGO_BIN_EXE_clat"), env.home.display());
    let mut script = std::process::Command::new("script");
    script.args(["-qec", &command, "/dev/null"]);
    let out = support::output_with_stdin(env, script, answer);
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn at_a_terminal_the_user_is_shown_what_a_package_asks_for_and_decides() {
    let env = TestEnv::trusted();
    let (code, screen) = install_at_a_terminal(&env, guests::HTTP_PROBE_PACKAGE, b"n\n");
    assert_eq!(code, Some(4), "{screen}");
    assert!(screen.contains("Plugin http-probe 0.1.0 asks for:"), "{screen}");
    assert!(screen.contains("- HTTP requests to http://127.0.0.1:*"), "{screen}");
    assert!(screen.contains("- the environment variable CLAT_TEST_GRANTED_TOKEN"), "{screen}");
    assert!(screen.contains("Grant? [y/N]") && screen.contains("Not granted."), "{screen}");
    assert!(stdout(&env.clat(&["plugin", "list"])).contains("no plugins installed"));
    let (code, screen) = install_at_a_terminal(&env, guests::HTTP_PROBE_PACKAGE, b"y\n");
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("granted HTTP requests to http://127.0.0.1:*"), "{screen}");
    let list = stdout(&env.clat(&["plugin", "list", "--json"]));
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(
        list["plugins"][0]["grants"],
        json!({ "http": ["http://127.0.0.1:*"], "env": ["CLAT_TEST_GRANTED_TOKEN"] })
    );
}

#[test]
fn a_redirect_is_followed_within_the_grant_and_refused_outside_it() {
    let (granted, other) = (HttpServer::start(), HttpServer::start());
    let env = TestEnv::trusted();
    let grant = format!("http = [\"http://127.0.0.1:{}\"]", granted.port);
    let package = package_with(&env, guests::HTTP_PROBE_PACKAGE, &grant);
    assert!(install(&env, &package, true).status.success());
    let within = granted.url(&format!("/redirect?to={}", granted.url("/json")));
    let (code, document, _) = call(&env, "wasm_http_probe_get", json!({ "url": within }), "full-access", &[]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(structured(&document)["outcomes"][0]["status"], 200, "{document}");
    let outside = granted.url(&format!("/redirect?to={}", other.url("/json")));
    let (code, document, events) = call(&env, "wasm_http_probe_get", json!({ "url": outside }), "full-access", &[]);
    assert_eq!(code, 0, "{document}");
    let outcome = &structured(&document)["outcomes"][0];
    assert!(outcome["error"].as_str().unwrap().contains("host refused the request"), "{outcome}");
    let why = http_events(&events)[0]["error"].as_str().unwrap().to_string();
    assert!(why.contains(&format!("a redirect to http://127.0.0.1:{} is outside the grant", other.port)), "{why}");
    assert_eq!(other.connections(), 0, "the redirect's target was never contacted");
    // Within the grant, at most WASM_HTTP_REDIRECTS_MAX redirects are followed.
    let chain = |hops: usize| granted.url(&format!("{}/json", "/redirect?to=".repeat(hops)));
    let (_, document, _) =
        call(&env, "wasm_http_probe_get", json!({ "url": chain(WASM_HTTP_REDIRECTS_MAX) }), "full-access", &[]);
    assert_eq!(structured(&document)["outcomes"][0]["status"], 200, "{document}");
    let (_, document, events) =
        call(&env, "wasm_http_probe_get", json!({ "url": chain(WASM_HTTP_REDIRECTS_MAX + 1) }), "full-access", &[]);
    assert!(structured(&document)["outcomes"][0]["error"].is_string(), "{document}");
    let why = http_events(&events)[0]["error"].as_str().unwrap().to_string();
    assert!(why.contains(&format!("more than {WASM_HTTP_REDIRECTS_MAX} redirects")), "{why}");
}

#[test]
fn requests_responses_and_floods_are_bounded_per_call() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    assert!(install(&env, Path::new(guests::HTTP_PROBE_PACKAGE), true).status.success());
    let get = |args: Value| call(&env, "wasm_http_probe_get", args, "full-access", &[]);
    // A flood: the requests past the limit are refused, with one event saying so.
    let times = WASM_HTTP_REQUESTS_PER_CALL + 3;
    let (code, document, events) = get(json!({ "url": server.url("/json"), "times": times }));
    assert_eq!(code, 0, "{document}");
    let outcomes = structured(&document)["outcomes"].as_array().unwrap().clone();
    let ok = outcomes.iter().filter(|o| o["status"] == 200).count();
    assert_eq!(ok, WASM_HTTP_REQUESTS_PER_CALL as usize, "{outcomes:?}");
    assert!(outcomes[ok..].iter().all(|o| o["error"].as_str().unwrap().contains("too many requests in one call")));
    let http = http_events(&events);
    assert_eq!(http.len(), WASM_HTTP_REQUESTS_PER_CALL as usize + 1, "one event for the limit, not one per refusal");
    assert!(http.last().unwrap()["error"].as_str().unwrap().contains("more than"), "{:?}", http.last());
    assert_eq!(server.requests().len(), WASM_HTTP_REQUESTS_PER_CALL as usize);
    // A response over the bound, announced by its length or only found while streaming.
    for path in ["big", "stream"] {
        let url = server.url(&format!("/{path}?bytes={}", WASM_HTTP_RESPONSE_BODY_MAX_BYTES + 1));
        let (_, document, events) = get(json!({ "url": url }));
        let outcome = &structured(&document)["outcomes"][0];
        // Announced: the host refuses the response. Streaming: the body read fails as the guest reads it.
        let seen = outcome["error"].as_str().unwrap();
        assert!(seen.contains("response body is over") || seen.contains("body size exceeds limit"), "{path}: {seen}");
        let why = http_events(&events)[0]["error"].as_str().unwrap().to_string();
        assert!(why.contains(&WASM_HTTP_RESPONSE_BODY_MAX_BYTES.to_string()), "{path}: {why}");
    }
    // A request body over the bound is refused before it is sent.
    let before = server.requests().len();
    let (_, document, _) = get(
        json!({ "url": server.url("/json"), "method": "POST", "body_bytes": WASM_HTTP_REQUEST_BODY_MAX_BYTES + 1 }),
    );
    let outcome = &structured(&document)["outcomes"][0];
    assert!(outcome["error"].as_str().unwrap().contains("request body is over"), "{outcome}");
    assert_eq!(server.requests().len(), before, "nothing was sent");
    // Within the bounds all is well in the same plugin.
    let (_, document, _) = get(json!({ "url": server.url("/big?bytes=1000") }));
    assert_eq!(structured(&document)["outcomes"][0]["bytes"], 1000);
}

#[test]
fn the_network_effect_is_denied_in_read_only_before_any_connection() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    assert!(install(&env, Path::new(guests::HTTP_PROBE_PACKAGE), true).status.success());
    // The probe says it is read-only and closed-world; its grant makes it `network` anyway.
    let (code, document, events) =
        call(&env, "wasm_http_probe_get", json!({ "url": server.url("/json") }), "read-only", &[]);
    assert_eq!(code, 4, "{document}");
    let permission = events.iter().find(|e| e["type"] == "permission").unwrap();
    assert_eq!(permission["effect"], "network");
    assert_eq!(permission["allowed"], false);
    assert_eq!(server.connections(), 0);
}

#[test]
fn granted_environment_variables_are_the_guests_only_ones_and_are_redacted() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    assert!(install(&env, Path::new(guests::HTTP_PROBE_PACKAGE), true).status.success());
    let token = "granted-token-value-4242";
    let vars = [("CLAT_TEST_GRANTED_TOKEN", token), ("CLAT_TEST_NOT_GRANTED", "other-value-777")];
    let (code, document, _) =
        call(&env, "wasm_http_probe_env", json!({ "name": "CLAT_TEST_GRANTED_TOKEN" }), "full-access", &vars);
    assert_eq!(code, 0, "{document}");
    assert_eq!(structured(&document)["value"], token);
    assert_eq!(
        structured(&document)["names"],
        json!(["CLAT_TEST_GRANTED_TOKEN"]),
        "nothing else of CLAT's environment"
    );
    let (_, document, _) =
        call(&env, "wasm_http_probe_env", json!({ "name": "CLAT_TEST_NOT_GRANTED" }), "full-access", &vars);
    assert!(structured(&document)["value"].is_null());
    // The value is a secret in diagnostics: a path carrying it is redacted in the event.
    let url = server.url(&format!("/x/{token}"));
    let (_, _, events) = call(&env, "wasm_http_probe_get", json!({ "url": url }), "full-access", &vars);
    let event = http_events(&events)[0];
    assert_eq!(event["status"], 404);
    assert_eq!(event["path"], "/x/[REDACTED]", "{event}");
    // Without the grant the guest sees no environment at all.
    assert!(env.clat(&["plugin", "revoke", "http-probe"]).status.success());
    let (_, document, _) =
        call(&env, "wasm_http_probe_env", json!({ "name": "CLAT_TEST_GRANTED_TOKEN" }), "full-access", &vars);
    assert!(structured(&document)["value"].is_null(), "{document}");
    assert_eq!(structured(&document)["names"], json!([]));
}

#[test]
fn a_revoked_grant_fails_the_calls_that_need_it_and_can_be_granted_again() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    assert!(install(&env, Path::new(guests::HTTP_PROBE_PACKAGE), true).status.success());
    let out = env.clat(&["plugin", "revoke", "http-probe"]);
    assert!(stdout(&out).contains("revoked http-probe HTTP requests to http://127.0.0.1:*"), "{}", stdout(&out));
    let list = stdout(&env.clat(&["plugin", "list"]));
    assert!(list.contains("grants: none") && list.contains("declared, not granted"), "{list}");
    let (code, document, events) =
        call(&env, "wasm_http_probe_get", json!({ "url": server.url("/json") }), "full-access", &[]);
    assert_eq!(code, 0, "the plugin still loads; its request fails: {document}");
    assert!(structured(&document)["outcomes"][0]["error"].as_str().unwrap().contains("host refused"));
    let why = http_events(&events)[0]["error"].as_str().unwrap().to_string();
    assert!(why.contains("holds no http grant") && why.contains("clat plugin grant http-probe"), "{why}");
    assert_eq!(server.connections(), 0);
    // The tool is no longer raised to `network` (it says read-only, closed world).
    let tools: Value = serde_json::from_str(&stdout(&env.clat(&["tools", "--json"]))).unwrap();
    let tool = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "wasm_http_probe_get").unwrap();
    assert_eq!(tool["effect"], "external-read");
    assert!(env.clat(&["plugin", "grant", "http-probe"]).status.success());
    let (_, document, _) = call(&env, "wasm_http_probe_get", json!({ "url": server.url("/json") }), "full-access", &[]);
    assert_eq!(structured(&document)["outcomes"][0]["status"], 200, "{document}");
    let tools = stdout(&env.clat(&["tools"]));
    assert!(
        tools.contains("plugin http-probe holds http: http://127.0.0.1:* (internal); env: CLAT_TEST_GRANTED_TOKEN"),
        "{tools}"
    );
}

/// A resolver that sends every name to one address (a rebinding attacker's DNS).
struct PointEverythingAt(std::net::IpAddr);

impl NameLookup for PointEverythingAt {
    fn lookup(
        &self,
        _host: &str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Vec<std::net::IpAddr>>> + Send>> {
        let ip = self.0;
        Box::pin(async move { Ok(vec![ip]) })
    }
}

/// Load the probe into `scope` from a runtime of its own (resolving names with `lookup`), granted `http`.
async fn load_probe(scope: &ProjectScope, http: Vec<String>, lookup: Option<Arc<dyn NameLookup>>) {
    let runtime = WasmRuntime::new(&Path::new(env!("CARGO_TARGET_TMPDIR")).join("test-wasm-cache")).unwrap();
    if let Some(lookup) = lookup {
        runtime.set_name_lookup(lookup);
    }
    let grant = Capabilities { http, env: vec![] };
    let setup = PluginSetup { memory_max: None, declared: grant.clone(), granted: grant, ..PluginSetup::default() };
    let entry = Path::new(guests::HTTP_PROBE_WASM);
    let plugin = runtime
        .load("probe", entry.parent().unwrap(), entry, setup, Arc::clone(scope.services()))
        .await
        .expect("the probe loads");
    for r in plugin.register(scope.registry()) {
        r.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_name_resolving_to_an_internal_address_is_refused_and_a_host_that_never_answers_ends_with_the_call() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    let scope = env.mount();
    let grant = vec![format!("https://api.example.test:{}", server.port), format!("http://127.0.0.1:{}", server.port)];
    load_probe(&scope, grant, Some(Arc::new(PointEverythingAt("127.0.0.1".parse().unwrap())))).await;
    let (run, sink) = support::run_in(PermissionMode::FullAccess);
    let url = format!("https://api.example.test:{}/json", server.port);
    let out = scope.registry().call("wasm_probe_get", json!({ "url": url }), &run).await.unwrap();
    let text = support::text(&out);
    assert!(text.contains("resolves to an internal address"), "{text}");
    let refused = sink
        .events()
        .into_iter()
        .find_map(|e| match e.kind {
            RunEventKind::HttpRequest { error, host, .. } => Some((host, error)),
            _ => None,
        })
        .unwrap();
    assert_eq!(refused.0, "api.example.test");
    assert!(refused.1.unwrap().contains("api.example.test resolves to 127.0.0.1, an internal address"));
    assert_eq!(server.connections(), 0, "no connection was made");
    // A host that never answers: the request ends with the call's deadline, and the plugin keeps working.
    let short =
        RunContext::builder().mode(PermissionMode::FullAccess).deadline(std::time::Duration::from_secs(2)).start();
    let hung = scope.registry().call("wasm_probe_get", json!({ "url": server.url("/hang") }), &short).await;
    match hung {
        Ok(out) => {
            assert!(support::text(&out).contains("no answer within the call's deadline"), "{}", support::text(&out))
        }
        Err(e) => assert!(e.to_string().contains("timed out after"), "{e}"),
    }
    let out = scope.registry().call("wasm_probe_get", json!({ "url": server.url("/json") }), &run).await.unwrap();
    assert!(support::text(&out).contains("\"status\": 200"), "{}", support::text(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_run_drops_a_request_in_flight() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    let scope = Arc::new(env.mount());
    load_probe(&scope, vec![format!("http://127.0.0.1:{}", server.port)], None).await;
    let run = RunContext::builder().mode(PermissionMode::FullAccess).start();
    let call = {
        let (scope, run, url) = (Arc::clone(&scope), run.clone(), server.url("/hang"));
        tokio::spawn(async move { scope.registry().call("wasm_probe_get", json!({ "url": url }), &run).await })
    };
    // Once the server holds the request, cancel the run.
    for _ in 0..200 {
        if !server.requests().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(server.requests().len(), 1, "the request reached the server");
    run.cancel();
    let result = tokio::time::timeout(std::time::Duration::from_secs(10), call).await.expect("returned").unwrap();
    assert!(matches!(result, Err(CallError::Cancelled { .. })), "{result:?}");
    // The plugin answers the next run as before.
    let next = RunContext::builder().mode(PermissionMode::FullAccess).start();
    let out = scope.registry().call("wasm_probe_get", json!({ "url": server.url("/json") }), &next).await.unwrap();
    assert!(support::text(&out).contains("\"status\": 200"), "{}", support::text(&out));
}

#[test]
fn a_numeric_host_is_an_internal_address_shown_in_canonical_form_and_never_a_name() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    // 2130706433 is 127.0.0.1 written as one number: the grant names the loopback address.
    let grant = format!(r#"http = ["http://2130706433:{}"]"#, server.port);
    let package = package_with(&env, guests::FETCH_JSON_PACKAGE, &grant);
    let out = install(&env, &package, false);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let asked = stderr(&out);
    let canonical = format!("http://127.0.0.1:{}", server.port);
    assert!(
        asked.contains(&format!("HTTP requests to {canonical} (an internal address: a service on this machine")),
        "the prompt names the address and says it is internal: {asked}"
    );
    assert!(!asked.contains("2130706433"), "{asked}");
    assert!(install(&env, &package, true).status.success());
    let list = stdout(&env.clat(&["plugin", "list"]));
    assert!(list.contains(&format!("grants: http: {canonical} (internal)")), "{list}");
    // Every numeric form of the address reaches it through the address grant, recorded canonically.
    for form in ["2130706433", "0x7f000001", "127.1", "127.0.0.1"] {
        let url = format!("http://{form}:{}/json", server.port);
        let (code, document, events) =
            call(&env, "wasm_fetch_json_fetch_json", json!({ "url": url }), "full-access", &[]);
        assert_eq!(code, 0, "{form}: {document}");
        assert_eq!(http_events(&events)[0]["host"], "127.0.0.1", "{form}: {events:?}");
    }
    // A name grant is never matched by an address, whatever form the request writes it in.
    let env = TestEnv::trusted();
    let grant = format!(r#"http = ["http://localhost:{}"]"#, server.port);
    assert!(install(&env, &package_with(&env, guests::FETCH_JSON_PACKAGE, &grant), true).status.success());
    let before = server.connections();
    for form in ["2130706433", "0x7f000001", "127.1"] {
        let url = format!("http://{form}:{}/json", server.port);
        let (code, document, _) = call(&env, "wasm_fetch_json_fetch_json", json!({ "url": url }), "full-access", &[]);
        assert_eq!(code, 1, "{form}: {document}");
        assert!(document.to_string().contains("not in this plugin's http grant"), "{form}: {document}");
    }
    assert_eq!(server.connections(), before, "no connection was made");
}

/// The probe's grant with a `[tools]` table saying which tool uses what.
fn probe_using(env: &TestEnv, tools: &str) -> PathBuf {
    let capabilities = format!("http = [\"http://127.0.0.1:*\"]\nenv = [\"CLAT_TEST_GRANTED_TOKEN\"]\n\n{tools}");
    package_with(env, guests::HTTP_PROBE_PACKAGE, &capabilities)
}

#[test]
fn only_a_tool_that_uses_http_is_network_and_its_denial_names_the_grant() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    let package = probe_using(&env, "[tools.get]\nuses = [\"http\"]\n");
    assert!(install(&env, &package, true).status.success());
    let tools: Value = serde_json::from_str(&stdout(&env.clat(&["tools", "--json"]))).unwrap();
    let effect =
        |name: &str| tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["effect"].clone();
    assert_eq!(effect("wasm_http_probe_get"), "network");
    assert_eq!(effect("wasm_http_probe_env"), "external-read", "a tool that does not use http keeps its hints' effect");
    // The tool that does not use http runs in the default mode headless; it sees no environment (it does not use env).
    let vars = [("CLAT_TEST_GRANTED_TOKEN", "token-9911")];
    let (code, document, _) =
        call(&env, "wasm_http_probe_env", json!({ "name": "CLAT_TEST_GRANTED_TOKEN" }), "ask", &vars);
    assert_eq!(code, 0, "{document}");
    assert!(structured(&document)["value"].is_null(), "{document}");
    assert_eq!(structured(&document)["names"], json!([]));
    // The tool that does: asked for, so denied headless, and the denial says why it is network.
    let out =
        env.clat(&["call", "wasm_http_probe_get", &json!({ "url": server.url("/json") }).to_string(), "--mode", "ask"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("raised to network: it uses its plugin's http grant"),
        "the denial names the grant as the reason: {}",
        stderr(&out)
    );
    let read_only = env.clat(&[
        "call",
        "wasm_http_probe_get",
        &json!({ "url": server.url("/json") }).to_string(),
        "--mode",
        "read-only",
    ]);
    assert!(stderr(&read_only).contains("it uses its plugin's http grant"), "{}", stderr(&read_only));
    assert_eq!(server.connections(), 0);
    let shown = stdout(&env.clat(&["tools", "wasm_http_probe_get"]));
    assert!(shown.contains("raised to network: it uses its plugin's http grant"), "{shown}");
    let (code, document, _) =
        call(&env, "wasm_http_probe_get", json!({ "url": server.url("/json") }), "full-access", &[]);
    assert_eq!(code, 0, "{document}");
    assert_eq!(structured(&document)["outcomes"][0]["status"], 200, "{document}");
}

#[test]
fn a_request_from_a_tool_that_does_not_use_http_is_refused_with_the_reason() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    let package = probe_using(&env, "[tools.env]\nuses = [\"env\"]\n");
    assert!(install(&env, &package, true).status.success());
    // `get` keeps its hints (read-only, closed world): the default mode runs it, and the host refuses its request.
    let (code, document, events) = call(&env, "wasm_http_probe_get", json!({ "url": server.url("/json") }), "ask", &[]);
    assert_eq!(code, 0, "{document}");
    assert!(structured(&document)["outcomes"][0]["error"].as_str().unwrap().contains("host refused"), "{document}");
    let why = http_events(&events)[0]["error"].as_str().unwrap().to_string();
    assert!(why.contains("tool get of wasm:http-probe does not use http") && why.contains("[tools]"), "{why}");
    assert_eq!(server.connections(), 0);
    // `env` uses env: it sees the granted variable.
    let vars = [("CLAT_TEST_GRANTED_TOKEN", "token-5150")];
    let (code, document, _) =
        call(&env, "wasm_http_probe_env", json!({ "name": "CLAT_TEST_GRANTED_TOKEN" }), "ask", &vars);
    assert_eq!(code, 0, "{document}");
    assert_eq!(structured(&document)["value"], "token-5150");
}

#[test]
fn a_tools_table_that_uses_what_is_not_declared_or_names_no_tool_is_reported() {
    let env = TestEnv::trusted();
    let undeclared = package_with(
        &env,
        guests::HTTP_PROBE_PACKAGE,
        "http = [\"http://127.0.0.1:*\"]\n\n[tools.get]\nuses = [\"env\"]\n",
    );
    let out = install(&env, &undeclared, true);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("tools.get uses env, which [capabilities] does not declare"), "{}", stderr(&out));
    let unknown = package_with(
        &env,
        guests::HTTP_PROBE_PACKAGE,
        "http = [\"http://127.0.0.1:*\"]\n\n[tools.fecth]\nuses = [\"http\"]\n",
    );
    let out = env.clat(&["plugin", "test", unknown.to_str().unwrap(), "--grant"]);
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("clat-plugin.toml has [tools.fecth], but the plugin lists no tool fecth"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_refused_grant_names_the_users_own_command_with_grant_and_that_command_works() {
    let server = HttpServer::start();
    let env = TestEnv::trusted();
    let package = probe_using(&env, "[tools.get]\nuses = [\"http\"]\n");
    let arguments = json!({ "url": server.url("/json") }).to_string();
    let out = env.clat(&["plugin", "call", package.to_str().unwrap(), "get", &arguments, "--mode", "full-access"]);
    assert!(!out.status.success());
    let message = stderr(&out);
    // A trial installs nothing anyway: what did not happen is the call.
    assert!(message.contains("; nothing was run.") && !message.contains("nothing was installed"), "{message}");
    let retry = message
        .split('`')
        .find(|part| part.contains(" plugin call ") && part.ends_with(" --grant"))
        .unwrap_or_else(|| panic!("the refusal names a retry: {message}"));
    let words = shlex::split(retry).expect("the retry is one shell command line");
    assert_eq!(words[0], "clat");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .args(&words[1..])
        .env_remove("CLAT_HOME")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "the named retry works: {retry}\n{}", stderr(&out));
    assert!(stdout(&out).contains("\"status\": 200"), "{}", stdout(&out));
}
