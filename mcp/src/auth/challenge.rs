//! The `WWW-Authenticate` challenge a resource server answers 401 or 403 with
//! (RFC 6750 §3, RFC 9728 §5.1): its `Bearer` parameters, of which MCP uses
//! `resource_metadata` (where the protected-resource metadata is), `scope`
//! (what the request needs) and `error` (`invalid_token`, `insufficient_scope`).

/// The `Bearer` challenge of a response, as far as MCP uses it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    /// The scopes the server asks for, space-separated on the wire.
    pub scope: Option<Vec<String>>,
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge among `headers`' `WWW-Authenticate` values; an
    /// empty one when there is none (a bare 401 still starts discovery).
    pub fn from_headers(headers: &reqwest::header::HeaderMap) -> Challenge {
        headers
            .get_all(reqwest::header::WWW_AUTHENTICATE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .find_map(parse_bearer)
            .unwrap_or_default()
    }

    /// A 403 that asks for more scope (step-up).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The `Bearer` challenge in one header value, which may hold several
/// challenges (`Basic realm="x", Bearer scope="a b"`).
pub fn parse_bearer(value: &str) -> Option<Challenge> {
    let mut params = Params { rest: value };
    let mut in_bearer = false;
    let mut found: Option<Challenge> = None;
    while let Some(item) = params.next() {
        match item {
            Item::Scheme(scheme) => {
                if in_bearer {
                    break;
                }
                in_bearer = scheme.eq_ignore_ascii_case("bearer");
                if in_bearer {
                    found = Some(Challenge::default());
                }
            }
            Item::Param(name, value) if in_bearer => {
                let challenge = found.get_or_insert_with(Challenge::default);
                match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => challenge.resource_metadata = Some(value),
                    "scope" => {
                        challenge.scope = Some(value.split_whitespace().map(str::to_string).collect());
                    }
                    "error" => challenge.error = Some(value),
                    _ => {}
                }
            }
            Item::Param(..) => {}
        }
    }
    found
}

enum Item {
    Scheme(String),
    Param(String, String),
}

/// A tokenizer for `challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]`
/// (RFC 9110 §11.6.1), forgiving about spaces and empty list elements.
struct Params<'a> {
    rest: &'a str,
}

impl Params<'_> {
    fn next(&mut self) -> Option<Item> {
        self.rest = self.rest.trim_start_matches(|c: char| c == ',' || c.is_ascii_whitespace());
        if self.rest.is_empty() {
            return None;
        }
        let end = self.rest.find(|c: char| c == '=' || c == ',' || c.is_ascii_whitespace()).unwrap_or(self.rest.len());
        let token = self.rest[..end].to_string();
        let after = self.rest[end..].trim_start_matches([' ', '\t']);
        if let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start_matches([' ', '\t']);
            if let Some(quoted) = value.strip_prefix('"') {
                let mut text = String::new();
                let mut chars = quoted.char_indices();
                let mut consumed = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                text.push(escaped);
                            }
                        }
                        '"' => {
                            consumed = i + 1;
                            break;
                        }
                        c => text.push(c),
                    }
                }
                self.rest = &quoted[consumed.min(quoted.len())..];
                return Some(Item::Param(token, text));
            }
            let end = value.find(|c: char| c == ',' || c.is_ascii_whitespace()).unwrap_or(value.len());
            // A token68 (`Bearer abc==`) ends in '='s: it is not a parameter.
            let text = value[..end].to_string();
            self.rest = &value[end..];
            return Some(Item::Param(token, text));
        }
        self.rest = &self.rest[end..];
        Some(Item::Scheme(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_parameters_quoted_and_bare() {
        let c = parse_bearer(
            r#"Bearer resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error=insufficient_scope"#,
        )
        .unwrap();
        assert_eq!(c.resource_metadata.as_deref(), Some("https://a.example/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(c.scope, Some(vec!["files:read".to_string(), "files:write".to_string()]));
        assert!(c.is_insufficient_scope());
    }

    #[test]
    fn the_bearer_challenge_among_others() {
        let c = parse_bearer(r#"Basic realm="x, y", Bearer realm="mcp", scope="a""#).unwrap();
        assert_eq!(c.scope, Some(vec!["a".to_string()]));
        assert_eq!(c.resource_metadata, None);
        // A later scheme's parameters are not the bearer's.
        let c = parse_bearer(r#"Bearer scope="a", DPoP algs="ES256", error="x""#).unwrap();
        assert_eq!(c.error, None);
        assert_eq!(parse_bearer(r#"Basic realm="only basic""#), None);
        assert_eq!(parse_bearer("Bearer"), Some(Challenge::default()));
        assert_eq!(
            parse_bearer(r#"bearer error="invalid_token" , , scope="s\"q""#).unwrap().scope.unwrap(),
            vec![r#"s"q"#]
        );
    }
}
