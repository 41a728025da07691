//! `clat mcp add`: an entry from the command line (a command after `--`, or a
//! URL, with `--env` / `--header` pairs), from JSON (`add-json`), or from the
//! MCP Registry (`--from-registry`), kept by the door (`Servers::add`) in the
//! home's `mcp.json` or, with `--scope project`, in the project's `.mcp.json`
//! (approved at once, since the user wrote it).

use crate::cli::exit::{Exit, Failure};
use crate::cli::runs;
use crate::cli::shutdown::Shutdown;
use crate::platform::{AddedServer, Platform, RegistryRequest, ServerScope, Servers};
use serde_json::{Map, Value, json};

/// `--env NAME=VALUE` and `--header 'NAME: VALUE'` into an object.
fn pairs(items: &[String], separator: char, flag: &str) -> Result<Map<String, Value>, Failure> {
    items
        .iter()
        .map(|item| match item.split_once(separator) {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_string(), Value::String(value.trim_start().to_string())))
            }
            _ => Err(Failure::new(Exit::Usage, "usage", format!("{flag} {item:?} must be NAME{separator}VALUE"))),
        })
        .collect()
}

/// The options of `clat mcp add`, which a command given without `--` must not
/// hold (whether they were meant for `clat` or for the server is unclear).
const ADD_OPTIONS: [&str; 16] = [
    "-t",
    "--transport",
    "-s",
    "--scope",
    "-H",
    "--header",
    "-e",
    "--env",
    "--cwd",
    "--force",
    "--url",
    "--from-registry",
    "--registry",
    "--via",
    "-h",
    "--help",
];

/// A command given without `--` is taken only when none of its words is one
/// of `clat mcp add`'s options.
pub(super) fn check_command_words(command: &[String]) -> Result<(), Failure> {
    let separated = std::env::args().skip_while(|a| a != "add").any(|a| a == "--");
    let option = command
        .iter()
        .skip(1)
        .find(|w| ADD_OPTIONS.contains(&w.as_str()) || ADD_OPTIONS.iter().any(|o| w.starts_with(&format!("{o}="))));
    match option {
        Some(word) if !separated => Err(Failure::new(
            Exit::Usage,
            "usage",
            format!(
                "{word:?} could be an option of `clat mcp add` or of the server's command; put clat's options before \
                 the name and the command after `--`: `clat mcp add [OPTIONS] NAME -- {}`",
                command.join(" ")
            ),
        )),
        _ => Ok(()),
    }
}

/// The URL or the command `clat mcp add` was given: `--url URL`, a lone
/// positional `http(s)://` URL, or a command; `--transport` must agree.
pub(super) fn target(
    url: Option<String>,
    transport: Option<&str>,
    command: Vec<String>,
) -> Result<(Option<String>, Vec<String>), Failure> {
    let usage = |m: String| Failure::new(Exit::Usage, "usage", m);
    let is_url = |w: &str| w.starts_with("http://") || w.starts_with("https://");
    let (url, command) = match (url, command.as_slice()) {
        (None, [one]) if is_url(one) => (Some(one.clone()), Vec::new()),
        (url, _) => (url, command),
    };
    match transport {
        None => {}
        Some("stdio") if url.is_some() => return Err(usage("--transport stdio takes a command, not a URL".into())),
        Some("http" | "streamable-http") if url.is_none() => {
            return Err(usage("--transport http takes the server's URL: `clat mcp add -t http NAME URL`".into()));
        }
        Some("stdio" | "http" | "streamable-http") => {}
        Some("sse") => {
            return Err(usage(
                "--transport sse: the deprecated HTTP+SSE transport is not supported; give the server's Streamable \
                 HTTP endpoint (often its URL ending in /mcp) with --transport http"
                    .into(),
            ));
        }
        Some(other) => return Err(usage(format!("--transport {other:?}: give stdio or http"))),
    }
    Ok((url, command))
}

/// The entry `clat mcp add-json` was given, checked as `mcp.json` would read it.
pub(super) fn entry_from_json(servers: &Servers, name: &str, text: &str) -> Result<Value, Failure> {
    let entry: Value = serde_json::from_str(text)
        .map_err(|e| Failure::new(Exit::Usage, "usage", format!("the entry is not valid JSON: {e}")))?;
    servers.check_entry(name, &entry)?;
    Ok(entry)
}

/// The `mcp.json` entry `clat mcp add` writes.
pub(super) fn entry_from(
    url: Option<String>,
    headers: &[String],
    env: &[String],
    cwd: Option<String>,
    command: &[String],
) -> Result<Value, Failure> {
    let usage = |m: &str| Failure::new(Exit::Usage, "usage", m.to_string());
    let mut entry = Map::new();
    match (url, command.split_first()) {
        (Some(_), Some(_)) => return Err(usage("give either `-- COMMAND [ARGS...]` or `--url URL`, not both")),
        (None, None) => return Err(usage("give the server's `-- COMMAND [ARGS...]` or its `--url URL`")),
        (Some(url), None) => {
            if !env.is_empty() || cwd.is_some() {
                return Err(usage("--env and --cwd apply to stdio servers (`-- COMMAND`), not to --url"));
            }
            entry.insert("url".into(), Value::String(url));
            if !headers.is_empty() {
                entry.insert("headers".into(), Value::Object(pairs(headers, ':', "--header")?));
            }
        }
        (None, Some((program, args))) => {
            if !headers.is_empty() {
                return Err(usage("--header applies to HTTP servers (a URL), not to a command"));
            }
            entry.insert("command".into(), Value::String(program.clone()));
            if !args.is_empty() {
                entry.insert("args".into(), json!(args));
            }
            if !env.is_empty() {
                entry.insert("env".into(), Value::Object(pairs(env, '=', "--env")?));
            }
            if let Some(cwd) = cwd {
                entry.insert("cwd".into(), Value::String(cwd));
            }
        }
    }
    Ok(Value::Object(entry))
}

/// What `clat mcp add` says it did: a project's file says whether it is approved.
pub(super) fn print_added(name: &str, added: &AddedServer, json: bool) {
    let path = &added.file;
    match (added.approved, json) {
        (None, true) => outln!("{}", json!({ "added": name, "file": path.display().to_string() })),
        (None, false) => outln!("added {name} in {}", path.display()),
        (Some(approved), true) => {
            outln!("{}", json!({ "added": name, "file": path.display().to_string(), "approved": approved }))
        }
        (Some(approved), false) => {
            outln!("added {name} to {}", path.display());
            if approved {
                outln!(
                    "approved {} for you as it is now; whoever clones the project is asked to approve it",
                    path.display()
                );
            } else {
                outln!(
                    "{} holds servers you have not approved: review it, then run `clat mcp approve`",
                    path.display()
                );
            }
        }
    }
}

/// `clat mcp add NAME --from-registry SERVER[@VERSION]`: read the version
/// from the registry, show what the entry runs, the effect it gets and the
/// values it needs, then write it (user or project scope). Nothing starts.
pub(super) async fn add_from_registry(
    platform: &Platform,
    scope: ServerScope,
    name: &str,
    request: RegistryRequest,
    force: bool,
    json: bool,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let servers = platform.servers();
    let found = tokio::select! {
        found = servers.from_registry(name, &request) => found?,
        _ = shutdown.token().cancelled() => return Err(runs::interrupted(shutdown)),
    };
    let added = servers.add(&scope, name, found.entry.clone(), force)?;
    let (file, approved) = (&added.file, added.approved);
    if json {
        let needs: Vec<Value> = found
            .needs
            .iter()
            .map(|n| {
                json!({ "variable": n.variable, "fills": n.fills, "required": n.required, "secret": n.secret,
                        "default": n.default, "choices": n.choices, "description": n.description })
            })
            .collect();
        outln!(
            "{}",
            json!({ "added": name, "file": file.display().to_string(), "approved": approved,
                    "server": found.source.server, "version": found.source.version,
                    "registry": found.source.registry, "via": found.via.as_str(), "entry": found.entry,
                    "runs": found.runs, "effect": found.effect, "needs": needs, "alternatives": found.alternatives,
                    "passed_over": found.passed_over })
        );
        return Ok(Exit::Ok);
    }
    let source = &found.source;
    outln!("{} {} ({}) from {}", source.server, source.version, found.via.as_str(), source.registry);
    if !found.description.is_empty() {
        outln!("  {}", found.description);
    }
    outln!("  runs: {}", found.runs);
    outln!("  effect: {}", found.effect);
    for need in &found.needs {
        let mut about = vec![if need.required { "required" } else { "optional" }];
        if need.secret {
            about.push("secret");
        }
        let default = need.default.as_ref().map(|d| format!(", default {d:?}")).unwrap_or_default();
        let choices =
            if need.choices.is_empty() { String::new() } else { format!(", one of {}", need.choices.join("|")) };
        let description = if need.description.is_empty() { String::new() } else { format!(": {}", need.description) };
        outln!(
            "  needs ${{{}}} ({}{default}{choices}) for {}{description}",
            need.variable,
            about.join(", "),
            need.fills
        );
    }
    if !found.needs.is_empty() {
        outln!("  the entry holds only these references: set them in CLAT's environment before the server starts");
    }
    for other in &found.alternatives {
        outln!("  also offered: {other}");
    }
    for other in &found.passed_over {
        outln!("  not usable: {other}");
    }
    match approved {
        Some(_) => print_added(name, &added, false),
        None => outln!("added {name} to {} (nothing was started)", file.display()),
    }
    Ok(Exit::Ok)
}
