//! What an extension is, beyond its name: the identity a kept approval is
//! bound to (`approvals.rs`). A stdio server is its launch spec — the command
//! and arguments as configured, before `${VAR}` expansion, so a rotated key in
//! a variable does not change it — an HTTP server its URL as configured, and an
//! installed package (WASM or `mcp-stdio`) its artifact digest. Each is kept as
//! a SHA-256 digest, so no argument or URL query reaches `approvals.json`.
//! When a name is configured with another command, URL or package, its
//! identity changes, and the approvals kept for the old one no longer apply.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One extension's identity: `KIND:sha256:HEX`, where KIND is `stdio`, `http`,
/// `package` or `file` (a component loaded from a path, outside the package store).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Identity(String);

fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        // Each part is length-prefixed, so ["ab", "c"] and ["a", "bc"] differ.
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// Bytes as lowercase hexadecimal (a digest as files and identities write it).
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Identity {
    /// A stdio server launched as `command args…`.
    pub fn stdio(command: &str, args: &[String]) -> Identity {
        let mut parts: Vec<&[u8]> = vec![command.as_bytes()];
        parts.extend(args.iter().map(|a| a.as_bytes()));
        Identity(format!("stdio:sha256:{}", sha256_hex(&parts)))
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(url: &str) -> Identity {
        Identity(format!("http:sha256:{}", sha256_hex(&[url.as_bytes()])))
    }

    /// An installed package whose artifacts hash to `digest` (hex).
    pub fn package(digest: &str) -> Identity {
        Identity(format!("package:sha256:{digest}"))
    }

    /// A component loaded from `path` outside the package store (development, tests).
    pub fn file(path: &Path) -> Identity {
        Identity(format!("file:sha256:{}", sha256_hex(&[path.as_os_str().as_encoded_bytes()])))
    }

    /// The stored form.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A short form for listings: the kind and the first 12 digits, `stdio 3f2a9c01b7de`.
    pub fn short(&self) -> String {
        match self.0.split_once(":sha256:") {
            Some((kind, hex)) => format!("{kind} {}", &hex[..hex.len().min(12)]),
            None => self.0.clone(),
        }
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_change_with_what_runs_and_never_hold_it() {
        let a = Identity::stdio("npx", &["-y".into(), "pkg@1".into()]);
        assert_eq!(a, Identity::stdio("npx", &["-y".into(), "pkg@1".into()]));
        assert_ne!(a, Identity::stdio("npx", &["-y".into(), "pkg@2".into()]));
        assert_ne!(Identity::stdio("ab", &["c".into()]), Identity::stdio("a", &["bc".into()]));
        let url = Identity::http("https://mcp.example/mcp?key=sekrit-123");
        assert!(!url.as_str().contains("sekrit") && url.as_str().starts_with("http:sha256:"));
        assert_eq!(Identity::package("ab12").short(), "package ab12");
        assert_eq!(a.short().len(), "stdio ".len() + 12);
    }
}
