//! What `clat tools`, `clat mcp` and `clat mcp get` print: the registry, and
//! the extensions' typed statuses (the /mcp surface), as a table or as JSON.

use serde_json::{Value, json};

use super::exit::Failure;
use crate::platform::Project;
use crate::{
    CallError, ExtensionKind, ExtensionState, ExtensionStatus, LoadingSettings, Login, Quarantine,
    SCHEMA_BYTES_PER_TOKEN, SchemaTotals, ToolInfo,
};

fn transport(kind: ExtensionKind) -> &'static str {
    if kind == ExtensionKind::McpHttp { "streamable-http" } else { "stdio" }
}

/// An OAuth login in words: where, as which client, what scopes, until when.
pub(crate) fn describe_login(login: &Login) -> String {
    let scopes = if login.scopes.is_empty() { "no scopes".to_string() } else { login.scopes.join(" ") };
    let expiry = match login.expires_at {
        Some(at) => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            if at > now { format!("expires in {} s", at - now) } else { "expired".to_string() }
        }
        None => "no expiry given".to_string(),
    };
    let refresh = if login.refreshable { ", refreshed automatically" } else { "" };
    format!("at {} as client {} ({scopes}; {expiry}{refresh})", login.issuer, login.client_id)
}

/// The /mcp surface: counts, then each server's transport, state, protocol,
/// tool count, restarts, problems and (redacted) stderr tail.
pub(crate) fn print_mcp(servers: &[ExtensionStatus], json: bool) {
    let count = |state: ExtensionState| servers.iter().filter(|s| s.state == state).count();
    let configured = servers.iter().filter(|s| !s.name.starts_with('(')).count();
    let connecting = count(ExtensionState::Starting) + count(ExtensionState::Restarting);
    if json {
        let list: Vec<Value> = servers
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "transport": transport(s.kind),
                    "state": s.state,
                    "protocol": s.protocol,
                    "tools": s.tools.len(),
                    "system_prompts": s.system_prompts,
                    "restarts": s.restarts,
                    "last_stop": s.last_stop,
                    "oauth": s.oauth,
                    "loading": s.loading,
                    "problems": s.problems,
                    "stderr_tail": s.output_tail,
                })
            })
            .collect();
        outln!(
            "{}",
            json!({
                "configured": configured,
                "connecting": connecting,
                "connected": count(ExtensionState::Ready),
                "failed": count(ExtensionState::Failed),
                "not_started": count(ExtensionState::Configured),
                "servers": list,
            })
        );
        return;
    }
    outln!(
        "MCP servers: {configured} configured, {connecting} connecting, {} connected, {} failed, {} not started",
        count(ExtensionState::Ready),
        count(ExtensionState::Failed),
        count(ExtensionState::Configured)
    );
    for s in servers {
        let protocol = s.protocol.as_deref().unwrap_or("-");
        outln!("  {}  {}  {}  {protocol}  {} tools", s.name, transport(s.kind), s.state, s.tools.len());
        if s.restarts > 0 || s.last_stop.is_some() {
            outln!("    restarts: {} (last stop: {})", s.restarts, s.last_stop.as_deref().unwrap_or("-"));
        }
        if !s.system_prompts.is_empty() {
            outln!("    system prompts: {}", s.system_prompts.join(", "));
        }
        if let Some(login) = &s.oauth {
            outln!("    logged in {}", describe_login(login));
        }
        if let Some(loading) = s.loading.describe() {
            outln!("    {loading}");
        }
        for p in &s.problems {
            outln!("    problem: {p}");
        }
        if s.state == ExtensionState::Failed {
            for line in &s.output_tail {
                outln!("    | {line}");
            }
        }
    }
}

/// `clat tools`: the registry as a table (problems of extensions on stderr) or as JSON.
/// The tools that best match `query`, best first (`clat tools --search`).
pub(crate) fn print_matches(project: &Project, query: &str, json: bool) {
    let matches = project.search_tools(query, crate::limits::SEARCH_RESULTS_DEFAULT);
    let extensions = project.search_answer(query, crate::limits::SEARCH_RESULTS_DEFAULT).extensions;
    if json {
        outln!("{}", json!({ "query": query, "matches": matches, "extensions": extensions }));
        return;
    }
    if matches.is_empty() {
        outln!("no tool matches {query:?}");
        return;
    }
    let width = matches.iter().map(|m| m.name.len()).max().unwrap_or(4).max(4);
    let source_width = matches.iter().map(|m| m.source.label().len()).max().unwrap_or(6).max(6);
    outln!("{:width$}  {:13}  {:source_width$}  DESCRIPTION", "NAME", "EFFECT", "SOURCE");
    for m in &matches {
        let (effect, source) = (m.effect.as_str(), m.source.label());
        outln!("{:width$}  {effect:13}  {source:source_width$}  {}", m.name, m.description);
    }
    if !extensions.is_empty() {
        outln!("\nthe extensions that match best, and their other tools:");
        for e in &extensions {
            let more = if e.more > 0 { format!(" (and {} more)", e.more) } else { String::new() };
            outln!("  {}: {}{more}", e.extension, e.tools.join(", "));
        }
    }
}

/// How a table of queries fares against the search (`clat tools --search-eval`).
pub(crate) fn print_search_evaluation(project: &Project, cases: &[crate::SearchCase], json: bool) {
    let page = crate::limits::SEARCH_RESULTS_DEFAULT;
    let measured = project.evaluate_search(cases, page);
    if json {
        outln!("{}", json!(measured));
        return;
    }
    let width = measured.rows.iter().map(|r| r.query.chars().count()).max().unwrap_or(5).clamp(5, 72);
    let tool_width = measured.rows.iter().map(|r| r.tool.len()).max().unwrap_or(4).max(4);
    outln!("{:width$}  {:tool_width$}  RANK  FIRST ANSWER", "QUERY", "TOOL");
    for row in &measured.rows {
        let rank = row.rank.map_or_else(|| "-".to_string(), |r| r.to_string());
        let named = if row.named_in_first_answer { "names it" } else { "-" };
        let first = row.first.as_deref().map(|f| format!(" (first match: {f})")).unwrap_or_default();
        let query: String = row.query.chars().take(width).collect();
        outln!("{query:width$}  {:tool_width$}  {rank:4}  {named}{first}", row.tool);
    }
    let n = measured.rows.len();
    outln!(
        "Recall@5 {}/{n}, Recall@10 {}/{n}, MRR {:.2}, named in the first answer ({page} matches and the best \
         extensions' tools) {}/{n}, largest first answer {} bytes",
        measured.recall_at_5,
        measured.recall_at_10,
        measured.mrr,
        measured.named_in_first_answer,
        measured.largest_answer_bytes
    );
}

/// Search enrichment (`clat tools --enrich`): each tool asked of `model` is said on stderr as it is asked; then
/// what was asked, kept already and failed. Exit 5 when one failed (the next enrichment asks it again).
pub(crate) async fn enrich_search(
    project: &Project,
    model: &dyn crate::ModelProvider,
    json: bool,
) -> Result<super::Exit, super::Failure> {
    let progress = |tool: &str| {
        if !json {
            eprintln!("asking the model for requests that {tool} fulfils");
        }
    };
    let done = project.enrich_search(model, &progress).await?;
    if json {
        outln!("{}", json!(done));
    } else {
        outln!(
            "asked the model for {} tools' requests; {} tools' definitions had theirs kept already; {} failed",
            done.asked.len(),
            done.kept_already,
            done.failed.len()
        );
        for (tool, why) in &done.failed {
            outln!("  {tool}: {why}");
        }
    }
    Ok(if done.failed.is_empty() { super::Exit::Ok } else { super::Exit::Internal })
}

/// What the tools' definitions cost a model, in all and by extension, the costliest first.
fn schemas_line(schemas: &SchemaTotals) -> String {
    let kib = |bytes: usize| format!("{:.1} KiB", bytes as f64 / 1024.0);
    let by_extension: Vec<String> = schemas
        .extensions
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let tools = if i == 0 { format!("{} tools", e.tools) } else { e.tools.to_string() };
            format!("{} {} ({tools})", e.extension, kib(e.size.bytes))
        })
        .collect();
    format!(
        "definitions: {}, ~{} tokens (at {} bytes a token): {}",
        kib(schemas.size.bytes),
        schemas.size.tokens,
        SCHEMA_BYTES_PER_TOKEN,
        by_extension.join(", ")
    )
}

pub(crate) fn print_tools(project: &Project, json: bool) {
    let tools = project.tools();
    let extensions = project.extensions();
    let schemas = project.tool_costs();
    if json {
        outln!("{}", json!({ "tools": tools, "extensions": extensions, "schemas": schemas }));
        return;
    }
    for e in extensions.iter().filter(|e| !e.problems.is_empty()) {
        let what = if e.kind.is_mcp() { "server" } else { "plugin" };
        eprintln!("{what} {} ({}): {}", e.name, e.state, e.problems.join("; "));
        for line in &e.output_tail {
            eprintln!("  | {line}");
        }
    }
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let source_width = tools.iter().map(|t| t.source.label().len()).max().unwrap_or(6).max(6);
    outln!("{:width$}  {:13}  {:source_width$}  DESCRIPTION", "NAME", "EFFECT", "SOURCE");
    // At a terminal, each row fits its width: descriptions are cut there.
    let room = terminal_columns().map(|columns| columns.saturating_sub(width + source_width + 19).max(20));
    for t in &tools {
        let (effect, source) = (t.effect.as_str(), t.source.label());
        let description = match room {
            Some(room) => {
                let first = t.description.lines().next().unwrap_or_default();
                if first.chars().count() > room {
                    format!("{}…", first.chars().take(room - 1).collect::<String>())
                } else {
                    first.to_string()
                }
            }
            None => t.description.clone(),
        };
        outln!("{:width$}  {effect:13}  {source:source_width$}  {description}", t.name);
    }
    outln!("{}", schemas_line(&schemas));
    // What each WASM plugin may reach beyond host services.
    for e in extensions.iter().filter(|e| !e.grants.is_empty()) {
        outln!("plugin {} holds {}", e.name, e.grants.summary());
    }
}

/// `clat tools NAME`: one registered tool — description, effect and why,
/// source, and its arguments as a table (or the tool as JSON).
pub(crate) fn print_tool(project: &Project, name: &str, json: bool) -> Result<(), Failure> {
    // Held back: said as a call of it is refused, with what changed and how to accept it.
    if let Some(Quarantine { accept, changes }) = project.quarantine(name) {
        return Err(CallError::Quarantined { tool: name.to_string(), accept, changes }.into());
    }
    let Some(tool) = project.tools().into_iter().find(|t| t.name == name) else { return Ok(()) };
    if json {
        outln!("{}", json!(tool));
        return Ok(());
    }
    outln!("{}", tool.name);
    if tool.original_name != tool.name {
        outln!("  own name     {}", tool.original_name);
    }
    outln!("  source       {}", tool.source.label());
    outln!("  effect       {} — {}", tool.effect, tool.effect_reason);
    let mut lines = tool.description.lines();
    outln!("  description  {}", lines.next().unwrap_or("(none)"));
    for line in lines {
        outln!("               {line}");
    }
    let rows = argument_rows(&tool.input_schema);
    if rows.is_empty() {
        outln!("  arguments    none");
        return Ok(());
    }
    outln!("  arguments");
    let widths = [0, 1, 2].map(|i| {
        rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0).max(["NAME", "TYPE", "REQUIRED"][i].len())
    });
    outln!(
        "    {:w0$}  {:w1$}  {:w2$}  DESCRIPTION",
        "NAME",
        "TYPE",
        "REQUIRED",
        w0 = widths[0],
        w1 = widths[1],
        w2 = widths[2]
    );
    for [name, kind, required, description] in &rows {
        let row = format!(
            "    {name:w0$}  {kind:w1$}  {required:w2$}  {description}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        outln!("{}", row.trim_end());
    }
    Ok(())
}

/// One row per top-level property of a JSON Schema object: name, type (an
/// enum's values, an array's item type), whether it is required, description.
fn argument_rows(schema: &Value) -> Vec<[String; 4]> {
    let required: Vec<&str> =
        schema["required"].as_array().map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else { return Vec::new() };
    let type_of = |p: &Value| -> String {
        if let Some(values) = p["enum"].as_array() {
            return values.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" | ");
        }
        let base = match &p["type"] {
            Value::String(t) => t.clone(),
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | "),
            _ if p.get("anyOf").is_some() || p.get("oneOf").is_some() => "one of several".into(),
            _ => "any".into(),
        };
        match p["items"]["type"].as_str() {
            Some(item) if base == "array" => format!("array of {item}"),
            _ => base,
        }
    };
    properties
        .iter()
        .map(|(name, p)| {
            let mut description = p["description"].as_str().unwrap_or("").lines().next().unwrap_or("").to_string();
            if let Some(default) = p.get("default") {
                description = format!("{description} (default {default})").trim_start().to_string();
            }
            let required = if required.contains(&name.as_str()) { "yes" } else { "no" };
            [name.clone(), type_of(p), required.to_string(), description]
        })
        .collect()
}

/// The width of the terminal stdout is, when it is one.
fn terminal_columns() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let mut size = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the struct this function owns.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col as usize)
}

/// `clat mcp get NAME`: its entry (masked), its status (when it was started)
/// and its tools with their effects.
pub(crate) fn print_server(
    name: &str,
    entry: Option<&Value>,
    server: Option<&ExtensionStatus>,
    tools: &[ToolInfo],
    json: bool,
) {
    let own: Vec<&ToolInfo> = server.map_or(vec![], |s| tools.iter().filter(|t| s.tools.contains(&t.name)).collect());
    if json {
        let list: Vec<Value> = own
            .iter()
            .map(|t| json!({ "name": t.name, "tool": t.original_name, "effect": t.effect.as_str(), "description": t.description }))
            .collect();
        let document = json!({
            "name": name,
            "entry": entry,
            "transport": server.map(|s| transport(s.kind)),
            "state": server.map(|s| s.state),
            "protocol": server.and_then(|s| s.protocol.clone()),
            "oauth": server.and_then(|s| s.oauth.clone()),
            "problems": server.map_or(vec![], |s| s.problems.clone()),
            "stderr_tail": server.map_or(vec![], |s| s.output_tail.clone()),
            "tools": list,
        });
        outln!("{document}");
        return;
    }
    match server {
        Some(s) => outln!(
            "{name}  {}  {}  {}  {} tools",
            transport(s.kind),
            s.state,
            s.protocol.as_deref().unwrap_or("-"),
            own.len()
        ),
        None => outln!("{name}"),
    }
    if let Some(entry) = entry {
        let text = serde_json::to_string_pretty(entry).unwrap_or_default();
        outln!("  entry (mcp.json):");
        for line in text.lines() {
            outln!("    {line}");
        }
    }
    if let Some(s) = server {
        if let Some(login) = &s.oauth {
            outln!("  logged in {}", describe_login(login));
        }
        for p in &s.problems {
            outln!("  problem: {p}");
        }
        if s.state == ExtensionState::Failed {
            for line in &s.output_tail {
                outln!("  | {line}");
            }
        }
    }
    if !own.is_empty() {
        let width = own.iter().map(|t| t.name.len()).max().unwrap_or(4);
        outln!("  tools:");
        for t in own {
            outln!("    {:width$}  {:13}  {}", t.name, t.effect.as_str(), t.description);
        }
    }
}
