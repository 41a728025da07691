//! The Streamable HTTP event-stream decoder: chunks cut anywhere decode to
//! whole lines (exactly the bytes up to the last newline, when nothing is
//! over the limit), events stay within the frame limit, and the resume point
//! is a plain event id.
#![no_main]

use clat_mcp::fuzzing::decode_event_stream;
use clat_mcp::limits::HTTP_BODY_MAX_BYTES;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte says where chunks are cut (1-256 bytes each).
    let Some((&cut, body)) = data.split_first() else { return };
    let size = cut as usize + 1;
    let chunks: Vec<Vec<u8>> = body.chunks(size).map(<[u8]>::to_vec).collect();
    let decoded = decode_event_stream(chunks);
    if decoded.error.is_none() {
        let whole = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        assert_eq!(decoded.lines, &body[..whole], "whole lines reach the parser, and nothing else");
    }
    for event in &decoded.events {
        assert!(event.len() <= HTTP_BODY_MAX_BYTES, "an event over the limit was decoded");
    }
    if let Some(id) = &decoded.last_event_id {
        assert!(!id.is_empty() && !id.contains('\0'));
    }
});
