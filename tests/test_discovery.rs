//! Progressive discovery through the library's front door, on a corpus of
//! 300-odd tools: the three npm reference servers as they are
//! (`server-everything`, `server-filesystem`, `server-memory`), nine servers
//! of 30 tools written for these tests in the manner of servers people
//! install (`tests/fixtures/tool-corpus`: a code host, team chat, a database,
//! a cluster, a browser, mail and calendar, an issue tracker, monitoring, a
//! cloud provider), four WASM plugins and CLAT's native tools.
//!
//! The first turn's offer is the native tools and discovery's own within
//! 8 KiB; a held table of 20 task descriptions is searched and how many find
//! their tool in the first page is printed (and held to a floor); loading a tool offers it, and a deferred tool's call —
//! loaded or through `call_tool` — passes the same pipeline: headless in ask
//! mode, a destructive one is denied; a tool used comes first in later
//! searches; `always_load` and `defer_loading` (in `mcp.json` entries and
//! through `clat plugin load`) pin and defer.

mod support;

use std::time::Duration;

use clat_host::limits::{DISCOVERY_BUDGET_BYTES, SEARCH_RESULTS_DEFAULT, SEARCH_RESULTS_MAX};
use clat_host::platform::discovery::{CALL_TOOL, LOAD_TOOLS, SEARCH_TOOLS};
use clat_host::{
    CallError, Discovery, DiscoveryOptions, MountOptions, PermissionMode, Platform, Project, RunOptions, ToolSource,
};
use serde_json::{Value, json};
use support::{TestEnv, npm_server, stderr};

const SERVER: &str = clat_test_server_artifact::MCP_TEST_SERVER;

/// The servers written for these tests, one file of 30 tool definitions each.
const CORPUS_SERVERS: [&str; 9] =
    ["github", "slack", "postgres", "kubernetes", "browser", "workspace", "tracker", "monitoring", "cloud"];

/// The held table: a task as a user words it → the tool that should be used. Written from the corpus's
/// listing by someone who had not seen the search, and not tuned to it.
const HELD_QUERIES: [(&str, &str); 20] = [
    ("kick off cargo test in the repo and show me the output", "run_command"),
    ("find every spot in this project where parse_config gets called", "search"),
    ("which leftover to-do and fixme comments are still in the code?", "wasm_project_notes_todos"),
    ("give me a short rundown of what src/main.rs does", "wasm_summarize_file"),
    ("show the env vars the demo mcp server was started with", "mcp_everything_get_env"),
    ("when was config.yaml last touched, and what are its permissions?", "mcp_filesystem_get_file_info"),
    ("rename docs/draft.md to docs/final.md on disk", "mcp_filesystem_move_file"),
    ("forget the stored fact that bob prefers tabs but keep bob himself", "mcp_memory_delete_observations"),
    ("ci flaked on main, kick the actions run off again", "mcp_github_rerun_workflow"),
    ("ask priya and the infra team to look over my pull request", "mcp_github_request_reviewers"),
    ("have the bot post the outage notice in #general at 6pm tonight", "mcp_slack_slack_schedule_message"),
    ("dump the whole postgres database to a file before the risky change", "mcp_postgres_create_backup"),
    ("evict all pods from worker-3 so we can patch its kernel", "mcp_kubernetes_drain_node"),
    ("the new checkout deployment is broken, put the previous version back", "mcp_kubernetes_rollout_undo"),
    ("say yes to the are-you-sure popup the site just showed", "mcp_browser_browser_handle_dialog"),
    ("when can dana, li and i all meet for an hour next week?", "mcp_workspace_find_free_time"),
    ("decline thursday's design sync invite with a note that i'm travelling", "mcp_workspace_respond_to_invitation"),
    ("put 3 hours of time on ticket PAY-142 for today's debugging", "mcp_tracker_log_work"),
    ("who's carrying the pager for the payments service right now?", "mcp_monitoring_get_on_call"),
    ("give the vendor a temporary link to grab report.csv from our bucket", "mcp_cloud_generate_presigned_url"),
];

/// What the lexical search (BM25 over stemmed words) finds of the held table today: a floor against
/// regressions. The goal is 18; the seven it misses share no word with their tool's definition ("a short
/// rundown" for a summary, "the are-you-sure popup" for a dialog) and need a search that knows meaning —
/// see docs/cli.md, `clat tools --search`.
const HELD_TABLE_FLOOR: usize = 13;

fn corpus_file(server: &str) -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/fixtures/tool-corpus/{server}.json"));
    path.canonicalize().unwrap().display().to_string()
}

/// The corpus's `mcp.json` entries, each with `settings` merged into it.
fn corpus_servers(env: &TestEnv, settings: &Value) -> serde_json::Map<String, Value> {
    let mut servers = serde_json::Map::new();
    for name in CORPUS_SERVERS {
        servers.insert(name.into(), json!({ "command": SERVER, "args": ["--tools-json-file", corpus_file(name)] }));
    }
    let memory = json!({ "MEMORY_FILE_PATH": env.dir.path().join("memory.jsonl").display().to_string() });
    servers
        .insert("everything".into(), json!({ "command": "node", "args": [npm_server("server-everything"), "stdio"] }));
    servers.insert(
        "filesystem".into(),
        json!({ "command": "node", "args": [npm_server("server-filesystem"), env.project.display().to_string()] }),
    );
    servers.insert("memory".into(), json!({ "command": "node", "args": [npm_server("server-memory")], "env": memory }));
    for (name, extra) in settings.as_object().into_iter().flatten() {
        let entry = servers.get_mut(name).unwrap().as_object_mut().unwrap();
        entry.extend(extra.as_object().unwrap().clone());
    }
    servers
}

/// A trusted project with the whole corpus configured and the four plugins installed.
fn corpus(settings: Value) -> TestEnv {
    let env = TestEnv::trusted();
    for package in [
        clat_guest_artifacts::HELLO_PACKAGE,
        clat_guest_artifacts::PROJECT_NOTES_PACKAGE,
        clat_guest_artifacts::SUMMARIZE_PACKAGE,
        clat_guest_artifacts::ASK_NAME_PACKAGE,
    ] {
        let out = env.clat(&["plugin", "install", package, "--grant"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    env.write_mcp_config(json!({ "mcpServers": corpus_servers(&env, &settings) }));
    env
}

/// The project mounted with every extension loaded. `server-everything` registers the tools that call back
/// once the client declared it can answer them, then says its list changed: wait for those.
async fn mounted(env: &TestEnv) -> (Platform, Project) {
    let platform = Platform::open(Some(&env.home)).unwrap();
    let project = platform.mount(&env.project, MountOptions::default()).unwrap();
    let statuses = project.load_extensions().await;
    assert!(statuses.iter().all(|s| s.state == clat_host::ExtensionState::Ready), "{statuses:#?}");
    for _ in 0..500 {
        if project.tools().iter().any(|t| t.name == "mcp_everything_trigger_elicitation_request") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (platform, project)
}

fn text(output: &clat_host::ToolOutput) -> Value {
    serde_json::from_str(output.structured.as_deref().unwrap()).unwrap()
}

fn offered(discovery: &Discovery) -> Vec<String> {
    discovery.offered().iter().map(|d| d["name"].as_str().unwrap().to_string()).collect()
}

fn names(found: &Value) -> Vec<String> {
    found["matches"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_tools_are_found_not_offered_and_a_deferred_call_passes_the_pipeline() {
    let env = corpus(json!({}));
    let (_platform, project) = mounted(&env).await;
    let tools = project.tools();
    let count = |wanted: fn(&ToolSource) -> bool| tools.iter().filter(|t| wanted(&t.source)).count();
    let (mcp, wasm) = (count(|s| matches!(s, ToolSource::Mcp { .. })), count(|s| matches!(s, ToolSource::Wasm { .. })));
    eprintln!("the corpus: {} tools — {mcp} of 12 MCP servers, {wasm} of 4 WASM plugins, 6 native", tools.len());
    assert!(tools.len() >= 300 && mcp >= 300 - 6 - wasm && wasm >= 4, "{} tools", tools.len());

    let discovery = project.discovery(&DiscoveryOptions::default());
    assert!(discovery.deferring());
    assert_eq!(
        offered(&discovery),
        [
            "list_files",
            "read_file",
            "search",
            "write_file",
            "edit_file",
            "run_command",
            SEARCH_TOOLS,
            LOAD_TOOLS,
            CALL_TOOL
        ]
    );
    let (first_turn, every_tool) = (discovery.offered_size(), clat_host::registry::schema_totals(&tools));
    eprintln!(
        "the first turn offers {} bytes (~{} tokens) of definitions; every tool's would be {} bytes (~{} tokens)",
        first_turn.bytes, first_turn.tokens, every_tool.size.bytes, every_tool.size.tokens
    );
    assert!(first_turn.bytes <= DISCOVERY_BUDGET_BYTES, "the first turn's tools take {} bytes", first_turn.bytes);

    // A search finds a deferred tool by a task's words, with its effect and source.
    let run = project.start_run(RunOptions::default()).await.unwrap();
    let found =
        text(&discovery.call(&run, SEARCH_TOOLS, json!({ "query": "delete a pod in the cluster" })).await.unwrap());
    assert_eq!(found["matches"][0]["name"], "mcp_kubernetes_delete_pod", "{found}");
    assert_eq!(found["matches"][0]["effect"], "destructive", "{found}");

    // A search asked for more than SEARCH_RESULTS_MAX matches gives that many.
    let many = discovery.call(&run, SEARCH_TOOLS, json!({ "query": "list", "limit": 100 })).await.unwrap();
    assert_eq!(text(&many)["matches"].as_array().unwrap().len(), SEARCH_RESULTS_MAX);

    // Headless in ask mode, the deferred destructive tool is denied, called through call_tool or once loaded.
    let arguments = json!({ "namespace": "shop", "name": "checkout-7d9f" });
    let called = json!({ "name": "mcp_kubernetes_delete_pod", "arguments": arguments });
    let denied = discovery.call(&run, CALL_TOOL, called).await.unwrap_err();
    assert!(matches!(denied, CallError::Denied { .. }), "{denied}");
    let loaded = discovery.call(&run, LOAD_TOOLS, json!({ "names": ["mcp_kubernetes_delete_pod"] })).await.unwrap();
    assert_eq!(text(&loaded)["tools"][0]["name"], "mcp_kubernetes_delete_pod");
    assert!(offered(&discovery).contains(&"mcp_kubernetes_delete_pod".to_string()), "offered from now on");
    let denied = discovery.call(&run, "mcp_kubernetes_delete_pod", arguments.clone()).await.unwrap_err();
    assert!(matches!(denied, CallError::Denied { .. }), "{denied}");
    let unknown = discovery.call(&run, LOAD_TOOLS, json!({ "names": ["nope"] })).await.unwrap_err();
    assert!(matches!(unknown, CallError::UnknownTool(_)), "{unknown}");

    // Every tool stays reachable: where the mode allows it, the deferred call runs — and, used, comes first
    // among the tools a search matches.
    let search =
        async |query: &str| names(&text(&discovery.call(&run, SEARCH_TOOLS, json!({ "query": query })).await.unwrap()));
    let before = search("restart the rollout of a deployment").await;
    let second = before[1].clone();
    assert_ne!(before[0], second);
    let full =
        project.start_run(RunOptions { mode: PermissionMode::FullAccess, ..RunOptions::default() }).await.unwrap();
    let arguments: Value = match second.as_str() {
        "mcp_kubernetes_rollout_undo" | "mcp_kubernetes_rollout_status" | "mcp_kubernetes_rollout_restart" => {
            json!({ "namespace": "shop", "name": "checkout" })
        }
        _ => json!({}),
    };
    let output = discovery.call(&full, CALL_TOOL, json!({ "name": second, "arguments": arguments })).await.unwrap();
    assert!(!output.is_error && output.joined_text().contains("called with"), "{}", output.joined_text());
    assert_eq!(search("restart the rollout of a deployment").await[0], second, "recently used first: {before:?}");

    // Pinned tools are offered on the first turn; within the budget, every tool is.
    let pinned = DiscoveryOptions { pinned: vec!["wasm_hello_greet".into()], ..DiscoveryOptions::default() };
    assert!(offered(&project.discovery(&pinned)).contains(&"wasm_hello_greet".to_string()));
    let roomy = project.discovery(&DiscoveryOptions { budget_bytes: usize::MAX, ..DiscoveryOptions::default() });
    assert!(!roomy.deferring());
    assert_eq!(roomy.offered().len(), tools.len());
    project.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_table_of_twenty_tasks_is_searched_and_its_figure_printed() {
    let env = corpus(json!({}));
    let (_platform, project) = mounted(&env).await;
    let tools = project.tools();
    let discovery = project.discovery(&DiscoveryOptions::default());
    let run = project.start_run(RunOptions::default()).await.unwrap();
    let mut found = 0;
    eprintln!("held table ({} tools; first page = {SEARCH_RESULTS_DEFAULT} matches)", tools.len());
    eprintln!("{:<72} {:<40} rank", "task", "tool");
    for (task, tool) in HELD_QUERIES {
        assert!(tools.iter().any(|t| t.name == tool), "{tool} is in the corpus");
        let matches = names(&text(&discovery.call(&run, SEARCH_TOOLS, json!({ "query": task })).await.unwrap()));
        let rank = matches.iter().position(|m| m == tool);
        found += usize::from(rank.is_some());
        let shown = rank
            .map_or_else(|| format!("— (first: {})", matches.first().map_or("none", |m| m)), |r| (r + 1).to_string());
        eprintln!("{task:<72} {tool:<40} {shown}");
    }
    eprintln!("held table: {found} of {} found in the first page", HELD_QUERIES.len());
    assert!(found >= HELD_TABLE_FLOOR, "{found} of 20 held tasks found their tool in the first page");
    project.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn always_load_and_defer_loading_pin_and_defer_an_extension_s_tools() {
    let settings = json!({
        "memory": { "alwaysLoad": true },
        "github": { "always_load": ["create_pull_request"], "defer_loading": true },
        "postgres": { "defer_loading": true },
        "slack": { "always_load": ["slack_post_message", "post_to_myspace"] },
    });
    let env = corpus(settings);
    for (plugin, when) in [("hello", "always"), ("project-notes", "deferred")] {
        let out = env.clat(&["plugin", "load", plugin, when, "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = env.clat(&["plugin", "list", "--json"]);
    let list: Value = serde_json::from_str(&support::stdout(&out)).unwrap();
    let plugin =
        |name: &str| list["plugins"].as_array().unwrap().iter().find(|p| p["manifest"]["name"] == name).cloned();
    assert_eq!(plugin("hello").unwrap()["always_load"], true);
    assert_eq!(plugin("project-notes").unwrap()["defer_loading"], true);
    let listed = support::stdout(&env.clat(&["plugin", "list"]));
    assert!(
        listed.contains("  always loaded: all its tools\n") && listed.contains("  deferred: its tools are found"),
        "{listed}"
    );
    // A reinstall keeps the choice.
    let out = env.clat(&["plugin", "install", clat_guest_artifacts::HELLO_PACKAGE, "--grant"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Hand-edited entries: both true (always_load wins), and a name that names none of the plugin's tools.
    let index_path = env.home.join(clat_host::supply::packages::INDEX);
    let mut index: Value = serde_json::from_str(&std::fs::read_to_string(&index_path).unwrap()).unwrap();
    index["plugins"]["summarize"]["always_load"] = json!(true);
    index["plugins"]["summarize"]["defer_loading"] = json!(true);
    index["plugins"]["ask-name"]["always_load"] = json!(["greet_user", "ask_shoe_size"]);
    std::fs::write(&index_path, serde_json::to_string(&index).unwrap()).unwrap();

    let (_platform, project) = mounted(&env).await;
    let tools = project.tools();
    let of = |prefix: &str| -> Vec<String> {
        tools.iter().filter(|t| t.name.starts_with(prefix)).map(|t| t.name.clone()).collect()
    };
    // Past the budget: the natives, the pinned tools and discovery's own.
    let first = offered(&project.discovery(&DiscoveryOptions::default()));
    let mut pinned: Vec<String> = of("mcp_memory_");
    pinned.extend(
        ["mcp_github_create_pull_request", "mcp_slack_slack_post_message", "wasm_hello_greet"].map(String::from),
    );
    pinned.extend(of("wasm_summarize_"));
    pinned.extend(of("wasm_ask_name_"));
    // A name that names none of the server's tools pins nothing, and says so.
    let extension = |name: &str| project.extensions().into_iter().find(|e| e.name == name).unwrap();
    let slack = extension("slack");
    assert!(slack.problems.iter().any(|p| p.contains(r#"`always_load` names "post_to_myspace""#)), "{slack:?}");
    let ask_name = extension("ask-name");
    assert_eq!(ask_name.problems, [r#"`always_load` names "ask_shoe_size", which the plugin does not list"#]);
    let summarize = extension("summarize");
    assert!(summarize.problems.iter().any(|p| p.contains("disagree")), "{summarize:?}");
    for name in &pinned {
        assert!(first.contains(name), "{name} is always loaded: {first:?}");
    }
    assert_eq!(first.len(), 6 + pinned.len() + 3, "{first:?}");

    // Within the budget: everything but the deferred ones, and a search for those.
    let roomy = project.discovery(&DiscoveryOptions { budget_bytes: usize::MAX, ..DiscoveryOptions::default() });
    assert!(roomy.deferring(), "deferred tools are found, not offered");
    let offered_now = offered(&roomy);
    let deferred: Vec<String> = [of("mcp_postgres_"), of("mcp_github_"), of("wasm_project_notes_")]
        .concat()
        .into_iter()
        .filter(|n| n != "mcp_github_create_pull_request")
        .collect();
    assert_eq!(deferred.len(), 30 + 29 + 2);
    assert!(deferred.iter().all(|n| !offered_now.contains(n)), "deferred tools are not offered");
    let missing: Vec<&String> =
        tools.iter().map(|t| &t.name).filter(|n| !deferred.contains(n) && !offered_now.contains(n)).collect();
    assert!(missing.is_empty(), "every other tool is offered: {missing:?}");
    assert_eq!(offered_now.len(), tools.len() - deferred.len() + 3);
    assert!(
        offered_now.contains(&"mcp_github_create_pull_request".to_string())
            && offered_now.contains(&SEARCH_TOOLS.to_string())
    );
    let run = project.start_run(RunOptions::default()).await.unwrap();
    let found =
        text(&roomy.call(&run, SEARCH_TOOLS, json!({ "query": "list the todo notes in the project" })).await.unwrap());
    // The pinned tools that match come first (here summarize's), then the best of the others: the deferred one.
    let names = names(&found);
    let first_unpinned = names.iter().find(|n| !pinned.contains(n));
    assert_eq!(first_unpinned.map(String::as_str), Some("wasm_project_notes_todos"), "{found}");
    project.close().await;
}
