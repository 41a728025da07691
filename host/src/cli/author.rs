//! The plugin author's commands: `clat plugin new | build | call | test` and
//! `plugin install --build`, through the door's face for authors
//! (`Platform::authoring`). `call` and `test` run a package without
//! installing it: a *trial* installs it into a throwaway home whose only
//! trusted project is the one named (default: the current directory), mounted
//! like any other — the same registry, pipeline, events and output as `clat
//! call`, with the session model of the real home.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::exit::{Exit, Failure};
use super::install::terminal_grants;
use super::shutdown::Shutdown;
use crate::platform::{
    Authoring, Built, CASES_FILE, Case, DIST_DIR, InstallRequest, Language, Mismatch, Outcome, PackageCheck, Platform,
    PluginTrial, Project, RunOptions, WasmCompiler, judge,
};
use crate::{PackageKind, SandboxPolicy, ToolSource};

/// `clat plugin new NAME`: the new project is trusted too — it holds only
/// what this command wrote — so `clat call` works in it once the plugin is installed.
pub(crate) fn new(
    platform: &Platform,
    name: &str,
    parent: &Path,
    language: Language,
    kind: PackageKind,
    json: bool,
) -> Result<Exit, Failure> {
    let new = platform.authoring(None).new_project(parent, name, language, kind)?;
    let (dir, files, trusted) = (&new.dir, &new.files, &new.trusted);
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
        next.extend(new.first_steps.iter().cloned());
        next.extend(["clat plugin test .".to_string(), "clat plugin install --build .".to_string()]);
        outln!("next: {}", next.join(" && "));
    }
    Ok(Exit::Ok)
}

/// Build a project, saying so on stderr; returns its package directory.
pub(crate) fn build_project(authoring: &Authoring, dir: &Path) -> Result<PathBuf, Failure> {
    eprintln!("clat: building {} ...", dir.display());
    Ok(report_build(authoring.build(dir)?))
}

/// What a build made, on stderr; its package directory.
pub(crate) fn report_build(built: Built) -> PathBuf {
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
pub(crate) fn build_command(authoring: &Authoring, dir: &Path, json: bool) -> Result<Exit, Failure> {
    let package = build_project(authoring, dir)?;
    if json {
        outln!("{}", json!({ "package": package.display().to_string() }));
    } else {
        outln!("package: {}", package.display());
    }
    Ok(Exit::Ok)
}

/// `clat plugin sdk update`: each SDK file's change, then a line saying from which SDK version to which. Exit 1 when
/// a file was kept because it was edited (the project is not wholly on this SDK).
pub(crate) fn update_sdk(authoring: &Authoring, dir: &Path, force: bool, json: bool) -> Result<Exit, Failure> {
    use crate::platform::SdkFileChange;
    let update = authoring.update_sdk(dir, force)?;
    let kept = update.files.iter().filter(|f| f.change == SdkFileChange::Kept).count();
    if json {
        outln!("{}", json!(update));
    } else {
        for file in update.files.iter().filter(|f| f.change != SdkFileChange::UpToDate) {
            let lines = format!("+{} -{}", file.lines_added, file.lines_removed);
            match file.change {
                SdkFileChange::Kept => {
                    outln!("kept     {}: edited since it was written (or not recorded); --force replaces it", file.path)
                }
                SdkFileChange::Updated => outln!("updated  {} ({lines})", file.path),
                SdkFileChange::Added => outln!("added    {} ({lines})", file.path),
                SdkFileChange::Replaced => outln!("replaced {} ({lines}; your edits to it are gone)", file.path),
                SdkFileChange::UpToDate => {}
            }
        }
        let from = update.from.as_deref().unwrap_or("an unrecorded version");
        let current = update.files.iter().filter(|f| f.change == SdkFileChange::UpToDate).count();
        outln!(
            "SDK {from} -> {} (contract artec:clat@{}): {} files changed, {current} already current, {kept} kept",
            update.to,
            update.contract,
            update.files.len() - current - kept
        );
    }
    Ok(if kept > 0 { Exit::ToolError } else { Exit::Ok })
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
fn package_of(authoring: &Authoring, dir: &Path, no_build: bool) -> Result<LoopPackage, Failure> {
    let baseline = |dir: PathBuf| LoopPackage { dir, compiler: WasmCompiler::Baseline };
    if authoring.project_language(dir).is_none() {
        return Ok(baseline(dir.to_path_buf()));
    }
    if !no_build {
        eprintln!("clat: building {} ...", dir.display());
        let built = authoring.build_for_loop(dir)?;
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

/// The package tried in a throwaway home (`Authoring::trial`); `grant`:
/// `--grant` was given (otherwise declared capabilities are asked for at a
/// terminal, or refused headless, as at install, naming the user's own
/// command line with `--grant` as the retry; `command` is `call` or `test`).
fn trial(
    authoring: &Authoring,
    project: &Path,
    package: &LoopPackage,
    grant: bool,
    command: &str,
) -> Result<PluginTrial, Failure> {
    let retry = as_typed(std::env::args().skip(1))
        .unwrap_or_else(|| format!("clat plugin {command} {}", package.dir.display()));
    let question = terminal_grants();
    let request = InstallRequest { grant, replace: false, retry: &retry, question: question.as_deref() };
    Ok(authoring.trial(&package.dir, package.compiler, project, &request)?)
}

/// The command line the user typed (`args` after the program), quoted for a
/// POSIX shell, so the retry a refusal names (it appends `--grant`) runs as
/// is. `None` when it cannot be rebuilt (an argument with a NUL byte).
fn as_typed(args: impl Iterator<Item = String>) -> Option<String> {
    let words: Vec<String> = args.collect();
    shlex::try_join(words.iter().map(String::as_str)).ok().map(|line| format!("clat {line}"))
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
pub(crate) async fn call(authoring: &Authoring<'_>, call: PluginCall, shutdown: &Shutdown) -> Result<Exit, Failure> {
    let package = package_of(authoring, &call.package, call.no_build)?;
    let trial = trial(authoring, &call.project, &package, call.grant, "call")?;
    let project = trial.mount(&call.project, call.sandbox)?;
    // Started and waited for here: a plugin that failed to start says so, with what it wrote, before its tool is
    // looked for.
    let started = tokio::select! {
        statuses = project.load_extensions() => statuses,
        _ = shutdown.token().cancelled() => {
            project.close().await;
            return Err(super::runs::interrupted(shutdown));
        }
    };
    if let Some(failed) = started.iter().find(|s| s.state != crate::ExtensionState::Ready) {
        project.close().await;
        let message = format!("plugin {} {}", failed.name, failed_to_start(failed));
        return Err(Failure::new(Exit::ServerFailed, "extension_failed", message));
    }
    let result = super::runs::call(&project, call.request, shutdown).await;
    project.close().await;
    drop(trial);
    result
}

/// How often `plugin test --watch` looks at the project's files.
const WATCH_POLL: std::time::Duration = std::time::Duration::from_millis(300);
/// How long a change must settle (an editor writing several files) before the run.
const WATCH_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// What `--watch` compares: each file's path, size and modification time.
fn fingerprint(authoring: &Authoring, dir: &Path) -> Vec<(PathBuf, u64, Option<std::time::SystemTime>)> {
    let files = authoring.project_files(dir);
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
pub(crate) async fn test_watch(
    authoring: &Authoring<'_>,
    plugin: &PluginTest<'_>,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let dir = plugin.dir;
    loop {
        let seen = fingerprint(authoring, dir);
        if let Err(failure) = test(authoring, plugin, shutdown).await {
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
            if fingerprint(authoring, dir) != seen {
                break;
            }
        }
        tokio::time::sleep(WATCH_SETTLE).await;
    }
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
pub(crate) async fn test(
    authoring: &Authoring<'_>,
    plugin: &PluginTest<'_>,
    shutdown: &Shutdown,
) -> Result<Exit, Failure> {
    let PluginTest { dir, project, no_build, grant, json } = *plugin;
    // The cases are read and checked before anything is built, compiled or installed.
    let cases = authoring.cases(dir)?;
    let built = package_of(authoring, dir, no_build)?;
    let package = built.dir.clone();
    let checked = authoring.check_package(&package)?;
    let (manifest, mut checks) = (checked.manifest, checked.checks);
    if !checked.loadable {
        return report(&package, &checks, &[], json);
    }
    let trial = match trial(authoring, project, &built, grant, "test") {
        Ok(t) => t,
        Err(failure) => {
            checks.push(PackageCheck { what: "load".into(), ok: false, detail: failure.message });
            return report(&package, &checks, &[], json);
        }
    };
    let mounted = trial.mount(project, SandboxPolicy::default())?;
    let loaded = tokio::select! {
        statuses = mounted.load_extensions() => statuses,
        _ = shutdown.token().cancelled() => {
            mounted.close().await;
            return Err(super::runs::interrupted(shutdown));
        }
    };
    let status = loaded.iter().find(|s| s.name == manifest.name);
    let ready = status.is_some_and(|s| s.state == "ready");
    checks.push(PackageCheck {
        what: "load".into(),
        ok: ready && status.is_some_and(|s| s.problems.is_empty()),
        detail: match status {
            Some(s) if ready && s.problems.is_empty() => format!("{} tool(s)", s.tools.len()),
            Some(s) if !ready => failed_to_start(s),
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
        checks.push(PackageCheck {
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
    drop(trial);
    let results: Vec<(&Case, Result<(), Mismatch>)> = results;
    report(&package, &checks, &results, json)
}

/// What a trial's plugin that is not ready says: that it failed to start, why, and the last lines it wrote.
fn failed_to_start(status: &crate::ExtensionStatus) -> String {
    let mut said = format!("failed to start ({}): {}", status.state, status.problems.join("; "));
    if !status.output_tail.is_empty() {
        said.push_str("; the last lines it wrote:");
        for line in &status.output_tail {
            said.push_str("\n  | ");
            said.push_str(line);
        }
    }
    said
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
    checks: &[PackageCheck],
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
