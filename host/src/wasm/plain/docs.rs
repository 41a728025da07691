//! The doc comments of a plain component's functions, from the WIT its
//! package ships (`wit/` beside the component, as wit-bindgen,
//! componentize-py and jco projects keep it): a component's binary keeps
//! types, never docs. Read within `PLAIN_WIT_MAX_BYTES`; a WIT that is
//! missing, too large or does not parse gives no docs, and the tools are
//! described by their signatures instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::limits::PLAIN_WIT_MAX_BYTES;

/// The directory of a package that holds its WIT.
pub const WIT_DIR: &str = "wit";

/// Doc comments by (interface, function); world-level functions have no interface.
#[derive(Debug, Default)]
pub struct FunctionDocs {
    docs: HashMap<(Option<String>, String), String>,
}

impl FunctionDocs {
    /// The docs of the WIT in `package/wit`, or none (with the reason, for status) when it cannot be read.
    pub fn read(package: &Path) -> (FunctionDocs, Option<String>) {
        let dir = package.join(WIT_DIR);
        if !dir.is_dir() {
            return (FunctionDocs::default(), None);
        }
        match read_dir_bounded(&dir) {
            Ok(docs) => (docs, None),
            Err(reason) => (FunctionDocs::default(), Some(format!("its WIT gives no descriptions: {reason}"))),
        }
    }

    /// The doc comment of `function` of the exported `interface` (`None`: world-level).
    pub fn of(&self, interface: Option<&str>, function: &str) -> Option<&str> {
        self.docs.get(&(interface.map(str::to_string), function.to_string())).map(String::as_str)
    }
}

/// The files of the WIT in `dir` (a link is skipped), within `PLAIN_WIT_MAX_BYTES` in all.
fn wit_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut total = 0u64;
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).map_err(|e| e.to_string())?.flatten() {
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                total += entry.metadata().map_err(|e| e.to_string())?.len();
                files.push(entry.path());
            }
        }
        if total > PLAIN_WIT_MAX_BYTES {
            return Err(format!("{} holds more than {PLAIN_WIT_MAX_BYTES} bytes of WIT", dir.display()));
        }
    }
    Ok(files)
}

/// Copy the WIT in `from` to `to` (a component installed with no manifest takes the `wit/` beside it), within
/// `PLAIN_WIT_MAX_BYTES`.
pub fn copy_wit(from: &Path, to: &Path) -> std::io::Result<()> {
    for file in wit_files(from).map_err(std::io::Error::other)? {
        let target = to.join(file.strip_prefix(from).map_err(std::io::Error::other)?);
        std::fs::create_dir_all(target.parent().unwrap_or(to))?;
        std::fs::copy(&file, &target)?;
    }
    Ok(())
}

fn read_dir_bounded(dir: &Path) -> Result<FunctionDocs, String> {
    wit_files(dir)?;
    let mut resolve = wit_parser::Resolve::default();
    resolve.push_dir(dir).map_err(|e| format!("{e:#}"))?;
    let mut docs = HashMap::new();
    let mut keep = |interface: Option<String>, function: &str, text: &Option<String>| {
        if let Some(text) = text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            docs.insert((interface, function.to_string()), text.to_string());
        }
    };
    for (_, interface) in resolve.interfaces.iter() {
        let Some(name) = &interface.name else { continue };
        for (function, f) in &interface.functions {
            keep(Some(name.clone()), function, &f.docs.contents);
        }
    }
    for (_, world) in resolve.worlds.iter() {
        for (key, item) in &world.exports {
            match item {
                wit_parser::WorldItem::Function(f) => keep(None, &f.name, &f.docs.contents),
                // An interface written inside the world (`export tools: interface { … }`) is named by its key.
                wit_parser::WorldItem::Interface { id, .. } => {
                    let interface = &resolve.interfaces[*id];
                    if interface.name.is_none() {
                        for (function, f) in &interface.functions {
                            keep(Some(resolve.name_world_key(key)), function, &f.docs.contents);
                        }
                    }
                }
                wit_parser::WorldItem::Type { .. } => {}
            }
        }
    }
    Ok(FunctionDocs { docs })
}
