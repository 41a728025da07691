//! Search enrichment, off until asked for: for each tool, a few requests in a
//! user's words, asked of the session model once per definition (`clat tools
//! --enrich`, `Project::enrich_search`) and kept in the home by the hash of
//! the definition they were asked for (`REQUESTS_FILE`), so a tool is asked
//! again only when its definition changes. A search reads them as one more
//! field of each tool's document (`ToolIndex::with_requests`); offline, and
//! for a tool never asked, the index works without them.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::contract::{Role, SamplingMessage, SamplingRequest};
use crate::home::{Bound, ClatHome, Document, HomeError};
use crate::limits::{
    SEARCH_REQUEST_MAX_CHARS, SEARCH_REQUESTS_KEPT_MAX, SEARCH_REQUESTS_MAX_TOKENS, SEARCH_REQUESTS_PER_TOOL,
};
use crate::registry::ToolInfo;
use crate::services::model::ModelProvider;

/// Where the requests are kept, inside `$CLAT_HOME`.
pub const REQUESTS_FILE: &str = "search/requests.json";

/// The file: each definition's requests, by the definition's hash.
#[derive(Debug, Default, Serialize, Deserialize)]
struct RequestsFile {
    #[serde(default)]
    version: u32,
    #[serde(default)]
    definitions: BTreeMap<String, KeptRequests>,
}

crate::versioned_record!(RequestsFile, 1..=1);

/// One definition's requests, with the tool they were asked for (for a reader) and when (seconds since the epoch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct KeptRequests {
    tool: String,
    requests: Vec<String>,
    asked_at: u64,
}

fn document() -> Document<RequestsFile> {
    Document::new(REQUESTS_FILE, Bound::Record)
}

/// What an enrichment did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Enrichment {
    /// The tools whose requests were asked for and kept now.
    pub asked: Vec<String>,
    /// The tools whose definition's requests were kept already (nothing asked).
    pub kept_already: usize,
    /// The tools whose asking failed, with why (nothing kept for them; the next enrichment asks again).
    pub failed: Vec<(String, String)>,
}

/// The hash of what a search knows of a tool's definition: its name, description and input schema.
pub fn definition_key(tool: &ToolInfo) -> String {
    let text = tool.definition().to_string();
    format!("sha256:{}", crate::policy::identity::hex(&Sha256::digest(text.as_bytes())))
}

/// The kept requests of `tools` whose definitions were enriched, by registered name; none when the file cannot be
/// read (it is a cache: losing it costs only asking again).
pub fn kept_requests(home: &ClatHome, tools: &[ToolInfo]) -> HashMap<String, Vec<String>> {
    if !document().path(home).exists() {
        return HashMap::new();
    }
    let file = document().read_or_empty(home);
    tools
        .iter()
        .filter_map(|tool| Some((tool.name.clone(), file.definitions.get(&definition_key(tool))?.requests.clone())))
        .collect()
}

/// What the model is asked for one tool.
pub fn request_for(tool: &ToolInfo) -> SamplingRequest {
    let parameters: Vec<&str> = tool
        .input_schema
        .get("properties")
        .and_then(serde_json::Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let text = format!(
        "Tool: {}\nDescription: {}\nParameters: {}\n\nWrite {SEARCH_REQUESTS_PER_TOOL} different short requests a \
         user might type to a coding assistant that this tool would fulfil. Use the user's everyday words, not the \
         tool's. One request per line, no numbering, nothing else.",
        tool.original_name,
        tool.description,
        if parameters.is_empty() { "none".to_string() } else { parameters.join(", ") },
    );
    SamplingRequest {
        messages: vec![SamplingMessage { role: Role::User, text }],
        system_prompt: Some("You help a tool search index understand how people ask for things.".into()),
        max_tokens: SEARCH_REQUESTS_MAX_TOKENS,
        temperature: None,
        stop_sequences: Vec::new(),
        model_hints: Vec::new(),
    }
}

/// The requests in a model's answer: its first `SEARCH_REQUESTS_PER_TOOL` lines with words, bullets and numbering
/// taken off, each cut to `SEARCH_REQUEST_MAX_CHARS`.
pub fn requests_from(answer: &str) -> Vec<String> {
    answer
        .lines()
        .map(|line| line.trim().trim_start_matches(|c: char| c.is_ascii_digit() || "-*•.) \t".contains(c)).trim())
        .filter(|line| line.chars().any(char::is_alphanumeric))
        .take(SEARCH_REQUESTS_PER_TOOL)
        .map(|line| line.chars().take(SEARCH_REQUEST_MAX_CHARS).collect())
        .collect()
}

/// Ask `model` for the requests of each of `tools` whose definition has none kept, one tool at a time, keeping
/// each answer as it comes (an interrupted enrichment keeps what it got). `progress` is told each tool asked.
pub async fn enrich(
    home: &ClatHome,
    tools: &[ToolInfo],
    model: &dyn ModelProvider,
    progress: &dyn Fn(&str),
) -> Result<Enrichment, HomeError> {
    let kept: HashSet<String> = document().read_or_empty(home).definitions.into_keys().collect();
    let mut done = Enrichment::default();
    let current: HashSet<String> = tools.iter().map(definition_key).collect();
    for tool in tools {
        let key = definition_key(tool);
        if kept.contains(&key) {
            done.kept_already += 1;
            continue;
        }
        progress(&tool.name);
        let requests = match model.complete(&request_for(tool)).await {
            Ok(answer) => requests_from(&answer.text),
            Err(e) => {
                done.failed.push((tool.name.clone(), crate::redact::redact(&e.to_string())));
                continue;
            }
        };
        if requests.is_empty() {
            done.failed.push((tool.name.clone(), "the model's answer had no request in it".into()));
            continue;
        }
        let asked_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let entry = KeptRequests { tool: tool.name.clone(), requests, asked_at };
        document().update_cache_if(home, |file| {
            file.definitions.insert(key, entry);
            within_bound(&mut file.definitions, &current, SEARCH_REQUESTS_KEPT_MAX);
            ((), true)
        })?;
        done.asked.push(tool.name.clone());
    }
    Ok(done)
}

/// Keep at most `max` definitions: past it, those not in `current` go first, then the oldest.
fn within_bound(definitions: &mut BTreeMap<String, KeptRequests>, current: &HashSet<String>, max: usize) {
    if definitions.len() <= max {
        return;
    }
    let mut order: Vec<(bool, u64, String)> =
        definitions.iter().map(|(key, kept)| (current.contains(key), kept.asked_at, key.clone())).collect();
    order.sort();
    let excess = definitions.len() - max;
    for (_, _, key) in order.into_iter().take(excess) {
        definitions.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_gives_at_most_its_first_few_lines_each_cut_to_its_bound() {
        let long = "x".repeat(SEARCH_REQUEST_MAX_CHARS + 50);
        let answer =
            format!("1. page whoever is on call\n\n- tell ops the site is down\n* {long}\n4) a\n5. b\n6. c\n7. d");
        let requests = requests_from(&answer);
        assert_eq!(requests.len(), SEARCH_REQUESTS_PER_TOOL);
        assert_eq!(requests[..2], ["page whoever is on call", "tell ops the site is down"]);
        assert_eq!(requests[2].chars().count(), SEARCH_REQUEST_MAX_CHARS);
        assert_eq!(requests[3..], ["a", "b"]);
        assert!(requests_from("\n  \n---\n").is_empty());
    }

    #[test]
    fn past_the_kept_bound_the_definitions_not_current_go_first_then_the_oldest() {
        let entry = |at: u64| KeptRequests { tool: "t".into(), requests: vec!["r".into()], asked_at: at };
        let mut definitions: BTreeMap<String, KeptRequests> =
            (0..SEARCH_REQUESTS_KEPT_MAX as u64 + 3).map(|i| (format!("k{i}"), entry(i))).collect();
        let current: HashSet<String> = ["k0".to_string(), "k1".to_string()].into();
        within_bound(&mut definitions, &current, SEARCH_REQUESTS_KEPT_MAX);
        assert_eq!(definitions.len(), SEARCH_REQUESTS_KEPT_MAX);
        assert!(definitions.contains_key("k0") && definitions.contains_key("k1"), "current ones stay");
        for gone in ["k2", "k3", "k4"] {
            assert!(!definitions.contains_key(gone), "{gone} was the oldest not current");
        }
    }
}
