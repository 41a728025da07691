//! Plugin packages: manifests, validation, immutable artifact directories,
//! list and remove, and mounting installed plugins beside the native tools —
//! through the library and the `clat` binary. A broken plugin is isolated.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clat_guest_artifacts as guests;
use clat_host::supply::packages::{PackageError, PackageKind, PackageStore, read_manifest};
use serde_json::Value;
use support::{TestEnv, stderr, stdout};

/// A copy of a built package that the test may change.
fn package_copy(env: &TestEnv, from: &str, name: &str) -> PathBuf {
    let dir = env.dir.path().join("pkgs").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    dir
}

fn write_manifest(dir: &Path, text: &str) {
    std::fs::write(dir.join("clat-plugin.toml"), text).unwrap();
}

#[test]
fn install_copies_into_a_read_only_content_addressed_directory() {
    let env = TestEnv::new();
    let store = PackageStore::new(&env.clat_home());
    let installed = store.install(Path::new(guests::HELLO_PACKAGE), |_, _| Ok(())).unwrap();
    assert_eq!(installed.manifest.name, "hello");
    assert_eq!(installed.manifest.kind, PackageKind::Wasm);
    assert!(installed.dir.starts_with(env.home.join("plugins/artifacts")));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&installed.dir), 0o555);
    assert_eq!(mode(&installed.entry_path()), 0o444);
    // Same content → same directory; new content → a new directory, the old one removed.
    let again = store.install(Path::new(guests::HELLO_PACKAGE), |_, _| Ok(())).unwrap();
    assert_eq!(again.dir, installed.dir);
    let changed = package_copy(&env, guests::HELLO_PACKAGE, "hello");
    std::fs::write(changed.join("README"), "extra file").unwrap();
    let newer = store.install(&changed, |_, _| Ok(())).unwrap();
    assert_ne!(newer.dir, installed.dir);
    assert!(!installed.dir.exists(), "the replaced version's directory is gone");
    assert_eq!(store.list().unwrap().len(), 1);
}

#[test]
fn a_failed_validation_leaves_nothing_visible() {
    let env = TestEnv::new();
    let store = PackageStore::new(&env.clat_home());
    let err = store.install(Path::new(guests::HELLO_PACKAGE), |_, _| Err("rejected by the test".into())).unwrap_err();
    assert!(err.to_string().contains("rejected by the test"));
    assert!(store.list().unwrap().is_empty());
    let artifacts: Vec<_> = std::fs::read_dir(env.home.join("plugins/artifacts")).unwrap().flatten().collect();
    assert!(artifacts.is_empty(), "no artifact or staging directory is left: {artifacts:?}");
}

#[test]
fn manifests_are_checked_with_clear_errors() {
    let env = TestEnv::new();
    let dir = package_copy(&env, guests::HELLO_PACKAGE, "bad");
    let cases = [
        (
            "name = \"hello\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"hello.wasm\"\ncolour = \"red\"\n",
            "unknown field",
        ),
        (
            "name = \"Hello World\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"hello.wasm\"\n",
            "must be 1–64 characters",
        ),
        ("name = \"h\"\nversion = \"1\"\nkind = \"python\"\nentry = \"hello.wasm\"\n", "unknown variant"),
        ("name = \"h\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"../hello.wasm\"\n", "inside the package"),
        (
            "name = \"h\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"hello.wasm\"\nargs = [\"-x\"]\n",
            "mcp-stdio packages only",
        ),
        (
            "name = \"h\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"hello.wasm\"\n[limits]\nmemory_mb = 100000\n",
            "memory_mb",
        ),
        ("name = \"h\"\nversion = \"1\"\nkind = [\n", "clat-plugin.toml"),
        (
            "name = \"h\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"hello.wasm\"\n[tools.greet]\neffect = \"write\"\n",
            "description and effect are a plain component's",
        ),
    ];
    for (text, expected) in cases {
        write_manifest(&dir, text);
        let err = read_manifest(&dir).unwrap_err();
        assert!(matches!(err, PackageError::Manifest { .. }), "{err}");
        assert!(err.to_string().contains(expected), "{text:?}: {err}");
    }
    write_manifest(&dir, "name = \"h\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"missing.wasm\"\n");
    let err = PackageStore::new(&env.clat_home()).install(&dir, |_, _| Ok(())).unwrap_err();
    assert!(err.to_string().contains("missing.wasm"), "{err}");
}

#[test]
fn mcp_stdio_entries_must_be_executable() {
    let env = TestEnv::new();
    let dir = env.dir.path().join("server");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("serve.sh"), "#!/bin/sh\nexit 0\n").unwrap();
    write_manifest(
        &dir,
        "name = \"srv\"\nversion = \"1\"\nkind = \"mcp-stdio\"\nentry = \"serve.sh\"\nargs = [\"--stdio\"]\n",
    );
    let store = PackageStore::new(&env.clat_home());
    let err = store.install(&dir, |_, _| Ok(())).unwrap_err();
    assert!(err.to_string().contains("must be executable"), "{err}");
    std::fs::set_permissions(dir.join("serve.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let installed = store.install(&dir, |_, _| Ok(())).unwrap();
    assert_eq!(std::fs::metadata(installed.entry_path()).unwrap().permissions().mode() & 0o777, 0o555);
    assert_eq!(installed.manifest.args, vec!["--stdio".to_string()]);
}

#[test]
fn symlinks_in_packages_are_refused() {
    let env = TestEnv::new();
    let dir = package_copy(&env, guests::HELLO_PACKAGE, "linky");
    std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd")).unwrap();
    let err = PackageStore::new(&env.clat_home()).install(&dir, |_, _| Ok(())).unwrap_err();
    assert!(err.to_string().contains("symlink"), "{err}");
}

#[test]
fn the_cli_installs_lists_mounts_calls_and_removes() {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", guests::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("installed hello 0.1.0 (wasm)"));
    assert!(stdout(&out).contains("tool wasm_hello_greet"));
    let out = env.clat(&["plugin", "install", guests::PROJECT_NOTES_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let out = env.clat(&["plugin", "list", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> =
        v["plugins"].as_array().unwrap().iter().map(|p| p["manifest"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hello", "project-notes"]);

    let out = env.clat(&["tools", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tools: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.starts_with(&["list_files", "read_file", "search", "write_file", "edit_file", "run_command"]));
    assert!(tools.contains(&"wasm_hello_greet") && tools.contains(&"wasm_project_notes_todos"), "{tools:?}");
    let hello = v["tools"].as_array().unwrap().iter().find(|t| t["name"] == "wasm_hello_greet").unwrap();
    assert_eq!(hello["source"], serde_json::json!({ "kind": "wasm", "plugin": "hello", "tool": "greet" }));
    assert_eq!(v["extensions"][0]["state"], "ready");

    let out = env.clat(&["call", "wasm_hello_greet", r#"{"name":"CLI"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello, CLI! (from a WASM plugin)\n");

    let out = env.clat(&["plugin", "remove", "hello"]);
    assert_eq!(out.status.code(), Some(0));
    let out = env.clat(&["call", "wasm_hello_greet", "{}"]);
    assert_eq!(out.status.code(), Some(2), "gone after remove");
    let out = env.clat(&["plugin", "remove", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no plugin named \"hello\""));
}

#[test]
fn the_cli_refuses_a_component_that_is_not_a_plugin() {
    let env = TestEnv::new();
    let dir = package_copy(&env, guests::HELLO_PACKAGE, "fake");
    std::fs::write(dir.join("hello.wasm"), b"\0asm not really").unwrap();
    let out = env.clat(&["plugin", "install", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not a valid WebAssembly component"), "{}", stderr(&out));
    assert!(!env.home.join("plugins/installed.json").exists());
}

#[test]
fn a_broken_installed_plugin_is_isolated_at_mount() {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", guests::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Install a second package, then break its artifact behind CLAT's back.
    let out = env.clat(&["plugin", "install", guests::PROJECT_NOTES_PACKAGE]);
    assert_eq!(out.status.code(), Some(0));
    let list = PackageStore::new(&env.clat_home()).list().unwrap();
    let notes = list.iter().find(|p| p.manifest.name == "project-notes").unwrap();
    std::fs::set_permissions(&notes.dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(notes.entry_path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(notes.entry_path(), b"garbage").unwrap();
    // And what was derived from it at install: its kept listing and compiled form (otherwise the load would take
    // its tools from the listing and a call would map the compiled form, never reading the component).
    std::fs::remove_file(env.home.join(clat_host::home::listings::PLUGIN_LISTINGS_DIR).join("project-notes.json"))
        .unwrap();
    std::fs::remove_dir_all(env.home.join(clat_host::scope::WASM_CACHE_DIR)).unwrap();

    let out = env.clat(&["tools", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let tools: Vec<&str> = v["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"wasm_hello_greet"));
    assert!(!tools.iter().any(|t| t.starts_with("wasm_project_notes")));
    let broken = v["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "project-notes").unwrap();
    assert_eq!(broken["state"], "failed");
    assert!(broken["problems"][0].as_str().unwrap().contains("not a valid WebAssembly component"));
    let out = env.clat(&["tools"]);
    assert!(stderr(&out).contains("plugin project-notes (failed)"), "{}", stderr(&out));
    let out = env.clat(&["call", "wasm_hello_greet", "{}"]);
    assert_eq!(out.status.code(), Some(0), "the healthy plugin still works");
}

#[tokio::test]
async fn requested_memory_limits_apply_and_a_plugin_over_its_limit_is_isolated() {
    let env = TestEnv::trusted();
    let store = PackageStore::new(&env.clat_home());
    for (name, memory_mb) in [("roomy", 64), ("cramped", 1)] {
        let dir = package_copy(&env, guests::HELLO_PACKAGE, name);
        write_manifest(
            &dir,
            &format!(
                "name = \"{name}\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"hello.wasm\"\n[limits]\nmemory_mb = {memory_mb}\n"
            ),
        );
        store.install(&dir, |_, _| Ok(())).unwrap();
    }
    let scope = env.mount();
    let statuses = scope.load_plugins().await;
    let roomy = statuses.iter().find(|s| s.name == "roomy").unwrap();
    let cramped = statuses.iter().find(|s| s.name == "cramped").unwrap();
    assert_eq!(roomy.state, "ready", "{roomy:?}");
    assert_eq!(cramped.state, "failed", "1 MiB is less than the guest's initial memory: {cramped:?}");
    assert!(cramped.problems[0].contains("plugin cramped failed"), "{cramped:?}");
    let names: Vec<String> = scope.registry().list().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"wasm_roomy_greet".to_string()));
    assert!(!names.iter().any(|n| n.starts_with("wasm_cramped")));
}

#[test]
fn packages_over_the_file_limit_are_refused() {
    let env = TestEnv::new();
    let dir = package_copy(&env, guests::HELLO_PACKAGE, "many");
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    for i in 0..clat_host::limits::PACKAGE_MAX_FILES {
        std::fs::write(dir.join("assets").join(format!("{i}")), "").unwrap();
    }
    let err = PackageStore::new(&env.clat_home()).install(&dir, |_, _| Ok(())).unwrap_err();
    assert!(err.to_string().contains("exceeds 10000 files"), "{err}");
    assert!(PackageStore::new(&env.clat_home()).list().unwrap().is_empty());
}

#[test]
fn an_installed_plugin_loads_from_its_cached_compiled_form_without_reading_the_component() {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", guests::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let greet = |env: &TestEnv| env.clat(&["call", "wasm_hello_greet", r#"{"name":"again"}"#]);
    // The first load names the compiled form after the content-addressed artifact.
    let out = greet(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // From then on the component file is not even read: junk in its place changes nothing.
    let store = PackageStore::new(&env.clat_home());
    let installed = store.list().unwrap().into_iter().find(|p| p.manifest.name == "hello").unwrap();
    let entry = installed.entry_path();
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(&entry, b"not a component").unwrap();
    let out = greet(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello, again! (from a WASM plugin)\n");
}

#[test]
fn four_concurrent_installs_lose_no_record() {
    let env = TestEnv::trusted();
    let packages =
        [guests::HELLO_PACKAGE, guests::PROJECT_NOTES_PACKAGE, guests::SUMMARIZE_PACKAGE, guests::ASK_NAME_PACKAGE];
    let commands: Vec<Vec<&str>> = packages.iter().map(|package| vec!["plugin", "install", package]).collect();
    assert!(support::clat_concurrently(&env, &commands).into_iter().all(|ok| ok));
    let mut names: Vec<String> =
        PackageStore::new(&env.clat_home()).list().unwrap().into_iter().map(|p| p.manifest.name).collect();
    names.sort();
    assert_eq!(names, ["ask-name", "hello", "project-notes", "summarize"]);
}

/// The compiled cache's entries (`*.cwasm`), sorted.
fn cache_entries(env: &TestEnv) -> Vec<String> {
    let dir = env.home.join(clat_host::scope::WASM_CACHE_DIR);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.retain(|n| n.ends_with(".cwasm"));
    names.sort();
    names
}

#[test]
fn compiled_cache_entries_go_with_a_remove_a_reinstall_and_a_failed_install() {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", guests::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.clat(&["call", "wasm_hello_greet", "{}"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let first = cache_entries(&env);
    assert_eq!(first.len(), 2, "the content entry and the one named after the artifact: {first:?}");

    // A reinstall with other bytes replaces both of the old version's entries.
    let changed = package_copy(&env, guests::HELLO_PACKAGE, "hello");
    write_manifest(&changed, "name = \"hello\"\nversion = \"0.2.0\"\nkind = \"wasm\"\nentry = \"hello.wasm\"\n");
    let out = env.clat(&["plugin", "install", changed.to_str().unwrap(), "--replace"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.clat(&["call", "wasm_hello_greet", "{}"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let second = cache_entries(&env);
    assert_eq!(second.len(), 2, "{second:?}");
    // Same component bytes: the content entry stays, the old named one is gone.
    assert_eq!(second.iter().filter(|e| first.contains(e)).count(), 1, "{first:?} → {second:?}");

    // A component that compiles but fails validation leaves no entry behind.
    let trap = package_copy(&env, guests::HELLO_PACKAGE, "trap");
    std::fs::remove_file(trap.join("hello.wasm")).unwrap();
    std::fs::copy(guests::TRAP_ON_LOAD_WASM, trap.join("trap.wasm")).unwrap();
    write_manifest(&trap, "name = \"trap\"\nversion = \"1\"\nkind = \"wasm\"\nentry = \"trap.wasm\"\n");
    let out = env.clat(&["plugin", "install", trap.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(cache_entries(&env), second, "the failed install's compiled form is gone");

    let out = env.clat(&["plugin", "remove", "hello"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(cache_entries(&env).is_empty(), "{:?}", cache_entries(&env));
}

#[test]
fn plugin_gc_removes_entries_no_installed_plugin_uses_and_keeps_the_rest() {
    let env = TestEnv::trusted();
    let out = env.clat(&["plugin", "install", guests::HELLO_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let kept = cache_entries(&env);
    assert_eq!(kept.len(), 2, "listed at install: the content entry and the one named after the artifact: {kept:?}");
    let cache = env.home.join(clat_host::scope::WASM_CACHE_DIR);
    // What an older wasmtime or a plugin removed by hand left behind, and a temp file of a write in progress.
    std::fs::write(cache.join("0123456789abcdef0123456789abcdef-0000000000000000.cwasm"), vec![0u8; 4096]).unwrap();
    std::fs::write(cache.join(".fresh.tmp"), b"being written").unwrap();
    let out = env.clat(&["plugin", "gc", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["removed_entries"], 1, "{v}");
    assert_eq!(v["freed_bytes"], 4096, "{v}");
    assert_eq!(cache_entries(&env), kept);
    assert!(cache.join(".fresh.tmp").exists(), "a recent temp file may be a write in progress");
    let out = env.clat(&["call", "wasm_hello_greet", "{}"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.clat(&["plugin", "gc"]);
    assert_eq!(stdout(&out), "removed 0 unused compiled cache entries (0 KB)\n");
}
