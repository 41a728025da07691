//! Why a login or refresh failed: the step, and what went wrong at it.

/// The step of a login or refresh that failed, named in its error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    ResourceMetadata,
    ServerMetadata,
    Registration,
    Authorization,
    Redirect,
    Token,
    Refresh,
    Storage,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::ResourceMetadata => "protected-resource metadata discovery",
            Step::ServerMetadata => "authorization-server metadata discovery",
            Step::Registration => "client registration",
            Step::Authorization => "authorization",
            Step::Redirect => "the login redirect",
            Step::Token => "the token request",
            Step::Refresh => "the token refresh",
            Step::Storage => "storing the token",
        })
    }
}

/// Why a server could not be authorized. The text never holds a token or secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A browser login is needed and this command cannot run one.
    #[error("it needs a login")]
    LoginRequired,
    /// The server refused the request (401) and says nothing of OAuth: no
    /// metadata named in its challenge, none published. Its credentials are
    /// more likely missing from the configuration than a login.
    #[error("it refused the request (401) and publishes no OAuth metadata")]
    NotOAuth,
    #[error("{step} failed: {reason}")]
    Failed { step: Step, reason: String },
    /// The server refused a token it was just given.
    #[error("it still answers {status} after a fresh authorization")]
    StillRefused { status: u16 },
}

impl AuthError {
    pub(crate) fn failed(step: Step, reason: impl Into<String>) -> AuthError {
        AuthError::Failed { step, reason: reason.into() }
    }
}

/// Why a `CredentialStore` could not load, keep or forget a server's
/// credentials. The text names the place, never the credentials.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or directory could not be read, written or removed.
    #[error("cannot {action} {}: {source}", path.display())]
    File {
        /// What was being done: `read`, `write`, `remove`, `create`.
        action: &'static str,
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// The OS keyring is required and could not do what was asked.
    #[error("the OS keyring could not {action}: {reason}")]
    Keyring { action: &'static str, reason: String },
    /// The credentials could not be encoded.
    #[error("the credentials could not be encoded: {0}")]
    Encode(#[from] serde_json::Error),
    /// The store's own failure (a host's home that cannot be made or locked).
    #[error(transparent)]
    Host(Box<dyn std::error::Error + Send + Sync>),
}

/// Why the login page could not be shown (or, for `ScriptedBrowser`, followed).
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// The page could not be opened or fetched.
    #[error("{0}")]
    Open(String),
    /// The authorization page answered without redirecting (a scripted browser
    /// expects an automatic approval).
    #[error("the authorization page answered {status} without a redirect")]
    NoRedirect { status: reqwest::StatusCode },
    /// The authorization page redirected somewhere other than the loopback listener.
    #[error("the authorization page redirected to {origin}, not to the loopback")]
    NotLoopback { origin: String },
}

/// Why the loopback redirect listener could not listen or wait.
#[derive(Debug, thiserror::Error)]
pub enum LoopbackError {
    #[error("the callback port 127.0.0.1:{port} is already in use (set another `callback_port`)")]
    PortInUse { port: u16 },
    #[error("cannot listen on 127.0.0.1:{port} for the login's redirect: {source}")]
    Listen { port: u16, source: std::io::Error },
    #[error("the redirect listener failed: {0}")]
    Accept(std::io::Error),
}
