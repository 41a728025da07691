//! `project-notes`: finds TODO / FIXME notes in the project and shows the file
//! around the first one — entirely through CLAT's host tools (list_files,
//! search, read_file), so the path fence and permissions of the run apply.

use clat_guest::{Args, Plugin, ToolOutput, ToolSpec, error, host, text, tool};
use serde_json::json;

struct ProjectNotes;

impl Plugin for ProjectNotes {
    fn tools() -> Vec<ToolSpec> {
        vec![
            tool("todos", "List TODO and FIXME notes in the project, with the first note's surroundings.")
                .read_only()
                .closed_world()
                .schema(json!({ "type": "object", "additionalProperties": false }))
                .build(),
            tool("overview", "Count the project's files and show the top-level listing.")
                .read_only()
                .closed_world()
                .schema(json!({ "type": "object", "additionalProperties": false }))
                .build(),
        ]
    }

    fn call(name: &str, _args: Args) -> Result<ToolOutput, String> {
        match name {
            "todos" => Ok(todos()),
            "overview" => Ok(overview()),
            other => Err(format!("project-notes has no tool {other:?}")),
        }
    }
}

fn todos() -> ToolOutput {
    let hits = match host::search("TODO|FIXME") {
        Ok(h) => h,
        Err(e) => return error(format!("search failed: {e}")),
    };
    if hits == "(no matches)" {
        return text("no TODO or FIXME notes in the project");
    }
    let notes: Vec<&str> = hits.lines().filter(|l| !l.starts_with('[')).collect();
    let mut out = format!("{} note(s):\n{}\n", notes.len(), notes.join("\n"));
    if let Some((path, rest)) = notes.first().and_then(|l| l.split_once(':')) {
        let line: i64 = rest.split(':').next().and_then(|n| n.parse().ok()).unwrap_or(1);
        let args = json!({ "path": path, "start_line": (line - 2).max(1), "end_line": line + 2 });
        match host::call(clat_guest::HostTool::ReadFile, &args) {
            Ok(o) if !o.is_error => out.push_str(&format!("\naround {path}:{line}:\n{}", clat_guest::output_text(&o))),
            Ok(o) => out.push_str(&format!("\n(could not read {path}: {})", clat_guest::output_text(&o))),
            Err(e) => out.push_str(&format!("\n(could not read {path}: {})", host::describe(&e))),
        }
    }
    text(out)
}

fn overview() -> ToolOutput {
    match (host::list_files(""), host::context()) {
        (Ok(listing), ctx) => {
            let files = listing.lines().filter(|l| !l.ends_with('/') && !l.starts_with('[')).count();
            let top: Vec<&str> = listing.lines().filter(|l| !l.trim_end_matches('/').contains('/')).collect();
            text(format!("project {} has {files} file(s); top level:\n{}", ctx.project_name, top.join("\n")))
        }
        (Err(e), _) => error(format!("list_files failed: {e}")),
    }
}

clat_guest::export_plugin!(ProjectNotes);
