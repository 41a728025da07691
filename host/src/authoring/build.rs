//! `clat plugin build DIR`: the project's language is known by its build file
//! (`Cargo.toml` → Rust, `package.json` → JavaScript, `pyproject.toml` →
//! Python); its toolchain is checked first (a missing one is named, with how
//! to install it), then run, its own output going to stderr as it comes; and
//! the package is assembled in `DIR/dist/`: the manifest, the built entry
//! under the name the manifest gives, the test cases, and a plain
//! component's WIT (its functions' docs).
//!
//! - Rust: `cargo build --release --target wasm32-wasip2`.
//! - JavaScript: esbuild bundles the package's `main` (default
//!   `src/index.js`) with its dependencies, then componentize-js
//!   (`DIR/node_modules/.bin`, else `$CLAT_COMPONENTIZE_JS`, else PATH) builds
//!   the bundle with `--disable http fetch-event`: without it the
//!   component imports `wasi:http`, which guests get only when the manifest
//!   declares `[capabilities] http` (then only `fetch-event` is disabled, and
//!   the guest's `fetch` goes through the host's grant).
//! - Python: componentize-py (`DIR/.venv/bin`, else `$CLAT_COMPONENTIZE_PY`,
//!   else PATH) on the module `app`, for the world `clat-plugin`, or
//!   `clat-plugin-http` (`wit/http.wit`) when the manifest declares http.
//!
//! Both bind the contract from `DIR/wit/` (the template writes it there); a
//! plain component (`kind = "component"`) is built for the one world of its
//! own WIT there instead (`plain_world`), with no CLAT contract.
//! Before either runs, the language's own parser checks the author's sources
//! (`syntax.rs`); a build whose sources, toolchain and output are unchanged is
//! reused (`record.rs`).
//!
//! An `mcp-stdio` project is not compiled: a Python one is its files
//! (`assemble_files`), a JavaScript one is bundled with its dependencies by
//! esbuild (`DIR/node_modules/.bin`, else `$CLAT_ESBUILD`, else PATH) into
//! the one executable file its `entry` names.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{AuthoringError, Language, io};
use crate::supply::packages::{MANIFEST, PackageKind, read_manifest};

mod record;
mod syntax;

pub use record::project_files;
pub(crate) use record::{BuildRecord, authored_sources, build_hasher, hex_key};
use syntax::check_syntax;

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
    /// The toolchain did not run: the sources and the toolchain are those of the last build, whose output was kept
    /// (for the edit loop's package: its runtime's).
    pub reused: bool,
    /// The edit loop's package (`dev::build_for_loop`): a runtime built once, the sources read at each call.
    pub edit_loop: bool,
}

/// The language of a project directory, by its build file; `None`: not a project (perhaps a package).
pub fn detect(dir: &Path) -> Option<Language> {
    [("Cargo.toml", Language::Rust), ("package.json", Language::Javascript), ("pyproject.toml", Language::Python)]
        .into_iter()
        .find(|(file, _)| dir.join(file).is_file())
        .map(|(_, language)| language)
}

/// The steps a new project at `dir` needs before `clat plugin test .`, as
/// shell commands run in it: installing its pinned toolchain when none is
/// found yet (the same search the build makes), then its unit tests (a
/// component in JavaScript or Python comes with one against a mock host).
pub fn first_steps(dir: &Path, language: Language, kind: PackageKind) -> Vec<String> {
    let mut steps = Vec::new();
    match (language, kind) {
        (Language::Javascript, PackageKind::Wasm) => {
            // The unit tests import the project's dependencies (zod) from its node_modules.
            if !dir.join("node_modules").is_dir() {
                steps.push("npm install".to_string());
            }
            steps.push("npm test".to_string());
        }
        // A plain component's unit tests need nothing installed; its build needs componentize-js.
        (Language::Javascript, PackageKind::Component) => {
            if find_tool(dir.join("node_modules/.bin/componentize-js"), "CLAT_COMPONENTIZE_JS", "componentize-js")
                .is_none()
            {
                steps.push("npm install".to_string());
            }
            steps.push("npm test".to_string());
        }
        (Language::Python, PackageKind::Component)
            if find_tool(dir.join(".venv/bin/componentize-py"), "CLAT_COMPONENTIZE_PY", "componentize-py")
                .is_none() =>
        {
            steps.push(format!("python3 -m venv .venv && .venv/bin/pip install componentize-py=={COMPONENTIZE_PY}"));
        }
        (Language::Javascript, PackageKind::McpStdio) if find_esbuild(dir).is_none() => {
            steps.push("npm install".to_string());
        }
        // The server runs with the python3 on PATH, which needs the SDK its requirements.txt names.
        (Language::Python, PackageKind::McpStdio) if !python_imports("mcp") => {
            steps.push("python3 -m pip install -r requirements.txt".to_string());
        }
        (Language::Python, PackageKind::Wasm) => {
            let found = find_tool(dir.join(".venv/bin/componentize-py"), "CLAT_COMPONENTIZE_PY", "componentize-py");
            if found.is_none() {
                steps
                    .push(format!("python3 -m venv .venv && .venv/bin/pip install componentize-py=={COMPONENTIZE_PY}"));
            }
            let python =
                if found.is_none() || dir.join(".venv/bin/python").is_file() { ".venv/bin/python" } else { "python3" };
            steps.push(format!("{python} -m unittest"));
        }
        _ => {}
    }
    steps
}

/// Whether the python3 on PATH imports `module`.
fn python_imports(module: &str) -> bool {
    Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The componentize-py the Python template pins.
const COMPONENTIZE_PY: &str = "0.25.1";

/// Spawn `program --version`: is it there?
fn present(program: &str) -> bool {
    Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
}

fn missing(tool: &str, install: &str) -> AuthoringError {
    AuthoringError::MissingToolchain { tool: tool.into(), install: install.into() }
}

/// Build the project in `dir` and assemble its package in `dir/dist`.
pub fn build(dir: &Path) -> Result<Built, AuthoringError> {
    // The toolchains run in `dir`: every path handed to them (the project's own tools, outputs) is absolute.
    let dir = &std::path::absolute(dir).map_err(io(format!("cannot resolve {}", dir.display())))?;
    let manifest = read_manifest(dir).map_err(|e| AuthoringError::Invalid(e.to_string()))?;
    let language = detect(dir).ok_or_else(|| {
        AuthoringError::Invalid(format!(
            "{} has no Cargo.toml, package.json or pyproject.toml: it is not a plugin project (`clat plugin new` makes one)",
            dir.display()
        ))
    })?;
    let package = dir.join(DIST_DIR);
    if manifest.kind == crate::supply::packages::PackageKind::McpStdio && language == Language::Javascript {
        let bundle = bundle_javascript(dir, &dir.join("target").join("clat-build").join(&manifest.entry))?;
        return assemble(dir, &manifest, &package, &bundle, language);
    }
    if manifest.kind == crate::supply::packages::PackageKind::McpStdio {
        if language == Language::Rust {
            return Err(AuthoringError::Unsupported(
                "a Rust plugin is a WASM component (kind = \"wasm\"); for an MCP server in Rust, build it yourself \
                 and package the executable"
                    .into(),
            ));
        }
        // A Python MCP server is its files: nothing to compile.
        assemble_files(dir, &package)?;
        let entry = package.join(&manifest.entry);
        let entry_bytes = std::fs::metadata(&entry)
            .map_err(|e| AuthoringError::Invalid(format!("the entry {:?} is not in the project: {e}", manifest.entry)))?
            .len();
        return Ok(Built { package, language, entry_bytes, reused: false, edit_loop: false });
    }
    let scratch = dir.join("target").join("clat-build");
    let http = !manifest.capabilities.http.is_empty();
    // A plain component is built for its own world; a CLAT plugin for the contract's.
    let world = match manifest.kind {
        PackageKind::Component if language != Language::Rust => Some(plain_world(dir)?),
        _ => None,
    };
    let (entry, reused) = match language {
        Language::Rust => (build_rust(dir)?, false),
        Language::Javascript => build_javascript(dir, &scratch.join(&manifest.entry), http, world.as_deref())?,
        Language::Python => build_python(dir, &scratch.join(&manifest.entry), http, world.as_deref())?,
    };
    let built = assemble(dir, &manifest, &package, &entry, language)?;
    Ok(Built { reused, ..built })
}

/// A fresh `package`: the manifest, the built `entry` under the manifest's name (executable for an
/// MCP server), and the cases.
fn assemble(
    dir: &Path,
    manifest: &crate::supply::packages::Manifest,
    package: &Path,
    entry: &Path,
    language: Language,
) -> Result<Built, AuthoringError> {
    if package.exists() {
        std::fs::remove_dir_all(package).map_err(io(format!("cannot clear {}", package.display())))?;
    }
    let target = package.join(&manifest.entry);
    std::fs::create_dir_all(target.parent().unwrap_or(package))
        .map_err(io(format!("cannot create {}", package.display())))?;
    std::fs::copy(dir.join(MANIFEST), package.join(MANIFEST)).map_err(io(format!("cannot copy {MANIFEST}")))?;
    let entry_bytes = std::fs::copy(entry, &target).map_err(io(format!("cannot copy {}", entry.display())))?;
    if manifest.kind == crate::supply::packages::PackageKind::McpStdio {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
            .map_err(io(format!("cannot make {} executable", target.display())))?;
    }
    if dir.join(CASES_FILE).is_file() {
        std::fs::copy(dir.join(CASES_FILE), package.join(CASES_FILE))
            .map_err(io(format!("cannot copy {CASES_FILE}")))?;
    }
    // A plain component's descriptions are its WIT's doc comments, read from the package.
    if manifest.kind == PackageKind::Component && dir.join(crate::wasm::plain::WIT_DIR).is_dir() {
        let wit = crate::wasm::plain::WIT_DIR;
        crate::wasm::plain::copy_wit(&dir.join(wit), &package.join(wit))
            .map_err(|e| AuthoringError::Invalid(format!("{}/{wit}: {e}", dir.display())))?;
    }
    Ok(Built { package: package.to_path_buf(), language, entry_bytes, reused: false, edit_loop: false })
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

/// What is not part of an mcp-stdio package: build output, environments, caches, VCS.
const NOT_PACKAGED: [&str; 8] =
    [DIST_DIR, "target", "node_modules", ".venv", "__pycache__", ".git", ".gitignore", ".pytest_cache"];

/// An mcp-stdio package: the project's files (symlinks and special files
/// skipped, modes kept) copied into a fresh `package`.
fn assemble_files(dir: &Path, package: &Path) -> Result<(), AuthoringError> {
    if package.exists() {
        std::fs::remove_dir_all(package).map_err(io(format!("cannot clear {}", package.display())))?;
    }
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        std::fs::create_dir_all(package.join(&rel)).map_err(io(format!("cannot create {}", package.display())))?;
        for entry in std::fs::read_dir(dir.join(&rel)).map_err(io(format!("cannot read {}", dir.display())))? {
            let entry = entry.map_err(io("cannot list the project"))?;
            let name = entry.file_name();
            if rel.as_os_str().is_empty() && NOT_PACKAGED.contains(&name.to_string_lossy().as_ref()) {
                continue;
            }
            let child = rel.join(&name);
            let meta = entry.path().symlink_metadata().map_err(io(format!("cannot stat {}", child.display())))?;
            if meta.is_dir() && name != "__pycache__" {
                stack.push(child);
            } else if meta.is_file() {
                std::fs::copy(entry.path(), package.join(&child))
                    .map_err(io(format!("cannot copy {}", child.display())))?;
            }
        }
    }
    Ok(())
}

/// The first of: the project's own copy, the environment's override, PATH.
fn find_tool(local: PathBuf, env: &str, name: &str) -> Option<PathBuf> {
    if local.is_file() {
        return Some(local);
    }
    if let Some(path) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    present(name).then(|| PathBuf::from(name))
}

/// Run a toolchain command in `dir`, its output on stderr; `out` is what it must produce.
pub(super) fn run_tool(dir: &Path, program: &Path, args: &[&str], out: &Path) -> Result<PathBuf, AuthoringError> {
    run_tool_with(dir, program, args, &out.display().to_string(), out)
}

/// `run_tool`, with the output named by `out_arg` (the last argument: the path,
/// or a flag carrying it such as esbuild's `--outfile=PATH`).
pub(super) fn run_tool_with(
    dir: &Path,
    program: &Path,
    args: &[&str],
    out_arg: &str,
    out: &Path,
) -> Result<PathBuf, AuthoringError> {
    let command = format!("{} {} {out_arg}", program.display(), args.join(" "));
    std::fs::create_dir_all(out.parent().unwrap_or(dir)).map_err(io(format!("cannot create {}", out.display())))?;
    let _ = std::fs::remove_file(out);
    let status = Command::new(program)
        .args(args)
        .arg(out_arg)
        .current_dir(dir)
        // A toolchain's own error is the author's to read, not its Rust backtrace (componentize-py's anyhow).
        .env("RUST_LIB_BACKTRACE", "0")
        .stdin(Stdio::null())
        // stdout carries `plugin call`'s answer and `--json`: the toolchain's chatter goes to stderr.
        .stdout(Stdio::from(std::io::stderr()))
        .stderr(Stdio::inherit())
        .status()
        .map_err(io(format!("cannot run {command}")))?;
    if !status.success() || !out.is_file() {
        return Err(AuthoringError::BuildFailed { command });
    }
    Ok(out.to_path_buf())
}

fn require_wit(dir: &Path) -> Result<(), AuthoringError> {
    if dir.join("wit").is_dir() {
        return Ok(());
    }
    Err(AuthoringError::Invalid(format!(
        "{} has no wit/ directory: the contract (clat.wit, as `clat plugin new` writes it) must be there",
        dir.display()
    )))
}

/// What a JavaScript component is built with: componentize-js, esbuild, and the package's `main`.
pub(super) struct JavascriptToolchain {
    pub(super) componentize: PathBuf,
    pub(super) esbuild: PathBuf,
    pub(super) main: String,
}

/// The JavaScript toolchain of the project at `dir`, its contract present and its sources parsed by node.
pub(super) fn javascript_toolchain(dir: &Path) -> Result<JavascriptToolchain, AuthoringError> {
    if !present("node") {
        return Err(missing("node", "install Node.js 20 or later (https://nodejs.org)"));
    }
    let install = "run `npm install` in the project (its package.json pins @bytecodealliance/componentize-js 0.23.0 \
                   and esbuild 0.25.12)";
    let componentize =
        find_tool(dir.join("node_modules/.bin/componentize-js"), "CLAT_COMPONENTIZE_JS", "componentize-js")
            .ok_or_else(|| missing("componentize-js", install))?;
    let esbuild = find_esbuild(dir).ok_or_else(|| missing("esbuild", install))?;
    require_wit(dir)?;
    let main = package_main(dir, "src/index.js")?;
    check_syntax(dir, Language::Javascript, Path::new("node"))?;
    Ok(JavascriptToolchain { componentize, esbuild, main })
}

/// esbuild's arguments for the package's `main` and its dependencies in one file of `format` (`esm` for the
/// component, `cjs` for the edit loop's runtime), the contract's imports left to the component.
pub(super) fn component_bundle_args(main: &str, format: &str, out: &Path) -> Vec<String> {
    let fixed = ["--bundle", "--platform=browser", "--external:artec:clat/*", "--log-level=warning"];
    let mut args = vec![main.to_string(), format!("--format={format}")];
    args.extend(fixed.map(String::from));
    args.push(format!("--outfile={}", out.display()));
    args
}

/// componentize-js's arguments after the module: the world, and `--disable http fetch-event` (only `fetch-event`
/// when the manifest declares `http`: the guest's `fetch` then goes through the host's grant).
pub(super) fn componentize_js_args(world: &str, http: bool) -> Vec<&str> {
    let mut args = vec!["--wit", "wit", "--world-name", world, "--disable"];
    if !http {
        args.push("http");
    }
    args.extend(["fetch-event", "-o"]);
    args
}

/// esbuild bundles the package's `main` and its dependencies (zod, say)
/// into one module; then componentize-js on the bundle. The bundle is part
/// of the build's key, so a dependency's update rebuilds.
fn build_javascript(
    dir: &Path,
    out: &Path,
    http: bool,
    world: Option<&str>,
) -> Result<(PathBuf, bool), AuthoringError> {
    let toolchain = javascript_toolchain(dir)?;
    let bundle = out.with_extension("bundle.js");
    let mut args = component_bundle_args(&toolchain.main, "esm", &bundle);
    let outfile = args.pop().unwrap_or_default();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let bundle = run_tool_with(dir, &toolchain.esbuild, &args, &outfile, &bundle)?;
    let record = BuildRecord::of(dir, &toolchain.componentize, out, &[&bundle]);
    if record.matches() {
        return Ok((out.to_path_buf(), true));
    }
    let bundle = bundle.display().to_string();
    let args = [&[bundle.as_str()][..], &componentize_js_args(world.unwrap_or("clat-plugin"), http)].concat();
    let built = run_tool(dir, &toolchain.componentize, &args, out)?;
    record.keep();
    Ok((built, false))
}

/// esbuild: the project's (`DIR/node_modules/.bin`), else `$CLAT_ESBUILD`, else PATH's.
fn find_esbuild(dir: &Path) -> Option<PathBuf> {
    find_tool(dir.join("node_modules/.bin/esbuild"), "CLAT_ESBUILD", "esbuild")
}

/// An MCP server in JavaScript: esbuild bundles the package's `main` and its dependencies into one
/// executable ES module for node.
fn bundle_javascript(dir: &Path, out: &Path) -> Result<PathBuf, AuthoringError> {
    if !present("node") {
        return Err(missing("node", "install Node.js 20 or later (https://nodejs.org)"));
    }
    let tool = find_esbuild(dir).ok_or_else(|| {
        missing("esbuild", "run `npm install` in the project (its package.json pins esbuild and the MCP SDK)")
    })?;
    let main = package_main(dir, "src/server.js")?;
    let outfile = format!("--outfile={}", out.display());
    let args = [
        main.as_str(),
        "--bundle",
        "--platform=node",
        "--format=esm",
        "--banner:js=#!/usr/bin/env node",
        "--log-level=warning",
    ];
    run_tool_with(dir, &tool, &args, &outfile, out)
}

/// The `main` of `DIR/package.json`, or `default`.
fn package_main(dir: &Path, default: &str) -> Result<String, AuthoringError> {
    let package: serde_json::Value = std::fs::read_to_string(dir.join("package.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| AuthoringError::Invalid(format!("{}/package.json is not valid JSON", dir.display())))?;
    Ok(package["main"].as_str().unwrap_or(default).to_string())
}

/// What a Python component is built with: componentize-py and the world.
pub(super) struct PythonToolchain {
    pub(super) componentize: PathBuf,
    /// `clat-plugin`, or `clat-plugin-http` (`wit/http.wit`, the template's) when the manifest declares http.
    pub(super) world: &'static str,
}

/// The Python toolchain of the project at `dir`, its contract and `app.py` present and its sources parsed.
pub(super) fn python_toolchain(dir: &Path, http: bool) -> Result<PythonToolchain, AuthoringError> {
    let componentize =
        find_tool(dir.join(".venv/bin/componentize-py"), "CLAT_COMPONENTIZE_PY", "componentize-py").ok_or_else(|| {
            missing(
                "componentize-py",
                &format!("run `python3 -m venv .venv && .venv/bin/pip install componentize-py=={COMPONENTIZE_PY}` in the project"),
            )
        })?;
    require_wit(dir)?;
    if !dir.join("app.py").is_file() {
        return Err(AuthoringError::Invalid(format!(
            "{} has no app.py (the module componentize-py builds)",
            dir.display()
        )));
    }
    let world = if http { "clat-plugin-http" } else { "clat-plugin" };
    if http && !dir.join("wit/http.wit").is_file() {
        return Err(AuthoringError::Invalid(format!(
            "the manifest declares [capabilities] http, so the component is built for the world clat-plugin-http, \
             which {}/wit/http.wit defines (with the WASI packages in wit/deps): copy both from a project \
             `clat plugin new --lang python` writes",
            dir.display()
        )));
    }
    // The venv's python beside componentize-py parses as the build does; else the first python3 on PATH.
    let python = componentize.parent().map(|bin| bin.join("python3")).filter(|p| p.is_file());
    check_syntax(dir, Language::Python, python.as_deref().unwrap_or(Path::new("python3")))?;
    Ok(PythonToolchain { componentize, world })
}

/// componentize-py on the module `app`.
fn build_python(dir: &Path, out: &Path, http: bool, world: Option<&str>) -> Result<(PathBuf, bool), AuthoringError> {
    let toolchain = python_toolchain(dir, http && world.is_none())?;
    let record = BuildRecord::of(dir, &toolchain.componentize, out, &[]);
    if record.matches() {
        return Ok((out.to_path_buf(), true));
    }
    let args = ["-d", "wit", "-w", world.unwrap_or(toolchain.world), "componentize", "app", "-o"];
    let built = run_tool(dir, &toolchain.componentize, &args, out)?;
    record.keep();
    Ok((built, false))
}

/// The world a plain component project is built for: the one world of the WIT package in `DIR/wit/` (its
/// dependencies in `wit/deps/`).
pub(crate) fn plain_world(dir: &Path) -> Result<String, AuthoringError> {
    require_wit(dir)?;
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve
        .push_dir(dir.join("wit"))
        .map_err(|e| AuthoringError::Invalid(format!("{}/wit does not parse: {e:#}", dir.display())))?;
    let worlds: Vec<&String> = resolve.packages[package].worlds.keys().collect();
    match worlds.as_slice() {
        [one] => Ok(one.to_string()),
        _ => Err(AuthoringError::Invalid(format!(
            "{}/wit must define one world, the component's (it defines {}): a plain component is built for it",
            dir.display(),
            if worlds.is_empty() {
                "none".to_string()
            } else {
                worlds.iter().map(|w| w.as_str()).collect::<Vec<_>>().join(", ")
            }
        ))),
    }
}

/// The file a toolchain command names: itself when it is a path, else the first match on PATH; symlinks resolved.
fn which(program: &Path) -> Option<PathBuf> {
    if program.components().count() > 1 {
        return program.canonicalize().ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())?.canonicalize().ok()
}
