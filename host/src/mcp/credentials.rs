//! Where the OAuth tokens of remote MCP servers live between commands: the
//! OS keyring when there is one (the Secret Service on Linux, the Keychain on
//! macOS), one entry per server, resource and home; else, or when
//! `CLAT_CREDENTIAL_STORE=file`, `$CLAT_HOME/credentials/`, a 0700 directory
//! with one 0600 file per server and resource (`<server>-<16 hex digits of
//! the resource's SHA-256>.json`), each written whole under the home's lock
//! for that file and replaced atomically (`home.rs`). A token saved to the
//! keyring leaves no file behind. Every token and client secret read or
//! written here is registered with `redact`, so no diagnostic of this process
//! shows it.
//!
//! `authorizer` gives a configured HTTP server its `clat_mcp::auth::Authorizer`
//! on these files: OAuth is on for every HTTP entry that does not configure
//! its own `Authorization` header.

use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;

use clat_mcp::auth::{Authorizer, Browser, CredentialStore, Credentials, StoreError};
use clat_mcp::config::{EntryTransport, ServerEntry};
use sha2::Digest;

use crate::home::ClatHome;

/// The credentials directory inside the home.
pub const CREDENTIALS_DIR: &str = "credentials";
/// Where tokens are kept: `keyring` (the OS keyring, or an error), `file`, or
/// `auto` (the default: the keyring when there is one, else the file).
pub const CREDENTIAL_STORE_ENV: &str = "CLAT_CREDENTIAL_STORE";
/// The keyring service CLAT's OAuth entries are kept under.
pub const KEYRING_SERVICE: &str = "io.artec.clat.mcp-oauth";

/// Credentials from their stored text; secrets are registered for redaction.
fn parse_credentials(text: &[u8], from: &str) -> Option<Credentials> {
    match serde_json::from_slice::<Credentials>(text) {
        Ok(credentials) => {
            crate::redact::register_secrets(credentials.secrets());
            Some(credentials)
        }
        // A damaged or hand-edited entry is no login.
        Err(e) => {
            tracing::warn!("ignoring {from}: it does not hold credentials ({e})");
            None
        }
    }
}

fn short_hash(text: &[u8]) -> String {
    sha2::Sha256::digest(text).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// A server's credentials in the OS keyring, else in its file.
pub struct CredentialVault {
    file: CredentialFile,
    keyring: Option<keyring::Entry>,
    /// `CLAT_CREDENTIAL_STORE=keyring`: a keyring failure is an error, not a fallback.
    keyring_only: bool,
}

impl CredentialVault {
    /// The vault for server `server` at `url` in `home`.
    pub fn new(home: &ClatHome, server: &str, url: &str) -> CredentialVault {
        let file = CredentialFile::new(home, server, url);
        let mode = std::env::var(CREDENTIAL_STORE_ENV).unwrap_or_default();
        if !matches!(mode.as_str(), "" | "auto" | "file" | "keyring") {
            tracing::warn!("{CREDENTIAL_STORE_ENV}={mode} is not keyring, file or auto; using auto");
        }
        // The entry names the home too: two homes never share a login.
        let user = format!("{}@{}", file.stem(), short_hash(home.path().as_os_str().as_encoded_bytes()));
        let keyring = match mode.as_str() {
            "file" => None,
            _ => keyring::Entry::new(KEYRING_SERVICE, &user)
                .map_err(|e| tracing::debug!("no keyring entry for {user}: {e}"))
                .ok(),
        };
        CredentialVault { file, keyring, keyring_only: mode == "keyring" }
    }

    /// A keyring failure: an error when the keyring is required, else the file is used.
    fn keyring_failed(&self, what: &'static str, error: keyring::Error) -> Result<(), StoreError> {
        if self.keyring_only {
            return Err(StoreError::Keyring { action: what, reason: error.to_string() });
        }
        tracing::debug!("the OS keyring could not {what} ({error}); using {}", self.file.path().display());
        Ok(())
    }
}

impl CredentialStore for CredentialVault {
    fn load(&self) -> Result<Option<Credentials>, StoreError> {
        if let Some(entry) = &self.keyring {
            match entry.get_password() {
                Ok(text) => return Ok(parse_credentials(text.as_bytes(), "the OS keyring's entry")),
                // Not in the keyring: a file from before, or from a fallback.
                Err(keyring::Error::NoEntry) => {}
                Err(e) => self.keyring_failed("be read", e)?,
            }
        }
        self.file.load()
    }

    fn save(&self, credentials: &Credentials) -> Result<(), StoreError> {
        crate::redact::register_secrets(credentials.secrets());
        if let Some(entry) = &self.keyring {
            let text = serde_json::to_string(credentials)?;
            match entry.set_password(&text) {
                // No plaintext copy is left behind.
                Ok(()) => return self.file.remove(),
                Err(e) => self.keyring_failed("keep the token", e)?,
            }
        }
        self.file.save(credentials)
    }

    fn remove(&self) -> Result<(), StoreError> {
        if let Some(entry) = &self.keyring {
            match entry.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => {}
                Err(e) => self.keyring_failed("forget the token", e)?,
            }
        }
        self.file.remove()
    }
}

/// One server's credentials file.
pub struct CredentialFile {
    home: ClatHome,
    /// The file's path relative to the home.
    rel: String,
}

impl CredentialFile {
    /// The file for server `server` at `url`.
    pub fn new(home: &ClatHome, server: &str, url: &str) -> CredentialFile {
        let safe: String =
            server.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
        let stem = format!("{safe}-{}", short_hash(url.as_bytes()));
        CredentialFile { home: home.clone(), rel: format!("{CREDENTIALS_DIR}/{stem}.json") }
    }

    /// `<server>-<hash of the URL>`: the file's name without `.json`.
    fn stem(&self) -> &str {
        self.rel.trim_start_matches(CREDENTIALS_DIR).trim_start_matches('/').trim_end_matches(".json")
    }

    pub fn path(&self) -> PathBuf {
        self.home.path().join(&self.rel)
    }

    fn ensure_dir(&self) -> Result<(), StoreError> {
        self.home.ensure().map_err(|e| StoreError::Host(Box::new(e)))?;
        let dir = self.home.path().join(CREDENTIALS_DIR);
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&dir).map_err(|source| StoreError::File {
            action: "create",
            path: dir,
            source,
        })
    }
}

impl CredentialStore for CredentialFile {
    fn load(&self) -> Result<Option<Credentials>, StoreError> {
        let path = self.path();
        let text = match crate::home::files::read_config_file(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::File { action: "read", path, source }),
        };
        tighten(&path);
        Ok(parse_credentials(&text, &path.display().to_string()))
    }

    fn save(&self, credentials: &Credentials) -> Result<(), StoreError> {
        crate::redact::register_secrets(credentials.secrets());
        self.ensure_dir()?;
        let _lock = self.home.lock(&self.rel).map_err(|e| StoreError::Host(Box::new(e)))?;
        // A new file is 0600 from its creation; one that exists keeps its mode (`tighten` made it 0600).
        let body = serde_json::to_vec_pretty(credentials)?;
        self.home.write_atomic(&self.rel, &body).map_err(|e| StoreError::Host(Box::new(e)))
    }

    fn remove(&self) -> Result<(), StoreError> {
        let path = self.path();
        if !path.exists() {
            return Ok(());
        }
        let _lock = self.home.lock(&self.rel).map_err(|e| StoreError::Host(Box::new(e)))?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StoreError::File { action: "remove", path, source }),
        }
    }
}

/// A token file that others may read (a copy, a restore, a `chmod`) is made
/// 0600 again, with a warning, as ssh warns of a key file's mode.
fn tighten(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::metadata(path) else { return };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 == 0 {
        return;
    }
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        Ok(()) => tracing::warn!(
            "{} holds an OAuth token and was readable by others (mode {mode:04o}); its mode is now 0600",
            path.display()
        ),
        Err(e) => tracing::warn!(
            "{} holds an OAuth token and is readable by others (mode {mode:04o}), and could not be made 0600: {e}",
            path.display()
        ),
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
) -> Option<Result<Authorizer, OAuthSetupError>> {
    let EntryTransport::Http { url, oauth, .. } = &entry.transport else { return None };
    if has_authorization_header(entry) {
        return None;
    }
    let settings = oauth.as_ref().map(|o| o.settings()).unwrap_or_default();
    let store = Arc::new(CredentialVault::new(home, name, url));
    Some(
        Authorizer::new(name, url, settings, store, browser)
            .map_err(|why| OAuthSetupError { name: name.to_string(), why }),
    )
}

/// The OAuth of a configured server could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("OAuth for {name}: {why}")]
pub struct OAuthSetupError {
    pub name: String,
    pub why: clat_mcp::auth::AuthError,
}
