//! One `server.json` package or remote made into an `mcp.json` entry: an npm,
//! PyPI or OCI package run over stdio (`npx`, `uvx`, `docker run`) with its
//! version pinned, or a Streamable HTTP remote; every value the user supplies
//! written as a `${VAR}` reference, what it runs checked for control
//! characters and options, and what it will do said in words.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Argument, Input, KeyValue, Needed, Package, Transport, Via, shown};

pub(super) enum Candidate<'a> {
    Package(&'a Package),
    Remote(&'a Transport),
}

/// An entry under construction.
pub(super) struct Made {
    pub(super) entry: Map<String, Value>,
    pub(super) runs: String,
    pub(super) effect: String,
    pub(super) needs: Vec<Needed>,
}

fn has_control(value: &Value) -> bool {
    match value {
        Value::String(text) => text.chars().any(char::is_control),
        Value::Array(items) => items.iter().any(has_control),
        Value::Object(map) => map.iter().any(|(k, v)| k.chars().any(char::is_control) || has_control(v)),
        _ => false,
    }
}

pub(super) fn package_via(package: &Package) -> Result<Via, String> {
    match package.registry_type.as_str() {
        "npm" => Ok(Via::Npm),
        "pypi" => Ok(Via::Pypi),
        "oci" => Ok(Via::Oci),
        other => Err(format!("{} packages are not run by CLAT (npm, pypi and oci are)", shown(other))),
    }
}

impl Candidate<'_> {
    pub(super) fn label(&self) -> String {
        match self {
            Candidate::Package(p) => format!("{} package {}", shown(&p.registry_type), shown(&p.identifier)),
            Candidate::Remote(r) => format!("{} remote {}", shown(&r.kind), shown(r.url.as_deref().unwrap_or("?"))),
        }
    }

    pub(super) fn entry(&self, via: Via, local_name: &str) -> Result<Made, String> {
        let made = match self {
            Candidate::Package(p) => package_entry(p, via, local_name)?,
            Candidate::Remote(r) => remote_entry(r, local_name)?,
        };
        // What runs is shown and written as it is: a control character in it is refused, not cleaned.
        if has_control(&Value::Object(made.entry.clone())) {
            return Err("its command, arguments, URL or values hold control characters".into());
        }
        Ok(made)
    }
}

/// `NAME` as a variable name: upper case, every other character `_`.
fn variable_name(name: &str) -> String {
    let mut out: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

fn is_identifier(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A literal of the document as `mcp.json` text: `${` is written `$${`, so it is never expanded.
fn literal(text: &str) -> String {
    text.replace("${", "$${")
}

/// A version that pins: not empty, not `latest`, not a range.
pub(super) fn pinned(version: Option<&str>, what: &str) -> Result<String, String> {
    let Some(version) = version.filter(|v| !v.is_empty()) else {
        return Err(format!("its {what} names no version, so nothing would be pinned"));
    };
    let range = version == "latest"
        || version.ends_with(".x")
        || version.chars().any(|c| matches!(c, '^' | '~' | '>' | '<' | '=' | '*' | '|' | ' ' | ','));
    if range || version.starts_with('-') || version.chars().any(char::is_control) {
        return Err(format!(
            "its {what} version {:?} is not one fixed version, so nothing would be pinned",
            shown(version)
        ));
    }
    Ok(version.to_string())
}

/// `MAJOR.MINOR.PATCH`, with an optional `-prerelease` and `+build`.
pub(super) fn is_full_semver(version: &str) -> bool {
    let core = version.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// Collects the `${VAR}` references an entry makes and what each fills. A
/// package's environment variable is referred to by its own name (the name
/// its README tells users to set); every other value — an argument, a header,
/// a `{variable}` of a template — by a name derived from the local server
/// name and its key (`SEARCH_API_TOKEN`), so no document can have an entry
/// send `${PATH}` or `${HOME}` somewhere.
struct Inputs {
    prefix: String,
    needs: Vec<Needed>,
}

impl Inputs {
    fn new(local_name: &str) -> Inputs {
        Inputs { prefix: variable_name(local_name), needs: Vec::new() }
    }

    /// The variable for a value of the document's naming: `{PREFIX}_{KEY}`.
    fn derived(&self, key: &str) -> String {
        format!("{}_{}", self.prefix, variable_name(key).trim_start_matches('_'))
    }

    /// The text for one input: its fixed value (its `{var}`s filled), else a
    /// reference to `variable` (with its default), else nothing (an optional
    /// input with neither is left out).
    fn text(
        &mut self,
        input: &Input,
        variables: &BTreeMap<String, Input>,
        variable: &str,
        fills: &str,
    ) -> Result<Option<String>, String> {
        if let Some(value) = &input.value {
            return self.template(value, variables, fills).map(Some);
        }
        if !input.is_required && input.default.is_none() {
            return Ok(None);
        }
        self.reference(input, variable, fills).map(Some)
    }

    fn reference(&mut self, input: &Input, variable: &str, fills: &str) -> Result<String, String> {
        if !is_identifier(variable) {
            return Err(format!("{fills} cannot be named as a variable ({:?})", shown(variable)));
        }
        let default = input.default.clone().filter(|d| !d.contains('}') && !d.contains('$'));
        if !self.needs.iter().any(|n| n.variable == variable) {
            self.needs.push(Needed {
                variable: variable.to_string(),
                fills: fills.to_string(),
                required: input.is_required,
                secret: input.is_secret,
                default: default.as_deref().map(shown),
                choices: input.choices.iter().map(|c| shown(c)).collect(),
                description: shown(&input.description),
            });
        }
        Ok(match default {
            Some(default) => format!("${{{variable}:-{default}}}"),
            None => format!("${{{variable}}}"),
        })
    }

    /// A value whose `{name}`s are the document's variables: each becomes a
    /// reference (or its fixed value); an unknown `{name}` stays as written.
    fn template(&mut self, value: &str, variables: &BTreeMap<String, Input>, fills: &str) -> Result<String, String> {
        // Literal text is gathered and escaped as a whole, so a `$` and a `{`
        // on either side of a piece still read as the literal `${` they are.
        let mut out = String::new();
        let mut pending = String::new();
        let mut rest = value;
        while let Some(open) = rest.find('{') {
            pending.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match after.find('}').map(|close| (&after[..close], close)) {
                Some((name, close)) if variables.contains_key(name) => {
                    let input = &variables[name];
                    match &input.value {
                        Some(fixed) => pending.push_str(fixed),
                        None => {
                            if pending.ends_with('$') {
                                return Err(format!(
                                    "{fills} has a `$` right before {{{name}}}, which cannot be written"
                                ));
                            }
                            let reference =
                                self.reference(input, &self.derived(name), &format!("{{{name}}} of {fills}"))?;
                            out.push_str(&literal(&std::mem::take(&mut pending)));
                            out.push_str(&reference);
                        }
                    }
                    rest = &after[close + 1..];
                }
                _ => {
                    pending.push('{');
                    rest = after;
                }
            }
        }
        pending.push_str(rest);
        out.push_str(&literal(&pending));
        Ok(out)
    }

    /// The command-line words of some arguments.
    fn arguments(&mut self, arguments: &[Argument], what: &str) -> Result<Vec<String>, String> {
        let mut words = Vec::new();
        for argument in arguments {
            match argument.kind.as_str() {
                "positional" => {
                    let hint = argument.value_hint.as_deref().unwrap_or("value");
                    let fills = format!("{what} argument <{}>", shown(hint));
                    let variable = self.derived(hint);
                    if let Some(text) = self.text(&argument.input, &argument.variables, &variable, &fills)? {
                        words.push(text);
                    }
                }
                "named" => {
                    let Some(name) = argument.name.as_deref().filter(|n| !n.is_empty()) else {
                        return Err(format!("a named {what} argument has no name"));
                    };
                    if !name.starts_with('-') || name.chars().any(|c| c.is_control() || c.is_whitespace()) {
                        return Err(format!("the {what} argument name {:?} is not a flag", shown(name)));
                    }
                    let fills = format!("{what} argument {}", shown(name));
                    let variable = self.derived(name.trim_start_matches('-'));
                    let boolean_flag = argument.input.value.is_none()
                        && argument.input.default.is_none()
                        && argument.value_hint.is_none()
                        && argument.input.is_required;
                    if boolean_flag {
                        words.push(literal(name));
                    } else if let Some(text) = self.text(&argument.input, &argument.variables, &variable, &fills)? {
                        words.push(literal(name));
                        words.push(text);
                    }
                }
                other => return Err(format!("a {what} argument is of unknown type {:?}", shown(other))),
            }
        }
        Ok(words)
    }

    /// `env` entries for some environment variables.
    fn environment(&mut self, variables: &[KeyValue]) -> Result<Map<String, Value>, String> {
        let mut env = Map::new();
        for variable in variables {
            if !is_identifier(&variable.name) {
                return Err(format!("the environment variable name {:?} is not an identifier", shown(&variable.name)));
            }
            let fills = format!("env {}", variable.name);
            if let Some(text) = self.text(&variable.input, &variable.variables, &variable.name, &fills)? {
                env.insert(variable.name.clone(), Value::String(text));
            }
        }
        Ok(env)
    }
}

fn package_entry(package: &Package, via: Via, local_name: &str) -> Result<Made, String> {
    if let Some(transport) = &package.transport
        && transport.kind != "stdio"
    {
        return Err(format!("it serves {} itself, and CLAT starts packages over stdio only", shown(&transport.kind)));
    }
    let identifier = &package.identifier;
    if identifier.is_empty() || identifier.starts_with('-') || identifier.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!("its identifier {:?} is not a package name", shown(identifier)));
    }
    if matches!(via, Via::Npm | Via::Pypi) {
        runner_arguments_run_only_the_package(via, &package.runtime_arguments)?;
    }
    let mut inputs = Inputs::new(local_name);
    let runtime = inputs.arguments(&package.runtime_arguments, "runtime")?;
    let arguments = inputs.arguments(&package.package_arguments, "package")?;
    let env = inputs.environment(&package.environment_variables)?;
    let base = package.registry_base_url.as_deref().map(|b| b.trim_end_matches('/'));
    let (command, mut args, effect) = match via {
        Via::Npm => {
            let version = pinned(package.version.as_deref(), "npm package")?;
            // npm reads `1`, `1.2` or a dist-tag (`next`) as a range: only a full version pins.
            if !is_full_semver(&version) {
                return Err(format!(
                    "its npm package version {:?} is not a full version (MAJOR.MINOR.PATCH), so nothing would be pinned",
                    shown(&version)
                ));
            }
            let mut args = vec!["-y".to_string()];
            if let Some(base) = base.filter(|b| *b != "https://registry.npmjs.org") {
                args.push(format!("--registry={}", literal(base)));
            }
            args.extend(runtime);
            args.push(literal(&format!("{identifier}@{version}")));
            ("npx", args, runs_as_you("npx"))
        }
        Via::Pypi => {
            let version = pinned(package.version.as_deref(), "PyPI package")?;
            let mut args = Vec::new();
            if let Some(base) = base.filter(|b| *b != "https://pypi.org") {
                args.push("--index-url".to_string());
                args.push(literal(&format!("{base}/simple/")));
            }
            args.extend(runtime);
            args.push(literal(&format!("{identifier}=={version}")));
            ("uvx", args, runs_as_you("uvx"))
        }
        Via::Oci => {
            let image = oci_reference(package)?;
            let mut args = vec!["run".to_string(), "-i".to_string(), "--rm".to_string()];
            args.extend(runtime);
            for name in env.keys() {
                args.push("-e".to_string());
                args.push(name.clone());
            }
            args.push(literal(&image));
            (
                "docker",
                args,
                "docker runs the image in a container: it sees what its runtime arguments mount and pass, and the \
                 network docker gives it"
                    .to_string(),
            )
        }
        Via::Remote => return Err("a package is not a remote".into()),
    };
    args.extend(arguments);
    let runs = std::iter::once(command.to_string()).chain(args.iter().cloned()).collect::<Vec<_>>().join(" ");
    let mut entry = Map::new();
    entry.insert("command".into(), Value::String(command.into()));
    entry.insert("args".into(), json!(args));
    if !env.is_empty() {
        entry.insert("env".into(), Value::Object(env));
    }
    Ok(Made { entry, runs, effect, needs: inputs.needs })
}

/// The runtime arguments `npx` and `uvx` take from a registry document: only
/// flags that change how the pinned package runs, never what runs. A
/// positional argument is another package or command for the runner, and flags
/// such as `npx --package` / `--call` or `uvx --with` / `--from` /
/// `--index-url` name other packages or sources, at no fixed version: refused,
/// so the entry runs exactly the pinned package.
fn runner_arguments_run_only_the_package(via: Via, arguments: &[Argument]) -> Result<(), String> {
    let (runner, allowed): (&str, &[&str]) = match via {
        Via::Npm => ("npx", &["-y", "--yes", "-q", "--quiet", "--prefer-offline", "--prefer-online", "--no-audit"]),
        _ => ("uvx", &["-q", "--quiet", "--offline", "--no-cache", "--refresh", "--python", "-p", "--isolated"]),
    };
    for argument in arguments {
        match (argument.kind.as_str(), argument.name.as_deref()) {
            ("named", Some(name)) if allowed.contains(&name) => {
                // An interpreter is named by its version, never by a path to run.
                let given = [argument.input.value.as_deref(), argument.input.default.as_deref()];
                if given.into_iter().flatten().any(|v| v.contains('/') || v.contains('\\')) {
                    return Err(format!("its runtime argument {} names a path for {runner} to run", shown(name)));
                }
            }
            ("named", Some(name)) => {
                return Err(format!(
                    "its runtime argument {} is not one CLAT passes to {runner}: it could make {runner} run another \
                     package or fetch from another source than the pinned one",
                    shown(name)
                ));
            }
            _ => {
                return Err(format!(
                    "it gives {runner} a positional runtime argument, which would be another package or command to \
                     run, at no fixed version"
                ));
            }
        }
    }
    Ok(())
}

/// The effect of a package a runner (`npx`, `uvx`) fetches and starts here.
fn runs_as_you(runner: &str) -> String {
    format!(
        "{runner} fetches the package and runs it on this machine as you: it can read, change and run whatever you \
         can, with your network and environment (no sandbox)"
    )
}

/// An OCI package's image reference, pinned: the identifier's own tag or
/// digest, else its `version` as the tag (on its registry's host).
fn oci_reference(package: &Package) -> Result<String, String> {
    let identifier = &package.identifier;
    let last = identifier.rsplit('/').next().unwrap_or(identifier);
    if let Some((_, digest)) = identifier.split_once('@') {
        if !digest.starts_with("sha256:") {
            return Err(format!("its image digest {:?} is not sha256", shown(digest)));
        }
        return Ok(identifier.clone());
    }
    if let Some((_, tag)) = last.split_once(':') {
        pinned(Some(tag), "image tag")?;
        return Ok(identifier.clone());
    }
    let tag = pinned(package.version.as_deref(), "image")?;
    let host = package
        .registry_base_url
        .as_deref()
        .map(|b| b.trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/'))
        .filter(|h| !matches!(*h, "docker.io" | "registry-1.docker.io" | "index.docker.io"));
    Ok(match host {
        Some(host) if !identifier.starts_with(&format!("{host}/")) => format!("{host}/{identifier}:{tag}"),
        _ => format!("{identifier}:{tag}"),
    })
}

fn remote_entry(remote: &Transport, local_name: &str) -> Result<Made, String> {
    match remote.kind.as_str() {
        "streamable-http" => {}
        "sse" => return Err("the deprecated HTTP+SSE transport, which CLAT does not speak".into()),
        other => return Err(format!("transport {:?} is not one CLAT speaks", shown(other))),
    }
    let Some(url) = remote.url.as_deref() else {
        return Err("it names no url".into());
    };
    let mut inputs = Inputs::new(local_name);
    let url = inputs.template(url, &remote.variables, "url")?;
    if !(url.starts_with("https://") || url.starts_with("http://") || url.starts_with("${")) || url.contains(' ') {
        return Err(format!("its url {:?} is not an http(s) URL", shown(&url)));
    }
    let mut headers = Map::new();
    for header in &remote.headers {
        let valid = !header.name.is_empty()
            && header.name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(format!("the header name {:?} is not a header name", shown(&header.name)));
        }
        let fills = format!("header {}", header.name);
        let mut variables = header.variables.clone();
        for (name, input) in &remote.variables {
            variables.entry(name.clone()).or_insert_with(|| input.clone());
        }
        let variable = inputs.derived(&header.name);
        if let Some(text) = inputs.text(&header.input, &variables, &variable, &fills)? {
            headers.insert(header.name.clone(), Value::String(text));
        }
    }
    let sends = if headers.is_empty() {
        String::new()
    } else {
        format!(", sending the headers {}", headers.keys().cloned().collect::<Vec<_>>().join(", "))
    };
    let effect = format!(
        "nothing runs on this machine: CLAT contacts the server over the network{sends}; it holds what you send it"
    );
    let mut entry = Map::new();
    entry.insert("url".into(), Value::String(url.clone()));
    if !headers.is_empty() {
        entry.insert("headers".into(), Value::Object(headers));
    }
    Ok(Made { entry, runs: url, effect, needs: inputs.needs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_fills_known_variables_and_keeps_the_rest_literal() {
        let mut inputs = Inputs::new("srv");
        let variables: BTreeMap<String, Input> = serde_json::from_value(json!({
            "tenant": { "isRequired": true, "isSecret": false },
            "region": { "default": "eu" },
            "fixed": { "value": "x" }
        }))
        .unwrap();
        let text = inputs.template("https://{tenant}.{region}.{fixed}/{other}/${HOME}", &variables, "url").unwrap();
        assert_eq!(text, "https://${SRV_TENANT}.${SRV_REGION:-eu}.x/{other}/$${HOME}");
        assert_eq!(inputs.needs.iter().map(|n| n.variable.as_str()).collect::<Vec<_>>(), ["SRV_TENANT", "SRV_REGION"]);
        // A `$` just before a reference would turn it into a literal: refused, not written wrong.
        assert!(inputs.template("pa$${tenant}", &variables, "url").is_err());
        assert_eq!(inputs.template("$${fixed}", &variables, "url").unwrap(), "$$x");
    }
}
