//! The path of the built MCP test server (see build.rs): `MCP_TEST_SERVER`.
//! The server is a package of its own (`tests/mcp-test-server`), not a binary
//! of a product crate; this crate builds it for whoever tests against it.

include!(concat!(env!("OUT_DIR"), "/server.rs"));
