//! Every limit of the spec's "Resource limits" table, plus CLAT's own bounds,
//! as named constants: no limit is written as a literal anywhere else.
//! `docs/architecture.md` says where each is enforced. The MCP client's limits
//! are defined in `clat-mcp` and re-exported here, so every limit is
//! reachable from this one module.

use std::time::Duration;

/// The limits the MCP client enforces live in `clat-mcp`, once: those of the
/// spec's table and the client's own bounds (every one of them re-exported).
pub use clat_mcp::limits::{
    AUTH_ATTEMPTS_MAX, AUTH_BODY_MAX_BYTES, AUTH_CALLBACK_READ_TIMEOUT, AUTH_CALLBACK_REQUEST_MAX_BYTES,
    AUTH_HTTP_TIMEOUT, AUTH_LOGIN_TIMEOUT, AUTH_REFRESH_SKEW, CLOSE_GRACE, EXIT_REPORT_WAIT, EXIT_STDERR_DRAIN_WAIT,
    FORWARDED_INPUT_KEY_MAX_CHARS, HTTP_BODY_MAX_BYTES, HTTP_CONNECT_TIMEOUT, HTTP_ERROR_BODY_MAX_BYTES,
    HTTP_ERROR_TEXT_MAX_CHARS, HTTP_GET_STREAM_DEFAULT_RETRY, HTTP_ONE_WAY_TIMEOUT, HTTP_SSE_DEFAULT_RETRY,
    HTTP_SSE_FIELD_OVERHEAD_BYTES, HTTP_SSE_RESUMES_MAX, INBOUND_REQUEST_QUEUE, INPUT_REQUIRED_MAX_ROUNDS,
    LEGACY_HANDSHAKE_TIMEOUT, MODERN_PROBE_TIMEOUT, PROBE_STDERR_HELD_MAX_BYTES, PROBE_TERM_GRACE,
    SERVE_CLIENT_REQUEST_TIMEOUT, SERVE_HTTP_BODY_MAX_BYTES, SERVE_HTTP_CONNECTIONS_MAX,
    SERVE_HTTP_HEADER_READ_TIMEOUT, SERVE_HTTP_SESSION_IDLE, SERVE_HTTP_SESSIONS_MAX, SERVE_IN_FLIGHT_MAX,
    SERVE_PENDING_ANSWERS_MAX, STDIO_FRAME_MAX_BYTES, TOOLS_LIST_MAX_PAGES, TOOLS_LIST_PAGE_TIMEOUT,
    TOOLS_PER_SERVER_MAX, WRITER_QUEUE,
};

/// The tool definitions offered to a model by default (`discovery.rs`): past them, tools are found, not listed.
pub const DISCOVERY_BUDGET_BYTES: usize = 8 * 1024;
/// The matches a tool search gives when not told how many.
pub const SEARCH_RESULTS_DEFAULT: usize = 5;
/// The most matches one `search_tools` call gives.
pub const SEARCH_RESULTS_MAX: usize = 20;
/// `search_tools`' answer: the extensions' tool names are added only while the whole answer stays within this.
pub const SEARCH_ANSWER_MAX_BYTES: usize = 2 * 1024;
/// The extensions, best matching first, whose tools' names `search_tools` adds to its matches.
pub const SEARCH_ANSWER_EXTENSIONS: usize = 3;
/// A match's description in `search_tools`' answer: its first line, cut to this.
pub const SEARCH_LINE_MAX_CHARS: usize = 80;
/// Search enrichment: the requests in a user's words kept for one tool definition (the model's first lines).
pub const SEARCH_REQUESTS_PER_TOOL: usize = 5;
/// Search enrichment: one kept request, cut to this many characters.
pub const SEARCH_REQUEST_MAX_CHARS: usize = 120;
/// Search enrichment: the tokens the model may write for one tool's requests.
pub const SEARCH_REQUESTS_MAX_TOKENS: u32 = 300;
/// Search enrichment: the tool definitions whose requests the home keeps; past it, those not of the tools just
/// enriched go first, oldest first.
pub const SEARCH_REQUESTS_KEPT_MAX: usize = 4096;
/// Marked DSH prompts per server.
pub const DSH_PROMPTS_PER_SERVER_MAX: usize = 128;
/// One resolved DSH system prompt.
pub const DSH_PROMPT_MAX_BYTES: usize = 256 * 1024;
/// One tool call (any source) before it times out.
pub const TOOL_CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// One extension step of a tools/call deadline while a host request is pending.
pub const HOST_REQUEST_EXTENSION_STEP: Duration = Duration::from_secs(60);
/// Total extension of one tools/call deadline by host requests.
pub const HOST_REQUEST_EXTENSION_MAX: Duration = Duration::from_secs(10 * 60);
/// One tool result (all content, structured part included), in bytes of JSON.
pub const TOOL_RESULT_MAX_BYTES: usize = 1024 * 1024;
/// What the marker of a result cut to `TOOL_RESULT_MAX_BYTES` may take of it.
pub const TOOL_RESULT_CUT_MARKER_BYTES: usize = 512;
/// Messages in one sampling request.
pub const SAMPLING_MAX_MESSAGES: usize = 32;
/// Output tokens one sampling request may ask for.
pub const SAMPLING_MAX_OUTPUT_TOKENS: u32 = 8_192;
/// Characters across system prompt and messages of one sampling request.
pub const SAMPLING_MAX_OUTBOUND_CHARS: usize = 262_144;
/// Extension-sampling requests per run, shared by MCP, WASM and DSH.
pub const SAMPLING_REQUESTS_PER_RUN: u32 = 64;
/// Approximate token spend per run, shared by every source.
pub const SAMPLING_TOKENS_PER_RUN: u64 = 1_000_000;
/// Fields in one elicitation form.
pub const ELICITATION_MAX_FIELDS: usize = 16;
/// Choices in one elicitation enum field.
pub const ELICITATION_MAX_CHOICES: usize = 16;
/// Re-asks of an invalid number before the form fails.
pub const ELICITATION_NUMBER_RETRIES: usize = 2;
/// The first run waits this long for the initial extension surface before the registry freezes.
pub const INITIAL_SURFACE_WAIT: Duration = Duration::from_secs(20);
/// The most a server's `startup_timeout_sec` (or `MCP_TIMEOUT`) may give it to
/// connect and list its tools; its legacy handshake may take as long. Runs
/// still wait `INITIAL_SURFACE_WAIT` at most: a server later than that joins
/// the next command, not the frozen run.
pub const STARTUP_TIMEOUT_MAX: Duration = Duration::from_secs(300);
/// How long `clat mcp` and `clat tools` (a user watching, with progress) give
/// a server that sets no `startup_timeout_sec`: a first `npx` / `uvx` start
/// downloads its package.
pub const WATCHED_START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stdio server's learned legacy era is trusted (`mcp/eras.rs`): past it, its next start probes again
/// (and it starts twice once), so a server that became modern is found without its key changing.
pub const ERA_REPROBE_INTERVAL: Duration = Duration::from_secs(24 * 60 * 60);
/// Lines of subprocess / guest stderr kept for diagnostics.
pub const STDERR_TAIL_LINES: usize = 20;
/// Characters kept of one diagnostic tail line.
pub const STDERR_TAIL_LINE_MAX_CHARS: usize = 1_000;

// CLAT's own bounds (not in the spec table, but every surface is bounded).

/// Registered tool names, as most model APIs accept them.
pub const TOOL_NAME_MAX_CHARS: usize = 64;
/// Hex digits of the stable hash suffix of a shortened tool name.
pub const TOOL_NAME_HASH_HEX: usize = 10;
/// Bytes of file text `read_file` returns in one call.
pub const READ_FILE_MAX_BYTES: usize = 256 * 1024;
/// Entries `list_files` returns at most (the default is lower).
pub const LIST_FILES_MAX_ENTRIES: usize = 5_000;
/// Default entries `list_files` returns.
pub const LIST_FILES_DEFAULT_ENTRIES: usize = 1_000;
/// Matches `search` returns at most (the default is lower).
pub const SEARCH_MAX_RESULTS: usize = 1_000;
/// Default matches `search` returns.
pub const SEARCH_DEFAULT_RESULTS: usize = 200;
/// Files larger than this are skipped by `search`.
pub const SEARCH_MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Characters of one matching line `search` shows.
pub const SEARCH_MAX_LINE_CHARS: usize = 400;
/// Bytes `write_file` / `edit_file` accept for one file's new content.
pub const WRITE_FILE_MAX_BYTES: usize = 4 * 1024 * 1024;
/// Bytes of stdout and of stderr `run_command` keeps (the rest is drained and counted).
pub const COMMAND_OUTPUT_MAX_BYTES: usize = 64 * 1024;
/// Default `run_command` timeout when the call does not ask for one.
pub const COMMAND_DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `run_command` waits for its output pipes to close after the process
/// group was killed (a descendant that left the group could hold them open).
pub const COMMAND_OUTPUT_DRAIN_WAIT: Duration = Duration::from_secs(2);
/// Establishing the connection to the model provider.
pub const MODEL_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The model provider's answer to one request: past this it is refused, unread.
pub const MODEL_RESPONSE_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes a file's head is checked for a NUL byte to call it binary (`read_file`, `search`).
pub const BINARY_SNIFF_BYTES: usize = 8192;
/// Characters of a model provider's error body kept in an error (redacted).
pub const MODEL_ERROR_BODY_MAX_CHARS: usize = 500;
/// Characters of one plugin log line (the rest is cut).
pub const PLUGIN_LOG_LINE_MAX_CHARS: usize = 2_000;
/// Characters of one string field in a context snapshot.
pub const SNAPSHOT_MAX_STRING_CHARS: usize = 4_096;
/// Bytes of the audit trail's file before it is rotated (`audit.rs`).
pub const AUDIT_FILE_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// How long served calls' audit records wait to be written together: a record
/// is on disk at most about this long after its call's answer.
pub const AUDIT_WRITE_INTERVAL: Duration = Duration::from_millis(10);
/// Audit records queued at most: the call whose record fills the queue writes it
/// (a stalled disk slows calls down, it never fills memory).
pub const AUDIT_QUEUE_MAX: usize = 1024;
/// Extension sampling requests a `clat serve` session allows across all its calls (`--sampling-budget` sets
/// another number); its tokens are guarded by `SAMPLING_TOKENS_PER_RUN`.
pub const SERVE_SESSION_SAMPLING_REQUESTS: u32 = 64;
/// Tools one WASM plugin lists at most; the rest are dropped and said to be (as the spec bounds a server's tools,
/// `TOOLS_PER_SERVER_MAX`).
pub const TOOLS_PER_PLUGIN_MAX: usize = TOOLS_PER_SERVER_MAX;
/// One configuration file read from the home or a project (`mcp.json`, `.mcp.json`, trust, approvals, the
/// model's config, the plugin index, a plugin's manifest, stored credentials): larger is refused, naming the file.
pub const CONFIG_FILE_MAX_BYTES: u64 = 1024 * 1024;
/// One record the home keeps of what extensions listed (pins, listings, a plugin's kept definitions): larger is
/// refused, naming the file.
pub const HOME_RECORD_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes of a tool call's arguments accepted by the pipeline.
pub const TOOL_ARGUMENTS_MAX_BYTES: usize = 8 * 1024 * 1024;

/// How long a failed MCP connection waits for the server's stderr (until its first bytes arrive) before reporting.
pub const CONNECT_FAILURE_TAIL_WAIT: Duration = Duration::from_millis(250);
/// The first back-off before an MCP server that stopped is started again (it doubles per restart).
pub const RESTART_BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// Restarts of one MCP server within `RESTART_WINDOW`; past that it stays failed.
pub const RESTARTS_MAX: usize = 3;
/// The window over which `RESTARTS_MAX` counts.
pub const RESTART_WINDOW: Duration = Duration::from_secs(5 * 60);

// WASM guests.

/// Linear memory one guest store may grow to (a plugin may ask for less).
pub const WASM_MEMORY_MAX_BYTES: usize = 256 * 1024 * 1024;
/// Table elements one guest store may hold.
pub const WASM_TABLE_ELEMENTS_MAX: usize = 100_000;
/// Core instances, tables and memories one guest store may create.
pub const WASM_INSTANCES_MAX: usize = 64;
/// Guest instances (tool calls, tool listings, context deliveries) alive at
/// once in the pooling allocator; an instantiation past it fails its call.
pub const WASM_POOL_INSTANCES_MAX: u32 = 128;
/// How often the engine's epoch advances; guests yield to the async runtime at
/// this cadence, so cancellation reaches a busy guest within about one tick.
pub const WASM_EPOCH_TICK: Duration = Duration::from_millis(10);
/// How long one best-effort `context-changed` delivery to a guest may run.
pub const CONTEXT_DELIVERY_TIMEOUT: Duration = Duration::from_secs(5);
/// The least time between two `context-changed` deliveries to one guest: a
/// burst of runs (`clat serve` makes each call one) reaches it as its latest
/// context, not as one instance per run.
pub const CONTEXT_DELIVERY_INTERVAL: Duration = Duration::from_millis(50);
/// Bytes of a component file accepted by install and load.
pub const WASM_COMPONENT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// The parts (list items, fields, cases, flags) of one value converted between JSON and a plain component's
/// function, arguments or result.
pub const COMPONENT_VALUE_PARTS_MAX: usize = 1 << 20;
/// The bytes of a plain component package's `wit/` read for its functions' doc comments.
pub const PLAIN_WIT_MAX_BYTES: u64 = 1024 * 1024;

// WASM capability grants (outbound HTTP and environment names).

/// Patterns one plugin may list in `[capabilities] http`.
pub const WASM_HTTP_GRANTS_MAX: usize = 32;
/// Names one plugin may list in `[capabilities] env`.
pub const WASM_ENV_GRANTS_MAX: usize = 32;
/// Outgoing HTTP requests one guest call may make (the rest are refused).
pub const WASM_HTTP_REQUESTS_PER_CALL: u32 = 32;
/// Bytes of one outgoing request's body.
pub const WASM_HTTP_REQUEST_BODY_MAX_BYTES: usize = 1024 * 1024;
/// Bytes of one response's body delivered to a guest.
pub const WASM_HTTP_RESPONSE_BODY_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// Redirects the host follows for one request, each checked against the grant.
pub const WASM_HTTP_REDIRECTS_MAX: usize = 5;
/// How long connecting to a granted host may take (always within the call's deadline).
pub const WASM_HTTP_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

// Plugin packages.

/// Bytes of all files in one plugin package.
pub const PACKAGE_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Files in one plugin package.
pub const PACKAGE_MAX_FILES: usize = 10_000;
/// Characters of a plugin's name.
pub const PLUGIN_NAME_MAX_CHARS: usize = 64;
/// An MCP server's name, for `clat mcp add`.
pub const SERVER_NAME_MAX_CHARS: usize = 64;
/// Characters of a plugin's version.
pub const PLUGIN_VERSION_MAX_CHARS: usize = 64;
/// Log lines one guest call may write through host services (the rest are dropped, with one notice).
pub const PLUGIN_LOG_LINES_PER_CALL: u32 = 200;

// Servers from the MCP Registry (`clat mcp add --from-registry`).

/// Bytes of one registry answer (a `server.json` version is a few KB).
pub const MCP_REGISTRY_DOCUMENT_MAX_BYTES: u64 = 1024 * 1024;
/// How long one registry request may take, connecting and reading included.
pub const MCP_REGISTRY_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Redirects followed for one registry request, each within the registry's origin.
pub const MCP_REGISTRY_REDIRECTS_MAX: usize = 3;

// Plugins from OCI registries (`clat plugin install oci://…`, `push`, `update`).

/// Bytes of one image manifest (the distribution registry's own limit).
pub const OCI_MANIFEST_MAX_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes of one layer, declared or streamed (a component is at most `WASM_COMPONENT_MAX_BYTES` anyway).
pub const OCI_LAYER_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// How long a registry may send nothing while a request waits or a body streams.
pub const OCI_READ_TIMEOUT: Duration = Duration::from_secs(20);
/// How long one whole push or pull may take.
pub const OCI_PULL_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Bytes of the registry's answer to the challenge request (`GET /v2/`), read before credentials go anywhere.
pub const OCI_CHALLENGE_MAX_BYTES: u64 = 64 * 1024;
/// Redirects followed for one download (a manifest's only on the registry's host; a layer's to another host only over https).
pub const OCI_REDIRECTS_MAX: usize = 3;

#[cfg(test)]
mod tests {
    /// Every limit `clat-mcp` defines is re-exported here: this module is where each one is found.
    #[test]
    fn every_limit_of_clat_mcp_is_reachable_from_here() {
        let ours = include_str!("limits.rs");
        let theirs = include_str!("../../mcp/src/limits.rs");
        let missing: Vec<&str> = theirs
            .lines()
            .filter_map(|line| line.strip_prefix("pub const ")?.split(':').next())
            .filter(|name| !ours.contains(&format!("{name},")) && !ours.contains(&format!("{name}\n")))
            .collect();
        assert!(missing.is_empty(), "not re-exported: {missing:?}");
    }
}
