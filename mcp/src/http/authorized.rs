//! Sending with the server's token: a 401 (or a 403 asking for more scope)
//! is answered by the authorizer and the request sent again, and the time a
//! request spends on authorization is kept on its `AuthClock` so it does not
//! count against the request's timeout.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderValue;

use super::Inner;
use super::body::http_error;
use crate::auth::{AuthError, Challenge};
use crate::error::ClientError;
use crate::limits::AUTH_ATTEMPTS_MAX;
use crate::sync::lock;

/// The time one request spent on its server's authorization (a login in a
/// browser, token requests): it does not count against the request's timeout,
/// so a login the first request of a session needs is not cut short by it.
#[derive(Clone, Default)]
pub(super) struct AuthClock(Arc<Mutex<AuthTime>>);

#[derive(Default)]
struct AuthTime {
    spent: Duration,
    since: Option<std::time::Instant>,
    /// What the request's deadline was already moved by.
    credited: Duration,
}

impl AuthClock {
    fn start(&self) {
        lock(&self.0).since = Some(std::time::Instant::now());
    }

    fn stop(&self) {
        let mut time = lock(&self.0);
        if let Some(since) = time.since.take() {
            time.spent += since.elapsed();
        }
    }

    /// Authorization time (ongoing included) the deadline was not moved by yet.
    pub(super) fn uncredited(&self) -> Duration {
        let mut time = lock(&self.0);
        let total = time.spent + time.since.map_or(Duration::ZERO, |since| since.elapsed());
        let extra = total.saturating_sub(time.credited);
        time.credited = total;
        extra
    }
}

tokio::task_local! {
    /// The clock of the request this task is exchanging (none in background tasks).
    pub(super) static AUTH_CLOCK: AuthClock;
}

impl Inner {
    /// Send the request `build` makes, with the server's token when it has
    /// OAuth; a 401 (or a 403 asking for more scope) is answered by the
    /// authorizer and the request sent again, at most `AUTH_ATTEMPTS_MAX` times.
    pub(super) async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ClientError> {
        let Some(auth) = &self.auth else {
            return build().send().await.map_err(http_error);
        };
        let mut attempts = 0;
        loop {
            let mut builder = build();
            let bearer = auth.bearer().await;
            if let Some((_, value)) = &bearer
                && let Ok(mut value) = HeaderValue::from_str(value)
            {
                value.set_sensitive(true);
                builder = builder.header(reqwest::header::AUTHORIZATION, value);
            }
            let response = builder.send().await.map_err(http_error)?;
            let status = response.status().as_u16();
            let challenge = Challenge::from_headers(response.headers());
            if status != 401 && !(status == 403 && challenge.is_insufficient_scope()) {
                return Ok(response);
            }
            let failed = |error: AuthError| ClientError::Auth { server: auth.server().to_string(), error };
            if attempts >= AUTH_ATTEMPTS_MAX {
                return Err(failed(AuthError::StillRefused { status }));
            }
            attempts += 1;
            let clock = AUTH_CLOCK.try_with(AuthClock::clone).ok();
            if let Some(clock) = &clock {
                clock.start();
            }
            let authorized = auth.challenged(bearer.map(|(generation, _)| generation), status, &challenge).await;
            if let Some(clock) = &clock {
                clock.stop();
            }
            authorized.map_err(failed)?;
        }
    }
}
