//! OAuth for remote MCP servers against the test server's `--oauth` mode (an
//! OAuth-protected MCP server and its own authorization server, on
//! 127.0.0.1): `clat mcp login` through a scripted browser, `clat call` with
//! the kept token, refresh without the user, the headless failure that says
//! how to log in, logout; and, on the library, step-up, a redirect with a
//! wrong `state`, and a revoked refresh token. No token or secret reaches any
//! output.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use clat_mcp::auth::{AuthError, Authorizer, CredentialStore, MemoryStore, OAuthSettings, ScriptedBrowser, Step};
use clat_mcp::{ClientError, ClientInfo, HttpSpec, NoServerRequests, Opening, Session, Target};
use serde_json::json;
use support::{HttpServer, TestEnv, stderr};

const BROWSER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/scripted-browser.py");

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn credential_files(env: &TestEnv) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(env.home.join("credentials")) {
        Ok(dir) => dir.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect(),
        Err(_) => vec![],
    }
}

#[test]
fn login_then_call_refreshes_without_the_user_and_logout_forgets() {
    // Tokens live 1 s: every later command refreshes before it calls.
    let server = HttpServer::start(&["--oauth", "--token-ttl", "1"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url } }));
    let mut outputs = Vec::new();

    // Headless, before any login: the server fails at once, saying how to log in.
    let out = env.clat(&["call", "mcp_web_echo", r#"{"a":1}"#, "--mode", "full-access"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("run `clat mcp login web`"), "{}", text(&out));
    assert!(credential_files(&env).is_empty());
    outputs.push(text(&out));

    let out = env.clat_with_env(&["mcp", "login", "web"], &[("BROWSER", BROWSER)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("logged in to web at http://127.0.0.1:") && said.contains("/as as client client-"), "{said}");
    assert!(said.contains("mcp:read"), "the challenge's scope was asked for: {said}");
    outputs.push(text(&out));

    // One 0600 file in a 0700 directory, holding the token.
    let files = credential_files(&env);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(env.home.join("credentials")).unwrap().permissions().mode() & 0o777, 0o700);
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let first_token = stored["access_token"].as_str().unwrap().to_string();
    assert!(stored["refresh_token"].as_str().is_some_and(|t| t.starts_with("refresh-token-")));
    assert_eq!(stored["resource"], server.url.as_str());

    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out = env.clat(&["call", "mcp_web_echo", r#"{"over":"oauth"}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{\"over\":\"oauth\"}\n");
    outputs.push(text(&out));
    assert!(server.log().iter().any(|l| l == "TOKEN grant=refresh_token"), "{:?}", server.log());
    let refreshed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_ne!(refreshed["access_token"].as_str().unwrap(), first_token, "the refreshed token was kept");

    // The login shows in `clat mcp` and `clat mcp get`, never the token.
    let out = env.clat(&["mcp", "--json"]);
    let status: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    let web = &status["servers"][0];
    assert_eq!(web["state"], "ready", "{status}");
    assert!(web["oauth"]["issuer"].as_str().unwrap().ends_with("/as"), "{status}");
    assert_eq!(web["oauth"]["scopes"], json!(["mcp:read"]));
    assert_eq!(web["oauth"]["refreshable"], true);
    outputs.push(text(&out));
    let out = env.clat(&["mcp", "get", "web"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("logged in at http://127.0.0.1:"), "{}", text(&out));
    outputs.push(text(&out));

    let out = env.clat(&["mcp", "logout", "web"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "logged out of web\n", "{}", text(&out));
    assert!(credential_files(&env).is_empty());
    let out = env.clat(&["call", "mcp_web_echo", "{}", "--mode", "full-access"]);
    assert!(text(&out).contains("run `clat mcp login web`"), "{}", text(&out));
    outputs.push(text(&out));

    for token in [
        first_token.as_str(),
        refreshed["access_token"].as_str().unwrap(),
        refreshed["refresh_token"].as_str().unwrap(),
    ] {
        for output in &outputs {
            assert!(!output.contains(token), "a token reached an output: {output}");
        }
    }
}

#[test]
fn a_pre_registered_client_logs_in_and_its_secret_reaches_no_output() {
    let server = HttpServer::start(&["--oauth"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url,
        "oauth": { "client_id": "pre-client", "client_secret": "${WEB_SECRET}", "scopes": ["mcp:read"] } } }));
    let secret = ("WEB_SECRET", "sekrit-client-secret-4242");
    let mut outputs = Vec::new();
    let out = env.clat_with_env(&["mcp", "login", "web"], &[("BROWSER", BROWSER), secret]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("as client pre-client"), "{}", text(&out));
    assert!(!server.log().iter().any(|l| l.contains("/as/register")), "a configured client is not registered again");
    outputs.push(text(&out));
    for args in [&["mcp", "get", "web"][..], &["mcp", "get", "web", "--json"], &["mcp", "--json"]] {
        let out = env.clat_with_env(args, &[secret]);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
        outputs.push(text(&out));
    }
    let out = env.clat_with_env(&["call", "mcp_web_echo", "{}", "--mode", "full-access"], &[secret]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    outputs.push(text(&out));
    for output in &outputs {
        assert!(!output.contains(secret.1), "the client secret reached an output: {output}");
    }
}

/// Run `clat` commands one after another on a private D-Bus session with a
/// fresh gnome-keyring (its data under `dir`): the OS keyring as a desktop has
/// it, never the user's. Each command's exit code and output land in `dir`.
fn in_private_keyring(env: &TestEnv, dir: &std::path::Path, commands: &[(&str, &[&str])]) {
    let keyring_daemon = ["gnome-keyring-daemon", "dbus-run-session"];
    for tool in keyring_daemon {
        assert!(
            std::process::Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap()
                .status
                .success(),
            "{tool} is missing: scripts/install-test-peers.sh installs it"
        );
    }
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut script =
        String::from("printf keyring-test-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null\n");
    for (label, args) in commands {
        let command = env.clat_command(args);
        let words: Vec<String> = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|w| format!("'{}'", w.to_string_lossy().replace('\'', "'\\''")))
            .collect();
        script.push_str(&format!("{} > \"$OUT/{label}.out\" 2>&1; echo $? > \"$OUT/{label}.rc\"\n", words.join(" ")));
    }
    let session = std::process::Command::new("dbus-run-session")
        .args(["--", "sh", "-c", &script])
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_RUNTIME_DIR", &run)
        .env("OUT", dir)
        .env("BROWSER", BROWSER)
        .env("CLAT_CREDENTIAL_STORE", "keyring")
        .env_remove("CLAT_HOME")
        .output()
        .unwrap();
    assert!(session.status.success(), "{}", String::from_utf8_lossy(&session.stderr));
}

fn ran(dir: &std::path::Path, label: &str) -> (i32, String) {
    let rc = std::fs::read_to_string(dir.join(format!("{label}.rc"))).unwrap_or_default();
    (rc.trim().parse().unwrap_or(-1), std::fs::read_to_string(dir.join(format!("{label}.out"))).unwrap_or_default())
}

#[test]
fn with_an_os_keyring_the_token_lives_there_and_no_file_is_written() {
    let server = HttpServer::start(&["--oauth"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url } }));
    let dir = tempfile::tempdir().unwrap();
    let call = ["call", "mcp_web_echo", r#"{"k":1}"#, "--mode", "full-access"];
    in_private_keyring(
        &env,
        dir.path(),
        &[
            ("login", &["mcp", "login", "web"]),
            ("call", &call),
            ("status", &["mcp", "--json"]),
            ("logout", &["mcp", "logout", "web"]),
            ("after", &call),
        ],
    );
    let (rc, out) = ran(dir.path(), "login");
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("logged in to web at http://127.0.0.1:"), "{out}");
    assert!(credential_files(&env).is_empty(), "the keyring holds the token; no file is written");
    let (rc, out) = ran(dir.path(), "call");
    assert_eq!((rc, out.as_str()), (0, "{\"k\":1}\n"));
    let (rc, out) = ran(dir.path(), "status");
    assert_eq!(rc, 0, "{out}");
    assert!(out.contains("\"refreshable\":true"), "{out}");
    assert!(!out.contains("access-token-"), "{out}");
    assert_eq!(ran(dir.path(), "logout"), (0, "logged out of web\n".to_string()));
    let (rc, out) = ran(dir.path(), "after");
    assert_ne!(rc, 0);
    assert!(out.contains("run `clat mcp login web`"), "the keyring entry is gone: {out}");
    assert!(credential_files(&env).is_empty());
}

fn client() -> ClientInfo {
    ClientInfo { name: "oauth-test".into(), version: "0".into() }
}

fn authorizer(url: &str, store: Arc<dyn CredentialStore>, browser: bool) -> Arc<Authorizer> {
    authorizer_with(url, store, browser, OAuthSettings::default())
}

fn authorizer_with(
    url: &str,
    store: Arc<dyn CredentialStore>,
    browser: bool,
    settings: OAuthSettings,
) -> Arc<Authorizer> {
    let browser: Option<Arc<dyn clat_mcp::auth::Browser>> =
        if browser { Some(Arc::new(ScriptedBrowser::new().unwrap())) } else { None };
    Arc::new(Authorizer::new("web", url, settings, store, browser).unwrap())
}

/// A session through `auth`, or why there is none.
async fn connect(url: &str, auth: &Arc<Authorizer>) -> Result<Session, ClientError> {
    Session::connect(&Target::Http(spec(url, auth)), Opening::new(Arc::new(NoServerRequests), client(), json!({})))
        .await
}

/// Connecting through `auth` fails; the error.
async fn connect_fails(url: &str, auth: &Arc<Authorizer>) -> ClientError {
    match connect(url, auth).await {
        Ok(_) => panic!("connecting to {url} was expected to fail"),
        Err(e) => e,
    }
}

fn spec(url: &str, auth: &Arc<Authorizer>) -> HttpSpec {
    HttpSpec { url: url.to_string(), headers: vec![], auth: Some(Arc::clone(auth)) }
}

#[tokio::test]
async fn a_403_for_more_scope_logs_in_again_with_the_union_of_scopes() {
    let server = HttpServer::start(&["--oauth"]);
    let store = Arc::new(MemoryStore::default());
    let auth = authorizer(&server.url, store.clone(), true);
    let session = connect(&server.url, &auth).await.unwrap();
    assert_eq!(auth.status().unwrap().scopes, ["mcp:read"]);
    let out = session.call_tool("write_note", json!({}), std::time::Duration::from_secs(20), None).await.unwrap();
    assert!(out.to_string().contains("noted"), "{out}");
    assert_eq!(auth.status().unwrap().scopes, ["mcp:read", "mcp:write"]);
    let logins = server.log().iter().filter(|l| *l == "TOKEN grant=authorization_code").count();
    assert_eq!(logins, 2, "{:?}", server.log());
    session.close().await;
}

#[tokio::test]
async fn a_redirect_with_another_state_is_refused_and_nothing_is_stored() {
    let server = HttpServer::start(&["--oauth", "--wrong-state"]);
    let store = Arc::new(MemoryStore::default());
    let auth = authorizer(&server.url, store.clone(), true);
    let err = connect(&server.url, &auth).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Auth { server, error: AuthError::Failed { step: Step::Redirect, .. } } if server == "web"),
        "{err}"
    );
    assert!(err.to_string().contains("state"), "{err}");
    assert!(store.load().unwrap().is_none());
    assert!(!server.log().iter().any(|l| l.starts_with("TOKEN")), "no code was exchanged");
}

#[tokio::test]
async fn a_revoked_refresh_token_is_dropped_and_a_headless_command_asks_for_a_login() {
    let server = HttpServer::start(&["--oauth", "--token-ttl", "1", "--revoke-refresh"]);
    let store: Arc<MemoryStore> = Arc::new(MemoryStore::default());
    let interactive = authorizer(&server.url, store.clone(), true);
    interactive.login().await.unwrap();
    assert!(store.load().unwrap().is_some());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let headless = authorizer(&server.url, store.clone(), false);
    let err = connect(&server.url, &headless).await.unwrap_err();
    assert!(matches!(&err, ClientError::Auth { error: AuthError::LoginRequired, .. }), "{err}");
    assert!(store.load().unwrap().is_none(), "the revoked refresh token was forgotten");
    assert!(server.log().iter().any(|l| l == "TOKEN grant=refresh_token"), "{:?}", server.log());
}

#[tokio::test]
async fn faults_name_the_server_and_the_step_and_store_nothing() {
    // The token endpoint fails.
    let server = HttpServer::start(&["--oauth", "--token-error"]);
    let store = Arc::new(MemoryStore::default());
    let err = connect_fails(&server.url, &authorizer(&server.url, store.clone(), true)).await;
    assert!(matches!(&err, ClientError::Auth { error: AuthError::Failed { step: Step::Token, .. }, .. }), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("OAuth for web: the token request failed") && text.contains("server_error"), "{text}");
    assert!(store.load().unwrap().is_none());

    // The authorization server's metadata names another issuer: nothing of it is used.
    let server = HttpServer::start(&["--oauth", "--other-issuer"]);
    let err = connect_fails(&server.url, &authorizer(&server.url, store.clone(), true)).await;
    assert!(
        matches!(&err, ClientError::Auth { error: AuthError::Failed { step: Step::ServerMetadata, .. }, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("names the issuer"), "{err}");
    assert!(
        !server.log().iter().any(|l| l.contains("/as/register") || l.contains("/as/authorize")),
        "{:?}",
        server.log()
    );
    assert!(store.load().unwrap().is_none());

    // The configured callback port is taken.
    let server = HttpServer::start(&["--oauth"]);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let settings =
        OAuthSettings { callback_port: Some(taken.local_addr().unwrap().port()), ..OAuthSettings::default() };
    let err = connect_fails(&server.url, &authorizer_with(&server.url, store.clone(), true, settings)).await;
    assert!(matches!(&err, ClientError::Auth { error: AuthError::Failed { step: Step::Redirect, .. }, .. }), "{err}");
    assert!(err.to_string().contains("already in use"), "{err}");
    assert!(store.load().unwrap().is_none());

    // A server that refuses even a fresh token: bounded, then a clear error.
    let server = HttpServer::start(&["--oauth", "--refuse-tokens"]);
    let err = connect_fails(&server.url, &authorizer(&server.url, Arc::new(MemoryStore::default()), true)).await;
    assert!(matches!(&err, ClientError::Auth { error: AuthError::StillRefused { status: 401 }, .. }), "{err}");
    let grants = server.log().iter().filter(|l| l.starts_with("TOKEN")).count();
    assert!((1..=clat_mcp::limits::AUTH_ATTEMPTS_MAX).contains(&grants), "{:?}", server.log());
}

#[tokio::test]
async fn a_401_mid_session_refreshes_and_the_session_goes_on() {
    // The second call finds its token forgotten (as after the server restarted its token store).
    let server = HttpServer::start(&["--oauth", "--forget-tokens-at", "2"]);
    let auth = authorizer(&server.url, Arc::new(MemoryStore::default()), true);
    let session = connect(&server.url, &auth).await.unwrap();
    let long = std::time::Duration::from_secs(20);
    session.call_tool("echo", json!({ "n": 1 }), long, None).await.unwrap();
    let out = session.call_tool("echo", json!({ "n": 2 }), long, None).await.unwrap();
    assert_eq!(out.pointer("/content/0/text"), Some(&json!(r#"{"n":2}"#)), "{out}");
    let log = server.log();
    assert!(log.iter().any(|l| l == "TOKEN grant=refresh_token"), "{log:?}");
    assert_eq!(log.iter().filter(|l| l.starts_with("POST initialize")).count(), 1, "the same session: {log:?}");
    session.close().await;
}

/// A user who takes a while in the browser.
struct SlowBrowser(ScriptedBrowser);

#[async_trait::async_trait]
impl clat_mcp::auth::Browser for SlowBrowser {
    async fn open(&self, url: &reqwest::Url) -> Result<(), clat_mcp::auth::BrowserError> {
        tokio::time::sleep(clat_mcp::limits::MODERN_PROBE_TIMEOUT + std::time::Duration::from_secs(1)).await;
        self.0.open(url).await
    }
}

#[tokio::test]
async fn a_login_longer_than_the_first_request_s_timeout_does_not_cut_it_short() {
    // The modern probe (3 s) is the request that meets the 401: the login inside it does not count.
    let server = HttpServer::start(&["--oauth", "--modern"]);
    let browser: Arc<dyn clat_mcp::auth::Browser> = Arc::new(SlowBrowser(ScriptedBrowser::new().unwrap()));
    let auth = Arc::new(
        Authorizer::new("web", &server.url, OAuthSettings::default(), Arc::new(MemoryStore::default()), Some(browser))
            .unwrap(),
    );
    let session = connect(&server.url, &auth).await.unwrap();
    assert_eq!(session.era, clat_mcp::Era::Modern, "the probe was not cut short into the legacy fallback");
    let logins = server.log().iter().filter(|l| l.starts_with("REQUEST GET /as/authorize")).count();
    assert_eq!(logins, 1, "{:?}", server.log());
    session.close().await;
}

#[tokio::test]
async fn a_token_endpoint_that_never_answers_fails_after_the_auth_http_timeout() {
    let server = HttpServer::start(&["--oauth", "--token-hang"]);
    let store = Arc::new(MemoryStore::default());
    let started = std::time::Instant::now();
    let err = connect_fails(&server.url, &authorizer(&server.url, store.clone(), true)).await;
    assert!(matches!(&err, ClientError::Auth { error: AuthError::Failed { step: Step::Token, .. }, .. }), "{err}");
    assert!(err.to_string().contains("no answer in time"), "{err}");
    assert!(started.elapsed() >= clat_mcp::limits::AUTH_HTTP_TIMEOUT, "it waited the whole bound");
    assert!(store.load().unwrap().is_none());
}

#[tokio::test]
async fn metadata_past_the_auth_body_bound_is_refused() {
    let server = HttpServer::start(&["--oauth", "--huge-metadata"]);
    let err = connect_fails(&server.url, &authorizer(&server.url, Arc::new(MemoryStore::default()), true)).await;
    assert!(
        matches!(&err, ClientError::Auth { error: AuthError::Failed { step: Step::ResourceMetadata, .. }, .. }),
        "{err}"
    );
    let bound = clat_mcp::limits::AUTH_BODY_MAX_BYTES;
    assert!(err.to_string().contains(&format!("more than {bound} bytes")), "{err}");
}

#[tokio::test]
async fn the_redirect_listener_reads_a_bounded_head_and_waits_for_its_callback() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let loopback = clat_mcp::auth::Loopback::bind(0).await.unwrap();
    let address = format!("127.0.0.1:{}", loopback.redirect_uri().port().unwrap());
    let waiting = tokio::spawn(async move { loopback.wait().await });
    // A request far past the bound (no end of head in sight), then another path: neither is the callback.
    let mut flood = tokio::net::TcpStream::connect(&address).await.unwrap();
    let huge = format!(
        "GET /callback?code={} HTTP/1.1\r\n",
        "x".repeat(clat_mcp::limits::AUTH_CALLBACK_REQUEST_MAX_BYTES * 2)
    );
    let _ = flood.write_all(huge.as_bytes()).await;
    // Answered 404 after the bound, or reset for the unread rest: either way not taken for the callback.
    let mut answer = String::new();
    let _ = flood.read_to_string(&mut answer).await;
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 404"), "{answer}");
    let mut other = tokio::net::TcpStream::connect(&address).await.unwrap();
    other.write_all(b"GET /favicon.ico HTTP/1.1\r\n\r\n").await.unwrap();
    let mut answer = String::new();
    other.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(!waiting.is_finished());
    // A connection opened and left silent (a browser's preconnect) does not hold up the callback behind it:
    // the callback is taken while the silent one is still open, well inside its read timeout.
    let _silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    let mut callback = tokio::net::TcpStream::connect(&address).await.unwrap();
    callback.write_all(b"GET /callback?code=abc&state=s%201 HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let query = tokio::time::timeout(clat_mcp::limits::AUTH_CALLBACK_READ_TIMEOUT / 2, waiting)
        .await
        .expect("the callback waited behind the silent connection")
        .unwrap()
        .unwrap();
    assert_eq!(query["code"], "abc");
    assert_eq!(query["state"], "s 1");
}

#[tokio::test]
async fn malformed_metadata_fails_discovery_before_anything_is_registered() {
    let server = HttpServer::start(&["--oauth", "--malformed-metadata"]);
    let store = Arc::new(MemoryStore::default());
    let err = connect_fails(&server.url, &authorizer(&server.url, store.clone(), true)).await;
    assert!(
        matches!(&err, ClientError::Auth { error: AuthError::Failed { step: Step::ResourceMetadata, .. }, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("did not answer JSON"), "{err}");
    assert!(!server.log().iter().any(|l| l.contains("/as/")), "{:?}", server.log());
    assert!(store.load().unwrap().is_none());
}

#[tokio::test]
async fn a_bearer_request_is_never_redirected_to_another_origin() {
    let elsewhere = HttpServer::start(&[]);
    let server = HttpServer::start(&["--oauth", "--redirect", &elsewhere.url]);
    let auth = authorizer(&server.url, Arc::new(MemoryStore::default()), true);
    let err = connect_fails(&server.url, &auth).await;
    assert!(err.to_string().contains("follows redirects only to the same origin"), "{err}");
    assert!(auth.status().is_some(), "it logged in, and its token went nowhere else");
    assert!(elsewhere.log().is_empty(), "the other origin got a request: {:?}", elsewhere.log());
}

#[test]
fn a_401_without_any_oauth_metadata_points_at_the_headers_not_only_at_a_login() {
    // A server that wants an API key (a plain 401, no challenge, no metadata).
    let server = HttpServer::start(&["--require-auth", "the-api-key-123456"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "keyed": { "url": server.url } }));
    let out = env.clat(&["call", "mcp_keyed_echo", "{}", "--mode", "full-access"]);
    assert_ne!(out.status.code(), Some(0));
    let said = text(&out);
    assert!(said.contains("401 Unauthorized") && said.contains("publishes no OAuth metadata"), "{said}");
    assert!(said.contains("mcp.json `headers`"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_401s_cause_one_refresh_and_every_call_is_answered() {
    // The first call finds every token forgotten; the calls beside it meet the same 401.
    let server = HttpServer::start(&["--oauth", "--forget-tokens-at", "1"]);
    let auth = authorizer(&server.url, Arc::new(MemoryStore::default()), true);
    let session = Arc::new(connect(&server.url, &auth).await.unwrap());
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..8 {
        let session = Arc::clone(&session);
        calls.spawn(async move {
            let answer = session.call_tool("echo", json!({ "n": n }), std::time::Duration::from_secs(20), None).await;
            (n, answer)
        });
    }
    while let Some(joined) = calls.join_next().await {
        let (n, answer) = joined.unwrap();
        let answer = answer.unwrap_or_else(|e| panic!("call {n}: {e}"));
        assert_eq!(answer.pointer("/content/0/text"), Some(&json!(format!("{{\"n\":{n}}}"))));
    }
    let log = server.log();
    assert_eq!(log.iter().filter(|l| *l == "TOKEN grant=refresh_token").count(), 1, "{log:?}");
    assert_eq!(log.iter().filter(|l| *l == "TOKEN grant=authorization_code").count(), 1, "{log:?}");
    session.close().await;
}

#[test]
fn logging_in_to_a_server_that_does_not_ask_for_oauth_says_so() {
    let server = HttpServer::start(&[]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "open": { "url": server.url } }));
    let out = env.clat_with_env(&["mcp", "login", "open"], &[("BROWSER", BROWSER)]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out).contains("the server does not ask for OAuth"), "{}", text(&out));
    assert!(credential_files(&env).is_empty());
    assert!(!server.log().iter().any(|l| l.contains("register") || l.contains("authorize")), "{:?}", server.log());
}

/// A browser stand-in that records what it was asked to open (and opens nothing).
fn recording_browser(env: &TestEnv) -> (String, std::path::PathBuf) {
    let (script, opened) = (env.dir.path().join("recording-browser"), env.dir.path().join("opened"));
    std::fs::write(&script, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\n", opened.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script.display().to_string(), opened)
}

#[test]
fn a_login_page_that_is_not_https_never_reaches_the_browser() {
    for (endpoint, scheme) in [
        ("file:///etc/passwd", "file"),
        ("javascript:alert(document.domain)", "javascript"),
        ("smb://attacker.example/share", "smb"),
        ("ms-msdt:/id%20PCWDiagnostic", "ms-msdt"),
        ("http://attacker.example/authorize", "http"),
    ] {
        let server = HttpServer::start(&["--oauth", "--authorization-endpoint", endpoint]);
        let env = TestEnv::trusted();
        env.write_mcp_config(json!({ "web": { "url": server.url } }));
        let (browser, opened) = recording_browser(&env);
        let out = env.clat_with_env(&["mcp", "login", "web"], &[("BROWSER", browser.as_str())]);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(7), "{endpoint}: {said}");
        assert!(said.contains(&format!("`authorization_endpoint` is a {scheme}: URL")), "{endpoint}: {said}");
        assert!(!opened.exists(), "{endpoint} reached the browser: {:?}", std::fs::read_to_string(&opened));
        assert!(!said.contains("Log in on this page"), "no login page is shown: {said}");
        assert!(!server.log().iter().any(|l| l.contains("/as/register")), "nothing was registered: {:?}", server.log());
        assert!(credential_files(&env).is_empty());
    }
}

#[test]
fn a_token_endpoint_on_plain_http_off_loopback_gets_no_code() {
    // A documentation address (RFC 5737): nothing is ever sent there.
    let server = HttpServer::start(&["--oauth", "--token-endpoint", "http://192.0.2.7/as/token"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url } }));
    let (browser, opened) = recording_browser(&env);
    let out = env.clat_with_env(&["mcp", "login", "web"], &[("BROWSER", browser.as_str())]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(7), "{said}");
    assert!(said.contains("`token_endpoint` is a http: URL (192.0.2.7)"), "{said}");
    assert!(!opened.exists(), "no login started, so no code exists to be sent");
    assert!(!server.log().iter().any(|l| l.contains("/as/authorize")), "{:?}", server.log());
}

#[test]
fn a_token_file_others_can_read_is_made_0600_again_with_a_warning() {
    let server = HttpServer::start(&["--oauth"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url } }));
    let out = env.clat_with_env(&["mcp", "login", "web"], &[("BROWSER", BROWSER)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let file = credential_files(&env).pop().unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = env.clat(&["call", "mcp_web_echo", r#"{"a":1}"#, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "the token still works: {}", text(&out));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let said = stderr(&out);
    assert!(said.contains("was readable by others (mode 0644); its mode is now 0600"), "{said}");
    assert!(said.contains(&file.display().to_string()), "the warning names the file: {said}");
}

#[test]
fn the_browser_outlives_the_login_that_opened_it() {
    let server = HttpServer::start(&["--oauth"]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url } }));
    // Like a real opener: it leaves the browser running in the background and returns.
    let (script, pid_file) = (env.dir.path().join("browser"), env.dir.path().join("browser.pid"));
    std::fs::write(
        &script,
        format!("#!/bin/sh\nsleep 300 &\necho $! > '{}'\nexec '{BROWSER}' \"$@\"\n", pid_file.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = env.clat_with_env(&["mcp", "login", "web"], &[("BROWSER", script.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    // Running, not a zombie left by a kill.
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let alive = state.rfind(')').is_some_and(|i| !state[i + 1..].trim_start().starts_with('Z'));
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    assert!(alive, "the browser's process was killed with the login's teardown");
}

#[test]
fn an_unreachable_token_endpoint_is_said_in_words_not_redacted() {
    // A loopback port nothing listens on: allowed, and unreachable.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let token = format!("http://{closed}/as/token");
    let server = HttpServer::start(&["--oauth", "--token-endpoint", &token]);
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "web": { "url": server.url } }));
    let out = env.clat_with_env(&["mcp", "login", "web"], &[("BROWSER", BROWSER)]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(7), "{said}");
    assert!(said.contains("the token endpoint could not be reached"), "{said}");
    assert!(!said.contains("token [REDACTED]"), "{said}");
}
