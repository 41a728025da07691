//! The supply side: where plugins come from and what they may use. Plugin
//! packages and their immutable artifacts (`packages.rs`), OCI registries
//! (`oci.rs`), untrusted HTTP answers read within a bound (`download.rs`, for
//! the OCI pull and the MCP Registry client), and grants (`capabilities.rs`:
//! WHATWG host parsing, the internal-address rule, which tools use them).

pub mod capabilities;
pub mod download;
pub mod oci;
pub mod packages;
