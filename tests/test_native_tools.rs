//! The read-side native tools: `list_files` and `search` respect .gitignore and
//! bound their output; `read_file` reads line ranges, caps size, refuses binaries.

mod support;

use clat_host::contract::PermissionMode;
use clat_host::limits::READ_FILE_MAX_BYTES;
use serde_json::json;
use support::{TestEnv, run_in, text};

async fn call(env: &TestEnv, tool: &str, args: serde_json::Value) -> clat_host::contract::ToolOutput {
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::ReadOnly);
    scope.registry().call(tool, args, &run).await.expect("read tools run in read-only mode")
}

fn project() -> TestEnv {
    let env = TestEnv::trusted();
    env.write(".gitignore", "target/\n*.log\n");
    env.write("src/main.rs", "fn main() {\n    println!(\"needle\");\n}\n");
    env.write("src/util.rs", "pub fn helper() {}\n// Needle in caps\n");
    env.write("target/debug/junk.rs", "needle\n");
    env.write("build.log", "needle\n");
    env.write(".hidden/config", "needle\n");
    env.write(".git/HEAD", "needle\n");
    std::fs::write(env.project.join("image.bin"), b"needle\0\x01\x02").unwrap();
    env
}

#[tokio::test]
async fn list_files_respects_gitignore() {
    let env = project();
    let out = call(&env, "list_files", json!({})).await;
    let listing = text(&out);
    let lines: Vec<&str> = listing.lines().collect();
    assert!(lines.contains(&"src/"));
    assert!(lines.contains(&"src/main.rs"));
    assert!(lines.contains(&".gitignore"));
    assert!(lines.contains(&".hidden/config"));
    assert!(!listing.contains("target"), "{listing}");
    assert!(!listing.contains("build.log"));
    assert!(!listing.contains(".git/"), "{listing}");
    let out = call(&env, "list_files", json!({ "recursive": false })).await;
    assert!(!text(&out).contains("src/main.rs"));
    assert!(text(&out).contains("src/"));
    let out = call(&env, "list_files", json!({ "path": "src" })).await;
    assert_eq!(text(&out), "src/main.rs\nsrc/util.rs");
}

#[tokio::test]
async fn list_files_is_bounded() {
    let env = TestEnv::trusted();
    for i in 0..30 {
        env.write(&format!("f{i:02}.txt"), "x");
    }
    let out = call(&env, "list_files", json!({ "max_entries": 10 })).await;
    let listing = text(&out);
    assert_eq!(listing.lines().count(), 11);
    assert!(listing.contains("listing stopped at 10 entries"));
    let out = call(&env, "list_files", json!({ "path": "f00.txt" })).await;
    assert!(out.is_error && text(&out).contains("not a directory"));
}

#[tokio::test]
async fn search_finds_matches_and_skips_ignored_and_binary_files() {
    let env = project();
    let out = call(&env, "search", json!({ "pattern": "needle" })).await;
    let hits = text(&out);
    assert!(hits.contains("src/main.rs:2:     println!(\"needle\");"), "{hits}");
    assert!(hits.contains(".hidden/config:1: needle"));
    for absent in ["target/", "build.log", ".git/", "image.bin", "util.rs"] {
        assert!(!hits.contains(absent), "{absent} in {hits}");
    }
    let out = call(&env, "search", json!({ "pattern": "needle", "case_insensitive": true, "path": "src" })).await;
    assert!(text(&out).contains("src/util.rs:2: // Needle in caps"));
    let out = call(&env, "search", json!({ "pattern": "println!(", "literal": true })).await;
    assert!(text(&out).contains("src/main.rs:2:"));
    let out = call(&env, "search", json!({ "pattern": "println!(" })).await;
    assert!(out.is_error && text(&out).contains("invalid regular expression"));
    let out = call(&env, "search", json!({ "pattern": "no-such-thing" })).await;
    assert_eq!(text(&out), "(no matches)");
}

#[tokio::test]
async fn search_results_are_bounded() {
    let env = TestEnv::trusted();
    env.write("many.txt", &"hit\n".repeat(50));
    let out = call(&env, "search", json!({ "pattern": "hit", "max_results": 5 })).await;
    let hits = text(&out);
    assert_eq!(hits.lines().count(), 6);
    assert!(hits.contains("stopped at 5 matches"));
}

#[tokio::test]
async fn read_file_ranges_caps_and_binaries() {
    let env = project();
    let out = call(&env, "read_file", json!({ "path": "src/main.rs", "start_line": 2, "end_line": 3 })).await;
    assert_eq!(text(&out), "    println!(\"needle\");\n}\n");
    let out = call(&env, "read_file", json!({ "path": "src/main.rs", "start_line": 3, "end_line": 2 })).await;
    assert!(out.is_error);
    let out = call(&env, "read_file", json!({ "path": "src/main.rs", "start_line": 99 })).await;
    assert!(out.is_error && text(&out).contains("past the end"), "{}", text(&out));
    let out = call(&env, "read_file", json!({ "path": "image.bin" })).await;
    assert!(out.is_error && text(&out).contains("binary"));
    let out = call(&env, "read_file", json!({ "path": "src" })).await;
    assert!(out.is_error && text(&out).contains("directory"));
    let out = call(&env, "read_file", json!({ "path": "missing.txt" })).await;
    assert!(out.is_error && text(&out).contains("missing.txt"));

    let line = format!("{}\n", "y".repeat(99));
    env.write("big.txt", &line.repeat(READ_FILE_MAX_BYTES / 100 + 500));
    let out = call(&env, "read_file", json!({ "path": "big.txt" })).await;
    let body = text(&out);
    assert!(!out.is_error);
    assert!(body.len() <= READ_FILE_MAX_BYTES + 200);
    let next = READ_FILE_MAX_BYTES / 100 + 1;
    assert!(body.contains(&format!("continue with start_line={next}")), "{}", &body[body.len() - 200..]);
    let out = call(&env, "read_file", json!({ "path": "big.txt", "start_line": next })).await;
    assert!(text(&out).starts_with("yyyy"));
}

#[tokio::test]
async fn every_native_tools_schema_compiles_when_it_is_first_called() {
    // Native schemas are compiled at a tool's first call, not at mount: each must compile.
    let env = project();
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::ReadOnly);
    let natives: Vec<_> =
        scope.registry().list().into_iter().filter(|t| t.source == clat_host::registry::ToolSource::Native).collect();
    assert_eq!(natives.len(), 6);
    for tool in natives {
        match scope.registry().call(&tool.name, json!(7), &run).await {
            Err(clat_host::registry::CallError::InvalidArguments { reason, .. }) => {
                assert!(!reason.contains("does not compile") && reason.contains("object"), "{}: {reason}", tool.name);
            }
            other => panic!("{}: arguments that are not an object are refused by the schema: {other:?}", tool.name),
        }
    }
}

#[tokio::test]
async fn files_at_and_just_past_the_inline_read_size_read_the_same() {
    // At most INLINE_READ_MAX_BYTES: read on the calling thread; one byte more: on the blocking pool.
    let env = project();
    let inline = clat_host::native::INLINE_READ_MAX_BYTES as usize;
    for (name, size) in [("at.txt", inline), ("past.txt", inline + 1)] {
        let body: String =
            (0..size).map(|i| if i % 64 == 63 { '\n' } else { (b'a' + (i % 26) as u8) as char }).collect();
        env.write(name, &body);
        let out = call(&env, "read_file", json!({ "path": name })).await;
        assert!(!out.is_error, "{name}: {}", text(&out));
        assert_eq!(text(&out), body, "{name}");
        let out = call(&env, "read_file", json!({ "path": name, "start_line": 1024, "end_line": 1024 })).await;
        assert_eq!(text(&out), body.lines().nth(1023).map(|l| format!("{l}\n")).unwrap_or_default(), "{name}");
    }
}

#[tokio::test]
async fn search_skips_files_over_its_size_limit_and_says_so() {
    let env = TestEnv::trusted();
    let limit = clat_host::limits::SEARCH_MAX_FILE_BYTES as usize;
    env.write("small.txt", "needle\n");
    env.write("huge.txt", &format!("needle\n{}", "z".repeat(limit)));
    let out = call(&env, "search", json!({ "pattern": "needle" })).await;
    let hits = text(&out);
    assert!(hits.contains("small.txt:1: needle"), "{hits}");
    assert!(!hits.contains("huge.txt:"), "{hits}");
    assert!(hits.contains("1 file(s) over"), "{hits}");
}
