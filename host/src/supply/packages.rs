//! Plugin packages: a directory with a `clat-plugin.toml` manifest and its
//! entry (a WASM component, or an executable for `mcp-stdio`). Installing
//! validates the package, then copies it into an immutable artifact directory
//! under `$CLAT_HOME/plugins/artifacts/` named by its content hash (read-only
//! files; new content → new directory; a half-finished install never becomes
//! visible: it is staged and renamed into place), and records it in
//! `$CLAT_HOME/plugins/installed.json`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::home::{Bound, ClatHome, Document, HomeError};
use crate::supply::capabilities::Capabilities;

mod manifest;

use manifest::package_files;
pub use manifest::{Manifest, PackageKind, RequestedLimits, check_entry, parse_manifest, read_manifest};

/// The manifest's file name.
pub const MANIFEST: &str = "clat-plugin.toml";
/// The index of installed packages, inside `$CLAT_HOME`.
pub const INDEX: &str = "plugins/installed.json";

/// One installed package.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub manifest: Manifest,
    /// The immutable artifact directory.
    pub dir: PathBuf,
    /// What the user granted of the manifest's capabilities (none until granted).
    #[serde(default, skip_serializing_if = "Capabilities::is_empty")]
    pub grants: Capabilities,
    /// The SHA-256 of the package's files (paths and contents), hex; empty in
    /// an index written before it was kept (then the artifact directory's
    /// name, which holds its first 16 digits, stands for it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    /// How its tools are offered under progressive discovery: `always_load`
    /// (`true` or some of its tool names) and `defer_loading` (`clat plugin load`).
    #[serde(default, flatten)]
    pub loading: crate::extension::Loading,
    /// Where it was installed from, when that was a registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PackageSource>,
    /// Where it comes from: `oci://REGISTRY/REPOSITORY` (any tag or digest of it) or the package directory it
    /// was installed from. Its grants belong to it: a package of the same name from elsewhere is another
    /// plugin, which asks for its own. Empty in an index written before it was kept (a directory's, then).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin: String,
}

/// The scheme of a package's place in an OCI registry (`oci://REGISTRY/REPO:TAG`).
pub const OCI_SCHEME: &str = "oci://";

/// Where a package comes from (`Installed::origin`): its registry repository as the reference names it, whatever
/// the tag or digest (`oci://REGISTRY/REPO`), or the canonical directory it was installed from.
pub fn origin_of(dir: &Path, source: Option<&PackageSource>) -> String {
    let Some(source) = source else { return dir.display().to_string() };
    let reference = source.oci.split('@').next().unwrap_or_default();
    match reference.rsplit_once('/') {
        // A tag follows the last path segment's `:` (a port's `:` is in the registry, before a `/`).
        Some((path, last)) => format!("{path}/{}", last.split(':').next().unwrap_or_default()),
        None => reference.to_string(),
    }
}

/// Where an install comes from, and what it may do to a plugin of the same name from elsewhere.
pub struct Origin<'a> {
    /// The registry it came from (else: the directory installed from).
    pub source: Option<PackageSource>,
    /// Replace a same-named plugin installed from elsewhere (`--replace`).
    pub replace: bool,
    /// The command that installs it, for the refusal's advice.
    pub retry: &'a str,
    /// The component file installed, when its package was made for it (`clat plugin install FILE.wasm`): where
    /// it comes from, rather than that package's temporary directory.
    pub component: Option<&'a Path>,
}

/// A registry a package was installed from: the reference as given and the
/// manifest digest its tag resolved to (what `clat plugin update` compares).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageSource {
    /// `oci://REGISTRY/REPO:TAG` (or `@sha256:…`), as given.
    pub oci: String,
    /// The manifest's digest, `sha256:…`.
    pub digest: String,
}

impl Installed {
    /// Whether a package from `origin` is this one's next version rather than another plugin of the same name.
    /// One installed before origins were kept comes from its registry repository when it has a source, else from
    /// a directory: any directory, never a registry.
    pub fn comes_from(&self, origin: &str) -> bool {
        match (self.origin.as_str(), &self.source) {
            ("", Some(source)) => origin_of(&self.dir, Some(source)) == origin,
            ("", None) => !origin.starts_with(OCI_SCHEME),
            (own, _) => own == origin,
        }
    }

    /// What the package is, for kept approvals: its artifact digest.
    pub fn identity(&self) -> crate::policy::identity::Identity {
        if self.digest.is_empty() {
            let dir = self.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            return crate::policy::identity::Identity::package(dir.rsplit('-').next().unwrap_or(&dir));
        }
        crate::policy::identity::Identity::package(&self.digest)
    }

    /// The entry's path inside the artifact directory.
    pub fn entry_path(&self) -> PathBuf {
        self.dir.join(&self.manifest.entry)
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Index {
    version: u32,
    plugins: BTreeMap<String, Installed>,
}

crate::versioned_record!(Index, 1..=1);

/// The index of installed packages.
const PACKAGES: Document<Index> = Document::new(INDEX, Bound::Config);

/// Why a package could not be installed or removed.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    #[error("{path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("package {dir}: {message}")]
    Invalid { dir: PathBuf, message: String },
    #[error("no plugin named {0:?} is installed")]
    NotInstalled(String),
    /// `outcome`: what did not happen (nothing was installed; a trial's call or test did not run).
    #[error("plugin {name} asks for {}; {outcome}. {how}", asked.join(", "))]
    NotGranted { name: String, asked: Vec<String>, how: String, outcome: &'static str },
    #[error(
        "plugin {name} is installed from {installed}, and this package of the same name comes from {offered}: it \
         is another plugin, and does not take the installed one's place or grants. To replace it, run `{retry} \
         --replace` (its grants are asked for anew); nothing was installed"
    )]
    OtherOrigin { name: String, installed: String, offered: String, retry: String },
    #[error(transparent)]
    Home(#[from] HomeError),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
}

fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> PackageError {
    let context = context.into();
    move |source| PackageError::Io { context, source }
}

/// The installed packages of one home.
pub struct PackageStore {
    home: ClatHome,
}

impl PackageStore {
    pub fn new(home: &ClatHome) -> Self {
        PackageStore { home: home.clone() }
    }

    /// Installed packages, by name.
    pub fn list(&self) -> Result<Vec<Installed>, PackageError> {
        Ok(PACKAGES.read(&self.home)?.plugins.into_values().collect())
    }

    /// Copy a validated package into its immutable artifact directory and
    /// record it. `validate` runs on the staged copy before it becomes visible
    /// (e.g. loading a WASM component); an error leaves nothing behind.
    pub fn install(
        &self,
        dir: &Path,
        validate: impl FnOnce(&Manifest, &Path) -> Result<(), String>,
    ) -> Result<Installed, PackageError> {
        // Nothing is granted here, so a same-named plugin from elsewhere is replaced with nothing to carry over.
        let origin = Origin { source: None, replace: true, retry: "", component: None };
        self.install_granted(dir, origin, |_, _| Ok(Capabilities::default()), validate)
    }

    /// `install`, from `origin` (a registry's `source`, else its directory),
    /// with the grants `grant` decides from the manifest and the installed
    /// version it replaces, if that came from the same place: a plugin of the
    /// same name from elsewhere is refused unless `origin.replace`, and then
    /// replaced with nothing of its grants. `grant` runs before anything is
    /// copied or validated, so a refusal leaves nothing behind.
    pub fn install_granted(
        &self,
        dir: &Path,
        origin: Origin<'_>,
        grant: impl FnOnce(&Manifest, Option<&Installed>) -> Result<Capabilities, PackageError>,
        validate: impl FnOnce(&Manifest, &Path) -> Result<(), String>,
    ) -> Result<Installed, PackageError> {
        let dir = dir.canonicalize().map_err(io(format!("cannot open package {}", dir.display())))?;
        let manifest = read_manifest(&dir)?;
        check_entry(&dir, &manifest)?;
        let Origin { source, replace, retry, component } = origin;
        let component = component.map(|c| c.canonicalize().unwrap_or_else(|_| c.to_path_buf()));
        let from = origin_of(component.as_deref().unwrap_or(&dir), source.as_ref());
        // What a refusal names: the component installed, not the package made for it.
        let named = component.clone().unwrap_or_else(|| dir.clone());
        let previous = self.get(&manifest.name)?;
        if let Some(other) = previous.as_ref().filter(|p| !p.comes_from(&from) && !replace) {
            let installed = if other.origin.is_empty() { "a directory".to_string() } else { other.origin.clone() };
            return Err(PackageError::OtherOrigin {
                name: manifest.name.clone(),
                installed,
                offered: from,
                retry: retry.to_string(),
            });
        }
        // Grants belong to where the plugin came from: one replaced from elsewhere passes none on.
        let same = previous.filter(|p| p.comes_from(&from));
        let grants = grant(&manifest, same.as_ref())?;
        let files = package_files(&dir)?;
        let mut hasher = Sha256::new();
        for rel in &files {
            hasher.update(rel.to_string_lossy().as_bytes());
            hasher.update([0u8]);
            hasher.update(std::fs::read(dir.join(rel)).map_err(io(format!("cannot read {}", rel.display())))?);
            hasher.update([0u8]);
        }
        let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let artifacts = self.home.path().join("plugins/artifacts");
        let final_dir = artifacts.join(format!("{}-{}-{}", manifest.name, manifest.version, &digest[..16]));
        self.home.ensure()?;
        std::fs::create_dir_all(&artifacts).map_err(io(format!("cannot create {}", artifacts.display())))?;
        if !final_dir.exists() {
            let staging = artifacts.join(format!(".staging-{}", uuid::Uuid::new_v4().simple()));
            let staged = (|| {
                for rel in &files {
                    let to = staging.join(rel);
                    std::fs::create_dir_all(to.parent().unwrap_or(&staging)).map_err(io("cannot stage the package"))?;
                    std::fs::copy(dir.join(rel), &to).map_err(io(format!("cannot copy {}", rel.display())))?;
                }
                validate(&manifest, &staging)
                    .map_err(|message| PackageError::Invalid { dir: named.clone(), message })?;
                make_read_only(&staging)?;
                std::fs::rename(&staging, &final_dir).map_err(io("cannot move the package into place"))
            })();
            if let Err(e) = staged {
                remove_tree(&staging);
                return Err(e);
            }
        } else {
            validate(&manifest, &final_dir).map_err(|message| PackageError::Invalid { dir: named.clone(), message })?;
        }
        // Read, change, write the index under its lock: concurrent installs lose nothing.
        let (installed, previous) = PACKAGES.update(&self.home, |index| {
            // A reinstall keeps how the user had its tools offered.
            let loading = index.plugins.get(&manifest.name).map(|p| p.loading.clone()).unwrap_or_default();
            let installed =
                Installed { manifest: manifest.clone(), dir: final_dir, grants, digest, loading, source, origin: from };
            let previous = index.plugins.insert(manifest.name.clone(), installed.clone());
            (installed, previous)
        })?;
        if let Some(old) = previous
            && old.dir != installed.dir
        {
            remove_tree(&old.dir);
        }
        Ok(installed)
    }

    /// The installed package named `name`, if any.
    pub fn get(&self, name: &str) -> Result<Option<Installed>, PackageError> {
        Ok(PACKAGES.read(&self.home)?.plugins.remove(name))
    }

    /// Replace an installed plugin's grants (`clat plugin grant | revoke`);
    /// `change` gets the package and returns its new grants.
    pub fn set_grants(
        &self,
        name: &str,
        change: impl FnOnce(&Installed) -> Result<Capabilities, PackageError>,
    ) -> Result<Installed, PackageError> {
        PACKAGES.update(&self.home, |index| {
            let package = index.plugins.get_mut(name).ok_or_else(|| PackageError::NotInstalled(name.to_string()))?;
            package.grants = change(package)?;
            Ok(package.clone())
        })?
    }

    /// Set how an installed plugin's tools are offered under progressive
    /// discovery (`clat plugin load`). Tool names in `always_load` (written by
    /// hand in the index) are taken as they are: one that names no tool pins nothing.
    pub fn set_loading(&self, name: &str, loading: crate::extension::Loading) -> Result<Installed, PackageError> {
        PACKAGES.update(&self.home, |index| {
            let package = index.plugins.get_mut(name).ok_or_else(|| PackageError::NotInstalled(name.to_string()))?;
            package.loading = loading;
            Ok(package.clone())
        })?
    }

    /// Forget a package and delete its artifact directory.
    pub fn remove(&self, name: &str) -> Result<Installed, PackageError> {
        let removed = PACKAGES
            .update(&self.home, |index| index.plugins.remove(name))?
            .ok_or_else(|| PackageError::NotInstalled(name.to_string()))?;
        remove_tree(&removed.dir);
        crate::wasm::kept::forget(&self.home, name);
        Ok(removed)
    }
}

/// Files 0444 (0555 when executable), then directories 0555, deepest first.
fn make_read_only(root: &Path) -> Result<(), PackageError> {
    let mut dirs = vec![root.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        let dir = dirs[i].clone();
        for entry in std::fs::read_dir(&dir).map_err(io("cannot seal the package"))? {
            let path = entry.map_err(io("cannot seal the package"))?.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let mode = std::fs::metadata(&path).map_err(io("cannot seal the package"))?.permissions().mode();
                let sealed = if mode & 0o111 != 0 { 0o555 } else { 0o444 };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(sealed))
                    .map_err(io("cannot seal the package"))?;
            }
        }
        i += 1;
    }
    for dir in dirs.iter().rev() {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).map_err(io("cannot seal the package"))?;
    }
    Ok(())
}

/// Delete a (possibly read-only) tree, best effort.
pub(crate) fn remove_tree(root: &Path) {
    fn unseal(path: &Path) {
        if let Ok(meta) = path.symlink_metadata()
            && meta.is_dir()
        {
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755));
            if let Ok(entries) = std::fs::read_dir(path) {
                for e in entries.flatten() {
                    unseal(&e.path());
                }
            }
        }
    }
    unseal(root);
    let _ = std::fs::remove_dir_all(root);
}

#[cfg(test)]
mod tests;
