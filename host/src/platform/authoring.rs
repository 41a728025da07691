//! The door's face for plugin authors, [`Platform::authoring`]: a new
//! project (written from a template and trusted), its build (the package, or
//! the edit loop's), its files and test cases, the checks of a package before
//! it runs (manifest, entry, the interfaces its component imports and
//! exports), and a *trial*: the package installed into a throwaway home
//! (removed when the trial is dropped) whose only trusted project is the one
//! named and whose compiled cache is the real home's authoring cache, mounted
//! like any other home with the real home's session model. `clat plugin new |
//! build | call | test` print what these return.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::plugins::{InstallRequest, PluginAdminError, component_imports, decide_grants, validate_staged};
use super::{MountOptions, Platform, PlatformError, Project};
use crate::extension::StartFilter;
use crate::home::ClatHome;
use crate::home::trust::TrustStore;
use crate::native::process::SandboxPolicy;
use crate::scope::wasm_cache_dir;
use crate::supply::packages::{Manifest, Origin, PackageError, PackageKind, PackageStore, check_entry, read_manifest};
use crate::wasm::cache::CompileObserver;
use crate::wasm::{EngineOptions, WasmRuntime};

pub use crate::authoring::build::{Built, CASES_FILE, DIST_DIR};
pub use crate::authoring::cases::{Case, Expect, Mismatch, Outcome, Texts, judge};
pub use crate::authoring::sdk::{SdkFileChange, SdkFileUpdate, SdkUpdate};
pub use crate::authoring::{AuthoringError, Language};
pub use crate::wasm::WasmCompiler;

/// A project `Authoring::new_project` wrote.
#[derive(Debug, Clone)]
pub struct NewProject {
    /// Its directory.
    pub dir: PathBuf,
    /// The files written, relative to it.
    pub files: Vec<String>,
    /// Its canonical root, now trusted (it holds only what was written).
    pub trusted: PathBuf,
    /// The commands that take it from here to its first call (inside `dir`).
    pub first_steps: Vec<String>,
}

/// One check of a package before it runs.
#[derive(Debug, Clone)]
pub struct PackageCheck {
    /// What was checked (`package`, `interfaces`, `capabilities`).
    pub what: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found, or what is wrong.
    pub detail: String,
}

/// What `Authoring::check_package` found.
#[derive(Debug, Clone)]
pub struct PackageChecks {
    /// The package's manifest.
    pub manifest: Manifest,
    /// Each check, in order.
    pub checks: Vec<PackageCheck>,
    /// Whether it can be loaded at all (its component's interfaces could be read and are linked by the host).
    pub loadable: bool,
}

/// The face for plugin authors ([`Platform::authoring`]).
pub struct Authoring<'p> {
    home: &'p ClatHome,
    observer: Option<Arc<dyn CompileObserver>>,
}

impl Platform {
    /// What a plugin author does; `observer` is told about compilations that take a while.
    pub fn authoring(&self, observer: Option<Arc<dyn CompileObserver>>) -> Authoring<'_> {
        Authoring { home: &self.home, observer }
    }
}

impl Authoring<'_> {
    /// Write a new project `name` inside `parent` (it must not exist yet) from
    /// the `language` template of `kind`, and trust it.
    pub fn new_project(
        &self,
        parent: &Path,
        name: &str,
        language: Language,
        kind: PackageKind,
    ) -> Result<NewProject, PluginAdminError> {
        let (dir, mut files) = crate::authoring::templates::scaffold(parent, name, language, kind)?;
        // A component project records the SDK it carries, so `clat plugin sdk update` knows what it may rewrite.
        files.extend(crate::authoring::sdk::record_new_project(&dir, language, kind)?);
        let trusted = TrustStore::new(self.home).trust(&dir)?;
        let first_steps = crate::authoring::build::first_steps(&dir, language, kind);
        Ok(NewProject { dir, files, trusted, first_steps })
    }

    /// The language of the plugin project in `dir`; `None` when it is not one (a package, say).
    pub fn project_language(&self, dir: &Path) -> Option<Language> {
        crate::authoring::build::detect(dir)
    }

    /// Build the project in `dir` into its package (`DIR/dist`), reusing an up-to-date build.
    pub fn build(&self, dir: &Path) -> Result<Built, AuthoringError> {
        crate::authoring::build::build(dir)
    }

    /// Rewrite the guest SDK the component project at `dir` carries to this clat's (`force`: also the files edited
    /// since they were written), and record it; what happened to each file.
    pub fn update_sdk(&self, dir: &Path, force: bool) -> Result<SdkUpdate, AuthoringError> {
        let manifest = read_manifest(dir).map_err(|e| AuthoringError::Invalid(e.to_string()))?;
        let language = crate::authoring::build::detect(dir).ok_or_else(|| {
            AuthoringError::Invalid(format!("{} is not a plugin project (`clat plugin new` makes one)", dir.display()))
        })?;
        let carries_none = match manifest.kind {
            PackageKind::Wasm => return crate::authoring::sdk::update(dir, language, force),
            PackageKind::McpStdio => {
                "an MCP server project: it uses the official MCP SDK from its package manager (requirements.txt, \
                 package.json)"
            }
            PackageKind::Component => "a plain component project: its bindings come from its own WIT (wit/)",
        };
        Err(AuthoringError::Unsupported(format!(
            "{} is {carries_none}, and carries no CLAT SDK to update",
            dir.display()
        )))
    }

    /// Whether `dir` is a plugin project (it has a `Cargo.toml`, `package.json` or `pyproject.toml`), not a package.
    pub fn is_project(&self, dir: &Path) -> bool {
        crate::authoring::build::detect(dir).is_some()
    }

    /// Build the project in `dir` for the edit loop: a JavaScript or Python
    /// component's runtime, built once, reads the sources at each call; else `build`.
    pub fn build_for_loop(&self, dir: &Path) -> Result<Built, AuthoringError> {
        crate::authoring::dev::build_for_loop(dir)
    }

    /// The project's own files (its dependencies and build outputs aside), relative to `dir`.
    pub fn project_files(&self, dir: &Path) -> Vec<PathBuf> {
        crate::authoring::build::project_files(dir).unwrap_or_default()
    }

    /// The test cases of `dir` (its `cases.jsonl`), read and checked whole; none when it has no such file.
    pub fn cases(&self, dir: &Path) -> Result<Vec<Case>, AuthoringError> {
        let path = dir.join(CASES_FILE);
        if path.is_file() { crate::authoring::cases::read_cases(&path) } else { Ok(Vec::new()) }
    }

    /// The checks of the package in `package` before it runs: its manifest
    /// and entry, and a component's interfaces (what it exports, that it
    /// imports only what the host links for its kind, a declared HTTP grant it can use).
    pub fn check_package(&self, package: &Path) -> Result<PackageChecks, PluginAdminError> {
        let manifest = read_manifest(package)?;
        check_entry(package, &manifest)?;
        let mut checks = vec![PackageCheck {
            what: "package".into(),
            ok: true,
            detail: format!("{} {} ({})", manifest.name, manifest.version, manifest.kind.as_str()),
        }];
        if !manifest.kind.is_wasm() {
            return Ok(PackageChecks { manifest, checks, loadable: true });
        }
        let entry = package.join(&manifest.entry);
        let bytes = std::fs::read(&entry)
            .map_err(|e| PluginAdminError::Unreadable(format!("cannot read {}: {e}", manifest.entry)))?;
        let check = match manifest.kind {
            PackageKind::Component => crate::wasm::imports::check_plain_component,
            _ => crate::wasm::imports::check_component,
        };
        let loadable = match check(&bytes, !manifest.capabilities.http.is_empty()) {
            Ok(found) => {
                checks.push(PackageCheck {
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
                    checks.push(PackageCheck {
                        what: "capabilities".into(),
                        ok: false,
                        detail: "the manifest declares [capabilities] http but the component never imports \
                                 wasi:http: remove the capability, or build with HTTP enabled"
                            .into(),
                    });
                }
                true
            }
            Err(problem) => {
                checks.push(PackageCheck { what: "interfaces".into(), ok: false, detail: problem.to_string() });
                false
            }
        };
        Ok(PackageChecks { manifest, checks, loadable })
    }

    /// Try the package in `package` without installing it: a throwaway home
    /// with `project` trusted and the package installed, compiled by
    /// `compiler` into the real home's authoring cache (`WASM_DEV_CACHE_DIR`),
    /// which then keeps only this build's entries (an edit loop leaves one
    /// compiled build behind, not one per edit). Its grant is decided as at
    /// install.
    pub fn trial(
        &self,
        package: &Path,
        compiler: WasmCompiler,
        project: &Path,
        request: &InstallRequest,
    ) -> Result<PluginTrial, PluginAdminError> {
        let internal = |what: &str, e: std::io::Error| PluginAdminError::Internal(format!("{what}: {e}"));
        let dir = std::env::temp_dir().join(format!("clat-plugin-{}", uuid::Uuid::new_v4().simple()));
        let throwaway = ThrowawayHome(ClatHome::at(&dir));
        throwaway.0.ensure()?;
        let real_cache = wasm_cache_dir(self.home, WasmCompiler::Baseline);
        std::fs::create_dir_all(&real_cache).map_err(|e| internal("cannot create the compiled cache", e))?;
        std::fs::create_dir_all(dir.join("cache")).map_err(|e| internal("cannot create the throwaway home", e))?;
        // Whichever compiler, the throwaway's cache is the real home's authoring cache (never its installed one).
        std::os::unix::fs::symlink(&real_cache, wasm_cache_dir(&throwaway.0, compiler))
            .map_err(|e| internal("cannot share the compiled cache", e))?;
        TrustStore::new(&throwaway.0).trust(project)?;
        let engine = EngineOptions { compiler, ..EngineOptions::default() };
        let runtime = WasmRuntime::with_options(&real_cache, self.observer.clone(), engine)
            .map_err(|e| PluginAdminError::Internal(format!("the WASM runtime could not start: {e:#}")))?;
        let imports = component_imports(package);
        let installed = PackageStore::new(&throwaway.0)
            .install_granted(
                package,
                Origin { source: None, replace: false, retry: request.retry, component: None },
                |manifest, _| decide_grants(manifest, None, &imports, request),
                |manifest, staged| validate_staged(&runtime, manifest, staged).map(drop),
            )
            .map_err(|e| match e {
                // Nothing is installed by a trial anyway: what did not happen is the run.
                PackageError::NotGranted { name, asked, how, .. } => {
                    PackageError::NotGranted { name, asked, how, outcome: "nothing was run" }
                }
                other => other,
            })?;
        if let Err(e) = runtime.sweep_cache(std::slice::from_ref(&installed)) {
            tracing::debug!("the authoring cache was not swept: {e}");
        }
        Ok(PluginTrial {
            throwaway,
            real: self.home.clone(),
            compiler,
            manifest: installed.manifest,
            observer: self.observer.clone(),
        })
    }
}

/// A home that lives as long as one command: removed on drop.
struct ThrowawayHome(ClatHome);

impl Drop for ThrowawayHome {
    fn drop(&mut self) {
        crate::supply::packages::remove_tree(self.0.path());
    }
}

/// A package installed into a throwaway home for one command (removed on drop).
pub struct PluginTrial {
    throwaway: ThrowawayHome,
    real: ClatHome,
    compiler: WasmCompiler,
    manifest: Manifest,
    observer: Option<Arc<dyn CompileObserver>>,
}

impl PluginTrial {
    /// The installed package's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Mount `project` in the throwaway home: the native tools and the
    /// package (nothing else starts, not even a server pack of the session
    /// model), with the real home's session model.
    pub fn mount(&self, project: &Path, sandbox: SandboxPolicy) -> Result<Project, PlatformError> {
        let options = MountOptions {
            start: StartFilter::Named(vec![self.manifest.name.clone()]),
            sandbox,
            model: Some(Platform { home: self.real.clone() }.session_model()?),
            compile_observer: self.observer.clone(),
            default_startup_timeout: None,
            wasm_compiler: self.compiler,
            questions: None,
        };
        Platform { home: self.throwaway.0.clone() }.mount(project, options)
    }
}
