//! The OpenAI-compatible model provider against a real HTTP server on
//! 127.0.0.1: the request it sends (model, messages, bearer key), usage
//! reconciled with the run budget, errors that never show the key, the
//! configuration file and environment, and a guest's sampling end to end.

mod support;

use std::sync::{Arc, Mutex};

use clat_guest_artifacts as guests;
use clat_host::contract::{HostError, PermissionMode, Role, SamplingMessage, SamplingRequest};
use clat_host::run::RunContext;
use clat_host::services::model::{OpenAiCompatible, provider_from_config};
use clat_host::services::sampling::create_message;
use serde_json::{Value, json};
use support::{TestEnv, stderr, stdout};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One captured request.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

/// A loopback HTTP server answering every request with `status` and `body`.
async fn serve(status: u16, body: Value) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let (log, body) = (log.clone(), body.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let (head_end, length) = loop {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..pos]).to_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap()))
                            .unwrap_or(0);
                        break (pos + 4, length);
                    }
                };
                while buf.len() < head_end + length {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
                let authorization = head
                    .lines()
                    .find_map(|l| l.to_lowercase().starts_with("authorization:").then(|| l[14..].trim().to_string()));
                let request: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
                log.lock().unwrap().push(Seen { path, authorization, body: request });
                let text = body.to_string();
                let reply = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                    text.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

fn completion(text: &str) -> Value {
    json!({
        "model": "served-model-1",
        "choices": [{ "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 21, "completion_tokens": 7 }
    })
}

fn request() -> SamplingRequest {
    SamplingRequest {
        messages: vec![SamplingMessage { role: Role::User, text: "Say hi".into() }],
        system_prompt: Some("Be brief.".into()),
        max_tokens: 50,
        temperature: Some(0.5),
        stop_sequences: vec!["END".into()],
        model_hints: vec!["another-model".into()],
    }
}

#[tokio::test]
async fn a_completion_is_requested_and_its_usage_reconciled() {
    let (url, seen) = serve(200, completion("hi there")).await;
    let provider =
        OpenAiCompatible::new(&url, "configured-model", Some("sk-test-key-1234567890abcdef".into())).unwrap();
    let run = RunContext::builder().mode(PermissionMode::FullAccess).start();
    let result = create_message(&provider, &request(), "wasm:t", &run).await.unwrap();
    assert_eq!(result.text, "hi there");
    assert_eq!(result.model, "served-model-1");
    assert_eq!(result.stop_reason.as_deref(), Some("endTurn"));
    assert_eq!((result.input_tokens, result.output_tokens), (21, 7));
    assert_eq!(run.budget().spent_tokens(), 28, "the budget holds the provider's usage");
    let seen = seen.lock().unwrap()[0].clone();
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer sk-test-key-1234567890abcdef"));
    assert_eq!(seen.body["model"], "configured-model", "plugin hints never choose the model");
    assert_eq!(seen.body["messages"][0], json!({ "role": "system", "content": "Be brief." }));
    assert_eq!(seen.body["messages"][1], json!({ "role": "user", "content": "Say hi" }));
    assert_eq!(seen.body["max_tokens"], 50);
    assert_eq!(seen.body["stop"], json!(["END"]));
}

#[tokio::test]
async fn provider_errors_are_clear_and_never_show_the_key() {
    let key = "sk-secret-key-abcdefghijklmnopqrstuvwxyz";
    let (url, _) = serve(401, json!({ "error": { "message": format!("Incorrect API key provided: {key}") } })).await;
    let provider = OpenAiCompatible::new(&url, "m", Some(key.into())).unwrap();
    let run = RunContext::builder().mode(PermissionMode::FullAccess).start();
    let err = create_message(&provider, &request(), "wasm:t", &run).await.unwrap_err();
    let HostError::Failed(message) = err else { panic!("expected failed, got {err:?}") };
    assert!(message.contains("401"), "{message}");
    assert!(!message.contains("abcdefghijklmnop"), "the key is redacted: {message}");
    assert_eq!(run.budget().spent_tokens(), 0, "a failed call spends nothing");
    assert_eq!(run.budget().left().tokens, clat_host::limits::SAMPLING_TOKENS_PER_RUN);
    assert!(!format!("{provider:?}").contains("abcdefghijklmnop"));

    // A long error body is cut to the bound.
    let (url, _) = serve(500, json!({ "error": "e".repeat(5_000) })).await;
    let provider = OpenAiCompatible::new(&url, "m", None).unwrap();
    let err = create_message(&provider, &request(), "wasm:t", &run).await.unwrap_err();
    let HostError::Failed(message) = err else { panic!("expected failed, got {err:?}") };
    let bound = clat_host::limits::MODEL_ERROR_BODY_MAX_CHARS;
    assert!(message.contains('…') && message.matches('e').count() <= bound + 100, "{} chars", message.len());

    let (url, _) = serve(200, json!({ "unexpected": true })).await;
    let provider = OpenAiCompatible::new(&url, "m", None).unwrap();
    let err = create_message(&provider, &request(), "wasm:t", &run).await.unwrap_err();
    assert!(matches!(&err, HostError::Failed(m) if m.contains("choices[0].message.content")), "{err:?}");

    // An answer past MODEL_RESPONSE_MAX_BYTES is refused, not read whole.
    let limit = clat_host::limits::MODEL_RESPONSE_MAX_BYTES as usize;
    let huge = json!({ "choices": [{ "message": { "role": "assistant", "content": "x".repeat(limit + 1) } }] });
    let (url, _) = serve(200, huge).await;
    let provider = OpenAiCompatible::new(&url, "m", None).unwrap();
    let err = create_message(&provider, &request(), "wasm:t", &run).await.unwrap_err();
    assert!(matches!(&err, HostError::Failed(m) if m.contains("answer is over 4 MiB")), "{err:?}");
    assert_eq!(run.budget().spent_tokens(), 0, "a refused answer spends nothing");

    // Nothing listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let provider = OpenAiCompatible::new(&dead, "m", Some(key.into())).unwrap();
    let err = create_message(&provider, &request(), "wasm:t", &run).await.unwrap_err();
    assert!(matches!(&err, HostError::Failed(m) if !m.contains("abcdefghijklmnop")), "{err:?}");
}

#[test]
fn configuration_comes_from_config_json_and_the_environment() {
    let env = TestEnv::new();
    let home = env.clat_home();
    let none = |_: &str| None;
    let offline = provider_from_config(&home, none).unwrap();
    assert_eq!(offline.model(), "clat-offline-1", "no configuration: the offline model");
    std::fs::create_dir_all(&env.home).unwrap();
    std::fs::write(
        env.home.join("config.json"),
        r#"{ "model": { "base_url": "http://127.0.0.1:9/v1", "model": "from-file", "api_key_env": "MY_KEY" } }"#,
    )
    .unwrap();
    assert_eq!(provider_from_config(&home, none).unwrap().model(), "from-file");
    let over = |k: &str| (k == "CLAT_MODEL").then(|| "from-env".to_string());
    assert_eq!(provider_from_config(&home, over).unwrap().model(), "from-env");
    std::fs::write(env.home.join("config.json"), "{ \"model\": { \"base_url\": 3 } }").unwrap();
    let err = provider_from_config(&home, none).err().unwrap();
    assert!(err.to_string().contains("config.json is malformed at line 1"), "{err}");
}

#[test]
fn a_guest_samples_the_configured_model_through_the_cli() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, seen) = rt.block_on(serve(200, completion("A short summary.")));
    let env = TestEnv::trusted();
    env.write("README.md", "Project readme\n");
    let out = env.clat(&["plugin", "install", guests::SUMMARIZE_PACKAGE]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::write(
        env.home.join("config.json"),
        format!(r#"{{ "model": {{ "base_url": "{url}", "model": "cli-model", "api_key_env": "TEST_MODEL_KEY" }} }}"#),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_clat"))
        .args(["--home", env.home.to_str().unwrap(), "--project", env.project.to_str().unwrap()])
        .args(["call", "wasm_summarize_file", r#"{"path":"README.md"}"#, "--mode", "full-access"])
        .env("TEST_MODEL_KEY", "sk-cli-key-0123456789abcdefgh")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "A short summary. (model: served-model-1)\n");
    let seen = seen.lock().unwrap()[0].clone();
    assert_eq!(seen.body["model"], "cli-model");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer sk-cli-key-0123456789abcdefgh"));
    assert!(seen.body["messages"][1]["content"].as_str().unwrap().contains("Project readme"));
    drop(rt);
}
