//! The README's five-minute tour works as written: every fenced `sh` block of
//! its "A five-minute tour" section runs, in order, in one shell, in a fresh
//! home. The shell starts in a mirror of this repository holding what the demo
//! leaves behind — the built `clat` in `target/debug/` and the example plugins
//! in `guests/target/packages/` — and `npx` is answered by the locally
//! installed reference server (the test's stand-in for the npm registry).

mod support;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use clat_guest_artifacts as guests;

fn tour_blocks(readme: &str) -> Vec<String> {
    let tour = readme.split("## A five-minute tour").nth(1).expect("the README has a tour");
    let tour = tour.split("\n## ").next().unwrap();
    tour.split("```sh\n").skip(1).map(|rest| rest.split("\n```").next().unwrap().to_string()).collect()
}

#[test]
fn the_readme_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = tour_blocks(&readme);
    assert!(blocks.len() >= 3, "{blocks:?}");

    let work = tempfile::tempdir().unwrap();
    let mirror = work.path().join("repo");
    std::fs::create_dir_all(mirror.join("target/debug")).unwrap();
    std::fs::create_dir_all(mirror.join("guests/target")).unwrap();
    symlink(env!("CARGO_BIN_EXE_clat"), mirror.join("target/debug/clat")).unwrap();
    let packages = Path::new(guests::HELLO_PACKAGE).parent().unwrap();
    symlink(packages, mirror.join("guests/target/packages")).unwrap();

    let everything = root.join("tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(everything.exists(), "the test peers are not installed: run scripts/install-test-peers.sh");
    let bin = work.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let npx = bin.join("npx");
    std::fs::write(
        &npx,
        format!(
            "#!/bin/sh\ncase \"$*\" in *@modelcontextprotocol/server-everything*) exec node '{}' ;; esac\n\
             echo \"npx stand-in: unexpected $*\" >&2; exit 1\n",
            everything.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&npx, std::fs::Permissions::from_mode(0o755)).unwrap();

    let script = format!("set -e\ncd '{}'\n{}\n", mirror.display(), blocks.join("\n"));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let tmp: PathBuf = work.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("CLAT_HOME", work.path().join("home"))
        .env("CLAT_CREDENTIAL_STORE", "file")
        .env("TMPDIR", &tmp)
        .env("PATH", path)
        .env_remove("CLAT_MODEL_BASE_URL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the tour stopped:\n{script}\n---\n{said}");
    for expected in [
        "exit 3: nothing starts",
        "trusted ",
        "wasm_hello_greet",
        "mcp_everything_echo",
        "main.rs",
        "Hello, you",
        "one registry",
        r#""type":"permission""#,
        "exit 4: ask mode asks",
    ] {
        assert!(said.contains(expected), "{expected:?} is not in what the tour printed:\n{said}");
    }
}
