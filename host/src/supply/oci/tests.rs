//! The unit tests of `oci`.

use super::*;

#[test]
fn references_are_oci_urls_with_a_repository() {
    let r = OciReference::parse("oci://127.0.0.1:5000/clat/hello:1.0").unwrap();
    assert_eq!(
        (r.registry(), r.reference.repository(), r.reference.tag()),
        ("127.0.0.1:5000", "clat/hello", Some("1.0"))
    );
    assert_eq!(r.scheme(), "http");
    let pinned = r.at_digest(&format!("sha256:{}", "a".repeat(64)));
    assert!(pinned.text.starts_with("oci://127.0.0.1:5000/clat/hello"), "{}", pinned.text);
    assert!(pinned.text.ends_with(&"a".repeat(64)), "{}", pinned.text);
    assert_eq!(OciReference::parse("oci://ghcr.io/o/p:2").unwrap().scheme(), "https");
    assert_eq!(OciReference::parse("oci://127.0.0.2:5000/o/p:2").unwrap().scheme(), "http");
    assert_eq!(OciReference::parse("oci://localhost/o/p:2").unwrap().scheme(), "http");
    let challenge = r#"Bearer realm="https://auth.example.com/token",service="registry.example.com""#;
    assert_eq!(bearer_realm(challenge).as_deref(), Some("https://auth.example.com/token"));
    assert_eq!(bearer_realm(r#"Basic realm="x""#), None);
    for bad in ["ghcr.io/o/p:1", "oci://hello", "oci://ghcr.io/o/p:1 x", "oci://ghcr.io/o/p@md5:00"] {
        assert!(OciReference::parse(bad).is_err(), "{bad}");
    }
}
