//! The audit trail of the calls CLAT serves to other agents (`clat serve`):
//! one JSON line per call — when (UTC, RFC 3339), which client, the tool,
//! its source and effect, the mode, the permission decision and who made it,
//! how long it took, how it ended, the sampling tokens its run charged. A
//! call's record is filled from its run's events (`CallAudit`, an
//! `EventSink`), its strings redacted like every diagnostic, and appended to
//! `$CLAT_HOME/audit/calls.jsonl` or the file the user names
//! (`AuditTrail`). A file that would pass `AUDIT_FILE_MAX_BYTES` is first
//! rotated to `FILE.1` (replacing the one before), so the trail takes at most
//! twice that.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::home::ClatHome;
use crate::limits::{AUDIT_FILE_MAX_BYTES, AUDIT_QUEUE_MAX, AUDIT_WRITE_INTERVAL};
use crate::run::{EventSink, RunEvent, RunEventKind};
use crate::sync::Unpoisoned;

/// The audit trail inside `$CLAT_HOME`.
pub const AUDIT_FILE: &str = "audit/calls.jsonl";

/// Where call records go.
#[derive(Debug)]
pub struct AuditTrail {
    path: PathBuf,
    /// The file appended to, kept open while it is the one at `path`; one
    /// append (and rotation) at a time in this process.
    writing: Mutex<Option<OpenTrail>>,
}

/// The trail's file as opened, and which file that is (another process's
/// rotation puts a new one at the path).
#[derive(Debug)]
struct OpenTrail {
    file: std::fs::File,
    device: u64,
    inode: u64,
}

impl AuditTrail {
    /// The trail in the file `path`.
    pub fn at(path: &Path) -> AuditTrail {
        AuditTrail { path: path.to_path_buf(), writing: Mutex::new(None) }
    }

    /// The home's trail (`AUDIT_FILE`).
    pub fn in_home(home: &ClatHome) -> AuditTrail {
        AuditTrail::at(&home.path().join(AUDIT_FILE))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one record as a redacted JSON line, rotating the file first when
    /// the line would take it past `AUDIT_FILE_MAX_BYTES`.
    pub fn append(&self, record: &Value) -> std::io::Result<()> {
        self.append_all(vec![record.clone()])
    }

    /// Append records as redacted JSON lines in one write (the file rotated
    /// first when they would take it past `AUDIT_FILE_MAX_BYTES`). What is
    /// redacted is each string value — the client's name, messages — but
    /// CLAT's own words for the call (`OWN_FIELDS`: the tool's registered name,
    /// its effect, the outcome…), never a key or a number, so every line stays
    /// the JSON it was and a configured value that is also a word of a tool's
    /// name does not hide which tool was called. Each record is redacted where
    /// it is and serialized once, into the one buffer written.
    pub fn append_all(&self, records: Vec<Value>) -> std::io::Result<()> {
        let mut lines = Vec::with_capacity(records.len() * 384);
        for mut record in records {
            match &mut record {
                Value::Object(fields) => {
                    for (_, value) in fields.iter_mut().filter(|(k, _)| !OWN_FIELDS.contains(&k.as_str())) {
                        redact_in_place(value);
                    }
                }
                other => redact_in_place(other),
            }
            serde_json::to_writer(&mut lines, &record).expect("a Value serializes");
            lines.push(b'\n');
        }
        let mut open = self.writing.locked();
        let mut on_disk = std::fs::metadata(&self.path).ok();
        let size = on_disk.as_ref().map_or(0, |m| m.len());
        if size > 0 && size + lines.len() as u64 > AUDIT_FILE_MAX_BYTES {
            let mut rotated = self.path.clone().into_os_string();
            rotated.push(".1");
            std::fs::rename(&self.path, rotated)?;
            on_disk = None;
        }
        let still_there =
            |held: &OpenTrail| on_disk.as_ref().is_some_and(|m| (m.dev(), m.ino()) == (held.device, held.inode));
        let held = match open.take().filter(still_there) {
            Some(held) => open.insert(held),
            None => {
                if let Some(parent) = self.path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
                let opened = file.metadata()?;
                open.insert(OpenTrail { file, device: opened.dev(), inode: opened.ino() })
            }
        };
        held.file.write_all(&lines)
    }
}

/// A trail written by one task: records queued by calls wait at most
/// `AUDIT_WRITE_INTERVAL` and leave together, in one write, after the answers
/// they belong to (`clat serve`); a call queues how to make its record, and
/// the task makes it, so nothing of it is on the call's path; a call wakes
/// nothing but the first record of an interval. At `AUDIT_QUEUE_MAX` records
/// the call that queued the last writes them itself.
pub struct AuditQueue {
    trail: Arc<AuditTrail>,
    queued: Arc<Queued>,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

#[derive(Default)]
struct Queued {
    waiting: Mutex<Waiting>,
    arrived: tokio::sync::Notify,
}

/// A queued record, made when it is written.
type PendingRecord = Box<dyn FnOnce() -> Value + Send>;

#[derive(Default)]
struct Waiting {
    records: Vec<PendingRecord>,
    /// The queue is finished: a late record is appended at once.
    finished: bool,
}

impl AuditQueue {
    /// Start the writing task for `trail` (on the current runtime).
    pub fn start(trail: AuditTrail) -> AuditQueue {
        let (trail, queued) = (Arc::new(trail), Arc::new(Queued::default()));
        let (writing, queue) = (Arc::clone(&trail), Arc::clone(&queued));
        let writer = tokio::spawn(async move {
            loop {
                queue.arrived.notified().await;
                tokio::time::sleep(AUDIT_WRITE_INTERVAL).await;
                let (records, finished) = {
                    let mut queued = queue.waiting.locked();
                    (std::mem::take(&mut queued.records), queued.finished)
                };
                write(&writing, records);
                if finished {
                    break;
                }
            }
        });
        AuditQueue { trail, queued, writer: Mutex::new(Some(writer)) }
    }

    /// Queue a record for the trail: `record` makes it when it is written.
    pub fn push(&self, record: impl FnOnce() -> Value + Send + 'static) {
        let mut queued = self.queued.waiting.locked();
        if queued.finished {
            drop(queued);
            write(&self.trail, vec![Box::new(record)]);
            return;
        }
        queued.records.push(Box::new(record));
        if queued.records.len() >= AUDIT_QUEUE_MAX {
            let records = std::mem::take(&mut queued.records);
            drop(queued);
            write(&self.trail, records);
        } else if queued.records.len() == 1 {
            self.queued.arrived.notify_one();
        }
    }

    /// Write what is queued and stop the task.
    pub async fn finish(&self) {
        self.queued.waiting.locked().finished = true;
        self.queued.arrived.notify_one();
        let writer = self.writer.locked().take();
        if let Some(writer) = writer {
            let _ = writer.await;
        }
        // What the task did not take (it was stopped) is written here.
        let left = std::mem::take(&mut self.queued.waiting.locked().records);
        write(&self.trail, left);
    }
}

/// Make the queued records and append them to `trail` in one write.
fn write(trail: &AuditTrail, records: Vec<PendingRecord>) {
    if records.is_empty() {
        return;
    }
    let records: Vec<Value> = records.into_iter().map(|make| make()).collect();
    if let Err(e) = trail.append_all(records) {
        tracing::warn!("cannot write the audit trail {}: {e}", trail.path().display());
    }
}

/// A record's fields that CLAT itself writes from what it knows of the call, never from what a client or an
/// extension said: kept as they are.
const OWN_FIELDS: [&str; 7] = ["time", "tool", "source", "effect", "mode", "outcome", "decided_by"];

/// Every string in `value` redacted, where it is.
fn redact_in_place(value: &mut Value) {
    match value {
        Value::String(text) => *text = crate::redact::redact(text),
        Value::Array(items) => items.iter_mut().for_each(redact_in_place),
        Value::Object(fields) => fields.values_mut().for_each(redact_in_place),
        _ => {}
    }
}

/// What one call's run said about it: its first call (the one served; host
/// tools a plugin calls come after it) and the sampling its run charged.
#[derive(Debug, Default)]
pub struct CallAudit(Mutex<Seen>);

#[derive(Debug, Default)]
struct Seen {
    source: Option<String>,
    effect: Option<String>,
    allowed: Option<bool>,
    decided_by: Option<String>,
    reason: Option<String>,
    duration_ms: Option<u64>,
    is_error: bool,
    error: Option<String>,
    cancelled: bool,
    sampling_tokens: u64,
}

impl EventSink for CallAudit {
    fn emit(&self, event: RunEvent) {
        let mut seen = self.0.locked();
        match event.kind {
            RunEventKind::ToolStarted { call_id: 1, source, effect, .. } => {
                (seen.source, seen.effect) = (Some(source), Some(effect));
            }
            RunEventKind::Permission { call_id: 1, allowed, decided_by, reason, .. } => {
                (seen.allowed, seen.decided_by, seen.reason) = (Some(allowed), Some(decided_by), reason);
            }
            RunEventKind::ToolFinished { call_id: 1, duration_ms, is_error, error, .. } => {
                (seen.duration_ms, seen.is_error, seen.error) = (Some(duration_ms), is_error, error);
            }
            RunEventKind::Sampling { input_tokens, output_tokens, outcome, .. } if outcome == "completed" => {
                seen.sampling_tokens += input_tokens + output_tokens;
            }
            RunEventKind::RunFinished { cancelled } => seen.cancelled |= cancelled,
            _ => {}
        }
    }
}

/// Who called, and what, and when it ended: the parts of a record the run does not know.
pub struct CallRecord<'a> {
    pub ended: chrono::DateTime<chrono::Utc>,
    /// The client's name and version, as it gave them.
    pub client: &'a str,
    pub tool: &'a str,
    /// The session's permission mode.
    pub mode: &'a str,
    /// Why the call was not made at all (an unknown tool, bad arguments), if it was not.
    pub rejected: Option<&'a str>,
    /// The session's sampling budget after the call: requests charged so far, of how many.
    pub sampling: (u32, u32),
}

impl CallAudit {
    /// The call's record: `outcome` is `ok`, `error` (the tool's error
    /// result), `denied`, `cancelled`, `failed` (the pipeline's error) or
    /// `rejected` (never made).
    pub fn record(&self, call: &CallRecord<'_>) -> Value {
        let seen = self.0.locked();
        let outcome = match (call.rejected, seen.allowed) {
            (Some(_), _) => "rejected",
            (None, Some(false)) => "denied",
            _ if seen.cancelled => "cancelled",
            _ if seen.error.is_some() => "failed",
            _ if seen.is_error => "error",
            _ => "ok",
        };
        json!({
            "time": call.ended.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "client": call.client,
            "tool": call.tool,
            "source": seen.source,
            "effect": seen.effect,
            "mode": call.mode,
            "allowed": seen.allowed,
            "decided_by": seen.decided_by,
            "duration_ms": seen.duration_ms,
            "outcome": outcome,
            "error": call.rejected.map(str::to_string).or_else(|| seen.error.clone()).or_else(|| seen.reason.clone()),
            "sampling_tokens": seen.sampling_tokens,
            "session_sampling_requests": call.sampling.0,
            "session_sampling_budget": call.sampling.1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trail_past_its_bound_is_rotated_before_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let trail = AuditTrail::at(&dir.path().join("audit/calls.jsonl"));
        trail.append(&json!({ "n": 1 })).unwrap();
        assert_eq!(std::fs::read_to_string(trail.path()).unwrap(), "{\"n\":1}\n");
        // Fill it to the bound: the next record would pass it.
        let filler = vec![b'x'; AUDIT_FILE_MAX_BYTES as usize - 8];
        std::fs::OpenOptions::new().append(true).open(trail.path()).unwrap().write_all(&filler).unwrap();
        trail.append(&json!({ "n": 2 })).unwrap();
        assert_eq!(std::fs::read_to_string(trail.path()).unwrap(), "{\"n\":2}\n", "a fresh file");
        let rotated = dir.path().join("audit/calls.jsonl.1");
        assert_eq!(std::fs::metadata(&rotated).unwrap().len(), AUDIT_FILE_MAX_BYTES, "the full one kept once");
        trail.append(&json!({ "n": 3 })).unwrap();
        assert_eq!(std::fs::read_to_string(trail.path()).unwrap(), "{\"n\":2}\n{\"n\":3}\n");
    }

    #[test]
    fn a_trail_kept_open_follows_the_file_another_process_rotated_or_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let (ours, theirs) = (AuditTrail::at(&path), AuditTrail::at(&path));
        ours.append(&json!({ "n": 1 })).unwrap();
        std::fs::rename(&path, dir.path().join("calls.jsonl.1")).unwrap();
        theirs.append(&json!({ "n": 2 })).unwrap();
        ours.append(&json!({ "n": 3 })).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"n\":2}\n{\"n\":3}\n", "not the rotated file");
        std::fs::remove_file(&path).unwrap();
        ours.append(&json!({ "n": 4 })).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"n\":4}\n", "a removed trail starts again");
    }

    #[test]
    fn a_record_is_redacted() {
        crate::redact::register_secrets(["sk-audit-secret-value".to_string(), "postgres-main".to_string()]);
        let dir = tempfile::tempdir().unwrap();
        let trail = AuditTrail::at(&dir.path().join("calls.jsonl"));
        let audit = CallAudit::default();
        let call = CallRecord {
            ended: chrono::Utc::now(),
            client: "agent of postgres-main",
            // A configured value that is also a word of the tool's name: the tool is still named.
            tool: "mcp_postgres-main_query",
            mode: "ask",
            rejected: Some("bad sk-audit-secret-value"),
            sampling: (0, 64),
        };
        trail.append(&audit.record(&call)).unwrap();
        let written = std::fs::read_to_string(trail.path()).unwrap();
        let record: Value = serde_json::from_str(written.trim()).unwrap();
        assert_eq!(
            (record["tool"].as_str(), record["client"].as_str()),
            (Some("mcp_postgres-main_query"), Some("agent of [REDACTED]"))
        );
        assert!(
            !written.contains("sk-audit-secret-value") && written.contains("\"outcome\":\"rejected\""),
            "{written}"
        );
        // A key that names a secret ("sampling_tokens") is not a value to redact: the count stays, the line stays JSON.
        trail.append(&json!({ "sampling_tokens": 12345 })).unwrap();
        let last: Value = serde_json::from_str(std::fs::read_to_string(trail.path()).unwrap().lines().last().unwrap())
            .expect("a redacted record is still JSON");
        assert_eq!(last["sampling_tokens"], 12345, "{last}");
    }

    #[tokio::test]
    async fn queued_records_are_written_together_and_what_is_left_at_the_finish() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let queue = AuditQueue::start(AuditTrail::at(&path));
        queue.push(move || json!({ "n": 1 }));
        queue.push(move || json!({ "n": 2 }));
        assert!(!path.exists(), "records wait for the interval");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(&path).unwrap_or_default().lines().count() < 2 {
            assert!(std::time::Instant::now() < deadline, "the queued records were not written");
            tokio::time::sleep(AUDIT_WRITE_INTERVAL).await;
        }
        queue.push(move || json!({ "n": 3 }));
        queue.finish().await;
        queue.push(move || json!({ "n": 4 }));
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(written, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n", "in order, none lost at the finish");
    }

    #[tokio::test]
    async fn a_full_queue_is_written_by_the_call_that_filled_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let queue = AuditQueue::start(AuditTrail::at(&path));
        for n in 0..AUDIT_QUEUE_MAX {
            queue.push(move || json!({ "n": n }));
        }
        // No await since the first push: the writing task has not run, the last push wrote them all.
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(written.lines().count(), AUDIT_QUEUE_MAX);
        assert_eq!(written.lines().last().unwrap(), format!("{{\"n\":{}}}", AUDIT_QUEUE_MAX - 1));
        queue.finish().await;
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), AUDIT_QUEUE_MAX, "nothing twice");
    }

    #[test]
    fn records_appended_together_leave_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let trail = AuditTrail::at(&dir.path().join("calls.jsonl"));
        trail.append_all(vec![json!({ "n": 1 }), json!({ "n": 2 })]).unwrap();
        trail.append(&json!({ "n": 3 })).unwrap();
        assert_eq!(std::fs::read_to_string(trail.path()).unwrap(), "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");
    }
}
