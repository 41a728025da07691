//! Where the OAuth tokens of remote MCP servers live between commands:
//! `$CLAT_HOME/credentials/`, a 0700 directory with one 0600 file per server
//! and resource (`<server>-<16 hex digits of the resource's SHA-256>.json`),
//! each written whole under the home's lock for that file (a temporary file,
//! synced, renamed). Every token and client secret read or written here is
//! registered with `redact`, so no diagnostic of this process shows it. The
//! OS keyring is not used yet: the file is the store.
//!
//! `authorizer` gives a configured HTTP server its `clat_mcp::auth::Authorizer`
//! on these files: OAuth is on for every HTTP entry that does not configure
//! its own `Authorization` header.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use clat_mcp::auth::{Authorizer, Browser, CredentialStore, Credentials};
use clat_mcp::config::{EntryTransport, ServerEntry};
use sha2::Digest;

use crate::trust::ClatHome;

/// The credentials directory inside the home.
pub const CREDENTIALS_DIR: &str = "credentials";

/// One server's credentials file.
pub struct CredentialFile {
    home: ClatHome,
    /// The file's path relative to the home.
    rel: String,
}

impl CredentialFile {
    /// The file for server `server` at `url`.
    pub fn new(home: &ClatHome, server: &str, url: &str) -> CredentialFile {
        let digest = sha2::Sha256::digest(url.as_bytes());
        let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let safe: String =
            server.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        CredentialFile { home: home.clone(), rel: format!("{CREDENTIALS_DIR}/{safe}-{hex}.json") }
    }

    pub fn path(&self) -> PathBuf {
        self.home.path().join(&self.rel)
    }

    fn ensure_dir(&self) -> Result<(), String> {
        self.home.ensure().map_err(|e| e.to_string())?;
        let dir = self.home.path().join(CREDENTIALS_DIR);
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))
    }
}

impl CredentialStore for CredentialFile {
    fn load(&self) -> Result<Option<Credentials>, String> {
        let path = self.path();
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        // A file that is not credentials (damaged, hand-edited) is no login.
        match serde_json::from_slice::<Credentials>(&text) {
            Ok(credentials) => {
                crate::redact::register_secrets(credentials.secrets());
                Ok(Some(credentials))
            }
            Err(e) => {
                tracing::warn!("ignoring {}: it does not hold credentials ({e})", path.display());
                Ok(None)
            }
        }
    }

    fn save(&self, credentials: &Credentials) -> Result<(), String> {
        crate::redact::register_secrets(credentials.secrets());
        self.ensure_dir()?;
        let _lock = self.home.lock(&self.rel).map_err(|e| e.to_string())?;
        let target = self.path();
        let dir = target.parent().map(PathBuf::from).unwrap_or_else(|| self.home.path().to_path_buf());
        let tmp = dir.join(format!(".{}.tmp", uuid::Uuid::new_v4().simple()));
        let body = serde_json::to_vec_pretty(credentials).map_err(|e| e.to_string())?;
        let written = (|| {
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            file.write_all(&body)?;
            file.sync_all()?;
            std::fs::rename(&tmp, &target)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("cannot write {}: {e}", target.display()));
        }
        Ok(())
    }

    fn remove(&self) -> Result<(), String> {
        let path = self.path();
        if !path.exists() {
            return Ok(());
        }
        let _lock = self.home.lock(&self.rel).map_err(|e| e.to_string())?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
        }
    }
}

/// Whether `entry` configures its own `Authorization` header (then OAuth is off).
fn has_authorization_header(entry: &ServerEntry) -> bool {
    matches!(&entry.transport, EntryTransport::Http { headers, .. }
        if headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")))
}

/// The OAuth of the configured (expanded) HTTP server `name`: its stored
/// token, and `browser` to log in with (`None`: a needed login fails at once).
pub fn authorizer(
    home: &ClatHome,
    name: &str,
    entry: &ServerEntry,
    browser: Option<Arc<dyn Browser>>,
) -> Option<Result<Authorizer, String>> {
    let EntryTransport::Http { url, oauth, .. } = &entry.transport else { return None };
    if has_authorization_header(entry) {
        return None;
    }
    let settings = oauth.as_ref().map(|o| o.settings()).unwrap_or_default();
    let store = Arc::new(CredentialFile::new(home, name, url));
    Some(Authorizer::new(name, url, settings, store, browser).map_err(|e| format!("OAuth for {name}: {e}")))
}
