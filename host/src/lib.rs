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

pub mod platform;

pub use contract::{ContentBlock, Effect, PermissionMode, ToolOutput};
pub use extension::Login;
pub use extension::{
    AlwaysLoad, ExtensionKind, ExtensionState, ExtensionStatus, Loading, LoadingSettings, StartFilter,
};
pub use home::HomeError;
pub use home::trust::canonical_project;
pub use mcp::config_file::EditError;
pub use mcp::from_registry::{Needed, RegistryError, RegistryServer, Source as RegistrySource, Via};
pub use mcp::inputs::Input as ServerInput;
pub use mcp::project_servers::ProjectServersReview;
pub use native::NATIVE_TOOL_NAMES;
pub use native::process::SandboxPolicy;
pub use platform::discovery::{Discovery, DiscoveryOptions};
pub use platform::enrichment::Enrichment;
pub use platform::{MountOptions, MountQuestions, Platform, PlatformError, Project, Run, RunOptions};
pub use policy::approvals::StoredApproval;
pub use policy::identity::Identity;
pub use policy::permissions::{Approval, ApprovalRequest, Approver, HeadlessApprover, TerminalApprover};
pub use policy::pins::Quarantined;
pub use registry::{
    CallError, ExtensionSchemas, Quarantine, RegistrationError, SCHEMA_BYTES_PER_TOKEN, SchemaSize, SchemaTotals,
    SearchCase, SearchEvaluation, SystemPrompt, ToolInfo, ToolMatch, ToolSource,
};
pub use run::{CollectingSink, EventSink, JsonLinesSink, NullSink, RunEvent, RunEventKind};
pub use scope::ScopeError;
pub use serve::{ServeError, ServeOptions, ServedNames, serve_project};
pub use services::asker::{HeadlessAsker, TerminalAsker, UserAsker};
pub use services::sampling::ModelProvider;
pub use supply::capabilities::Capabilities;
pub use supply::oci::OciError;
pub use supply::packages::{Installed, Manifest, OCI_SCHEME, PackageError, PackageKind, PackageSource};
pub use wasm::cache::{COMPILE_PROGRESS_AFTER, CacheSweep, CompileObserver, CompileProgress};

#[doc(hidden)]
pub mod audit;
#[doc(hidden)]
pub mod authoring;
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod contract;
#[doc(hidden)]
pub mod extension;
#[doc(hidden)]
pub mod home;
#[doc(hidden)]
pub mod limits;
#[doc(hidden)]
pub mod mcp;
#[doc(hidden)]
pub mod names;
#[doc(hidden)]
pub mod native;
#[doc(hidden)]
pub mod policy;
#[doc(hidden)]
pub mod redact;
#[doc(hidden)]
pub mod registry;
#[doc(hidden)]
pub mod run;
#[doc(hidden)]
pub mod scope;
#[doc(hidden)]
pub mod serve;
#[doc(hidden)]
pub mod services;
#[doc(hidden)]
pub mod supply;
#[doc(hidden)]
pub mod sync;
#[doc(hidden)]
pub mod wasm;
