//! The author's edit loop (`clat plugin call | test` of a JavaScript or
//! Python project, `--watch` included). componentize-js and componentize-py
//! take 6–10 s per build, so the loop does not componentize the project:
//! it builds a *runtime* once — a component whose module is ours
//! (`dev/loader.js`, `dev/clat_dev_loader.py`) — and assembles a package of
//! that runtime with the project's sources beside it (`DEV_PACKAGE_DIR`). At
//! each call the runtime reads them from the plugin's own read-only directory
//! (`/plugin`, which every plugin importing the preopens sees) and evaluates
//! them: a JavaScript project as one CommonJS bundle esbuild makes at every
//! build (its dependencies included; an error's stack mapped back to the
//! author's line through its source map), a Python project's modules
//! imported again (an error naming the author's line from its traceback).
//! The host sees a package like any other (the same checks, pipeline and
//! limits); nothing here is installed — `clat plugin build` and `install
//! --build` build the real component.
//!
//! The runtime is built again only when what it is made of changes: clat,
//! the toolchain, the contract (`wit/`), the world (`http` declared or not),
//! and for Python the project's import lines of modules it does not hold
//! from the start (`PYTHON_RUNTIME_MODULES`; a module is in the runtime only
//! if it was imported when the runtime was built), saying so and why while
//! it builds. A JavaScript
//! project esbuild cannot bundle as CommonJS (a top-level `await`) is built
//! the usual way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::Digest;

use super::build::{
    BuildRecord, Built, CASES_FILE, authored_sources, build, build_hasher, component_bundle_args, componentize_js_args,
    detect, hex_key, javascript_toolchain, project_files, python_toolchain, run_tool,
};
use super::{AuthoringError, Language, io};
use crate::supply::packages::{MANIFEST, Manifest, PackageKind, read_manifest};

/// Where the edit loop's package is assembled, inside the project.
pub const DEV_PACKAGE_DIR: &str = "target/clat-build/dev";
/// Where its runtimes are built, inside the project.
const DEV_RUNTIME_DIR: &str = "target/clat-build/dev-runtime";
/// A JavaScript project's bundle in the package (the loader reads `/plugin/dev-source.js`).
const JAVASCRIPT_SOURCE: &str = "dev-source.js";
/// A Python project's modules in the package (the loader imports from `/plugin/dev-src`).
const PYTHON_SOURCES: &str = "dev-src";

const JAVASCRIPT_LOADER: &str = include_str!("dev/loader.js");
const PYTHON_LOADER: &str = include_str!("dev/clat_dev_loader.py");
/// Standard-library modules the Python runtime holds from the start: a project that starts importing one of them
/// needs no new runtime (a componentize-py build: 16 s on the 2-core machine, more on a cold cache).
pub const PYTHON_RUNTIME_MODULES: &[&str] = &[
    "base64",
    "bisect",
    "calendar",
    "collections",
    "collections.abc",
    "copy",
    "csv",
    "dataclasses",
    "datetime",
    "decimal",
    "difflib",
    "enum",
    "fnmatch",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "html",
    "io",
    "itertools",
    "json",
    "math",
    "operator",
    "os",
    "os.path",
    "random",
    "re",
    "shlex",
    "statistics",
    "string",
    "textwrap",
    "time",
    "typing",
    "unicodedata",
    "urllib.parse",
    "uuid",
];
/// The WASI packages the JavaScript runtime's world needs for `wasi:filesystem/preopens` (the Python
/// template's copies).
const WASI_DEPS: &[&str] = &["wit/deps/filesystem/filesystem.wit", "wit/deps/io/io.wit", "wit/deps/clocks/clocks.wit"];

/// Build the project in `dir` for the edit loop: a JavaScript or Python
/// component project gets the runtime package; any other is built as
/// `build` does.
pub fn build_for_loop(dir: &Path) -> Result<Built, AuthoringError> {
    let dir = &std::path::absolute(dir).map_err(io(format!("cannot resolve {}", dir.display())))?;
    let manifest = read_manifest(dir).map_err(|e| AuthoringError::Invalid(e.to_string()))?;
    let language = match detect(dir) {
        Some(language @ (Language::Javascript | Language::Python)) if manifest.kind == PackageKind::Wasm => language,
        _ => return build(dir),
    };
    let http = !manifest.capabilities.http.is_empty();
    let runtimes = dir.join(DEV_RUNTIME_DIR);
    let package = dir.join(DEV_PACKAGE_DIR);
    let staged = runtimes.join("staged-sources");
    clear(&staged)?;
    let (runtime, reused) = match language {
        Language::Javascript => {
            let toolchain = javascript_toolchain(dir)?;
            if let Err(reason) = bundle_commonjs(dir, &toolchain.esbuild, &toolchain.main, &staged) {
                eprintln!("clat: the edit loop cannot load these sources ({reason}), so the component is built");
                return build(dir);
            }
            javascript_runtime(dir, &toolchain.componentize, &runtimes, http)?
        }
        _ => {
            let toolchain = python_toolchain(dir, http)?;
            for file in authored_sources(dir, Language::Python) {
                let to = staged.join(PYTHON_SOURCES).join(&file);
                std::fs::create_dir_all(to.parent().unwrap_or(&staged)).map_err(io("cannot stage the sources"))?;
                std::fs::copy(dir.join(&file), &to).map_err(io(format!("cannot copy {}", file.display())))?;
            }
            python_runtime(dir, &toolchain.componentize, toolchain.world, &runtimes)?
        }
    };
    let entry_bytes = assemble(dir, &manifest, &package, &runtime, &staged)?;
    Ok(Built { package, language, entry_bytes, reused, edit_loop: true })
}

/// Remove `path` if it exists and create it empty.
fn clear(path: &Path) -> Result<(), AuthoringError> {
    if path.exists() {
        std::fs::remove_dir_all(path).map_err(io(format!("cannot clear {}", path.display())))?;
    }
    std::fs::create_dir_all(path).map_err(io(format!("cannot create {}", path.display())))
}

/// esbuild: the package's `main` and its dependencies as one CommonJS file in
/// `staged`, the contract's imports left as `require`s for the loader to
/// answer. Its own report is the reason when it cannot.
fn bundle_commonjs(dir: &Path, esbuild: &Path, main: &str, staged: &Path) -> Result<(), String> {
    let out = staged.join(JAVASCRIPT_SOURCE);
    let ran = Command::new(esbuild)
        .args(component_bundle_args(main, "cjs", &out))
        // Beside it, `dev-source.js.map`: the loader maps an error's stack back to the author's line with it.
        .args(["--sourcemap", "--color=false"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", esbuild.display()))?;
    if ran.status.success() && out.is_file() {
        return Ok(());
    }
    let report = String::from_utf8_lossy(&ran.stderr);
    let first = report.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("esbuild failed");
    Err(first.trim_start_matches("✘ [ERROR] ").to_string())
}

/// The runtime of a JavaScript project: `loader.js` componentized for the
/// contract's world plus `wasi:filesystem/preopens`. Returns it and whether
/// the last one was reused.
fn javascript_runtime(
    dir: &Path,
    componentize: &Path,
    runtimes: &Path,
    http: bool,
) -> Result<(PathBuf, bool), AuthoringError> {
    let out = runtimes.join("javascript.wasm");
    let contract = contract_package(dir)?;
    let loader = JAVASCRIPT_LOADER.replace("{{contract_version}}", &contract.version);
    let world = format!(
        "{}\n\n// The edit loop's runtime: the contract's world, and the plugin's own directory to read its sources \
         from.\nworld clat-plugin-dev {{\n  include clat-plugin;\n  import wasi:filesystem/preopens@0.2.12;\n}}\n",
        contract.line
    );
    let record = BuildRecord::keyed(&out, runtime_key(dir, componentize, &out, &[&loader, &world, &http.to_string()]));
    if record.matches() {
        return Ok((out, true));
    }
    let work = runtimes.join("javascript");
    clear(&work)?;
    copy_tree(&dir.join("wit"), &work.join("wit"))?;
    for dep in WASI_DEPS {
        let to = work.join(dep);
        if !to.parent().is_some_and(Path::exists) {
            let text = super::templates::template_file(Language::Python, dep).unwrap_or_default();
            std::fs::create_dir_all(to.parent().unwrap_or(&work)).map_err(io("cannot write the runtime's WIT"))?;
            std::fs::write(&to, text).map_err(io("cannot write the runtime's WIT"))?;
        }
    }
    std::fs::write(work.join("wit/clat-dev.wit"), world).map_err(io("cannot write the runtime's WIT"))?;
    std::fs::write(work.join("loader.js"), loader).map_err(io("cannot write the runtime's loader"))?;
    let args = [&["loader.js"][..], &componentize_js_args("clat-plugin-dev", http)].concat();
    let built = run_tool(&work, componentize, &args, &out)?;
    record.keep();
    Ok((built, false))
}

/// The runtime of a Python project: `clat_dev_loader.py` componentized for
/// the project's world, the project on the path (its `app` is imported as the
/// runtime is built). Returns it and whether the last one was reused.
fn python_runtime(
    dir: &Path,
    componentize: &Path,
    world: &str,
    runtimes: &Path,
) -> Result<(PathBuf, bool), AuthoringError> {
    let out = runtimes.join("python.wasm");
    let imports = import_lines(dir)?;
    let loader = python_loader();
    let record = BuildRecord::keyed(&out, runtime_key(dir, componentize, &out, &[&loader, world, &imports]));
    if record.matches() {
        return Ok((out, true));
    }
    // The import lines the last runtime was built for: what is new says why this one is built.
    let kept_imports = runtimes.join("python.imports");
    let why = match std::fs::read_to_string(&kept_imports) {
        Ok(before) => {
            let new: Vec<&str> = imports.lines().filter(|line| !before.lines().any(|b| b == *line)).collect();
            if new.is_empty() {
                "clat, its toolchain or the contract changed".to_string()
            } else {
                format!("the project imports what it does not hold yet ({})", new.join("; "))
            }
        }
        Err(_) => "there is none yet".to_string(),
    };
    eprintln!("clat: building the edit loop's Python runtime (componentize-py takes a while) because {why}");
    let work = runtimes.join("python");
    clear(&work)?;
    std::fs::write(work.join("clat_dev_loader.py"), &loader).map_err(io("cannot write the runtime's loader"))?;
    let work = work.display().to_string();
    let args = ["-d", "wit", "-w", world, "componentize", "-p", &work, "-p", ".", "clat_dev_loader", "-o"];
    let built = run_tool(dir, componentize, &args, &out)?;
    record.keep();
    let _ = std::fs::write(&kept_imports, &imports);
    Ok((built, false))
}

/// The runtime's module: the loader, importing `PYTHON_RUNTIME_MODULES` from the start.
fn python_loader() -> String {
    let imports: String = PYTHON_RUNTIME_MODULES.iter().map(|m| format!("import {m}  # noqa: F401\n")).collect();
    PYTHON_LOADER.replace("{{runtime_modules}}\n", &imports)
}

/// The key of a runtime: clat, the toolchain, the contract (every file of `wit/`), and `parts`.
fn runtime_key(dir: &Path, componentize: &Path, out: &Path, parts: &[&str]) -> Option<String> {
    let mut hasher = build_hasher(componentize, out)?;
    for file in project_files(&dir.join("wit"))? {
        hasher.update(file.as_os_str().as_encoded_bytes());
        hasher.update([0]);
        hasher.update(sha2::Sha256::digest(std::fs::read(dir.join("wit").join(&file)).ok()?));
    }
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    Some(hex_key(hasher))
}

/// Every `import` and `from … import` line of the project's Python modules
/// that names a module the runtime does not hold from the start
/// (`PYTHON_RUNTIME_MODULES`), trimmed, sorted, one per line: what decides
/// which modules the runtime holds.
fn import_lines(dir: &Path) -> Result<String, AuthoringError> {
    let mut lines = std::collections::BTreeSet::new();
    for file in authored_sources(dir, Language::Python) {
        let text = std::fs::read_to_string(dir.join(&file)).map_err(io(format!("cannot read {}", file.display())))?;
        lines.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| l.starts_with("import ") || (l.starts_with("from ") && l.contains(" import ")))
                .filter(|l| !imported_modules(l).iter().all(|m| PYTHON_RUNTIME_MODULES.contains(m)))
                .map(str::to_string),
        );
    }
    Ok(lines.into_iter().collect::<Vec<_>>().join("\n"))
}

/// The modules an import line names: `import a, b.c as d` → a, b.c; `from x.y import z` → x.y.
fn imported_modules(line: &str) -> Vec<&str> {
    let line = line.split('#').next().unwrap_or_default();
    if let Some(from) = line.strip_prefix("from ") {
        return from.split(" import ").next().map(str::trim).into_iter().collect();
    }
    let names = line.strip_prefix("import ").unwrap_or_default();
    names.split(',').filter_map(|part| part.split_whitespace().next()).collect()
}

/// The contract package the project's `wit/clat.wit` declares: its line and version.
struct ContractPackage {
    line: String,
    version: String,
}

fn contract_package(dir: &Path) -> Result<ContractPackage, AuthoringError> {
    let path = dir.join("wit/clat.wit");
    let text = std::fs::read_to_string(&path).map_err(io(format!("cannot read {}", path.display())))?;
    let line = text.lines().map(str::trim).find(|l| l.starts_with("package artec:clat@")).ok_or_else(|| {
        AuthoringError::Invalid(format!("{} declares no `package artec:clat@VERSION;`", path.display()))
    })?;
    let version = line.trim_start_matches("package artec:clat@").trim_end_matches(';').trim();
    Ok(ContractPackage { line: line.to_string(), version: version.to_string() })
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), AuthoringError> {
    let unreadable = || std::io::Error::other(format!("a directory under {} cannot be read", from.display()));
    let files = project_files(from).ok_or_else(unreadable).map_err(io(format!("cannot read {}", from.display())))?;
    for file in files {
        let target = to.join(&file);
        std::fs::create_dir_all(target.parent().unwrap_or(to))
            .map_err(io(format!("cannot create {}", to.display())))?;
        std::fs::copy(from.join(&file), &target).map_err(io(format!("cannot copy {}", file.display())))?;
    }
    Ok(())
}

/// A fresh `package`: the manifest, the runtime under the manifest's entry
/// name, the staged sources, and the cases. Returns the runtime's size.
fn assemble(
    dir: &Path,
    manifest: &Manifest,
    package: &Path,
    runtime: &Path,
    staged: &Path,
) -> Result<u64, AuthoringError> {
    clear(package)?;
    std::fs::copy(dir.join(MANIFEST), package.join(MANIFEST)).map_err(io(format!("cannot copy {MANIFEST}")))?;
    let entry = package.join(&manifest.entry);
    std::fs::create_dir_all(entry.parent().unwrap_or(package)).map_err(io("cannot create the package"))?;
    let bytes = std::fs::copy(runtime, &entry).map_err(io(format!("cannot copy {}", runtime.display())))?;
    copy_tree(staged, package)?;
    if dir.join(CASES_FILE).is_file() {
        std::fs::copy(dir.join(CASES_FILE), package.join(CASES_FILE))
            .map_err(io(format!("cannot copy {CASES_FILE}")))?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_import_of_a_module_the_runtime_holds_needs_no_new_runtime() {
        assert_eq!(imported_modules("import a, b.c as d  # why"), ["a", "b.c"]);
        assert_eq!(imported_modules("from x.y import z"), ["x.y"]);
        let dir = tempfile::tempdir().unwrap();
        let app =
            "import json\nimport re, textwrap\nfrom collections.abc import Mapping\nimport colorsys\nfrom x import y\n";
        std::fs::write(dir.path().join("app.py"), app).unwrap();
        assert_eq!(import_lines(dir.path()).unwrap(), "from x import y\nimport colorsys");
        assert!(python_loader().contains("import textwrap  # noqa: F401\n"));
        assert!(!python_loader().contains("{{runtime_modules}}"));
    }
}
