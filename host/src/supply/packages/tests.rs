//! The unit tests of `packages`.

use super::*;

/// An index entry written before origins were kept: from its source's repository when it has one (so an
/// update from that repository is the same plugin), else from a directory, any directory.
#[test]
fn an_entry_kept_before_origins_comes_from_its_repository_or_any_directory() {
    let entry = |source: serde_json::Value| -> Installed {
        serde_json::from_value(serde_json::json!({
            "manifest": { "name": "hello", "version": "0.1.0", "kind": "wasm", "entry": "hello.wasm" },
            "dir": "/home/me/.clat/plugins/artifacts/hello-0.1.0-0123456789abcdef",
            "source": source,
        }))
        .unwrap()
    };
    let pulled = entry(serde_json::json!({ "oci": "oci://127.0.0.1:5000/clat/hello:1", "digest": "sha256:0" }));
    assert!(pulled.comes_from("oci://127.0.0.1:5000/clat/hello"));
    assert!(!pulled.comes_from("oci://127.0.0.1:5000/someone/hello"));
    assert!(!pulled.comes_from("/home/me/hello"));
    let copied = entry(serde_json::Value::Null);
    assert!(copied.comes_from("/home/me/hello") && copied.comes_from("/elsewhere"));
    assert!(!copied.comes_from("oci://127.0.0.1:5000/clat/hello"));
}
