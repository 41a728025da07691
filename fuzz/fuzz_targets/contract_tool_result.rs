//! The contract's JSON mappings for what a server sends about tools: a
//! `tools/call` result, a listed tool and its annotations, a content block, a
//! host tool call. Each either fails with a shape error or maps to a value
//! that maps back to JSON and parses to the same value.
#![no_main]

use clat_host::contract::json::{
    content_block_from_json, content_block_to_json, host_tool_call_from_json, tool_annotations_from_json,
    tool_annotations_to_json, tool_output_from_json, tool_output_to_json, tool_spec_from_json, tool_spec_to_json,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if let Ok(output) = tool_output_from_json(&value) {
        let again = tool_output_from_json(&tool_output_to_json(&output)).expect("a mapped result maps back");
        assert_eq!(again, output);
    }
    if let Ok(spec) = tool_spec_from_json(&value) {
        let again = tool_spec_from_json(&tool_spec_to_json(&spec)).expect("a mapped tool maps back");
        assert_eq!(again, spec);
    }
    if let Ok(annotations) = tool_annotations_from_json(Some(&value)) {
        let json = tool_annotations_to_json(&annotations);
        assert_eq!(tool_annotations_from_json(Some(&json)).expect("mapped annotations map back"), annotations);
    }
    if let Ok(block) = content_block_from_json(&value) {
        let again = content_block_from_json(&content_block_to_json(&block)).expect("a mapped block maps back");
        assert_eq!(again, block);
    }
    let _ = host_tool_call_from_json(&value);
});
