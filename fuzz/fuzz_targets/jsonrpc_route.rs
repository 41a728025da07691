//! The JSON-RPC line parser and the stdio router: every line a server writes
//! either parses or fails cleanly; what parses re-encodes to the same message;
//! routing settles only pending requests and answers every server request
//! with a JSON-RPC response, never blocking or panicking.
#![no_main]

use std::sync::LazyLock;

use clat_mcp::fuzzing::route_frames;
use clat_mcp::jsonrpc::{Message, encode, parse, recover_response_id};
use libfuzzer_sys::fuzz_target;

static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap());

fuzz_target!(|data: &[u8]| {
    let frames: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    for frame in &frames {
        match parse(frame) {
            Ok(message) => {
                let line = encode(&message);
                assert!(!line.contains('\n'), "an encoded message is one line");
                assert_eq!(parse(line.as_bytes()).expect("an encoded message parses"), message);
            }
            Err(_) => {
                let _ = recover_response_id(frame);
            }
        }
    }
    let routed = RUNTIME.block_on(route_frames(&frames));
    assert_eq!(routed.settled.len() + routed.waiting, 5);
    for line in &routed.written {
        assert!(matches!(parse(line.as_bytes()), Ok(Message::Response { .. })), "not a response: {line}");
    }
});
