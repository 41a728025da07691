//! The paths of the built MCP test servers (see build.rs): `MCP_TEST_SERVER`,
//! the test server with its scenario flags, and `MCP_ECHO_SERVER`, the
//! smallest server (one `echo` tool, built optimised) that the MCP benchmark
//! measures the clients against. The servers are a package of their own
//! (`tests/mcp-test-server`), not binaries of a product crate; this crate
//! builds them for whoever tests against them.

include!(concat!(env!("OUT_DIR"), "/server.rs"));
