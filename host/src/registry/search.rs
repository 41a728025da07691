//! Tool search: which registered tools a task needs. Each tool is one
//! document of its words — its registered and own names (split at `_`, `-`,
//! `.`, `/` and case changes), its extension's name, its description, and
//! its parameters' names and descriptions — ranked by BM25 (the `bm25`
//! crate). Words are lower-cased and stemmed (English Snowball,
//! `rust-stemmers`), so "reading files" finds `read_file`; the commonest
//! English words are left out. Native tools, MCP servers' and WASM plugins'
//! are searched alike.

use bm25::{Document, SearchEngine, SearchEngineBuilder, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};
use serde::Serialize;
use serde_json::Value;

use super::{ToolInfo, ToolSource};
use crate::contract::Effect;

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from", "given", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "one", "or", "our", "so", "that", "the", "their", "them",
    "then", "this", "to", "tool", "use", "using", "want", "we", "what", "when", "which", "with", "you", "your",
];

/// One match: what a model needs to choose it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolMatch {
    /// The registered name, to call it by.
    pub name: String,
    /// The first line of its description.
    pub description: String,
    pub effect: Effect,
    pub source: ToolSource,
    /// Its BM25 score for the query (higher is better).
    pub score: f32,
}

/// The words of a text, as searched.
struct Words(Stemmer);

impl Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        split_words(text)
            .into_iter()
            .map(|word| word.to_lowercase())
            .filter(|word| word.chars().count() > 1 && !STOP_WORDS.contains(&word.as_str()))
            .map(|word| self.0.stem(&word).into_owned())
            .collect()
    }
}

/// The words of `text`: runs of letters and digits, split where a lower-case
/// letter or digit meets an upper-case one (`readFile`, `HTTPGet` as `HTTP`, `Get`).
fn split_words(text: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()).filter(|run| !run.is_empty()) {
        let chars: Vec<(usize, char)> = run.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (previous, current) = (chars[i - 1].1, chars[i].1);
            let next_is_lower = chars.get(i + 1).is_some_and(|(_, c)| c.is_lowercase());
            let boundary = current.is_uppercase()
                && (previous.is_lowercase() || previous.is_numeric() || (previous.is_uppercase() && next_is_lower));
            if boundary {
                words.push(&run[start..chars[i].0]);
                start = chars[i].0;
            }
        }
        words.push(&run[start..]);
    }
    words
}

/// A tool's searched text.
fn document_of(tool: &ToolInfo) -> String {
    let mut text =
        vec![tool.name.clone(), tool.original_name.clone(), tool.source.extension(), tool.description.clone()];
    if let Some(properties) = tool.input_schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            text.push(name.clone());
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                text.push(description.to_string());
            }
        }
    }
    text.join("\n")
}

/// An index over a set of tools.
pub struct ToolIndex {
    engine: SearchEngine<u32, u32, Words>,
    tools: Vec<ToolInfo>,
}

impl ToolIndex {
    /// Index `tools`.
    pub fn new(tools: Vec<ToolInfo>) -> ToolIndex {
        let documents = tools.iter().enumerate().map(|(i, tool)| Document::new(i as u32, document_of(tool)));
        let words = Words(Stemmer::create(Algorithm::English));
        let engine = SearchEngineBuilder::<u32, u32, Words>::with_tokenizer_and_documents(words, documents).build();
        ToolIndex { engine, tools }
    }

    /// The tools that best match `query`, best first, at most `limit`; ties in the order the tools were registered.
    pub fn search(&self, query: &str, limit: usize) -> Vec<ToolMatch> {
        self.search_favouring(query, limit, |_| false)
    }

    /// `search`, the matching tools `favoured` names (pinned, recently used) before the others, each part best first.
    pub fn search_favouring(&self, query: &str, limit: usize, favoured: impl Fn(&str) -> bool) -> Vec<ToolMatch> {
        let mut found: Vec<(u32, f32)> =
            self.engine.search(query, None).into_iter().map(|r| (r.document.id, r.score)).collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        // Stable: each part keeps its ranking.
        found.sort_by_key(|(i, _)| !favoured(&self.tools[*i as usize].name));
        found
            .into_iter()
            .take(limit)
            .map(|(i, score)| {
                let tool = &self.tools[i as usize];
                ToolMatch {
                    name: tool.name.clone(),
                    description: tool.description.lines().next().unwrap_or_default().to_string(),
                    effect: tool.effect,
                    source: tool.source.clone(),
                    score,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_into_their_words() {
        assert_eq!(split_words("read_file"), ["read", "file"]);
        assert_eq!(split_words("getHTTPResponse v2Api"), ["get", "HTTP", "Response", "v2", "Api"]);
        assert_eq!(split_words("mcp:github/create-issue"), ["mcp", "github", "create", "issue"]);
        let words = Words(Stemmer::create(Algorithm::English));
        assert_eq!(words.tokenize("Reading the files of a Project"), ["read", "file", "project"]);
    }
}
