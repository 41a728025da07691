//! `${VAR}` and `${VAR:-default}` in an entry, expanded per server when it
//! starts (`ServerEntry::expand`) from the host's lookup, so a missing
//! variable fails only that server; every other `$` is kept byte for byte,
//! and `$${` is a literal `${`. What an entry reads is `ServerEntry::variables`.

use super::{CWD_LEAVES_HOME, EntryTransport, OAuthEntry, ServerEntry, cwd_leaves_home, is_http_url};

/// Why an entry's variables could not be expanded. Never holds a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("`{field}` uses ${{{variable}}}, which is not set and has no default")]
    Unset { field: String, variable: String },
    #[error("`url` is not an http:// or https:// URL once its variables are expanded")]
    NotHttp,
    #[error("{CWD_LEAVES_HOME}, once its variables are expanded")]
    CwdLeavesHome,
    #[error(
        "`{field}` uses ${{input:{id}}}, a VS Code input, which is asked for at a terminal and was not given: run \
         at a terminal, or put the value in clat's environment and write ${{env:NAME}} instead"
    )]
    Input { field: String, id: String },
}

/// An entry with its variables expanded, and the values that were
/// substituted (secrets, for redaction).
#[derive(Debug, Clone)]
pub struct Expanded {
    pub entry: ServerEntry,
    pub substituted: Vec<String>,
}

/// A variable reference at the start of `text` (just after its `$`): `{NAME}`
/// or `{NAME:-default}`, NAME an identifier. Returns the name, the default and
/// the length of the reference.
fn variable_at(text: &str) -> Option<(&str, Option<&str>, usize)> {
    let inner = text.strip_prefix('{')?;
    let end = inner.find('}')?;
    let (name, default) = match inner[..end].split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (&inner[..end], None),
    };
    // Cursor's and VS Code's `${env:NAME}` is `${NAME}`.
    let name = name.strip_prefix("env:").unwrap_or(name);
    is_variable_name(name).then_some((name, default, end + 2))
}

/// Expands `${VAR}` and `${VAR:-default}` (the default when VAR is unset or
/// empty) in one field's text, VAR an identifier (`${env:VAR}`, as Cursor and
/// VS Code write it, is `${VAR}`). `$${` writes a literal
/// `${`; every other `$` stays as written, byte for byte (`pa$$word`, a lone
/// `${`, `$HOME`).
fn expand_text(
    text: &str,
    field: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    substituted: &mut Vec<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(id) = after.strip_prefix("{input:").and_then(|t| t.split_once('}')).map(|(id, _)| id) {
            // VS Code's input: the value the user gave for this process, which the host's lookup holds as `input:ID`.
            let value = lookup(&format!("input:{id}"))
                .ok_or_else(|| ExpandError::Input { field: field.to_string(), id: id.to_string() })?;
            if !value.is_empty() {
                substituted.push(value.clone());
            }
            out.push_str(&value);
            rest = &after["{input:".len() + id.len() + 1..];
        } else if let Some((name, default, len)) = variable_at(after) {
            let value = match (lookup(name).filter(|v| !v.is_empty() || default.is_none()), default) {
                (Some(value), _) => value,
                (None, Some(default)) => default.to_string(),
                (None, None) => return Err(ExpandError::Unset { field: field.to_string(), variable: name.into() }),
            };
            if !value.is_empty() {
                substituted.push(value.clone());
            }
            out.push_str(&value);
            rest = &after[len..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether `name` can be a variable's name in a reference (`${NAME}`): an identifier.
pub fn is_variable_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The variables `text` refers to (`${VAR}`, `${VAR:-default}`, `${env:VAR}`), as `expand_text` reads them:
/// `$${` is a literal and a VS Code input (`${input:ID}`) is not a variable.
fn referenced_variables(text: &str, into: &mut std::collections::BTreeSet<String>) {
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix("${") {
            rest = tail;
        } else if let Some((name, _, len)) = variable_at(after) {
            into.insert(name.to_string());
            rest = &after[len..];
        } else {
            rest = after;
        }
    }
}

impl ServerEntry {
    /// Every variable of the caller's environment the entry refers to, in any field `expand` expands (defaults
    /// or not: a set variable is read): what an entry from a file someone else wrote would make CLAT send.
    pub fn variables(&self) -> std::collections::BTreeSet<String> {
        let mut names = std::collections::BTreeSet::new();
        match &self.transport {
            EntryTransport::Stdio { command, args, env, cwd, .. } => {
                for text in std::iter::once(command).chain(args).chain(env.values()).chain(cwd) {
                    referenced_variables(text, &mut names);
                }
            }
            EntryTransport::Http { url, headers, oauth } => {
                let oauth = oauth.iter().flat_map(|o| o.client_id.iter().chain(&o.client_secret));
                for text in std::iter::once(url).chain(headers.values()).chain(oauth) {
                    referenced_variables(text, &mut names);
                }
            }
        }
        names
    }

    /// The entry with its variables expanded from `lookup` (CLAT's environment)
    /// in `command`, `args`, `env` values, `cwd`, `url`, `headers` values and
    /// `oauth`'s `client_id` and `client_secret`.
    pub fn expand(&self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Expanded, ExpandError> {
        let mut substituted = Vec::new();
        let mut one = |text: &str, field: String| expand_text(text, &field, lookup, &mut substituted);
        let transport = match &self.transport {
            EntryTransport::Stdio { command, args, env, cwd, env_inherit } => EntryTransport::Stdio {
                command: one(command, "command".into())?,
                args: args.iter().enumerate().map(|(i, a)| one(a, format!("args[{i}]"))).collect::<Result<_, _>>()?,
                env: env.iter().map(|(k, v)| Ok((k.clone(), one(v, format!("env.{k}"))?))).collect::<Result<_, _>>()?,
                cwd: match cwd.as_deref().map(|c| one(c, "cwd".into())).transpose()? {
                    Some(cwd) if cwd_leaves_home(&cwd) => return Err(ExpandError::CwdLeavesHome),
                    cwd => cwd,
                },
                env_inherit: *env_inherit,
            },
            EntryTransport::Http { url, headers, oauth } => {
                let url = one(url, "url".into())?;
                if !is_http_url(&url) {
                    return Err(ExpandError::NotHttp);
                }
                let headers = headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), one(v, format!("headers.{k}"))?)))
                    .collect::<Result<_, _>>()?;
                let oauth = match oauth {
                    Some(oauth) => Some(OAuthEntry {
                        client_id: oauth.client_id.as_deref().map(|v| one(v, "oauth.client_id".into())).transpose()?,
                        client_secret: oauth
                            .client_secret
                            .as_deref()
                            .map(|v| one(v, "oauth.client_secret".into()))
                            .transpose()?,
                        ..oauth.clone()
                    }),
                    None => None,
                };
                EntryTransport::Http { url, headers, oauth }
            }
        };
        Ok(Expanded { entry: ServerEntry { transport, ..self.clone() }, substituted })
    }
}
