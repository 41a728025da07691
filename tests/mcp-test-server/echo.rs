//! `clat-echo-mcp-server`: the smallest MCP server that is still one, for the
//! MCP benchmark's "client cost" figures: a legacy-era stdio server with one
//! tool, `echo`, whose result is its arguments as text. It reads a line,
//! parses it, answers, and does nothing else (its answers to lines read
//! together leave in one write), so that in a round trip the time left over
//! is the client's and the pipe's. The
//! benchmark drives it from our client, from rmcp's and as a raw pipe, in one
//! run. Built with optimisations (see `tests/test-server-artifact/build.rs`):
//! a debug-built server would be most of every round trip.

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::os::fd::AsFd;

use serde_json::{Value, json};

fn answer(message: &Value) -> Option<Value> {
    let id = message.get("id")?;
    let method = message.get("method").and_then(Value::as_str)?;
    let params = message.get("params");
    Some(match method {
        "initialize" => {
            let version = params.and_then(|p| p["protocolVersion"].as_str()).unwrap_or("2024-11-05");
            json!({ "jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": version, "capabilities": { "tools": {} },
                "serverInfo": { "name": "clat-echo-mcp-server", "version": "0.1.0" } } })
        }
        "ping" => json!({ "jsonrpc": "2.0", "id": id, "result": {} }),
        "tools/list" => json!({ "jsonrpc": "2.0", "id": id, "result": { "tools": [{
            "name": "echo", "description": "Answers with its arguments.",
            "inputSchema": { "type": "object" } }] } }),
        "tools/call" => {
            let arguments = params.and_then(|p| p.get("arguments")).cloned().unwrap_or(json!({}));
            json!({ "jsonrpc": "2.0", "id": id, "result": {
                "content": [{ "type": "text", "text": arguments.to_string() }], "isError": false } })
        }
        other => json!({ "jsonrpc": "2.0", "id": id, "error": {
            "code": -32601, "message": format!("method not found: {other}") } }),
    })
}

fn main() {
    // Unbuffered stdin and stdout of our own: the replies to every complete
    // line already read go out together, in one write, when no more input is
    // waiting (as `cat` writes what it read), and at once otherwise.
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().expect("stdin"));
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned().expect("stdout"));
    let mut input = BufReader::with_capacity(64 * 1024, stdin);
    let mut out = BufWriter::with_capacity(64 * 1024, stdout);
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Ok(message) = serde_json::from_str::<Value>(&line)
            && let Some(answer) = answer(&message)
        {
            serde_json::to_writer(&mut out, &answer).expect("a Value serializes");
            let _ = out.write_all(b"\n");
        }
        if !input.buffer().contains(&b'\n') && out.flush().is_err() {
            break;
        }
    }
}
