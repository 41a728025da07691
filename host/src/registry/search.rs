//! Tool search: which registered tools a task needs. Each tool is one
//! document of its words — its registered and own names (split at `_`, `-`,
//! `.`, `/` and case changes, and compounds such as `worklogs` into words the
//! index knows), counted `NAME_WEIGHT` times, as a name says what a tool does
//! better than its prose; its extension's name, its description, and its
//! parameters' names and descriptions, and the requests in a user's words
//! kept for it when search enrichment was asked for (`platform/enrichment.rs`)
//! — ranked by BM25 (the `bm25` crate).
//! Words are lower-cased and stemmed (English Snowball, `rust-stemmers`), so
//! "reading files" finds `read_file`; the commonest English words are left out.
//! A query's words of task wording are joined by the words tool definitions
//! use (`TASK_WORDS`: "open a ticket" also searches "create" and "issue"). A query that is a
//! tool's name (registered, own or normalized), or `select:NAME[,NAME…]`,
//! returns that tool first. Native tools, MCP servers' and WASM plugins' are
//! searched alike. `ToolIndex::answer` is `search_tools`' first answer: the
//! best matches and the extensions that match best, with all their tools'
//! names, within `SEARCH_ANSWER_MAX_BYTES`; `ToolIndex::evaluate` measures a
//! table of tasks against it.

use std::collections::{HashMap, HashSet};

use bm25::{Document, SearchEngine, SearchEngineBuilder, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{ToolInfo, ToolSource};
use crate::contract::Effect;
use crate::limits::{SEARCH_ANSWER_EXTENSIONS, SEARCH_ANSWER_MAX_BYTES, SEARCH_LINE_MAX_CHARS};

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from", "given", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "one", "or", "our", "so", "that", "the", "their", "them",
    "then", "this", "to", "tool", "use", "using", "want", "we", "what", "when", "which", "with", "you", "your",
];

/// How many times a tool's name words count in its document, against once for its description's.
const NAME_WEIGHT: usize = 3;

/// The shortest part of a compound word split into words of the index (`worklog` → `work`, `log`).
const COMPOUND_PART_MIN_CHARS: usize = 3;

/// Words of task wording → the words tool definitions use for them: mostly verbs ("open" a ticket is "create" it),
/// some nouns and abbreviations ("popup" is a "dialog", "repo" a "repository"). A query word on the left also
/// searches the words on the right (the word itself is kept).
pub const TASK_WORDS: &[(&str, &[&str])] = &[
    ("add", &["create", "append", "insert"]),
    ("back", &["undo", "rollback", "revert", "restore"]),
    ("book", &["create", "schedule", "event"]),
    ("cancel", &["delete", "stop"]),
    ("change", &["update", "edit", "set"]),
    ("check", &["get", "status"]),
    ("db", &["database"]),
    ("copy", &["fork", "clone", "duplicate"]),
    ("display", &["get", "list", "show"]),
    ("drop", &["delete", "remove"]),
    ("erase", &["delete", "remove"]),
    ("fetch", &["get", "download", "read"]),
    ("find", &["search", "list", "get"]),
    ("fix", &["update", "edit"]),
    ("forget", &["delete", "remove"]),
    ("gist", &["summary", "summarize"]),
    ("grab", &["get", "download"]),
    ("hours", &["time"]),
    ("kill", &["delete", "stop", "terminate"]),
    ("kick", &["run", "trigger", "rerun"]),
    ("launch", &["run", "start", "create"]),
    ("log", &["add", "create"]),
    ("look", &["search", "get"]),
    ("mail", &["send", "email"]),
    ("make", &["create"]),
    ("message", &["send", "post"]),
    ("modify", &["update", "edit"]),
    ("new", &["create"]),
    ("open", &["create", "get", "read"]),
    ("overview", &["summary", "summarize"]),
    ("ping", &["send", "message"]),
    ("popup", &["dialog", "alert", "modal"]),
    ("post", &["send", "create", "message"]),
    ("pr", &["pull", "request"]),
    ("put", &["create", "update", "set"]),
    ("refund", &["create", "refund"]),
    ("remind", &["reminder"]),
    ("remove", &["delete"]),
    ("repo", &["repository"]),
    ("rename", &["move", "update"]),
    ("restore", &["rollback", "undo", "restore"]),
    ("revert", &["rollback", "undo"]),
    ("rundown", &["summary", "summarize"]),
    ("save", &["export", "write", "create"]),
    ("see", &["get", "list", "show"]),
    ("ship", &["release", "deploy", "publish"]),
    ("show", &["get", "list", "describe"]),
    ("shut", &["stop"]),
    ("silence", &["mute"]),
    ("spend", &["cost"]),
    ("start", &["run", "create", "start"]),
    ("tell", &["send", "message"]),
    ("ticket", &["issue"]),
    ("undo", &["rollback", "revert"]),
    ("view", &["get", "read"]),
    ("vm", &["instance"]),
    ("yes", &["accept", "confirm"]),
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
    /// Its score for the query (higher is better; a tool named by the query scores above every other).
    pub score: f32,
}

/// The words of a text, as searched: lower-cased, without the commonest words,
/// compounds split into words of the index, stemmed.
struct Words {
    stemmer: Stemmer,
    /// Every word of the index, lower-cased: what a compound may be split into.
    vocabulary: HashSet<String>,
}

impl Words {
    fn new(vocabulary: HashSet<String>) -> Words {
        Words { stemmer: Stemmer::create(Algorithm::English), vocabulary }
    }

    /// `word` as two words of the index, when it is one written together (`worklog`, `username`).
    fn compound_parts<'a>(&self, word: &'a str) -> Option<(&'a str, &'a str)> {
        let length = word.chars().count();
        if length < 2 * COMPOUND_PART_MIN_CHARS || !word.is_ascii() {
            return None;
        }
        (COMPOUND_PART_MIN_CHARS..=length - COMPOUND_PART_MIN_CHARS)
            .rev()
            .map(|at| word.split_at(at))
            .find(|(first, rest)| self.vocabulary.contains(*first) && self.vocabulary.contains(*rest))
    }
}

impl Tokenizer for Words {
    fn tokenize(&self, text: &str) -> Vec<String> {
        let mut tokens = Vec::new();
        for word in plain_words(text) {
            if let Some((first, rest)) = self.compound_parts(&word) {
                tokens.push(self.stemmer.stem(first).into_owned());
                tokens.push(self.stemmer.stem(rest).into_owned());
            }
            tokens.push(self.stemmer.stem(&word).into_owned());
        }
        tokens
    }
}

/// The words of `text` that count: lower-cased, longer than one character, not among the commonest.
fn plain_words(text: &str) -> impl Iterator<Item = String> + '_ {
    split_words(text)
        .into_iter()
        .map(|word| word.to_lowercase())
        .filter(|word| word.chars().count() > 1 && !STOP_WORDS.contains(&word.as_str()))
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

/// A query with the tool verbs its task verbs stand for added (`TASK_WORDS`).
fn with_tool_verbs(query: &str) -> String {
    let mut expanded = query.to_string();
    for word in plain_words(query) {
        if let Some((_, verbs)) = TASK_WORDS.iter().find(|(task_verb, _)| *task_verb == word) {
            for verb in *verbs {
                expanded.push(' ');
                expanded.push_str(verb);
            }
        }
    }
    expanded
}

/// A tool's searched text: its names `NAME_WEIGHT` times, then the rest once — with the requests in a user's words
/// kept for it (`platform/enrichment.rs`), when there are any.
fn document_of(tool: &ToolInfo, requests: &[String]) -> String {
    let names = format!("{}\n{}\n", tool.name, tool.original_name);
    let mut text = vec![names.repeat(NAME_WEIGHT), tool.source.extension(), tool.description.clone()];
    text.extend(requests.iter().cloned());
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

/// A name as compared when a query may be one: lower-cased, `-`, `.` and spaces as `_`.
fn name_key(name: &str) -> String {
    name.trim().to_lowercase().replace(['-', '.', ' '], "_")
}

/// An extension whose tools match a query: its tools' own names, for a model to load or call by.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExtensionMatch {
    /// `mcp:server` or `wasm:plugin`.
    pub extension: String,
    /// Its tools' own names (`EXTENSION/NAME` in `load_tools` and `call_tool`; the name alone where only one
    /// tool has it), in the order it registered them; `more` counts those left out to keep the answer's size.
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `search_tools`' answer: the best matches and the extensions that match best.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchAnswer {
    pub matches: Vec<AnswerMatch>,
    pub extensions: Vec<ExtensionMatch>,
}

/// A match as `search_tools` shows it: no score, its source as one label, its description's first line cut to
/// `SEARCH_LINE_MAX_CHARS`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnswerMatch {
    pub name: String,
    pub description: String,
    pub effect: Effect,
    pub source: String,
}

/// One row of a search table: a query and the registered name of the tool it should find.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SearchCase {
    pub query: String,
    pub tool: String,
}

impl SearchCase {
    /// The cases of a search table file: `{"cases": [{"query": …, "tool": …}, …]}` (as `tests/fixtures/search/`
    /// keeps them) or the bare array, read within `CONFIG_FILE_MAX_BYTES`.
    pub fn read_table(path: &std::path::Path) -> Result<Vec<SearchCase>, String> {
        let bytes = crate::home::files::read_config_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let table: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        let cases = table.get("cases").cloned().unwrap_or(table);
        serde_json::from_value(cases).map_err(|e| {
            format!(
                "{}: a search table is [{{\"query\": …, \"tool\": …}}, …] or {{\"cases\": […]}}: {e}",
                path.display()
            )
        })
    }
}

/// How a table of queries fared (`ToolIndex::evaluate`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchEvaluation {
    /// Each case with the rank of its tool among the matches (1 = first; `None`: not in the first `RANKS_SEEN`)
    /// and whether the first answer (`answer` at the default page) names it.
    pub rows: Vec<EvaluatedCase>,
    /// Cases whose tool is among the first 5 matches.
    pub recall_at_5: usize,
    /// Cases whose tool is among the first 10 matches.
    pub recall_at_10: usize,
    /// Mean reciprocal rank over the first `RANKS_SEEN` matches.
    pub mrr: f64,
    /// Cases whose first answer names the tool (a match, or one of an extension's tools).
    pub named_in_first_answer: usize,
    /// The largest first answer, serialized.
    pub largest_answer_bytes: usize,
}

/// One evaluated row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvaluatedCase {
    pub query: String,
    pub tool: String,
    pub rank: Option<usize>,
    pub named_in_first_answer: bool,
    /// The best match, when it is not the tool.
    pub first: Option<String>,
}

/// How deep `evaluate` looks for a case's tool.
const RANKS_SEEN: usize = 20;

/// An index over a set of tools.
pub struct ToolIndex {
    engine: SearchEngine<u32, u32, Words>,
    tools: Vec<ToolInfo>,
}

impl ToolIndex {
    /// Index `tools`.
    pub fn new(tools: Vec<ToolInfo>) -> ToolIndex {
        ToolIndex::with_requests(tools, &HashMap::new())
    }

    /// Index `tools`, each with the requests in a user's words kept for it (by registered name) as one more field.
    pub fn with_requests(tools: Vec<ToolInfo>, requests: &HashMap<String, Vec<String>>) -> ToolIndex {
        let texts: Vec<String> =
            tools.iter().map(|t| document_of(t, requests.get(&t.name).map_or(&[], Vec::as_slice))).collect();
        let vocabulary = texts
            .iter()
            .flat_map(|text| plain_words(text).collect::<Vec<_>>())
            .filter(|word| word.chars().count() >= COMPOUND_PART_MIN_CHARS)
            .collect();
        let documents = texts.into_iter().enumerate().map(|(i, text)| Document::new(i as u32, text));
        let engine =
            SearchEngineBuilder::<u32, u32, Words>::with_tokenizer_and_documents(Words::new(vocabulary), documents)
                .build();
        ToolIndex { engine, tools }
    }

    /// The tools that best match `query`, best first, at most `limit`; ties in the order the tools were registered.
    pub fn search(&self, query: &str, limit: usize) -> Vec<ToolMatch> {
        self.search_favouring(query, limit, |_| false)
    }

    /// `search`, the matching tools `favoured` names (pinned, recently used) before the others, each part best
    /// first; the tools the query names come before all.
    pub fn search_favouring(&self, query: &str, limit: usize, favoured: impl Fn(&str) -> bool) -> Vec<ToolMatch> {
        self.ranked(query, favoured).into_iter().take(limit).map(|(i, score)| self.tool_match(i, score)).collect()
    }

    /// Every tool that matches `query` as (index, score), in `search_favouring`'s order.
    fn ranked(&self, query: &str, favoured: impl Fn(&str) -> bool) -> Vec<(usize, f32)> {
        let named = self.named_by(query);
        let mut found: Vec<(usize, f32)> = self
            .engine
            .search(&with_tool_verbs(query), None)
            .into_iter()
            .map(|r| (r.document.id as usize, r.score))
            .filter(|(i, _)| !named.contains(i))
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        // Stable: each part keeps its ranking.
        found.sort_by_key(|(i, _)| !favoured(&self.tools[*i].name));
        let top = found.first().map_or(1.0, |(_, score)| score + 1.0);
        named.into_iter().map(|i| (i, top)).chain(found).collect()
    }

    /// The tools `query` names: `select:A,B`, or the whole query as a registered, own or normalized name.
    fn named_by(&self, query: &str) -> Vec<usize> {
        let written: Vec<&str> = match query.trim().strip_prefix("select:") {
            Some(list) => list.split(',').map(str::trim).filter(|n| !n.is_empty()).collect(),
            None => vec![query.trim()],
        };
        let mut named = Vec::new();
        for name in written {
            let key = name_key(name);
            for (i, tool) in self.tools.iter().enumerate() {
                let names_it = tool.is_named(name)
                    || name_key(&tool.name) == key
                    || name_key(&tool.original_name) == key
                    || self.qualified_name(tool).is_some_and(|q| name_key(&q) == key)
                    || name_key(&tool.source.label()) == key;
                if names_it && !named.contains(&i) {
                    named.push(i);
                }
            }
        }
        named
    }

    /// `EXTENSION/NAME` for an extension's tool (`tracker/log_work`).
    fn qualified_name(&self, tool: &ToolInfo) -> Option<String> {
        match &tool.source {
            ToolSource::Native => None,
            ToolSource::Mcp { server: owner, tool: own } | ToolSource::Wasm { plugin: owner, tool: own } => {
                Some(format!("{owner}/{own}"))
            }
        }
    }

    fn tool_match(&self, i: usize, score: f32) -> ToolMatch {
        let tool = &self.tools[i];
        ToolMatch {
            name: tool.name.clone(),
            description: tool.description.lines().next().unwrap_or_default().to_string(),
            effect: tool.effect,
            source: tool.source.clone(),
            score,
        }
    }

    /// The registered name of the tool a caller wrote `written` (its registered name, `EXTENSION/NAME`, or its own
    /// or normalized name when only one tool has it), or why not, in words a model can act on.
    pub fn resolve(&self, written: &str) -> Result<&ToolInfo, String> {
        if let Some(tool) = self.tools.iter().find(|t| t.name == written) {
            return Ok(tool);
        }
        let key = name_key(written);
        let qualified = |t: &&ToolInfo| {
            self.qualified_name(t).is_some_and(|q| name_key(&q) == key)
                || (t.source != ToolSource::Native && name_key(&t.source.label()) == key)
        };
        if let Some(tool) = self.tools.iter().find(qualified) {
            return Ok(tool);
        }
        let owning: Vec<&ToolInfo> = self
            .tools
            .iter()
            .filter(|t| t.source != ToolSource::Native && (t.is_named(written) || name_key(&t.original_name) == key))
            .collect();
        match owning.as_slice() {
            [one] => Ok(one),
            [] => {
                let nearest = self.search(written, 1).into_iter().next().map(|m| m.name);
                Err(match nearest {
                    Some(name) => format!("no tool is named {written:?}; the nearest match is {name:?}"),
                    None => format!("no tool is named {written:?}; search_tools finds tools by what they do"),
                })
            }
            several => {
                let names: Vec<String> = several.iter().filter_map(|t| self.qualified_name(t)).collect();
                Err(format!("{written:?} names several tools; write one of {}", names.join(", ")))
            }
        }
    }

    /// `search_tools`' answer to `query`: the first `limit` matches, then the (up to `SEARCH_ANSWER_EXTENSIONS`)
    /// extensions whose tools match it best, each with its tools' names, as many as keep the answer within
    /// `SEARCH_ANSWER_MAX_BYTES` (the matches' lines are cut to `SEARCH_LINE_MAX_CHARS` first).
    pub fn answer(&self, query: &str, limit: usize, favoured: impl Fn(&str) -> bool) -> SearchAnswer {
        let ranked = self.ranked(query, favoured);
        let matches: Vec<AnswerMatch> = ranked
            .iter()
            .take(limit)
            .map(|(i, _)| {
                let tool = &self.tools[*i];
                AnswerMatch {
                    name: tool.name.clone(),
                    description: one_line(&tool.description),
                    effect: tool.effect,
                    source: tool.source.label(),
                }
            })
            .collect();
        let mut answer = SearchAnswer { matches, extensions: Vec::new() };
        let shown: HashSet<&str> = answer.matches.iter().map(|m| m.name.as_str()).collect();
        for extension in self.best_extensions(&ranked) {
            let tools: Vec<String> = self
                .tools
                .iter()
                .filter(|t| t.source.extension() == extension && !shown.contains(t.name.as_str()))
                .map(|t| t.original_name.clone())
                .collect();
            let mut entry = ExtensionMatch { extension, tools, more: 0 };
            // As many of its names as fit; none fit, it is left out (and so are the next ones).
            while !entry.tools.is_empty() && answer_bytes(&answer, Some(&entry)) > SEARCH_ANSWER_MAX_BYTES {
                entry.tools.pop();
                entry.more += 1;
            }
            if entry.tools.is_empty() {
                break;
            }
            answer.extensions.push(entry);
        }
        answer
    }

    /// The extensions (not CLAT's native tools) whose tools score best for a query: the sum of their tools'
    /// scores among the first `RANKS_SEEN` matches.
    fn best_extensions(&self, ranked: &[(usize, f32)]) -> Vec<String> {
        let mut totals: HashMap<String, f32> = HashMap::new();
        let mut order = Vec::new();
        for (i, score) in ranked.iter().take(RANKS_SEEN) {
            let source = &self.tools[*i].source;
            if *source == ToolSource::Native {
                continue;
            }
            let extension = source.extension();
            if !totals.contains_key(&extension) {
                order.push(extension.clone());
            }
            *totals.entry(extension).or_default() += score;
        }
        order.sort_by(|a, b| totals[b].total_cmp(&totals[a]));
        order.truncate(SEARCH_ANSWER_EXTENSIONS);
        order
    }

    /// How a table of queries fares: where each finds its tool, Recall@5 and @10, MRR, and whether the first
    /// answer (the default page) names it.
    pub fn evaluate(&self, cases: &[SearchCase], page: usize) -> SearchEvaluation {
        let mut evaluation = SearchEvaluation {
            rows: Vec::new(),
            recall_at_5: 0,
            recall_at_10: 0,
            mrr: 0.0,
            named_in_first_answer: 0,
            largest_answer_bytes: 0,
        };
        for case in cases {
            let ranked = self.search(&case.query, RANKS_SEEN);
            let rank = ranked.iter().position(|m| m.name == case.tool).map(|r| r + 1);
            let answer = self.answer(&case.query, page, |_| false);
            evaluation.largest_answer_bytes = evaluation.largest_answer_bytes.max(answer_bytes(&answer, None));
            let own = self.tools.iter().find(|t| t.name == case.tool);
            let named = answer.matches.iter().any(|m| m.name == case.tool)
                || own.is_some_and(|tool| {
                    answer
                        .extensions
                        .iter()
                        .any(|e| e.extension == tool.source.extension() && e.tools.contains(&tool.original_name))
                });
            evaluation.recall_at_5 += usize::from(rank.is_some_and(|r| r <= 5));
            evaluation.recall_at_10 += usize::from(rank.is_some_and(|r| r <= 10));
            evaluation.mrr += rank.map_or(0.0, |r| 1.0 / r as f64);
            evaluation.named_in_first_answer += usize::from(named);
            let first = ranked.first().map(|m| m.name.clone()).filter(|name| *name != case.tool);
            evaluation.rows.push(EvaluatedCase {
                query: case.query.clone(),
                tool: case.tool.clone(),
                rank,
                named_in_first_answer: named,
                first,
            });
        }
        if !cases.is_empty() {
            evaluation.mrr /= cases.len() as f64;
        }
        evaluation
    }
}

/// The first line of a description, cut to `SEARCH_LINE_MAX_CHARS` (with `…`).
fn one_line(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= SEARCH_LINE_MAX_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(SEARCH_LINE_MAX_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

/// The size of `answer` serialized, with `extra` added to its extensions.
fn answer_bytes(answer: &SearchAnswer, extra: Option<&ExtensionMatch>) -> usize {
    let mut extensions: Vec<&ExtensionMatch> = answer.extensions.iter().collect();
    extensions.extend(extra);
    json!({ "matches": answer.matches, "extensions": extensions }).to_string().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::SEARCH_RESULTS_DEFAULT;

    #[test]
    fn identifiers_split_into_their_words() {
        assert_eq!(split_words("read_file"), ["read", "file"]);
        assert_eq!(split_words("getHTTPResponse v2Api"), ["get", "HTTP", "Response", "v2", "Api"]);
        assert_eq!(split_words("mcp:github/create-issue"), ["mcp", "github", "create", "issue"]);
        let words = Words::new(["work", "log", "logs"].map(String::from).into());
        assert_eq!(words.tokenize("Reading the files of a Project"), ["read", "file", "project"]);
        assert_eq!(words.tokenize("worklogs"), ["work", "log", "worklog"]);
        assert_eq!(words.tokenize("jira worklog"), ["jira", "work", "log", "worklog"]);
    }

    fn tool(server: &str, own: &str, description: &str) -> ToolInfo {
        ToolInfo {
            name: format!("mcp_{server}_{own}"),
            source: ToolSource::Mcp { server: server.into(), tool: own.into() },
            original_name: own.into(),
            effect: Effect::Write,
            effect_reason: String::new(),
            description: description.into(),
            input_schema: json!({ "type": "object" }),
            output_schema: None,
            schema: crate::registry::SchemaSize::of_bytes(0),
        }
    }

    fn index() -> ToolIndex {
        ToolIndex::new(vec![
            tool("tracker", "create_issue", "Create an issue in a project"),
            tool("tracker", "log_work", "Record time spent on an issue"),
            tool("tracker", "get_issue", "Get one issue with its fields"),
            tool("github", "get_issue", "Get an issue of a repository"),
            tool("chat", "post_message", "Send a message to a channel"),
        ])
    }

    fn names(matches: &[ToolMatch]) -> Vec<&str> {
        matches.iter().map(|m| m.name.as_str()).collect()
    }

    #[test]
    fn a_tool_s_name_or_a_selection_comes_first() {
        let index = index();
        assert_eq!(names(&index.search("mcp_tracker_log_work", 1)), ["mcp_tracker_log_work"]);
        assert_eq!(names(&index.search("log-work", 1)), ["mcp_tracker_log_work"]);
        assert_eq!(names(&index.search("tracker/log_work", 1)), ["mcp_tracker_log_work"]);
        let selected = index.search("select:mcp_chat_post_message, github/get_issue", 5);
        assert_eq!(names(&selected)[..2], ["mcp_chat_post_message", "mcp_github_get_issue"]);
        assert!(selected[0].score > selected[2].score, "{selected:?}");
    }

    #[test]
    fn task_verbs_and_compounds_reach_the_tools_words() {
        let index = index();
        // "open a ticket" is a creation; "worklog" is log work.
        assert_eq!(index.search("open an issue about the crash", 1)[0].name, "mcp_tracker_create_issue");
        assert_eq!(index.search("jira worklog", 1)[0].name, "mcp_tracker_log_work");
        assert_eq!(index.search("tell the channel we shipped", 1)[0].name, "mcp_chat_post_message");
    }

    #[test]
    fn resolve_takes_every_name_a_search_shows_and_says_what_to_write_otherwise() {
        let index = index();
        for written in ["mcp_tracker_log_work", "log_work", "tracker/log_work", "mcp:tracker/log_work", "log-work"] {
            assert_eq!(index.resolve(written).map(|t| t.name.as_str()), Ok("mcp_tracker_log_work"), "{written}");
        }
        let several = index.resolve("get_issue").unwrap_err();
        assert!(several.contains("github/get_issue") && several.contains("tracker/get_issue"), "{several}");
        let unknown = index.resolve("log_wrok").unwrap_err();
        assert!(unknown.starts_with("no tool is named \"log_wrok\""), "{unknown}");
    }

    #[test]
    fn the_first_answer_shows_the_best_extensions_names_within_its_size() {
        let answer = index().answer("issue", 1, |_| false);
        assert_eq!(answer.matches.len(), 1);
        let tracker = answer.extensions.iter().find(|e| e.extension == "mcp:tracker").expect("tracker matches");
        assert!(tracker.tools.len() >= 2 && !tracker.tools.contains(&answer.matches[0].name), "{answer:?}");

        // An extension of 400 tools with long descriptions: its names are cut to the bound, with how many more.
        let long = "Does a thing to the widgets of the project. ".repeat(10);
        let many: Vec<ToolInfo> =
            (0..400).map(|i| tool("widgets", &format!("widget_operation_number_{i}"), &long)).collect();
        let answer = ToolIndex::new(many).answer("widget operation", SEARCH_RESULTS_DEFAULT, |_| false);
        let bytes = json!(answer).to_string().len();
        assert!(bytes <= SEARCH_ANSWER_MAX_BYTES, "{bytes} bytes");
        assert!(answer.matches.iter().all(|m| m.description.chars().count() <= SEARCH_LINE_MAX_CHARS));
        assert_eq!(answer.extensions.len(), 1);
        assert_eq!(answer.extensions[0].tools.len() + answer.extensions[0].more, 400 - SEARCH_RESULTS_DEFAULT);
        assert!(answer.extensions[0].more > 0);
    }

    #[test]
    fn the_first_answer_names_at_most_the_best_few_extensions() {
        // Six servers each with two tools matching the query: the answer names the best SEARCH_ANSWER_EXTENSIONS.
        let tools: Vec<ToolInfo> = (0..6)
            .flat_map(|i| {
                let server = format!("server{i}");
                let extra = "report ".repeat(6 - i);
                [
                    tool(&server, "make_report", &format!("Make a {extra}")),
                    tool(&server, "list_reports", "List the reports"),
                ]
            })
            .collect();
        let answer = ToolIndex::new(tools).answer("report", 2, |_| false);
        let named: Vec<&str> = answer.extensions.iter().map(|e| e.extension.as_str()).collect();
        assert_eq!(named.len(), SEARCH_ANSWER_EXTENSIONS, "{answer:?}");
        assert!(named.iter().all(|e| e.starts_with("mcp:server")), "{named:?}");
    }
}
