//! `mcp.json` parsing and expansion, driven with files as users write them.

use super::*;

const BOUNDS: TimeoutBounds = TimeoutBounds { startup: Duration::from_secs(20), tool_call: Duration::from_secs(120) };

fn parse(text: &str) -> Result<McpConfig, ConfigError> {
    parse_config("mcp.json", text, &BOUNDS)
}

#[test]
fn an_entry_names_every_variable_it_would_read() {
    let c = parse(
        r#"{ "a": { "command": "${BIN}", "args": ["--key=${env:API_KEY}", "$${NOT_ONE}", "${input:tok}",
                                               "${WITH:-default}", "$HOME"],
                    "env": { "X": "${SECRET}" }, "cwd": "${DIR}" },
             "b": { "url": "https://${HOST}/mcp", "headers": { "Authorization": "Bearer ${TOKEN}" },
                    "oauth": { "client_secret": "${CLIENT_SECRET}" } } }"#,
    )
    .unwrap();
    let names = |server: &str| c.servers[server].variables().into_iter().collect::<Vec<_>>();
    assert_eq!(names("a"), ["API_KEY", "BIN", "DIR", "SECRET", "WITH"]);
    assert_eq!(names("b"), ["CLIENT_SECRET", "HOST", "TOKEN"]);
}

#[test]
fn an_http_entry_may_carry_oauth_and_its_secret_is_expanded() {
    let c = parse(
        r#"{ "gh": { "url": "https://mcp.example/mcp",
                     "oauth": { "client_id": "cid", "client_secret": "${GH_SECRET}", "scopes": ["repo", "read:org"], "callback_port": 8765 } },
             "cc": { "url": "https://m.example/mcp", "oauth": { "grant": "client_credentials" } },
             "odd": { "url": "https://o.example/mcp", "oauth": { "clientid": "x" } },
             "stdio": { "command": "x", "oauth": {} } }"#,
    )
    .unwrap();
    let env = |k: &str| (k == "GH_SECRET").then(|| "gh-secret-value-123".to_string());
    let gh = c.servers["gh"].expand(&env).unwrap();
    let EntryTransport::Http { oauth: Some(oauth), .. } = &gh.entry.transport else { panic!() };
    assert_eq!(oauth.client_secret.as_deref(), Some("gh-secret-value-123"));
    assert_eq!(oauth.scopes, ["repo", "read:org"]);
    assert_eq!(oauth.callback_port, Some(8765));
    assert!(gh.substituted.contains(&"gh-secret-value-123".to_string()), "the secret is redacted");
    assert!(!format!("{:?}", gh.entry).contains("gh-secret-value-123"));
    let errors: Vec<String> = c.errors.iter().map(|e| e.to_string()).collect();
    assert!(
        errors.iter().any(|e| e.contains("\"cc\"") && e.contains("needs `client_id` and `client_secret`")),
        "{errors:?}"
    );
    assert!(errors.iter().any(|e| e.contains("\"odd\"") && e.contains("clientid")), "{errors:?}");
    assert!(
        errors.iter().any(|e| e.contains("\"stdio\"") && e.contains("`oauth` applies to `url` entries only")),
        "{errors:?}"
    );
}

#[test]
fn the_spec_example_parses() {
    let text = r#"{
      "filesystem": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
      "memory": { "command": "mcp-memory", "env": { "STORE": "/data" }, "cwd": "mcp-work" },
      "web-search": { "url": "https://example.com/mcp", "headers": { "Authorization": "Bearer YOUR_API_KEY" } }
    }"#;
    let c = parse(text).unwrap();
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    assert_eq!(c.servers.len(), 3);
    assert!(matches!(&c.servers["memory"].transport,
        EntryTransport::Stdio { cwd: Some(cwd), env, env_inherit: true, .. } if cwd == "mcp-work" && env["STORE"] == "/data"));
    assert!(matches!(&c.servers["web-search"].transport, EntryTransport::Http { headers, .. } if headers.len() == 1));
}

#[test]
fn the_wrapper_shape_and_the_common_keys_parse() {
    let text = r#"{ "mcpServers": {
        "everything": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"] },
        "remote": { "type": "streamable-http", "url": "${BASE:-https://example.com}/mcp", "disabled": true },
        "tuned": { "command": "x", "startup_timeout_sec": 5, "tool_timeout_sec": 30.5,
                   "enabled_tools": ["a", "b"], "disabled_tools": ["b"], "env_inherit": false }
    } }"#;
    let c = parse(text).unwrap();
    assert!(c.errors.is_empty(), "{:?}", c.errors);
    assert!(c.servers["everything"].enabled);
    assert!(!c.servers["remote"].enabled);
    let tuned = &c.servers["tuned"];
    assert_eq!(tuned.startup_timeout, Some(Duration::from_secs(5)));
    assert_eq!(tuned.tool_timeout, Some(Duration::from_millis(30_500)));
    let is = |tool: &'static str| move |name: &str| name == tool;
    assert!(tuned.tools.allows(is("a")) && !tuned.tools.allows(is("b")) && !tuned.tools.allows(is("c")));
    assert_eq!(tuned.tools.unknown(|name| ["a", "c"].contains(&name)), ["b"]);
    assert!(matches!(tuned.transport, EntryTransport::Stdio { env_inherit: false, .. }));
}

#[test]
fn always_load_and_defer_loading_take_the_shapes_other_agents_write() {
    let text = r#"{ "mcpServers": {
        "claude": { "command": "x", "alwaysLoad": true },
        "some": { "command": "x", "always_load": ["search_issues"], "defer_loading": true },
        "later": { "url": "https://a.example/mcp", "deferLoading": true },
        "plain": { "command": "x" },
        "both": { "command": "x", "always_load": true, "defer_loading": true },
        "word": { "command": "x", "always_load": "yes" },
        "empty": { "command": "x", "always_load": [""] }
    } }"#;
    let c = parse(text).unwrap();
    assert_eq!(c.servers["claude"].loading, Loading { always_load: AlwaysLoad::All(true), defer_loading: false });
    let some = &c.servers["some"].loading;
    assert!(some.defer_loading && some.always_load == AlwaysLoad::Tools(vec!["search_issues".into()]));
    assert!(some.always_load.covers(|n| n == "search_issues") && !some.always_load.covers(|n| n == "other"));
    assert!(c.servers["later"].loading.defer_loading);
    assert_eq!(c.servers["plain"].loading, Loading::default());
    let errors: Vec<String> = c.errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("\"both\"") && e.contains("disagree")), "{errors:?}");
    assert!(
        errors.iter().any(|e| e.contains("\"word\"") && e.contains("`always_load`: expected true, false")),
        "{errors:?}"
    );
    assert!(errors.iter().any(|e| e.contains("\"empty\"") && e.contains("empty tool name")), "{errors:?}");
}

#[test]
fn bad_entries_are_named_with_their_position_and_isolated() {
    let text = "{ \"both\": { \"command\": \"x\", \"url\": \"https://a\" },\n  \"neither\": { \"args\": [] },\n  \
                \"good\": { \"command\": \"ok\" },\n  \"weird\": { \"command\": \"x\", \"timeout\": 1 },\n  \
                \"ftp\": { \"url\": \"ftp://x\" },\n  \"typed\": { \"command\": \"x\", \"args\": [\"a\", 3] },\n  \
                \"old\": { \"type\": \"sse\", \"url\": \"https://a\" },\n  \"slow\": { \"command\": \"x\", \"startup_timeout_sec\": 30 } }";
    let c = parse(text).unwrap();
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["good"]);
    let message = |name: &str| {
        c.errors
            .iter()
            .find(|e| matches!(e, ConfigError::Entry { name: n, .. } if n == name))
            .unwrap_or_else(|| panic!("no error for {name}: {:?}", c.errors))
            .to_string()
    };
    assert_eq!(c.errors.len(), 7);
    assert!(message("both").starts_with("mcp.json:1:") && message("both").contains("not both"), "{}", message("both"));
    assert!(message("neither").starts_with("mcp.json:2:") && message("neither").contains("exactly one transport"));
    assert!(
        message("weird").starts_with("mcp.json:4:41: entry \"weird\"")
            && message("weird").contains("unknown key `timeout`; the nearest known key is `tool_timeout_sec`"),
        "{}",
        message("weird")
    );
    assert!(message("ftp").contains("http:// or https://"));
    assert!(message("typed").starts_with("mcp.json:6:") && message("typed").contains("`args[1]`: invalid type"));
    assert!(message("old").contains("deprecated HTTP+SSE"));
    assert!(message("slow").contains("`startup_timeout_sec` 30 is past the 20 s startup maximum"));
    let long_calls = parse(r#"{ "l": { "command": "x", "tool_timeout_sec": 121 } }"#).unwrap();
    assert!(long_calls.errors[0].to_string().contains("`tool_timeout_sec` 121 is past the 120 s tool-call limit"));
    let at_the_limits = parse(r#"{ "l": { "command": "x", "tool_timeout_sec": 120, "startup_timeout_sec": 20 } }"#);
    assert!(at_the_limits.unwrap().errors.is_empty(), "the limits themselves are allowed");
    let err = parse(r#"{ "n": { "command": "x", "tool_timeout_sec": 1e400 } }"#).unwrap_err();
    assert!(err.to_string().contains("malformed"), "a number out of range: {err}");
    let err = parse("{\n  \"a\": {,}\n}").unwrap_err();
    assert!(err.to_string().starts_with("mcp.json is malformed at line 2"), "{err}");
    let err = parse(r#"{ "mcpServers": { "a": { "command": "x" } }, "b": { "command": "y" } }"#).unwrap_err();
    assert!(err.to_string().contains("mixes the two shapes") && err.to_string().contains("\"b\""), "{err}");
    assert!(nearest_key("disabledTools") == "disabled_tools" && nearest_key("comand") == "command");
}

#[test]
fn vs_code_s_servers_wrapper_is_read_and_an_input_reference_is_given_or_refused_clearly() {
    let c = parse(
        r#"{ "inputs": [{ "type": "promptString", "id": "key", "password": true }],
             "servers": { "gh": { "type": "http", "url": "https://api.example/mcp",
                                  "headers": { "Authorization": "Bearer ${input:key}" } },
                          "local": { "command": "npx", "args": ["-y", "pkg"] } } }"#,
    )
    .unwrap();
    assert_eq!(c.servers.keys().collect::<Vec<_>>(), ["gh", "local"]);
    let err = c.servers["gh"].expand(&|_| None).unwrap_err();
    assert!(
        err.to_string().contains("`headers.Authorization` uses ${input:key}, a VS Code input")
            && err.to_string().contains("${env:NAME}"),
        "{err}"
    );
    // A value given for the input (the host's lookup answers `input:ID`) is substituted, and is a secret.
    let given = c.servers["gh"].expand(&|k| (k == "input:key").then(|| "s3cret-token".to_string())).unwrap();
    match &given.entry.transport {
        EntryTransport::Http { headers, .. } => assert_eq!(headers["Authorization"], "Bearer s3cret-token"),
        other => panic!("{other:?}"),
    }
    assert_eq!(given.substituted, ["s3cret-token"]);
    let flat = parse(r#"{ "servers": { "command": "x" } }"#).unwrap();
    assert!(flat.servers.contains_key("servers"), "a flat file's server named servers stays a server");
    let err = parse(r#"{ "servers": { "a": { "command": "x" } }, "b": { "command": "y" } }"#).unwrap_err();
    assert!(err.to_string().contains("mixes the two shapes") && err.to_string().contains("`servers`"), "{err}");
}

#[test]
fn variables_expand_per_field_and_a_missing_one_names_itself_never_a_value() {
    let c = parse(
        r#"{ "s": { "command": "run-${TOOL}", "args": ["--key=${KEY}", "$$HOME", "${UNSET:-fallback}", "$x", "pa$$word", "$${KEY}", "a ${ b", "${}", "${1X}", "$"],
                    "env": { "TOKEN": "${KEY}" }, "cwd": "${DIR:-work}" },
             "h": { "url": "${BASE}/mcp", "headers": { "Authorization": "Bearer ${KEY}" } },
             "missing": { "url": "https://a", "headers": { "X-Key": "${NOPE}" } },
             "bad": { "command": "${}" } }"#,
    )
    .unwrap();
    let env = |k: &str| match k {
        "TOOL" => Some("server".to_string()),
        "KEY" => Some("sk-secret-value-123".to_string()),
        "BASE" => Some("http://127.0.0.1:9".to_string()),
        _ => None,
    };
    let s = c.servers["s"].expand(&env).unwrap();
    let EntryTransport::Stdio { command, args, env: vars, cwd, .. } = &s.entry.transport else { panic!() };
    assert_eq!(command, "run-server");
    assert_eq!(
        args,
        &["--key=sk-secret-value-123", "$$HOME", "fallback", "$x", "pa$$word", "${KEY}", "a ${ b", "${}", "${1X}", "$"]
    );
    assert_eq!(vars["TOKEN"], "sk-secret-value-123");
    assert_eq!(cwd.as_deref(), Some("work"));
    assert!(s.substituted.contains(&"sk-secret-value-123".to_string()));
    let h = c.servers["h"].expand(&env).unwrap();
    assert!(matches!(&h.entry.transport, EntryTransport::Http { url, headers, .. }
        if url == "http://127.0.0.1:9/mcp" && headers["Authorization"] == "Bearer sk-secret-value-123"));
    let err = c.servers["missing"].expand(&env).unwrap_err();
    assert_eq!(err.to_string(), "`headers.X-Key` uses ${NOPE}, which is not set and has no default");
    let bad = c.servers["bad"].expand(&env).unwrap();
    assert!(matches!(&bad.entry.transport, EntryTransport::Stdio { command, .. } if command == "${}"));
    let climbing = parse(
        r#"{ "up": { "command": "x", "cwd": "a/../../etc" }, "ok": { "command": "x", "cwd": "a/../b" },
                             "var": { "command": "x", "cwd": "${UP}" }, "abs": { "command": "x", "cwd": "/srv/x" } }"#,
    )
    .unwrap();
    assert!(climbing.errors[0].to_string().contains("`cwd` climbs out of CLAT's home"), "{:?}", climbing.errors);
    assert_eq!(climbing.servers.keys().collect::<Vec<_>>(), ["abs", "ok", "var"]);
    let up = |_: &str| Some("../..".to_string());
    assert_eq!(climbing.servers["var"].expand(&up).unwrap_err(), ExpandError::CwdLeavesHome);
    let not_http = parse(r#"{ "u": { "url": "${BASE}" } }"#).unwrap();
    let err = not_http.servers["u"].expand(&|_| Some("ftp://x".into())).unwrap_err();
    assert!(!err.to_string().contains("ftp"), "never a value: {err}");
}
