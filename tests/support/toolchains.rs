//! The JavaScript and Python guests (`guests/js/*`, `guests/python/*`; and
//! `guests/js/contract-mcp`, an MCP server bundled with its dependencies), built
//! by the test command itself with the pinned toolchains that
//! `scripts/install-guest-toolchains.sh` puts in `tests/guest-toolchains/`,
//! through `clat plugin build` (the path an author takes). A build is kept in
//! the target's temporary directory under the hash of its sources and the
//! toolchains' pins, so a guest is built once and only again when either changes.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

/// componentize-js, as the install script puts it.
pub fn componentize_js() -> PathBuf {
    let tool = root().join("tests/guest-toolchains/node_modules/.bin/componentize-js");
    assert!(tool.is_file(), "{} is missing: run scripts/install-guest-toolchains.sh", tool.display());
    tool
}

/// componentize-py, as the install script puts it.
pub fn componentize_py() -> PathBuf {
    let tool = root().join("tests/guest-toolchains/.venv/bin/componentize-py");
    assert!(tool.is_file(), "{} is missing: run scripts/install-guest-toolchains.sh", tool.display());
    tool
}

/// esbuild, as the install script puts it.
pub fn esbuild() -> PathBuf {
    let tool = root().join("tests/guest-toolchains/node_modules/.bin/esbuild");
    assert!(tool.is_file(), "{} is missing: run scripts/install-guest-toolchains.sh", tool.display());
    tool
}

/// The environment that points `clat plugin build` at the pinned toolchains.
pub fn toolchain_env() -> Vec<(&'static str, String)> {
    vec![
        ("CLAT_COMPONENTIZE_JS", componentize_js().display().to_string()),
        ("CLAT_ESBUILD", esbuild().display().to_string()),
        ("CLAT_COMPONENTIZE_PY", componentize_py().display().to_string()),
    ]
}

fn files(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir.join(rel)).unwrap().flatten() {
        let name = rel.join(entry.file_name());
        if entry.path().is_dir() {
            if !["dist", "target", "node_modules", "__pycache__"].contains(&entry.file_name().to_str().unwrap_or("")) {
                files(dir, &name, out);
            }
        } else {
            out.push(name);
        }
    }
}

/// The package directory of `guests/{lang}/{name}` (`lang`: `js` or `python`), built if needed.
pub fn package(lang: &str, name: &str) -> PathBuf {
    let source = root().join("guests").join(lang).join(name);
    let mut sources = Vec::new();
    files(&source, Path::new(""), &mut sources);
    sources.sort();
    let mut hasher = Sha256::new();
    // The pinned toolchains are part of the key: a new one rebuilds.
    for pin in ["tests/guest-toolchains/package-lock.json", "tests/guest-toolchains/requirements.txt"] {
        hasher.update(std::fs::read(root().join(pin)).unwrap());
    }
    for rel in &sources {
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update(std::fs::read(source.join(rel)).unwrap());
    }
    let key: String = hasher.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect();
    let builds = Path::new(env!("CARGO_TARGET_TMPDIR")).join("guest-builds");
    let built = builds.join(format!("{lang}-{name}-{key}"));
    if built.join("dist/clat-plugin.toml").is_file() {
        return built.join("dist");
    }
    let staging = builds.join(format!(".{lang}-{name}-{}", uuid::Uuid::new_v4().simple()));
    for rel in &sources {
        std::fs::create_dir_all(staging.join(rel).parent().unwrap()).unwrap();
        std::fs::copy(source.join(rel), staging.join(rel)).unwrap();
    }
    if std::fs::read_to_string(staging.join("package.json")).is_ok_and(|p| p.contains("\"dependencies\"")) {
        // `npm install`, from the pinned toolchain directory (the MCP SDK, zod and esbuild are there).
        let modules = root().join("tests/guest-toolchains/node_modules");
        assert!(modules.is_dir(), "{} is missing: run scripts/install-guest-toolchains.sh", modules.display());
        std::os::unix::fs::symlink(&modules, staging.join("node_modules")).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_clat"))
        .args(["-q", "plugin", "build"])
        .arg(&staging)
        .envs(toolchain_env())
        .output()
        .expect("run clat plugin build");
    assert!(
        out.status.success(),
        "building guests/{lang}/{name} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Another test binary may have finished the same build meanwhile: either copy is the same.
    if std::fs::rename(&staging, &built).is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    built.join("dist")
}

/// The component of a built package.
pub fn component(lang: &str, name: &str) -> PathBuf {
    let package = package(lang, name);
    let manifest = std::fs::read_to_string(package.join("clat-plugin.toml")).unwrap();
    let entry = manifest.lines().find_map(|l| l.strip_prefix("entry = \"")?.strip_suffix('"')).unwrap().to_string();
    package.join(entry)
}
