//! The GLM Coding Plan pack: with GLM 5.3 on the Coding Plan endpoint and its
//! key at mount, four servers join in memory — three over HTTP with the key as
//! a bearer token (pointed at a local test server with `CLAT_GLM_MCP_BASE_URL`),
//! and `glm-vision` through `npx` with the key in its environment (a stand-in
//! `npx` on PATH records what it was given and runs the stdio test server).
//! A same-named `mcp.json` entry wins; the key is never written anywhere.

mod support;

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};
use support::{HttpServer, TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;
const KEY: &str = "glm-test-key-0123456789abcdef";

/// A GLM 5.3 Coding Plan model configuration, and a fake `npx` directory.
fn glm_env(env: &TestEnv) -> std::path::PathBuf {
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("config.json"),
        json!({ "model": { "base_url": "https://api.z.ai/api/coding/paas/v4", "model": "glm-5.3",
                           "api_key_env": "GLM_TEST_API_KEY" } })
        .to_string(),
    )
    .unwrap();
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let record = env.dir.path().join("npx-record");
    let npx = bin.join("npx");
    std::fs::write(
        &npx,
        format!(
            "#!/bin/sh\necho \"args: $*\" > '{record}'\necho \"mode: $Z_AI_MODE\" >> '{record}'\n\
             echo \"key: $Z_AI_API_KEY\" >> '{record}'\nexec '{SERVER}' --tools 2\n",
            record = record.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn path_with(bin: &std::path::Path) -> String {
    format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default())
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

#[test]
fn the_pack_joins_at_mount_with_the_key_in_memory_only() {
    let env = TestEnv::trusted();
    let bin = glm_env(&env);
    // The test server requires the pack's bearer token.
    let provider = HttpServer::start(&["--require-auth", KEY]);
    let base = provider.url.trim_end_matches("/mcp").to_string();
    let path = path_with(&bin);
    let vars = [("GLM_TEST_API_KEY", KEY), ("CLAT_GLM_MCP_BASE_URL", base.as_str()), ("PATH", path.as_str())];
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains(KEY) && !stderr(&out).contains(KEY), "the key is never printed");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let server = |name: &str| v["servers"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned();
    for name in ["glm-search", "glm-reader", "glm-zread"] {
        let s = server(name).unwrap_or_else(|| panic!("{name} in {v}"));
        assert_eq!((s["transport"].as_str(), s["state"].as_str()), (Some("streamable-http"), Some("ready")), "{s}");
    }
    let vision = server("glm-vision").unwrap();
    assert_eq!((vision["transport"].as_str(), vision["state"].as_str()), (Some("stdio"), Some("ready")), "{vision}");
    let record = std::fs::read_to_string(env.dir.path().join("npx-record")).unwrap();
    assert!(record.contains("args: -y @z_ai/mcp-server@latest"), "{record}");
    assert!(record.contains("mode: ZAI") && record.contains(&format!("key: {KEY}")), "{record}");
    // Each HTTP server was reached on its own path, with the bearer token (the server refuses it otherwise).
    let log = provider.log();
    for path in ["/api/mcp/web_search_prime/mcp", "/api/mcp/web_reader/mcp", "/api/mcp/zread/mcp"] {
        assert!(log.iter().any(|l| *l == format!("REQUEST POST {path}")), "{path} in {log:?}");
    }

    let out = env.clat_with_env(&["call", "mcp_glm_search_echo", r#"{"q":"hi"}"#, "--mode", "full-access"], &vars);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Nothing under CLAT_HOME holds the key (no mcp.json was written).
    assert!(!env.home.join("mcp.json").exists());
    for file in files_under(&env.home) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "{} holds the key", file.display());
    }
}

#[test]
fn a_same_named_user_entry_wins_and_other_models_get_no_pack() {
    let env = TestEnv::trusted();
    let bin = glm_env(&env);
    let provider = HttpServer::start(&["--require-auth", KEY]);
    let base = provider.url.trim_end_matches("/mcp").to_string();
    env.write_mcp_config(json!({ "glm-search": { "command": SERVER, "args": ["--tools", "1"] } }));
    let path = path_with(&bin);
    let vars = [("GLM_TEST_API_KEY", KEY), ("CLAT_GLM_MCP_BASE_URL", base.as_str()), ("PATH", path.as_str())];
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let search = v["servers"].as_array().unwrap().iter().find(|s| s["name"] == "glm-search").unwrap();
    assert_eq!(search["transport"], "stdio", "the user's entry replaced the pack's: {v}");
    assert_eq!(v["configured"], 4);

    // Without the key, or with another model, there is no pack.
    let out =
        env.clat_with_env(&["mcp", "--json"], &[("CLAT_GLM_MCP_BASE_URL", base.as_str()), ("PATH", path.as_str())]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["configured"], 1, "no key, no pack: {v}");
    let vars = [("GLM_TEST_API_KEY", KEY), ("CLAT_MODEL", "gpt-4o-mini"), ("PATH", path.as_str())];
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["configured"], 1, "another model, no pack: {v}");
}

#[test]
fn a_malformed_same_named_entry_still_replaces_the_pack_server() {
    let env = TestEnv::trusted();
    let bin = glm_env(&env);
    let provider = HttpServer::start(&["--require-auth", KEY]);
    let base = provider.url.trim_end_matches("/mcp").to_string();
    // A typo: `comand`. The user meant to replace glm-search; the pack's keyed server must not start.
    env.write_mcp_config(json!({ "glm-search": { "comand": SERVER } }));
    let path = path_with(&bin);
    let vars = [("GLM_TEST_API_KEY", KEY), ("CLAT_GLM_MCP_BASE_URL", base.as_str()), ("PATH", path.as_str())];
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows: Vec<&Value> = v["servers"].as_array().unwrap().iter().filter(|s| s["name"] == "glm-search").collect();
    assert_eq!(rows.len(), 1, "one row for glm-search: {v}");
    assert_eq!(rows[0]["state"], "failed", "{v}");
    assert!(rows[0]["problems"][0].as_str().unwrap().contains("comand"), "{v}");
    let log = provider.log();
    assert!(!log.iter().any(|l| l.contains("web_search_prime")), "the pack's glm-search was contacted: {log:?}");
    assert!(log.iter().any(|l| l.contains("web_reader")), "the rest of the pack still joins: {log:?}");
}

#[test]
fn an_installed_package_named_like_a_pack_server_replaces_it() {
    let env = TestEnv::trusted();
    let bin = glm_env(&env);
    let provider = HttpServer::start(&["--require-auth", KEY]);
    let base = provider.url.trim_end_matches("/mcp").to_string();
    env.install_test_server_package("glm-search", &["--tools", "1"]);
    let path = path_with(&bin);
    let vars = [("GLM_TEST_API_KEY", KEY), ("CLAT_GLM_MCP_BASE_URL", base.as_str()), ("PATH", path.as_str())];
    let out = env.clat_with_env(&["mcp", "--json"], &vars);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows: Vec<&Value> = v["servers"].as_array().unwrap().iter().filter(|s| s["name"] == "glm-search").collect();
    assert_eq!(rows.len(), 1, "one glm-search, not the package beside the pack's: {v}");
    assert_eq!((&rows[0]["transport"], &rows[0]["state"]), (&json!("stdio"), &json!("ready")), "{v}");
    assert!(
        !provider.log().iter().any(|l| l.contains("web_search_prime")),
        "the pack's keyed server was contacted: {:?}",
        provider.log()
    );
}
