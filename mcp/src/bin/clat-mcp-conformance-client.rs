//! `clat-mcp-conformance-client URL`: the client the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`, client mode) drives. It reads
//! the scenario from `MCP_CONFORMANCE_SCENARIO`, the protocol revision from
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` (2026-07-28: the modern era; otherwise a
//! legacy session), and for `http-custom-headers` the calls to make from
//! `MCP_CONFORMANCE_CONTEXT`, then does what a user of `clat-mcp` would: open a
//! session, list, call. Server requests are answered like CLAT's host does in
//! shape: elicitation forms are accepted with their defaults, sampling gets a
//! fixed text, roots are empty. For the `auth/*` scenarios the session runs
//! on `clat_mcp::auth` as CLAT's would, with tokens kept in memory, the suite's
//! Client ID Metadata Document URL, the pre-registered client or client
//! credentials the suite passes in `MCP_CONFORMANCE_CONTEXT`, and a scripted
//! browser that delivers the authorization server's (automatic) redirect to
//! the loopback listener.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use clat_mcp::auth::{Authorizer, Grant, MemoryStore, OAuthSettings, ScriptedBrowser};
use clat_mcp::{ClientError, ClientInfo, HttpSpec, Opening, ServerRequests, Session, Target, WireError};
use serde_json::{Map, Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

/// The Client ID Metadata Document URL the suite's `auth/basic-cimd` expects.
const CIMD_URL: &str = "https://conformance-test.local/client-metadata.json";

/// Answers what the mock servers ask.
struct Answers;

#[async_trait]
impl ServerRequests for Answers {
    async fn handle(&self, method: &str, params: Option<Value>, _related: Option<u64>) -> Result<Value, WireError> {
        let params = params.unwrap_or(Value::Null);
        match method {
            "elicitation/create" => Ok(json!({ "action": "accept", "content": form_defaults(&params) })),
            "sampling/createMessage" => Ok(json!({
                "role": "assistant",
                "content": { "type": "text", "text": "a conformance answer" },
                "model": "clat-conformance",
                "stopReason": "endTurn",
            })),
            "roots/list" => Ok(json!({ "roots": [] })),
            _ => Err(WireError::new(clat_mcp::jsonrpc::METHOD_NOT_FOUND, format!("method not found: {method}"))),
        }
    }
}

/// A form's answers: each property's default, or a plain value of its type.
fn form_defaults(params: &Value) -> Value {
    let mut content = Map::new();
    if let Some(properties) = params.pointer("/requestedSchema/properties").and_then(Value::as_object) {
        for (name, schema) in properties {
            let value = match schema.get("default") {
                Some(default) => default.clone(),
                None => match schema.get("type").and_then(Value::as_str) {
                    Some("boolean") => json!(true),
                    Some("integer" | "number") => json!(0),
                    _ => match schema.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
                        Some(first) => first.clone(),
                        None => json!(""),
                    },
                },
            };
            content.insert(name.clone(), value);
        }
    }
    Value::Object(content)
}

/// The suite's per-scenario context (`MCP_CONFORMANCE_CONTEXT`), or null.
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT").ok().and_then(|c| serde_json::from_str(&c).ok()).unwrap_or(Value::Null)
}

/// OAuth for an `auth/*` scenario, as CLAT configures it from an `oauth` entry.
fn authorizer(url: &str, scenario: &str) -> Result<Option<Arc<Authorizer>>, ClientError> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let context = context();
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_string);
    let grant = if scenario.starts_with("auth/client-credentials") {
        Grant::ClientCredentials
    } else {
        Grant::AuthorizationCode
    };
    let settings = OAuthSettings {
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        client_metadata_url: Some(CIMD_URL.into()),
        grant,
        client_name: Some("clat-mcp-conformance-client".into()),
        ..OAuthSettings::default()
    };
    let browser = ScriptedBrowser::new().map_err(|e| ClientError::Http(e.to_string()))?;
    let auth = Authorizer::new("conformance", url, settings, Arc::new(MemoryStore::default()), Some(Arc::new(browser)))
        .map_err(|error| ClientError::Auth { server: "conformance".into(), error })?;
    Ok(Some(Arc::new(auth)))
}

async fn run(url: &str, scenario: &str, version: &str) -> Result<(), ClientError> {
    let spec = HttpSpec { url: url.to_string(), headers: vec![], auth: authorizer(url, scenario)? };
    let client = ClientInfo { name: "clat-mcp-conformance-client".into(), version: env!("CARGO_PKG_VERSION").into() };
    let capabilities = json!({ "roots": {}, "sampling": {}, "elicitation": {} });
    let handler = Arc::new(Answers);
    let opening = Opening::new(handler, client, capabilities).known_legacy(version != clat_mcp::MODERN_VERSION);
    let session = Session::connect(&Target::Http(spec), opening).await?;
    let call = |name: &'static str, arguments: Value| {
        let session = &session;
        async move { session.call_tool(name, arguments, TIMEOUT, None).await.map(|_| ()) }
    };
    let outcome = async {
        match scenario {
            "initialize" => Ok(()),
            "tools_call" => call("add_numbers", json!({ "a": 5, "b": 7 })).await,
            "elicitation-sep1034-client-defaults" => call("test_client_elicitation_defaults", json!({})).await,
            "sse-retry" => {
                session.list_tools().await?;
                call("test_reconnection", json!({})).await
            }
            "request-metadata" | "json-schema-ref-no-deref" => session.list_tools().await.map(|_| ()),
            "sep-2322-client-request-state" => {
                for tool in
                    ["test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"]
                {
                    call(tool, json!({})).await?;
                }
                Ok(())
            }
            "http-standard-headers" => {
                session.list_tools().await?;
                call("test_headers", json!({})).await?;
                let resources = session.send("resources/list", json!({}), TIMEOUT).await?;
                if let Some(uri) = resources.pointer("/resources/0/uri").and_then(Value::as_str) {
                    session.send("resources/read", json!({ "uri": uri }), TIMEOUT).await?;
                }
                session.send("prompts/list", json!({}), TIMEOUT).await?;
                session.send("prompts/get", json!({ "name": "test_prompt", "arguments": {} }), TIMEOUT).await?;
                Ok(())
            }
            "http-custom-headers" => {
                session.list_tools().await?;
                let context = context();
                for planned in context.get("toolCalls").and_then(Value::as_array).cloned().unwrap_or_default() {
                    let name = planned.get("name").and_then(Value::as_str).unwrap_or_default();
                    let arguments = planned.get("arguments").cloned().unwrap_or(json!({}));
                    session.call_tool(name, arguments, TIMEOUT, None).await?;
                }
                Ok(())
            }
            "http-invalid-tool-headers" => {
                let listing = session.list_tools().await?;
                for tool in &listing.tools {
                    if tool.get("name").and_then(Value::as_str) == Some("valid_tool") {
                        call("valid_tool", json!({ "region": "us-west1" })).await?;
                    }
                }
                Ok(())
            }
            "json-schema-2020-12-preservation" => {
                // Echo the focal tool's inputSchema exactly as the client holds it after listing.
                let listing = session.list_tools().await?;
                let focal = listing
                    .tools
                    .iter()
                    .find(|t| t.get("name").and_then(Value::as_str) == Some("json_schema_2020_12_tool"))
                    .and_then(|t| t.get("inputSchema"))
                    .cloned()
                    .ok_or_else(|| ClientError::Protocol("json_schema_2020_12_tool was not listed".into()))?;
                call("json_schema_echo", json!({ "schema": focal })).await
            }
            // Anything else (the auth scenarios among them): list, and call the first tool.
            _ => {
                let listing = session.list_tools().await?;
                if let Some(name) = listing.tools.first().and_then(|t| t.get("name")).and_then(Value::as_str) {
                    session.call_tool(name, json!({}), TIMEOUT, None).await?;
                }
                Ok(())
            }
        }
    }
    .await;
    session.close().await;
    outcome
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: clat-mcp-conformance-client URL (with MCP_CONFORMANCE_SCENARIO set)");
        return std::process::ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").unwrap_or_else(|_| "2025-11-25".into());
    match run(&url, &scenario, &version).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("clat-mcp-conformance-client: {scenario}: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
