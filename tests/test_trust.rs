//! Project trust and the mount gate: nothing is started for an untrusted
//! project; trust records canonical roots atomically; bad homes and malformed
//! trust files are clear errors.

mod support;

use clat_host::home::trust::{TRUST_FILE, TrustStore};
use clat_host::home::{ClatHome, HomeError};
use clat_host::scope::{ProjectScope, ScopeError, ScopeOptions};
use support::{TestEnv, stderr, stdout};

#[test]
fn an_untrusted_project_is_refused_and_trust_lets_it_mount() {
    let env = TestEnv::new();
    let err = ProjectScope::mount(&env.clat_home(), &env.project, ScopeOptions::default()).err().expect("refused");
    assert!(matches!(err, ScopeError::Untrusted { .. }), "{err}");
    assert!(err.to_string().contains("clat trust"), "the error says how to trust: {err}");
    assert!(!env.home.exists(), "mounting an untrusted project writes nothing");
    env.trust();
    let scope = env.mount();
    assert_eq!(scope.root(), env.project.canonicalize().unwrap());
    assert_eq!(scope.registry().list().len(), 6);
}

#[test]
fn trust_records_the_canonical_root() {
    let env = TestEnv::new();
    let link = env.dir.path().join("link-to-project");
    std::os::unix::fs::symlink(&env.project, &link).unwrap();
    let store = TrustStore::new(&env.clat_home());
    let root = store.trust(&link.join(".")).unwrap();
    assert_eq!(root, env.project.canonicalize().unwrap());
    // Trusting twice records once.
    store.trust(&env.project).unwrap();
    assert_eq!(store.trusted().unwrap(), vec![root.clone()]);
    // Mounting through the link finds the same trust.
    assert!(ProjectScope::mount(&env.clat_home(), &link, ScopeOptions::default()).is_ok());
    // A subdirectory of a trusted project is a different project.
    std::fs::create_dir(env.project.join("sub")).unwrap();
    assert!(matches!(
        ProjectScope::mount(&env.clat_home(), &env.project.join("sub"), ScopeOptions::default()),
        Err(ScopeError::Untrusted { .. })
    ));
    let leftovers: Vec<_> = std::fs::read_dir(&env.home)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn a_malformed_trust_file_names_file_and_position() {
    let env = TestEnv::new();
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(env.home.join(TRUST_FILE), "{\n  \"version\": 1,\n  \"projects\": [oops]\n}").unwrap();
    let err = TrustStore::new(&env.clat_home()).trust(&env.project).unwrap_err();
    match &err {
        HomeError::Malformed { path, line, .. } => {
            assert!(path.ends_with(TRUST_FILE));
            assert_eq!(*line, 3);
        }
        other => panic!("expected Malformed, got {other}"),
    }
    // The malformed file is not replaced.
    assert!(std::fs::read_to_string(env.home.join(TRUST_FILE)).unwrap().contains("oops"));
}

#[test]
fn an_unwritable_home_is_a_clear_error() {
    let env = TestEnv::new();
    let blocker = env.dir.path().join("a-file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let home = ClatHome::at(&blocker.join("home"));
    let err = TrustStore::new(&home).trust(&env.project).unwrap_err();
    assert!(matches!(err, HomeError::HomeUnwritable { .. }), "{err}");
    // And through the CLI: exit code 2 with the home named.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .arg("--home")
        .arg(blocker.join("home"))
        .arg("trust")
        .arg(&env.project)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot write CLAT's home"), "{}", stderr(&out));
}

#[test]
fn the_trust_gate_starts_nothing() {
    let env = TestEnv::new();
    let marker = env.dir.path().join("spawned");
    let command = format!("{{\"command\": \"touch {}\"}}", marker.display());
    let out = env.clat(&["call", "run_command", &command, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(3), "stdout: {} stderr: {}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("not trusted"));
    assert!(!marker.exists(), "no process ran for an untrusted project");
    assert!(!env.home.exists(), "nothing was written to CLAT's home");
    // The same call in the trusted project runs.
    env.trust();
    let out = env.clat(&["call", "run_command", &command, "--mode", "full-access"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(marker.exists());
}

#[test]
fn a_missing_project_is_a_configuration_error() {
    let env = TestEnv::new();
    let err = TrustStore::new(&env.clat_home()).trust(&env.dir.path().join("nope")).unwrap_err();
    assert!(matches!(err, HomeError::ProjectMissing { .. }));
}

#[test]
fn twelve_concurrent_clat_trust_lose_no_project() {
    let env = TestEnv::new();
    let projects: Vec<std::path::PathBuf> = (0..12)
        .map(|i| {
            let dir = env.dir.path().join(format!("p{i}"));
            std::fs::create_dir_all(&dir).unwrap();
            dir
        })
        .collect();
    let commands: Vec<Vec<&str>> = projects.iter().map(|dir| vec!["trust", dir.to_str().unwrap()]).collect();
    assert!(support::clat_concurrently(&env, &commands).into_iter().all(|ok| ok));
    let trusted = TrustStore::new(&env.clat_home()).trusted().unwrap();
    for dir in &projects {
        assert!(trusted.contains(&dir.canonicalize().unwrap()), "{} is missing from {trusted:?}", dir.display());
    }
}
