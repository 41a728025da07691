//! The doc comments of a plain component's functions, from the WIT its
//! package ships (`wit/` beside the component, as wit-bindgen,
//! componentize-py and jco projects keep it): a component's binary keeps
//! types, never docs. Read within `PLAIN_WIT_MAX_BYTES`; a WIT that is
//! missing, too large or does not parse gives no docs, and the tools are
//! described by their signatures instead. Through a registry the WIT travels
//! as one binary WIT package (`encode_wit`, the encoding `wkg` publishes WIT
//! in, docs kept in its `package-docs` section) and is written back as text
//! (`write_wit`), so a pulled package reads as a local one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::limits::PLAIN_WIT_MAX_BYTES;

/// The directory of a package that holds its WIT.
pub const WIT_DIR: &str = "wit";

/// Doc comments by (interface, function); world-level functions have no interface.
#[derive(Debug, Default, PartialEq)]
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
        check_wit_bytes(total, &dir.display().to_string())?;
    }
    Ok(files)
}

/// Whether `bytes` of WIT (in `what`) are within `PLAIN_WIT_MAX_BYTES`, the one check of that bound.
pub fn check_wit_bytes(bytes: u64, what: &str) -> Result<(), String> {
    if bytes > PLAIN_WIT_MAX_BYTES {
        return Err(format!("{what} holds more than {PLAIN_WIT_MAX_BYTES} bytes of WIT"));
    }
    Ok(())
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

/// The WIT in `package/wit` as one binary WIT package — its own package, with the docs — or `None` when the
/// package ships no WIT. A WIT past `PLAIN_WIT_MAX_BYTES` or that does not parse is an error.
pub fn encode_wit(package: &Path) -> Result<Option<Vec<u8>>, String> {
    let dir = package.join(WIT_DIR);
    if !dir.is_dir() {
        return Ok(None);
    }
    wit_files(&dir)?;
    let mut resolve = wit_parser::Resolve::default();
    let (own, _) = resolve.push_dir(&dir).map_err(|e| format!("{e:#}"))?;
    wit_component::encode(&resolve, own).map(Some).map_err(|e| format!("{e:#}"))
}

/// Write the binary WIT package `bytes` (as `encode_wit` makes) into `package/wit` as text: its own package
/// with the packages it uses nested in the same file.
pub fn write_wit(bytes: &[u8], package: &Path) -> Result<(), String> {
    check_wit_bytes(bytes.len() as u64, "the WIT package")?;
    let (resolve, own) = match wit_parser::decoding::decode(bytes).map_err(|e| format!("{e:#}"))? {
        wit_parser::decoding::DecodedWasm::WitPackage(resolve, own) => (resolve, own),
        wit_parser::decoding::DecodedWasm::Component(..) => return Err("it is a component, not a WIT package".into()),
    };
    let others: Vec<_> = resolve.packages.iter().map(|(id, _)| id).filter(|id| *id != own).collect();
    let mut printer = wit_component::WitPrinter::default();
    printer.print(&resolve, own, &others).map_err(|e| format!("{e:#}"))?;
    let dir = package.join(WIT_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let file = dir.join("package.wit");
    std::fs::write(&file, printer.output.to_string()).map_err(|e| format!("cannot write {}: {e}", file.display()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_wit_crosses_a_registry_as_one_binary_package_with_its_docs_and_the_packages_it_uses() {
        let from = tempfile::tempdir().unwrap();
        write(
            from.path(),
            "wit/world.wit",
            "package example:tools@0.1.0;\n\n/// Text helpers.\ninterface text {\n    use example:shapes/kinds@0.2.0.{case};\n    \
             /// Change the case of some text.\n    recase: func(text: string, to: case) -> string;\n}\n\nworld tools {\n    \
             export text;\n    /// Say hello.\n    export greet: func(name: string) -> string;\n}\n",
        );
        write(
            from.path(),
            "wit/deps/shapes/kinds.wit",
            "package example:shapes@0.2.0;\n\ninterface kinds {\n    enum case { upper, lower }\n}\n",
        );
        let bytes = encode_wit(from.path()).unwrap().expect("it ships WIT");
        let to = tempfile::tempdir().unwrap();
        write_wit(&bytes, to.path()).unwrap();
        let (docs, problem) = FunctionDocs::read(to.path());
        assert_eq!(problem, None);
        assert_eq!(docs.of(Some("text"), "recase"), Some("Change the case of some text."));
        assert_eq!(docs.of(None, "greet"), Some("Say hello."));
        assert_eq!(docs, FunctionDocs::read(from.path()).0, "the same docs as the package it was published from");
    }

    #[test]
    fn a_wit_past_its_bound_or_not_a_wit_package_is_refused() {
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(encode_wit(empty.path()), Ok(None));
        write(empty.path(), "wit/broken.wit", "package example:broken;\ninterface {");
        assert!(encode_wit(empty.path()).is_err());
        let to = tempfile::tempdir().unwrap();
        assert!(write_wit(b"\0asm\x0d\0\x01\0", to.path()).is_err());
        let past = vec![0u8; PLAIN_WIT_MAX_BYTES as usize + 1];
        assert!(write_wit(&past, to.path()).unwrap_err().contains(&PLAIN_WIT_MAX_BYTES.to_string()));
        assert!(!to.path().join(WIT_DIR).exists(), "nothing written");
    }
}
