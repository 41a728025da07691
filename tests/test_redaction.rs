//! No key-shaped value and no configured secret reaches what `clat` prints:
//! a server's failure text in `problems` (`clat mcp`, `clat tools`, with and
//! without `--json`), and a configured `env` value the server echoes on its
//! stderr (the tail shown for a failed server).

mod support;

use serde_json::json;
use support::{TestEnv, stderr, stdout};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

/// What `clat mcp` and `clat tools` print, in both forms; the server of each
/// test fails on purpose, so `clat mcp` exits 7 and `clat tools` 0.
fn everything_printed(env: &TestEnv) -> String {
    let mut all = String::new();
    for args in [&["mcp"][..], &["mcp", "--json"], &["tools"], &["tools", "--json"]] {
        let out = env.clat(args);
        let expected = if args[0] == "mcp" { 7 } else { 0 };
        assert_eq!(out.status.code(), Some(expected), "{args:?}: {}", stderr(&out));
        all.push_str(&stdout(&out));
        all.push_str(&stderr(&out));
    }
    all
}

#[test]
fn a_listing_error_that_carries_a_key_is_redacted_everywhere_it_is_shown() {
    let env = TestEnv::trusted();
    let error = "upstream refused: api_key=sk-proj-abcdefghijklmnop1234 (Authorization: Bearer abcdef1234567890)";
    env.write_mcp_config(json!({ "leaky": { "command": SERVER, "args": ["--list-error", error] } }));
    let all = everything_printed(&env);
    assert!(all.contains("tools/list failed") && all.contains("upstream refused"), "{all}");
    for secret in ["sk-proj-abcdefghijklmnop1234", "abcdef1234567890"] {
        assert!(!all.contains(secret), "{secret} was printed: {all}");
    }
    assert!(all.contains("[REDACTED]"), "{all}");
}

#[test]
fn a_configured_env_value_echoed_on_stderr_is_scrubbed_from_the_tail() {
    let env = TestEnv::trusted();
    env.write_mcp_config(json!({ "echoing": {
        "command": SERVER,
        "args": ["--echo-env", "DATA_DIR", "--offer", "1999-01-01"],
        "env": { "DATA_DIR": "plain-looking-value-42" }
    } }));
    let all = everything_printed(&env);
    assert!(all.contains("config DATA_DIR=[REDACTED]"), "the tail is shown, scrubbed: {all}");
    assert!(!all.contains("plain-looking-value-42"), "{all}");
}

#[test]
fn a_glm_key_is_redacted_though_no_entry_configured_it() {
    let env = TestEnv::trusted();
    let key = "0123456789abcdef0123456789abcdef.AbCdEfGh12345678";
    env.write_mcp_config(json!({ "leaky": { "command": SERVER, "args": ["--list-error", format!("upstream said key {key} is out of credit")] } }));
    let all = everything_printed(&env);
    assert!(all.contains("upstream said key [REDACTED] is out of credit"), "{all}");
    assert!(!all.contains(key), "{all}");
}
