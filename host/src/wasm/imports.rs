//! What a component imports and exports, read from its bytes before anything
//! is compiled, and checked against what the host links: the `artec:clat`
//! contract in a version this host accepts (a plain component: not the
//! contract, and WASI 0.2 alone, every other import listed), and WASI 0.2 (cli, clocks,
//! filesystem, io, random, sockets — the last denied at run time), plus
//! `wasi:http` 0.2 for a plugin whose manifest declares `[capabilities] http`.
//! A component built for another contract version, one that is not a plugin
//! (a WASI command), or one importing an interface the host does not link for
//! it (say `wasi:http` without the capability, which componentize-js adds
//! unless told not to) is refused with the interface named and the fix, in
//! milliseconds rather than after a compilation that can take seconds. Nested
//! modules and components are skipped, not parsed.

use wasmparser::{Chunk, Encoding, Parser, Payload};

use crate::contract::{ACCEPTED_CONTRACT_VERSIONS, CONTRACT_PACKAGE};

/// The WASI packages the host links, at major.minor 0.2 (`wasmtime_wasi::p2`, 0.2.12 in wasmtime 48).
pub const LINKED_WASI_PACKAGES: [&str; 6] =
    ["wasi:cli", "wasi:clocks", "wasi:filesystem", "wasi:io", "wasi:random", "wasi:sockets"];

/// The WASI package linked only for plugins that declare `[capabilities] http`.
pub const HTTP_PACKAGE: &str = "wasi:http";

/// The top-level imports and exports of a component, by interface name
/// (`wasi:io/streams@0.2.3`, `artec:clat/host-services@0.1.1`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentInterfaces {
    pub imports: Vec<String>,
    pub exports: Vec<String>,
}

impl ComponentInterfaces {
    /// Whether the component imports any `wasi:http` interface.
    pub fn imports_http(&self) -> bool {
        self.imports.iter().any(|i| i.starts_with(&format!("{HTTP_PACKAGE}/")))
    }
}

/// Why a component cannot be a plugin of this host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportProblem {
    #[error("not a valid WebAssembly component: {0}")]
    NotAComponent(String),
    #[error(
        "it is a core WebAssembly module, not a component: build for wasm32-wasip2 (cargo), or wrap it with `wasm-tools component new`"
    )]
    CoreModule,
    #[error(
        "it exports no `{CONTRACT_PACKAGE}/plugin` interface, so it is not a CLAT plugin (exports: {exports}); build it for the world `clat-plugin` of wit/clat.wit"
    )]
    NotAPlugin { exports: String },
    #[error(
        "it was built for the contract {CONTRACT_PACKAGE}@{found}; this host accepts {}. Rebuild it against this \
         clat's contract: take wit/clat.wit (in Rust, vendor/clat-guest) from a project `clat plugin new` writes \
         with this clat, then run `clat plugin build`",
        accepted()
    )]
    OtherContract { found: String },
    #[error("it imports `{interface}`, which CLAT does not link for guests. {fix}")]
    Unlinked { interface: String, fix: String },
    #[error(
        "it imports what CLAT does not give a plain component: {}. A plain component gets WASI 0.2 ({}; wasi:http \
         with an `http` grant) and nothing else",
        imports.join(", "), LINKED_WASI_PACKAGES.join(", ")
    )]
    UnlinkedPlain { imports: Vec<String> },
    #[error(
        "it exports `{CONTRACT_PACKAGE}/plugin`: it is a CLAT plugin, not a plain component; install it with \
         kind = \"wasm\" in its clat-plugin.toml"
    )]
    ContractAsPlain,
}

fn accepted() -> String {
    ACCEPTED_CONTRACT_VERSIONS.iter().map(|v| format!("{CONTRACT_PACKAGE}@{v}")).collect::<Vec<_>>().join(", ")
}

/// Read the top-level imports and exports of a component.
pub fn read_interfaces(bytes: &[u8]) -> Result<ComponentInterfaces, ImportProblem> {
    let mut found = ComponentInterfaces::default();
    let mut parser = Parser::new(0);
    let mut data = bytes;
    let bad = |e: wasmparser::BinaryReaderError| ImportProblem::NotAComponent(e.message().to_string());
    loop {
        let payload = match parser.parse(data, true).map_err(bad)? {
            Chunk::Parsed { consumed, payload } => {
                data = &data[consumed..];
                payload
            }
            Chunk::NeedMoreData(_) => return Err(ImportProblem::NotAComponent("the file ends early".into())),
        };
        match payload {
            Payload::Version { encoding: Encoding::Module, .. } => return Err(ImportProblem::CoreModule),
            Payload::ComponentImportSection(reader) => {
                for import in reader {
                    let import = import.map_err(bad)?;
                    // A type a world imports (`record instant` written in the world) is no host interface.
                    if !matches!(import.ty, wasmparser::ComponentTypeRef::Type(wasmparser::TypeBounds::Eq(_))) {
                        found.imports.push(import.name.name.to_string());
                    }
                }
            }
            Payload::ComponentExportSection(reader) => {
                for export in reader {
                    found.exports.push(export.map_err(bad)?.name.name.to_string());
                }
            }
            // The parent parser has already stepped over the nested item: skip its bytes.
            Payload::ModuleSection { unchecked_range: range, .. }
            | Payload::ComponentSection { unchecked_range: range, .. } => {
                let skip = range.len();
                if skip > data.len() {
                    return Err(ImportProblem::NotAComponent("a nested module runs past the end of the file".into()));
                }
                data = &data[skip..];
            }
            Payload::End(_) => return Ok(found),
            _ => {}
        }
    }
}

/// `name@version` → (`name`, `version`).
fn split_version(interface: &str) -> (&str, Option<&str>) {
    match interface.rsplit_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (interface, None),
    }
}

/// The fix to suggest for an interface the host does not link.
fn fix_for(interface: &str, allow_http: bool) -> String {
    let (name, version) = split_version(interface);
    if name.starts_with("wasi:http/") && !allow_http {
        return "Guests get no network unless the manifest asks for it: list the origins it talks to in \
                clat-plugin.toml (`[capabilities] http = [\"https://api.example.com\"]`), which the user grants at \
                install. A componentize-js guest that needs no network imports it unless built with \
                `-d http fetch-event`; otherwise drop the HTTP client from the guest."
            .into();
    }
    if name.starts_with("wasi:http/") {
        return format!(
            "CLAT links wasi:http at version 0.2, not {}; build against WASI 0.2.",
            version.unwrap_or("unversioned")
        );
    }
    let package = name.split('/').next().unwrap_or(name);
    if LINKED_WASI_PACKAGES.contains(&package) {
        return format!(
            "CLAT links {package} at version 0.2 (0.2.12), not {}; build against WASI 0.2 (the wasm32-wasip2 target).",
            version.unwrap_or("unversioned")
        );
    }
    format!(
        "CLAT links only {CONTRACT_PACKAGE} and WASI 0.2 ({}); remove the import or stub it out at build time.",
        LINKED_WASI_PACKAGES.join(", ")
    )
}

/// Whether the host links `interface` for guests (`wasi:http` only when `allow_http`).
fn linked(interface: &str, allow_http: bool) -> bool {
    let (name, version) = split_version(interface);
    let package = name.split('/').next().unwrap_or(name);
    if package == CONTRACT_PACKAGE {
        return version.is_some_and(|v| ACCEPTED_CONTRACT_VERSIONS.contains(&v));
    }
    let wasi = LINKED_WASI_PACKAGES.contains(&package) || (allow_http && package == HTTP_PACKAGE);
    wasi && version.is_some_and(|v| v.starts_with("0.2."))
}

/// Check a component's interfaces: it exports the contract's `plugin`
/// interface in an accepted version and imports nothing the host does not
/// link for it (`allow_http`: its manifest declares `[capabilities] http`).
pub fn check_plugin_interfaces(found: &ComponentInterfaces, allow_http: bool) -> Result<(), ImportProblem> {
    let plugin = format!("{CONTRACT_PACKAGE}/plugin");
    let Some(export) = found.exports.iter().find(|e| split_version(e).0 == plugin) else {
        let exports = if found.exports.is_empty() { "none".to_string() } else { found.exports.join(", ") };
        return Err(ImportProblem::NotAPlugin { exports });
    };
    let version = split_version(export).1.unwrap_or("unversioned");
    if !ACCEPTED_CONTRACT_VERSIONS.contains(&version) {
        return Err(ImportProblem::OtherContract { found: version.to_string() });
    }
    for interface in &found.imports {
        if split_version(interface).0.starts_with(&format!("{CONTRACT_PACKAGE}/")) && !linked(interface, allow_http) {
            let found = split_version(interface).1.unwrap_or("unversioned").to_string();
            return Err(ImportProblem::OtherContract { found });
        }
        if !linked(interface, allow_http) {
            let fix = fix_for(interface, allow_http);
            return Err(ImportProblem::Unlinked { interface: interface.clone(), fix });
        }
    }
    Ok(())
}

/// Check a plain component's interfaces: it does not export the contract, and imports only WASI 0.2
/// (`wasi:http` when `allow_http`); every other import is named.
pub fn check_plain_interfaces(found: &ComponentInterfaces, allow_http: bool) -> Result<(), ImportProblem> {
    if found.exports.iter().any(|e| split_version(e).0 == format!("{CONTRACT_PACKAGE}/plugin")) {
        return Err(ImportProblem::ContractAsPlain);
    }
    let unlinked: Vec<String> = found
        .imports
        .iter()
        .filter(|i| !linked(i, allow_http) || split_version(i).0.starts_with(&format!("{CONTRACT_PACKAGE}/")))
        .cloned()
        .collect();
    if unlinked.is_empty() { Ok(()) } else { Err(ImportProblem::UnlinkedPlain { imports: unlinked }) }
}

/// Read and check a contract guest in one step.
pub fn check_component(bytes: &[u8], allow_http: bool) -> Result<ComponentInterfaces, ImportProblem> {
    let found = read_interfaces(bytes)?;
    check_plugin_interfaces(&found, allow_http)?;
    Ok(found)
}

/// Read and check a plain component in one step.
pub fn check_plain_component(bytes: &[u8], allow_http: bool) -> Result<ComponentInterfaces, ImportProblem> {
    let found = read_interfaces(bytes)?;
    check_plain_interfaces(&found, allow_http)?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interfaces(imports: &[&str], exports: &[&str]) -> ComponentInterfaces {
        ComponentInterfaces {
            imports: imports.iter().map(|s| s.to_string()).collect(),
            exports: exports.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_contract_and_wasi_0_2_are_linked_and_nothing_else() {
        let plugin = "artec:clat/plugin@0.1.0";
        let ok = interfaces(
            &["artec:clat/host-services@0.1.0", "wasi:io/streams@0.2.3", "wasi:cli/stdout@0.2.0"],
            &[plugin],
        );
        assert_eq!(check_plugin_interfaces(&ok, false), Ok(()));
        let http = interfaces(&["wasi:http/outgoing-handler@0.2.3"], &[plugin]);
        let err = check_plugin_interfaces(&http, false).unwrap_err().to_string();
        assert!(err.contains("wasi:http/outgoing-handler@0.2.3") && err.contains("-d http fetch-event"), "{err}");
        assert!(err.contains("[capabilities] http"), "{err}");
        assert_eq!(check_plugin_interfaces(&http, true), Ok(()), "linked when the manifest declares http");
        assert!(http.imports_http() && !ok.imports_http());
        let http3 = interfaces(&["wasi:http/handler@0.3.0"], &[plugin]);
        assert!(check_plugin_interfaces(&http3, true).unwrap_err().to_string().contains("wasi:http at version 0.2"));
        let p3 = interfaces(&["wasi:io/streams@0.3.0"], &[plugin]);
        assert!(check_plugin_interfaces(&p3, false).unwrap_err().to_string().contains("at version 0.2"));
        let keyvalue = interfaces(&["wasi:keyvalue/store@0.2.0-draft"], &[plugin]);
        assert!(check_plugin_interfaces(&keyvalue, false).unwrap_err().to_string().contains("remove the import"));
    }

    #[test]
    fn another_contract_version_or_world_is_named() {
        let newer = interfaces(&["artec:clat/host-services@9.0.0"], &["artec:clat/plugin@9.0.0"]);
        let err = check_plugin_interfaces(&newer, false).unwrap_err().to_string();
        assert!(err.contains("artec:clat@9.0.0") && err.contains("accepts artec:clat@0.1.0"), "{err}");
        let mixed = interfaces(&["artec:clat/host-services@9.0.0"], &["artec:clat/plugin@0.1.0"]);
        assert!(check_plugin_interfaces(&mixed, false).unwrap_err().to_string().contains("artec:clat@9.0.0"));
        let command = interfaces(&["wasi:cli/stdout@0.2.0"], &["wasi:cli/run@0.2.0"]);
        let err = check_plugin_interfaces(&command, false).unwrap_err().to_string();
        assert!(err.contains("not a CLAT plugin") && err.contains("wasi:cli/run@0.2.0"), "{err}");
    }

    #[test]
    fn a_plain_component_gets_wasi_0_2_and_every_other_import_is_named() {
        let own = "example:calculator/math@0.1.0";
        let ok = interfaces(&["wasi:io/streams@0.2.6", "wasi:clocks/wall-clock@0.2.6"], &[own]);
        assert_eq!(check_plain_interfaces(&ok, false), Ok(()));
        let foreign = interfaces(
            &[
                "wasi:io/streams@0.2.6",
                "example:host/logger@0.1.0",
                "artec:clat/host-services@0.1.1",
                "wasi:http/types@0.2.6",
            ],
            &[own],
        );
        let err = check_plain_interfaces(&foreign, false).unwrap_err();
        let listed = ["example:host/logger@0.1.0", "artec:clat/host-services@0.1.1", "wasi:http/types@0.2.6"];
        assert_eq!(err, ImportProblem::UnlinkedPlain { imports: listed.map(String::from).to_vec() }, "every one named");
        let with_grant = check_plain_interfaces(&foreign, true).unwrap_err();
        assert_eq!(
            with_grant,
            ImportProblem::UnlinkedPlain { imports: listed[..2].iter().map(|s| s.to_string()).collect() }
        );
        let contract = interfaces(&[], &["artec:clat/plugin@0.1.1"]);
        assert_eq!(check_plain_interfaces(&contract, false), Err(ImportProblem::ContractAsPlain));
    }

    #[test]
    fn bytes_that_are_not_a_component_say_so() {
        assert!(matches!(read_interfaces(b"\0asm not really"), Err(ImportProblem::NotAComponent(_))));
        assert_eq!(read_interfaces(b"\0asm\x01\0\0\0"), Err(ImportProblem::CoreModule));
    }
}
