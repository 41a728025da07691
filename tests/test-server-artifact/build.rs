//! Builds the workspace's `clat-test-mcp-server` package into this crate's
//! OUT_DIR (its own target directory, so the outer build's lock is never
//! waited on; the guest-artifacts pattern): the test server as a debug build,
//! the benchmark's echo server optimised, and writes their paths as constants.

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
    let build = |profile: &[&str], bin: &str| {
        let status = Command::new(&cargo)
            .args(["build", "--locked", "-p", "clat-test-mcp-server", "--bin", bin])
            .args(profile)
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
        assert!(status.success(), "building {bin} failed");
        let built = target.join(if profile.is_empty() { "debug" } else { "release" }).join(bin);
        assert!(built.exists(), "{bin} was not built at {}", built.display());
        built.display().to_string()
    };
    // The test server with its scenarios, as the tests run it (a debug build).
    let server = build(&[], "clat-test-mcp-server");
    // The benchmark's minimal peer, optimised: its own cost must stay small beside the client's.
    let echo = build(&["--release"], "clat-echo-mcp-server");
    let constants =
        format!("pub const MCP_TEST_SERVER: &str = {server:?};\npub const MCP_ECHO_SERVER: &str = {echo:?};\n");
    std::fs::write(out.join("server.rs"), constants).unwrap();
}
