//! The spec's limits that the MCP client enforces, and the client's own
//! bounds. They are defined here, once; `clat_host::limits` re-exports every
//! one of them, so all of CLAT's limits are reachable from one module.

use std::time::Duration;

/// One stdio frame (one JSON-RPC message per line).
pub const STDIO_FRAME_MAX_BYTES: usize = 4 * 1024 * 1024;
/// Legacy `initialize` / `notifications/initialized` handshake, unless the
/// caller raises it (the host: a server's `startup_timeout_sec`).
pub const LEGACY_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Modern `server/discover` probe, then a fresh legacy fallback.
pub const MODERN_PROBE_TIMEOUT: Duration = Duration::from_secs(3);
/// A probe's process that did not answer in time (a server still starting, an `npx` still installing its package)
/// is never killed mid-start: its stdin is closed and it may end by itself until this long before the server's
/// startup bound (counted from its spawn: a run's 10 s handshake, `clat mcp`'s 60 s), which leaves the fresh
/// process's start within a run's initial surface; it gets SIGTERM this long before that, and SIGKILL at it.
pub const PROBE_TERM_GRACE: Duration = Duration::from_secs(2);
/// The probe process's stderr held until the probe decides whether that
/// process is kept (its oldest lines go first past this).
pub const PROBE_STDERR_HELD_MAX_BYTES: usize = 64 * 1024;
/// One `tools/list` page.
pub const TOOLS_LIST_PAGE_TIMEOUT: Duration = Duration::from_secs(30);
/// `tools/list` pages per server.
pub const TOOLS_LIST_MAX_PAGES: usize = 32;
/// Tools registered per server (the rest are dropped and reported).
pub const TOOLS_PER_SERVER_MAX: usize = 512;
/// Inbound server-request queue per connection.
pub const INBOUND_REQUEST_QUEUE: usize = 16;
/// Outgoing messages queued per connection before senders wait.
pub const WRITER_QUEUE: usize = 64;
/// How long a served session waits for the client to answer one of its requests (an approval form the user fills in).
pub const SERVE_CLIENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// `tools/call` requests a served session runs at once; past it a call is refused with `SERVER_BUSY`.
pub const SERVE_IN_FLIGHT_MAX: usize = 64;
/// Requests of one served session whose answers are not yet in its transport's queue (calls running or refused,
/// listings): past it the session reads no more requests until one is (a client that stops reading its answers
/// stops being read, and memory stays flat).
pub const SERVE_PENDING_ANSWERS_MAX: usize = 2 * SERVE_IN_FLIGHT_MAX;
/// `clat serve --http`: one request's body (one JSON-RPC message); past it 413.
pub const SERVE_HTTP_BODY_MAX_BYTES: usize = 4 * 1024 * 1024;
/// `clat serve --http`: sessions open at once; past it `initialize` gets 503.
pub const SERVE_HTTP_SESSIONS_MAX: usize = 64;
/// Connections `clat serve --http` holds open at once; past it none is accepted until one ends.
pub const SERVE_HTTP_CONNECTIONS_MAX: usize = 256;
/// `clat serve --http`: a session nobody used for this long, with nothing in flight, ends.
pub const SERVE_HTTP_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// `clat serve --http`: how long a connection may take to send a request's headers (slow clients hold no slot).
pub const SERVE_HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a closing server gets after its stdin closes before its process group is killed (and a served
/// session's calls, after the client closed its end, before they are dropped).
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// Characters of a downstream server's input request key that `clat serve` keeps when it forwards the question
/// to a modern client (a longer one is asked under CLAT's own key).
pub const FORWARDED_INPUT_KEY_MAX_CHARS: usize = 128;
/// Modern `input_required` rounds for one request before it fails.
pub const INPUT_REQUIRED_MAX_ROUNDS: usize = 10;
/// Streamable HTTP: times a broken event stream is resumed (GET + `Last-Event-ID`) for one request.
pub const HTTP_SSE_RESUMES_MAX: usize = 5;
/// Streamable HTTP: one POST that expects no answer (a notification, our answer to a server request).
pub const HTTP_ONE_WAY_TIMEOUT: Duration = Duration::from_secs(10);
/// When a stdio server exits, how long its last stderr lines may take to
/// arrive before its pending requests fail (a descendant may hold the pipe).
pub const EXIT_STDERR_DRAIN_WAIT: Duration = Duration::from_millis(250);
/// When a stdio server closes its output, how long the reader waits to learn
/// whether (and how) the process exited, to say so in the error.
pub const EXIT_REPORT_WAIT: Duration = Duration::from_secs(1);
/// Streamable HTTP: one response body, one SSE line and one SSE event.
pub const HTTP_BODY_MAX_BYTES: usize = 4 * 1024 * 1024;
/// Streamable HTTP: what is read of an error response's body (a JSON-RPC error or text).
pub const HTTP_ERROR_BODY_MAX_BYTES: usize = 64 * 1024;
/// Streamable HTTP: establishing one TCP (and TLS) connection.
pub const HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Streamable HTTP: the wait before resuming a broken event stream when the server set no `retry`.
pub const HTTP_SSE_DEFAULT_RETRY: Duration = Duration::from_millis(500);
/// Streamable HTTP (legacy): the wait before re-opening the server's GET stream when it set no `retry`.
pub const HTTP_GET_STREAM_DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// Streamable HTTP: what an SSE event may add to `HTTP_BODY_MAX_BYTES` (field names, separators).
pub const HTTP_SSE_FIELD_OVERHEAD_BYTES: usize = 1024;
/// Streamable HTTP: characters of an error response's text kept in a diagnostic.
pub const HTTP_ERROR_TEXT_MAX_CHARS: usize = 300;
/// OAuth: one metadata, registration or token request.
pub const AUTH_HTTP_TIMEOUT: Duration = Duration::from_secs(30);
/// OAuth: a metadata, registration or token answer.
pub const AUTH_BODY_MAX_BYTES: usize = 256 * 1024;
/// OAuth: how long a browser login may take, from opening the page to the redirect.
pub const AUTH_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// OAuth: a token this close to its expiry is refreshed before it is sent.
pub const AUTH_REFRESH_SKEW: Duration = Duration::from_secs(30);
/// OAuth: what the loopback redirect listener reads of one request.
pub const AUTH_CALLBACK_REQUEST_MAX_BYTES: usize = 16 * 1024;
/// OAuth: how long the loopback redirect listener waits for one connection's request.
pub const AUTH_CALLBACK_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// OAuth: authorizations (refreshes, logins, step-ups) one request may cause before it fails.
pub const AUTH_ATTEMPTS_MAX: usize = 3;
