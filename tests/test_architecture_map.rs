//! `docs/architecture.md` stays a true map, within its 40 KB: every module of
//! both crates is named, every limit constant has its row in the limits table
//! (and every row is a constant), the place each row names exists and holds
//! the function named, and every test a row names exists. And the pages a
//! reader lands on (`docs/cli.md` and the task pages beside it) each open with
//! a contents list that is their headings, linking each. And the command line
//! reaches no more of the core around the front door than it did.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(rust_files(&path));
        } else if path.extension().is_some_and(|x| x == "rs") {
            found.push(path);
        }
    }
    found
}

fn map() -> String {
    std::fs::read_to_string(root().join("docs/architecture.md")).unwrap()
}

#[test]
fn the_map_fits_in_40_kb_and_names_every_module_of_both_crates() {
    let map = map();
    assert!(map.len() <= 40 * 1024, "docs/architecture.md is {} bytes; the map stays within 40 KB", map.len());
    for crate_src in ["host/src", "mcp/src"] {
        for entry in std::fs::read_dir(root().join(crate_src)).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "main.rs" | "lib.rs" | "bin") {
                continue;
            }
            let named = if entry.path().is_dir() { format!("{name}/") } else { name.clone() };
            assert!(map.contains(&named), "docs/architecture.md does not name {crate_src}/{named}");
        }
    }
}

#[test]
fn every_limit_has_its_row_and_every_row_is_true() {
    let map = map();
    let constant = regex::Regex::new(r"(?m)^pub const ([A-Z0-9_]+):").unwrap();
    let mut defined = BTreeSet::new();
    for file in ["host/src/limits.rs", "mcp/src/limits.rs"] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        defined.extend(constant.captures_iter(&text).map(|c| c[1].to_string()));
    }
    let row = regex::Regex::new(r"(?m)^\| `([A-Z0-9_]+)` \| [^|]+ \| `([^`]+)` `([^`]+)` \| ([^\n]*) \|$").unwrap();
    let rows: Vec<_> = row.captures_iter(&map).collect();
    let listed: BTreeSet<String> = rows.iter().map(|c| c[1].to_string()).collect();
    assert_eq!(
        defined.difference(&listed).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "limit constants without a row in docs/architecture.md"
    );
    assert_eq!(listed.difference(&defined).collect::<Vec<_>>(), Vec::<&String>::new(), "rows naming no constant");

    // Every function defined anywhere in the sources and tests.
    let function = regex::Regex::new(r"fn ([a-z_0-9]+)\s*[<(]").unwrap();
    let mut functions = BTreeSet::new();
    for dir in ["host/src", "mcp/src", "tests", "mcp/tests"] {
        for file in rust_files(&root().join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap();
            functions.extend(function.captures_iter(&text).map(|c| c[1].to_string()));
        }
    }
    let test_name = regex::Regex::new(r"`([a-z_0-9]+)`").unwrap();
    for c in &rows {
        let (name, file, item, tests) = (&c[1], &c[2], &c[3], &c[4]);
        let text = std::fs::read_to_string(root().join(file))
            .unwrap_or_else(|e| panic!("{name}: the row names {file}, which cannot be read: {e}"));
        let last = item.rsplit("::").next().unwrap();
        assert!(
            text.contains(&format!("fn {last}")) || text.contains(&format!("struct {last}")),
            "{name}: {file} holds no `{item}`"
        );
        for test in test_name.captures_iter(tests) {
            assert!(functions.contains(&test[1]), "{name}: no test `{}` exists", &test[1]);
        }
    }
}

/// A heading's anchor as Markdown renderers make it: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn each_task_page_opens_with_its_contents() {
    for page in ["cli.md", "servers.md", "oauth.md", "plugins.md", "serve.md", "sampling.md", "benchmarks.md"] {
        let text = std::fs::read_to_string(root().join("docs").join(page)).unwrap();
        let (mut headings, mut fenced) = (Vec::new(), false);
        for line in text.lines() {
            fenced ^= line.starts_with("```");
            let heading =
                line.strip_prefix("## ").map(|h| (0, h)).or_else(|| line.strip_prefix("### ").map(|h| (1, h)));
            if let (false, Some((depth, heading))) = (fenced, heading) {
                headings.push(format!("{}- [{heading}](#{})", "  ".repeat(depth), anchor(heading)));
            }
        }
        let contents: Vec<String> = text
            .split("Contents:\n\n")
            .nth(1)
            .unwrap_or_else(|| panic!("docs/{page} has no contents list"))
            .lines()
            .take_while(|line| !line.is_empty())
            .map(str::to_string)
            .collect();
        assert_eq!(contents, headings, "docs/{page}: its contents list is not its headings");
    }
}

/// The command line reaches the core only through the front door: `platform/` (the door and its faces) and the
/// crate root's re-exports. Besides, it prints with the core's vocabulary and helpers, which hold no behaviour of
/// the platform's: the documented limits, redaction, the contract's types and JSON shapes, the poisoning-aware lock.
const CLI_HELPERS: [&str; 4] = ["limits", "redact", "contract", "sync"];

#[test]
fn the_command_line_reaches_the_core_only_through_the_door() {
    // `crate::module::…`, and `module::…` inside a `use crate::{…};`.
    let path = regex::Regex::new(r"crate::([a-z_]+)::").unwrap();
    let grouped = regex::Regex::new(r"(?s)use crate::\{(.*?)\};").unwrap();
    let inner = regex::Regex::new(r"\b([a-z_]+)::").unwrap();
    let door = ["platform", "cli"];
    let mut around = BTreeSet::new();
    for file in rust_files(&root().join("host/src/cli")) {
        let text = std::fs::read_to_string(&file).unwrap();
        let direct = path.captures_iter(&text).map(|c| c[1].to_string());
        let in_groups = grouped
            .captures_iter(&text)
            .flat_map(|g| inner.captures_iter(&g[1]).map(|c| c[1].to_string()).collect::<Vec<_>>());
        for module in direct.chain(in_groups) {
            if !door.contains(&module.as_str()) && !CLI_HELPERS.contains(&module.as_str()) {
                around.insert(format!("{module} (in {})", file.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert_eq!(around, BTreeSet::new(), "the command line goes around the door: give the door what it needs");
}
