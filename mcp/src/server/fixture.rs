//! The served tools the transports' tests share.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{Peer, ServedTools, SessionRef};
use crate::jsonrpc::{INVALID_PARAMS, WireError};

/// `echo` answers its text; `wait` runs until cancelled, then reports its tag; `ask` asks
/// the client a form and answers with its action (`forward`: as forwarded from a downstream
/// server's input request under `key`); `log` logs a line at info.
pub(crate) struct Fixture {
    pub(crate) cancelled: tokio::sync::mpsc::UnboundedSender<String>,
}

#[async_trait::async_trait]
impl ServedTools for Fixture {
    async fn list(&self, _session: &SessionRef) -> Vec<Value> {
        vec![json!({ "name": "echo", "inputSchema": { "type": "object" } })]
    }

    async fn call(
        &self,
        client: &Peer,
        name: &str,
        arguments: Value,
        cancelled: CancellationToken,
    ) -> Result<Value, WireError> {
        match name {
            "log" => {
                client.log("info", "fixture", "a line");
                Ok(json!({ "content": [], "isError": false }))
            }
            "echo" => Ok(json!({ "content": [{ "type": "text", "text": arguments["text"] }], "isError": false })),
            "wait" => {
                cancelled.cancelled().await;
                let _ = self.cancelled.send(arguments["tag"].as_str().unwrap_or_default().to_string());
                Ok(json!({ "content": [], "isError": true }))
            }
            "ask" | "forward" => {
                let text = |t: &str, is_error: bool| json!({ "content": [{ "type": "text", "text": t }], "isError": is_error });
                let asked = match arguments["key"].as_str() {
                    Some(key) if name == "forward" => {
                        // An approval asked inside the forwarding keeps CLAT's key, then the forwarded form its own.
                        let approval = client.request("elicitation/create", json!({ "message": "allow?" }));
                        let forwarded = client.forward("elicitation/create", json!({ "message": "ok?" }));
                        crate::inbound::forwarding_key(key, async { approval.await.and(forwarded.await) }).await
                    }
                    _ => client.request("elicitation/create", json!({ "message": "ok?" })).await,
                };
                match asked {
                    Ok(answer) => Ok(text(answer["action"].as_str().unwrap_or_default(), !client.elicits_forms())),
                    Err(e) => Ok(text(&e.message, true)),
                }
            }
            other => Err(WireError::new(INVALID_PARAMS, format!("unknown tool {other}"))),
        }
    }
}
