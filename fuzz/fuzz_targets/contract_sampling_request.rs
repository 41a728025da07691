//! `sampling/createMessage` params: mapped to the contract or refused with a
//! shape error; what maps passes or fails the payload gate cleanly, and its
//! approval payload (what the user is shown) is complete JSON.
#![no_main]

use clat_host::contract::json::sampling_request_from_json;
use clat_host::services::sampling::{approval_payload, check_payload};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    let Ok(request) = sampling_request_from_json(&value) else { return };
    let _ = check_payload(&request);
    let payload = approval_payload(&request, "model");
    let messages = payload["messages"].as_array().expect("the payload lists the messages");
    assert_eq!(messages.len(), request.messages.len());
    for (shown, message) in messages.iter().zip(&request.messages) {
        assert_eq!(shown["text"].as_str(), Some(message.text.as_str()), "the user sees the whole text");
    }
});
