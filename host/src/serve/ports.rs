//! What a served call asks the client that made it, through the run's ports:
//! an approval as a form (`ServeApprover`), an extension's sampling through the
//! client's model when it offers sampling (`ClientModel`), and an extension's
//! forms and questions to the client's user (`ClientAsker`).

use std::sync::Arc;

use async_trait::async_trait;
use clat_mcp::server::Peer;
use serde_json::{Value, json};

use crate::contract::ElicitationForm;
use crate::policy::permissions::{Approval, ApprovalRequest, Approver, Remember, effect_with_reason, how_to_allow};
use crate::services::asker::{Answer, AskError, Question, UserAsker};
use crate::services::sampling::{Completion, ModelProvider};

/// Who answers a call that needs approval under `clat serve`: the client's
/// user, through a form, when the client declared form elicitation; else
/// nobody (the session's stdin is the protocol), so it is denied at once,
/// with the ways to allow it beforehand (a mode, `clat approvals allow`).
pub(super) struct ServeApprover {
    pub(super) client: Arc<Peer>,
}

/// The form's choices: its field, and the values with their labels.
const DECISION: &str = "decision";
const ALLOW_ONCE: &str = "allow";
const ALLOW_ALWAYS: &str = "always";
const DENY: &str = "deny";

impl ServeApprover {
    fn name(&self) -> &str {
        &self.client.info().name
    }

    /// What the request is, as the form and the denials say it.
    fn what(request: &ApprovalRequest) -> String {
        let asked_by = request.asked_by.as_deref().map(|who| format!(" (asked for by {who})")).unwrap_or_default();
        format!("{} ({}){asked_by}", request.tool, effect_with_reason(request.effect, &request.effect_reason))
    }

    /// `elicitation/create` for `request`: the tool, its effect and why, who asks, the complete arguments.
    fn form(request: &ApprovalRequest) -> Value {
        let arguments = crate::redact::redact(&request.arguments.to_string());
        let mut choices = vec![(ALLOW_ONCE, "Allow once")];
        if request.can_remember {
            choices.push((ALLOW_ALWAYS, "Always allow this tool in this project"));
        }
        choices.push((DENY, "Deny"));
        json!({
            "mode": "form",
            "message": format!(
                "CLAT asks: allow {} in mode {}? Arguments: {arguments}",
                Self::what(request),
                request.mode
            ),
            "requestedSchema": {
                "type": "object",
                "properties": { DECISION: {
                    "type": "string",
                    "title": "Decision",
                    "enum": choices.iter().map(|(value, _)| *value).collect::<Vec<_>>(),
                    "enumNames": choices.iter().map(|(_, label)| *label).collect::<Vec<_>>(),
                } },
                "required": [DECISION],
            },
        })
    }
}

#[async_trait]
impl Approver for ServeApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if !self.client.elicits_forms() {
            return Approval::Denied(format!(
                "{} needs approval in mode {} and the client {} cannot give one through clat serve (it declared no \
                 form elicitation); {}, or keep an approval of it beforehand (`clat approvals allow {}`: kept \
                 approvals apply here)",
                Self::what(request),
                request.mode,
                self.name(),
                how_to_allow(request.effect, false).replace("run with --mode", "serve with --mode"),
                request.tool,
            ));
        }
        match self.client.request("elicitation/create", Self::form(request)).await {
            Ok(answer) if answer["action"] == "accept" => match answer["content"][DECISION].as_str() {
                Some(ALLOW_ONCE) => Approval::Approved,
                Some(ALLOW_ALWAYS) => Approval::Always(Remember::Tool),
                _ => Approval::Denied(format!("the user of {} denied {}", self.name(), Self::what(request))),
            },
            Ok(answer) => Approval::Denied(format!(
                "the user of {} did not approve {} (the form was {})",
                self.name(),
                Self::what(request),
                if answer["action"] == "decline" { "declined" } else { "dismissed" }
            )),
            Err(e) => Approval::Denied(format!(
                "{} could not be asked to approve {}: {}",
                self.name(),
                request.tool,
                e.message
            )),
        }
    }
}

/// A call's model under `clat serve`: the calling client's (`sampling/createMessage`) when it declared
/// sampling, else the configured one. An extension's request reaches it only after the three gates and the
/// shared budget.
pub(super) struct ClientModel {
    pub(super) client: Arc<Peer>,
    pub(super) configured: Arc<dyn ModelProvider>,
}

impl ClientModel {
    /// The client, when it offers sampling.
    fn sampling_client(&self) -> Option<&Peer> {
        Some(self.client.as_ref()).filter(|client| client.samples())
    }
}

#[async_trait]
impl ModelProvider for ClientModel {
    fn model(&self) -> String {
        match self.sampling_client() {
            Some(client) => format!("the model of {}", client.info().name),
            None => self.configured.model(),
        }
    }

    async fn complete(&self, request: &crate::contract::SamplingRequest) -> anyhow::Result<Completion> {
        let Some(client) = self.sampling_client() else { return self.configured.complete(request).await };
        let params = crate::contract::json::sampling_request_to_json(request);
        let result = client.forward("sampling/createMessage", params).await.map_err(|e| anyhow::anyhow!(e.message))?;
        let (text, model, stop_reason) = crate::contract::json::create_message_result_from_json(&result)?;
        let (input_tokens, output_tokens) = crate::services::sampling::estimated_usage(request, &text);
        Ok(Completion { text, model, stop_reason, input_tokens, output_tokens })
    }
}

/// Questions for the user under `clat serve`: an extension's form goes to the
/// client's user whole, a single question (`UserAsker::ask`) as a one-field form, when the
/// client declared form elicitation; else they are unanswerable.
pub(super) struct ClientAsker {
    pub(super) client: Arc<Peer>,
}

/// The one field of a question's form.
const ANSWER: &str = "answer";

impl ClientAsker {
    /// Unless the client takes forms: why it cannot be asked.
    fn check_elicits_forms(&self) -> Result<(), AskError> {
        if self.client.elicits_forms() {
            return Ok(());
        }
        let name = &self.client.info().name;
        Err(AskError::Unavailable(format!("the client {name} cannot be asked (it declared no form elicitation)")))
    }

    /// Send `form` (`elicitation/create` params), an extension's question: the content of an accepted answer,
    /// or why there is none.
    async fn elicit(&self, form: Value) -> Result<serde_json::Map<String, Value>, AskError> {
        let answer =
            self.client.forward("elicitation/create", form).await.map_err(|e| AskError::Unavailable(e.message))?;
        match answer["action"].as_str() {
            Some("accept") => Ok(answer["content"].as_object().cloned().unwrap_or_default()),
            Some("decline") => Err(AskError::Declined),
            _ => Err(AskError::Cancelled),
        }
    }
}

#[async_trait]
impl UserAsker for ClientAsker {
    async fn ask_form(&self, form: &ElicitationForm) -> Option<Result<serde_json::Map<String, Value>, AskError>> {
        if let Err(unavailable) = self.check_elicits_forms() {
            return Some(Err(unavailable));
        }
        Some(self.elicit(crate::contract::json::elicitation_form_to_json(form)).await)
    }

    async fn ask(&self, question: &Question) -> Result<Answer, AskError> {
        self.check_elicits_forms()?;
        let (prompt, mut field) = match question {
            Question::Text { prompt, default } => (prompt, json!({ "type": "string", "default": default })),
            Question::YesNo { prompt, default } => (prompt, json!({ "type": "boolean", "default": default })),
            Question::Choice { prompt, options, .. } => (
                prompt,
                json!({ "type": "string",
                        "enum": options.iter().map(|o| o.value.as_str()).collect::<Vec<_>>(),
                        "enumNames": options.iter().map(|o| o.title.as_str()).collect::<Vec<_>>() }),
            ),
        };
        if field["default"].is_null() {
            field.as_object_mut().map(|f| f.remove("default"));
        }
        let form = json!({ "mode": "form", "message": prompt, "requestedSchema": {
            "type": "object", "properties": { ANSWER: field }, "required": [ANSWER] } });
        let content = self.elicit(form).await?;
        let given = content.get(ANSWER).unwrap_or(&Value::Null);
        let unusable = || AskError::Unavailable(format!("the client's answer {given} does not fit the question"));
        match question {
            Question::Text { .. } => given.as_str().map(|t| Answer::Text(t.to_string())).ok_or_else(unusable),
            Question::YesNo { .. } => given.as_bool().map(Answer::YesNo).ok_or_else(unusable),
            Question::Choice { options, .. } => {
                let chosen = given.as_str().and_then(|v| options.iter().position(|o| o.value == v));
                chosen.map(Answer::Choice).ok_or_else(unusable)
            }
        }
    }
}
