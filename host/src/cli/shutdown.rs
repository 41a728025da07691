//! Every way the `clat` process is asked to stop goes through one teardown.
//!
//! SIGINT, SIGTERM, SIGHUP and SIGQUIT, at any moment (mount, start-up, a
//! call, teardown), cancel the shutdown token: the command's run is cancelled
//! (its process groups die), extensions still starting are stopped, and the
//! scope closes in the spec's order (leases, stdin, grace, kill and reap,
//! join). A second signal kills every descendant at once and exits with
//! 128 + the signal's number.
//!
//! On Linux `clat` makes itself a child subreaper, so a descendant that left
//! its process group (`setsid`, a daemonizing wrapper) is re-parented to
//! `clat` rather than to init, and `kill_descendants` still finds it when
//! the command ends. Elsewhere, only what stayed in an owned process group
//! is killed. The one exception is what `clat` starts for the user rather
//! than for itself — the browser of an OAuth login — which runs in a process
//! group of its own that the sweep spares (`spare_process_group`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use crate::sync::Unpoisoned;
use tokio_util::sync::CancellationToken;

/// The process's stop request: cancelled by the first signal.
pub struct Shutdown {
    token: CancellationToken,
    signal: Arc<AtomicI32>,
}

impl Shutdown {
    /// Listen for the four stop signals. Must run inside the tokio runtime.
    pub fn listen() -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{SignalKind, signal};
        let token = CancellationToken::new();
        let received = Arc::new(AtomicI32::new(0));
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        let mut hangup = signal(SignalKind::hangup())?;
        let mut quit = signal(SignalKind::quit())?;
        let (cancel, first) = (token.clone(), Arc::clone(&received));
        tokio::spawn(async move {
            loop {
                let signo = tokio::select! {
                    _ = interrupt.recv() => libc::SIGINT,
                    _ = terminate.recv() => libc::SIGTERM,
                    _ = hangup.recv() => libc::SIGHUP,
                    _ = quit.recv() => libc::SIGQUIT,
                };
                if first.load(Ordering::SeqCst) != 0 {
                    // The second signal: no more grace.
                    kill_descendants();
                    std::process::exit(128 + signo);
                }
                first.store(signo, Ordering::SeqCst);
                tracing::info!("{} received: tearing down", signal_name(signo));
                cancel.cancel();
            }
        });
        Ok(Shutdown { token, signal: received })
    }

    /// Cancelled when the first signal arrives.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// The name of the signal that asked the process to stop, if one did.
    pub fn signal(&self) -> Option<&'static str> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            n => Some(signal_name(n)),
        }
    }
}

fn signal_name(signo: i32) -> &'static str {
    match signo {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}

/// Make this process a child subreaper (Linux): orphaned descendants are
/// re-parented to it, so `kill_descendants` finds those that left their group.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument and touches no memory of ours.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        if rc != 0 {
            tracing::debug!("cannot become a child subreaper: {}", std::io::Error::last_os_error());
        }
    }
}

/// Process groups the sweep leaves alone: programs started for the user.
static SPARED_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// Leave the process group `pgid` (and every descendant still in it) alive
/// when the command ends: a browser opened for a login is the user's.
pub fn spare_process_group(pgid: i32) {
    SPARED_GROUPS.locked().push(pgid);
}

/// A process's group, from `/proc/PID/stat`.
fn process_group_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid pgrp ...: comm may hold spaces; it ends at the last ')'.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(2)?.parse().ok()
}

/// SIGKILL every live descendant of this process (found through `/proc`, so
/// Linux only; elsewhere it does nothing), but those in a spared process
/// group. Returns how many were signalled.
pub fn kill_descendants() -> usize {
    let spared = SPARED_GROUPS.locked().clone();
    let mut killed = 0;
    // A few rounds: a process killed mid-fork may leave a child behind.
    for _ in 0..3 {
        let mut found = descendants(std::process::id() as i32);
        found.retain(|pid| !process_group_of(*pid).is_some_and(|group| spared.contains(&group)));
        if found.is_empty() {
            break;
        }
        for pid in &found {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*pid), nix::sys::signal::Signal::SIGKILL);
        }
        killed += found.len();
    }
    killed
}

/// The live (non-zombie) descendants of `root`: from each process's
/// `/proc/PID/task/*/children` when the kernel offers them (cheap: only our own
/// tree is read), else from a scan of every `/proc/*/stat`.
fn descendants(root: i32) -> Vec<i32> {
    if !std::path::Path::new(&format!("/proc/{root}/task/{root}/children")).exists() {
        return descendants_by_scan(root);
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else { continue };
        for task in tasks.flatten() {
            let Ok(children) = std::fs::read_to_string(task.path().join("children")) else { continue };
            for pid in children.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                if !is_zombie(pid) {
                    found.push(pid);
                }
                queue.push(pid);
            }
        }
    }
    found
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()) == Some("Z"))
        .unwrap_or(true)
}

/// The live descendants of `root`, from a scan of every `/proc/*/stat`.
fn descendants_by_scan(root: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut children: std::collections::HashMap<i32, Vec<(i32, bool)>> = std::collections::HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold spaces and parentheses; it ends at the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut fields = rest.split_whitespace();
        let zombie = fields.next() == Some("Z");
        let Some(ppid) = fields.next().and_then(|p| p.parse::<i32>().ok()) else { continue };
        children.entry(ppid).or_default().push((pid, zombie));
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for &(pid, zombie) in children.get(&parent).map(Vec::as_slice).unwrap_or_default() {
            if !zombie {
                found.push(pid);
            }
            queue.push(pid);
        }
    }
    found
}
