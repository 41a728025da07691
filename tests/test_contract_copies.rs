//! The contract is defined once, in `wit/clat.wit`, and every other copy is
//! checked against it:
//!
//! - the guest SDK carries it inside its crate (`guests/clat-guest/wit/`) so
//!   that a plugin author's copy of the SDK builds from anywhere: byte for
//!   byte the contract, and the SDK's `CONTRACT_VERSION` names its version;
//! - each released version is frozen in `wit/released/VERSION/clat.wit`: a
//!   released contract never changes, so `wit/clat.wit` may differ from the
//!   copy of its own version only by being a newer, unreleased version;
//! - the host binds the version `wit/clat.wit` declares and accepts only
//!   versions that are released or that one.

use std::path::{Path, PathBuf};

use clat_host::contract::{ACCEPTED_CONTRACT_VERSIONS, CONTRACT_VERSION};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `.wit` files directly in `dir`, sorted.
fn wit_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wit"))
        .collect();
    names.sort();
    names
}

/// The version in `package artec:clat@X.Y.Z;`.
fn declared_version(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("package artec:clat@")?.strip_suffix(';').map(str::to_string))
        .unwrap_or_else(|| panic!("{} declares no artec:clat package", file.display()))
}

fn semver(version: &str) -> (u64, u64, u64) {
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or_else(|_| panic!("version {version}")));
    (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap())
}

#[test]
fn the_guest_sdk_carries_the_contract_unchanged() {
    let contract = root().join("wit");
    let copy = root().join("guests/clat-guest/wit");
    assert_eq!(wit_files(&contract), wit_files(&copy), "the same files");
    for name in wit_files(&contract) {
        let (a, b) = (std::fs::read(contract.join(&name)).unwrap(), std::fs::read(copy.join(&name)).unwrap());
        assert!(a == b, "guests/clat-guest/wit/{name} differs from wit/{name}: copy the contract into the SDK");
    }
    let sdk = std::fs::read_to_string(root().join("guests/clat-guest/src/lib.rs")).unwrap();
    let expected = format!("pub const CONTRACT_VERSION: &str = \"{CONTRACT_VERSION}\";");
    assert!(sdk.contains(&expected), "the SDK's CONTRACT_VERSION names the contract it binds: {expected}");
}

#[test]
fn released_contracts_are_frozen_and_the_host_accepts_only_those_and_its_own() {
    let current = declared_version(&root().join("wit/clat.wit"));
    assert_eq!(current, CONTRACT_VERSION, "the host binds the version wit/clat.wit declares");
    let released_dir = root().join("wit/released");
    let mut released = Vec::new();
    for entry in std::fs::read_dir(&released_dir).unwrap().flatten().filter(|e| e.path().is_dir()) {
        let version = entry.file_name().to_string_lossy().into_owned();
        let files = wit_files(&entry.path());
        assert_eq!(files, ["clat.wit"], "wit/released/{version} holds the one contract file");
        assert_eq!(declared_version(&entry.path().join("clat.wit")), version, "wit/released/{version}");
        released.push(version);
    }
    assert!(!released.is_empty(), "at least the first release is frozen");
    if released.contains(&current) {
        let frozen = std::fs::read(released_dir.join(&current).join("clat.wit")).unwrap();
        let now = std::fs::read(root().join("wit/clat.wit")).unwrap();
        assert!(
            frozen == now,
            "artec:clat@{current} is released and frozen in wit/released/{current}/: a change to wit/clat.wit needs a new version"
        );
    } else {
        let newest = released.iter().map(|v| semver(v)).max().unwrap();
        assert!(semver(&current) > newest, "an unreleased contract {current} is newer than every released one");
    }
    assert!(ACCEPTED_CONTRACT_VERSIONS.contains(&CONTRACT_VERSION));
    for version in ACCEPTED_CONTRACT_VERSIONS {
        assert!(*version == current || released.iter().any(|r| r == version), "accepted {version} is not released");
    }
}

/// The host binds one contract and accepts the older versions it lists through that one binding: each
/// must be the bound contract in all but its comments and version, and semver-compatible with it (same
/// major, and for 0.x the same minor), which is what wasmtime's linker resolves a guest's names by.
#[test]
fn an_older_accepted_contract_is_the_bound_one_but_for_comments() {
    let code = |path: PathBuf| -> Vec<String> {
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with("package artec:clat@"))
            .map(str::to_string)
            .collect()
    };
    let bound = code(root().join("wit/clat.wit"));
    let (major, minor, _) = semver(CONTRACT_VERSION);
    for version in ACCEPTED_CONTRACT_VERSIONS.iter().filter(|v| **v != CONTRACT_VERSION) {
        let older = code(root().join(format!("wit/released/{version}/clat.wit")));
        assert!(
            older == bound,
            "artec:clat@{version} differs from {CONTRACT_VERSION} in more than comments: it needs its own binding"
        );
        let (older_major, older_minor, _) = semver(version);
        assert!(
            older_major == major && (major > 0 || older_minor == minor),
            "{version} is semver-compatible with {CONTRACT_VERSION}"
        );
    }
}

/// Every JavaScript and Python guest (and template) of the contract binds it and the language's helper module as
/// they are: `wit/clat.wit` byte for byte, and one `clat.js` / `clat.py`, the template's.
#[test]
fn the_javascript_and_python_guests_carry_the_contract_and_the_helpers_unchanged() {
    let contract = std::fs::read(root().join("wit/clat.wit")).unwrap();
    let clat_js = std::fs::read(root().join("host/templates/javascript-wasm/src/clat.js")).unwrap();
    let clat_py = std::fs::read(root().join("host/templates/python-wasm/clat.py")).unwrap();
    let mut checked = 0;
    for (lang, helper, copy) in [("js", "src/clat.js", &clat_js), ("python", "clat.py", &clat_py)] {
        for guest in std::fs::read_dir(root().join("guests").join(lang)).unwrap().flatten() {
            let dir = guest.path();
            // An MCP-server plugin binds no WIT and needs no helper; a plain component binds its own WIT.
            let manifest = std::fs::read_to_string(dir.join("clat-plugin.toml")).unwrap();
            if manifest.contains("kind = \"mcp-stdio\"") || manifest.contains("kind = \"component\"") {
                continue;
            }
            let name = dir.display().to_string();
            assert!(
                std::fs::read(dir.join("wit/clat.wit")).unwrap() == contract,
                "{name}/wit/clat.wit is not wit/clat.wit"
            );
            assert!(&std::fs::read(dir.join(helper)).unwrap() == copy, "{name}/{helper} is not the template's");
            // A Python guest that reaches the network carries the template's HTTP helper and its world.
            if lang == "python" && dir.join("clat_http.py").exists() {
                let template = root().join("host/templates/python-wasm");
                let mut files = vec![PathBuf::from("clat_http.py"), PathBuf::from("wit/http.wit")];
                for package in std::fs::read_dir(template.join("wit/deps")).unwrap().flatten() {
                    let package = package.file_name().to_string_lossy().into_owned();
                    files.push(PathBuf::from(format!("wit/deps/{package}/{package}.wit")));
                }
                for file in files {
                    let same = std::fs::read(dir.join(&file)).ok() == std::fs::read(template.join(&file)).ok();
                    assert!(same, "{name}/{} is not the template's", file.display());
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 4, "hello and contract in both languages");
}

/// The SDK manifest `clat plugin new` writes pins what the repository's guests are built and tested with.
#[test]
fn the_vendored_sdk_manifest_pins_the_guests_versions() {
    let workspace: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("guests/Cargo.toml")).unwrap()).unwrap();
    let vendored: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("host/templates/sdk/Cargo.toml")).unwrap()).unwrap();
    let sdk: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("guests/clat-guest/Cargo.toml")).unwrap()).unwrap();
    let version = |v: &toml::Value| {
        v.get("version").and_then(|v| v.as_str()).map(str::to_string).or_else(|| v.as_str().map(str::to_string))
    };
    for (name, _) in sdk["dependencies"].as_table().unwrap() {
        let pinned = version(&workspace["workspace"]["dependencies"][name]).unwrap();
        let written =
            version(&vendored["dependencies"][name]).unwrap_or_else(|| panic!("the vendored SDK lacks {name}"));
        assert_eq!(written, pinned, "{name}");
    }
    assert_eq!(vendored["dependencies"].as_table().unwrap().len(), sdk["dependencies"].as_table().unwrap().len());
}

/// The authors' guide's contract reference names every type of `wit/clat.wit` and gives every function's
/// signature as the contract spells it.
#[test]
fn the_authors_guide_reference_matches_the_contract() {
    let guide = std::fs::read_to_string(root().join("docs/plugin-authors.md")).unwrap();
    let reference = &guide[guide.find("## Contract reference").expect("the guide has a contract reference")..];
    let contract = std::fs::read_to_string(root().join("wit/clat.wit")).unwrap();
    let mut names = 0;
    for line in contract.lines().map(str::trim) {
        if line.starts_with("//") {
            continue;
        }
        if let Some(rest) = ["record ", "variant ", "enum "].iter().find_map(|k| line.strip_prefix(k)) {
            let name = rest.trim_end_matches(" {").trim();
            assert!(reference.contains(&format!("`{name}`")), "the reference does not name the type {name}");
            names += 1;
        } else if line.contains(": func(") {
            assert!(reference.contains(&format!("`{line}`")), "the reference does not give `{line}`");
            names += 1;
        }
    }
    assert!(names > 30, "{names} names checked");
}
