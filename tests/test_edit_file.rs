//! `write_file` and `edit_file`: atomic writes, exact replacement, and the
//! failures that change nothing (no match, several matches, bad arguments).

mod support;

use std::os::unix::fs::PermissionsExt;

use clat_host::contract::PermissionMode;
use clat_host::registry::CallError;
use serde_json::json;
use support::{TestEnv, run_in, text};

async fn call(
    env: &TestEnv,
    tool: &str,
    args: serde_json::Value,
) -> Result<clat_host::contract::ToolOutput, CallError> {
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::AutoEdit);
    scope.registry().call(tool, args, &run).await
}

fn leftovers(env: &TestEnv) -> Vec<String> {
    let mut names = Vec::new();
    for dir in [env.project.clone(), env.project.join("src")] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            names.extend(
                rd.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".tmp")),
            );
        }
    }
    names
}

#[tokio::test]
async fn an_exact_single_match_is_replaced() {
    let env = TestEnv::trusted();
    env.write("src/lib.rs", "fn a() {}\nfn b() {}\n");
    let out = call(&env, "edit_file", json!({ "path": "src/lib.rs", "old_string": "fn b()", "new_string": "fn c()" }))
        .await
        .unwrap();
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(env.read("src/lib.rs"), "fn a() {}\nfn c() {}\n");
    assert!(leftovers(&env).is_empty());
}

#[tokio::test]
async fn no_match_fails_and_changes_nothing() {
    let env = TestEnv::trusted();
    env.write("a.txt", "hello world\n");
    let out = call(&env, "edit_file", json!({ "path": "a.txt", "old_string": "hello  world", "new_string": "x" }))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("not found"), "{}", text(&out));
    assert_eq!(env.read("a.txt"), "hello world\n");
}

#[tokio::test]
async fn several_matches_fail_unless_replace_all() {
    let env = TestEnv::trusted();
    env.write("a.txt", "x = 1\nx = 1\nx = 1\n");
    let out = call(&env, "edit_file", json!({ "path": "a.txt", "old_string": "x = 1", "new_string": "x = 2" }))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("occurs 3 times"), "{}", text(&out));
    assert_eq!(env.read("a.txt"), "x = 1\nx = 1\nx = 1\n");
    let out = call(
        &env,
        "edit_file",
        json!({ "path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true }),
    )
    .await
    .unwrap();
    assert!(!out.is_error);
    assert!(text(&out).contains("replaced 3 occurrences"));
    assert_eq!(env.read("a.txt"), "x = 2\nx = 2\nx = 2\n");
}

#[tokio::test]
async fn missing_files_and_bad_arguments_are_clear_errors() {
    let env = TestEnv::trusted();
    let out =
        call(&env, "edit_file", json!({ "path": "nope.txt", "old_string": "a", "new_string": "b" })).await.unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("nope.txt"), "{}", text(&out));
    let err =
        call(&env, "edit_file", json!({ "path": "a.txt", "old_string": "", "new_string": "b" })).await.unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    let err = call(&env, "edit_file", json!({ "path": "a.txt", "old_string": "a" })).await.unwrap_err();
    assert!(err.to_string().contains("new_string"), "{err}");
    let err = call(&env, "write_file", json!({ "path": "a.txt", "content": 5 })).await.unwrap_err();
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    assert!(!env.project.join("a.txt").exists());
}

#[tokio::test]
async fn writes_are_atomic_keep_permissions_and_create_directories() {
    let env = TestEnv::trusted();
    let script = env.write("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = call(&env, "write_file", json!({ "path": "run.sh", "content": "#!/bin/sh\necho new\n" })).await.unwrap();
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(env.read("run.sh"), "#!/bin/sh\necho new\n");
    assert_eq!(std::fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
    let out = call(&env, "write_file", json!({ "path": "deep/er/new.txt", "content": "n" })).await.unwrap();
    assert!(!out.is_error);
    assert_eq!(env.read("deep/er/new.txt"), "n");
    let out = call(&env, "write_file", json!({ "path": "other/new.txt", "content": "n", "create_dirs": false }))
        .await
        .unwrap();
    assert!(out.is_error);
    // Writing over a directory fails and leaves it alone.
    std::fs::create_dir(env.project.join("adir")).unwrap();
    let out = call(&env, "write_file", json!({ "path": "adir", "content": "n" })).await.unwrap();
    assert!(out.is_error && text(&out).contains("directory"), "{}", text(&out));
    assert!(env.project.join("adir").is_dir());
    assert!(leftovers(&env).is_empty(), "no temporary file is left behind");
}

#[tokio::test]
async fn oversized_content_is_refused_before_anything_is_written() {
    let env = TestEnv::trusted();
    let big = "x".repeat(clat_host::limits::WRITE_FILE_MAX_BYTES + 1);
    let out = call(&env, "write_file", json!({ "path": "big.txt", "content": big })).await.unwrap();
    assert!(out.is_error);
    assert!(text(&out).contains("limit"), "{}", text(&out));
    assert!(!env.project.join("big.txt").exists());
}
