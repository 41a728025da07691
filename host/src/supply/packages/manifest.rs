//! A package's manifest, `clat-plugin.toml`: its kind, name, version, entry,
//! capabilities, limits and tools' uses, checked by shape (every bad field
//! named); and the files a package may hold (bounded in number and size, no
//! link out of it).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::limits::{
    PACKAGE_MAX_BYTES, PACKAGE_MAX_FILES, PLUGIN_NAME_MAX_CHARS, PLUGIN_VERSION_MAX_CHARS, WASM_MEMORY_MAX_BYTES,
};
use crate::supply::capabilities::{Capabilities, ToolDeclaration, ToolUses};

use super::{MANIFEST, PackageError, io};

/// What kind of plugin a package holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PackageKind {
    /// A WebAssembly component for the `clat-plugin` world.
    Wasm,
    /// An MCP server run as a local subprocess over stdio.
    McpStdio,
    /// Any WebAssembly component, its exported functions the tools (no CLAT contract).
    Component,
}

impl PackageKind {
    /// The manifest's and the CLI's name.
    pub fn as_str(self) -> &'static str {
        match self {
            PackageKind::Wasm => "wasm",
            PackageKind::McpStdio => "mcp-stdio",
            PackageKind::Component => "component",
        }
    }

    /// Whether its entry is a WebAssembly component CLAT runs in-process (a contract guest or a plain component).
    pub fn is_wasm(self) -> bool {
        matches!(self, PackageKind::Wasm | PackageKind::Component)
    }
}

/// Limits a package asks for (never more than the host allows).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestedLimits {
    /// Linear memory for a WASM guest, in MiB.
    pub memory_mb: Option<u32>,
}

/// `clat-plugin.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub kind: PackageKind,
    #[serde(default)]
    pub description: String,
    /// The component (wasm) or executable (mcp-stdio), relative to the package.
    pub entry: String,
    /// Arguments for an `mcp-stdio` entry.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment values for an `mcp-stdio` entry (added to CLAT's own).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: RequestedLimits,
    /// What a WASM guest asks to reach beyond host services (granted at install).
    #[serde(default, skip_serializing_if = "Capabilities::is_empty")]
    pub capabilities: Capabilities,
    /// Per tool, which capabilities it uses (`[tools.fetch] uses = ["http"]`);
    /// without the table every tool may use every granted capability.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolDeclaration>,
}

impl Manifest {
    /// Which tools use which capability.
    pub fn tool_uses(&self) -> ToolUses {
        ToolUses::of(&self.tools)
    }

    /// The memory cap a WASM guest gets.
    pub fn memory_max(&self) -> Option<usize> {
        self.limits.memory_mb.map(|mb| mb as usize * 1024 * 1024)
    }
}

/// Read and check `DIR/clat-plugin.toml` (shape only; the entry is checked by `validate`).
pub fn read_manifest(dir: &Path) -> Result<Manifest, PackageError> {
    let path = dir.join(MANIFEST);
    let text = crate::home::files::read_config_text(&path)
        .map_err(|e| PackageError::Manifest { path: path.clone(), message: e.to_string() })?;
    parse_manifest(&path, &text)
}

/// Check the text of a manifest; `path` names it in errors.
pub fn parse_manifest(path: &Path, text: &str) -> Result<Manifest, PackageError> {
    let manifest: Manifest = toml::from_str(text)
        .map_err(|e| PackageError::Manifest { path: path.to_path_buf(), message: e.to_string() })?;
    let bad = |message: String| PackageError::Manifest { path: path.to_path_buf(), message };
    let name_ok = !manifest.name.is_empty()
        && manifest.name.len() <= PLUGIN_NAME_MAX_CHARS
        && manifest.name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && manifest.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !name_ok {
        return Err(bad(format!(
            "name {:?} must be 1–{PLUGIN_NAME_MAX_CHARS} characters of a-z, 0-9, '-' and '_', starting with a letter or digit",
            manifest.name
        )));
    }
    if manifest.version.is_empty()
        || manifest.version.chars().count() > PLUGIN_VERSION_MAX_CHARS
        || manifest.version.contains(['/', '\\'])
    {
        return Err(bad(format!(
            "version {:?} must be 1–{PLUGIN_VERSION_MAX_CHARS} characters without slashes",
            manifest.version
        )));
    }
    let entry = Path::new(&manifest.entry);
    if manifest.entry.is_empty() || !entry.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(bad(format!(
            "entry {:?} must be a relative path inside the package, without '..'",
            manifest.entry
        )));
    }
    if manifest.kind == PackageKind::Wasm
        && let Some((tool, _)) = manifest.tools.iter().find(|(_, t)| t.description.is_some() || t.effect.is_some())
    {
        return Err(bad(format!(
            "tools.{tool}: description and effect are a plain component's (kind = \"component\"); a wasm plugin \
             describes its tools in list-tools"
        )));
    }
    if manifest.kind.is_wasm() {
        if !manifest.args.is_empty() || !manifest.env.is_empty() {
            return Err(bad(
                "args and env apply to mcp-stdio packages only; WASM guests get no arguments or environment".into(),
            ));
        }
        if let Some(mb) = manifest.limits.memory_mb
            && (mb == 0 || mb as usize * 1024 * 1024 > WASM_MEMORY_MAX_BYTES)
        {
            return Err(bad(format!("limits.memory_mb {mb} must be 1–{}", WASM_MEMORY_MAX_BYTES / (1024 * 1024))));
        }
        manifest.capabilities.validate().map_err(|e| bad(e.to_string()))?;
        ToolUses::validate(&manifest.tools, &manifest.capabilities).map_err(|e| bad(e.to_string()))?;
    } else if manifest.limits.memory_mb.is_some() {
        return Err(bad("limits.memory_mb applies to wasm packages only".into()));
    } else if !manifest.capabilities.is_empty() {
        return Err(bad("capabilities apply to wasm packages only: an mcp-stdio server is a process that already \
                        has CLAT's network and environment (set its env in the manifest)"
            .into()));
    } else if !manifest.tools.is_empty() {
        return Err(bad("[tools] says which tools use which capability, and applies to wasm packages only".into()));
    }
    Ok(manifest)
}

/// Every file of a package, relative, sorted; symlinks and oversize refused.
pub(super) fn package_files(dir: &Path) -> Result<Vec<PathBuf>, PackageError> {
    let invalid = |message: String| PackageError::Invalid { dir: dir.to_path_buf(), message };
    let mut files = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let entries =
            std::fs::read_dir(dir.join(&rel)).map_err(io(format!("cannot read {}", dir.join(&rel).display())))?;
        for entry in entries {
            let entry = entry.map_err(io("cannot list the package"))?;
            let child = rel.join(entry.file_name());
            let meta = entry.path().symlink_metadata().map_err(io(format!("cannot stat {}", child.display())))?;
            if meta.file_type().is_symlink() {
                return Err(invalid(format!("{} is a symlink; packages must hold plain files", child.display())));
            } else if meta.is_dir() {
                stack.push(child);
            } else if meta.is_file() {
                total += meta.len();
                files.push(child);
            } else {
                return Err(invalid(format!("{} is not a regular file", child.display())));
            }
            if files.len() > PACKAGE_MAX_FILES || total > PACKAGE_MAX_BYTES {
                return Err(invalid(format!(
                    "the package exceeds {PACKAGE_MAX_FILES} files or {PACKAGE_MAX_BYTES} bytes"
                )));
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Check the entry of a package: present, a regular file, executable for mcp-stdio.
pub fn check_entry(dir: &Path, manifest: &Manifest) -> Result<PathBuf, PackageError> {
    let invalid = |message: String| PackageError::Invalid { dir: dir.to_path_buf(), message };
    let entry = dir.join(&manifest.entry);
    let meta =
        entry.symlink_metadata().map_err(|e| invalid(format!("entry {:?} cannot be read: {e}", manifest.entry)))?;
    if !meta.is_file() {
        return Err(invalid(format!("entry {:?} is not a regular file", manifest.entry)));
    }
    if manifest.kind == PackageKind::McpStdio && meta.permissions().mode() & 0o111 == 0 {
        return Err(invalid(format!("entry {:?} of an mcp-stdio package must be executable", manifest.entry)));
    }
    Ok(entry)
}
