//! `clat-host`: the CLAT extension platform's host. CLAT embeds it through
//! its front door, [`Platform`] (module [`platform`]): open a home, mount a
//! project behind the trust gate, start its WASM plugins and MCP servers, list
//! the tools a model may call, start runs and call tools through the one
//! permission pipeline, cancel, read system prompts, close. The types that
//! door takes and gives are re-exported here.
//!
//! The other modules are the platform's parts, public for the `clat` command
//! line (built on the front door) and the tests, not a stable API: the one
//! contract (`contract`, generated from `wit/`), the one registry and
//! permission pipeline, runs, CLAT's native tools with the project path fence
//! and process service, project trust and scope. Its two adapters are siblings
//! onto that one contract: `wasm/` runs WebAssembly component plugins
//! in-process, `mcp/` mounts MCP servers through the `clat-mcp` client;
//! neither imports the other, and both report through `extension.rs`.

pub mod discovery;
#[doc(hidden)]
pub mod download;
pub mod platform;

pub use asker::UserAsker;
pub use contract::{ContentBlock, Effect, PermissionMode, ToolOutput};
pub use discovery::{Discovery, DiscoveryOptions};
pub use extension::{ExtensionKind, ExtensionState, ExtensionStatus, StartFilter};
pub use native::process::SandboxPolicy;
pub use permissions::{Approval, ApprovalRequest, Approver};
pub use platform::{MountOptions, Platform, PlatformError, Project, Run, RunOptions};
pub use registry::{CallError, SystemPrompt, ToolInfo, ToolSource};
pub use run::{CollectingSink, EventSink, JsonLinesSink, RunEvent, RunEventKind};
pub use sampling::ModelProvider;

#[doc(hidden)]
pub mod approvals;
#[doc(hidden)]
pub mod asker;
#[doc(hidden)]
pub mod audit;
#[doc(hidden)]
pub mod authoring;
#[doc(hidden)]
pub mod budget;
#[doc(hidden)]
pub mod capabilities;
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod contract;
#[doc(hidden)]
pub mod effects;
#[doc(hidden)]
pub mod elicitation;
#[doc(hidden)]
pub mod extension;
#[doc(hidden)]
pub mod files;
#[doc(hidden)]
pub mod home;
#[doc(hidden)]
pub mod identity;
#[doc(hidden)]
pub mod limits;
#[doc(hidden)]
pub mod listings;
#[doc(hidden)]
pub mod mcp;
#[doc(hidden)]
pub mod model;
#[doc(hidden)]
pub mod names;
#[doc(hidden)]
pub mod native;
#[doc(hidden)]
pub mod oci;
#[doc(hidden)]
pub mod packages;
#[doc(hidden)]
pub mod permissions;
#[doc(hidden)]
pub mod pins;
#[doc(hidden)]
pub mod redact;
#[doc(hidden)]
pub mod registry;
#[doc(hidden)]
pub mod run;
#[doc(hidden)]
pub mod sampling;
#[doc(hidden)]
pub mod scope;
#[doc(hidden)]
pub mod services;
#[doc(hidden)]
pub mod sync;
#[doc(hidden)]
pub mod trust;
#[doc(hidden)]
pub mod wasm;
