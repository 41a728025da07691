//! `clat plugin build DIR`: the project's language is known by its build file
//! (`Cargo.toml` → Rust, `package.json` → JavaScript, `pyproject.toml` →
//! Python); its toolchain is checked first (a missing one is named, with how
//! to install it), then run, its own output going to stderr as it comes; and
//! the package is assembled in `DIR/dist/`: the manifest, the built entry
//! under the name the manifest gives, and the test cases.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{AuthoringError, Language, io};
use crate::packages::{MANIFEST, read_manifest};

/// Where `build` assembles the package, inside the project.
pub const DIST_DIR: &str = "dist";
/// The author's test cases, in the project and in the package.
pub const CASES_FILE: &str = "cases.jsonl";

/// A built package.
#[derive(Debug, Clone)]
pub struct Built {
    /// The package directory (`DIR/dist`).
    pub package: PathBuf,
    pub language: Language,
    /// The size of the built entry.
    pub entry_bytes: u64,
}

/// The language of a project directory, by its build file; `None`: not a project (perhaps a package).
pub fn detect(dir: &Path) -> Option<Language> {
    [("Cargo.toml", Language::Rust), ("package.json", Language::Javascript), ("pyproject.toml", Language::Python)]
        .into_iter()
        .find(|(file, _)| dir.join(file).is_file())
        .map(|(_, language)| language)
}

/// Spawn `program --version`: is it there?
fn present(program: &str) -> bool {
    Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn missing(tool: &str, install: &str) -> AuthoringError {
    AuthoringError::MissingToolchain { tool: tool.into(), install: install.into() }
}

/// Build the project in `dir` and assemble its package in `dir/dist`.
pub fn build(dir: &Path) -> Result<Built, AuthoringError> {
    let manifest = read_manifest(dir).map_err(|e| AuthoringError::Invalid(e.to_string()))?;
    let language = detect(dir).ok_or_else(|| {
        AuthoringError::Invalid(format!(
            "{} has no Cargo.toml, package.json or pyproject.toml: it is not a plugin project (`clat plugin new` makes one)",
            dir.display()
        ))
    })?;
    let entry = match language {
        Language::Rust => build_rust(dir)?,
        other => {
            return Err(AuthoringError::Unsupported(format!(
                "building {} projects is not supported by this clat yet",
                other.as_str()
            )));
        }
    };
    let package = dir.join(DIST_DIR);
    if package.exists() {
        std::fs::remove_dir_all(&package).map_err(io(format!("cannot clear {}", package.display())))?;
    }
    let target = package.join(&manifest.entry);
    std::fs::create_dir_all(target.parent().unwrap_or(&package))
        .map_err(io(format!("cannot create {}", package.display())))?;
    std::fs::copy(dir.join(MANIFEST), package.join(MANIFEST)).map_err(io(format!("cannot copy {MANIFEST}")))?;
    let entry_bytes = std::fs::copy(&entry, &target).map_err(io(format!("cannot copy {}", entry.display())))?;
    if dir.join(CASES_FILE).is_file() {
        std::fs::copy(dir.join(CASES_FILE), package.join(CASES_FILE))
            .map_err(io(format!("cannot copy {CASES_FILE}")))?;
    }
    Ok(Built { package, language, entry_bytes })
}

/// `cargo build --release --target wasm32-wasip2`; the component is the
/// cdylib artifact cargo reports (wherever the target directory is).
fn build_rust(dir: &Path) -> Result<PathBuf, AuthoringError> {
    if !present("cargo") {
        return Err(missing(
            "cargo",
            "install Rust with rustup (https://rustup.rs), then `rustup target add wasm32-wasip2`",
        ));
    }
    if let Ok(out) = Command::new("rustup").args(["target", "list", "--installed"]).output()
        && out.status.success()
        && !String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == "wasm32-wasip2")
    {
        return Err(missing("the Rust target wasm32-wasip2", "run `rustup target add wasm32-wasip2`"));
    }
    let args = ["build", "--release", "--target", "wasm32-wasip2", "--message-format=json-render-diagnostics"];
    let command = format!("cargo {}", args.join(" "));
    let output = Command::new("cargo")
        .args(args)
        .current_dir(dir)
        // What a surrounding cargo (a test, a build script) sets for its own target must not leak in.
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(io(format!("cannot run {command}")))?;
    if !output.status.success() {
        return Err(AuthoringError::BuildFailed { command });
    }
    let mut component = None;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let cdylib = message["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "cdylib"));
        if message["reason"] == "compiler-artifact" && cdylib {
            let mut files = message["filenames"].as_array().into_iter().flatten().filter_map(|f| f.as_str());
            if let Some(wasm) = files.rfind(|f| f.ends_with(".wasm")) {
                component = Some(PathBuf::from(wasm));
            }
        }
    }
    component.ok_or_else(|| {
        AuthoringError::Invalid(format!(
            "{command} built no component: Cargo.toml needs `[lib] crate-type = [\"cdylib\"]`"
        ))
    })
}
