//! `project-notes`: finds TODO / FIXME notes in the project and shows the file
//! around the first one — entirely through CLAT's host tools (list_files,
//! search, read_file), so the path fence and permissions of the run apply.

use clat_guest::{NoArgs, Plugin, Tool, ToolError, host};

fn todos(_: NoArgs) -> Result<String, ToolError> {
    let found = host::search("TODO|FIXME").map_err(|e| format!("search failed: {e}"))?;
    let Some(first) = found.matches.first() else {
        return Ok("no TODO or FIXME notes in the project".into());
    };
    let notes: Vec<String> = found.matches.iter().map(|m| format!("{}:{}: {}", m.path, m.line, m.text)).collect();
    let mut out = format!("{} note(s):\n{}\n", notes.len(), notes.join("\n"));
    match host::read_lines(&first.path, first.line.saturating_sub(2).max(1), first.line + 2) {
        Ok(around) => out.push_str(&format!("\naround {}:{}:\n{around}", first.path, first.line)),
        Err(e) => out.push_str(&format!("\n(could not read {}: {e})", first.path)),
    }
    Ok(out)
}

fn overview(_: NoArgs) -> Result<String, ToolError> {
    let listing = host::list_files("").map_err(|e| format!("list_files failed: {e}"))?;
    let files = listing.entries.iter().filter(|e| !e.ends_with('/')).count();
    let top: Vec<&str> =
        listing.entries.iter().map(String::as_str).filter(|e| !e.trim_end_matches('/').contains('/')).collect();
    Ok(format!("project {} has {files} file(s); top level:\n{}", host::context().project_name, top.join("\n")))
}

struct ProjectNotes;

impl Plugin for ProjectNotes {
    fn tools() -> Vec<Tool> {
        let todos_description = "List TODO and FIXME notes in the project, with the first note's surroundings.";
        vec![
            Tool::new("todos", todos_description, todos).read_only().closed_world(),
            Tool::new("overview", "Count the project's files and show the top-level listing.", overview)
                .read_only()
                .closed_world(),
        ]
    }
}

clat_guest::export_plugin!(ProjectNotes);
