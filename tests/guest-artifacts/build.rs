//! Builds every guest in `guests/` as a wasm32-wasip2 component (the wasmtime
//! `test-programs` pattern) into this crate's OUT_DIR, assembles installable
//! packages (manifest + component) for the example guests, and writes their
//! paths as constants. Nothing compiled is ever committed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Every guest crate in `guests/` (a directory with a Cargo.toml, the SDK
/// aside): its name and the file its build emits (a cdylib's name has `_` for
/// `-`; a WASI command keeps its name). A guest with a `clat-plugin.toml` is
/// an example and also becomes an installable package.
fn discover(guests: &Path) -> Vec<(String, String, bool)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(guests).unwrap().flatten() {
        let dir = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !dir.join("Cargo.toml").is_file() || name == "clat-guest" {
            continue;
        }
        let file = if dir.join("src/main.rs").is_file() { name.clone() } else { name.replace('-', "_") };
        found.push((name, file, dir.join("clat-plugin.toml").is_file()));
    }
    found.sort();
    found
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.join("../..").canonicalize().unwrap();
    let guests = root.join("guests");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target = out.join("guest-target");

    // Relative to this package, so that another checkout sharing the target
    // directory is checked against its own files, not this one's.
    println!("cargo:rerun-if-changed=../../wit");
    for entry in std::fs::read_dir(&guests).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // guests/target is scripts/build-guests.sh's output, not an input.
        if name != "target" {
            println!("cargo:rerun-if-changed=../../guests/{name}");
        }
    }
    let found = discover(&guests);

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--locked", "--target", "wasm32-wasip2", "--workspace"])
        .current_dir(&guests)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .status()
        .expect("could not run cargo to build the guests");
    assert!(status.success(), "building the guests failed; is the target installed? (rustup target add wasm32-wasip2)");

    let built = target.join("wasm32-wasip2/release");
    let mut constants = String::new();
    let mut add = |name: &str, path: &Path| {
        constants.push_str(&format!("pub const {name}: &str = {:?};\n", path.display().to_string()));
    };
    for (crate_name, file, _) in &found {
        let upper = crate_name.replace('-', "_").to_uppercase();
        add(&format!("{upper}_WASM"), &built.join(format!("{file}.wasm")));
    }
    // Installable packages: the guest's manifest next to its component.
    for (crate_name, file, _) in found.iter().filter(|(_, _, example)| *example) {
        let package = out.join("packages").join(crate_name);
        std::fs::create_dir_all(&package).unwrap();
        std::fs::copy(guests.join(crate_name).join("clat-plugin.toml"), package.join("clat-plugin.toml")).unwrap();
        std::fs::copy(built.join(format!("{file}.wasm")), package.join(format!("{file}.wasm"))).unwrap();
        // A plain component's WIT goes with it: its functions' doc comments are read from there.
        let wit = guests.join(crate_name).join("wit");
        if wit.is_dir() {
            std::fs::create_dir_all(package.join("wit")).unwrap();
            for entry in std::fs::read_dir(&wit).unwrap().flatten() {
                std::fs::copy(entry.path(), package.join("wit").join(entry.file_name())).unwrap();
            }
        }
        add(&format!("{}_PACKAGE", crate_name.replace('-', "_").to_uppercase()), &package);
    }
    std::fs::write(out.join("guests.rs"), constants).unwrap();
}
