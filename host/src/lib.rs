//! `clat-host`: the CLAT extension platform's host. It owns the one contract
//! (`contract`, generated from `wit/`), the one registry and permission
//! pipeline, runs (cancel, deadline, events, sampling budget), CLAT's native
//! tools with the project path fence and process service, project trust and
//! scope, and the `clat` command line. Its two adapters are siblings onto that
//! one contract: `wasm/` runs WebAssembly component plugins in-process, `mcp/`
//! mounts MCP servers through the `clat-mcp` client; neither imports the
//! other, and both report through `extension.rs`.

pub mod approvals;
pub mod asker;
pub mod authoring;
pub mod budget;
pub mod capabilities;
pub mod cli;
pub mod contract;
pub mod effects;
pub mod elicitation;
pub mod extension;
pub mod identity;
pub mod limits;
pub mod mcp;
pub mod model;
pub mod names;
pub mod native;
pub mod packages;
pub mod permissions;
pub mod redact;
pub mod registry;
pub mod run;
pub mod sampling;
pub mod scope;
pub mod services;
pub mod trust;
pub mod wasm;
