//! What an install asks at a terminal: whether a package may get the
//! capabilities it declares (the door's `GrantQuestion`; headless, nobody is
//! asked and `--grant` is needed), and its imports as people read them.

use std::io::IsTerminal;

use crate::platform::GrantQuestion;
use crate::{Capabilities, Manifest};

/// Asks at the terminal, when stdin and stderr are one; else nobody is asked.
pub(crate) fn terminal_grants() -> Option<Box<dyn GrantQuestion>> {
    (std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
        .then(|| Box::new(TerminalGrants) as Box<dyn GrantQuestion>)
}

struct TerminalGrants;

impl GrantQuestion for TerminalGrants {
    fn grant(&self, manifest: &Manifest, new: Option<&Capabilities>, imports: &[String]) -> bool {
        let mut prompt = format!("Plugin {} {} asks for:\n", manifest.name, manifest.version);
        for line in manifest.capabilities.describe() {
            prompt.push_str(&format!("  - {line}\n"));
        }
        if let Some(new) = new {
            prompt.push_str(&format!("  (new since the installed version: {})\n", new.describe().join(", ")));
        }
        if !imports.is_empty() {
            prompt.push_str(&format!("Its component imports: {}\n", imports_summary(imports)));
        }
        prompt.push_str("Its tools count as reaching the network. Grant? [y/N] ");
        eprint!("{prompt}");
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        matches!(answer.trim(), "y" | "Y" | "yes")
    }
}

/// Imports grouped by package, for people: `wasi:http@0.2.12 (types, outgoing-handler)`.
pub(crate) fn imports_summary(imports: &[String]) -> String {
    let mut packages: Vec<(String, Vec<String>)> = Vec::new();
    for import in imports {
        let (name, version) = import.rsplit_once('@').map_or((import.as_str(), ""), |(n, v)| (n, v));
        let (package, interface) = name.split_once('/').unwrap_or((name, ""));
        let key = if version.is_empty() { package.to_string() } else { format!("{package}@{version}") };
        match packages.iter_mut().find(|(k, _)| *k == key) {
            Some((_, interfaces)) => interfaces.push(interface.to_string()),
            None => packages.push((key, vec![interface.to_string()])),
        }
    }
    packages.iter().map(|(key, interfaces)| format!("{key} ({})", interfaces.join(", "))).collect::<Vec<_>>().join("; ")
}
