//! The active session model for extension sampling: the `ModelProvider` port
//! (what a model answered, and the deterministic offline model), an OpenAI-compatible
//! chat-completions provider over reqwest, configured in `$CLAT_HOME/config.json`
//! or the environment, and the choice between it and the deterministic offline
//! model. The API key is held in memory only and never appears in a log, an
//! event or an error (error bodies are redacted and bounded).

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::contract::{Role, SamplingRequest};
use crate::home::{Bound, ClatHome, Document, HomeError};
use crate::limits::{MODEL_ERROR_BODY_MAX_CHARS, TOOL_CALL_TIMEOUT};
use crate::redact::redact;

/// What a provider answered, with its usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The answer's text.
    pub text: String,
    /// The model that answered, as it named itself.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, …), when it says.
    pub stop_reason: Option<String>,
    /// The tokens it read, as it reports them (they reconcile the run's budget).
    pub input_tokens: u32,
    /// The tokens it wrote.
    pub output_tokens: u32,
}

/// The active session model.
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// The model's name as reported to plugins.
    fn model(&self) -> String;
    /// One completion for an already-gated request.
    async fn complete(&self, request: &SamplingRequest) -> anyhow::Result<Completion>;
}

/// A deterministic offline model for the demo and tests: it answers with a
/// short digest of the conversation, and reports usage at four characters a token.
#[derive(Debug, Default, Clone)]
pub struct OfflineProvider;

#[async_trait]
impl ModelProvider for OfflineProvider {
    fn model(&self) -> String {
        "clat-offline-1".into()
    }

    async fn complete(&self, request: &SamplingRequest) -> anyhow::Result<Completion> {
        let last = request.messages.iter().rev().find(|m| m.role == Role::User).map_or("", |m| m.text.as_str());
        let words: Vec<&str> = last.split_whitespace().collect();
        let mut text = format!(
            "[offline model] {} message(s), {} word(s) in the last request; it begins: {}",
            request.messages.len(),
            words.len(),
            words.iter().take(12).copied().collect::<Vec<_>>().join(" ")
        );
        let budget_chars = request.max_tokens as usize * 4;
        if text.chars().count() > budget_chars {
            text = text.chars().take(budget_chars).collect();
        }
        let (input_tokens, output_tokens) = estimated_usage(request, &text);
        Ok(Completion { output_tokens, input_tokens, text, model: self.model(), stop_reason: Some("endTurn".into()) })
    }
}

/// The tokens of a request and its answer at four characters a token: for a
/// model that reports no usage (the offline one, an MCP client's model).
pub fn estimated_usage(request: &SamplingRequest, answer: &str) -> (u32, u32) {
    let input_chars: usize = request.system_prompt.as_deref().map_or(0, |s| s.chars().count())
        + request.messages.iter().map(|m| m.text.chars().count()).sum::<usize>();
    ((input_chars as u32).div_ceil(4), (answer.chars().count() as u32).div_ceil(4))
}

/// The configuration file inside `$CLAT_HOME`.
pub const CONFIG_FILE: &str = "config.json";
/// Environment overrides.
pub const ENV_BASE_URL: &str = "CLAT_MODEL_BASE_URL";
pub const ENV_MODEL: &str = "CLAT_MODEL";
pub const ENV_API_KEY: &str = "CLAT_MODEL_API_KEY";

/// `config.json` → `model`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// e.g. `https://api.openai.com/v1` (the provider posts to `{base_url}/chat/completions`).
    pub base_url: Option<String>,
    /// The model name sent to the provider.
    pub model: Option<String>,
    /// The name of the environment variable holding the API key (default `CLAT_MODEL_API_KEY`).
    pub api_key_env: Option<String>,
}

/// `config.json`, which the user writes (CLAT only reads it).
#[derive(Debug, Default, Serialize, Deserialize)]
struct ConfigFile {
    /// None written (0), or 1.
    #[serde(default)]
    version: u32,
    #[serde(default)]
    model: Option<ModelConfig>,
}

crate::versioned_record!(ConfigFile, 0..=1);

const CONFIG: Document<ConfigFile> = Document::new(CONFIG_FILE, Bound::Config);

/// Why the model configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ModelConfigError {
    /// `config.json` cannot be read, or is malformed.
    #[error(transparent)]
    Config(#[from] HomeError),
    #[error("the model configuration has a base URL but no model name (set `model` in config.json or {ENV_MODEL})")]
    NoModel,
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// The configured session model and its credentials (`None`: the offline model).
#[derive(Clone)]
pub struct ActiveModel {
    pub base_url: String,
    pub model: String,
    /// Held in memory only.
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ActiveModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveModel")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

/// The session model from `config.json` and the environment: a base URL
/// (`CLAT_MODEL_BASE_URL` or the file) makes it a remote model.
pub fn active_model(
    home: &ClatHome,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<ActiveModel>, ModelConfigError> {
    let file = CONFIG.read(home)?;
    let config = file.model.unwrap_or_default();
    let Some(base_url) = env(ENV_BASE_URL).or(config.base_url) else { return Ok(None) };
    let model = env(ENV_MODEL).or(config.model).ok_or(ModelConfigError::NoModel)?;
    let key_var = config.api_key_env.unwrap_or_else(|| ENV_API_KEY.to_string());
    let api_key = env(&key_var).filter(|k| !k.is_empty());
    Ok(Some(ActiveModel { base_url, model, api_key }))
}

/// The provider for a session model: OpenAI-compatible for a remote model, otherwise the offline model.
pub fn provider_for(model: Option<&ActiveModel>) -> Result<std::sync::Arc<dyn ModelProvider>, ModelConfigError> {
    Ok(match model {
        None => std::sync::Arc::new(OfflineProvider),
        Some(m) => std::sync::Arc::new(OpenAiCompatible::new(&m.base_url, &m.model, m.api_key.clone())?),
    })
}

/// The provider to use: OpenAI-compatible when a base URL is configured (file or
/// environment), otherwise the offline model.
pub fn provider_from_config(
    home: &ClatHome,
    env: impl Fn(&str) -> Option<String>,
) -> Result<std::sync::Arc<dyn ModelProvider>, ModelConfigError> {
    provider_for(active_model(home, env)?.as_ref())
}

/// An OpenAI-compatible `/chat/completions` endpoint.
pub struct OpenAiCompatible {
    client: reqwest::Client,
    endpoint: String,
    model: String,
    api_key: Option<String>,
}

impl std::fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[REDACTED]"))
            .finish()
    }
}

impl OpenAiCompatible {
    pub fn new(base_url: &str, model: &str, api_key: Option<String>) -> Result<Self, ModelConfigError> {
        let client = reqwest::Client::builder()
            .timeout(TOOL_CALL_TIMEOUT)
            .connect_timeout(crate::limits::MODEL_CONNECT_TIMEOUT)
            .build()
            .map_err(|e| ModelConfigError::Client(e.to_string()))?;
        Ok(OpenAiCompatible {
            client,
            endpoint: format!("{}/chat/completions", base_url.trim_end_matches('/')),
            model: model.to_string(),
            api_key,
        })
    }

    /// The request body for a gated sampling request.
    pub fn body(&self, request: &SamplingRequest) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &request.system_prompt {
            messages.push(json!({ "role": "system", "content": system }));
        }
        for m in &request.messages {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            messages.push(json!({ "role": role, "content": m.text }));
        }
        let mut body = json!({ "model": self.model, "messages": messages, "max_tokens": request.max_tokens });
        if let Some(t) = request.temperature {
            body["temperature"] = crate::contract::json::f32_to_json(t);
        }
        if !request.stop_sequences.is_empty() {
            body["stop"] = json!(request.stop_sequences);
        }
        body
    }
}

fn bounded(text: &str) -> String {
    let redacted = redact(text);
    let mut cut: String = redacted.chars().take(MODEL_ERROR_BODY_MAX_CHARS).collect();
    if redacted.chars().count() > MODEL_ERROR_BODY_MAX_CHARS {
        cut.push('…');
    }
    cut
}

#[async_trait]
impl ModelProvider for OpenAiCompatible {
    fn model(&self) -> String {
        self.model.clone()
    }

    async fn complete(&self, request: &SamplingRequest) -> anyhow::Result<Completion> {
        let mut http = self.client.post(&self.endpoint).json(&self.body(request));
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key);
        }
        let response = http.send().await.map_err(|e| anyhow::anyhow!("{}", bounded(&e.without_url().to_string())))?;
        let status = response.status();
        // An answer is read within its bound, whatever the endpoint sends or declares.
        let limit = crate::limits::MODEL_RESPONSE_MAX_BYTES;
        let body = crate::supply::download::bounded_body(response, limit).await.map_err(|e| match e {
            crate::supply::download::BodyError::TooLarge => anyhow::anyhow!(
                "the model endpoint's answer is over {} MiB (MODEL_RESPONSE_MAX_BYTES); nothing of it was used",
                limit / (1024 * 1024)
            ),
            crate::supply::download::BodyError::Read(why) => {
                anyhow::anyhow!("reading the response failed: {}", bounded(&why))
            }
        })?;
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            anyhow::bail!("the model endpoint answered {status}: {}", bounded(&text));
        }
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("the model endpoint's answer is not JSON ({e}): {}", bounded(&text)))?;
        let choice = &v["choices"][0];
        let content = choice["message"]["content"]
            .as_str()
            .ok_or_else(|| anyhow::anyhow!("the model endpoint's answer has no choices[0].message.content"))?;
        let stop_reason = choice["finish_reason"].as_str().map(|r| match r {
            "stop" => "endTurn".to_string(),
            "length" => "maxTokens".to_string(),
            other => other.to_string(),
        });
        let usage = |key: &str| v["usage"][key].as_u64().and_then(|n| u32::try_from(n).ok());
        let input_chars: usize = request.system_prompt.as_deref().map_or(0, |s| s.chars().count())
            + request.messages.iter().map(|m| m.text.chars().count()).sum::<usize>();
        Ok(Completion {
            text: content.to_string(),
            model: v["model"].as_str().unwrap_or(&self.model).to_string(),
            stop_reason,
            // Without reported usage, estimate so the budget still moves.
            input_tokens: usage("prompt_tokens").unwrap_or((input_chars as u32).div_ceil(4)),
            output_tokens: usage("completion_tokens").unwrap_or((content.chars().count() as u32).div_ceil(4)),
        })
    }
}
