//! One run (`Run`) and how it is started (`RunOptions`): its calls share a
//! mode, an approver, an asker, a sampling budget, a cancel token and an event
//! stream; every call goes through the one pipeline.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::contract::{PermissionMode, ToolOutput};
use crate::policy::permissions::{Approver, HeadlessApprover};
use crate::registry::CallError;
use crate::run::{EventSink, NullSink, RunContext};
use crate::scope::ProjectScope;
use crate::services::asker::{HeadlessAsker, UserAsker};

/// How a run is started.
pub struct RunOptions {
    /// The permission mode (default: `ask`).
    pub mode: PermissionMode,
    /// Who answers `ask` (default: deny, saying how to allow: headless).
    pub approver: Arc<dyn Approver>,
    /// Who answers extensions' forms (default: none; elicitation fails as unsupported).
    pub asker: Arc<dyn UserAsker>,
    /// Where the run's events go (default: nowhere).
    pub events: Arc<dyn EventSink>,
    /// Whether the project's kept approvals answer and "always" is kept (default: yes).
    pub keep_approvals: bool,
    /// Ends the run's calls this long after it starts (default: none; each call still has its 120 s).
    pub deadline: Option<Duration>,
    /// Where the run's sampling goes (default: the project's session model, `MountOptions::model`).
    pub model: Option<Arc<dyn crate::services::sampling::ModelProvider>>,
    /// The sampling budget the run charges (default: one of its own, `SAMPLING_REQUESTS_PER_RUN` requests);
    /// runs given the same one charge it together (a served session's calls).
    pub budget: Option<Arc<crate::services::budget::SamplingBudget>>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            mode: PermissionMode::Ask,
            approver: Arc::new(HeadlessApprover),
            asker: Arc::new(HeadlessAsker),
            events: Arc::new(NullSink),
            keep_approvals: true,
            deadline: None,
            model: None,
            budget: None,
        }
    }
}

/// One run: its calls share a mode, an approver, a sampling budget, a cancel
/// token and an event stream. Finishing it (or dropping it) kills the process
/// groups it still owns and tells the extensions the run is over.
pub struct Run {
    pub(super) context: RunContext,
    pub(super) scope: Arc<ProjectScope>,
}

impl Run {
    /// The run's id, as in its events.
    pub fn id(&self) -> &str {
        self.context.run_id()
    }

    /// Call the registered tool `tool` with `arguments` through the whole
    /// pipeline: its schema, the mode and the approver, the deadline, the
    /// cancel token, the events.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<ToolOutput, CallError> {
        self.scope.registry().call(tool, arguments, &self.context).await
    }

    /// Cancel the run: calls in flight end as cancelled, its processes die.
    pub fn cancel(&self) {
        self.context.cancel();
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.context.is_cancelled()
    }

    /// The run's context, for the parts of the crate that take one.
    pub fn context(&self) -> &RunContext {
        &self.context
    }

    /// End the run (also done when it is dropped): `run_finished`, its
    /// process groups killed, the extensions told.
    pub fn finish(self) {}
}

impl crate::platform::discovery::ToolCaller for Run {
    fn call(
        &self,
        tool: &str,
        arguments: Value,
    ) -> impl std::future::Future<Output = Result<ToolOutput, CallError>> + Send {
        Run::call(self, tool, arguments)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.scope.finish_run(&self.context);
    }
}
