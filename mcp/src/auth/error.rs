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
