//! The project path fence: `..`, absolute paths and symlinks that leave the
//! root are refused with a clear error; symlinks inside the root work.

mod support;

use clat_host::contract::PermissionMode;
use serde_json::json;
use support::{TestEnv, run_in, text};

async fn call(env: &TestEnv, tool: &str, args: serde_json::Value) -> clat_host::contract::ToolOutput {
    let scope = env.mount();
    let (run, _) = run_in(PermissionMode::FullAccess);
    scope.registry().call(tool, args, &run).await.expect("the pipeline runs the tool")
}

#[tokio::test]
async fn dot_dot_that_leaves_the_root_is_refused() {
    let env = TestEnv::trusted();
    std::fs::write(env.dir.path().join("secret.txt"), "secret").unwrap();
    env.write("sub/a.txt", "a");
    let out = call(&env, "read_file", json!({ "path": "../secret.txt" })).await;
    assert!(out.is_error);
    assert!(text(&out).contains("leaves the project root"), "{}", text(&out));
    let out = call(&env, "read_file", json!({ "path": "sub/../../secret.txt" })).await;
    assert!(out.is_error && text(&out).contains("leaves the project root"));
    // `..` that stays inside is fine.
    let out = call(&env, "read_file", json!({ "path": "sub/../sub/a.txt" })).await;
    assert!(!out.is_error, "{}", text(&out));
    let out = call(&env, "write_file", json!({ "path": "../planted.txt", "content": "x" })).await;
    assert!(out.is_error);
    assert!(!env.dir.path().join("planted.txt").exists(), "nothing was written outside");
    let out = call(&env, "list_files", json!({ "path": ".." })).await;
    assert!(out.is_error && text(&out).contains("leaves the project root"));
    let out = call(&env, "search", json!({ "pattern": "secret", "path": "../" })).await;
    assert!(out.is_error && text(&out).contains("leaves the project root"));
}

#[tokio::test]
async fn absolute_paths_outside_the_root_are_refused_and_inside_accepted() {
    let env = TestEnv::trusted();
    env.write("a.txt", "inside\n");
    let out = call(&env, "read_file", json!({ "path": "/etc/hostname" })).await;
    assert!(out.is_error);
    assert!(text(&out).contains("absolute path"), "{}", text(&out));
    let inside = env.project.canonicalize().unwrap().join("a.txt");
    let out = call(&env, "read_file", json!({ "path": inside.to_str().unwrap() })).await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(text(&out), "inside\n");
}

#[tokio::test]
async fn symlinks_that_leave_the_root_are_refused() {
    let env = TestEnv::trusted();
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(outside.join("secret.txt"), env.project.join("file-link")).unwrap();
    std::os::unix::fs::symlink(&outside, env.project.join("dir-link")).unwrap();

    let out = call(&env, "read_file", json!({ "path": "file-link" })).await;
    assert!(out.is_error);
    assert!(text(&out).contains("symlink"), "{}", text(&out));
    let out = call(&env, "read_file", json!({ "path": "dir-link/secret.txt" })).await;
    assert!(out.is_error && text(&out).contains("symlink"), "{}", text(&out));
    let out = call(&env, "write_file", json!({ "path": "dir-link/planted.txt", "content": "x" })).await;
    assert!(out.is_error, "{}", text(&out));
    assert!(!outside.join("planted.txt").exists(), "nothing was written through the link");
    let out =
        call(&env, "edit_file", json!({ "path": "file-link", "old_string": "secret", "new_string": "pwned" })).await;
    assert!(out.is_error);
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "secret");
    let out = call(&env, "list_files", json!({ "path": "dir-link" })).await;
    assert!(out.is_error && text(&out).contains("symlink"), "{}", text(&out));
    let out = call(&env, "search", json!({ "pattern": "secret" })).await;
    assert!(!out.is_error);
    assert!(!text(&out).contains("secret.txt:"), "search never follows links out: {}", text(&out));
}

#[tokio::test]
async fn symlinks_inside_the_root_work() {
    let env = TestEnv::trusted();
    env.write("real/data.txt", "data\n");
    std::os::unix::fs::symlink("real/data.txt", env.project.join("alias.txt")).unwrap();
    std::os::unix::fs::symlink("real", env.project.join("alias-dir")).unwrap();
    let out = call(&env, "read_file", json!({ "path": "alias.txt" })).await;
    assert_eq!(text(&out), "data\n");
    let out = call(&env, "read_file", json!({ "path": "alias-dir/data.txt" })).await;
    assert_eq!(text(&out), "data\n");
    let out = call(&env, "list_files", json!({ "path": "alias-dir" })).await;
    assert!(!out.is_error && text(&out).contains("data.txt"), "{}", text(&out));
}
