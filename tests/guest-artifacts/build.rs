//! Builds every guest in `guests/` as a wasm32-wasip2 component (the wasmtime
//! `test-programs` pattern) into this crate's OUT_DIR, assembles installable
//! packages (manifest + component) for the example guests, and writes their
//! paths as constants. Nothing compiled is ever committed.

use std::path::{Path, PathBuf};
use std::process::Command;

const EXAMPLES: [(&str, &str); 4] =
    [("hello", "hello"), ("project-notes", "project_notes"), ("summarize", "summarize"), ("ask-name", "ask_name")];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.join("../..").canonicalize().unwrap();
    let guests = root.join("guests");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target = out.join("guest-target");

    // Relative to this package, so that another checkout sharing the target
    // directory is checked against its own files, not this one's.
    println!("cargo:rerun-if-changed=../../wit");
    for entry in [
        "Cargo.toml",
        "Cargo.lock",
        "clat-guest",
        "hello",
        "project-notes",
        "summarize",
        "ask-name",
        "test-guests",
        "contract",
    ] {
        println!("cargo:rerun-if-changed=../../guests/{entry}");
    }

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
    let test_only = [
        ("test-guests", "test_guests"),
        ("contract", "contract"),
        ("not-a-plugin", "not-a-plugin"),
        ("trap-on-load", "trap_on_load"),
    ];
    for (crate_name, file) in EXAMPLES.iter().copied().chain(test_only) {
        let upper = crate_name.replace('-', "_").to_uppercase();
        add(&format!("{upper}_WASM"), &built.join(format!("{file}.wasm")));
    }
    // Installable packages: the guest's manifest next to its component.
    for (crate_name, file) in EXAMPLES {
        let package = out.join("packages").join(crate_name);
        std::fs::create_dir_all(&package).unwrap();
        std::fs::copy(guests.join(crate_name).join("clat-plugin.toml"), package.join("clat-plugin.toml")).unwrap();
        std::fs::copy(built.join(format!("{file}.wasm")), package.join(format!("{file}.wasm"))).unwrap();
        add(&format!("{}_PACKAGE", crate_name.replace('-', "_").to_uppercase()), &package);
    }
    std::fs::write(out.join("guests.rs"), constants).unwrap();
}
