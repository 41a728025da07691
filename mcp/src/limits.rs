//! The spec's limits that the MCP client enforces. They are defined here, once;
//! `clat_host::limits` re-exports them so the spec's table has one home.

use std::time::Duration;

/// One stdio frame (one JSON-RPC message per line).
pub const STDIO_FRAME_MAX_BYTES: usize = 4 * 1024 * 1024;
/// Legacy `initialize` / `notifications/initialized` handshake.
pub const LEGACY_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Modern `server/discover` probe, then a fresh legacy fallback.
pub const MODERN_PROBE_TIMEOUT: Duration = Duration::from_secs(3);
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
/// How long a closing server gets after its stdin closes before its process group is killed.
pub const CLOSE_GRACE: Duration = Duration::from_secs(2);
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
