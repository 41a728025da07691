//! The one `ProcessService`: every command CLAT runs for a tool (`run_command`,
//! and the same call made by a plugin through host services) starts here. A
//! command runs as `/bin/sh -c` in the project root, in its own process group
//! owned by the run: when it finishes, times out, is cancelled, or the run ends,
//! the whole group (grandchildren included) is killed and the child reaped.
//! Output is captured up to a bound while the rest is drained and counted, so a
//! spewing command can neither block nor exhaust memory. A sandbox policy hook
//! can restrict writes to the project root with Linux Landlock, and says so
//! when the kernel cannot.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::limits::{COMMAND_OUTPUT_DRAIN_WAIT, COMMAND_OUTPUT_MAX_BYTES};
use crate::run::RunContext;

pub use crate::run::kill_group;

/// How commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxPolicy {
    /// No confinement beyond the process group.
    #[default]
    None,
    /// Writes only under the project root (and to `/dev` files such as
    /// `/dev/null`), enforced with Landlock where the kernel has it.
    RestrictWritesToProject,
}

impl std::str::FromStr for SandboxPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(SandboxPolicy::None),
            "restrict-writes" => Ok(SandboxPolicy::RestrictWritesToProject),
            other => Err(format!("unknown sandbox policy {other:?}; expected none or restrict-writes")),
        }
    }
}

/// What the sandbox did for one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "detail", rename_all = "kebab-case")]
pub enum SandboxStatus {
    /// The policy was `none`.
    None,
    /// Writes were restricted to the project root.
    Enforced,
    /// The policy asked for confinement the kernel cannot give; the text says why.
    NotEnforced(String),
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct CommandRequest {
    /// The shell command line.
    pub command: String,
    /// How long it may run.
    pub timeout: Duration,
}

/// Captured output of one stream.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CapturedOutput {
    /// The first `COMMAND_OUTPUT_MAX_BYTES` bytes, lossily decoded.
    pub text: String,
    /// Bytes read past the bound and dropped.
    pub dropped_bytes: u64,
}

/// How a command ended.
#[derive(Debug, Clone, Serialize)]
pub struct CommandOutcome {
    /// The exit code, when the shell exited normally.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if any.
    pub signal: Option<i32>,
    pub stdout: CapturedOutput,
    pub stderr: CapturedOutput,
    /// The timeout ended it.
    pub timed_out: bool,
    /// The run was cancelled while it ran.
    pub cancelled: bool,
    pub duration_ms: u64,
    pub sandbox: SandboxStatus,
    /// The process group that was killed and reaped.
    pub pgid: i32,
}

impl CommandOutcome {
    /// True when the command exited with status 0 on its own.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.cancelled
    }
}

/// Runs commands in the project root for runs.
#[derive(Debug, Clone)]
pub struct ProcessService {
    root: PathBuf,
    policy: SandboxPolicy,
}

impl ProcessService {
    pub fn new(root: &Path, policy: SandboxPolicy) -> Self {
        ProcessService { root: root.to_path_buf(), policy }
    }

    pub fn policy(&self) -> SandboxPolicy {
        self.policy
    }

    /// Run one command as part of `run`. Returns when the shell has exited (or
    /// was killed) and its whole process group is gone.
    pub async fn run(&self, request: &CommandRequest, run: &RunContext) -> anyhow::Result<CommandOutcome> {
        let started = Instant::now();
        let (ruleset, sandbox) = match self.policy {
            SandboxPolicy::None => (None, SandboxStatus::None),
            SandboxPolicy::RestrictWritesToProject => match landlock::Ruleset::restrict_writes_to(&self.root) {
                Ok(rs) => (Some(rs), SandboxStatus::Enforced),
                Err(why) => (None, SandboxStatus::NotEnforced(why)),
            },
        };
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(&request.command)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(fd) = ruleset.as_ref().map(landlock::Ruleset::raw_fd) {
            // SAFETY: the closure only makes two async-signal-safe system calls
            // (prctl and landlock_restrict_self) on an fd opened before fork.
            unsafe {
                command.pre_exec(move || landlock::restrict_self(fd));
            }
        }
        let mut child =
            command.spawn().with_context(|| format!("could not start /bin/sh in {}", self.root.display()))?;
        drop(ruleset);
        let pgid = child.id().context("the child exited before its pid was read")? as i32;
        let group = OwnedGroup::new(pgid, run);

        let stdout = tokio::spawn(capture(child.stdout.take()));
        let stderr = tokio::spawn(capture(child.stderr.take()));
        let (mut timed_out, mut cancelled) = (false, false);
        let status = tokio::select! {
            status = child.wait() => status?,
            _ = tokio::time::sleep(request.timeout) => {
                timed_out = true;
                group.kill();
                child.wait().await?
            }
            _ = run.cancel_token().cancelled() => {
                cancelled = true;
                group.kill();
                child.wait().await?
            }
        };
        // One-shot semantics: anything the command left running in its group dies now.
        group.kill();
        let stdout = join_capture(stdout).await;
        let stderr = join_capture(stderr).await;
        drop(group);
        use std::os::unix::process::ExitStatusExt;
        Ok(CommandOutcome {
            exit_code: status.code(),
            signal: status.signal(),
            stdout,
            stderr,
            timed_out,
            cancelled,
            duration_ms: started.elapsed().as_millis() as u64,
            sandbox,
            pgid,
        })
    }
}

/// A process group registered with the run; killed when dropped.
struct OwnedGroup<'a> {
    pgid: i32,
    run: &'a RunContext,
}

impl<'a> OwnedGroup<'a> {
    fn new(pgid: i32, run: &'a RunContext) -> Self {
        run.processes().insert(pgid);
        OwnedGroup { pgid, run }
    }
    fn kill(&self) {
        kill_group(self.pgid);
    }
}

impl Drop for OwnedGroup<'_> {
    fn drop(&mut self) {
        kill_group(self.pgid);
        self.run.processes().remove(self.pgid);
    }
}

async fn capture<R: AsyncRead + Unpin>(stream: Option<R>) -> CapturedOutput {
    let Some(mut stream) = stream else { return CapturedOutput::default() };
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = COMMAND_OUTPUT_MAX_BYTES.saturating_sub(kept.len());
                let take = room.min(n);
                kept.extend_from_slice(&buf[..take]);
                dropped += (n - take) as u64;
            }
        }
    }
    CapturedOutput { text: String::from_utf8_lossy(&kept).into_owned(), dropped_bytes: dropped }
}

/// Readers end when every holder of the pipe is gone; the group is dead by
/// now, so this is quick. A bounded wait guards against a descendant that
/// escaped the group (setsid) while holding the pipe.
async fn join_capture(handle: tokio::task::JoinHandle<CapturedOutput>) -> CapturedOutput {
    let abort = handle.abort_handle();
    match tokio::time::timeout(COMMAND_OUTPUT_DRAIN_WAIT, handle).await {
        Ok(Ok(out)) => out,
        _ => {
            abort.abort();
            CapturedOutput {
                text: "[output unavailable: a process outside the group kept the pipe open]".into(),
                dropped_bytes: 0,
            }
        }
    }
}

/// Linux Landlock, by raw system calls: the ruleset is built in the parent,
/// only `prctl` and `landlock_restrict_self` run between fork and exec.
mod landlock {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    const CREATE_RULESET_VERSION: u32 = 1;
    const RULE_PATH_BENEATH: libc::c_int = 1;
    const WRITE_FILE: u64 = 1 << 1;
    const REMOVE_DIR: u64 = 1 << 4;
    const REMOVE_FILE: u64 = 1 << 5;
    const MAKE_CHAR: u64 = 1 << 6;
    const MAKE_DIR: u64 = 1 << 7;
    const MAKE_REG: u64 = 1 << 8;
    const MAKE_SOCK: u64 = 1 << 9;
    const MAKE_FIFO: u64 = 1 << 10;
    const MAKE_BLOCK: u64 = 1 << 11;
    const MAKE_SYM: u64 = 1 << 12;
    const REFER: u64 = 1 << 13;
    const TRUNCATE: u64 = 1 << 14;

    #[repr(C)]
    struct RulesetAttr {
        handled_access_fs: u64,
    }

    #[repr(C, packed)]
    struct PathBeneathAttr {
        allowed_access: u64,
        parent_fd: i32,
    }

    /// A populated ruleset, ready to be enforced in a child.
    pub struct Ruleset(OwnedFd);

    impl Ruleset {
        /// Handle every write-like access; allow it beneath `root`, and file
        /// writes beneath `/dev` (null, tty, …).
        pub fn restrict_writes_to(root: &Path) -> Result<Ruleset, String> {
            // SAFETY: the version query takes no attribute pointer.
            let abi = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    std::ptr::null::<RulesetAttr>(),
                    0usize,
                    CREATE_RULESET_VERSION,
                )
            };
            if abi < 1 {
                return Err(format!(
                    "this kernel does not offer Landlock ({}); the command ran without write confinement",
                    std::io::Error::last_os_error()
                ));
            }
            let mut handled = WRITE_FILE
                | REMOVE_DIR
                | REMOVE_FILE
                | MAKE_CHAR
                | MAKE_DIR
                | MAKE_REG
                | MAKE_SOCK
                | MAKE_FIFO
                | MAKE_BLOCK
                | MAKE_SYM;
            if abi >= 2 {
                handled |= REFER;
            }
            if abi >= 3 {
                handled |= TRUNCATE;
            }
            let attr = RulesetAttr { handled_access_fs: handled };
            // SAFETY: attr is a valid, correctly sized landlock_ruleset_attr prefix.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_landlock_create_ruleset,
                    &attr as *const RulesetAttr,
                    std::mem::size_of::<RulesetAttr>(),
                    0u32,
                )
            };
            if fd < 0 {
                return Err(format!("could not create a Landlock ruleset: {}", std::io::Error::last_os_error()));
            }
            // SAFETY: the kernel just returned this fd to us.
            let ruleset = Ruleset(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
            ruleset.allow_beneath(root, handled)?;
            ruleset.allow_beneath(Path::new("/dev"), WRITE_FILE | if abi >= 3 { TRUNCATE } else { 0 })?;
            Ok(ruleset)
        }

        fn allow_beneath(&self, path: &Path, access: u64) -> Result<(), String> {
            let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|_| "path has a NUL byte".to_string())?;
            // SAFETY: c_path is a valid C string.
            let dir = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            if dir < 0 {
                return Err(format!("could not open {}: {}", path.display(), std::io::Error::last_os_error()));
            }
            // SAFETY: open returned a fresh fd.
            let dir = unsafe { OwnedFd::from_raw_fd(dir) };
            let rule = PathBeneathAttr { allowed_access: access, parent_fd: dir.as_raw_fd() };
            // SAFETY: rule is a valid landlock_path_beneath_attr.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_landlock_add_rule,
                    self.0.as_raw_fd(),
                    RULE_PATH_BENEATH,
                    &rule as *const PathBeneathAttr,
                    0u32,
                )
            };
            if rc != 0 {
                return Err(format!(
                    "could not add a Landlock rule for {}: {}",
                    path.display(),
                    std::io::Error::last_os_error()
                ));
            }
            Ok(())
        }

        pub fn raw_fd(&self) -> RawFd {
            self.0.as_raw_fd()
        }
    }

    /// Runs in the child between fork and exec: async-signal-safe calls only.
    pub fn restrict_self(fd: RawFd) -> std::io::Result<()> {
        // SAFETY: plain system calls with integer arguments.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}
