//! Builds the workspace's `clat-test-mcp-server` package into this crate's
//! OUT_DIR (its own target directory, so the outer build's lock is never
//! waited on; the guest-artifacts pattern) and writes its path as a constant.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest_dir.join("../..").canonicalize().unwrap();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let target = out.join("server-target");
    // Relative to this package, so that another checkout sharing the target
    // directory is checked against its own files, not this one's.
    for path in ["../mcp-test-server", "../../Cargo.lock"] {
        println!("cargo:rerun-if-changed={path}");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--locked", "-p", "clat-test-mcp-server", "--bin", "clat-test-mcp-server"])
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .status()
        .expect("could not run cargo to build the MCP test server");
    assert!(status.success(), "building the MCP test server failed");
    let server = target.join("debug/clat-test-mcp-server");
    assert!(server.exists(), "the MCP test server was not built at {}", server.display());
    let constant = format!("pub const MCP_TEST_SERVER: &str = {:?};\n", server.display().to_string());
    std::fs::write(out.join("server.rs"), constant).unwrap();
}
