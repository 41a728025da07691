//! The unit tests of `stdio`.

use super::*;
use crate::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, SERVER_BUSY};
use crate::limits::{
    FORWARDED_INPUT_KEY_MAX_CHARS, SERVE_CLIENT_REQUEST_TIMEOUT, SERVE_IN_FLIGHT_MAX, SERVE_PENDING_ANSWERS_MAX,
};
use crate::protocol::LEGACY_VERSIONS;
use crate::server::fixture::Fixture;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, DuplexStream};

struct Client {
    to: DuplexStream,
    from: tokio::io::Lines<BufReader<DuplexStream>>,
    served: tokio::task::JoinHandle<ServeEnd>,
    cancelled: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Client {
    fn start() -> Client {
        let (to, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, from) = tokio::io::duplex(1 << 16);
        let (tx, cancelled) = tokio::sync::mpsc::unbounded_channel();
        let info = ServerInfo { name: "fixture".into(), version: "1".into(), instructions: None, tools_change: false };
        let tools = Arc::new(Fixture { cancelled: tx });
        let served = tokio::spawn(serve(server_in, server_out, info, tools, CancellationToken::new()));
        Client { to, from: BufReader::new(from).lines(), served, cancelled }
    }

    async fn send(&mut self, message: Value) {
        self.to.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = self.from.next_line().await.unwrap().expect("a message");
        serde_json::from_str(&line).unwrap()
    }

    async fn initialize(&mut self, version: &str) -> Value {
        self.initialize_with(version, json!({})).await
    }

    async fn initialize_with(&mut self, version: &str, capabilities: Value) -> Value {
        self.send(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": { "name": "t", "version": "1" } } }))
            .await;
        self.next().await
    }
}

#[tokio::test]
async fn initialize_negotiates_then_tools_are_listed_and_called() {
    let mut client = Client::start();
    client.send(json!({ "jsonrpc": "2.0", "id": "early", "method": "tools/list" })).await;
    assert_eq!(client.next().await["error"]["code"], INVALID_REQUEST, "nothing before initialize");
    let answer = client.initialize("2025-06-18").await;
    assert_eq!(answer["result"]["protocolVersion"], "2025-06-18", "a version we speak is kept: {answer}");
    assert_eq!(answer["result"]["serverInfo"]["name"], "fixture");
    assert_eq!(client.initialize("1999-01-01").await["result"]["protocolVersion"], LEGACY_VERSIONS[0]);
    client.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await;
    client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).await;
    assert_eq!(client.next().await["result"]["tools"][0]["name"], "echo");
    client
        .send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": { "name": "echo", "arguments": { "text": "hi" } } }))
        .await;
    let answer = client.next().await;
    assert_eq!((answer["id"].clone(), answer["result"]["content"][0]["text"].clone()), (json!(2), json!("hi")));
    client.send(json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "nope" } })).await;
    assert_eq!(client.next().await["error"]["code"], INVALID_PARAMS);
    // No prompts or resources are served: empty listings, and naming one is not found (-32602, what was asked).
    client.send(json!({ "jsonrpc": "2.0", "id": 4, "method": "resources/list" })).await;
    assert_eq!(client.next().await["result"], json!({ "resources": [] }));
    client.send(json!({ "jsonrpc": "2.0", "id": 5, "method": "prompts/list" })).await;
    assert_eq!(client.next().await["result"], json!({ "prompts": [] }));
    let read = json!({ "jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": { "uri": "file:///x" } });
    client.send(read).await;
    let error = client.next().await["error"].clone();
    assert_eq!((error["code"].clone(), error["data"].clone()), (json!(INVALID_PARAMS), json!({ "uri": "file:///x" })));
    client.send(json!({ "jsonrpc": "2.0", "id": 7, "method": "completion/complete", "params": {} })).await;
    assert_eq!(client.next().await["error"]["code"], METHOD_NOT_FOUND);
    drop(client.to);
    assert_eq!(client.served.await.unwrap(), ServeEnd::ClientClosed);
}

#[tokio::test]
async fn a_malformed_line_is_answered_and_the_session_goes_on_and_an_oversized_frame_ends_it() {
    let mut client = Client::start();
    client.to.write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \n").await.unwrap();
    assert_eq!(client.next().await["error"]["code"], PARSE_ERROR);
    client.initialize("2025-11-25").await;
    client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" })).await;
    assert_eq!(client.next().await["result"], json!({}));
    let big = vec![b'x'; STDIO_FRAME_MAX_BYTES + 1];
    let writer = tokio::spawn(async move {
        let _ = client.to.write_all(&big).await;
        client.to
    });
    assert_eq!(client.served.await.unwrap(), ServeEnd::FrameTooLarge);
    drop(writer);
}

#[tokio::test]
async fn past_the_in_flight_bound_a_call_is_refused_and_a_cancelled_call_ends_unanswered() {
    let mut client = Client::start();
    client.initialize("2025-11-25").await;
    for id in 0..=SERVE_IN_FLIGHT_MAX {
        client
            .send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": { "name": "wait", "arguments": { "tag": id.to_string() } } }))
            .await;
    }
    let refused = client.next().await;
    assert_eq!(refused["id"], SERVE_IN_FLIGHT_MAX, "the one past the bound: {refused}");
    assert_eq!(refused["error"]["code"], SERVER_BUSY);
    client.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 3 } })).await;
    assert_eq!(client.cancelled.recv().await.unwrap(), "3", "the cancelled call's tool saw it");
    client.send(json!({ "jsonrpc": "2.0", "id": "p", "method": "ping" })).await;
    assert_eq!(client.next().await["id"], "p", "the cancelled call was not answered; the session goes on");
    drop(client.to);
    assert_eq!(client.served.await.unwrap(), ServeEnd::ClientClosed);
    let mut ended = 0;
    while client.cancelled.try_recv().is_ok() {
        ended += 1;
    }
    assert_eq!(ended, SERVE_IN_FLIGHT_MAX - 1, "the session's end cancelled every call still running");
}

/// A client that sends calls and never reads their answers: past the queue and `SERVE_PENDING_ANSWERS_MAX`
/// the session reads no more (the client's writes block), and once it reads, every request is answered.
#[tokio::test]
async fn a_client_that_stops_reading_stops_being_read_and_loses_no_answer() {
    let mut client = Client::start();
    client.initialize("2025-11-25").await;
    let total = 40 * SERVE_PENDING_ANSWERS_MAX;
    let mut to = client.to;
    let writer = tokio::spawn(async move {
        for id in 0..total {
            let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                               "params": { "name": "echo", "arguments": { "text": "x" } } });
            to.write_all(format!("{call}\n").as_bytes()).await.unwrap();
        }
        to
    });
    // Unbounded, the session would read every request (and keep every answer) in far less than this.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!writer.is_finished(), "the session kept reading requests nobody reads the answers of");
    let mut answered = std::collections::HashSet::new();
    for _ in 0..total {
        let line = client.from.next_line().await.unwrap().expect("an answer");
        let answer: Value = serde_json::from_str(&line).unwrap();
        // Echoed, or refused while more than SERVE_IN_FLIGHT_MAX were in flight: answered either way.
        let echoed = answer["result"]["content"][0]["text"] == "x";
        assert!(echoed || answer["error"]["code"] == SERVER_BUSY, "{answer}");
        answered.insert(answer["id"].as_u64().unwrap());
    }
    assert_eq!(answered.len(), total, "every call answered once");
    drop(writer.await.unwrap());
    assert_eq!(client.served.await.unwrap(), ServeEnd::ClientClosed);
}

#[tokio::test]
async fn a_call_asks_the_client_and_waits_for_its_answer() {
    let mut client = Client::start();
    client.initialize_with("2025-11-25", json!({ "elicitation": { "form": {} } })).await;
    client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "ask" } })).await;
    let asked = client.next().await;
    assert_eq!((asked["method"].as_str(), asked["id"].as_str()), (Some("elicitation/create"), Some("clat-0")));
    client.send(json!({ "jsonrpc": "2.0", "id": "clat-0", "result": { "action": "accept" } })).await;
    let answer = client.next().await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "accept", "{answer}");
    assert_eq!(answer["result"]["isError"], false, "a client declaring form elicitation elicits forms");
}

#[tokio::test(start_paused = true)]
async fn a_client_that_never_answers_fails_the_request_after_the_timeout() {
    let mut client = Client::start();
    client.initialize("2025-11-25").await;
    client.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "ask" } })).await;
    assert_eq!(client.next().await["method"], "elicitation/create");
    let answer = client.next().await;
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    let waited = SERVE_CLIENT_REQUEST_TIMEOUT.as_secs();
    assert_eq!(text, format!("the client did not answer elicitation/create within {waited} s"), "{answer}");
}

fn envelope(capabilities: Value, log_level: Option<&str>) -> Value {
    let mut meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                           "io.modelcontextprotocol/clientCapabilities": capabilities,
                           "io.modelcontextprotocol/clientInfo": { "name": "modern", "version": "1" } });
    if let Some(level) = log_level {
        meta["io.modelcontextprotocol/logLevel"] = json!(level);
    }
    meta
}

#[tokio::test]
async fn modern_requests_need_no_handshake_and_carry_their_envelope() {
    let mut client = Client::start();
    client
        .send(json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover",
                        "params": { "_meta": envelope(json!({}), None) } }))
        .await;
    let discovered = client.next().await;
    assert_eq!(discovered["result"]["supportedVersions"], json!(["2026-07-28"]), "{discovered}");
    assert_eq!(discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "fixture");
    client.send(json!({ "jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {} })).await;
    assert_eq!(client.next().await["error"]["code"], INVALID_PARAMS, "the probe without its envelope");
    client
        .send(json!({ "jsonrpc": "2.0", "id": 3, "method": "ping", "params": { "_meta": envelope(json!({}), None) } }))
        .await;
    assert_eq!(client.next().await["error"]["code"], METHOD_NOT_FOUND, "the legacy lifecycle is gone in this era");
    client.send(json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": { "_meta": envelope(json!({}), None) } }))
        .await;
    let listed = client.next().await["result"].clone();
    assert_eq!((listed["tools"][0]["name"].as_str(), listed["cacheScope"].as_str()), (Some("echo"), Some("private")));
    client
        .send(json!({ "jsonrpc": "2.0", "id": 41, "method": "prompts/list", "params": { "_meta": envelope(json!({}), None) } }))
        .await;
    let listed = client.next().await["result"].clone();
    assert_eq!(
        (listed["prompts"].clone(), listed["ttlMs"].is_u64()),
        (json!([]), true),
        "empty, and cacheable: {listed}"
    );
    // Log lines reach only a request that asked for a level.
    for (id, tool, level) in [(5, "echo", None), (6, "log", None), (7, "log", Some("debug"))] {
        client
            .send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": tool, "arguments": { "text": "hi" }, "_meta": envelope(json!({}), level) } }))
            .await;
    }
    let echoed = client.next().await;
    assert_eq!(
        (echoed["id"].clone(), echoed["result"]["resultType"].clone(), echoed["result"]["content"][0]["text"].clone()),
        (json!(5), json!("complete"), json!("hi")),
        "{echoed}"
    );
    assert_eq!(client.next().await["id"], 6, "no log line for a request that asked for none");
    let logged = client.next().await;
    assert_eq!(
        (logged["method"].as_str(), logged["params"]["data"].as_str()),
        (Some("notifications/message"), Some("a line"))
    );
    assert_eq!(client.next().await["id"], 7);
    client.send(json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/list" })).await;
    assert_eq!(
        client.next().await["error"]["code"],
        INVALID_REQUEST,
        "without an envelope: the legacy era, uninitialized"
    );
}

/// Call `ask` as request 1 with `meta`: its first round's state and question key.
async fn first_round(client: &mut Client, meta: &Value) -> (Value, String, String) {
    client
        .send(json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "ask", "_meta": meta } }))
        .await;
    let round = client.next().await;
    let state = round["result"]["requestState"].as_str().unwrap().to_string();
    let key = round["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    (round, state, key)
}

#[tokio::test]
async fn a_modern_call_asks_in_input_required_rounds_and_the_retry_gets_its_result() {
    let mut client = Client::start();
    let meta = envelope(json!({ "elicitation": { "form": {} } }), None);
    let (round, state, key) = first_round(&mut client, &meta).await;
    assert_eq!((round["id"].clone(), round["result"]["resultType"].clone()), (json!(1), json!("input_required")));
    assert_eq!(round["result"]["inputRequests"][&key]["method"], "elicitation/create", "{round}");
    let key = &key;
    let retry = |id: u64, tool: &str, state: &str, responses: Value| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": tool, "requestState": state, "inputResponses": responses, "_meta": meta } })
    };
    // A tampered state, or another tool's retry, is refused; the call still waits.
    client.send(retry(2, "ask", &format!("{state}-TAMPERED"), json!({ key: { "action": "accept" } }))).await;
    assert_eq!(client.next().await["error"]["code"], INVALID_PARAMS);
    client.send(retry(3, "echo", &state, json!({ key: { "action": "accept" } }))).await;
    assert_eq!(client.next().await["error"]["code"], INVALID_PARAMS);
    // So is a retry that names other arguments than the call's (none given: `{}`; leaving them out names the call's).
    let mut other = retry(31, "ask", &state, json!({ key: { "action": "accept" } }));
    other["params"]["arguments"] = json!({ "text": "another call" });
    client.send(other).await;
    let refused = client.next().await;
    assert_eq!(refused["error"]["code"], INVALID_PARAMS, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("other arguments"), "{refused}");
    // A retry without the answer is asked again, under a new state.
    client.send(retry(4, "ask", &state, json!({ "other": {} }))).await;
    let again = client.next().await;
    assert_eq!((again["id"].clone(), again["result"]["resultType"].clone()), (json!(4), json!("input_required")));
    let state_again = again["result"]["requestState"].as_str().unwrap().to_string();
    assert_ne!(state_again, state, "a state is good once");
    let key = again["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    client.send(retry(5, "ask", &state_again, json!({ key.clone(): { "action": "accept" } }))).await;
    let answer = client.next().await;
    assert_eq!(answer["id"], 5, "the last retry gets the call's result: {answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "accept", "{answer}");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    client.send(retry(6, "ask", &state_again, json!({ key: { "action": "accept" } }))).await;
    assert_eq!(client.next().await["error"]["code"], INVALID_PARAMS, "a used state is gone");
}

#[tokio::test]
async fn a_forwarded_question_keeps_its_key_and_may_be_answered_up_front_but_an_approval_never_is() {
    let mut client = Client::start();
    let meta = envelope(json!({ "elicitation": { "form": {} } }), None);
    let forward = |id: u64, key: &str, responses: Option<Value>| {
        let mut params = json!({ "name": "forward", "arguments": { "key": key }, "_meta": meta });
        if let Some(responses) = responses {
            params["inputResponses"] = responses;
        }
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })
    };
    let keys =
        |round: &Value| round["result"]["inputRequests"].as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    // The approval `forward` asks first is answered in its own round: what comes after is the forwarded form.
    let answer_approval = async |client: &mut Client, id: u64, round: &Value| {
        assert_eq!(keys(round), ["clat-0"], "an approval keeps CLAT's key, whatever was given up front: {round}");
        let state = round["result"]["requestState"].as_str().unwrap();
        let responses = json!({ "clat-0": { "action": "accept" } });
        let params = json!({ "name": "forward", "requestState": state, "inputResponses": responses, "_meta": meta });
        client.send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params })).await;
        client.next().await
    };
    // Answered up front (extra answers ignored): the forwarded form needs no round; the approval did.
    let given = json!({ "user_name": { "action": "accept" }, "clat-0": { "action": "accept" }, "extra": {} });
    client.send(forward(1, "user_name", Some(given))).await;
    let round = client.next().await;
    let answer = answer_approval(&mut client, 2, &round).await;
    assert_eq!((answer["id"].clone(), answer["result"]["resultType"].clone()), (json!(2), json!("complete")));
    assert_eq!(answer["result"]["content"][0]["text"], "accept", "{answer}");
    // Not given: asked under the downstream server's key.
    client.send(forward(3, "user_name", None)).await;
    let round = client.next().await;
    assert_eq!(keys(&answer_approval(&mut client, 4, &round).await), ["user_name"], "the downstream server's key");
    // A key past the bound gives way to CLAT's own.
    client.send(forward(5, &"k".repeat(FORWARDED_INPUT_KEY_MAX_CHARS + 1), None)).await;
    let round = client.next().await;
    assert_eq!(keys(&answer_approval(&mut client, 6, &round).await), ["clat-1"]);
}

#[tokio::test(start_paused = true)]
async fn a_round_never_retried_is_given_up_after_the_timeout_and_answers_nobody() {
    let mut client = Client::start();
    let meta = envelope(json!({ "elicitation": {} }), None);
    let (_, state, key) = first_round(&mut client, &meta).await;
    tokio::time::sleep(SERVE_CLIENT_REQUEST_TIMEOUT + std::time::Duration::from_secs(1)).await;
    client
        .send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "ask", "requestState": state, "inputResponses": { key: { "action": "accept" } }, "_meta": meta } }))
        .await;
    let late = client.next().await;
    assert_eq!((late["id"].clone(), late["error"]["code"].clone()), (json!(2), json!(INVALID_PARAMS)), "{late}");
    client.send(json!({ "jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": { "_meta": meta } })).await;
    assert_eq!(client.next().await["id"], 3, "the given-up call answered nobody");
}

#[tokio::test]
async fn a_stdio_client_cancels_a_call_in_rounds_by_its_latest_retry() {
    let mut client = Client::start();
    let meta = envelope(json!({ "elicitation": {} }), None);
    let (_, state, _) = first_round(&mut client, &meta).await;
    // A retry without the answer: asked again, the call now waits on request 2.
    client
        .send(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "ask", "requestState": state, "inputResponses": {}, "_meta": meta } }))
        .await;
    let again = client.next().await;
    assert_eq!(again["id"], 2, "{again}");
    let mut state = again["result"]["requestState"].as_str().unwrap().to_string();
    client.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 2 } })).await;
    // The cancelled call gave up its round: its state is gone, and it answered nobody.
    let mut gone = json!(null);
    for id in 3..50 {
        client
            .send(json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "ask", "requestState": state, "inputResponses": {}, "_meta": meta } }))
            .await;
        let answer = client.next().await;
        assert_eq!(answer["id"], id, "only answers to the retries: {answer}");
        if answer["error"]["code"] == INVALID_PARAMS {
            gone = answer;
            break;
        }
        state = answer["result"]["requestState"].as_str().unwrap().to_string();
    }
    assert_eq!(gone["error"]["code"], INVALID_PARAMS, "the state was forgotten: {gone}");
}
