//! CLAT's host-services extension: the context snapshot of
//! `io.artec.clat/context/get` and `context/changed`, and the params of
//! `io.artec.clat/tools/call`.

use serde_json::{Value, json};

use super::{ShapeError, as_object, req_str, shape};
use crate::contract::{ContextSnapshot, HostTool, RunSnapshot};

/// Contract context snapshot → the JSON of `io.artec.clat/context/get` and
/// `io.artec.clat/context/changed`.
pub fn context_snapshot_to_json(snapshot: &ContextSnapshot) -> Value {
    let run = snapshot.run.as_ref().map(|r: &RunSnapshot| {
        json!({
            "runId": r.run_id,
            "mode": r.mode.as_str(),
            "remainingMs": r.remaining_ms,
            "samplingRequestsLeft": r.sampling_requests_left,
            "samplingTokensLeft": r.sampling_tokens_left,
        })
    });
    json!({
        "projectRoot": snapshot.project_root,
        "projectName": snapshot.project_name,
        "sessionId": snapshot.session_id,
        "run": run,
    })
}

/// `io.artec.clat/tools/call` params (`{name, arguments?}`) → the host tool and its arguments as JSON text.
pub fn host_tool_call_from_json(params: &Value) -> Result<(HostTool, String), ShapeError> {
    let obj = as_object(params, "host tool call")?;
    let name = req_str(obj, "name", "host tool call")?;
    let tool = HostTool::from_tool_name(&name).ok_or_else(|| {
        let allowed: Vec<&str> = HostTool::ALL.iter().map(|t| t.tool_name()).collect();
        shape("host tool call", format!("{name:?} is not a host tool; only {} are", allowed.join(", ")))
    })?;
    let arguments = match obj.get("arguments") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(_) => return Err(shape("host tool call", "`arguments` must be an object")),
    };
    Ok((tool, arguments))
}
