//! A mounted, trusted project (`Project`): its extensions started and awaited,
//! its one registry of tools listed, discovery's offer made, its runs started,
//! and closed in order.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::{PlatformError, Run, RunOptions};
use crate::extension::ExtensionStatus;
use crate::policy::approvals::ApprovalStore;
use crate::registry::{SystemPrompt, ToolInfo};
use crate::run::RunContext;
use crate::scope::ProjectScope;

/// A mounted, trusted project: one registry of native, WASM and MCP tools,
/// shared by its runs.
pub struct Project {
    pub(super) scope: Arc<ProjectScope>,
    /// Tools of servers not started for this command, from the records of their last listing
    /// (`StartFilter::Search`): searched beside the registered ones.
    pub(super) kept: Vec<ToolInfo>,
}

impl Project {
    /// The project's canonical root.
    pub fn root(&self) -> &Path {
        self.scope.root()
    }

    /// Start the extensions in the background (the agent stays interactive);
    /// the first run waits for them at most the 20 s initial surface.
    pub fn start_extensions(&self) {
        self.scope.start_extensions();
    }

    /// Start the extensions and wait for each (within its own handshake and
    /// listing bounds); their statuses.
    pub async fn load_extensions(&self) -> Vec<ExtensionStatus> {
        self.scope.load_extensions().await
    }

    /// The MCP servers only, waited for: their statuses (`clat mcp`).
    pub async fn load_mcp_servers(&self) -> Vec<ExtensionStatus> {
        self.scope.load_mcp_servers().await
    }

    /// Wait, at most `wait`, for the extensions started in the background; true when all are up.
    pub async fn wait_for_extensions(&self, wait: Duration) -> bool {
        self.scope.wait_for_initial_surface(wait).await
    }

    /// Wait for the initial surface as the first run does (at most `INITIAL_SURFACE_WAIT`, once for the project:
    /// the runs after it start at once), report what missed it, and freeze the registry.
    pub async fn settle(&self) {
        self.scope.settle_initial_surface(crate::limits::INITIAL_SURFACE_WAIT).await;
    }

    /// Every registered tool, with its source, effect, description and input
    /// schema: what a model is offered.
    pub fn tools(&self) -> Vec<ToolInfo> {
        self.scope.registry().list()
    }

    /// The `limit` tools that best match `query`, best first (`clat tools
    /// --search`): the registered ones and, mounted with
    /// `StartFilter::Search`, those of the servers it did not start, from
    /// their last listing.
    pub fn search_tools(&self, query: &str, limit: usize) -> Vec<crate::registry::ToolMatch> {
        self.index().search(query, limit)
    }

    /// `search_tools`' first answer to `query` over what `search_tools` looks
    /// through: `limit` matches and the extensions that match best, with their
    /// other tools' names, within `SEARCH_ANSWER_MAX_BYTES`.
    pub fn search_answer(&self, query: &str, limit: usize) -> crate::registry::SearchAnswer {
        self.index().answer(query, limit, |_| false)
    }

    /// The search over what `searched_tools` looks through, with the requests kept for them (`enrichment.rs`).
    fn index(&self) -> crate::registry::ToolIndex {
        let tools = self.searched_tools();
        let requests = super::enrichment::kept_requests(self.scope.home(), &tools);
        crate::registry::ToolIndex::with_requests(tools, &requests)
    }

    /// Search enrichment (`enrichment.rs`): ask `model` for a few requests in a user's words for each tool a
    /// search looks through whose definition has none kept, and keep them in the home; `progress` is told each
    /// tool asked. Later searches — `clat tools --search`, `search_tools` — read them.
    pub async fn enrich_search(
        &self,
        model: &dyn crate::services::model::ModelProvider,
        progress: &dyn Fn(&str),
    ) -> Result<super::enrichment::Enrichment, PlatformError> {
        let tools = self.searched_tools();
        Ok(super::enrichment::enrich(self.scope.home(), &tools, model, progress).await?)
    }

    /// What a search of this project looks through: the registered tools, and
    /// the kept ones of servers that were not started because this command
    /// did not need them (not a disabled or unapproved server's).
    fn searched_tools(&self) -> Vec<ToolInfo> {
        let mut tools = self.tools();
        if self.kept.is_empty() {
            return tools;
        }
        let extensions = self.extensions();
        let not_needed = |server: &str| {
            extensions.iter().any(|e| e.kind.is_mcp() && e.name == server && crate::scope::not_needed(e))
        };
        let kept = self.kept.iter().filter(|t| {
            matches!(&t.source, crate::registry::ToolSource::Mcp { server, .. } if not_needed(server))
                && !tools.iter().any(|registered| registered.name == t.name)
        });
        let kept: Vec<ToolInfo> = kept.cloned().collect();
        tools.extend(kept);
        tools
    }

    /// How a table of queries fares against the registered tools' search: each
    /// case's rank, Recall@5 and @10, MRR, and whether `search_tools`' first
    /// answer (a page of `page` matches and the best extensions' tool names)
    /// names the case's tool.
    pub fn evaluate_search(
        &self,
        cases: &[crate::registry::SearchCase],
        page: usize,
    ) -> crate::registry::SearchEvaluation {
        self.index().evaluate(cases, page)
    }

    /// What the registered tools' definitions cost a model, in all and by extension.
    pub fn tool_costs(&self) -> crate::registry::SchemaTotals {
        crate::registry::schema_totals(&self.tools())
    }

    /// How to offer the tools to a model (`discovery.rs`): all of them, or — past `options`' budget, or with
    /// deferred ones — the native and pinned ones and a search. The extensions' own settings (`always_load`,
    /// `defer_loading`) join `options`. Freezes the registry first, so the offer is of the tools that stay.
    pub fn discovery(
        &self,
        options: &crate::platform::discovery::DiscoveryOptions,
    ) -> crate::platform::discovery::Discovery {
        self.freeze();
        let tools = self.tools();
        let options = options.clone().with_settings(&tools, &self.extensions());
        let requests = super::enrichment::kept_requests(self.scope.home(), &tools);
        crate::platform::discovery::Discovery::with_requests(tools, &options, &requests)
    }

    /// What each extension did so far: its state, tools, problems, output tail.
    pub fn extensions(&self) -> Vec<ExtensionStatus> {
        self.scope.extensions()
    }

    /// The system-prompt contributions of the project's servers (DSH prompts).
    pub fn system_prompts(&self) -> Vec<SystemPrompt> {
        self.scope.system_prompts()
    }

    /// Start a run: it waits for the extensions started in the background at
    /// most the 20 s initial surface, then the registry freezes for the
    /// project's lifetime. The run's kept approvals are this project's.
    pub async fn start_run(&self, options: RunOptions) -> Result<Run, PlatformError> {
        let mut builder = RunContext::builder()
            .mode(options.mode)
            .approver(options.approver)
            .asker(options.asker)
            .events(options.events);
        // A mode that never asks has no use for the kept approvals: their file is not read.
        if options.keep_approvals && crate::policy::permissions::mode_asks(options.mode) {
            builder = builder.approvals(Arc::new(ApprovalStore::open(self.scope.home(), self.scope.root())?));
        }
        if let Some(deadline) = options.deadline {
            builder = builder.deadline(deadline);
        }
        if let Some(model) = options.model {
            builder = builder.model(model);
        }
        if let Some(budget) = options.budget {
            builder = builder.budget(budget);
        }
        let context = self.scope.start_run_when_ready(builder).await;
        Ok(Run { context, scope: Arc::clone(&self.scope) })
    }

    /// Freeze the registry now, without a run: a listing (`clat tools`) takes
    /// no registration that arrives after it.
    pub fn freeze(&self) {
        self.scope.registry().freeze();
    }

    /// The extensions that were still starting when the registry froze.
    pub fn missed_initial_surface(&self) -> Vec<ExtensionStatus> {
        self.scope.missed_initial_surface()
    }

    /// Close the project: every extension's tools are withdrawn, then it is
    /// closed (a server's stdin, a grace, its process group killed and reaped).
    pub async fn close(&self) {
        self.scope.close().await;
    }

    /// The registered name of the tool a caller wrote `written`: its registered
    /// name (a quarantined tool's too, to be refused with what changed), or
    /// its own or normalized name when exactly one tool has it. Otherwise why
    /// not: several tools have it, the extension that would own it failed or
    /// was not started (with why), or none has it (with the nearest name).
    pub fn resolve_tool(&self, written: &str) -> Result<String, ToolNameError> {
        let tools = self.tools();
        if tools.iter().any(|t| t.name == written) || self.scope.registry().quarantined(written).is_some() {
            return Ok(written.to_string());
        }
        let owning: Vec<String> = tools.iter().filter(|t| t.is_named(written)).map(|t| t.name.clone()).collect();
        match owning.len() {
            1 => return Ok(owning[0].clone()),
            0 => {}
            _ => return Err(ToolNameError::Ambiguous { written: written.to_string(), tools: owning }),
        }
        // A quarantined tool by its server's own name: its registered name, refused with what changed.
        if let Some(registered) = self.scope.registry().quarantined_named(written) {
            return Ok(registered);
        }
        // A tool of an extension that failed to start, or was not started (disabled, a project server not approved
        // yet): say why it is missing (a server that needs a login says how to log in).
        use crate::extension::ExtensionState::{Configured, Failed};
        let missing = self.extensions().into_iter().find(|e| {
            (e.state == Failed || (e.state == Configured && !e.problems.is_empty()))
                && crate::names::may_own(e.kind.external_kind(), &e.name, written)
        });
        if let Some(extension) = missing {
            return Err(ToolNameError::ExtensionDown {
                written: written.to_string(),
                why: extension.problems.first().cloned().unwrap_or_else(|| "it did not start".into()),
                failed: extension.state == Failed,
                extension: extension.name,
            });
        }
        let normalized: Vec<String> = tools.iter().map(|t| crate::names::normalize_segment(&t.original_name)).collect();
        let known = tools
            .iter()
            .zip(&normalized)
            .map(|(t, normalized)| (t.name.as_str(), vec![t.name.as_str(), &t.original_name, normalized]));
        let nearest = crate::names::nearest(written, known).map(str::to_string);
        // A short name may be a tool of a server that was not started (a project's not approved): say which, and why.
        let unstarted: Vec<ExtensionStatus> = self
            .extensions()
            .into_iter()
            .filter(|e| e.state == Configured && e.kind.is_mcp() && !e.problems.is_empty())
            .filter(|e| !crate::scope::not_needed(e))
            .collect();
        let not_started = unstarted.first().map(|first| {
            let names: Vec<&str> = unstarted.iter().map(|e| e.name.as_str()).collect();
            format!("it may be a tool of {}, not started: {}", names.join(", "), first.problems[0])
        });
        Err(ToolNameError::Unknown { written: written.to_string(), nearest, not_started })
    }

    /// Why the tool registered as `name` is quarantined (its definition
    /// changed since it was pinned: what changed, and the command that accepts
    /// it), if it is.
    pub fn quarantine(&self, name: &str) -> Option<crate::registry::Quarantine> {
        self.scope.registry().quarantined(name)
    }

    /// The project's parts (registry, services, extensions), for the command line and tests.
    pub(crate) fn scope(&self) -> &Arc<ProjectScope> {
        &self.scope
    }
}

/// Why a name a caller wrote names no registered tool (`Project::resolve_tool`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    /// It is the own name of several tools.
    #[error("{written:?} is the own name of several tools ({}); call one of them by its registered name", tools.join(", "))]
    Ambiguous {
        /// The name as written.
        written: String,
        /// The registered names of the tools that have it.
        tools: Vec<String>,
    },
    /// The extension that would own it failed (`failed`) or was not started.
    #[error(
        "{written:?} would be a tool of {extension}, which {}: {why}",
        if *failed { "failed" } else { "was not started" }
    )]
    ExtensionDown {
        /// The name as written.
        written: String,
        /// The extension that would own it.
        extension: String,
        /// It failed (else it was not started: disabled, or a project server not approved).
        failed: bool,
        /// Why, as its status says.
        why: String,
    },
    /// No tool has it; `nearest` is a registered name close to it.
    #[error(
        "unknown tool {written:?}; {}{}",
        match nearest {
            Some(close) => format!("did you mean {close:?}? (`clat tools` lists the registered tools)"),
            None => "`clat tools` lists the registered tools".to_string(),
        },
        not_started.as_ref().map(|n| format!("; {n}")).unwrap_or_default()
    )]
    Unknown {
        /// The name as written.
        written: String,
        /// A registered name close to it.
        nearest: Option<String>,
        /// The servers that were not started (disabled, a project's not approved), which may have it, and why.
        not_started: Option<String>,
    },
}
