//! Names the commit `clat --version` was built from (`CLAT_BUILD_COMMIT`):
//! `git rev-parse --short=12 HEAD` of the checkout, or `unknown commit`
//! outside one.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
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
