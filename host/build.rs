//! Names the commit `clat --version` was built from (`CLAT_BUILD_COMMIT`):
//! `git rev-parse --short=12 HEAD` of the checkout, or `unknown commit`
//! outside one; and the contract version `wit/clat.wit` declares
//! (`CLAT_CONTRACT_VERSION`), so the host states it from the one source.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The version of the contract in `../wit/clat.wit` (`package artec:clat@X.Y.Z;`), as `CLAT_CONTRACT_VERSION`.
fn contract_version() {
    println!("cargo:rerun-if-changed=../wit/clat.wit");
    let text = std::fs::read_to_string("../wit/clat.wit").expect("the contract ../wit/clat.wit is readable");
    let version = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("package artec:clat@")?.strip_suffix(';').map(str::to_string))
        .expect("wit/clat.wit declares `package artec:clat@X.Y.Z;`");
    println!("cargo:rustc-env=CLAT_CONTRACT_VERSION={version}");
}

fn main() {
    contract_version();
    let described = match git(&["rev-parse", "--short=12", "HEAD"]).filter(|c| !c.is_empty()) {
        Some(commit) => format!("commit {commit}"),
        None => "unknown commit".to_string(),
    };
    println!("cargo:rustc-env=CLAT_BUILD_COMMIT={described}");
    // A new commit (or checkout) changes HEAD, the branch it points to, or the packed refs.
    println!("cargo:rerun-if-changed=build.rs");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let mut watched = vec![format!("{dir}/HEAD"), format!("{dir}/packed-refs")];
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(format!("{dir}/{reference}"));
        }
        for path in watched.iter().filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
