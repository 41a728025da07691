//! The plugin author's commands: `clat plugin new | build | call | test` and
//! `plugin install --build`. `call` and `test` run a package without
//! installing it: it is installed into a throwaway home (removed afterwards)
//! whose only trusted project is the one named (default: the current
//! directory) and whose compiled cache is the real one's, and that home is
//! mounted like any other — the same registry, pipeline, events and output as
//! `clat call`, with the session model of the real home.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::exit::{Exit, Failure};
use super::shutdown::Shutdown;
use crate::authoring::Language;
use crate::authoring::build::{Built, CASES_FILE, DIST_DIR, build, detect};
use crate::authoring::cases::{Case, Mismatch, Outcome, judge, read_cases};
use crate::authoring::dev::build_for_loop;
use crate::extension::StartFilter;
use crate::home::ClatHome;
use crate::home::trust::TrustStore;
use crate::native::process::SandboxPolicy;
use crate::platform::{MountOptions, Platform, Project, RunOptions};
use crate::registry::ToolSource;
use crate::scope::wasm_cache_dir;
use crate::supply::packages::{Manifest, PackageKind, PackageStore, read_manifest};
use crate::wasm::imports::check_component;
use crate::wasm::{EngineOptions, WasmCompiler};

/// `clat plugin new NAME`: the new project is trusted too — it holds only
/// what this command wrote — so `clat call` works in it once the plugin is installed.
pub(crate) fn new(
    home: &ClatHome,
    name: &str,
    parent: &Path,
    language: Language,
    kind: PackageKind,
    json: bool,
) -> Result<Exit, Failure> {
    let (dir, files) = crate::authoring::templates::scaffold(parent, name, language, kind)?;
    let trusted = TrustStore::new(home).trust(&dir)?;
    if json {
        outln!(
            "{}",
            json!({ "created": dir.display().to_string(), "language": language.as_str(),
                                "kind": kind.as_str(), "files": files, "trusted": trusted.display().to_string() })
        );
    } else {
        outln!("created {} ({} {}): {}", dir.display(), language.as_str(), kind.as_str(), files.join(", "));
        outln!("trusted {} (it holds only what clat wrote)", trusted.display());
        // From where the user is: the name when the project is in the current directory, else its path.
        let here = std::env::current_dir().and_then(|d| d.canonicalize()).ok();
        let in_here = here.is_some_and(|h| parent.canonicalize().is_ok_and(|p| p == h));
        let cd = if in_here { name.to_string() } else { dir.display().to_string() };
        let mut next = vec![format!("cd {}", shlex::try_quote(&cd).unwrap_or(cd.as_str().into()))];
        next.extend(crate::authoring::build::first_steps(&dir, language, kind));
        next.extend(["clat plugin test .".to_string(), "clat plugin install --build .".to_string()]);
        outln!("next: {}", next.join(" && "));
    }
    Ok(Exit::Ok)
}

/// Build a project, saying so on stderr; returns its package directory.
pub(crate) fn build_project(dir: &Path) -> Result<PathBuf, Failure> {
    eprintln!("clat: building {} ...", dir.display());
    Ok(report_build(build(dir)?))
}

/// What a build made, on stderr; its package directory.
fn report_build(built: Built) -> PathBuf {
    let size = super::progress::size(built.entry_bytes);
    let language = built.language.as_str();
    if built.edit_loop {
        let runtime = if built.reused { "reused" } else { "built once per toolchain and contract" };
        eprintln!(
            "clat: {language} sources ready for the edit loop in {}: its runtime ({size}, {runtime}) reads them at \
             each call",
            built.package.display()
        );
    } else {
        eprintln!(
            "clat: built {language} package {} ({size}){}",
            built.package.display(),
            if built.reused { "; sources and toolchain unchanged since the last build, so it was reused" } else { "" }
        );
    }
    built.package
}

/// `clat plugin build [DIR]`.
pub(crate) fn build_command(dir: &Path, json: bool) -> Result<Exit, Failure> {
    let package = build_project(dir)?;
    if json {
        outln!("{}", json!({ "package": package.display().to_string() }));
    } else {
        outln!("package: {}", package.display());
    }
    Ok(Exit::Ok)
}

/// The package a `call` or `test` argument names, and the compiler it runs on.
struct LoopPackage {
    dir: PathBuf,
    /// Cranelift for the edit loop's runtime (built once, then compiled once: its code runs at every call);
    /// Winch for anything else, which is compiled anew after each edit.
    compiler: WasmCompiler,
}

/// The package a `call` or `test` argument names: a project is built first
/// (the edit loop's package for a JavaScript or Python component; or, with
/// `no_build`, its last build is used); anything else is a package.
fn package_of(dir: &Path, no_build: bool) -> Result<LoopPackage, Failure> {
    let baseline = |dir: PathBuf| LoopPackage { dir, compiler: WasmCompiler::Baseline };
    if detect(dir).is_none() {
        return Ok(baseline(dir.to_path_buf()));
    }
    if !no_build {
        eprintln!("clat: building {} ...", dir.display());
        let built = build_for_loop(dir)?;
        let compiler = if built.edit_loop { WasmCompiler::Optimizing } else { WasmCompiler::Baseline };
        return Ok(LoopPackage { dir: report_build(built), compiler });
    }
    let package = dir.join(DIST_DIR);
    if !package.is_dir() {
        let message = format!("{} has not been built: run `clat plugin build {}`", dir.display(), dir.display());
        return Err(Failure::new(Exit::Usage, "package", message));
    }
    Ok(baseline(package))
}

/// A home that lives as long as one command: removed on drop.
struct ThrowawayHome {
    home: ClatHome,
    /// What its plugin is compiled with.
    compiler: WasmCompiler,
}

impl Drop for ThrowawayHome {
    fn drop(&mut self) {
        crate::supply::packages::remove_tree(self.home.path());
    }
}

/// A throwaway home with `project` trusted and `package` installed, compiled
/// by the package's compiler into the real home's `WASM_DEV_CACHE_DIR`, which
/// then keeps only this build's entries (an edit loop leaves one compiled
/// build behind, not one per edit).
/// `grant`: `--grant` was given (otherwise declared capabilities are asked for
/// at a terminal, or refused headless, as at install, naming the user's own
/// command line with `--grant` as the retry; `command` is `call` or `test`).
fn throwaway_home(
    real: &ClatHome,
    project: &Path,
    package: &LoopPackage,
    grant: bool,
    command: &str,
) -> Result<(ThrowawayHome, Manifest), Failure> {
    let (compiler, package) = (package.compiler, package.dir.as_path());
    let internal = |what: &str, e: std::io::Error| Failure::new(Exit::Internal, "internal", format!("{what}: {e}"));
    let dir = std::env::temp_dir().join(format!("clat-plugin-{}", uuid::Uuid::new_v4().simple()));
    let throwaway = ThrowawayHome { home: ClatHome::at(&dir), compiler };
    throwaway.home.ensure()?;
    let real_cache = wasm_cache_dir(real, WasmCompiler::Baseline);
    std::fs::create_dir_all(&real_cache).map_err(|e| internal("cannot create the compiled cache", e))?;
    std::fs::create_dir_all(dir.join("cache")).map_err(|e| internal("cannot create the throwaway home", e))?;
    // Whichever compiler, the throwaway's cache is the real home's authoring cache (never its installed one).
    std::os::unix::fs::symlink(&real_cache, wasm_cache_dir(&throwaway.home, compiler))
        .map_err(|e| internal("cannot share the compiled cache", e))?;
    TrustStore::new(&throwaway.home).trust(project)?;
    let engine = EngineOptions { compiler, ..EngineOptions::default() };
    let runtime = crate::wasm::WasmRuntime::with_options(&real_cache, super::progress::compile_observer(), engine)
        .map_err(|e| Failure::new(Exit::Internal, "internal", format!("the WASM runtime could not start: {e:#}")))?;
    let retry =
        as_typed(std::env::args().skip(1)).unwrap_or_else(|| format!("clat plugin {command} {}", package.display()));
    let imports = super::install::component_imports(package);
    let installed = PackageStore::new(&throwaway.home).install_granted(
        package,
        crate::supply::packages::Origin { source: None, replace: false, retry: &retry },
        |manifest, _| super::install::decide_grants(manifest, None, &imports, grant, &retry),
        |manifest, staged| super::install::validate_staged(&runtime, manifest, staged).map(drop),
    )?;
    if let Err(e) = runtime.sweep_cache(std::slice::from_ref(&installed)) {
        tracing::debug!("the authoring cache was not swept: {e}");
    }
    Ok((throwaway, installed.manifest))
}

/// The command line the user typed (`args` after the program), quoted for a
/// POSIX shell, so the retry a refusal names (it appends `--grant`) runs as
/// is. `None` when it cannot be rebuilt (an argument with a NUL byte).
fn as_typed(args: impl Iterator<Item = String>) -> Option<String> {
    let words: Vec<String> = args.collect();
    shlex::try_join(words.iter().map(String::as_str)).ok().map(|line| format!("clat {line}"))
}

/// Mount the throwaway home's project: the native tools and the package (nothing else starts, not even a
/// server pack of the session model), with the real home's session model.
fn mount(
    real: &ClatHome,
    throwaway: &ThrowawayHome,
    package: &Manifest,
    project: &Path,
    sandbox: SandboxPolicy,
) -> Result<Project, Failure> {
    let options = MountOptions {
        start: StartFilter::Named(vec![package.name.clone()]),
        sandbox,
        model: Some(Platform::open(Some(real.path()))?.session_model()?),
        compile_observer: super::progress::compile_observer(),
        default_startup_timeout: None,
        wasm_compiler: throwaway.compiler,
        questions: None,
    };
    Ok(Platform::open(Some(throwaway.home.path()))?.mount(project, options)?)
}

pub(crate) struct PluginCall {
    pub(crate) package: PathBuf,
    pub(crate) no_build: bool,
    pub(crate) project: PathBuf,
    pub(crate) request: super::runs::CallRequest,
    pub(crate) sandbox: SandboxPolicy,
    pub(crate) grant: bool,
}

/// `clat plugin call DIR|PACKAGE TOOL [ARGS_JSON]`.
pub(crate) async fn call(real: &ClatHome, call: PluginCall, shutdown: &Shutdown) -> Result<Exit, Failure> {
    let package = package_of(&call.package, call.no_build)?;
    let (throwaway, manifest) = throwaway_home(real, &call.project, &package, call.grant, "call")?;
    let project = mount(real, &throwaway, &manifest, &call.project, call.sandbox)?;
    project.start_extensions();
    let result = super::runs::call(&project, call.request, shutdown).await;
    project.close().await;
    drop(throwaway);
    result
}

/// How often `plugin test --watch` looks at the project's files.
const WATCH_POLL: std::time::Duration = std::time::Duration::from_millis(300);
/// How long a change must settle (an editor writing several files) before the run.
const WATCH_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// What `--watch` compares: each file's path, size and modification time.
fn fingerprint(dir: &Path) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let files = crate::authoring::build::project_files(dir).unwrap_or_default();
    files
        .into_iter()
        .map(|file| {
            let meta = std::fs::metadata(dir.join(&file)).ok();
            let (len, modified) = meta.map_or((0, None), |m| (m.len(), m.modified().ok()));
            (file, len, modified)
        })
        .collect()
}

/// `clat plugin test --watch`: the test, then again each time a file of the
/// project (or package) changes — its dependencies and outputs aside — until
/// interrupted. A failure (a syntax error, a failing case) is reported and
/// the watch goes on; with sources unchanged the build is reused, so a change
/// to `cases.jsonl` alone re-runs in about a second.
pub(crate) async fn test_watch(real: &ClatHome, plugin: &PluginTest<'_>, shutdown: &Shutdown) -> Result<Exit, Failure> {
    let dir = plugin.dir;
    loop {
        let seen = fingerprint(dir);
        if let Err(failure) = test(real, plugin, shutdown).await {
            if shutdown.token().is_cancelled() {
                return Err(failure);
            }
            eprintln!("clat: error: {}", failure.message);
        }
        eprintln!("clat: watching {} for changes (Ctrl-C to stop)", dir.display());
        loop {
            tokio::select! {
                _ = tokio::time::sleep(WATCH_POLL) => {}
                _ = shutdown.token().cancelled() => return Ok(Exit::Ok),
            }
            if fingerprint(dir) != seen {
                break;
            }
        }
        tokio::time::sleep(WATCH_SETTLE).await;
    }
}

/// One line of a `plugin test` report.
struct Check {
    what: String,
    ok: bool,
    detail: String,
}

/// What `clat plugin test` runs: the project or package `dir`, on the trusted-for-the-test `project`.
#[derive(Clone, Copy)]
pub(crate) struct PluginTest<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) project: &'a Path,
    /// Use the project's last build.
    pub(crate) no_build: bool,
    /// Grant the declared capabilities without asking.
    pub(crate) grant: bool,
    pub(crate) json: bool,
}

/// `clat plugin test DIR|PACKAGE`: the package, its interfaces, its tool
/// specs, then the author's cases through the pipeline.
pub(crate) async fn test(real: &ClatHome, plugin: &PluginTest<'_>, shutdown: &Shutdown) -> Result<Exit, Failure> {
    let PluginTest { dir, project, no_build, grant, json } = *plugin;
    // The cases are read and checked before anything is built, compiled or installed.
    let cases_path = dir.join(CASES_FILE);
    let cases = if cases_path.is_file() { read_cases(&cases_path)? } else { Vec::new() };
    let built = package_of(dir, no_build)?;
    let package = built.dir.clone();
    let mut checks = Vec::new();
    let manifest = read_manifest(&package)?;
    crate::supply::packages::check_entry(&package, &manifest)?;
    checks.push(Check {
        what: "package".into(),
        ok: true,
        detail: format!("{} {} ({})", manifest.name, manifest.version, manifest.kind.as_str()),
    });
    if manifest.kind == PackageKind::Wasm {
        let bytes = std::fs::read(package.join(&manifest.entry))
            .map_err(|e| Failure::new(Exit::Usage, "package", format!("cannot read {}: {e}", manifest.entry)))?;
        match check_component(&bytes, !manifest.capabilities.http.is_empty()) {
            Ok(found) => {
                checks.push(Check {
                    what: "interfaces".into(),
                    ok: true,
                    detail: format!(
                        "exports {}; imports only what the host links ({} interfaces)",
                        found.exports.join(", "),
                        found.imports.len()
                    ),
                });
                // A grant the component can never use is one the user is asked for in vain.
                if !manifest.capabilities.http.is_empty() && !found.imports_http() {
                    checks.push(Check {
                        what: "capabilities".into(),
                        ok: false,
                        detail: "the manifest declares [capabilities] http but the component never imports \
                                 wasi:http: remove the capability, or build with HTTP enabled"
                            .into(),
                    });
                }
            }
            Err(problem) => {
                checks.push(Check { what: "interfaces".into(), ok: false, detail: problem.to_string() });
                return report(&package, &checks, &[], json);
            }
        }
    }
    let (throwaway, _) = match throwaway_home(real, project, &built, grant, "test") {
        Ok(t) => t,
        Err(failure) => {
            checks.push(Check { what: "load".into(), ok: false, detail: failure.message });
            return report(&package, &checks, &[], json);
        }
    };
    let mounted = mount(real, &throwaway, &manifest, project, SandboxPolicy::default())?;
    let loaded = tokio::select! {
        statuses = mounted.load_extensions() => statuses,
        _ = shutdown.token().cancelled() => {
            mounted.close().await;
            return Err(super::runs::interrupted(shutdown));
        }
    };
    let status = loaded.iter().find(|s| s.name == manifest.name);
    let ready = status.is_some_and(|s| s.state == "ready");
    checks.push(Check {
        what: "load".into(),
        ok: ready && status.is_some_and(|s| s.problems.is_empty()),
        detail: match status {
            Some(s) if ready && s.problems.is_empty() => format!("{} tool(s)", s.tools.len()),
            Some(s) => format!("{}: {}", s.state, s.problems.join("; ")),
            None => "the package was not loaded".into(),
        },
    });
    for entry in mounted.tools() {
        let own = match &entry.source {
            ToolSource::Wasm { plugin, tool } | ToolSource::Mcp { server: plugin, tool }
                if *plugin == manifest.name =>
            {
                tool.clone()
            }
            _ => continue,
        };
        let renamed = if entry.name.ends_with(&format!("_{own}")) { "" } else { " (normalized)" };
        checks.push(Check {
            what: format!("tool {own}"),
            ok: true,
            detail: format!("registered as {}{renamed}; schema compiles; effect {}", entry.name, entry.effect.as_str()),
        });
    }
    let mut results = Vec::new();
    if ready {
        for case in &cases {
            if shutdown.token().is_cancelled() {
                break;
            }
            results.push((case, run_case(&mounted, case).await));
        }
    }
    mounted.close().await;
    drop(throwaway);
    let results: Vec<(&Case, Result<(), Mismatch>)> = results;
    report(&package, &checks, &results, json)
}

/// One case as its own headless run (`ask` denies: nobody can answer), keeping no approval.
async fn run_case(project: &Project, case: &Case) -> Result<(), Mismatch> {
    let options = RunOptions { mode: case.mode, keep_approvals: false, ..RunOptions::default() };
    let outcome = match project.start_run(options).await {
        Ok(run) => match super::runs::resolve_tool_quietly(project, &case.tool) {
            Ok(tool) => run.call(&tool, case.arguments.clone()).await.map_err(Failure::from),
            Err(unknown) => Err(unknown),
        },
        Err(e) => Err(Failure::from(e)),
    };
    match &outcome {
        Ok(output) => judge(case, Outcome::Result(output)),
        Err(f) => judge(case, Outcome::Error { kind: f.kind, message: &f.message }),
    }
}

fn report(
    package: &Path,
    checks: &[Check],
    cases: &[(&Case, Result<(), Mismatch>)],
    json: bool,
) -> Result<Exit, Failure> {
    let failed = checks.iter().filter(|c| !c.ok).count() + cases.iter().filter(|(_, r)| r.is_err()).count();
    let passed = checks.len() + cases.len() - failed;
    if json {
        let checks: Vec<Value> =
            checks.iter().map(|c| json!({ "check": c.what, "ok": c.ok, "detail": c.detail })).collect();
        let cases: Vec<Value> = cases
            .iter()
            .map(|(case, r)| json!({ "case": case.name, "line": case.line, "ok": r.is_ok(), "reason": r.as_ref().err().map(Mismatch::to_string) }))
            .collect();
        outln!(
            "{}",
            json!({ "package": package.display().to_string(), "checks": checks, "cases": cases,
                    "passed": passed, "failed": failed })
        );
    } else {
        for c in checks {
            outln!("{} {}: {}", if c.ok { "ok  " } else { "FAIL" }, c.what, c.detail);
        }
        for (case, r) in cases {
            match r {
                Ok(()) => outln!("ok   case {} ({CASES_FILE}:{})", case.name, case.line),
                Err(reason) => outln!("FAIL case {} ({CASES_FILE}:{}): {reason}", case.name, case.line),
            }
        }
        outln!("{passed} passed, {failed} failed");
    }
    Ok(if failed == 0 { Exit::Ok } else { Exit::ToolError })
}
