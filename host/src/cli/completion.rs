//! Shell completions. `clat completions SHELL` prints the shell's
//! registration of clat's dynamic completer (clap_complete's `CompleteEnv`):
//! as the user types, the shell asks clat itself (`COMPLETE=SHELL clat -- …`)
//! and gets command and option names, the values of `--mode` / `--sandbox`,
//! and names from the home: tools (CLAT's native ones, and the tools each MCP
//! server or installed plugin offered when it last started or was installed
//! — its listing in the cache), servers
//! (`mcp.json`), installed plugins. Nothing is started or contacted, and a
//! home that cannot be read completes with what can.

use clap_complete::engine::CompletionCandidate;

use crate::platform::Platform;

/// The home the completer reads: `$CLAT_HOME`, else `~/.clat` (the words
/// being completed are not parsed, so `--home` is not seen).
fn platform() -> Option<Platform> {
    Platform::open(None).ok()
}

/// Tool names: the native tools, and every tool of the servers' and the installed plugins' last listings.
pub(crate) fn tool_names() -> Vec<CompletionCandidate> {
    // A home that cannot be found still completes CLAT's own tools.
    let known = match platform() {
        Some(platform) => platform.known_tool_names(),
        None => crate::NATIVE_TOOL_NAMES.iter().map(|n| ("native".to_string(), n.to_string())).collect(),
    };
    known.into_iter().map(|(owner, tool)| CompletionCandidate::new(tool).help(Some(owner.into()))).collect()
}

/// The servers `mcp.json` configures.
pub(crate) fn server_names() -> Vec<CompletionCandidate> {
    let Some(list) = platform().and_then(|p| p.servers().list().ok()) else { return Vec::new() };
    list.servers.into_iter().map(|s| CompletionCandidate::new(s.name)).collect()
}

/// The installed plugins.
pub(crate) fn plugin_names() -> Vec<CompletionCandidate> {
    let Some(installed) = platform().and_then(|p| p.plugins(None).list().ok()) else { return Vec::new() };
    installed
        .iter()
        .map(|p| CompletionCandidate::new(&p.manifest.name).help(Some(p.manifest.version.clone().into())))
        .collect()
}

/// Answer the shell when it asks for completions (`COMPLETE` is set): the
/// process prints the candidates and exits here; otherwise this returns.
pub(crate) fn answer_if_asked() {
    clap_complete::CompleteEnv::with_factory(<super::Cli as clap::CommandFactory>::command).bin("clat").complete();
}

/// `clat completions SHELL`: the registration script, calling this very binary.
pub(crate) fn registration(shell: clap_complete::Shell) -> std::io::Result<Vec<u8>> {
    use clap_complete::env::EnvCompleter;
    let completer = std::env::current_exe()?.display().to_string();
    let mut script = Vec::new();
    let shells: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &clap_complete::env::Bash,
        clap_complete::Shell::Zsh => &clap_complete::env::Zsh,
        clap_complete::Shell::Fish => &clap_complete::env::Fish,
        clap_complete::Shell::Elvish => &clap_complete::env::Elvish,
        clap_complete::Shell::PowerShell => &clap_complete::env::Powershell,
        _ => &clap_complete::env::Bash,
    };
    shells.write_registration("COMPLETE", "clat", "clat", &completer, &mut script)?;
    Ok(script)
}
